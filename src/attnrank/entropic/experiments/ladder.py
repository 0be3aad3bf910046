"""A2 interpolation ladder on the fixed-operator task (Y = A* X V* + E, r* fixed), full-rank kernels.

Rungs (one job each; every seed of a rung trains as one vectorized program):
    B0      Ŷ = A X V, A ∈ R^{N×N} of rank N             (``SurrogateStudents``, exact statistics)
    B1      Ŷ = (X W_Q)(X W_K)ᵀ X V, K = W_Q W_Kᵀ of rank d   (``AttentionStudents``, linear)
    B2      Ŷ = softmax((X W_Q)(X W_K)ᵀ / √d) X V             (``AttentionStudents``, softmax)
    B3      a pre-LayerNorm Transformer block                  (``TransformerBlockStudents``)
    B1_pos, B2_pos   B1 and B2 on X' = [X, P], P ∈ R^{N×p} learned positional features (the
            ablation: with positions the mixer can realize a fixed, position-dependent A*); their
            kernels are full rank, d + p.
Every rung of a seed sees the same teacher, training set and held-out set (seeded by
(experiment, "rstar<r*>", seed index, role)), so rungs differ only in the model.

Parameters: a ``LadderJob`` (``instance`` = the rung, one of ``jobs.RUNGS``; r_star one int;
positions p).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import torch

from attnrank.core.control import Control, phase_of
from attnrank.core.seeding import seed_indices, torch_generator
from attnrank.core.train import train
from attnrank.entropic.experiments.common import (
    chunked_errors,
    chunked_mse,
    config_columns,
    make_operator_teacher,
    sample_sets,
    to_tensor,
    train_config,
)
from attnrank.entropic.jobs import (
    B0,
    B1,
    B2,
    B3,
    LINEAR,
    POSITIONS_SUFFIX,
    RUNGS,
    SOFTMAX,
    LadderJob,
)
from attnrank.entropic.models.attention import AttentionStudents, TransformerBlockStudents
from attnrank.entropic.models.surrogate import SurrogateStudents, quad_stats


def rung_base(rung: str) -> str:
    """The rung without its positional features: B1_pos → B1 (the table's ``rung`` column)."""
    return rung.removesuffix(POSITIONS_SUFFIX)


def has_positions(rung: str) -> bool:
    """Whether the rung learns positional features (the table's ``positions`` column)."""
    return rung.endswith(POSITIONS_SUFFIX)


def build_rung(rung: str, job: LadderJob, seeds: list[int]) -> torch.nn.Module:
    if rung not in RUNGS:
        raise ValueError(f"rung must be one of {RUNGS}, got {rung!r}")
    n, d, e, std = job.n_tokens, job.d, job.e, job.init_std
    gens = [torch_generator(job.experiment, f"rstar{job.r_star}", s, f"student-{rung}") for s in seeds]
    base = rung_base(rung)
    if base == B0:
        return SurrogateStudents(len(seeds), [n], n, d, e, std, gens)
    if base == B3:
        return TransformerBlockStudents(len(seeds), n, d, e, std, gens)
    kind = {B1: LINEAR, B2: SOFTMAX}[base]
    pos = job.positions if has_positions(rung) else 0
    scale = 1.0 if kind == LINEAR else 1.0 / math.sqrt(d)
    return AttentionStudents(len(seeds), [d + pos], n, d, e, kind, std, gens, scale=scale, positions=pos)


def run_job(job: LadderJob, device: torch.device, checkpoint: Control | None = None
            ) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """Train the job's students; ``checkpoint``: the job's checkpoint (resumed and saved)."""
    rung, r_star = job.instance, job.r_star
    seeds = seed_indices(job.seeds, job.seed_offset)
    insts = [(r_star, s) for s in seeds]
    teachers = [make_operator_teacher(job, r_star, s) for s in seeds]
    sets = sample_sets(job.experiment, insts, teachers,
                       {"train": job.n_train, "test": job.eval_sequences})
    model = build_rung(rung, job, seeds).to(device)
    if rung == B0:
        tr = quad_stats(sets["train"][0], sets["train"][2]).to(device)
        te_clean = quad_stats(sets["test"][0], sets["test"][1]).to(device)
        te_noisy = quad_stats(sets["test"][0], sets["test"][2]).to(device)

        def loss_fn(mdl: torch.nn.Module, batch: None) -> torch.Tensor:
            return mdl.mse(tr).reshape(-1)

        def errors(mdl: torch.nn.Module) -> tuple[torch.Tensor, torch.Tensor]:
            return mdl.mse(te_clean).reshape(-1), mdl.mse(te_clean, te_noisy).reshape(-1)
    else:
        x_tr, y_tr = to_tensor(sets["train"][0], device), to_tensor(sets["train"][2], device)
        x_te, clean_te, noisy_te = (to_tensor(a, device) for a in sets["test"])

        def loss_fn(mdl: torch.nn.Module, batch: None) -> torch.Tensor:
            return chunked_mse(mdl, x_tr, y_tr, job.chunk)

        def errors(mdl: torch.nn.Module) -> tuple[torch.Tensor, torch.Tensor]:
            return chunked_errors(mdl, x_te, clean_te, noisy_te)

    def evaluate(mdl: torch.nn.Module, step: int) -> dict[str, torch.Tensor]:
        exc, mse = errors(mdl)
        return {"excess": exc, "test_mse": mse}

    cfg = train_config(job)
    rows = train(model, lambda step: None, loss_fn, cfg, evaluate, desc=f"{job.experiment}/{rung}",
                 checkpoint=phase_of(checkpoint, "train"))
    df = pd.DataFrame(rows).rename(columns={"model_index": "seed"})
    df.insert(0, "experiment", job.experiment)
    df.insert(1, "rung", rung_base(rung))
    df.insert(2, "positions", has_positions(rung))
    df.insert(3, "model", rung)
    df["r_star"] = r_star
    df["position_dim"] = job.positions if has_positions(rung) else 0
    for k, v in config_columns(job).items():
        df[k] = v
    df["final"] = df["step"] == cfg.steps
    weights = {name: val.detach().double().cpu().numpy() for name, val in model.state_dict().items()}
    weights["teacher_operator"] = np.stack([t.a_star for t in teachers])
    weights["teacher_v"] = np.stack([t.v_star for t in teachers])
    return df, weights


def step(job: LadderJob, device: torch.device, control: Control | None = None
         ) -> dict[str, Any]:
    """The entropic_ladder_train step: the ``metrics`` table and the ``weights`` arrays."""
    metrics, weights = run_job(job, device, control)
    return {"metrics": metrics, "weights": weights}
