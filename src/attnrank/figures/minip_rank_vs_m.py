"""B2: sequence accuracy against feature rank r per m, every dense seed beside it, and the smallest
r reaching the target accuracy against m (log r), with the 2^m line."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from attnrank.columns import TEST_SEQUENCE_ACCURACY, WORST_CASE_ERROR
from attnrank.figures.style import PALETTE, dense_seeds, rank_axis, seed_points_and_median
from attnrank.quantities import crossing_rank, kernel_rows


def _accuracy(ax: plt.Axes, ax_dense: plt.Axes, df: pd.DataFrame, target: float) -> None:
    """Kernel accuracy against r (seeds and median) per m; the dense seeds per m beside it."""
    groups = []
    for i, (m, part) in enumerate(sorted(kernel_rows(df).groupby("m"))):
        color = PALETTE[i % len(PALETTE)]
        seed_points_and_median(ax, part, "rank", TEST_SEQUENCE_ACCURACY, color, f"m = {m}")
        dense = df[(df["model"] == "dense") & (df["m"] == m)][TEST_SEQUENCE_ACCURACY]
        groups.append((f"{m}", dense, color))
    for a in (ax, ax_dense):
        a.axhline(target, color="grey", ls=":", lw=1)
    rank_axis(ax, "x", sorted(kernel_rows(df)["rank"].unique()))
    ax.set_xlabel("feature rank r")
    ax.set_ylabel("sequence accuracy (N = 3)")
    ax.set_title(f"kernel attention: accuracy vs r (dotted: target {target:g})")
    ax.legend(fontsize=8, loc="lower right")
    dense_seeds(ax_dense, groups, "dense softmax\n(every seed)")
    ax_dense.set_xlabel("m")


def _rank_needed(ax: plt.Axes, df: pd.DataFrame, cons: pd.DataFrame, target: float,
                 cut: float) -> None:
    """The smallest trained r reaching ``target`` per m, the 2^m line and the exact constructions."""
    cross = crossing_rank(df, target, "m")  # inf where no rank in the grid reaches the target
    reached = np.isfinite(cross.to_numpy())
    ms = np.array(sorted(df["m"].unique()))
    ax.plot(ms, 2.0**ms, color="black", ls="--", lw=1, label="$2^m$ (exact construction)")
    found = cross[reached]
    ax.plot(found.index, found.to_numpy(), "o-", color=PALETTE[0],
            label=f"smallest trained r with median accuracy ≥ {target:g}")
    missing = cross.index[~reached]
    if len(missing):
        tried = kernel_rows(df).groupby("m")["rank"].max()
        ax.scatter(missing, tried[missing], marker="^", color=PALETTE[3],
                   label="not reached (largest r tried)")
    exp = cons[(cons["construction"] == "exp_features") & (cons["eval_set"] == "all_triples")]
    exact = exp[exp[WORST_CASE_ERROR] < cut]
    ax.scatter(exact["m"], exact["rank"], marker="*", s=80, color="black", zorder=5,
               label="construction exact (all triples)")
    rank_axis(ax, "y")
    ax.set_xticks(sorted(set(ms) | {int(m) for m in exact["m"]}))
    ax.set_xlabel("token width m")
    ax.set_ylabel("feature rank r")
    ax.set_title("rank needed vs m")
    ax.legend(fontsize=7, loc="upper left")


def plot(tables: dict[str, pd.DataFrame], params: dict[str, Any]) -> plt.Figure:
    df, cons = tables["minip_rank_vs_m"], tables["minip_constructions"]
    target, cut = float(params["target_accuracy"]), float(params["worst_case_cutoff"])
    fig, (ax0, ax_dense, ax1) = plt.subplots(1, 3, figsize=(10.5, 3.8),
                                             gridspec_kw={"width_ratios": [4, 1, 4]})
    ax_dense.sharey(ax0)
    _accuracy(ax0, ax_dense, df, target)
    _rank_needed(ax1, df, cons, target, cut)
    return fig
