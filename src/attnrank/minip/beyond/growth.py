"""How fast each family's feature budget grows with m (OPEN-1, OPEN-2, TT-7): TT-6's fit per line.

For every line of the beyond run on random tokens (the single head ``kernel`` and each family's
label: ``H=2``, ``differential``, …, all under the beyond recipe) and for B2's own single head
(``kernel (B2)``, its 6000-step recipe, from ``minip_rank_vs_m`` at the same m), the smallest F
whose median held-out sequence accuracy over seeds reaches each target, per m, and the slope b of
log2 F = a + b·m with its seed-bootstrap interval: ``minip.growth.rank_growth`` (TT-6's code),
with a resampling stream named per line.

Table ``minip_beyond_growth``: one row per (line, target, m): line, recipe steps, target, m,
smallest (inf where no F of the grid reaches it), a, b, lo, hi, points (m that reach it); beside
them the reading between grid points (``minip.growth.growth_rows``: log2_interp, censored,
a_interp, b_interp, lo_interp, hi_interp, points_interp) and, for every line but the single head,
b_diff = b_line − b_kernel of that reading with its interval [lo_diff, hi_diff], both lines
resampled on one seed draw (``minip.growth.slope_difference``, stream ("minip", "beyond",
"difference", line, "bootstrap")); NaN for the single head.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from attnrank.core.io import read_table
from attnrank.core.seeding import numpy_rng
from attnrank.minip.beyond.families import PLAIN
from attnrank.minip.growth import growth_rows, rank_growth, slope_difference

if TYPE_CHECKING:
    from attnrank.minip.beyond.jobs import BeyondGrowthJob

B2_LINE = "kernel (B2)"  # B2's single head at its own recipe (minip_rank_vs_m)


def random_lines(beyond: pd.DataFrame, rank_vs_m: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Each line's final rows on random tokens, as single-head rows (``model`` = kernel, ``rank``
    = F) that ``rank_growth`` reads: the beyond lines in table order, then B2's head at the beyond
    run's m."""
    b = beyond[beyond["final"] & (beyond["data_kind"] == "random")]
    lines = {label: g.assign(model=PLAIN) for label, g in b.groupby("label", sort=False)}
    ms = sorted(b["m"].unique())
    b2 = rank_vs_m[(rank_vs_m["model"] == PLAIN) & rank_vs_m["final"] & rank_vs_m["m"].isin(ms)]
    if len(b2):
        lines[B2_LINE] = b2
    return lines


def growth_table(beyond: pd.DataFrame, rank_vs_m: pd.DataFrame, targets: Sequence[float],
                 n_boot: int, level: float) -> pd.DataFrame:
    """The table of the module docstring."""
    rows = []
    lines = random_lines(beyond, rank_vs_m)
    nan = (float("nan"),) * 3
    for line, df in lines.items():
        fits = rank_growth(df, targets, n_boot, level,
                           numpy_rng("minip", "beyond", line, "bootstrap"))
        diff = ({} if line == PLAIN or PLAIN not in lines else
                slope_difference(df, lines[PLAIN], targets, n_boot, level,
                                 numpy_rng("minip", "beyond", "difference", line, "bootstrap")))
        steps = int(df["steps_total"].iloc[0])
        for row in growth_rows(fits):
            b, lo, hi = diff.get(row["target"], nan)
            rows.append({"line": line, "steps": steps, **row, "b_diff": b, "lo_diff": lo,
                         "hi_diff": hi})
    return pd.DataFrame(rows)


def step(job: BeyondGrowthJob, inputs: Sequence[str | Path]) -> dict[str, Any]:
    """The minip_beyond_growth step: inputs are the minip_beyond and minip_rank_vs_m tables."""
    if len(inputs) != 2:
        raise ValueError(f"minip_beyond_growth: expected the minip_beyond and minip_rank_vs_m "
                         f"tables, got {list(map(str, inputs))}")
    beyond, rank_vs_m = (read_table(p) for p in inputs)
    return {"out": growth_table(beyond, rank_vs_m, job.targets, job.bootstrap_samples,
                                job.interval_level)}
