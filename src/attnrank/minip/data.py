"""The data of a Min-IP training job: its batches (``MinIPBatch``), the layout the models compute
them in (``batch_layout``), and its training stream and evaluation sets (``JobData``).

Everything derives from (experiment, instance, seed index, role) through ``core.seeding``, so it is
identical for every group of a job and for every job that embeds another's data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import torch

from attnrank.core.seeding import seed_indices, torch_generator
from attnrank.core.train import Stream
from attnrank.minip.models import GATHERED, PAIR_TABLES, TokenIds
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

# the pair tables run when V² ≤ this · B·N² (pairs per step); 4 puts m = 8, N = 2 at B = 512
# on them (12.6 against 19.8 ms per step of its job, 1 thread), m = 12 (V = 924) is gathered
PAIR_TABLES_RATIO = 4

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


def id_batch(ids: torch.Tensor, vocab: torch.Tensor, layout: str | None,
             gram: torch.Tensor | None = None) -> MinIPBatch:
    """A batch of token ids (M, B, N) into vocab (V, m): kept as ids in ``layout`` (``pairs`` or
    ``tokens``, see ``minip.models.TokenIds``; targets from the V×V inner-product table ``gram``
    = vocab vocabᵀ, computed here when not given) or, for None, expanded to bits."""
    if layout is None:
        return bits_batch(vocab[ids])
    if gram is None:
        gram = vocab @ vocab.T  # (V, V), exact small integers
    return MinIPBatch(TokenIds(ids, vocab, layout),
                      gram[ids[..., :, None], ids[..., None, :]].amin(-1))


def bits_batch(bits: torch.Tensor) -> MinIPBatch:
    return MinIPBatch(bits, minip_targets(bits))


def batch_layout(n_vocab: int | None, batch: int, n_tokens: int) -> str | None:
    """How a job's batches are computed (a speed choice only: every layout computes the same
    function, to float rounding): ``pairs`` when the V² pair tables are small against the B·N²
    pairs of a step (V² ≤ PAIR_TABLES_RATIO·B·N²), else ``tokens`` when the V token features are
    few against the B·N tokens (V ≤ B·N), else None (bits; also without an enumerated
    vocabulary)."""
    if n_vocab is None:
        return None
    if n_vocab**2 <= PAIR_TABLES_RATIO * batch * n_tokens**2:
        return PAIR_TABLES
    return GATHERED if n_vocab <= batch * n_tokens else None


class JobData:
    """The training stream and the evaluation sets of one job, for every seed index.

    Everything derives from (experiment, instance, seed index, role) and so is identical for every
    rank group and for the dense baseline of the same seed. Where the vocabulary is enumerable
    and small (``batch_layout``), batches hold token ids and the models compute them on the
    vocabulary (``layout``: ``pairs`` or ``tokens``); the tokens are the same either way.
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
        self.layout = batch_layout(n_vocab, self.train_size, self.n_tokens)
        if self.vocab is not None:
            self.vocab = self.vocab.to(device)
        # the targets of every id batch (V, V) (none for bits: at m = 16 it would be 660 MB)
        self.gram = None if self.layout is None else self.vocab @ self.vocab.T
        self.eval_sets = {k: self._batch(v.to(device)) for k, v in ids.items()}
        self.eval_sets |= {k: bits_batch(v.to(device)) for k, v in bits.items()}

    def _batch(self, ids: torch.Tensor) -> MinIPBatch:
        return id_batch(ids, self.vocab, self.layout, self.gram)

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
