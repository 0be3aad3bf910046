"""Paper B jobs: train every kernel-attention rank group (and dense) of one Min-IP task instance.

The job is a ``minip.jobs.MinipTrainJob``:
    experiment, instance          names used in the seed scheme and the tables
    data                          RandomData | WitnessData | PoolsData (minip.jobs)
    feature_map, feature, hidden  the kernel heads' feature map
    ranks, seeds, dense           the models: kernel rank groups, seed count, dense baseline on/off
    batch (0 = full batch), steps, lr, warmup, log_every, eval_sequences
    compile                       the pairwise reductions compiled (minip.pairs)
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import torch

from attnrank.core.control import Control, phase_of
from attnrank.core.train import train
from attnrank.minip.data import JobData
from attnrank.minip.families import DENSE, NO_FEATURE_MAP, job_groups
from attnrank.minip.program import GroupedHeads, build_model, head_weights, metrics_table, recipe
from attnrank.minip.task import MAX_VOCAB_BITS

if TYPE_CHECKING:
    from attnrank.minip.jobs import MinipTrainJob

log = logging.getLogger("attnrank.minip")


def run_job(job: MinipTrainJob, device: torch.device, checkpoint: Control | None = None
            ) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """Train every group of the job together; return (metrics rows, final weights by
    'tag/param'). ``checkpoint``: the job's checkpoint (resumed and saved; a core.control.Control)."""
    data = JobData(job, device)
    if job.feature_map == "table" and data.vocab is None:
        raise ValueError(f"feature_map 'table' needs m ≤ {MAX_VOCAB_BITS}, got m={data.m}")
    cfg = recipe(job)
    groups = job_groups(job.ranks, job.dense)
    heads = {g.tag: build_model(g, data, job, job.feature_map) for g in groups}
    model = GroupedHeads(heads).to(device)
    log.info("%s/%s: %d groups × %d seeds, %s layout", job.experiment, job.instance,
             len(groups), len(data.seeds), data.layout or "bits")
    stream = data.batch_fn()
    rows = train(model, stream, lambda mdl, batch: mdl.loss(batch), cfg,
                 lambda mdl, step: mdl.evaluate(data.eval_sets),
                 desc=f"{job.experiment}/{job.instance}",
                 checkpoint=phase_of(checkpoint, "train", stream.generators))
    out = metrics_table(
        rows, data.seeds,
        {"model": [g.family for g in groups], "rank": [g.rank_column for g in groups]},
        {"experiment": job.experiment, "instance": job.instance},
        {"n_tokens": data.n_tokens, "m": data.m, "data_kind": job.data.kind,
         "feature_map": lambda t: np.where(t["model"] == DENSE, NO_FEATURE_MAP, job.feature_map),
         "steps_total": cfg.steps, "batch": job.batch})
    return out, head_weights(model.tags, model.heads)


def step(job: MinipTrainJob, device: torch.device, control: Control | None = None
         ) -> dict[str, Any]:
    """The minip_train step: the job's outputs by name (``metrics`` table, ``weights`` arrays)."""
    metrics, weights = run_job(job, device, control)
    return {"metrics": metrics, "weights": weights}
