"""The two pairwise reductions of Min-IP attention over the N tokens of a sequence, batch axis
innermost, in an eager and a compiled form (``pair_kernels``).

Tokens are feature-major: a per-token quantity is (..., C, N, B) (C features, N positions, B
sequences); a per-pair one is (..., N, N, B) with the query position i before the key position j.

    pair_logsumexp   s_ij = log Σ_f exp(a_Q,f(x_i) + a_K,f(x_j))    (log α_ij of the kernel head)
    pair_inner       r_ij = Σ_c q_c(x_i) v_c(x_j)                    (readouts ⟨q_i, v_j⟩, and
                                                                      the dense head's scores)

Written eagerly, each broadcasts to a (..., C, N, N, B) tensor (every (i, j, f) term), reduces it,
and keeps it for the backward: with N = 3 this is memory-bound. Compiled (``core.compile``), the
broadcast, the reduction and their backward are each one fused loop and the big tensor is never
written; the numbers are the same up to float rounding (tested on adversarial pre-activations,
|a| up to 80 with the maxima of i and j on disjoint features).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import torch

from attnrank.core.compile import compiled


def pair_logsumexp(a_q: torch.Tensor, a_k: torch.Tensor) -> torch.Tensor:
    """s_ij = logsumexp_f (a_q[..., f, i, b] + a_k[..., f, j, b]).

    a_q, a_k: (..., R, N, B) (broadcastable) → (..., N, N, B). logsumexp is max-shifted, so it is
    exact for any finite pre-activations (no clamps).
    """
    return torch.logsumexp(a_q.unsqueeze(-2) + a_k.unsqueeze(-3), dim=-4)


def pair_inner(q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """r_ij = Σ_c q[..., c, i, b] · v[..., c, j, b].

    q, v: (..., C, N, B) (broadcastable) → (..., N, N, B).
    """
    return (q.unsqueeze(-2) * v.unsqueeze(-3)).sum(-4)


class PairKernels(NamedTuple):
    """The pairwise reductions a head uses (eager or compiled; the same equations)."""

    logsumexp: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    inner: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


@functools.cache
def pair_kernels(compile: bool) -> PairKernels:
    """The eager functions, or their compiled forms (one per process, shared by every head)."""
    if not compile:
        return PairKernels(pair_logsumexp, pair_inner)
    return PairKernels(compiled(pair_logsumexp), compiled(pair_inner))
