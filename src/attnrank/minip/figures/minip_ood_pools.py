"""B4: exact-sequence accuracy on a disjoint test pool against r, per scale; every dense seed
beside it."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import pandas as pd

from attnrank.core.columns import TEST_SEQUENCE_ACCURACY
from attnrank.core.style import PALETTE, dense_seeds, rank_axis, seed_points_and_median
from attnrank.minip.families import DENSE
from attnrank.minip.quantities import kernel_rows

PAPER = "B"
TABLES = ('minip_ood',)  # the tables this figure reads (by file stem)


def plot(tables: dict[str, pd.DataFrame], params: dict[str, Any]) -> plt.Figure:
    df = tables["minip_ood"]
    target = float(params["target_accuracy"])
    fig, (ax, ax_dense) = plt.subplots(1, 2, figsize=(6.6, 3.8), sharey=True,
                                       gridspec_kw={"width_ratios": [4, 1.1]})
    order = (df.groupby("instance")["m"].first().sort_values().index.tolist())
    groups = []
    for i, inst in enumerate(order):
        part = df[df["instance"] == inst]
        label = f"{inst} (m = {part['m'].iloc[0]})"
        seed_points_and_median(ax, kernel_rows(part), "rank", TEST_SEQUENCE_ACCURACY, PALETTE[i],
                               label)
        groups.append((str(inst), part[part["model"] == DENSE][TEST_SEQUENCE_ACCURACY],
                       PALETTE[i]))
    for a in (ax, ax_dense):
        a.axhline(target, color="grey", ls=":", lw=1)
    rank_axis(ax, "x", sorted(kernel_rows(df)["rank"].unique()))
    ax.set_xlabel("feature rank r")
    ax.set_ylabel("exact-sequence accuracy, disjoint test pool")
    ax.set_title(f"OOD pools, kernel attention (dotted: target {target:g})")
    ax.legend(fontsize=8, loc="lower right")
    dense_seeds(ax_dense, groups, "dense softmax\n(every seed)")
    ax_dense.set_xlabel("pool")
    return fig
