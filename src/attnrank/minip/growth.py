"""How fast the feature rank a task needs grows with the token width m (TT-6, minip_rank_vs_m).

For a target accuracy t, r_t(m) is the smallest rank of the grid whose median over seeds of the
held-out sequence accuracy is ≥ t (inf when no rank of the grid reaches it). Over the m that reach
it, the least-squares line

    log2 r_t(m) = a + b·m

gives the growth rate b (b = 1 for the 2^m construction). Its uncertainty over seeds is a
percentile bootstrap: every resample draws, for each m on its own, as many seeds as that m has,
with replacement (one draw serves every rank of that m, so a seed's ranks stay together), and
recomputes the medians, r_t(m) and b.

Shapes: M token widths ``ms`` (ascending), R ranks ``ranks`` (ascending), S seeds; ``acc`` is
(M, R, S), NaN where a (m, rank, seed) was not run. numpy and pandas only; every random draw comes
from the ``Generator`` passed in (``attnrank.core.seeding``), so a result is the same bytes every time.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from attnrank.core.columns import TEST_SEQUENCE_ACCURACY
from attnrank.core.seeding import numpy_rng
from attnrank.core.stats import slope_interval
from attnrank.minip.quantities import kernel_rows

BOOTSTRAP_SEED = ("minip", "rank_vs_m", "TT-6", "bootstrap")  # named parts of the resampling RNG


def accuracy_cube(df: pd.DataFrame, value: str = TEST_SEQUENCE_ACCURACY
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The kernel heads of ``df`` (one row per (m, rank, seed)) as arrays: ``ms`` (M,), ``ranks``
    (R,) both ascending, and ``acc`` (M, R, S) of ``value``, NaN where a cell is missing. A
    ValueError when a (m, rank, seed) appears twice."""
    k = kernel_rows(df)
    s = k.set_index(["m", "rank", "seed"])[value]
    if s.index.duplicated().any():
        raise ValueError("accuracy_cube: a (m, rank, seed) appears twice; pass one task's "
                         "final rows")
    ms, ranks, seeds = (np.sort(k[c].unique()) for c in ("m", "rank", "seed"))
    full = pd.MultiIndex.from_product([ms, ranks, seeds], names=["m", "rank", "seed"])
    acc = s.reindex(full).to_numpy(float).reshape(len(ms), len(ranks), len(seeds))
    return ms.astype(float), ranks.astype(float), acc


def _nanmedian(a: np.ndarray, axis: int) -> np.ndarray:
    """``np.nanmedian`` without the warning of an all-NaN slice (its median is NaN)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmedian(a, axis=axis)


def seed_medians(acc: np.ndarray) -> np.ndarray:
    """(M, R, S) → (M, R): the median over the seeds that ran (NaN where none did)."""
    return _nanmedian(acc, -1)


def bootstrap_medians(acc: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """(M, R, S) → (n_boot, M, R): seed medians of ``n_boot`` resamples. For each m (in order),
    its k seeds that ran are drawn k times with replacement per resample, the same draw for
    every rank of that m."""
    n_m, n_r, _ = acc.shape
    out = np.full((n_boot, n_m, n_r), np.nan)
    for i in range(n_m):
        present = np.flatnonzero(~np.all(np.isnan(acc[i]), axis=0))
        if len(present) == 0:
            continue
        idx = present[rng.integers(0, len(present), size=(n_boot, len(present)))]
        out[:, i, :] = _nanmedian(acc[i][:, idx], -1).T  # (R, n_boot, k) → (n_boot, R)
    return out


def smallest_reaching(med: np.ndarray, ranks: np.ndarray, target: float) -> np.ndarray:
    """(..., M, R) medians → (..., M): the smallest rank with median ≥ ``target``, inf where none
    (``ranks`` ascending; a NaN median never reaches)."""
    reach = np.nan_to_num(med, nan=-np.inf) >= target
    first = np.argmax(reach, axis=-1)
    return np.where(reach.any(axis=-1), np.asarray(ranks, float)[first], np.inf)


def log2_rank_fit(ms: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least squares of log2 r = a + b·m over the finite entries of ``r`` (..., M) at ``ms`` (M,):
    returns (a, b), each of shape (...), NaN where fewer than two m are finite.

    b = Σ (m − m̄)(y − y₀) / Σ (m − m̄)² over the finite points, y = log2 r, y₀ the first finite y
    (equal to the usual slope, since Σ (m − m̄) = 0, and exactly 0 for a constant r, where centring
    by ȳ could leave a rounding residue that a "b > 0" test would count as growth)."""
    r = np.asarray(r, float)
    x = np.broadcast_to(np.asarray(ms, float), r.shape)
    w = np.isfinite(r)
    n = w.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        y = np.where(w, np.log2(np.where(w, r, 1.0)), 0.0)
        y0 = np.take_along_axis(y, np.argmax(w, axis=-1)[..., None], -1)
        xbar = np.where(w, x, 0.0).sum(-1) / n
        xc = np.where(w, x - xbar[..., None], 0.0)
        b = (xc * (y - y0)).sum(-1) / (xc * xc).sum(-1)
        a = np.where(w, y, 0.0).sum(-1) / n - b * xbar
    fit = n >= 2
    return np.where(fit, a, np.nan), np.where(fit, b, np.nan)


@dataclass(frozen=True)
class Growth:
    """The fit at one target: ``smallest`` r_t(m) (M,), inf where unreached; ``a``, ``b`` of
    log2 r = a + b·m (NaN with fewer than two m); the bootstrap interval [lo, hi] of b."""

    target: float
    ms: np.ndarray
    smallest: np.ndarray
    a: float
    b: float
    lo: float
    hi: float

    @property
    def points(self) -> int:
        """How many m reach the target (the points of the fit)."""
        return int(np.isfinite(self.smallest).sum())


def rank_growth(df: pd.DataFrame, targets: Sequence[float], n_boot: int, level: float,
                rng: np.random.Generator | None = None) -> dict[float, Growth]:
    """The fit and its bootstrap interval at every target, on the kernel rows of ``df`` (one row
    per (m, rank, seed)). One set of ``n_boot`` resamples serves every target; ``rng`` defaults to
    the named stream ``BOOTSTRAP_SEED``, so the claim and the figure draw the same resamples."""
    if n_boot < 1:
        raise ValueError(f"bootstrap samples must be ≥ 1, got {n_boot!r}")
    ms, ranks, acc = accuracy_cube(df)
    boot = bootstrap_medians(acc, n_boot, rng or numpy_rng(*BOOTSTRAP_SEED))
    med = seed_medians(acc)
    out = {}
    for t in targets:
        smallest = smallest_reaching(med, ranks, float(t))
        a, b = log2_rank_fit(ms, smallest)
        lo, hi = slope_interval(log2_rank_fit(ms, smallest_reaching(boot, ranks, float(t)))[1],
                                level)
        out[float(t)] = Growth(float(t), ms, smallest, float(a), float(b), lo, hi)
    return out
