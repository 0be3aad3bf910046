"""A3 recovery: rank of the learned kernel K = W_Q W_Kᵀ of the r = d student against the true r*
(identity line), and R̃_eff over training."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import pandas as pd

from attnrank.columns import ENERGY_EFFECTIVE_RANK, numerical_rank
from attnrank.figures.style import PALETTE
from attnrank.quantities import median_over_seeds


def _label(t: str, b: float) -> str:
    return "linear" if t == "linear" else f"softmax β={b:g}"


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
            ax.scatter(g["r_star"] + 0.08 * i, g[col], color=PALETTE[i], alpha=0.35, s=12)
            ax.plot(med["r_star"], med[col], marker=markers[i % len(markers)], color=PALETTE[i],
                    label=_label(t, b), lw=1.2)
        lim = float(top["r_star"].max()) + 1
        ax.plot([0, lim], [0, lim], color="black", ls="--", lw=0.8, label="identity")
        ax.set_xlabel("true r*")
        ax.set_title(f"{title} of learned K (r = {int(top['rank'].max())})")
    axes[0].set_ylabel("recovered rank")
    axes[0].legend(fontsize=7)
    styles = ["-", "--", "-.", ":"]
    for j, (t, b) in enumerate(teachers):
        g = trace[(trace["teacher"] == t) & (trace["beta"] == b)]
        for i, (_, part) in enumerate(sorted(g.groupby("r_star"))):
            med = median_over_seeds(part, "step", ENERGY_EFFECTIVE_RANK).reset_index()
            axes[2].plot(med["step"], med[ENERGY_EFFECTIVE_RANK], color=PALETTE[i],
                         ls=styles[j % len(styles)], lw=1.2,
                         label=f"{_label(t, b)}" if i == 0 else None)
    axes[2].set_xscale("log")
    axes[2].set_xlabel("training step")
    axes[2].set_ylabel("R̃_eff of learned K (median over seeds)")
    axes[2].set_title("over training (colour: r*, line: teacher)")
    axes[2].legend(fontsize=7)
    return fig
