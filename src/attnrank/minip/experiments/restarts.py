"""The restart (trap) study: one model of one Min-IP training job, retrained on every seed under
the original recipe and under variants (lower peak lr, more steps), each from the SAME
initialization and the SAME data stream that the training job gives that seed.

Same init and data: a model's parameters are drawn from torch_generator(experiment, instance,
seed, tag) and its batches from torch_generator(experiment, instance, seed, "train") (see
``experiments.minip``); neither depends on the other groups of the job, on the number of seeds,
nor on the optimizer. So building the head with the job's own ``build_model`` and ``JobData``
for seed indices offset … offset + seeds − 1 gives every variant, for seed s, the init and the
batch stream of seed s in the training job (a variant with more steps continues that stream).

Vectorized: the variants that share a step count train as one ``GroupedHeads`` program (one head
of M = seeds models per variant, leading model axis, one optimizer), the others each as their own
program. A variant's lr factor f scales each of its optimizer steps: Adam's step
Δθ = −lr_t · m̂/(√v̂ + ε) is linear in lr_t and its moments m̂, v̂ do not depend on lr, so
θ_old + f·(θ_new − θ_old) is Adam at peak lr f·lr (to float rounding); heads with f = 1 are left
untouched (bit-identical to a plain run).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from attnrank.core import optim
from attnrank.core.control import Control, phase_of
from attnrank.core.train import train
from attnrank.minip.data import JobData
from attnrank.minip.families import Group
from attnrank.minip.program import GroupedHeads, build_model, recipe
from attnrank.minip.task import MAX_VOCAB_BITS

if TYPE_CHECKING:
    from attnrank.minip.jobs import MinipRestartsJob

log = logging.getLogger("attnrank.minip_restarts")


@contextlib.contextmanager
def lr_factors(heads: Sequence[nn.Module], factors: Sequence[float]) -> Iterator[None]:
    """While active, every optimizer step over these heads' parameters is scaled per head:
    θ ← θ_old + f·(θ_new − θ_old) for a head with factor f ≠ 1 (Adam at lr·f, see the module
    docstring); heads with f = 1 are not touched. Optimizers over other parameters are ignored."""
    scaled = [(list(h.parameters()), float(f)) for h, f in zip(heads, factors, strict=True)
              if float(f) != 1.0]
    ours = {id(p) for h in heads for p in h.parameters()}
    saved: list[list[torch.Tensor]] = []

    def mine(opt: optim.Optimizer) -> bool:
        return any(id(p) in ours for p in opt.params)

    def pre(opt: optim.Optimizer) -> None:
        if mine(opt):
            saved[:] = [[p.detach().clone() for p in ps] for ps, _ in scaled]

    def post(opt: optim.Optimizer) -> None:
        if not mine(opt):
            return
        with torch.no_grad():
            for (ps, f), olds in zip(scaled, saved, strict=True):
                for p, old in zip(ps, olds, strict=True):
                    p.copy_(old + f * (p - old))

    handles = optim.step_hooks(pre, post)
    try:
        yield
    finally:
        for h in handles:
            h.remove()


def run_restarts(job: MinipRestartsJob, device: torch.device,
                 checkpoint: Control | None = None) -> pd.DataFrame:
    """Train the case's model under every variant on every seed; return the tidy rows: one per
    (variant, logged step, seed) with the case's names, the factors, ``train_loss``, the held-out
    metrics, ``final`` and the case's criterion (claim, metric, rule, threshold) as columns.
    ``checkpoint``: the job's checkpoint, one phase per program (``x<step factor>``)."""
    base = job.train
    train_job = replace(base, seeds=job.seeds, log_every=job.log_every)
    data = JobData(train_job, device)
    if train_job.feature_map == "table" and data.vocab is None:
        raise ValueError(f"feature_map 'table' needs m ≤ {MAX_VOCAB_BITS}, got m={data.m}")
    group_id = Group.parse(job.model)
    variants = job.variants
    frames = []
    for step_factor in sorted({v.step_factor for v in variants}):
        group = [v for v in variants if v.step_factor == step_factor]
        # every head of this program: the same init (build_model with the group's own tag)
        heads = {v.name: build_model(group_id, data, train_job, train_job.feature_map)
                 for v in group}
        model = GroupedHeads(heads).to(device)
        cfg = recipe(train_job, train_job.steps * step_factor)
        log.info("%s: %s × %d seeds, %d steps", job.case, ", ".join(heads), len(data.seeds),
                 cfg.steps)
        stream = data.batch_fn()
        with lr_factors(list(model.heads), [v.lr_factor for v in group]):
            rows = train(model, stream, lambda mdl, batch: mdl.loss(batch), cfg,
                         lambda mdl, step: mdl.evaluate(data.eval_sets),
                         desc=f"{job.case} ×{step_factor} steps",
                         checkpoint=phase_of(checkpoint, f"x{step_factor}", stream.generators))
        df = pd.DataFrame(rows)
        head, slot = np.divmod(df.pop("model_index").to_numpy(), len(data.seeds))
        df.insert(0, "seed", np.asarray(data.seeds)[slot])
        df.insert(0, "variant", [group[h].name for h in head])
        df["lr_factor"] = [float(group[h].lr_factor) for h in head]
        df["step_factor"] = step_factor
        df["steps_total"] = cfg.steps
        df["final"] = df["step"] == cfg.steps
        frames.append(df)
    out = pd.concat(frames, ignore_index=True)
    order = {v.name: i for i, v in enumerate(variants)}
    out = out.sort_values(["variant", "seed", "step"], key=lambda c: c.map(order)
                          if c.name == "variant" else c, kind="stable").reset_index(drop=True)
    crit = job.criterion
    front = {"case": job.case, "experiment": base.experiment, "instance": base.instance,
             "model": job.model, "rank": group_id.rank_column}
    for i, (k, v) in enumerate(front.items()):
        out.insert(i, k, v)
    out["m"] = data.m
    out["lr"] = float(train_job.lr) * out["lr_factor"]
    out["claim"] = crit.claim
    out["criterion_metric"] = crit.metric
    out["criterion_rule"] = crit.rule
    out["criterion_threshold"] = float(crit.threshold)
    return out


def step(job: MinipRestartsJob, device: torch.device, control: Control | None = None
         ) -> dict[str, Any]:
    """The minip_restarts_train step: the ``metrics`` table of every restart."""
    return {"metrics": run_restarts(job, device, control)}
