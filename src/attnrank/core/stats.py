"""Statistics shared by the wings: the percentile interval of bootstrap samples and the exact
(Clopper–Pearson) interval of a binomial rate.

numpy only; the resamples come from the caller's ``Generator`` (``attnrank.core.seeding``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

_ROUNDING = 1e-9  # quantile positions this close to an integer are that integer


def slope_interval(samples: np.ndarray, level: float) -> tuple[float, float]:
    """The percentile interval holding ``level`` of the bootstrap slopes ``samples`` (n_boot,).

    Conservative on both counts: a resample without a slope (fewer than two m reach the target:
    NaN) counts as −inf, no evidence of growth; the lower end is the sample at or below the
    (1 − level)/2 quantile, the upper the sample at or above the (1 + level)/2 quantile."""
    if not 0 < level < 1:
        raise ValueError(f"interval level must lie in (0, 1), got {level!r}")
    s = np.sort(np.where(np.isnan(samples), -np.inf, samples))
    tail = (1 - level) / 2 * (len(s) - 1)  # the position of the lower quantile in ``s``
    lo = int(np.floor(tail + _ROUNDING))  # (1 − 0.8)/2·100 is 9.999…: still the 10th sample
    hi = int(np.ceil(len(s) - 1 - tail - _ROUNDING))
    return float(s[lo]), float(s[hi])


def binomial_tail(k: int, n: int, p: float, upper: bool) -> float:
    """P(X ≥ k) (``upper``) or P(X ≤ k) for X ~ Binomial(n, p), summed exactly in float64."""
    terms = range(k, n + 1) if upper else range(0, k + 1)
    return float(sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in terms))


def clopper_pearson(k: int, n: int, level: float) -> tuple[float, float]:
    """The exact (Clopper–Pearson) interval of a binomial rate from k successes of n trials at
    ``level``: lo solves P(X ≥ k | lo) = (1 − level)/2 (0 when k = 0), hi solves
    P(X ≤ k | hi) = (1 − level)/2 (1 when k = n); by bisection to 1e-12 (each tail is monotone
    in p). ValueError unless 0 ≤ k ≤ n, n ≥ 1 and 0 < level < 1."""
    if not (n >= 1 and 0 <= k <= n and 0 < level < 1):
        raise ValueError(f"clopper_pearson: need 0 <= k <= n, n >= 1, 0 < level < 1; got "
                         f"k={k!r}, n={n!r}, level={level!r}")
    alpha = (1 - level) / 2

    def solve(f: Callable[[float], float], target: float) -> float:
        """The p in [0, 1] where the increasing f(p) crosses ``target``."""
        a, b = 0.0, 1.0
        while b - a > 1e-12:
            mid = (a + b) / 2
            a, b = (mid, b) if f(mid) < target else (a, mid)
        return (a + b) / 2

    lo = 0.0 if k == 0 else solve(lambda p: binomial_tail(k, n, p, upper=True), alpha)
    hi = 1.0 if k == n else solve(lambda p: binomial_tail(k + 1, n, p, upper=True), 1 - alpha)
    return lo, hi
