"""The training program of a Min-IP job: every group's head (``build_model``), the groups as one
program (``GroupedHeads``: one batch, one backward and one optimizer step for all of them), the
optimizer recipe, and the tidy metrics table of the trainer's rows (``metrics_table``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from attnrank.core.seeding import torch_generator
from attnrank.core.train import TrainConfig
from attnrank.minip.data import JobData, MinIPBatch
from attnrank.minip.evaluate import sequence_metrics
from attnrank.minip.families import Group
from attnrank.minip.models import (
    HeadOptions,
    MinIPHead,
    TokenIds,
    build_head,
    forward_bits,
    forward_tokens,
)

if TYPE_CHECKING:
    from attnrank.minip.jobs import MinipCapacityJob, MinipTrainJob


def build_model(group: Group, data: JobData, job: MinipTrainJob | MinipCapacityJob,
                feature_map: str) -> MinIPHead:
    """The head of ``group`` for every seed of the job: model k's init from
    torch_generator(experiment, instance, seed k, group.tag) only."""
    gens = [torch_generator(job.experiment, job.instance, s, group.tag) for s in data.seeds]
    return build_head(group, data.m, gens, HeadOptions(feature_map, job.hidden, job.feature,
                                                       data.vocab, job.compile))


class GroupedHeads(nn.Module):
    """Every group of a job (kernel heads of different ranks, the dense baseline) as one program:
    one batch, one backward and one optimizer step per training step for all of them. Groups share
    no parameters, so each model's trajectory is the one it follows alone (see attnrank.core.train).

    Per-model outputs are concatenated group after group: model index g·M + k is seed k of group g.
    """

    def __init__(self, heads: dict[str, MinIPHead]) -> None:
        super().__init__()
        self.tags = list(heads)
        self.heads = nn.ModuleList(heads.values())

    def predict(self, batch: MinIPBatch) -> torch.Tensor:
        """Every head's predictions: (G·M, B, N), all heads in one pass (``forward_tokens`` for
        token ids, ``forward_bits`` for bits)."""
        if isinstance(batch.tokens, TokenIds):
            return forward_tokens(list(self.heads), batch.tokens)
        return forward_bits(list(self.heads), batch.tokens)

    def loss(self, batch: MinIPBatch) -> torch.Tensor:
        """Per-model MSE: (G·M,)."""
        err = self.predict(batch).unflatten(0, (len(self.heads), -1)) - batch.targets
        return (err**2).mean(dim=(2, 3)).flatten()

    def evaluate(self, eval_sets: dict[str, MinIPBatch], chunk: int = 4096
                 ) -> dict[str, torch.Tensor]:
        """{split}_{metric} → (G·M,) over every evaluation set, in chunks of sequences."""
        out: dict[str, torch.Tensor] = {}
        for split, batch in eval_sets.items():
            pred = torch.cat([self.predict(batch.chunk(i, i + chunk))
                              for i in range(0, batch.n_sequences, chunk)], dim=1)
            targets = batch.targets.repeat(len(self.heads), 1, 1)
            out |= {f"{split}_{k}": v for k, v in sequence_metrics(pred, targets).items()}
        return out


def recipe(job: MinipTrainJob | MinipCapacityJob, steps: int | None = None) -> TrainConfig:
    """The job's optimizer recipe (``steps``: another step count than the job's)."""
    return TrainConfig(steps=job.steps if steps is None else steps, lr=job.lr, warmup=job.warmup,
                       log_every=job.log_every)


def metrics_table(rows: list[dict[str, Any]], seeds: Sequence[int],
                  per_group: dict[str, Sequence[Any]], front: dict[str, Any],
                  back: dict[str, Any]) -> pd.DataFrame:
    """The tidy metrics table of a job from the trainer's rows (one per logged step and model
    index, model index g·S + k = seed k of group g): ``front`` columns first, then the group's
    columns (``per_group``: column → one value per group), step, seed and the metrics, then
    ``back`` (column → a value, or a function of the table so far giving one per row), and
    ``final`` (the last step). Rows are ordered group by group, then by step and seed."""
    df = pd.DataFrame(rows)
    group, slot = np.divmod(df.pop("model_index").to_numpy(), len(seeds))
    df.insert(1, "seed", np.asarray(seeds)[slot])
    for i, (column, values) in enumerate(per_group.items()):
        df.insert(i, column, [values[g] for g in group])
    df["group"] = group  # the trainer's rows come step by step: order them group by group
    df = df.sort_values(["group", "step", "seed"], kind="stable").drop(columns="group")
    out = df.reset_index(drop=True)
    for i, (column, value) in enumerate(front.items()):
        out.insert(i, column, value)
    for column, value in back.items():
        out[column] = value(out) if callable(value) else value
    out["final"] = out["step"] == out["steps_total"]
    return out


def head_weights(tags: Sequence[str], heads: Sequence[nn.Module]) -> dict[str, np.ndarray]:
    """Every head's final parameters and buffers by 'tag/name'."""
    return {f"{tag}/{name}": val.detach().cpu().numpy()
            for tag, head in zip(tags, heads, strict=True)
            for name, val in head.state_dict().items()}
