"""Seed sets (SPEC amendment): ``seed_offset`` shifts every seed index. Another offset gives other
numbers (other teachers, data and initializations); the same offset gives the same bytes; the job
parameters (and so every sidecar) record the offset."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest
import torch

from attnrank.core.seeding import seed_indices
from attnrank.entropic.experiments.predict import run_job as predict_job
from attnrank.entropic.jobs import entropic_jobs
from attnrank.minip.experiments.train import run_job
from attnrank.minip.jobs import MinipTrainJob, minip_jobs
from attnrank.publish.audit import load_config

CPU = torch.device("cpu")


def _minip(offset: int) -> MinipTrainJob:
    return MinipTrainJob.from_dict({
            "experiment": "t", "instance": "x", "seeds": 2, "seed_offset": offset, "ranks": [1, 2],
            "dense": True, "lr": 1e-2, "warmup": 0.05, "log_every": 10, "hidden": 8,
            "feature": "exp", "eval_sequences": 128, "batch": 32, "steps": 10, "compile": False,
            "feature_map": "table",
            "data": {"kind": "random", "n_tokens": 3, "m": 6, "tokens": "fixed_weight"}})


def _parquet_bytes(df: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return buf.getvalue()


def test_seed_indices_shift_by_the_offset():
    assert seed_indices(3, 0) == [0, 1, 2]
    assert seed_indices(3, 100) == [100, 101, 102]
    with pytest.raises(ValueError, match="seed_offset"):
        seed_indices(3, -1)


def test_minip_offset_gives_other_numbers_and_the_same_offset_the_same_bytes():
    a, _ = run_job(_minip(0), CPU)
    b, _ = run_job(_minip(0), CPU)
    c, _ = run_job(_minip(1000), CPU)
    assert _parquet_bytes(a) == _parquet_bytes(b)
    assert sorted(a["seed"].unique()) == [0, 1] and sorted(c["seed"].unique()) == [1000, 1001]
    cols = ["test_sequence_accuracy", "train_loss"]
    assert not a[cols].reset_index(drop=True).equals(c[cols].reset_index(drop=True))


def test_offset_one_overlaps_offset_zero_on_shared_seed_indices():
    """Seed index 1 is the same object whichever offset reaches it: offsets shift, never rehash."""
    a, _ = run_job(_minip(0), CPU)
    b, _ = run_job(_minip(1), CPU)
    key = ["model", "rank", "step"]
    sa = a[a["seed"] == 1].sort_values(key).reset_index(drop=True)
    sb = b[b["seed"] == 1].sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(sa, sb)


def test_entropic_offset_draws_other_teachers():
    config = load_config(Path(__file__).resolve().parents[1] / "config.yaml")
    smoke = entropic_jobs(config, "smoke")[("predict", "linear")]  # N = 32, d = e = 16, linear
    job = smoke.from_dict(smoke.to_dict() | dict(seed_offset=0, r_star=[2], S=[64], seeds=1,
                                                 mixer_inputs=16, chunk=64, taus=[0.05],
                                                 calibration_sequences=256))
    a = predict_job(job)[0]
    b = predict_job(job)[0]
    c = predict_job(job.from_dict(job.to_dict() | {"seed_offset": 7}))[0]
    assert _parquet_bytes(a) == _parquet_bytes(b)
    assert set(c["seed"]) == {7}
    num = a.select_dtypes("number").drop(columns=["seed"]).to_numpy()
    assert not (num == c.select_dtypes("number").drop(columns=["seed"]).to_numpy()).all()


def test_every_job_records_the_offset():
    config = load_config(Path(__file__).resolve().parents[1] / "config.yaml") | {"seed_offset": 42}
    for builder in (minip_jobs, entropic_jobs):
        for key, job in builder(config, "smoke").items():
            if key[0] in ("information_bound", "witness_families_table", "restarts_table"):
                continue  # no random draw: a closed form, and a re-evaluation of trained weights
            params = job.to_dict()
            if key[0] == "restarts":  # a restart case draws as its training job does
                params = params["train"]
            assert params["seed_offset"] == 42, key
