"""A1: excess risk of trained rank-r linear surrogates against r, one panel per r*, with the
Eckart–Young bound (closed form) and the noise floor drawn."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import pandas as pd

from attnrank.columns import BOUND, EXCESS
from attnrank.figures.style import PALETTE, seed_points_and_median
from attnrank.quantities import median_over_seeds


def plot(tables: dict[str, pd.DataFrame], params: dict[str, Any]) -> plt.Figure:
    df = tables["entropic_surrogate"]
    r_stars = sorted(df["r_star"].unique())
    fig, axes = plt.subplots(1, len(r_stars), figsize=(3.4 * len(r_stars), 3.4), sharey=True,
                             squeeze=False)
    floor = float(params["floor"])
    for ax, r_star in zip(axes[0], r_stars, strict=True):
        part = df[df["r_star"] == r_star]
        adam = part[part["optimizer"] == "adam"]
        seed_points_and_median(ax, adam, "rank", EXCESS, PALETTE[0], "Adam (trained)")
        bound = median_over_seeds(part, "rank", BOUND).reset_index().sort_values("rank")
        pos = bound[bound[BOUND] > 0]
        ax.plot(pos["rank"], pos[BOUND], color="black", ls="--", lw=1.2, marker="_", ms=10,
                label="Eckart–Young bound")
        gd = part[part["optimizer"] == "gd"]
        if len(gd):
            ax.scatter(gd["rank"], gd[EXCESS], marker="*", s=70, color=PALETTE[3], zorder=5,
                       label="GD, early-stopped")
        ax.axhline(floor, color="gray", ls=":", lw=1, label=f"noise floor (excess {floor:g})")
        ax.axvline(r_star, color="gray", lw=0.6, alpha=0.6)
        ax.set_yscale("log")
        ax.set_xscale("log", base=2)
        ax.set_title(f"r* = {r_star}")
        ax.set_xlabel("student rank r")
    axes[0][0].set_ylabel("excess risk (held-out, vs clean target)")
    axes[0][0].legend(fontsize=7, loc="lower left")
    fig.suptitle("Linear surrogate: trained excess vs rank, on the bound below r*, at the floor above")
    return fig
