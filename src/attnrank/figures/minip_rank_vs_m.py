"""B2: smallest r reaching the target accuracy against m (log r), with the 2^m line."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from attnrank.columns import TEST_SEQUENCE_ACCURACY, WORST_CASE_ERROR
from attnrank.figures.style import PALETTE, seed_points_and_median
from attnrank.quantities import crossing_rank, kernel_rows


def plot(tables: dict[str, pd.DataFrame], params: dict[str, Any]) -> plt.Figure:
    df, cons = tables["minip_rank_vs_m"], tables["minip_constructions"]
    target, cut = float(params["target_accuracy"]), float(params["worst_case_cutoff"])
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(9, 3.6))
    for i, (m, part) in enumerate(sorted(kernel_rows(df).groupby("m"))):
        color = PALETTE[i % len(PALETTE)]
        seed_points_and_median(ax0, part, "rank", TEST_SEQUENCE_ACCURACY, color, f"m = {m}")
        dense = df[(df["model"] == "dense") & (df["m"] == m)][TEST_SEQUENCE_ACCURACY]
        ax0.axhline(dense.median(), color=color, ls="--", lw=1, alpha=0.8)
    ax0.axhline(target, color="grey", ls=":", lw=1)
    ax0.set_xscale("log", base=2)
    ax0.set_xlabel("feature rank r")
    ax0.set_ylabel("sequence accuracy (N = 3)")
    ax0.set_title("accuracy vs r (dashed: dense)")
    ax0.legend(fontsize=8, loc="lower right")

    cross = crossing_rank(df, target, "m")  # inf where no rank in the grid reaches the target
    reached = np.isfinite(cross.to_numpy())
    ms = np.array(sorted(df["m"].unique()))
    ax1.plot(ms, 2.0**ms, color="black", ls="--", lw=1, label="$2^m$ (exact construction)")
    found = cross[reached]
    ax1.plot(found.index, found.to_numpy(), "o-", color=PALETTE[0],
             label=f"smallest trained r with accuracy ≥ {target:g}")
    missing = cross.index[~reached]
    if len(missing):
        tried = kernel_rows(df).groupby("m")["rank"].max()
        ax1.scatter(missing, tried[missing], marker="^", color=PALETTE[3],
                    label="not reached (largest r tried)")
    exp = cons[(cons["construction"] == "exp_features") & (cons["eval_set"] == "all_triples")]
    exact = exp[exp[WORST_CASE_ERROR] < cut]
    ax1.scatter(exact["m"], exact["rank"], marker="*", s=80, color="black", zorder=5,
                label="construction exact (all triples)")
    ax1.set_yscale("log", base=2)
    ax1.set_xlabel("token width m")
    ax1.set_ylabel("feature rank r")
    ax1.set_title("rank needed vs m")
    ax1.legend(fontsize=7, loc="upper left")
    return fig
