"""A3: excess risk of rank-r attention students against r, linear teacher and softmax teachers,
one panel per β, with the floor, the EB-7/EB-8 deficiency threshold and, in the softmax panels,
the linear teacher's medians for reference."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import MaxNLocator

from attnrank.core.columns import EXCESS
from attnrank.core.quantities import median_over_seeds
from attnrank.core.style import PALETTE, seed_points_and_median, shared_legend
from attnrank.entropic.jobs import LINEAR, SOFTMAX

PAPER = "A"
TABLES = ('entropic_attention',)  # the tables this figure reads (by file stem)


def _panels(df: pd.DataFrame) -> list[str]:
    """The panel names: the linear teacher first, then the softmax teachers by β."""
    softmax = sorted((p for p in set(df["panel"]) if p != LINEAR),
                     key=lambda s: float(s.split("= ")[1]))
    return ([LINEAR] if LINEAR in set(df["panel"]) else []) + softmax


def _linear_reference(ax: plt.Axes, linear: pd.DataFrame, colors: dict) -> None:
    """The linear teacher's median excess per r*, thin and dashed, under a softmax panel's data."""
    for r_star, g in sorted(linear.groupby("r_star")):
        med = median_over_seeds(g, "rank", EXCESS).reset_index().sort_values("rank")
        ax.plot(med["rank"], med[EXCESS], color=colors[r_star], ls="--", lw=0.9, alpha=0.75,
                zorder=1)
    ax.plot([], [], color="gray", ls="--", lw=0.9, label="linear teacher, median (colour: r*)")


def plot(tables: dict[str, pd.DataFrame], params: dict[str, Any]) -> plt.Figure:
    df = tables["entropic_attention"].copy()
    df["panel"] = [(LINEAR if t == LINEAR else f"{SOFTMAX}, β = {b:g}")
                   for t, b in zip(df["teacher"], df["beta"], strict=True)]
    panels = _panels(df)
    fig = plt.figure(figsize=(3.4 * len(panels), 4.1))
    grid = fig.add_gridspec(2, len(panels), height_ratios=[1, 0.13])
    axes = [fig.add_subplot(grid[0, 0])]
    axes += [fig.add_subplot(grid[0, i], sharey=axes[0]) for i in range(1, len(panels))]
    floor = float(params["floor"])
    deficiency = {kind: float(v) for kind, v in params["deficiency_excess"].items()}
    colors = {r: PALETTE[i % len(PALETTE)] for i, r in enumerate(sorted(df["r_star"].unique()))}
    linear = df[df["panel"] == LINEAR]
    for ax, panel in zip(axes, panels, strict=True):
        kind, claim = ((LINEAR, "EB-7 deficiency (linear)") if panel == LINEAR else
                       (SOFTMAX, f"EB-8 deficiency (softmax, judged at β = "
                                   f"{float(params['headline_beta']):g})"))
        part = df[df["panel"] == panel]
        for r_star, g in sorted(part.groupby("r_star")):
            seed_points_and_median(ax, g, "rank", EXCESS, colors[r_star], f"r* = {r_star}")
            ax.axvline(r_star, color=colors[r_star], lw=0.7, ls=":")
        if kind != LINEAR and len(linear):
            _linear_reference(ax, linear, colors)
        ax.axhline(deficiency[kind], color="black", ls="-.", lw=0.9,
                   label=f"{claim}: ≥ {deficiency[kind]:g} below r*")
        ax.axhline(floor, color="gray", ls=":", lw=1, label=f"floor {floor:g}")
        ax.set_yscale("log")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(panel + " teacher")
        ax.set_xlabel("student kernel rank r")
        if ax is not axes[0]:
            ax.tick_params(axis="y", labelleft=False)
    axes[0].set_ylabel("excess risk (held-out)")
    shared_legend(fig.add_subplot(grid[1, :]), axes)
    fig.suptitle("Attention-native rank: same-class teacher and students (dotted verticals: r*)")
    return fig
