"""The realized logit field of a causal attention head and its ranks (OPEN-4).

For one head on one window of T bytes, the causal logits are S = Q Kᵀ / √d_h (T × T; query t may
attend to keys s ≤ t). Softmax is blind to a constant added to a row, so the part of S that shapes
the attention is each row centred over its allowed keys, the **row-centred causal logit field**

    Ẽ[t, s] = S[t, s] − (1 / (t + 1)) Σ_{s' ≤ t} S[t, s']   for s ≤ t,      Ẽ[t, s] = 0 for s > t.

Over a set of W windows w (of the fixed validation windows):

    mean field   M̄ = (1/W) Σ_w Ẽ_w                      (the structural prior: what every input shares)
    prior share  ‖M̄‖²_F / ((1/W) Σ_w ‖Ẽ_w‖²_F)        ∈ [0, 1]
    residual     Ẽ_w − M̄                                (the input-conditioned part)

and since (1/W) Σ_w ‖Ẽ_w‖² = ‖M̄‖² + (1/W) Σ_w ‖Ẽ_w − M̄‖², one minus the prior share is the
residual's share of the energy. Each matrix is measured through its float64 singular values by

    k90    = min{k : Σ_{i ≤ k} s_i² ≥ 0.9 · Σ_i s_i²}    (components holding 90 % of the energy;
                                                          0 for the zero matrix)
    R̃_eff  = (Σ s_i²)² / Σ s_i⁴                          (``attnrank.core.rank``)

The mean field and the prior share are taken over every window given (``FieldAccumulator``); the
per-window k90 and R̃_eff of Ẽ_w and of its residual over a fixed subset of them
(``field_subset``), as their median over that subset. Everything here is a function of the
logits alone: no random draw, no state of the model or the optimizer.
"""

from __future__ import annotations

import numpy as np
import torch

from attnrank.core.rank import energy_effective_rank
from attnrank.language.points import (
    K90,
    LOGIT_FIELD,
    MEAN_FIELD,
    PRIOR_SHARE,
    R_EFF,
    RESIDUAL_FIELD,
    STATIC,
)

ENERGY_SHARE = 0.9  # k90: the share of the energy (the definition of the outside reference point)
_ROUNDING = 1e-12  # relative slack of the k90 comparison (a flat spectrum's cut lands on 0.9 exactly)


def centre_causal_rows(scores: torch.Tensor) -> torch.Tensor:
    """Ẽ of causal logits ``scores`` (..., T, T) (any values above the diagonal: they are masked):
    every row t centred over its allowed keys s ≤ t, entries s > t set to 0. Same dtype."""
    n = scores.shape[-1]
    if scores.shape[-2] != n:
        raise ValueError(f"expected square logits (..., T, T), got {tuple(scores.shape)}")
    allowed = torch.ones(n, n, dtype=torch.bool, device=scores.device).tril()
    masked = scores.masked_fill(~allowed, 0.0)
    counts = torch.arange(1, n + 1, dtype=scores.dtype, device=scores.device)
    return (masked - (masked.sum(-1) / counts)[..., None]).masked_fill(~allowed, 0.0)


def energy_count(s: np.ndarray, share: float = ENERGY_SHARE) -> np.ndarray:
    """k_share of singular values s (..., n) (descending, float64): the fewest leading components
    whose energies s_i² hold at least ``share`` of the total; 0 where every s_i is 0. (...,) int64."""
    e = np.asarray(s, dtype=np.float64) ** 2
    total = e.sum(-1, keepdims=True)
    held = np.cumsum(e, axis=-1) >= share * total * (1.0 - _ROUNDING)
    k = held.argmax(-1) + 1
    return np.where(total[..., 0] > 0, k, 0).astype(np.int64)


def field_subset(n_windows: int, count: int) -> np.ndarray:
    """The indices of ``count`` of ``n_windows`` windows, evenly spaced from the first to the
    last: round(linspace(0, n_windows − 1, count)) (distinct when count ≤ n_windows)."""
    if not 0 < count <= n_windows:
        raise ValueError(f"field windows: need 0 < count ≤ {n_windows} windows, got {count}")
    return np.round(np.linspace(0, n_windows - 1, count)).astype(np.int64)


class FieldAccumulator:
    """Ẽ of every window, chunk by chunk (``add``, as ``ByteTransformers.evaluate_windows`` hands
    them over): the sum of Ẽ_w and of ‖Ẽ_w‖²_F over all ``n_windows`` windows (float64 across
    chunks), and Ẽ_w itself (as float64) for the windows ``subset``."""

    def __init__(self, n_windows: int, subset: np.ndarray) -> None:
        self.n_windows = n_windows
        self.subset = [int(i) for i in subset]
        self.total: torch.Tensor | None = None  # (M, L, H, T, T): Σ_w Ẽ_w
        self.energy: torch.Tensor | None = None  # (M, L, H): Σ_w ‖Ẽ_w‖²
        self.kept: dict[int, torch.Tensor] = {}  # window → Ẽ_w (M, L, H, T, T)
        self.seen = 0

    def add(self, start: int, scores: torch.Tensor) -> None:
        """Windows start … start + b − 1: their logits ``scores`` (M, b, L, H, T, T), centred in
        their own precision (the model's float32), summed over the chunk, and added to the
        float64 totals."""
        e = centre_causal_rows(scores.detach())
        total, energy = e.sum(1).double(), (e * e).sum((-1, -2)).double().sum(1)
        self.total = total if self.total is None else self.total + total
        self.energy = energy if self.energy is None else self.energy + energy
        for i in self.subset:
            if start <= i < start + e.shape[1]:
                self.kept[i] = e[:, i - start].double().cpu()
        self.seen += e.shape[1]

    def fields(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(Ẽ of the subset (M, W, L, H, T, T), the mean field M̄ (M, L, H, T, T), the mean energy
        (1/W) Σ_w ‖Ẽ_w‖² (M, L, H)), float64 numpy."""
        if self.total is None or self.energy is None or self.seen != self.n_windows \
                or len(self.kept) != len(set(self.subset)):
            raise ValueError(f"field: saw {self.seen} of {self.n_windows} windows and "
                             f"{len(self.kept)} of the {len(set(self.subset))} kept ones")
        kept = torch.stack([self.kept[i] for i in self.subset], dim=1).numpy()
        return (kept, (self.total / self.n_windows).cpu().numpy(),
                (self.energy / self.n_windows).cpu().numpy())


def measures_of(matrices: np.ndarray, axis: int | None = None) -> dict[str, np.ndarray]:
    """k90 and R̃_eff of every matrix of a stack (..., n, k) from float64 singular values; with
    ``axis``, their median over that axis of the stack. Keys ``K90``, ``R_EFF``."""
    s = np.linalg.svd(np.asarray(matrices, dtype=np.float64), compute_uv=False)
    out = {K90: energy_count(s).astype(np.float64),
           R_EFF: np.asarray(energy_effective_rank(s), np.float64)}
    return {k: np.median(v, axis=axis) if axis is not None else v for k, v in out.items()}


def prior_share(mean: np.ndarray, energy: np.ndarray) -> np.ndarray:
    """‖M̄‖²_F / ((1/W) Σ_w ‖Ẽ_w‖²_F): mean (..., T, T), energy (...,) → (...,); 0 where every
    field is 0."""
    num = (np.asarray(mean, np.float64) ** 2).sum((-1, -2))
    den = np.asarray(energy, np.float64)
    return np.divide(num, den, out=np.zeros_like(num), where=den > 0)


def field_measures(kept: np.ndarray, mean: np.ndarray, energy: np.ndarray, static: np.ndarray
                   ) -> dict[tuple[str, str], np.ndarray]:
    """Every measure of one logged step, (matrix, estimator) → values (M, L, H): k90 and R̃_eff of
    Ẽ and of the residual (median over the W windows of ``kept`` (M, W, L, H, T, T)), of the mean
    field ``mean`` (M, L, H, T, T) and of the static kernels ``static`` (M, L, H, d, d); the prior
    share from ``mean`` and the mean energy ``energy`` (M, L, H) (``FieldAccumulator.fields``)."""
    out: dict[tuple[str, str], np.ndarray] = {}
    for matrix, values in ((LOGIT_FIELD, measures_of(kept, axis=1)),
                           (RESIDUAL_FIELD, measures_of(kept - mean[:, None], axis=1)),
                           (MEAN_FIELD, measures_of(mean)), (STATIC, measures_of(static))):
        for estimator, v in values.items():
            out[(matrix, estimator)] = v
    out[(MEAN_FIELD, PRIOR_SHARE)] = prior_share(mean, energy)
    return out
