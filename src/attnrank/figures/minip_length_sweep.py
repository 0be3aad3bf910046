"""B1: sequence accuracy against feature rank r for N = 1, 2, 3; dense and constructions marked."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import pandas as pd

from attnrank.columns import SEQUENCE_ACCURACY, TEST_SEQUENCE_ACCURACY
from attnrank.figures.style import PALETTE, seed_points_and_median
from attnrank.quantities import kernel_rows


def plot(tables: dict[str, pd.DataFrame], params: dict[str, Any]) -> plt.Figure:
    df, cons = tables["minip_length_sweep"], tables["minip_constructions"]
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    kern = kernel_rows(df)
    for i, (n, part) in enumerate(sorted(kern.groupby("n_tokens"))):
        color = PALETTE[i % len(PALETTE)]
        seed_points_and_median(ax, part, "rank", TEST_SEQUENCE_ACCURACY, color, f"N = {n}")
        dense = df[(df["model"] == "dense") & (df["n_tokens"] == n)][TEST_SEQUENCE_ACCURACY]
        if len(dense):
            ax.axhline(dense.median(), color=color, ls="--", lw=1, alpha=0.8)
        c = cons[(cons["n_tokens"] == n) & (cons["eval_set"] == "random")
                 & (cons["construction"] != "dense")]
        c = c[(c["construction"] == "rank1") | (c["m"] == part["m"].iloc[0])]
        ax.scatter(c["rank"], c[SEQUENCE_ACCURACY], marker="*", s=90, color=color,
                   edgecolor="black", linewidths=0.5, zorder=5)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("feature rank r")
    ax.set_ylabel("held-out sequence accuracy")
    ax.set_title("Min-IP length sweep (dashed: dense softmax; ★: construction)")
    ax.legend(loc="lower right", fontsize=8)
    return fig
