"""Paper B jobs: train every kernel-attention rank group (and dense) of one Min-IP task instance.

The job is a ``minip.jobs.MinipTrainJob``:
    experiment, instance          names used in the seed scheme and the tables
    data                          RandomData | WitnessData | PoolsData (minip.jobs)
    feature_map, feature, hidden  the kernel heads' feature map
    ranks, seeds, dense           the models: kernel rank groups, seed count, dense baseline on/off
    batch (0 = full batch), steps, lr, warmup, log_every, eval_sequences
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pandas as pd
import torch
from torch import nn

from attnrank.core.control import Control, phase_of
from attnrank.core.seeding import seed_indices, torch_generator
from attnrank.core.train import Stream, TrainConfig, train
from attnrank.minip.families import DENSE, NO_FEATURE_MAP, Group, job_groups
from attnrank.minip.models import (
    HeadOptions,
    MinIPHead,
    TokenIds,
    build_head,
    forward_bits,
    forward_tokens,
)
from attnrank.minip.task import (
    MAX_VOCAB_BITS,
    disjoint_pools,
    distinct_sequence_ids,
    minip_targets,
    sample_sequences,
    token_ids,
    token_vocab,
    witness_family,
)

if TYPE_CHECKING:
    from attnrank.minip.jobs import MinipCapacityJob, MinipTrainJob

log = logging.getLogger("attnrank.minip")


# the vocabulary path runs when V² ≤ this · B·N² (pairs per step); 4 puts m = 8, N = 2 at B = 512
# on it (12.6 against 19.8 ms per step of its job, 1 thread), m = 12 (V = 924) stays direct
VOCAB_PATH_RATIO = 4


class MinIPBatch(NamedTuple):
    """Sequences and their targets for every model.

    tokens: bits (M, B, N, m), or TokenIds (M, B, N) into a vocabulary (the vocabulary path);
    targets: t_i = min_j ⟨x_i, x_j⟩, (M, B, N) float.
    """

    tokens: torch.Tensor | TokenIds
    targets: torch.Tensor

    def chunk(self, start: int, stop: int) -> MinIPBatch:
        """Sequences start:stop of every model."""
        if isinstance(self.tokens, TokenIds):
            return MinIPBatch(self.tokens[start:stop], self.targets[:, start:stop])
        return MinIPBatch(self.tokens[:, start:stop], self.targets[:, start:stop])

    @property
    def n_sequences(self) -> int:
        return self.tokens.shape[1]


def id_batch(ids: torch.Tensor, vocab: torch.Tensor, with_ids: bool) -> MinIPBatch:
    """A batch of token ids (M, B, N) into vocab (V, m): kept as ids (the vocabulary path, targets
    from the V×V inner-product table) or expanded to bits."""
    if not with_ids:
        return bits_batch(vocab[ids])
    gram = vocab @ vocab.T  # (V, V), exact small integers
    return MinIPBatch(TokenIds(ids, vocab), gram[ids[..., :, None], ids[..., None, :]].amin(-1))


def bits_batch(bits: torch.Tensor) -> MinIPBatch:
    return MinIPBatch(bits, minip_targets(bits))


def predict(model: MinIPHead, batch: MinIPBatch) -> torch.Tensor:
    """Predictions (M, B, N), by the vocabulary path when the batch holds token ids."""
    if isinstance(batch.tokens, TokenIds):
        return model.forward_tokens(batch.tokens)
    return model(batch.tokens)


def sequence_metrics(pred: torch.Tensor, target: torch.Tensor) -> dict[str, torch.Tensor]:
    """Per-model metrics of predictions (M, B, N) against integer targets (M, B, N).

    position_error: fraction of positions with round(ŷ) ≠ t; sequence_accuracy: fraction of
    sequences with every position right; worst_case_error: max |ŷ − t|; mse: mean (ŷ − t)².
    """
    wrong = torch.round(pred) != target
    err = (pred - target).abs()
    return {
        "mse": (err**2).mean(dim=(1, 2)),
        "position_error": wrong.float().mean(dim=(1, 2)),
        "sequence_accuracy": (~wrong.any(dim=2)).float().mean(dim=1),
        "worst_case_error": err.amax(dim=(1, 2)),
    }


def evaluate_in_chunks(model: MinIPHead, data: torch.Tensor | MinIPBatch, chunk: int = 4096
                       ) -> dict[str, torch.Tensor]:
    """sequence_metrics over a large evaluation set (bits (M, E, N, m) or a batch), in chunks of
    sequences."""
    batch = bits_batch(data) if isinstance(data, torch.Tensor) else data
    preds = [predict(model, batch.chunk(i, i + chunk)) for i in range(0, batch.n_sequences, chunk)]
    return sequence_metrics(torch.cat(preds, dim=1), batch.targets)


def uses_vocab_path(n_vocab: int | None, batch: int, n_tokens: int) -> bool:
    """The vocabulary path pays when the V² pair tables are small against the B·N² pairs of a
    step; it is a speed choice only (both paths compute the same function, to float rounding)."""
    return n_vocab is not None and n_vocab**2 <= VOCAB_PATH_RATIO * batch * n_tokens**2


class JobData:
    """The training stream and the evaluation sets of one job, for every seed index.

    Everything derives from (experiment, instance, seed index, role) and so is identical for every
    rank group and for the dense baseline of the same seed. Where the vocabulary is enumerable
    and small (``uses_vocab_path``), batches hold token ids and the models run their vocabulary
    path; the tokens are the same either way.
    """

    def __init__(self, job: MinipTrainJob | MinipCapacityJob, device: torch.device) -> None:
        self.job, self.device = job, device
        self.seeds = seed_indices(job.seeds, job.seed_offset)
        data = job.data
        self.kind = data.kind
        exp, inst = job.experiment, job.instance
        n_seeds = len(self.seeds)
        ids: dict[str, torch.Tensor] = {}  # split → token ids (M, E, N), when a vocabulary exists
        bits: dict[str, torch.Tensor] = {}  # split → bits (M, E, N, m), when none does
        if self.kind in ("random", "pools"):
            self.n_tokens, self.m, self.tokens = data.n_tokens, data.m, data.tokens
            self.vocab = token_vocab(self.m, self.tokens) if self.m <= MAX_VOCAB_BITS else None
        if self.kind == "random":
            gens = [torch_generator(exp, inst, s, "eval") for s in self.seeds]
            if self.vocab is not None:
                ids["test"] = self._random_ids(gens, job.eval_sequences)
            else:
                bits["test"] = sample_sequences(gens, job.eval_sequences, self.n_tokens, self.m,
                                                self.tokens)
            self.train_size = job.batch
        elif self.kind == "witness":
            fam = witness_family(data.blocks, data.width)
            self.n_tokens, self.m = 3, fam.shape[-1]
            self.vocab = torch.unique(fam.reshape(-1, self.m), dim=0)
            ids["test"] = token_ids(fam, self.vocab).expand(n_seeds, -1, -1)
            self.train_size = fam.shape[0]
        elif self.kind == "pools" and self.vocab is not None and data.share_tokens:
            # ids drawn straight from the V^N sequences (the large pools fit no bit tensor)
            pools = [distinct_sequence_ids(torch_generator(exp, inst, s, "pools"),
                                           self.vocab.shape[0], data.train_pool, data.test_pool,
                                           self.n_tokens) for s in self.seeds]
            self.pool = torch.stack([p[0] for p in pools])
            n_eval = min(job.eval_sequences, data.train_pool)
            ids["train"] = self.pool[:, :n_eval]
            ids["test"] = torch.stack([p[1] for p in pools])
            self.train_size = job.batch or data.train_pool
        elif self.kind == "pools":
            pools = [disjoint_pools(torch_generator(exp, inst, s, "pools"), data.train_pool,
                                    data.test_pool, self.n_tokens, self.m, self.tokens,
                                    share_tokens=data.share_tokens)
                     for s in self.seeds]
            train_pool = torch.stack([p[0] for p in pools])
            test_pool = torch.stack([p[1] for p in pools])
            n_eval = min(job.eval_sequences, data.train_pool)
            if self.vocab is not None:
                self.pool = token_ids(train_pool, self.vocab)
                ids["train"], ids["test"] = self.pool[:, :n_eval], token_ids(test_pool, self.vocab)
            else:
                self.pool = train_pool
                bits["train"], bits["test"] = train_pool[:, :n_eval], test_pool
            self.train_size = job.batch or data.train_pool
        else:
            raise ValueError(f"data.kind must be random, witness or pools, got {self.kind!r}")
        n_vocab = None if self.vocab is None else self.vocab.shape[0]
        self.vocab_path = uses_vocab_path(n_vocab, self.train_size, self.n_tokens)
        if self.vocab is not None:
            self.vocab = self.vocab.to(device)
        self.eval_sets = {k: self._batch(v.to(device)) for k, v in ids.items()}
        self.eval_sets |= {k: bits_batch(v.to(device)) for k, v in bits.items()}

    def _batch(self, ids: torch.Tensor) -> MinIPBatch:
        return id_batch(ids, self.vocab, with_ids=self.vocab_path)

    def _random_ids(self, gens: list[torch.Generator], batch: int) -> torch.Tensor:
        """Uniform token ids (M, batch, N): model k's from gens[k] only."""
        return torch.stack([torch.randint(0, self.vocab.shape[0], (batch, self.n_tokens),
                                          generator=g) for g in gens])

    def batch_fn(self) -> Stream:
        """The training stream, one per job (every group trains on it): step → MinIPBatch, with
        the generators it draws from (none for a fixed batch)."""
        exp, inst, batch = self.job.experiment, self.job.instance, self.job.batch
        dev = self.device
        if self.kind == "witness" or (self.kind == "pools" and batch == 0):
            fixed = (self.eval_sets["test"] if self.kind == "witness"
                     else self._to_batch(self.pool.to(dev)))
            return Stream(lambda step: fixed)
        if batch < 1:
            raise ValueError("batch must be ≥ 1 for random tokens (0 means full batch for "
                             "finite families)")
        gens = [torch_generator(exp, inst, s, "train") for s in self.seeds]
        if self.kind == "pools":
            pool = self.pool

            def pool_batch(step: int) -> MinIPBatch:
                idx = torch.stack([torch.randint(0, pool.shape[1], (batch,), generator=g)
                                   for g in gens])
                idx = idx.reshape(*idx.shape, *([1] * (pool.ndim - 2)))
                return self._to_batch(torch.gather(pool, 1, idx.expand(-1, -1, *pool.shape[2:]))
                                      .to(dev))
            return Stream(pool_batch, tuple(gens))

        def random_batch(step: int) -> MinIPBatch:
            if self.vocab is not None:
                return self._batch(self._random_ids(gens, batch).to(dev))
            return bits_batch(sample_sequences(gens, batch, self.n_tokens, self.m, self.tokens)
                              .to(dev))
        return Stream(random_batch, tuple(gens))

    def _to_batch(self, tokens: torch.Tensor) -> MinIPBatch:
        """Pool sequences (ids when a vocabulary exists, else bits) as a batch."""
        return self._batch(tokens) if self.vocab is not None else bits_batch(tokens)


def _mse(model: MinIPHead, batch: MinIPBatch) -> torch.Tensor:
    return ((predict(model, batch) - batch.targets) ** 2).mean(dim=(1, 2))


def build_model(group: Group, data: JobData, job: MinipTrainJob | MinipCapacityJob,
                feature_map: str) -> MinIPHead:
    """The head of ``group`` for every seed of the job: model k's init from
    torch_generator(experiment, instance, seed k, group.tag) only."""
    gens = [torch_generator(job.experiment, job.instance, s, group.tag) for s in data.seeds]
    return build_head(group, data.m, gens, HeadOptions(feature_map, job.hidden, job.feature,
                                                       data.vocab))


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
    log.info("%s/%s: %d groups × %d seeds, %s path", job.experiment, job.instance,
             len(groups), len(data.seeds), "vocabulary" if data.vocab_path else "direct")
    stream = data.batch_fn()
    rows = train(model, stream, lambda mdl, batch: mdl.loss(batch), cfg,
                 lambda mdl, step: mdl.evaluate(data.eval_sets),
                 desc=f"{job.experiment}/{job.instance}",
                 checkpoint=phase_of(checkpoint, "train", stream.generators))
    df = pd.DataFrame(rows)
    group, slot = np.divmod(df.pop("model_index").to_numpy(), len(data.seeds))
    df.insert(1, "seed", np.asarray(data.seeds)[slot])
    df.insert(0, "model", [groups[g].family for g in group])
    df.insert(1, "rank", [groups[g].rank_column for g in group])
    df["group"] = group  # the trainer's rows come step by step: order them group by group
    df = df.sort_values(["group", "step", "seed"], kind="stable").drop(columns="group")
    weights = {f"{tag}/{name}": val.detach().cpu().numpy()
               for tag, head in zip(model.tags, model.heads, strict=True)
               for name, val in head.state_dict().items()}
    out = df.reset_index(drop=True)
    out.insert(0, "experiment", job.experiment)
    out.insert(1, "instance", job.instance)
    out["n_tokens"] = data.n_tokens
    out["m"] = data.m
    out["data_kind"] = job.data.kind
    out["feature_map"] = np.where(out["model"] == DENSE, NO_FEATURE_MAP, job.feature_map)
    out["steps_total"] = cfg.steps
    out["batch"] = job.batch
    out["final"] = out["step"] == cfg.steps
    return out, weights


def step(job: MinipTrainJob, device: torch.device, control: Control | None = None
         ) -> dict[str, Any]:
    """The minip_train step: the job's outputs by name (``metrics`` table, ``weights`` arrays)."""
    metrics, weights = run_job(job, device, control)
    return {"metrics": metrics, "weights": weights}
