"""Snakemake itself SIGKILLed during a smoke DAG (appendix B: its training jobs and a table): the
same command, run again with no extra flag, removes the stale lock, the jobs the killed run left
behind stop, the rerun resumes from their checkpoints and ends with the bytes of an uninterrupted run
(the shared smoke run's files of the same sub-DAG); nothing is left over (no checkpoint, no
temporary file, no sidecar without its artifact)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import copy_repo

from attnrank.pipeline.onejob import one_jobs, rerun_outputs
from attnrank.pipeline.plan import build_plan
from attnrank.pipeline.provenance import SIDECAR_SUFFIX
from attnrank.publish.audit import load_config

pytestmark = pytest.mark.slow
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
ROOT = Path(__file__).resolve().parents[1]
TARGETS = ["results/smoke/tables/language_loss.parquet"]


def _command() -> list[str]:
    """The user's command: no recovery flag (profiles/default supplies rerun-incomplete)."""
    return [SNAKEMAKE, *TARGETS, "--cores", "2", "--config", "scale=smoke", "checkpoint_every=10"]


def _env() -> dict[str, str]:
    return dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")


def _files(work: Path) -> dict[str, bytes]:
    """Every file under results/ (sidecars aside: they record times)."""
    return {p.relative_to(work).as_posix(): p.read_bytes() for p in (work / "results").rglob("*")
            if p.is_file() and not p.name.endswith(SIDECAR_SUFFIX)}


def _sub_dag(target: str) -> set[str]:
    """Every artifact the target needs, itself included, and every other output of the jobs that
    make them (at smoke a training rule's jobs are one job: config one_job_per_rule) (paths
    relative to the repository)."""
    plan = build_plan(load_config(ROOT / "config.yaml"), "smoke")
    jobs = one_jobs(plan.runs, "smoke")
    out, todo = set(), [target.removeprefix("results/smoke/")]
    while todo:
        run = plan.run_for(todo.pop())
        new = (set(run.outputs) | rerun_outputs(jobs, run.outputs)) - out
        out |= new
        todo += [i for o in new for i in plan.run_for(o).inputs if i not in out]
    return {f"results/smoke/{p}" for p in out}


def test_the_same_command_resumes_a_killed_snakemake(tmp_path, smoke_run):
    killed = tmp_path / "killed"
    killed.mkdir()
    copy_repo(killed)

    proc = subprocess.Popen(_command(), cwd=killed, env=_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 900
    while proc.poll() is None and time.monotonic() < deadline and not list(
            (killed / "results").rglob("*.ckpt")):
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)  # Snakemake only: its jobs run on as orphans
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the DAG ended before it could be killed"
    assert list((killed / ".snakemake" / "locks").glob("*.lock")), "no stale lock to recover"

    res = subprocess.run(_command(), cwd=killed, env=_env(), capture_output=True, text=True,
                         timeout=1800)
    assert res.returncode == 0, res.stderr[-5000:]
    assert "removed the stale lock of a killed Snakemake" in res.stderr
    # the killed run's jobs stopped (by themselves at their next checkpoint, or stopped by the
    # rerun) and the rerun went on from their checkpoints
    logs = "".join(p.read_text() for p in (killed / "logs" / "smoke").rglob("*.log"))
    assert "resumed at step" in logs

    got = _files(killed)
    assert sorted(got) == sorted(_sub_dag(TARGETS[0]))
    assert [k for k in got if got[k] != (smoke_run / k).read_bytes()] == []
    sidecars = {p.relative_to(killed).as_posix()[: -len(SIDECAR_SUFFIX)]
                for p in (killed / "results").rglob("*" + SIDECAR_SUFFIX)}
    assert sidecars == set(got)  # every artifact has its sidecar, no sidecar is alone
