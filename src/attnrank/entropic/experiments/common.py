"""Helpers shared by the Paper A (Entropic Bound) runners: the training recipe, the model grid,
rank metrics of learned matrices, the tidy-table columns of the config values, the fixed-operator
teachers and data of A1 and A2, and the chunked errors of a stack of students (A2, A3). A study
imports what it shares with another study from here, never from the other study."""

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
from attnrank.core.seeding import numpy_rng
from attnrank.core.train import TrainConfig
from attnrank.entropic.jobs import ADAM, AttentionJob, LadderJob, PredictJob, SurrogateJob
from attnrank.entropic.models.attention import AttentionStudents
from attnrank.entropic.tasks.operators import OperatorTeacher, operator_teacher

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


def make_operator_teacher(job: SurrogateJob | LadderJob, r_star: int, seed: int) -> OperatorTeacher:
    """The fixed-operator teacher Y = A* X V* + E of instance (r*, seed index) of an A1 or A2 job,
    from the role (experiment, "rstar<r*>", seed index, "teacher")."""
    return operator_teacher(numpy_rng(job.experiment, f"rstar{r_star}", seed, "teacher"),
                            job.n_tokens, job.d, job.e, r_star, job.noise_var, job.spectrum,
                            job.decay, job.teacher_values)


def sample_sets(experiment: str, insts: list[tuple[int, int]], teachers: list[OperatorTeacher],
                sizes: dict[str, int]) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """For each role in ``sizes`` (role → S sequences): the instances' samples stacked,
    (X, clean, noisy) of shapes (I, S, N, d), (I, S, N, e), (I, S, N, e), float64, each drawn from
    the role (experiment, "rstar<r*>", seed index, role) of its instance (r*, seed index)."""
    out = {}
    for role, n_seq in sizes.items():
        parts = [t.sample(numpy_rng(experiment, f"rstar{r_star}", seed, role), n_seq)
                 for (r_star, seed), t in zip(insts, teachers, strict=True)]
        out[role] = tuple(np.stack([q[j] for q in parts]) for j in range(3))
    return out


def mse_per_model(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """pred (I, R, S, N, e), target (I, S, N, e) → (I·R,)."""
    return ((pred - target[:, None]) ** 2).mean(dim=(2, 3, 4)).reshape(-1)


def chunked_mse(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, chunk: int) -> torch.Tensor:
    """Full-batch MSE per model (I·R,). Attention students go through ``AttentionStudents.sse``
    (chunks of ``chunk`` sequences, 0 = cache-sized, with the gradient computed per chunk); any
    other model (I, R, S, N, e) through its forward, over chunks of ``chunk`` sequences."""
    n = x.shape[1]
    count = n * y.shape[2] * y.shape[3]
    if isinstance(model, AttentionStudents):
        return (model.sse(x, [y], chunk)[0] / count).reshape(-1)
    if chunk <= 0 or chunk >= n:
        return mse_per_model(model(x), y)
    total = sum(((model(x[:, i:i + chunk]) - y[:, None, i:i + chunk]) ** 2).sum(dim=(2, 3, 4))
                for i in range(0, n, chunk))
    return (total / count).reshape(-1)


def chunked_errors(model: torch.nn.Module, x: torch.Tensor, clean: torch.Tensor, noisy: torch.Tensor,
                   chunk: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    """(excess, test MSE) per model over a held-out set, in chunks of sequences (attention
    students: through ``AttentionStudents.sse``, not differentiable)."""
    n = x.shape[1]
    if isinstance(model, AttentionStudents):
        count = n * clean.shape[2] * clean.shape[3]
        with torch.no_grad():
            exc, mse = model.sse(x, [clean, noisy], 0)
        return (exc / count).reshape(-1), (mse / count).reshape(-1)
    exc, mse = 0.0, 0.0
    for i in range(0, n, chunk):
        pred = model(x[:, i:i + chunk])
        w = pred.shape[2] / n
        exc = exc + w * mse_per_model(pred, clean[:, i:i + chunk])
        mse = mse + w * mse_per_model(pred, noisy[:, i:i + chunk])
    return exc, mse
