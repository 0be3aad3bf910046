"""The families beyond the single head (docs/methods.md §3.9, TT-7): one instance's groups.

The job is a ``minip.beyond.jobs.MinipBeyondJob``. Its data, evaluation sets and seed indices are
those of the B2/B3 job it embeds (``JobData(job.train)``: the same batches, seed for seed, as the
single head of ``rank_vs_m`` / ``witness``); every model's init comes from
torch_generator("beyond", instance, seed, group.tag) only. All groups train as one program (one
batch, one backward, one Adam step; groups share no parameters, see attnrank.core.train).

A causal final-query group is read at the last position only: its loss is the MSE of ŷ_N and its
metrics are those of the length-1 answers ŷ_N (``sequence_accuracy`` = accuracy at N).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from attnrank.core.control import Control, phase_of
from attnrank.core.seeding import torch_generator
from attnrank.core.train import train
from attnrank.minip.beyond.families import CAUSAL_FINAL, DIFFERENTIAL, BeyondGroup
from attnrank.minip.beyond.models import BeyondKernel, build_beyond_head, forward_groups
from attnrank.minip.data import JobData, MinIPBatch
from attnrank.minip.evaluate import sequence_metrics
from attnrank.minip.models import HeadOptions
from attnrank.minip.program import head_weights, metrics_table, recipe
from attnrank.minip.task import MAX_VOCAB_BITS

if TYPE_CHECKING:
    from attnrank.minip.beyond.jobs import MinipBeyondJob

log = logging.getLogger("attnrank.minip_beyond")


def answered(values: torch.Tensor, final_only: bool) -> torch.Tensor:
    """The positions a group answers: (..., N) → (..., N), or (..., 1) for a final-query group."""
    return values[..., -1:] if final_only else values


class BeyondHeads(nn.Module):
    """Every group of a job as one program; per-model outputs concatenated group after group
    (model index g·M + k is seed k of group g)."""

    def __init__(self, groups: list[BeyondGroup], heads: list[BeyondKernel]) -> None:
        super().__init__()
        self.groups = groups
        self.heads = nn.ModuleList(heads)

    def _answers(self, batch: MinIPBatch) -> list[tuple[torch.Tensor, torch.Tensor]]:
        preds = forward_groups(list(self.heads), batch.tokens)  # all groups as one program
        return [(answered(p, g.final_only), answered(batch.targets, g.final_only))
                for g, p in zip(self.groups, preds, strict=True)]

    def loss(self, batch: MinIPBatch) -> torch.Tensor:
        """Per-model MSE over the answered positions: (G·M,)."""
        return torch.cat([((p - t) ** 2).mean(dim=(1, 2)) for p, t in self._answers(batch)])

    def evaluate(self, eval_sets: dict[str, MinIPBatch], chunk: int = 4096
                 ) -> dict[str, torch.Tensor]:
        """{split}_{metric} → (G·M,) over every evaluation set (chunks of sequences), and ``lam``
        (λ of a differential group; 0 for the others, which have no negative part)."""
        out: dict[str, list[torch.Tensor]] = {}
        for split, batch in eval_sets.items():
            parts = [self._answers(batch.chunk(i, i + chunk))
                     for i in range(0, batch.n_sequences, chunk)]
            for g in range(len(self.groups)):
                pred = torch.cat([p[g][0] for p in parts], dim=1)
                target = torch.cat([p[g][1] for p in parts], dim=1)
                for k, v in sequence_metrics(pred, target).items():
                    out.setdefault(f"{split}_{k}", []).append(v)
        n_models = self.heads[0].n_models
        out["lam"] = [h.lam.detach() if g.family == DIFFERENTIAL
                      else torch.zeros(n_models, device=h.b_out.device)
                      for g, h in zip(self.groups, self.heads, strict=True)]
        return {k: torch.cat(v) for k, v in out.items()}


def build_heads(job: MinipBeyondJob, data: JobData) -> BeyondHeads:
    """Every group's head for every seed: model k's init from
    torch_generator("beyond", instance, seed k, group.tag) only."""
    t = job.train
    options = HeadOptions(t.feature_map, t.hidden, t.feature, data.vocab, t.compile)
    groups = job.groups()
    heads = [build_beyond_head(g, data.m, data.n_tokens,
                               [torch_generator(job.experiment, job.instance, s, g.tag)
                                for s in data.seeds], options, job.eps)
             for g in groups]
    return BeyondHeads(groups, heads)


def run_job(job: MinipBeyondJob, device: torch.device, checkpoint: Control | None = None
            ) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """Train every group of the job together; (metrics rows, final weights by 'tag/param')."""
    data = JobData(job.train, device)
    if job.train.feature_map == "table" and data.vocab is None:
        raise ValueError(f"feature_map 'table' needs m ≤ {MAX_VOCAB_BITS}, got m={data.m}")
    cfg = recipe(job.train)
    model = build_heads(job, data).to(device)
    groups = model.groups
    log.info("%s/%s: %d groups × %d seeds, %s layout", job.experiment, job.instance, len(groups),
             len(data.seeds), data.layout or "bits")
    stream = data.batch_fn()
    rows = train(model, stream, lambda mdl, batch: mdl.loss(batch), cfg,
                 lambda mdl, step: mdl.evaluate(data.eval_sets),
                 desc=f"{job.experiment}/{job.instance}/{'+'.join(job.families)}",
                 checkpoint=phase_of(checkpoint, "train", stream.generators))
    out = metrics_table(
        rows, data.seeds,
        {"model": [g.family for g in groups], "heads": [g.heads for g in groups],
         "rank": [g.budget for g in groups], "label": [g.label for g in groups]},
        {"experiment": job.experiment, "instance": job.instance},
        {"n_tokens": data.n_tokens, "m": data.m, "data_kind": job.train.data.kind,
         "feature_map": job.train.feature_map,
         "answered": lambda t: np.where(t["model"] == CAUSAL_FINAL, "last", "all"),
         "steps_total": cfg.steps, "batch": job.train.batch})
    return out, head_weights([g.tag for g in groups], model.heads)


def step(job: MinipBeyondJob, device: torch.device, control: Control | None = None
         ) -> dict[str, Any]:
    """The minip_beyond_train step: ``metrics`` table and ``weights`` arrays."""
    metrics, weights = run_job(job, device, control)
    return {"metrics": metrics, "weights": weights}
