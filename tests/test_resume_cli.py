"""A training job started from the command line, SIGKILLed after its first checkpoint and run
again, writes exactly the bytes of an uninterrupted run (tables and weights); the checkpoint is
gone afterwards, and what a killed run leaves beside an output is cleared when the step starts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from attnrank.pipeline.plan import build_plan
from attnrank.pipeline.provenance import clear_interrupted, sidecar_path
from attnrank.publish.audit import audit_run, load_config

ROOT = Path(__file__).resolve().parents[1]
CASE = ("minip_train", {"experiment": "rank_vs_m", "instance": "m6"})  # 300 steps at smoke


def _command(out: Path, every: int) -> list[str]:
    step, wildcards = CASE
    plan = build_plan(load_config(ROOT / "config.yaml"), "smoke")
    run = next(r for r in plan.runs if r.step == step and r.wildcards == wildcards)
    return [sys.executable, "-m", "attnrank", "minip-train", "--rule", step,
            "--params", run.params_json, "--wildcards", json.dumps(wildcards), "--device", "cpu",
            "--threads", "1", "--checkpoint-every", str(every),
            "--metrics", str(out / "metrics.parquet"), "--weights", str(out / "weights.npz")]


def _run(cmd: list[str]) -> None:
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-3000:]


@pytest.fixture(scope="module")
def plain(tmp_path_factory) -> Path:
    """The job's outputs from an uninterrupted run without any checkpoint."""
    out = tmp_path_factory.mktemp("plain")
    _run(_command(out, every=0))
    assert not list(out.glob("*.ckpt"))
    return out


def _kill_after_checkpoint(cmd: list[str], ckpt: Path) -> None:
    """Start the job and SIGKILL it as soon as its first checkpoint exists."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    deadline = time.monotonic() + 300
    while not ckpt.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the job ended before it could be killed"
    assert ckpt.exists()


def test_a_job_killed_after_its_first_checkpoint_reruns_to_the_same_bytes(tmp_path, plain):
    killed = tmp_path / "killed"
    cmd = _command(killed, every=20)
    _kill_after_checkpoint(cmd, killed / "metrics.parquet.ckpt")
    assert not (killed / "metrics.parquet").exists()

    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "resumed at step 20/150" in res.stderr or "resumed at step 40/150" in res.stderr, \
        res.stderr[-3000:]
    for name in ("metrics.parquet", "weights.npz"):
        assert (killed / name).read_bytes() == (plain / name).read_bytes(), name
        assert sidecar_path(killed / name).exists()
    assert sorted(p.name for p in killed.iterdir()) == sorted(p.name for p in plain.iterdir())


def test_a_stale_checkpoint_is_discarded_and_the_run_starts_over(tmp_path, plain):
    """A checkpoint from other parameters is removed, not resumed; the result is the plain one."""
    other = tmp_path / "other"
    cmd = _command(other, every=100)
    params = json.loads(cmd[cmd.index("--params") + 1])
    stale = list(cmd)
    stale[cmd.index("--params") + 1] = json.dumps(params | {"lr": params["lr"] / 2})
    ckpt = other / "metrics.parquet.ckpt"
    _kill_after_checkpoint(stale, ckpt)
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "ignoring and removing the checkpoint" in res.stderr and "resumed" not in res.stderr
    assert (other / "metrics.parquet").read_bytes() == (plain / "metrics.parquet").read_bytes()
    assert not ckpt.exists()


def test_what_an_interrupted_run_left_is_cleared_before_a_step_writes(tmp_path):
    out = tmp_path / "metrics.parquet"
    side = sidecar_path(out)
    side.write_text("{}")  # Snakemake deleted the artifact, the kill came before the rewrite
    temps = [tmp_path / ".metrics.parquet.ab12.tmp.parquet",
             tmp_path / ".metrics.parquet.prov.json.cd34.tmp.json",
             tmp_path / ".metrics.parquet.ckpt.ef56.tmp.ckpt"]
    for t in temps:
        t.write_bytes(b"half")
    keep = [tmp_path / "weights.npz", sidecar_path(tmp_path / "weights.npz"),
            tmp_path / ".other.parquet.zz.tmp.parquet"]
    for k in keep:
        k.write_bytes(b"x")
    assert sorted(clear_interrupted(out)) == sorted([*temps, side])
    assert sorted(tmp_path.iterdir()) == sorted(keep)
    out.write_bytes(b"artifact")
    side.write_text("{}")
    assert clear_interrupted(out) == [] and side.exists()  # a complete pair stays


def test_the_audit_reports_what_an_unfinished_job_left(tmp_path):
    run = tmp_path / "results" / "smoke"
    job = run / "minip" / "train" / "rank_vs_m" / "m6"
    job.mkdir(parents=True)
    (job / "metrics.parquet.ckpt").write_bytes(b"ckpt")
    (job / ".weights.npz.x1.tmp.npz").write_bytes(b"half")
    report = audit_run(run, load_config(ROOT / "config.yaml"), scale="smoke")
    found = {f.path: f for f in report.findings}
    assert set(found) == {"minip/train/rank_vs_m/m6/metrics.parquet.ckpt",
                          "minip/train/rank_vs_m/m6/.weights.npz.x1.tmp.npz"}
    assert {f.category for f in found.values()} == {"interrupted"}
    assert "rerun the same command to resume" in report.summary()
