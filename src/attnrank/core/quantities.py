"""Quantities that both the figures and the claims derive from the result tables, computed once.

Pure functions of DataFrames (pandas and numpy only), so a figure's import closure stays light.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from attnrank.core.columns import ENERGY_EFFECTIVE_RANK, EXCESS


def median_over_seeds(df: pd.DataFrame, keys: str | Sequence[str],
                      cols: str | Sequence[str]) -> pd.Series | pd.DataFrame:
    """Median over seeds of ``cols`` per group of ``keys`` (groups as the index, sorted)."""
    return df.groupby(keys if isinstance(keys, str) else list(keys))[
        cols if isinstance(cols, str) else list(cols)].median()


def excess_at_rank(df: pd.DataFrame, rank: int, r_star: int, seed: int) -> float:
    """The excess risk of the rank-``rank`` student for teacher rank ``r_star`` and ``seed``
    (the first such row; NaN when the grid lacks it)."""
    row = df[(df["rank"] == rank) & (df["r_star"] == r_star) & (df["seed"] == seed)][EXCESS]
    return float(row.iloc[0]) if len(row) else math.nan


def transition_ratios(df: pd.DataFrame) -> list[tuple[int, int, float]]:
    """(r*, seed, excess(r* − 1) / excess(r*)) for every (r*, seed) with r* ≥ 2 whose grid has
    both ranks, in (r*, seed) order; the ratio is inf when excess(r*) ≤ 0."""
    out = []
    for (r_star, seed), _ in df.groupby(["r_star", "seed"]):
        if r_star < 2:
            continue
        lo = excess_at_rank(df, r_star - 1, r_star, seed)
        hi = excess_at_rank(df, r_star, r_star, seed)
        if not (math.isnan(lo) or math.isnan(hi)):
            out.append((int(r_star), int(seed), lo / hi if hi > 0 else math.inf))
    return out


def deviation_from_r_star(estimate: pd.Series) -> pd.Series:
    """abs(estimate − r*) for a Series whose index has an ``r_star`` level."""
    return (estimate - estimate.index.get_level_values("r_star")).abs()


def recovery_frontier(df: pd.DataFrame) -> pd.Series:
    """Per S (number of sequences): the max over r* of abs(median over seeds of R̃_eff − r*)."""
    reff = median_over_seeds(df, ["S", "r_star"], ENERGY_EFFECTIVE_RANK)
    return deviation_from_r_star(reff).groupby(level="S").max()
