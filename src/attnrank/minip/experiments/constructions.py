"""The hand-built Min-IP constructions evaluated as the 'capacity' rows of the figures.

- rank 1 (kernel): exact for N ≤ 2, evaluated at N = 1, 2, 3;
- 2^m features (kernel): exact for N = 3 when β ≥ 2, evaluated on fresh sequences and, in closed
  form, on every ordered triple of tokens;
- dense softmax with a large constant temperature: exact for N = 3.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import torch

from attnrank.core.seeding import torch_generator
from attnrank.minip.evaluate import evaluate_in_chunks
from attnrank.minip.families import DENSE, KERNEL, NO_RANK
from attnrank.minip.models import dense_construction, exponential_construction, rank1_construction
from attnrank.minip.task import sample_sequences, token_vocab, witness_family

if TYPE_CHECKING:
    from attnrank.minip.jobs import InformationBoundJob, MinipConstructionsJob


def softmin_worst_case(m: int, beta: float, tokens: str) -> float:
    """Worst |ŷ − t| of ŷ_i = Σ_j softmin_β(⟨x_i, x_j⟩) ⟨x_i, x_j⟩ over all ordered triples.

    This is exactly what the 2^m-feature construction computes (α(x, z) = exp(−β⟨x, z⟩)). For a
    query a with the other tokens b, c the error is that of the values g = (G_aa, G_ab, G_ac), so the
    maximum over all (a, b, c) covers every position of every ordered triple. float64, chunked by a.
    """
    vocab = token_vocab(m, tokens).double().numpy()
    gram = vocab @ vocab.T  # (V, V)
    worst = 0.0
    for a in range(gram.shape[0]):
        g = np.stack(np.broadcast_arrays(gram[a, a], gram[a][:, None], gram[a][None, :]), -1)
        w = np.exp(-beta * (g - g.min(-1, keepdims=True)))
        y = (w * g).sum(-1) / w.sum(-1)
        worst = max(worst, float(np.abs(y - g.min(-1)).max()))
    return worst


def _row(name: str, rank: int, n_tokens: int, m: int, beta: float | None, eval_set: str,
         metrics: dict[str, torch.Tensor]) -> dict[str, Any]:
    return {"construction": name, "rank": rank, "n_tokens": n_tokens, "m": m,
            "beta": np.nan if beta is None else beta, "eval_set": eval_set,
            **{k: float(v[0]) for k, v in metrics.items()}}


def run_constructions(job: MinipConstructionsJob) -> pd.DataFrame:
    """Every construction of the job on fresh sequences (one draw, seed index ``seed_offset``),
    the 2^m-feature heads also in closed form on every ordered triple, and the dense and rank-1
    heads on the job's witness family."""
    n_eval, tokens = job.eval_sequences, job.tokens
    rows = []

    def fresh(n_tokens: int, m: int) -> torch.Tensor:
        gen = torch_generator("constructions", f"N{n_tokens}-m{m}", job.seed_offset, "eval")
        return sample_sequences([gen], n_eval, n_tokens, m, tokens)

    with torch.no_grad():
        m1 = job.rank1_m
        for n in job.lengths:
            rows.append(_row("rank1", 1, n, m1, None, "random",
                             evaluate_in_chunks(rank1_construction(m1), fresh(n, m1))))
        for m in job.exp_ms:
            x = fresh(3, m)
            for beta in job.exp_betas:
                model = exponential_construction(m, float(beta))
                rows.append(_row("exp_features", 2**m, 3, m, beta, "random",
                                 evaluate_in_chunks(model, x, chunk=1024)))
                worst = softmin_worst_case(m, float(beta), tokens)
                rows.append({"construction": "exp_features", "rank": 2**m, "n_tokens": 3, "m": m,
                             "beta": beta, "eval_set": "all_triples", "worst_case_error": worst,
                             "sequence_accuracy": float(worst < 0.5),
                             "position_error": np.nan, "mse": np.nan})
        beta_d = float(job.dense_beta)
        for m in job.dense_ms:
            rows.append(_row(DENSE, NO_RANK, 3, m, beta_d, "random",
                             evaluate_in_chunks(dense_construction(m, beta_d), fresh(3, m))))
        fam = witness_family(job.witness.blocks, job.witness.width)[None]
        rows.append(_row(DENSE, NO_RANK, 3, fam.shape[-1], beta_d, "witness",
                         evaluate_in_chunks(dense_construction(fam.shape[-1], beta_d), fam)))
        rows.append(_row("rank1", 1, 3, fam.shape[-1], None, "witness",
                         evaluate_in_chunks(rank1_construction(fam.shape[-1]), fam)))
    df = pd.DataFrame(rows)
    df["tokens"] = tokens
    return df


def information_bound(trained: pd.DataFrame, float_bits: int = 32, layers: int = 1
                      ) -> pd.DataFrame:
    """B5: transcript lower bound q·log₂(s + 1) bits against what each trained kernel head carries.

    q = N answers per sequence (one per position, independent), s = m (each answer lies in
    {0, …, m}, so s + 1 symbols); the head carries r features × layers × float bits per token.
    ``trained``: final rows of the kernel models (experiment, n_tokens, m, rank, seed,
    test_sequence_accuracy).
    """
    k = trained[trained["model"] == KERNEL]
    g = (k.groupby(["experiment", "feature_map", "n_tokens", "m", "rank"], as_index=False)
         .agg(median_sequence_accuracy=("test_sequence_accuracy", "median"),
              seeds=("seed", "nunique")))
    g["q_answers"] = g["n_tokens"]
    g["alphabet_s"] = g["m"]
    g["transcript_bound_bits"] = g["q_answers"] * np.log2(g["alphabet_s"] + 1)
    g["layers"] = layers
    g["float_bits"] = float_bits
    g["model_bits"] = g["rank"] * layers * float_bits
    g["model_bits_cover_bound"] = g["model_bits"] >= g["transcript_bound_bits"]
    return g


def step(job: MinipConstructionsJob) -> dict[str, Any]:
    """The minip_constructions step: the ``out`` table of the hand-built heads."""
    return {"out": run_constructions(job)}


def information_bound_step(job: InformationBoundJob, inputs: Sequence[str | Path]
                           ) -> dict[str, Any]:
    """The minip_information_bound step: the trained tables ``inputs`` concatenated, their
    information bound as the ``out`` table and the same rows as ``csv``."""
    from attnrank.core.io import read_table

    table = information_bound(pd.concat([read_table(p) for p in inputs], ignore_index=True),
                              float_bits=job.float_bits)
    return {"out": table, "csv": table}
