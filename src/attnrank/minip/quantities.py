"""Min-IP quantities that both the figures and the claims derive from the result tables.

Pure functions of DataFrames (pandas only), so a figure's import closure stays light.
"""

from __future__ import annotations

import math

import pandas as pd

from attnrank.core.columns import TEST_SEQUENCE_ACCURACY
from attnrank.core.quantities import median_over_seeds
from attnrank.minip.families import KERNEL


def kernel_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of trained kernel (feature-rank) heads, without the dense baseline."""
    return df[df["model"] == KERNEL]


def crossing_rank(df: pd.DataFrame, target: float, by: str) -> pd.Series:
    """Per group ``by``: the smallest rank whose median (over seeds) kernel sequence accuracy is
    ≥ ``target``; inf when no rank in the grid reaches it. Indexed by the group, sorted."""
    med = median_over_seeds(kernel_rows(df), [by, "rank"], TEST_SEQUENCE_ACCURACY).reset_index()
    out = {}
    for key, part in med.groupby(by):
        ok = part[part[TEST_SEQUENCE_ACCURACY] >= target]["rank"]
        out[key] = float(ok.min()) if len(ok) else math.inf
    return pd.Series(out).sort_index()


def exact_transition(df: pd.DataFrame) -> float:
    """The smallest rank exact on every seed (held-out sequence accuracy 1 on each of its rows);
    inf when no rank of ``df`` is. ``df``: one family and feature map, one row per (rank, seed)."""
    worst = df.groupby("rank")[TEST_SEQUENCE_ACCURACY].min()
    exact = worst[worst >= 1].index
    return float(exact.min()) if len(exact) else math.inf


def witness_lower_bound(n_blocks: int, block_width: int) -> int:
    """The proven feature-rank lower bound of the witness family: r_lb = min(K, w)."""
    return min(int(n_blocks), int(block_width))
