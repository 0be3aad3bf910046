"""B4 pool sweep: train-pool and test-pool sequence accuracy against the size of the train pool,
one colour per kernel rank, every seed drawn; the gap between the two closing as the pool grows."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import pandas as pd

from attnrank.core.columns import TEST_SEQUENCE_ACCURACY, TRAIN_SEQUENCE_ACCURACY
from attnrank.core.style import PALETTE, seed_points_and_median
from attnrank.minip.quantities import kernel_rows

PAPER = "B"
TABLES = ('minip_ood_pool_sweep',)  # the tables this figure reads (by file stem)


def plot(tables: dict[str, pd.DataFrame], params: dict[str, Any]) -> plt.Figure:
    df = kernel_rows(tables["minip_ood_pool_sweep"])
    df = df.assign(pool=df["instance"].str.removeprefix("pool").astype(int),
                   gap=df[TRAIN_SEQUENCE_ACCURACY] - df[TEST_SEQUENCE_ACCURACY])
    target = float(params["target_accuracy"])
    fig, (ax, ax_gap) = plt.subplots(1, 2, figsize=(8.4, 3.8))
    for i, (rank, part) in enumerate(sorted(df.groupby("rank"))):
        color = PALETTE[i]
        seed_points_and_median(ax, part, "pool", TEST_SEQUENCE_ACCURACY, color, f"r = {rank}")
        seed_points_and_median(ax, part, "pool", TRAIN_SEQUENCE_ACCURACY, color,
                               "_nolegend_", marker="s", lw=1.0)
        ax.lines[-1].set_linestyle("--")
        seed_points_and_median(ax_gap, part, "pool", "gap", color, f"r = {rank}")
    ax.axhline(target, color="grey", ls=":", lw=1)
    ax_gap.axhline(0, color="grey", lw=0.8)
    m = int(df["m"].iloc[0])
    pools = sorted(df["pool"].unique())
    for a in (ax, ax_gap):
        a.set_xscale("log")
        a.set_xticks(pools, [f"{n:,}" for n in pools], fontsize=7)
        a.minorticks_off()
        a.set_xlabel("train pool (distinct sequences)")
    ax.set_ylabel("exact-sequence accuracy")
    ax.set_title(f"pool sweep, m = {m}: train (dashed) and test (solid)", fontsize=9)
    ax.legend(fontsize=7, loc="best")
    ax_gap.set_ylabel("train − test sequence accuracy")
    ax_gap.set_title("the gap closes as the pool grows", fontsize=9)
    ax_gap.legend(fontsize=7)
    return fig
