"""How fast the feature rank a task needs grows with the token width m (TT-6, minip_rank_vs_m).

For a target accuracy t, r_t(m) is the smallest rank of the grid whose median over seeds of the
held-out sequence accuracy is ≥ t (inf when no rank of the grid reaches it). Over the m that reach
it, the least-squares line

    log2 r_t(m) = a + b·m

gives the growth rate b (b = 1 for the 2^m construction). Its uncertainty over seeds is a
percentile bootstrap: every resample draws, for each m on its own, as many seeds as that m has,
with replacement (one draw serves every rank of that m, so a seed's ranks stay together), and
recomputes the medians, r_t(m) and b.

Beside that lattice reading, the reading between grid points (docs/methods.md §3.9): log2 r̂_t(m)
interpolated linearly in log2 r between the two ranks that bracket the crossing of the median,

    log2 r̂ = log2 r_{j−1} + (t − med_{j−1}) / (med_j − med_{j−1}) · (log2 r_j − log2 r_{j−1}),

r_j the lattice reading; censored above where no rank reaches t, below where the smallest does;
its fit over the uncensored m, on the same resamples.

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


def accuracy_cube(df: pd.DataFrame, value: str = TEST_SEQUENCE_ACCURACY,
                  seeds: Sequence[int] | None = None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The kernel heads of ``df`` (one row per (m, rank, seed)) as arrays: ``ms`` (M,), ``ranks``
    (R,) both ascending, and ``acc`` (M, R, S) of ``value``, NaN where a cell is missing; the seed
    axis is ``seeds`` when given (two lines on one seed axis), else the seeds of ``df``
    ascending. A ValueError when a (m, rank, seed) appears twice."""
    k = kernel_rows(df)
    s = k.set_index(["m", "rank", "seed"])[value]
    if s.index.duplicated().any():
        raise ValueError("accuracy_cube: a (m, rank, seed) appears twice; pass one task's "
                         "final rows")
    ms, ranks = (np.sort(k[c].unique()) for c in ("m", "rank"))
    seeds = np.sort(k["seed"].unique()) if seeds is None else np.asarray(seeds)
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


def joint_bootstrap_medians(cubes: Sequence[np.ndarray], n_boot: int, rng: np.random.Generator
                            ) -> list[np.ndarray]:
    """Cubes (M, R_k, S) on one (m, seed) grid → their (n_boot, M, R_k) seed medians under one
    resampling: for each m (in order), S seed indices drawn with replacement per resample, the
    same draw for every rank and every cube (a seed missing from a cube is skipped by its
    median)."""
    n_m, n_s = cubes[0].shape[0], cubes[0].shape[-1]
    if any(c.shape[0] != n_m or c.shape[-1] != n_s for c in cubes):
        raise ValueError("joint_bootstrap_medians: the cubes must share their m and seed axes")
    outs = [np.full((n_boot, n_m, c.shape[1]), np.nan) for c in cubes]
    for i in range(n_m):
        idx = rng.integers(0, n_s, size=(n_boot, n_s))
        for c, out in zip(cubes, outs, strict=True):
            out[:, i, :] = _nanmedian(c[i][:, idx], -1).T
    return outs


def smallest_reaching(med: np.ndarray, ranks: np.ndarray, target: float) -> np.ndarray:
    """(..., M, R) medians → (..., M): the smallest rank with median ≥ ``target``, inf where none
    (``ranks`` ascending; a NaN median never reaches)."""
    reach = np.nan_to_num(med, nan=-np.inf) >= target
    first = np.argmax(reach, axis=-1)
    return np.where(reach.any(axis=-1), np.asarray(ranks, float)[first], np.inf)


ABOVE, INSIDE, BELOW = 1, 0, -1  # censoring of a cell of the reading between grid points
CENSORED = {ABOVE: "above", INSIDE: "", BELOW: "below"}  # as the tables write it


def interpolated_log2(med: np.ndarray, ranks: np.ndarray, target: float
                      ) -> tuple[np.ndarray, np.ndarray]:
    """The reading between grid points (docs/methods.md §3.9) of (..., M, R) seed medians at
    ``ranks`` (R,) ascending: returns (y, censored), each (..., M). With j the smallest rank
    index whose median is ≥ ``target`` (the lattice reading; NaN medians are ranks not run and
    are skipped) and i the last rank before j that ran,

        y = log2 r_j − (1 − (t − med_i) / (med_j − med_i)) · (log2 r_j − log2 r_i),

    exactly log2 r_j when med_j = t. ``censored`` is ABOVE (y NaN) where no rank reaches t, BELOW
    (y = log2 r_j) where no rank before j ran or j is the first, INSIDE otherwise."""
    med = np.asarray(med, float)
    logr = np.log2(np.asarray(ranks, float))
    ran = ~np.isnan(med)
    reach = ran & (np.where(ran, med, -np.inf) >= target)
    j = np.argmax(reach, axis=-1)
    hit = reach.any(axis=-1)
    r_idx = np.arange(med.shape[-1])
    last_ran = np.maximum.accumulate(np.where(ran, r_idx, -1), axis=-1)  # last index that ran ≤ k
    i = np.where(j > 0, np.take_along_axis(last_ran, np.maximum(j - 1, 0)[..., None], -1)[..., 0],
                 -1)
    inside = hit & (i >= 0)
    med_j = np.take_along_axis(med, j[..., None], -1)[..., 0]
    med_i = np.take_along_axis(med, np.maximum(i, 0)[..., None], -1)[..., 0]
    y_j, y_i = logr[j], logr[np.maximum(i, 0)]
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = (target - med_i) / (med_j - med_i)
        between = y_j - (1.0 - frac) * (y_j - y_i)
    y = np.where(inside, between, np.where(hit, y_j, np.nan))
    censored = np.where(hit, np.where(inside, INSIDE, BELOW), ABOVE)
    return y, censored


def log2_rank_fit(ms: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least squares of log2 r = a + b·m over the finite entries of ``r`` (..., M) at ``ms`` (M,):
    returns (a, b), each of shape (...), NaN where fewer than two m are finite (``line_fit`` of
    y = log2 r)."""
    r = np.asarray(r, float)
    w = np.isfinite(r)
    with np.errstate(invalid="ignore", divide="ignore"):
        y = np.where(w, np.log2(np.where(w, r, 1.0)), np.nan)
    return line_fit(ms, y)


def line_fit(ms: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least squares of y = a + b·m over the finite entries of ``y`` (..., M) at ``ms`` (M,):
    returns (a, b), each of shape (...), NaN where fewer than two m are finite.

    b = Σ (m − m̄)(y − y₀) / Σ (m − m̄)² over the finite points, y₀ the first finite y (equal to
    the usual slope, since Σ (m − m̄) = 0, and exactly 0 for a constant y, where centring by ȳ
    could leave a rounding residue that a "b > 0" test would count as growth)."""
    y = np.asarray(y, float)
    x = np.broadcast_to(np.asarray(ms, float), y.shape)
    w = np.isfinite(y)
    n = w.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        y = np.where(w, y, 0.0)
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
    log2 r = a + b·m (NaN with fewer than two m); the bootstrap interval [lo, hi] of b. The
    reading between grid points beside it: ``log2_interp`` (M,) (NaN where censored),
    ``censored`` (M,) (ABOVE, INSIDE, BELOW), and its fit ``a_interp``, ``b_interp`` with the
    interval [``lo_interp``, ``hi_interp``] over the uncensored m."""

    target: float
    ms: np.ndarray
    smallest: np.ndarray
    a: float
    b: float
    lo: float
    hi: float
    log2_interp: np.ndarray
    censored: np.ndarray
    a_interp: float
    b_interp: float
    lo_interp: float
    hi_interp: float

    @property
    def points(self) -> int:
        """How many m reach the target (the points of the fit)."""
        return int(np.isfinite(self.smallest).sum())

    @property
    def points_interp(self) -> int:
        """How many m cross the target inside the grid (the points of the interpolated fit)."""
        return int((self.censored == INSIDE).sum())


def interp_fit(ms: np.ndarray, med: np.ndarray, ranks: np.ndarray, target: float
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(..., M, R) medians → (log2 r̂ with censored cells NaN, censoring, slope b) of the reading
    between grid points: the fit runs over the uncensored m only."""
    y, censored = interpolated_log2(med, ranks, target)
    y = np.where(censored == INSIDE, y, np.nan)
    return y, censored, line_fit(ms, y)[1]


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
        y, censored, _ = interp_fit(ms, med, ranks, float(t))
        a_i, b_i = line_fit(ms, y)
        lo_i, hi_i = slope_interval(interp_fit(ms, boot, ranks, float(t))[2], level)
        out[float(t)] = Growth(float(t), ms, smallest, float(a), float(b), lo, hi, y, censored,
                               float(a_i), float(b_i), lo_i, hi_i)
    return out


def slope_difference(line: pd.DataFrame, plain: pd.DataFrame, targets: Sequence[float],
                     n_boot: int, level: float, rng: np.random.Generator
                     ) -> dict[float, tuple[float, float, float]]:
    """Per target: b_line − b_plain of the readings between grid points and its percentile
    interval, both lines resampled with one seed draw per m and resample
    (``joint_bootstrap_medians``; rows as ``rank_growth`` reads them, on the same m). The
    difference of a resample where either line has no slope is NaN, counted as −inf by
    ``slope_interval``."""
    seeds = np.union1d(kernel_rows(line)["seed"].unique(), kernel_rows(plain)["seed"].unique())
    ms, r_line, a_line = accuracy_cube(line, seeds=seeds)
    ms_p, r_plain, a_plain = accuracy_cube(plain, seeds=seeds)
    if not np.array_equal(ms, ms_p):
        raise ValueError(f"slope_difference: the lines have different m ({ms} and {ms_p})")
    b_line, b_plain = joint_bootstrap_medians([a_line, a_plain], n_boot, rng)
    out = {}
    for t in targets:
        point = (interp_fit(ms, seed_medians(a_line), r_line, float(t))[2]
                 - interp_fit(ms, seed_medians(a_plain), r_plain, float(t))[2])
        boot = (interp_fit(ms, b_line, r_line, float(t))[2]
                - interp_fit(ms, b_plain, r_plain, float(t))[2])
        out[float(t)] = (float(point), *slope_interval(boot, level))
    return out


def growth_rows(fits: dict[float, Growth]) -> list[dict]:
    """One table row per (target, m) of ``fits``: both readings of the crossing and both fits."""
    rows = []
    for t, g in fits.items():
        for i, m in enumerate(g.ms):
            rows.append({"target": t, "m": int(m), "smallest": float(g.smallest[i]),
                         "a": g.a, "b": g.b, "lo": g.lo, "hi": g.hi, "points": g.points,
                         "log2_interp": float(g.log2_interp[i]),
                         "censored": CENSORED[int(g.censored[i])],
                         "a_interp": g.a_interp, "b_interp": g.b_interp,
                         "lo_interp": g.lo_interp, "hi_interp": g.hi_interp,
                         "points_interp": g.points_interp})
    return rows
