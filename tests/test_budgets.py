"""benchmarks/budgets.py: job seconds per study from a run's sidecars, against declared budgets."""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("budgets", ROOT / "benchmarks" / "budgets.py")
budgets = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(budgets)


def _rec(artifact: str, rule: str, wildcards: dict, seconds: float | None) -> dict:
    return {"artifact": artifact, "rule": rule, "wildcards": wildcards, "duration_s": seconds}


def test_each_job_counts_once_in_the_study_of_its_artifacts():
    w = {"experiment": "rank_vs_m", "instance": "m8"}
    recs = [_rec("minip/train/rank_vs_m/m8/metrics.parquet", "minip_train", w, 100.0),
            _rec("minip/train/rank_vs_m/m8/weights.npz", "minip_train", w, 100.0),  # same job
            _rec("minip/train/witness_families/K4w3/metrics.parquet", "minip_train",
                 {"experiment": "witness_families", "instance": "K4w3"}, 30.0),
            _rec("minip/train/witness/table/metrics.parquet", "minip_train",
                 {"experiment": "witness", "instance": "table"}, 7.0),
            _rec("tables/minip_rank_vs_m.parquet", "table", {"name": "minip_rank_vs_m"}, 2.5)]
    got = budgets.job_seconds(recs)
    assert got["minip rank_vs_m (B2, TT-6)"] == 100.0
    assert got["minip witness families (TT-4 sweep)"] == 30.0
    assert got["minip witness suite (TT-4, TT-4p)"] == 7.0  # not taken by witness_families
    assert got["tables, figures, claims"] == 2.5
    assert sum(got.values()) == 139.5


def test_an_unclaimed_job_or_a_missing_duration_is_an_error():
    with pytest.raises(ValueError, match="no study"):
        budgets.job_seconds([_rec("elsewhere/x.parquet", "new_rule", {}, 1.0)])
    with pytest.raises(ValueError, match="duration_s"):
        budgets.job_seconds([_rec("language/train/prose/ranks.parquet", "language_train", {}, None)])


def test_a_study_over_its_budget_fails_the_check():
    measured = dict.fromkeys(budgets.BUDGETS, 0.0)
    assert budgets.check(measured, budgets.BUDGETS)["ok"]
    study = "entropic predict (EB-13)"
    measured[study] = budgets.BUDGETS[study] + 1
    report = budgets.check(measured, budgets.BUDGETS)
    assert not report["ok"] and not report["studies"][study]["ok"]
    assert [s for s, r in report["studies"].items() if not r["ok"]] == [study]


def test_every_study_has_a_budget_and_every_reference_job_a_study():
    assert list(budgets.BUDGETS) == list(budgets.STUDIES)
    sidecars = budgets.read_sidecars(ROOT / "results" / "reference")
    measured = budgets.job_seconds(sidecars)  # raises on a job no study claims
    # a study not in the reference yet (declared before its first full run) claims planned jobs
    import yaml

    from attnrank.pipeline.plan import build_plan

    plan = build_plan(yaml.safe_load((ROOT / "config.yaml").read_text()), "full")
    planned = {budgets.study_of(o) for r in plan.runs for o in r.outputs}
    assert all(measured[s] > 0 or s in planned for s in budgets.STUDIES), measured
    assert None not in planned  # every planned artifact has a study
    assert json.dumps(budgets.check(measured, budgets.BUDGETS))


def test_core_idle_seconds_count_only_stretches_with_some_but_too_few_jobs():
    def rec(name: str, start: float, end: float) -> dict:
        iso = "2026-01-01T00:{:02d}:{:02d}+00:00".format
        return {"rule": "r", "wildcards": {"n": name}, "artifact": name,
                "start": iso(*divmod(int(start), 60)), "end": iso(*divmod(int(end), 60))}

    # a: 0-100 s, b: 10-60 s, c: 60-90 s (same job twice: counted once); gap 100-300 s with
    # nothing running (not counted); d: 300-320 s alone
    recs = [rec("a", 0, 100), rec("b", 10, 60), rec("c", 60, 90), rec("c", 60, 90),
            rec("d", 300, 320)]
    got = budgets.core_idle_seconds(recs, cores=2)
    # one job only: 0-10, 90-100, 300-320
    assert got == {"cores": 2, "jobs": 4, "seconds_below_cores": 40.0}
    assert budgets.core_idle_seconds(recs, cores=1)["seconds_below_cores"] == 0.0


def test_the_whole_run_and_its_longest_job_have_limits():
    measured = dict.fromkeys(budgets.BUDGETS, 0.0)
    assert budgets.check(measured, budgets.BUDGETS, longest_s=budgets.MAX_JOB_S)["ok"]
    too_long = budgets.check(measured, budgets.BUDGETS, longest_s=budgets.MAX_JOB_S + 1)
    assert not too_long["ok"] and not too_long["jobs_ok"] and too_long["dag_ok"]
    over = {s: budgets.MAX_DAG_JOB_S for s in budgets.BUDGETS}  # every study over too
    report = budgets.check(over, {s: 1e9 for s in budgets.BUDGETS})
    assert not report["ok"] and not report["dag_ok"] and report["jobs_ok"]
    w = {"instance": "m12", "family": "multihead", "scale": "full"}
    recs = [_rec("minip/beyond/m12/multihead/metrics.parquet", "minip_beyond_train", w, 771.9),
            _rec("minip/beyond/m12/multihead/weights.npz", "minip_beyond_train", w, 771.9),
            _rec("minip/train/ood/large/metrics.parquet", "minip_train",
                 {"experiment": "ood", "instance": "large"}, 336.7)]
    assert budgets.longest_jobs(recs) == [
        {"rule": "minip_beyond_train", "wildcards": {"instance": "m12", "family": "multihead"},
         "duration_s": 771.9}]
    assert budgets.longest_jobs(recs, above=300)[1]["duration_s"] == 336.7
