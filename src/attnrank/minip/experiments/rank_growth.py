"""TT-6's fit as a table: per target and m of B2's grid, the smallest rank reaching the target
(the lattice reading) and the reading between grid points, with both fits of log2 r on m and
their seed-bootstrap intervals (docs/methods.md §3.9 and TT-6; ``minip.growth``).

Table ``minip_rank_growth``: one row per (target, m): target, m, smallest (inf where no rank of
the grid reaches it), a, b, lo, hi, points; log2_interp (NaN where censored), censored (above,
below or empty), a_interp, b_interp, lo_interp, hi_interp, points_interp. The resampling stream
is TT-6's (``minip.growth.BOOTSTRAP_SEED``), so the table, the claim and the figure agree.

Standard library and ``core.job`` at the top (the plan imports the job while the workflow
parses); pandas and numpy inside ``step``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnrank.core.job import Job


@dataclass(frozen=True)
class RankGrowthJob(Job):
    """TT-6's targets, bootstrap resamples and interval level (``claims.TT-6``)."""

    targets: tuple[float, ...]
    bootstrap_samples: int
    interval_level: float


def step(job: RankGrowthJob, inputs: Sequence[str | Path]) -> dict[str, Any]:
    """The ``out`` table of the module docstring from the minip_rank_vs_m table ``inputs[0]``
    (its final rows, as TT-6 reads them)."""
    import pandas as pd

    from attnrank.core.io import read_table
    from attnrank.minip.growth import growth_rows, rank_growth

    if len(inputs) != 1:
        raise ValueError(f"minip_rank_growth: expected the minip_rank_vs_m table, got "
                         f"{list(map(str, inputs))}")
    fits = rank_growth(read_table(inputs[0]), job.targets, job.bootstrap_samples,
                       job.interval_level)
    return {"out": pd.DataFrame(growth_rows(fits))}
