"""Statistics shared by the wings: the percentile interval of bootstrap samples.

numpy only; the resamples come from the caller's ``Generator`` (``attnrank.core.seeding``).
"""

from __future__ import annotations

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
