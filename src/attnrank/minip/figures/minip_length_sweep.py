"""B1: sequence accuracy against feature rank r for N = 1, 2, 3; constructions marked and every
dense seed beside it."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import pandas as pd

from attnrank.core.columns import SEQUENCE_ACCURACY, TEST_SEQUENCE_ACCURACY
from attnrank.core.style import PALETTE, dense_seeds, rank_axis, seed_points_and_median
from attnrank.minip.families import DENSE
from attnrank.minip.quantities import kernel_rows

PAPER = "B"
TABLES = ('minip_length_sweep', 'minip_constructions')  # the tables this figure reads (by file stem)


def plot(tables: dict[str, pd.DataFrame], params: dict[str, Any]) -> plt.Figure:
    df, cons = tables["minip_length_sweep"], tables["minip_constructions"]
    fig, (ax, ax_dense) = plt.subplots(1, 2, figsize=(6.6, 3.8), sharey=True,
                                       gridspec_kw={"width_ratios": [4, 1.1]})
    kern = kernel_rows(df)
    groups, ranks = [], set(kern["rank"])
    lengths = sorted(kern.groupby("n_tokens"))
    for i, (n, part) in enumerate(lengths):
        color, halo = PALETTE[i % len(PALETTE)], len(lengths) - 1 - i  # shorter N drawn wider
        seed_points_and_median(ax, part, "rank", TEST_SEQUENCE_ACCURACY, color, f"N = {n}",
                               lw=1.4 + 1.6 * halo, ms=4 + 2.5 * halo)
        dense = df[(df["model"] == DENSE) & (df["n_tokens"] == n)][TEST_SEQUENCE_ACCURACY]
        groups.append((f"{n}", dense, color))
        c = cons[(cons["n_tokens"] == n) & (cons["eval_set"] == "random")
                 & (cons["construction"] != DENSE)]
        c = c[(c["construction"] == "rank1") | (c["m"] == part["m"].iloc[0])]
        ranks |= set(c["rank"])
        ax.scatter(c["rank"], c[SEQUENCE_ACCURACY], marker="*", s=90 * 2.2**halo, color=color,
                   edgecolor="black", linewidths=0.5, zorder=5)
    rank_axis(ax, "x", sorted(ranks))
    ax.set_xlabel("feature rank r")
    ax.set_ylabel("held-out sequence accuracy")
    ax.set_title("Min-IP length sweep, kernel attention\n(★: construction; shorter N drawn wider)")
    ax.legend(loc="lower right", fontsize=8)
    dense_seeds(ax_dense, groups, "dense softmax\n(every seed)")
    ax_dense.set_xlabel("N")
    return fig
