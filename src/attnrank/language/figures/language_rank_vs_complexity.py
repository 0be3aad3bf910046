"""Appendix B (EB-15): final-step rank of each (corpus, seed) against the corpus's headline
complexity. Left: the static kernel W_Q W_Kᵀ (the claim's measure), right: the realized mixer; both
R̃_eff averaged over layers and heads. Seeds as points (side by side within a corpus), the median
per corpus as a bar (the bars joined in order of complexity), Spearman ρ and its seed-bootstrap
interval (the claim's, same resamples) in each title."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.patheffects import Normal, Stroke

from attnrank.core.style import PALETTE, shared_legend
from attnrank.language.correlation import correlation
from attnrank.language.points import HEADLINE, R_EFF, REALIZED, STATIC, Measure, complexity_points

PAPER = "A"
TABLES = ('language_ranks', 'language_corpora')  # the tables this figure reads (by file stem)


PANELS = (HEADLINE, Measure(REALIZED, R_EFF))
TITLES = {STATIC: r"static kernel $W_Q W_K^\top$", REALIZED: "realized mixer (attention matrix)"}


def corpus_colors(corpora: list[str]) -> dict[str, Any]:
    """One colour per corpus, in sorted name order (both appendix-B figures agree)."""
    return {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(sorted(corpora))}


def _panel(ax: plt.Axes, pts: pd.DataFrame, color: dict[str, Any], width: float,
           params: dict[str, Any], measure: Measure) -> None:
    """The points of one measure: seeds side by side around their corpus's complexity, the
    corpus median as a short black-edged bar under them (wider than their strip), the medians
    joined by a thin line in order of complexity (a rank correlation near 0 can hide a rise and
    a fall), ρ and its interval in the title."""
    medians = pts.groupby("corpus").agg(x=("complexity", "first"), y=("value", "median"))
    medians = medians.sort_values("x")
    ax.plot(medians["x"], medians["y"], color="gray", lw=0.9, zorder=2)
    for corpus, g in sorted(pts.groupby("corpus")):
        g = g.sort_values("seed")
        k = len(g)
        dodge = np.linspace(-width, width, k) if k > 1 else np.zeros(1)
        x = float(g["complexity"].iloc[0])
        ax.scatter(x + dodge, g["value"], color=color[corpus], s=28 if k <= 5 else 16,
                   edgecolors="black", linewidths=0.4, zorder=4, label=corpus)
        ax.plot([x], [float(g["value"].median())], marker="_", ms=18, mew=2.6,
                color=color[corpus], zorder=3,
                path_effects=[Stroke(linewidth=4.2, foreground="black"), Normal()])
    c = correlation(pts["complexity"].to_numpy(), pts["value"].to_numpy(),
                    pts["corpus"].to_numpy(), int(params["bootstrap_samples"]),
                    float(params["interval_level"]))
    ax.set_title(f"{TITLES[measure.matrix]}\nSpearman ρ = {c.rho:.2f}, {c.level:.0%} interval "
                 f"[{c.lo:.2f}, {c.hi:.2f}] ({c.points} points, {c.groups} corpora)", fontsize=8)
    ax.set_ylabel(f"final {measure.label.split(' ', 1)[1]} (mean over layers, heads)")


def plot(tables: dict[str, pd.DataFrame], params: dict[str, Any]) -> plt.Figure:
    ranks, corpora = tables["language_ranks"], tables["language_corpora"]
    panels = [m for m in PANELS if (ranks["matrix"] == m.matrix).any()]
    fig = plt.figure(figsize=(5.2 * len(panels), 4.4))
    grid = fig.add_gridspec(2, len(panels), height_ratios=[1, 0.08])
    color = corpus_colors(list(ranks["corpus"].unique()))
    xs = corpora["complexity"].to_numpy(float)
    # seeds spread over ±width: at most 0.3 of the closest two corpora's distance, so
    # neighbours' seeds never interleave (10 seeds a corpus); the median bar has a fixed size
    gaps = np.diff(np.unique(xs))
    width = min(0.015 * float(np.ptp(xs)), 0.3 * float(gaps.min())) if len(gaps) else 0.01
    name = (", ".join(sorted(corpora["headline_measure"].astype(str).unique()))
            if "headline_measure" in corpora else "complexity")
    axes = []
    for j, m in enumerate(panels):
        ax = fig.add_subplot(grid[0, j])
        _panel(ax, complexity_points(ranks, corpora, m), color, width, params, m)
        ax.set_xlabel(f"corpus complexity: {name} (headline)")
        axes.append(ax)
    shared_legend(fig.add_subplot(grid[1, :]), axes[:1])
    fig.suptitle(f"Appendix B: rank against corpus complexity (EB-15; seeds as points, bar = "
                 f"median; scale {params['scale']})", fontsize=9)
    return fig
