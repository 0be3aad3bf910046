"""Helpers shared by the Paper A (Entropic Bound) runners: the training recipe, the model grid,
rank metrics of learned matrices, and the tidy-table columns of the config values."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import product
from typing import Any

import numpy as np
import torch

from attnrank.core.rank import (
    TAUS,
    energy_effective_rank,
    entropy_effective_rank,
    numerical_rank,
    stable_rank,
)
from attnrank.core.train import TrainConfig
from attnrank.entropic.jobs import ADAM, AttentionJob, LadderJob, PredictJob, SurrogateJob

RANK_COLUMNS = ("energy_effective_rank", "entropy_effective_rank", "stable_rank")

TrainedJob = SurrogateJob | LadderJob | AttentionJob
EntropicJob = SurrogateJob | LadderJob | AttentionJob | PredictJob


def train_config(job: TrainedJob, optimizer: str = ADAM) -> TrainConfig:
    """The recipe: lr, warm-up steps, schedule and steps of a trained job."""
    return TrainConfig(steps=job.steps, lr=job.lr, warmup=float(job.warmup), schedule=job.schedule,
                       optimizer=optimizer, log_every=job.log_every)


def rank_metrics(matrices: torch.Tensor, taus: Sequence[float] = TAUS,
                 prefix: str = "") -> dict[str, torch.Tensor]:
    """Every rank estimator of each matrix of a stack (M, n, k), from float64 singular values."""
    s = torch.linalg.svdvals(matrices.detach().double()).cpu().numpy()
    out = {f"{prefix}numerical_rank_tau{t:g}": np.asarray(numerical_rank(s, t), np.float64)
           for t in taus}
    out[f"{prefix}energy_effective_rank"] = np.asarray(energy_effective_rank(s))
    out[f"{prefix}entropy_effective_rank"] = np.asarray(entropy_effective_rank(s))
    out[f"{prefix}stable_rank"] = np.asarray(stable_rank(s))
    return {k: torch.as_tensor(np.atleast_1d(v), dtype=torch.float64) for k, v in out.items()}


def instances(r_stars: Sequence[int], seeds: Sequence[int]) -> list[tuple[int, int]]:
    """The task instances (r*, seed index) of a job, r*-major; ``seeds`` from ``seed_indices``."""
    return list(product([int(r) for r in r_stars], [int(s) for s in seeds]))


def model_labels(insts: Sequence[tuple[int, int]], ranks: Sequence[int]) -> list[dict[str, int]]:
    """Labels of model k = i·R + j (instance-major, the students' layout)."""
    return [{"r_star": r_star, "seed": seed, "rank": int(r)}
            for r_star, seed in insts for r in ranks]


def config_columns(job: EntropicJob) -> dict[str, Any]:
    """The config values that produced a row, as table columns (a predict job trains nothing: no
    recipe columns)."""
    recipe = {} if isinstance(job, PredictJob) else {
        "init_std": job.init_std, "lr": job.lr, "warmup": job.warmup, "steps": job.steps,
        "n_train": job.n_train}
    return {"n_tokens": job.n_tokens, "d": job.d, "e": job.e, "noise_var": job.noise_var,
            **recipe, "spectrum": job.spectrum, "teacher_values": job.teacher_values}


def seed_instance(job: AttentionJob | PredictJob) -> str:
    """The instance name a job's random draws are keyed by: ``instance`` without the suffix
    ``_<teacher_values>`` that names a job run under the other teacher values (e.g. "linear_gaussian"
    → "linear"). Such a job and its default twin share K*, data, noise and initializations; V* comes
    from the same Gaussian draw and differs only in shape (a paired comparison)."""
    return job.instance.removesuffix(f"_{job.teacher_values}")


def to_tensor(a: np.ndarray, device: torch.device) -> torch.Tensor:
    return torch.as_tensor(np.ascontiguousarray(a), dtype=torch.float32, device=device)

