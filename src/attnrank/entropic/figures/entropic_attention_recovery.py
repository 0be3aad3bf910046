"""A3 recovery: rank of the learned kernel K = W_Q W_Kᵀ of the r = d student against the true r*
(identity line), and R̃_eff over training."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import pandas as pd

from attnrank.core.columns import ENERGY_EFFECTIVE_RANK, numerical_rank
from attnrank.core.quantities import median_over_seeds
from attnrank.core.style import PALETTE, plain_log_axis
from attnrank.entropic.jobs import LINEAR, SOFTMAX

PAPER = "A"
TABLES = ('entropic_attention', 'entropic_attention_trace')  # the tables this figure reads (by file stem)


def _label(t: str, b: float) -> str:
    return LINEAR if t == LINEAR else f"{SOFTMAX} β={b:g}"


def _over_training(ax: plt.Axes, trace: pd.DataFrame, teachers: list[tuple[str, float]]) -> None:
    """Median R̃_eff over training: colour r*, line style teacher (legend: both, in grey/colour)."""
    styles = ["-", "--", "-.", ":"]
    r_stars = sorted(trace["r_star"].unique())
    for j, (t, b) in enumerate(teachers):
        g = trace[(trace["teacher"] == t) & (trace["beta"] == b)]
        for i, r_star in enumerate(r_stars):
            med = median_over_seeds(g[g["r_star"] == r_star], "step",
                                    ENERGY_EFFECTIVE_RANK).reset_index()
            ax.plot(med["step"], med[ENERGY_EFFECTIVE_RANK], color=PALETTE[i],
                    ls=styles[j % len(styles)], lw=1.2)
        ax.plot([], [], color="gray", ls=styles[j % len(styles)], label=_label(t, b))
    for i, r_star in enumerate(r_stars):
        ax.plot([], [], color=PALETTE[i], lw=3, label=f"r* = {r_star}")


def plot(tables: dict[str, pd.DataFrame], params: dict[str, Any]) -> plt.Figure:
    df, trace = tables["entropic_attention"], tables["entropic_attention_trace"]
    tau = float(params["headline_tau"])
    top = df[df["rank"] == df["rank"].max()]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    teachers = sorted({(t, float(b)) for t, b in zip(top["teacher"], top["beta"], strict=True)})
    markers = "osD^v<>"
    for ax, col, title in ((axes[0], ENERGY_EFFECTIVE_RANK, "energy effective rank R̃_eff"),
                           (axes[1], numerical_rank(tau), f"numerical rank (τ = {tau:g})")):
        for i, (t, b) in enumerate(teachers):
            g = top[(top["teacher"] == t) & (top["beta"] == b)]
            med = median_over_seeds(g, "r_star", col).reset_index()
            dodge = 0.15 * (i - (len(teachers) - 1) / 2)  # side by side where they coincide
            ax.scatter(g["r_star"] + dodge, g[col], color=PALETTE[i], alpha=0.5, s=12, zorder=3)
            ax.plot(med["r_star"] + dodge, med[col], marker=markers[i % len(markers)],
                    color=PALETTE[i], label=_label(t, b), lw=1.2, ms=5)
        lim = float(top["r_star"].max()) + 1
        ax.plot([0, lim], [0, lim], color="black", ls="--", lw=0.8, label="identity")
        ax.set_xlabel("true r* (teachers side by side)")
        ax.set_xticks(sorted(top["r_star"].unique()))
        ax.set_title(f"{title} of learned K (r = {int(top['rank'].max())})")
    axes[0].set_ylabel("recovered rank")
    axes[0].legend(fontsize=7)
    _over_training(axes[2], trace, teachers)
    plain_log_axis(axes[2], "x")
    axes[2].set_xlabel("training step")
    axes[2].set_ylabel("R̃_eff of learned K (median over seeds)")
    axes[2].set_title("over training (colour: r*, line: teacher)")
    axes[2].legend(fontsize=7, ncol=2, loc="center right", bbox_to_anchor=(1, 0.71))
    return fig
