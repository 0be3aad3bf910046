"""Witness families: the measured transition (smallest r exact on every seed) of every family
(K, w) against its proven bound r_lb = min(K, w) (left) and against K (right), y = x drawn; the
bar through a point spans the per-seed transitions, a family with none in the grid sits above
the grid's largest rank as an open triangle; on the left each point is labelled "K,w"."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from attnrank.core.style import PALETTE, rank_axis, shared_legend
from attnrank.minip.witness_sweep import family_summary

PAPER = "B"
TABLES = ('minip_witness_families',)  # the tables this figure reads (by file stem)


MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
ABOVE = 1.5  # a family without transition is drawn this factor above the grid's largest rank
SPREAD = 0.12  # log2 offset between families that share an x value, so none hides another


def _offsets(x: pd.Series) -> np.ndarray:
    """A multiplicative x offset per row, spreading rows that share an x value symmetrically."""
    out = np.ones(len(x))
    for _, idx in x.groupby(x).groups.items():
        pos = [x.index.get_loc(i) for i in idx]
        shifts = (np.arange(len(pos)) - (len(pos) - 1) / 2) * SPREAD
        out[pos] = 2.0 ** shifts
    return out


def _panel(ax: plt.Axes, summary: pd.DataFrame, x: str, group: str, label: str, ticks: list[float],
           top: float, labelled: bool) -> None:
    """Transition against column ``x``, one colour and marker per value of ``group``; with
    ``labelled`` each point carries "K,w" (where x and colour do not name the family)."""
    levels = sorted(summary[group].unique())
    xs = summary[x].astype(float) * _offsets(summary[x].astype(float))
    for i, level in enumerate(levels):
        sel = (summary[group] == level).to_numpy()
        part, px = summary[sel], xs[sel]
        found = np.isfinite(part["transition"].to_numpy())
        color, marker = PALETTE[i % len(PALETTE)], MARKERS[i % len(MARKERS)]
        lo = part["seed_transition_min"].clip(upper=top * ABOVE).to_numpy()
        hi = part["seed_transition_max"].clip(upper=top * ABOVE).to_numpy()
        y = part["transition"].clip(upper=top * ABOVE).to_numpy()
        ax.vlines(px, lo, hi, color=color, lw=1.2, alpha=0.7, zorder=2)
        ax.scatter(px[found], y[found], color=color, marker=marker, s=46, edgecolors="black",
                   linewidths=0.5, zorder=4, label=f"{label} = {level}")
        ax.scatter(px[~found], y[~found], facecolors="none", edgecolors=color, marker="^", s=60,
                   linewidths=1.4, zorder=4)
        for xi, yi, k, w in zip(px, y, part["blocks"], part["width"], strict=True):
            if labelled:
                ax.annotate(f"{k},{w}", (xi, yi), xytext=(0, 5), textcoords="offset points",
                            ha="center", fontsize=6, color="dimgrey")
    diagonal = np.geomspace(ticks[0] / ABOVE, top * ABOVE * ABOVE)  # past both axes' limits
    ax.plot(diagonal, diagonal, color="grey", ls="--", lw=1, label="y = x", zorder=1)
    ax.axhline(top, color="grey", ls=":", lw=0.8, zorder=1)
    xvals = sorted(set(summary[x].astype(float)))
    rank_axis(ax, "x", xvals)
    rank_axis(ax, "y", ticks)
    ax.set_xlim(xvals[0] / ABOVE, xvals[-1] * ABOVE)
    low = min(summary["seed_transition_min"].min(), summary["transition"].min())
    ax.set_ylim(min(low, ticks[-min(len(ticks), 3)]) / ABOVE, top * ABOVE * ABOVE)  # ≥ 3 ticks
    ax.set_ylabel("measured transition r (exact on every seed)")


def plot(tables: dict[str, pd.DataFrame], params: dict[str, Any]) -> plt.Figure:
    df = tables["minip_witness_families"]
    summary = family_summary(df, float(params["worst_case_cutoff"]))
    ranks = sorted(float(r) for r in df["rank"].unique())
    top = ranks[-1]
    fig = plt.figure(figsize=(8.4, 4.6))
    grid = fig.add_gridspec(2, 2, height_ratios=[12, 1])
    left, right = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1])
    right.sharey(left)
    _panel(left, summary, "r_lb", "blocks", "K", ranks, top, labelled=True)
    _panel(right, summary, "blocks", "width", "w", ranks, top, labelled=False)
    left.set_xlabel("proven bound $r_{lb}$ = min(K, w)")
    right.set_xlabel("number of blocks K")
    left.set_title("against $r_{lb}$ (colour: K)", fontsize=9)
    right.set_title("against K (colour: w)", fontsize=9)
    right.tick_params(axis="y", labelleft=False)
    right.set_ylabel("")
    legend_l, legend_r = fig.add_subplot(grid[1, 0]), fig.add_subplot(grid[1, 1])
    shared_legend(legend_l, [left], ncol=4)
    shared_legend(legend_r, [right], ncol=5)
    fig.suptitle(f"Witness families, table features: transition against $r_{{lb}}$ and K "
                 f"(bars: per-seed transitions; open triangle: none up to r = {top:.0f})",
                 fontsize=9)
    return fig
