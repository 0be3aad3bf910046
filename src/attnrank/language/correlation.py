"""Spearman's rank correlation and its seed bootstrap (EB-15, EB-16, language figures).

Spearman ρ of n paired values is Pearson's correlation of their ranks, ties given the average of
the ranks they span:

    rank(v_i) = #{j : v_j < v_i} + (#{j : v_j = v_i} + 1) / 2,
    ρ = Σ (a_i − ā)(b_i − b̄) / sqrt(Σ (a_i − ā)² · Σ (b_i − b̄)²),   a = rank(x), b = rank(y).

ρ is undefined (NaN) when either side is constant (or n < 2).

The bootstrap of EB-15 resamples seeds within each group (corpus): every resample draws, for each
group on its own, as many of its points as it has, with replacement, and recomputes ρ over all
groups' draws. Groups stay whole (a corpus never vanishes from a resample), so the interval
reflects seed-to-seed variation only. The interval is the percentile interval of
``growth.slope_interval`` with an undefined ρ counted as 0 (no monotone association).

numpy only; every random draw comes from the ``Generator`` passed in, by default the named stream
``BOOTSTRAP_SEED`` (``attnrank.core.seeding``), so the claim and the figure draw the same resamples and
the result is the same bytes every time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnrank.core.seeding import numpy_rng
from attnrank.core.stats import slope_interval

BOOTSTRAP_SEED = ("language", "EB-15", "bootstrap")  # named parts of the resampling RNG


def average_ranks(v: np.ndarray) -> np.ndarray:
    """(..., n) → (..., n): the rank (1 … n) of every entry along the last axis, ties given their
    average rank. O(n²) pairwise counts: exact for repeated values, meant for n of a few hundred."""
    v = np.asarray(v, float)
    below = (v[..., None, :] < v[..., :, None]).sum(-1)
    equal = (v[..., None, :] == v[..., :, None]).sum(-1)
    return below + (equal + 1) / 2.0


def spearman(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman ρ along the last axis of ``x`` and ``y`` (same shape (..., n)); NaN where either
    side is constant or n < 2."""
    a, b = average_ranks(x), average_ranks(y)
    a = a - a.mean(-1, keepdims=True)
    b = b - b.mean(-1, keepdims=True)
    den = np.sqrt((a * a).sum(-1) * (b * b).sum(-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (a * b).sum(-1) / den
    return np.where(den > 0, np.clip(rho, -1.0, 1.0), np.nan)


@dataclass(frozen=True)
class Correlation:
    """ρ of the points, and the bootstrap interval [lo, hi] at ``level`` from ``samples``
    resamples."""

    rho: float
    lo: float
    hi: float
    level: float
    samples: int
    points: int
    groups: int


def grouped_bootstrap(x: np.ndarray, y: np.ndarray, groups: np.ndarray, n_boot: int,
                      rng: np.random.Generator) -> np.ndarray:
    """(n_boot,) bootstrap ρ of the points (x, y) (each (n,)), resampling points within each
    group (``groups`` (n,), any labels; groups in sorted order, each drawn as many times as it has
    points, with replacement)."""
    x, y, groups = np.asarray(x, float), np.asarray(y, float), np.asarray(groups)
    if n_boot < 1:
        raise ValueError(f"bootstrap samples must be ≥ 1, got {n_boot!r}")
    idx = []
    for g in np.unique(groups):
        members = np.flatnonzero(groups == g)
        idx.append(members[rng.integers(0, len(members), size=(n_boot, len(members)))])
    draw = np.concatenate(idx, axis=1)  # (n_boot, n)
    return spearman(x[draw], y[draw])


def correlation(x: np.ndarray, y: np.ndarray, groups: np.ndarray, n_boot: int, level: float,
                rng: np.random.Generator | None = None) -> Correlation:
    """Spearman ρ of (x, y) with its grouped bootstrap interval (see the module docstring); ``rng``
    defaults to the named stream ``BOOTSTRAP_SEED``."""
    boot = grouped_bootstrap(x, y, groups, n_boot, rng or numpy_rng(*BOOTSTRAP_SEED))
    lo, hi = slope_interval(np.nan_to_num(boot, nan=0.0), level)
    return Correlation(float(spearman(np.asarray(x, float), np.asarray(y, float))), lo, hi,
                       float(level), int(n_boot), len(np.asarray(x)), len(np.unique(groups)))
