"""Capacity or optimization? The probe behind the caution on random tokens (docs/methods.md) (N = 3).

At feature rank r = V (the number of distinct tokens) an exact kernel head exists: the vocabulary
construction φ_K(z) = onehot(z), a_Q(x)_z = −β⟨x, z⟩ (the 2^m construction restricted to the
tokens that occur). The probe trains, at exactly that rank and with the default recipe:
    scratch        from the random init, the default number of steps;
    scratch_long   from the random init, ``long_steps`` steps;
    construction   from the exact construction (is an exact point stable under the recipe?).
If the construction stays exact while training from scratch at the same rank does not, the gap
is optimization, not capacity.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import torch

from attnrank.core.control import Control, phase_of
from attnrank.core.train import train
from attnrank.minip.data import JobData
from attnrank.minip.evaluate import evaluate_in_chunks, mse
from attnrank.minip.families import KERNEL, Group
from attnrank.minip.models import KernelAttention
from attnrank.minip.program import build_model, recipe

if TYPE_CHECKING:
    from attnrank.minip.jobs import MinipCapacityJob

INSTANCES = ("scratch", "scratch_long", "construction")
OFF = -30.0  # a_K off-feature pre-activation: exp(−30) ≈ 1e−13, finite so gradients flow


def set_vocab_construction(model: KernelAttention, vocab: torch.Tensor, beta: float) -> None:
    """Make every model of ``model`` the exact vocabulary construction (needs r = V, table)."""
    n_vocab, m = vocab.shape
    if model.feature_map != "table" or model.rank != n_vocab:
        raise ValueError(f"the vocabulary construction needs table features with r = V = {n_vocab}")
    order = model.vocab_codes.argsort()  # table rows follow the sorted codes; vocab is sorted too
    tab_q = -beta * (vocab @ vocab.T)
    tab_k = torch.full((n_vocab, n_vocab), OFF)
    tab_k.fill_diagonal_(0.0)
    w = torch.zeros(2 * m + 1, m)
    w[:m] = torch.eye(m)
    w[m:2 * m] = torch.eye(m)
    with torch.no_grad():
        model.table.copy_(torch.cat([tab_q, tab_k], 1)[order][None].expand_as(model.table))
        model.w_out.copy_(w.expand_as(model.w_out))
        model.b_out.zero_()


def run_capacity(job: MinipCapacityJob, device: torch.device,
                 checkpoint: Control | None = None) -> pd.DataFrame:
    """Train one instance (one of INSTANCES) of the probe: a table-feature kernel head of rank
    r = V on random tokens of a table-able m. ``checkpoint``: the job's checkpoint (resumed and
    saved; a core.control.Control)."""
    inst = job.instance
    if inst not in INSTANCES:
        raise ValueError(f"capacity instance must be one of {INSTANCES}, got {inst!r}")
    data = JobData(job, device)
    if data.vocab is None:
        raise ValueError("the capacity probe needs an enumerable vocabulary (m ≤ 16)")
    group = Group(KERNEL, int(data.vocab.shape[0]))
    steps = job.long_steps if inst == "scratch_long" else job.steps
    model = build_model(group, data, job, "table")
    if inst == "construction":
        set_vocab_construction(model, data.vocab, job.beta)
    model = model.to(device)

    def evaluate(mdl: KernelAttention, step: int) -> dict[str, torch.Tensor]:
        return {f"test_{k}": v for k, v in evaluate_in_chunks(mdl, data.eval_sets["test"]).items()}

    with torch.no_grad():
        start = {k: v.cpu().numpy() for k, v in evaluate(model, 0).items()}
    cfg = recipe(job, steps)
    stream = data.batch_fn()
    rows = train(model, stream, mse, cfg, evaluate, desc=f"capacity/{inst}",
                 checkpoint=phase_of(checkpoint, "train", stream.generators))
    rows += [{"step": 0, "model_index": k, "train_loss": np.nan,
              **{name: float(v[k]) for name, v in start.items()}} for k in range(len(data.seeds))]
    df = pd.DataFrame(rows)
    df["model_index"] = np.asarray(data.seeds)[df["model_index"].to_numpy()]
    df = df.rename(columns={"model_index": "seed"})
    df.insert(0, "experiment", job.experiment)
    df.insert(1, "instance", inst)
    df["model"] = group.family
    df["rank"] = group.rank_column
    df["n_tokens"] = data.n_tokens
    df["m"] = data.m
    df["feature_map"] = "table"
    df["steps_total"] = steps
    df["final"] = df["step"] == steps
    return df.sort_values(["step", "seed"]).reset_index(drop=True)


def step(job: MinipCapacityJob, device: torch.device, control: Control | None = None
         ) -> dict[str, Any]:
    """The minip_capacity_train step: the ``metrics`` table."""
    return {"metrics": run_capacity(job, device, control)}
