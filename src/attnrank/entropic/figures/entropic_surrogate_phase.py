"""A1: excess risk of trained rank-r linear surrogates against r, one panel per r*, with the
Eckart–Young bound (closed form) and the noise floor drawn."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import pandas as pd

from attnrank.core.columns import BOUND, EXCESS
from attnrank.core.quantities import median_over_seeds
from attnrank.core.style import PALETTE, rank_axis, seed_points_and_median, shared_legend
from attnrank.entropic.jobs import ADAM, GD

PAPER = "A"
TABLES = ('entropic_surrogate',)  # the tables this figure reads (by file stem)


def plot(tables: dict[str, pd.DataFrame], params: dict[str, Any]) -> plt.Figure:
    df = tables["entropic_surrogate"]
    r_stars = sorted(df["r_star"].unique())
    fig = plt.figure(figsize=(3.4 * len(r_stars), 3.9))
    grid = fig.add_gridspec(2, len(r_stars), height_ratios=[1, 0.1])
    axes = [fig.add_subplot(grid[0, 0])]
    axes += [fig.add_subplot(grid[0, i], sharey=axes[0]) for i in range(1, len(r_stars))]
    floor = float(params["floor"])
    for ax, r_star in zip(axes, r_stars, strict=True):
        part = df[df["r_star"] == r_star]
        adam = part[part["optimizer"] == ADAM]
        seed_points_and_median(ax, adam, "rank", EXCESS, PALETTE[0], "Adam (trained)")
        bound = median_over_seeds(part, "rank", BOUND).reset_index().sort_values("rank")
        pos = bound[bound[BOUND] > 0]
        ax.plot(pos["rank"], pos[BOUND], color="black", ls="--", lw=1.2, marker="_", ms=10,
                label="Eckart–Young bound")
        gd = part[part["optimizer"] == GD]
        if len(gd):
            ax.scatter(gd["rank"], gd[EXCESS], marker="*", s=70, color=PALETTE[3], zorder=5,
                       label="GD, early-stopped")
        ax.axhline(floor, color="gray", ls=":", lw=1, label=f"noise floor (excess {floor:g})")
        ax.axvline(r_star, color="gray", lw=0.6, alpha=0.6)
        ax.set_yscale("log")
        rank_axis(ax, "x")
        ax.set_title(f"r* = {r_star}")
        ax.set_xlabel("student rank r")
        if ax is not axes[0]:
            ax.tick_params(axis="y", labelleft=False)
    axes[0].set_ylabel("excess risk (held-out, vs clean target)")
    shared_legend(fig.add_subplot(grid[1, :]), axes)
    fig.suptitle("Linear surrogate: trained excess vs rank, on the bound below r*, at the floor above")
    return fig
