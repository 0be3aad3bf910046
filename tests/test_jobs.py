"""Typed jobs and the plan: built from the config alone, round-trip through JSON, refuse
unknown or missing keys in one message, and cover every registered table, figure and claim."""

import copy
import json
from pathlib import Path

import pytest
import yaml

from attnrank.core.table_job import TableJob
from attnrank.entropic.jobs import TRAIN_JOBS, AttentionJob, PredictJob, entropic_jobs
from attnrank.minip.jobs import MinipTrainJob, minip_jobs
from attnrank.pipeline.plan import build_plan, build_plans
from attnrank.pipeline.registry import CLAIMS, FIGURES, TABLES, claim_tables

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def config():
    return yaml.safe_load((ROOT / "config.yaml").read_text())


@pytest.mark.parametrize("scale", ["smoke", "full"])
def test_every_job_round_trips_through_json(config, scale):
    jobs = {**minip_jobs(config, scale), **entropic_jobs(config, scale)}
    assert len(jobs) > 20
    for job in jobs.values():
        again = type(job).from_json(job.to_json())
        assert again == job and again.to_json() == job.to_json()


def test_unknown_and_missing_keys_are_named_in_one_error(config):
    job = minip_jobs(config, "smoke")[("witness", "table")]
    data = job.to_dict()
    data["typo"] = 1
    del data["ranks"]
    with pytest.raises(ValueError) as err:
        MinipTrainJob.from_dict(data)
    assert "unknown key(s) typo" in str(err.value) and "missing key(s) ranks" in str(err.value)


def test_nested_parts_are_checked(config):
    data = minip_jobs(config, "smoke")[("witness", "table")].to_dict()
    data["data"]["kind"] = "nope"
    with pytest.raises(ValueError, match="data.kind"):
        MinipTrainJob.from_dict(data)
    data = entropic_jobs(config, "smoke")[("attention", "linear")].to_dict()
    del data["teacher"]["beta"]
    with pytest.raises(ValueError, match=r"AttentionJob.teacher: missing key\(s\) beta"):
        AttentionJob.from_dict(data)


def test_bad_ranks_and_row_selection_are_refused(config):
    data = minip_jobs(config, "smoke")[("witness", "table")].to_dict()
    data["ranks"] = [0, 2]
    with pytest.raises(ValueError, match="ranks must be integers ≥ 1"):
        MinipTrainJob.from_dict(data)
    with pytest.raises(ValueError, match="select"):
        TableJob("some", False)


def test_job_kinds_match_their_experiments(config):
    for (exp, _), job in entropic_jobs(config, "full").items():
        assert isinstance(job, PredictJob if exp == "predict" else TRAIN_JOBS[exp])


@pytest.mark.parametrize(("path", "value", "message"), [
    (("minip", "scales", "smoke", "rank_vs_m", "ms"), [6, 7],
     r"rank_vs_m.ms = \[6, 7\]: even m only"),
    (("minip", "scales", "smoke", "length_sweep", "m"), 18,
     "length_sweep.m = 18: at most 16 with feature_map 'table'"),
    (("entropic", "scales", "smoke", "attention", "ranks"), [1, 99], "attention.ranks"),
])
def test_cross_key_checks_name_the_key(config, path, value, message):
    bad = copy.deepcopy(config)
    node = bad
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(ValueError, match=message):
        build_plans(bad)


@pytest.mark.parametrize(("block", "mutate", "message"), [
    ("ood_memorising", lambda g: (g["ood_memorising"].update(feature_map="table"),
                                  g["ood_memorising"]["scales"][1].update(m=18)),
     r"ood_memorising.scales\[\].m = \[6, 18\]: every m at most 16 with "
     r"ood_memorising.feature_map 'table'"),
    ("ood_pool_sweep", lambda g: (g["ood"].update(feature_map="table"),
                                  g["ood_pool_sweep"].update(m=18)),
     r"ood_pool_sweep.m = 18: every m at most 16 with ood.feature_map 'table'"),
])
def test_table_features_are_checked_on_every_pool_block(config, block, mutate, message):
    """Every OOD pool block with table features has its m checked, named by its own keys."""
    bad = copy.deepcopy(config)
    mutate(bad["minip"]["scales"]["smoke"])
    with pytest.raises(ValueError, match=message):
        build_plans(bad)


@pytest.mark.parametrize("scale", ["smoke", "full"])
def test_plan_covers_every_registered_name(config, scale):
    plan = build_plan(config, scale)
    for t in TABLES:
        assert f"tables/{t}.parquet" in plan.by_output
    for f, spec in FIGURES.items():
        run = plan.run_for(f"figures/{f}.pdf")
        assert run.inputs == tuple(f"tables/{t}.parquet" for t in spec.tables)
        assert plan.run_for(f"figures/{f}.png") is run
    claims = plan.run_for("claims.md")
    assert set(claims.inputs) == {f"tables/{t}.parquet" for t in claim_tables()}
    assert {t for c in CLAIMS.values() for t in c.tables} == set(claim_tables())
    # every input is some step's output: the DAG is closed
    for run in plan.runs:
        for inp in run.inputs:
            assert inp in plan.by_output, (run.step, inp)
    json.dumps([r.params for r in plan.runs])  # every parameter set is JSON


def test_downstream_follows_the_chain(config):
    plan = build_plan(config, "smoke")
    down = plan.downstream({"minip/train/ood/small/metrics.parquet"})
    assert down == {"tables/minip_ood.parquet", "figures/minip_ood_pools.pdf",
                    "figures/minip_ood_pools.png", "claims.md", "claims.csv", "claims.html"}


def test_unknown_scale_is_refused(config):
    with pytest.raises(ValueError, match="no grid for scale 'huge'"):
        build_plan(config, "huge")
