"""Appendix B (EB-16): rank against training loss over the logged steps, one colour per corpus.
Left: the static kernel W_Q W_Kᵀ (the claim's measure), right: the realized mixer; R̃_eff averaged
over layers and heads. Every seed is a thin line through its logged steps (open circle: step 0,
filled: the last step), the rank on a log scale (it falls from ≈ 10 to ≈ 1.5 early, then moves
little); the median over seeds per step is the thick line, its arrows (at most
``MAX_ARROWS`` a line, on segments spread evenly along it, so the dense early steps stay legible)
pointing in the direction of training. Each title gives the median over runs of |Spearman ρ(rank,
train loss)| (EB-16's headline) and, reported beside it, of |ρ(rank, validation loss)| at the same
steps."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from attnrank.core.style import plain_log_axis, shared_legend
from attnrank.language.correlation import spearman
from attnrank.language.figures.language_rank_vs_complexity import PANELS, TITLES, corpus_colors
from attnrank.language.points import Measure, loss_points

PAPER = "A"
TABLES = ('language_ranks', 'language_loss')  # the tables this figure reads (by file stem)
MAX_ARROWS = 5  # arrows per median line


def arrow_segments(n_points: int, most: int = MAX_ARROWS) -> list[int]:
    """The segments (index i: point i → i + 1) of a polyline of ``n_points`` that carry an arrow:
    every one when there are at most ``most``, else ``most`` spread evenly from the first to the
    last."""
    if n_points < 2:
        return []
    return sorted({int(i) for i in np.round(np.linspace(0, n_points - 2, min(most, n_points - 1)))})


def _arrows(ax: plt.Axes, x: np.ndarray, y: np.ndarray, color: Any) -> None:
    """An arrow on the segments ``arrow_segments`` of the polyline (x, y), from a segment's start
    to its midpoint."""
    for i in arrow_segments(len(x)):
        mid = ((x[i] + x[i + 1]) / 2, (y[i] + y[i + 1]) / 2)
        ax.annotate("", xy=mid, xytext=(x[i], y[i]),
                    arrowprops={"arrowstyle": "-|>", "color": color, "lw": 1.4,
                                "mutation_scale": 10}, zorder=5)


def _panel(ax: plt.Axes, pts: pd.DataFrame, color: dict[str, Any], measure: Measure,
           threshold: float) -> None:
    """One measure: every seed's trajectory, the median trajectory with arrows, the median |ρ|
    against the train loss and (where the table has it) the validation loss."""
    rhos, val_rhos = [], []
    many = pts.groupby("corpus")["seed"].nunique().max() > 5  # 10 seeds: lighter seed lines
    for (corpus, _seed), g in pts.groupby(["corpus", "seed"]):
        x, y = g["train_loss"].to_numpy(float), g["value"].to_numpy(float)
        ax.plot(x, y, color=color[corpus], lw=0.6 if many else 0.7, alpha=0.3 if many else 0.55,
                zorder=2)
        ax.scatter(x[:1], y[:1], facecolors="none", edgecolors=color[corpus], s=22, zorder=3)
        ax.scatter(x[-1:], y[-1:], color=color[corpus], s=22, zorder=3)
        rho = float(spearman(y, x))
        rhos.append(0.0 if np.isnan(rho) else abs(rho))
        if "val_loss" in g:
            rho = float(spearman(y, g["val_loss"].to_numpy(float)))
            val_rhos.append(0.0 if np.isnan(rho) else abs(rho))
    for corpus, g in sorted(pts.groupby("corpus")):
        med = g.groupby("step")[["train_loss", "value"]].median().sort_index()
        x, y = med["train_loss"].to_numpy(float), med["value"].to_numpy(float)
        ax.plot(x, y, color=color[corpus], lw=2.2, label=corpus, zorder=4)
        _arrows(ax, x, y, color[corpus])
    val = (f"\nagainst the validation loss (reported): {float(np.median(val_rhos)):.2f}"
           if val_rhos else "")
    ax.set_title(f"{TITLES[measure.matrix]}\nmedian |Spearman ρ(rank, loss)| over "
                 f"{len(rhos)} runs = {float(np.median(rhos)) if rhos else float('nan'):.2f} "
                 f"(EB-16: ≥ {threshold:g}){val}", fontsize=8)
    ax.set_xlabel("train loss (bits per byte)")
    ax.set_ylabel(f"{measure.label.split(' ', 1)[1]} (mean over layers, heads; log scale)")
    plain_log_axis(ax, "y")  # the plateau the static rank reaches early (≈ 1.5) stays readable


def plot(tables: dict[str, pd.DataFrame], params: dict[str, Any]) -> plt.Figure:
    ranks, loss = tables["language_ranks"], tables["language_loss"]
    panels = [m for m in PANELS if (ranks["matrix"] == m.matrix).any()]
    fig = plt.figure(figsize=(5.2 * len(panels), 4.4))
    grid = fig.add_gridspec(2, len(panels), height_ratios=[1, 0.08])
    color = corpus_colors(list(ranks["corpus"].unique()))
    axes = []
    for j, m in enumerate(panels):
        ax = fig.add_subplot(grid[0, j])
        _panel(ax, loss_points(ranks, loss, m), color, m, float(params["min_abs_rho"]))
        axes.append(ax)
    legend = fig.add_subplot(grid[1, :])
    axes[0].scatter([], [], facecolors="none", edgecolors="gray", s=22, label="step 0")
    axes[0].scatter([], [], color="gray", s=22, label="last step")
    axes[0].plot([], [], color="gray", lw=0.7, label="one seed")
    axes[0].plot([], [], color="gray", lw=2.2, label="median over seeds (→ training)")
    shared_legend(legend, axes[:1])
    fig.suptitle(f"Appendix B: rank against training loss over the logged steps (EB-16; scale "
                 f"{params['scale']})", fontsize=9)
    return fig
