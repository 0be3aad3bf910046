"""Checkpoints: written atomically, read back only under the same key, and a job killed after
a checkpoint and run again ends with exactly the tables and weights of an uninterrupted run,
for every trainer (Min-IP train, capacity, restarts; entropic surrogate, ladder, attention;
language)."""

from __future__ import annotations

import logging
import socket

import numpy as np
import pandas as pd
import pytest
import torch
from resume_jobs import CASES, CPU, job_params, runner

from attnrank.core.train import TrainConfig, train
from attnrank.pipeline.checkpoint import Checkpoint, checkpoint_key, checkpoint_path
from attnrank.pipeline.recovery import RUN_ENV, OrphanedJob

KEY = "k" * 64


class Killed(BaseException):
    """Stands for SIGKILL: nothing in the job catches it."""


def kill_after_save(monkeypatch: pytest.MonkeyPatch, n: int) -> list[int]:
    """Make the n-th checkpoint save of the process raise Killed once the file is written."""
    saves: list[int] = []
    real = Checkpoint.save

    def save(self: Checkpoint) -> None:
        real(self)
        saves.append(max(p["step"] for p in self.phases.values()))
        if len(saves) == n:
            raise Killed
    monkeypatch.setattr(Checkpoint, "save", save)
    return saves


def test_checkpoint_path_is_beside_the_first_output(tmp_path):
    assert checkpoint_path(tmp_path / "a" / "metrics.parquet") == tmp_path / "a" / "metrics.parquet.ckpt"


def test_the_key_changes_with_everything_that_decides_the_bytes():
    base = dict(step="minip_train", params={"lr": 0.01}, code_hash="c", device="cpu", threads=1)
    k = checkpoint_key(**base)
    assert k == checkpoint_key(**base) and len(k) == 64
    for change in ({"step": "other"}, {"params": {"lr": 0.02}}, {"code_hash": "d"},
                   {"device": "NVIDIA H100"}, {"threads": 2}):
        assert checkpoint_key(**(base | change)) != k, change


def _toy(seed: int = 0) -> tuple[torch.nn.Module, list[torch.Generator]]:
    torch.manual_seed(seed)
    model = torch.nn.Linear(3, 1)
    return model, [torch.Generator().manual_seed(7), torch.Generator().manual_seed(8)]


def test_a_saved_phase_is_read_back_with_its_generators(tmp_path):
    model, gens = _toy()
    ckpt = Checkpoint.open(tmp_path / "m.parquet.ckpt", KEY, every=5)
    assert ckpt.phases == {}
    phase = ckpt.phase("train", gens)
    expected = [torch.rand(2, generator=g) for g in gens]  # the draws after the saved state…
    for g, s in zip(gens, (7, 8), strict=True):
        g.manual_seed(s)
    phase.record(5, model.state_dict(), {"o": 1}, [{"step": 5, "x": 1.5}])
    assert [p.name for p in tmp_path.iterdir()] == ["m.parquet.ckpt"]  # no temporary file left
    torch.rand(3, generator=gens[0])  # the stream moves on
    again = Checkpoint.open(tmp_path / "m.parquet.ckpt", KEY, every=5)
    fresh = [torch.Generator(), torch.Generator()]
    state = again.phase("train", fresh).saved()
    assert state["step"] == 5 and state["rows"] == [{"step": 5, "x": 1.5}]
    assert state["optimizer"] == {"o": 1}
    for k, v in model.state_dict().items():
        assert torch.equal(state["model"][k], v)
    for g, e in zip(fresh, expected, strict=True):  # …are the draws after the restore
        assert torch.equal(torch.rand(2, generator=g), e)
    assert again.phase("other").saved() is None


def test_a_recorded_state_does_not_follow_later_changes(tmp_path):
    model, _ = _toy()
    ckpt = Checkpoint(tmp_path / "c.ckpt", KEY, every=1)
    ckpt.phase("train").record(1, model.state_dict(), {}, [])
    before = model.weight.detach().clone()
    with torch.no_grad():
        model.weight.add_(1.0)
    assert torch.equal(ckpt.phase("train").saved()["model"]["weight"], before)


@pytest.mark.parametrize("content", ["other key", "garbage", "not a checkpoint"])
def test_a_foreign_or_broken_file_is_ignored_and_removed(tmp_path, caplog, content):
    path = tmp_path / "m.parquet.ckpt"
    if content == "other key":
        Checkpoint(path, "x" * 64, every=1).phase("train").record(3, {}, {}, [])
    elif content == "garbage":
        path.write_bytes(b"\x00\x01 not a torch file")
    else:
        torch.save({"format": 1, "key": KEY, "phases": {"train": "no state"}}, path)
    with caplog.at_level(logging.WARNING, logger="attnrank.pipeline.checkpoint"):
        ckpt = Checkpoint.open(path, KEY, every=1)
    assert ckpt.phases == {} and not path.exists()
    assert "ignoring and removing the checkpoint" in caplog.text and str(path) in caplog.text


def test_an_orphaned_job_stops_right_after_a_save(tmp_path, monkeypatch):
    """A job whose Snakemake is gone stops once its checkpoint is on disk (the rerun resumes)."""
    monkeypatch.setenv(RUN_ENV, f"{socket.gethostname()}:999999999:1")  # no such process
    ckpt = Checkpoint(tmp_path / "c.ckpt", KEY, every=1)
    with pytest.raises(OrphanedJob, match="is gone: stopping"):
        ckpt.phase("train").record(4, {}, {}, [])
    assert Checkpoint.open(tmp_path / "c.ckpt", KEY, every=1).phases["train"]["step"] == 4


def test_bad_intervals_and_generator_counts_are_refused(tmp_path):
    with pytest.raises(ValueError, match="checkpoint_every must be ≥ 0"):
        Checkpoint(tmp_path / "c.ckpt", KEY, every=-1)
    ckpt = Checkpoint(tmp_path / "c.ckpt", KEY, every=1)
    ckpt.phase("train", [torch.Generator()]).record(1, {}, {}, [])
    with pytest.raises(ValueError, match="saved 1 generator states, the job has 2"):
        ckpt.phase("train", [torch.Generator(), torch.Generator()]).saved()


@pytest.mark.parametrize("every,steps,due", [
    (5, 12, [5, 10, 12]), (4, 12, [4, 8, 12]), (0, 12, []), (50, 12, [12])])
def test_saves_fall_every_k_steps_and_at_the_end(tmp_path, every, steps, due):
    phase = Checkpoint(tmp_path / "c.ckpt", KEY, every).phase("train")
    assert [d for d in range(1, steps + 1) if phase.due(d, steps)] == due


def _fit(tmp_path, optimizer):
    """A toy regression whose batches come from a generator; optionally killed after a save."""
    model, _ = _toy()
    data = torch.Generator().manual_seed(3)
    x_true = torch.randn(3, 1, generator=torch.Generator().manual_seed(4))

    def batch(step):
        x = torch.randn(16, 3, generator=data)
        return x, x @ x_true

    def loss(mdl, b):
        return ((mdl(b[0]) - b[1]) ** 2).mean().reshape(1)

    def evaluate(mdl, step):
        return {"w0": mdl.weight[:, 0].detach()}

    cfg = TrainConfig(steps=20, lr=0.05, warmup=3, optimizer=optimizer, log_every=4)
    ckpt = Checkpoint.open(tmp_path / "toy.ckpt", KEY, every=6)
    rows = train(model, batch, loss, cfg, evaluate, checkpoint=ckpt.phase("train", [data]))
    return rows, model


@pytest.mark.parametrize("optimizer", ["adam", "gd"])
def test_the_trainer_resumes_to_the_same_trajectory(tmp_path, monkeypatch, optimizer):
    rows, model = _fit(tmp_path / "a", optimizer)
    saves = kill_after_save(monkeypatch, 2)
    with pytest.raises(Killed):
        _fit(tmp_path / "b", optimizer)
    assert saves == [6, 12]
    monkeypatch.undo()
    resumed_rows, resumed = _fit(tmp_path / "b", optimizer)
    assert resumed_rows == rows
    for a, b in zip(model.parameters(), resumed.parameters(), strict=True):
        assert torch.equal(a, b)


def _outputs(result) -> tuple[list[pd.DataFrame], dict[str, np.ndarray]]:
    """(tables, weights) of any experiment's return value."""
    parts = result if isinstance(result, tuple) else (result,)
    tables = [p for p in parts if isinstance(p, pd.DataFrame)]
    weights = next((p for p in parts if isinstance(p, dict)), {})
    return tables, weights


@pytest.mark.parametrize("case", list(CASES))
def test_a_killed_job_resumes_to_the_same_tables_and_weights(tmp_path, monkeypatch, caplog, case):
    """Killed after its second checkpoint (the restart study: in its second program), run again:
    the tables and weights equal an uninterrupted run's exactly."""
    step, params = job_params(case)
    run = runner(step)
    tables, weights = _outputs(run(params, CPU))
    path = tmp_path / "out.parquet.ckpt"
    kill_at = 7 if step == "minip_restarts_train" else 2  # restarts: 24 steps (5 saves), then 48
    kill_after_save(monkeypatch, kill_at)
    with pytest.raises(Killed):
        run(params, CPU, Checkpoint.open(path, KEY, every=5))
    monkeypatch.undo()
    assert path.exists()
    ckpt = Checkpoint.open(path, KEY, every=5)
    saved = {name: p["step"] for name, p in ckpt.phases.items()}
    assert saved == ({"x1": 24, "x2": 10} if step == "minip_restarts_train" else {"train": 10})
    with caplog.at_level(logging.INFO, logger="attnrank.core.train"):
        again_tables, again_weights = _outputs(run(params, CPU, ckpt))
    resumed = ["resumed at step 24/24", "resumed at step 10/48"] if step == "minip_restarts_train" \
        else ["resumed at step 10/24"]
    assert all(r in caplog.text for r in resumed), caplog.text
    assert len(again_tables) == len(tables)
    for a, b in zip(tables, again_tables, strict=True):
        pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert again_weights.keys() == weights.keys()
    for k, v in weights.items():
        assert np.array_equal(v, again_weights[k], equal_nan=True), k
