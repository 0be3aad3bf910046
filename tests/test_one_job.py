"""One job per rule (config one_job_per_rule): the jobs of a training or compute rule of such a
scale run in one process, and each writes what it writes alone, to the byte, with its own
sidecars; the command line each runs is the one its per-job rule runs; a failing job leaves
nothing of the rule's outputs behind."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

import pytest
from conftest import copy_repo, snakemake

from attnrank.cli import main
from attnrank.pipeline.onejob import (
    SECOND_RULE_WILDCARD,
    member_argv,
    one_jobs,
    parse_jobs,
    rerun_outputs,
    rule_of,
    separate_scales,
)
from attnrank.pipeline.plan import build_plan
from attnrank.pipeline.provenance import sidecar_path
from attnrank.pipeline.registry import MORE_RULES, ONE_JOB_STEPS, STEPS
from attnrank.publish.audit import load_config

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def smoke_plan():
    return build_plan(load_config(ROOT / "config.yaml"), "smoke")


def test_every_job_of_a_one_job_step_is_in_exactly_one_rule(smoke_plan):
    jobs = one_jobs(smoke_plan.runs, "smoke")
    planned = [r for r in smoke_plan.runs if r.step in ONE_JOB_STEPS]
    grouped = [r for j in jobs.values() for r in j.runs]
    assert sorted(map(id, grouped)) == sorted(map(id, planned)) and len(planned) > 40
    assert set(jobs) == {f"smoke_{s}" for s in ONE_JOB_STEPS}
    for job in jobs.values():
        assert {r.step for r in job.runs} == {job.step}
        assert len(job.outputs()) == len(set(job.outputs())) == sum(len(r.outputs) for r in job.runs)
    assert all(STEPS[s].kind in ("train", "compute") for s in ONE_JOB_STEPS)


def test_a_second_rule_is_named_by_its_wildcard(smoke_plan):
    assert set(SECOND_RULE_WILDCARD) == set(MORE_RULES)
    rules = {rule_of(r) for r in smoke_plan.runs if r.step == "language_train"}
    assert rules == {"language_train", "language_rung_train"}
    assert all(rule_of(r) == "language_rung_train"
               for r in smoke_plan.runs if "rung" in r.wildcards and r.step == "language_train")


def test_separate_scales_is_a_constraint_no_one_job_scale_matches():
    assert separate_scales(["full", "smoke"], ["smoke"]) == "full"
    assert separate_scales(["full", "smoke"], []) == "full|smoke"
    never = separate_scales(["smoke"], ["smoke"])
    assert re.fullmatch(f"(?:{never})", "smoke") is None and re.fullmatch(f"(?:{never})", "") is None


@pytest.mark.parametrize("text, why", [
    ("[", "not JSON"), ("{}", "non-empty JSON list"), ("[]", "non-empty JSON list"),
    ('[["entropic-train", 3]]', "job 1 is not a non-empty list of strings"),
    ('[["audit", "results/smoke"]]', "job 1 runs 'audit'"),
])
def test_run_jobs_refuses_a_bad_list(text, why):
    with pytest.raises(ValueError, match=re.escape(why)):
        parse_jobs(text)


def test_each_job_is_the_command_of_its_per_job_rule(tmp_path, smoke_plan):
    """With one_job_per_rule empty, the per-job rules run at smoke: every one of their shell
    commands holds, word for word, the command line ``member_argv`` gives its job."""
    copy_repo(tmp_path)
    res = snakemake(tmp_path, "-n", "-p", "-F", "--config", "scale=smoke", "one_job_per_rule=[]",
                    scale=None)
    assert res.returncode == 0, res.stderr[-3000:]
    shells = "\n".join(line for line in res.stdout.splitlines() if "python -m attnrank" in line)
    assert "run-jobs" not in shells
    runs = [r for r in smoke_plan.runs if r.step in ONE_JOB_STEPS]
    for run in runs:
        argv = shlex.join(["python", "-m", "attnrank", *member_argv(run, "smoke", "auto", 1)])
        assert argv in shells, argv[:300]


def _two_jobs(plan, step: str) -> list[list[str]]:
    runs = [r for r in plan.runs if r.step == step][:2]
    return [member_argv(r, "smoke", "cpu", 1) for r in runs]


def _artifacts(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.name.endswith(".prov.json") and ".cache" not in p.parts}


@pytest.mark.parametrize("step", ["entropic_ladder_train", "entropic_predict"])
def test_jobs_in_one_process_write_what_each_writes_alone(tmp_path, monkeypatch, smoke_plan,
                                                          step):
    jobs = _two_jobs(smoke_plan, step)
    alone, together = tmp_path / "alone", tmp_path / "together"
    for folder in (alone, together):
        folder.mkdir()
    monkeypatch.chdir(alone)
    for argv in jobs:
        monkeypatch.setattr(sys, "argv", ["__main__.py", *argv])  # as `python -m attnrank` has it
        assert main(argv) == 0
    monkeypatch.chdir(together)
    assert main(["run-jobs", "--jobs", json.dumps(jobs)]) == 0
    a, b = _artifacts(alone), _artifacts(together)
    assert a.keys() == b.keys() and len(a) == 2 * len(STEPS[step].outputs)
    assert all(a[k] == b[k] for k in a), [k for k in a if a[k] != b[k]]
    for rel in a:
        one = json.loads(sidecar_path(alone / rel).read_text())
        two = json.loads(sidecar_path(together / rel).read_text())
        for key in ("step", "rule", "wildcards", "params", "seed", "command", "sha256"):
            assert one[key] == two[key], key
        assert two["command"].startswith(f"python -m attnrank {STEPS[step].command} ")


def test_a_failing_job_leaves_none_of_the_outputs(tmp_path, monkeypatch, smoke_plan, capsys):
    jobs = _two_jobs(smoke_plan, "entropic_ladder_train")
    params = jobs[1].index("--params") + 1
    jobs[1][params] = json.dumps({**json.loads(jobs[1][params]), "steps": -1})
    monkeypatch.chdir(tmp_path)
    assert main(["run-jobs", "--jobs", json.dumps(jobs)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "run-jobs: error: job 2 of 2 (entropic_ladder_train" in err
    left = [p for p in tmp_path.rglob("*") if p.is_file() and ".cache" not in p.parts]
    assert left == [], left


def test_a_bad_command_line_is_refused_before_any_job_runs(tmp_path, monkeypatch, smoke_plan,
                                                           capsys):
    jobs = _two_jobs(smoke_plan, "entropic_ladder_train")
    jobs[1] = [*jobs[1], "--no-such-flag"]
    monkeypatch.chdir(tmp_path)
    assert main(["run-jobs", "--jobs", json.dumps(jobs)]) == 2
    assert "job 2 of 2 (entropic-train): a bad command line" in capsys.readouterr().err
    assert not (tmp_path / "results").exists()


def test_a_rerun_of_one_job_makes_every_output_of_its_rule(smoke_plan):
    jobs = one_jobs(smoke_plan.runs, "smoke")
    capacity = jobs["smoke_minip_capacity_train"]
    one = capacity.runs[0].outputs[0]
    assert rerun_outputs(jobs, {one}) == {o for r in capacity.runs for o in r.outputs}
    assert len(capacity.runs) > 1
    assert rerun_outputs(jobs, {"tables/minip_capacity.parquet"}) == set()
