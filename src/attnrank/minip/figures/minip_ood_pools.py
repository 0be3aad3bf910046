"""B4: exact-sequence accuracy on a disjoint test pool against r, per scale, with the train–test
gap of every head beside it; every dense seed on the right."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import pandas as pd

from attnrank.core.columns import TEST_SEQUENCE_ACCURACY, TRAIN_SEQUENCE_ACCURACY
from attnrank.core.style import PALETTE, dense_seeds, rank_axis, seed_points_and_median
from attnrank.minip.families import DENSE
from attnrank.minip.quantities import kernel_rows

PAPER = "B"
TABLES = ('minip_ood',)  # the tables this figure reads (by file stem)


def plot(tables: dict[str, pd.DataFrame], params: dict[str, Any]) -> plt.Figure:
    df = tables["minip_ood"]
    target = float(params["target_accuracy"])
    fig, (ax, ax_gap, ax_dense) = plt.subplots(
        1, 3, figsize=(10.2, 3.9), gridspec_kw={"width_ratios": [4, 3, 1.7]})
    ax_dense.sharey(ax)
    order = (df.groupby("instance")["m"].first().sort_values().index.tolist())
    groups = []
    kern = kernel_rows(df).assign(gap=lambda d: d[TRAIN_SEQUENCE_ACCURACY]
                                  - d[TEST_SEQUENCE_ACCURACY])
    for i, inst in enumerate(order):
        part = df[df["instance"] == inst]
        label = f"{inst} (m = {part['m'].iloc[0]})"
        seed_points_and_median(ax, kernel_rows(part), "rank", TEST_SEQUENCE_ACCURACY, PALETTE[i],
                               label)
        seed_points_and_median(ax_gap, kern[kern["instance"] == inst], "rank", "gap", PALETTE[i],
                               label)
        groups.append((str(inst), part[part["model"] == DENSE][TEST_SEQUENCE_ACCURACY],
                       PALETTE[i]))
    ranks = sorted(kern["rank"].unique())
    ax.axhline(target, color="grey", ls=":", lw=1)
    ax_dense.axhline(target, color="grey", ls=":", lw=1)
    for a in (ax, ax_gap):
        rank_axis(a, "x", ranks)
        a.set_xlabel("feature rank r")
    ax.set_ylabel("exact-sequence accuracy, disjoint test pool")
    ax.set_title(f"OOD pools, kernel attention (dotted: target {target:g})", fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    ax_gap.axhline(0, color="grey", lw=0.8)
    ax_gap.set_ylabel("train − test sequence accuracy")
    ax_gap.set_title("train–test gap (near 0: the pool teaches the rule)", fontsize=9)
    dense_seeds(ax_dense, groups, "dense softmax\n(every seed)")
    ax_dense.set_xlabel("pool")
    return fig
