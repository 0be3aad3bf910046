"""B0, the linear surrogate Ŷ = A X V with A = P Qᵀ of rank r, as a vectorized family of students.

Layout: I task instances × R ranks, M = I·R models; parameters P, Q (I, R, N, r_max), V (I, R, d, e).
Student (i, j) has rank ranks[j]: the columns of P and Q beyond it are held at zero by a fixed
mask, so they get zero gradient and neither Adam nor GD ever moves them — the student follows
exactly the trajectory of an unpadded rank-r factor pair with the same initial columns. This is
not the padding the trainer warns about: every step's cost is dominated by the N×N operator A,
whose size does not depend on r, so all ranks share one program at no extra cost.

Full-batch training uses the sufficient statistics of the training set (exact, not an
approximation): with x_s = X_s,
    Σ_s ‖A X_s V‖² = ⟨AᵀA, G · vec(V Vᵀ)⟩,   G[(k,k'), (l,l')] = Σ_s X_s[k,l] X_s[k',l']
    Σ_s ⟨A X_s V, Y_s⟩ = ⟨A, H · vec(V)⟩,       H[(i,k), (l,j)] = Σ_s Y_s[i,j] X_s[k,l]
so the full-batch MSE (Q − 2L + Σ‖Y_s‖²) / (S N e) and its gradient cost O(N² d²) per model,
independent of the number of training sequences S.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn


@dataclass
class QuadStats:
    """Sufficient statistics of one data set per instance (I, ...), float32 on the device."""

    g: torch.Tensor  # (I, N², d²)
    h: torch.Tensor  # (I, N², d·e)
    yy: torch.Tensor  # (I,)  Σ_s ‖Y_s‖²
    count: int  # S·N·e, the number of target entries per instance

    def to(self, device: torch.device) -> QuadStats:
        return QuadStats(self.g.to(device), self.h.to(device), self.yy.to(device), self.count)


def quad_stats(x: np.ndarray, y: np.ndarray, dtype: torch.dtype = torch.float32) -> QuadStats:
    """Statistics of inputs x (I, S, N, d) and targets y (I, S, N, e), accumulated in float64 and
    stored as ``dtype``."""
    i_, s_, n, d = x.shape
    e = y.shape[-1]
    xf = x.reshape(i_, s_, n * d)
    # G[k, l, k', l'] = Σ_s X[k, l] X[k', l'], reordered to (k, k', l, l')
    g = (xf.transpose(0, 2, 1) @ xf).reshape(i_, n, d, n, d).transpose(0, 1, 3, 2, 4)
    # H[a, k, l, j] = Σ_s Y[a, j] X[k, l]
    h = (y.reshape(i_, s_, n * e).transpose(0, 2, 1) @ xf).reshape(i_, n, e, n, d)
    h = h.transpose(0, 1, 3, 4, 2)
    yy = np.sum(y**2, axis=(1, 2, 3))
    return QuadStats(torch.tensor(g.reshape(i_, n * n, d * d), dtype=dtype),
                     torch.tensor(h.reshape(i_, n * n, d * e), dtype=dtype),
                     torch.tensor(yy, dtype=dtype), s_ * n * e)


class SurrogateStudents(nn.Module):
    """Rank-r linear surrogates for I instances × R ranks (see module docstring).

    gens: one torch.Generator per model, instance-major (gens[i * R + j] for instance i, rank j);
    model (i, j) draws P, Q (N × r) and V (d × e) with std ``init_std`` from its own generator.
    """

    def __init__(self, n_instances: int, ranks: Sequence[int], n_tokens: int, d: int, e: int,
                 init_std: float, gens: Sequence[torch.Generator]) -> None:
        super().__init__()
        ranks = [int(r) for r in ranks]
        if any(not 1 <= r <= n_tokens for r in ranks):
            raise ValueError(f"ranks must lie in 1..N={n_tokens}, got {ranks}")
        n_models = n_instances * len(ranks)
        if len(gens) != n_models:
            raise ValueError(f"need one generator per model ({n_models}), got {len(gens)}")
        self.n_instances, self.ranks = n_instances, ranks
        self.n_tokens, self.d, self.e = n_tokens, d, e
        r_max = max(ranks)
        p = torch.zeros(n_models, n_tokens, r_max)
        q = torch.zeros(n_models, n_tokens, r_max)
        v = torch.zeros(n_models, d, e)
        for k, g in enumerate(gens):
            r = ranks[k % len(ranks)]
            p[k, :, :r] = torch.randn(n_tokens, r, generator=g) * init_std
            q[k, :, :r] = torch.randn(n_tokens, r, generator=g) * init_std
            v[k] = torch.randn(d, e, generator=g) * init_std
        shape = (n_instances, len(ranks))
        self.p = nn.Parameter(p.reshape(*shape, n_tokens, r_max))
        self.q = nn.Parameter(q.reshape(*shape, n_tokens, r_max))
        self.v = nn.Parameter(v.reshape(*shape, d, e))
        mask = (torch.arange(r_max)[None, :] < torch.tensor(ranks)[:, None]).float()
        self.register_buffer("mask", mask[None, :, None, :])  # (1, R, 1, r_max)

    @property
    def n_models(self) -> int:
        return self.n_instances * len(self.ranks)

    def operator(self) -> torch.Tensor:
        """A = P Qᵀ: (I, R, N, N)."""
        return (self.p * self.mask) @ (self.q * self.mask).transpose(-1, -2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Predictions for inputs x (I, S, N, d): (I, R, S, N, e)."""
        a = self.operator()
        return a[:, :, None] @ x[:, None] @ self.v[:, :, None]

    def quad_term(self, stats: QuadStats) -> torch.Tensor:
        """Σ_s ‖A X_s V‖² from statistics: (I, R)."""
        i_, r_ = self.n_instances, len(self.ranks)
        n, d = self.n_tokens, self.d
        a = self.operator()
        vvt = self.v @ self.v.transpose(-1, -2)  # (I, R, d, d)
        t = stats.g @ vvt.reshape(i_, r_, d * d).transpose(1, 2)  # (I, N², R)
        ata = (a.transpose(-1, -2) @ a).reshape(i_, r_, n * n)
        return (ata * t.transpose(1, 2)).sum(-1)

    def cross_term(self, stats: QuadStats) -> torch.Tensor:
        """Σ_s ⟨A X_s V, Y_s⟩ from statistics: (I, R)."""
        i_, r_ = self.n_instances, len(self.ranks)
        n, d, e = self.n_tokens, self.d, self.e
        u = stats.h @ self.v.reshape(i_, r_, d * e).transpose(1, 2)  # (I, N², R)
        return (self.operator().reshape(i_, r_, n * n) * u.transpose(1, 2)).sum(-1)

    def mse(self, stats: QuadStats, targets: QuadStats | None = None) -> torch.Tensor:
        """Mean squared error per model, (I, R), on the inputs of ``stats`` against its targets
        (or against those of ``targets``, statistics of the same inputs)."""
        t = stats if targets is None else targets
        return (self.quad_term(stats) - 2 * self.cross_term(t) + t.yy[:, None]) / t.count
