"""Progress lines of training jobs on the run's terminal (attnrank.pipeline.progress)."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

from attnrank.pipeline import progress
from attnrank.pipeline.progress import Progress, format_duration, progress_line


def test_durations_and_the_line():
    assert [format_duration(s) for s in (0, 12.4, 65, 3725)] == ["0s", "12s", "1m05s", "1h02m"]
    line = progress_line("rank_vs_m/m10", 3000, 6000, 0.01234, 50.0)
    assert line == ("attnrank | rank_vs_m/m10: step 3000/6000 (50%)  loss 0.01234  "
                    "50.0 steps/s  ETA 1m00s")
    assert progress_line("x", 1, 2, 1.0, 0.0).endswith("ETA ?")


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_one_line_per_interval_and_the_loss_read_only_then():
    clock, out, reads = FakeClock(), io.StringIO(), []
    p = Progress("job", total=100, start=0, stream=out, every=30.0, clock=clock)

    def loss() -> float:
        reads.append(1)
        return 0.5

    for step in range(1, 101):
        clock.t = step * 1.0  # one step per second
        p.update(step, loss)
    lines = out.getvalue().splitlines()
    assert [ln.split("step ")[1].split("/")[0] for ln in lines] == ["30", "60", "90"]
    assert len(reads) == 3
    assert "1.0 steps/s" in lines[0] and "ETA 1m10s" in lines[0]


def test_a_resumed_run_counts_its_rate_from_where_it_resumed():
    clock, out = FakeClock(), io.StringIO()
    p = Progress("job", total=100, start=50, stream=out, every=10.0, clock=clock)
    clock.t = 10.0
    p.update(70, lambda: 1.0)
    assert "step 70/100 (70%)" in out.getvalue() and "2.0 steps/s" in out.getvalue()


def test_zero_seconds_or_no_stream_writes_nothing():
    out = io.StringIO()
    Progress("job", 10, 0, out, every=0.0).update(5, lambda: 1.0)
    Progress("job", 10, 0, None, every=1e-9).update(5, lambda: 1.0)
    assert out.getvalue() == ""


def test_the_interval_from_the_environment(monkeypatch):
    monkeypatch.delenv(progress.SECONDS_ENV, raising=False)
    assert progress.interval_from_env() == progress.DEFAULT_SECONDS
    monkeypatch.setenv(progress.SECONDS_ENV, "5")
    assert progress.interval_from_env() == 5.0
    for bad in ("soon", "-1", "nan"):
        monkeypatch.setenv(progress.SECONDS_ENV, bad)
        with pytest.raises(ValueError, match=progress.SECONDS_ENV):
            progress.interval_from_env()


def test_an_unset_or_closed_descriptor_gives_no_stream(monkeypatch):
    monkeypatch.delenv(progress.FD_ENV, raising=False)
    assert progress.stream_from_env() is None
    r, w = os.pipe()
    os.close(r)
    os.close(w)
    monkeypatch.setenv(progress.FD_ENV, str(w))
    assert progress.stream_from_env() is None


def test_a_training_job_writes_its_lines_to_the_descriptor_and_not_to_its_log(tmp_path):
    """A real training call: the lines reach descriptor 3 (the run's terminal), while stdout and
    stderr (the job's log) do not get them."""
    code = (
        "import torch\n"
        "from attnrank.core.train import TrainConfig, train\n"
        "from attnrank.pipeline.checkpoint import Checkpoint\n"
        "m = torch.nn.Linear(2, 1)\n"
        "cfg = TrainConfig(steps=40, lr=0.01, log_every=40)\n"
        "ckpt = Checkpoint('unused.ckpt', 'key', every=0)  # as a job gets it: never saves\n"
        "train(m, lambda s: torch.ones(1, 2), lambda mdl, b: mdl(b).pow(2).sum(-1), cfg,"
        " desc='toy', checkpoint=ckpt.phase('main'))\n")
    r, w = os.pipe()
    env = os.environ | {progress.FD_ENV: "3", progress.SECONDS_ENV: "1e-9"}
    proc = subprocess.run(
        [sys.executable, "-c", f"import os; os.dup2({w}, 3); os.close({w})\n" + code],
        env=env, pass_fds=(w,), capture_output=True, text=True, timeout=120)
    os.close(w)
    with os.fdopen(r) as f:
        lines = f.read().splitlines()
    assert proc.returncode == 0, proc.stderr
    assert len(lines) == 40 and lines[-1].startswith("attnrank | toy: step 40/40 (100%)")
    assert "attnrank |" not in proc.stdout + proc.stderr
