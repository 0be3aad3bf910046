"""A1 recovery: R̃_eff and numerical rank of the learned A of the over-parameterized student
(r = N) over training, Adam against early-stopped small-init GD."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import MaxNLocator

from attnrank.core.columns import ENERGY_EFFECTIVE_RANK, numerical_rank
from attnrank.core.quantities import median_over_seeds
from attnrank.core.style import PALETTE, plain_log_axis, shared_legend
from attnrank.entropic.jobs import ADAM, GD

PAPER = "A"
TABLES = ('entropic_surrogate_trace',)  # the tables this figure reads (by file stem)


def plot(tables: dict[str, pd.DataFrame], params: dict[str, Any]) -> plt.Figure:
    df = tables["entropic_surrogate_trace"]
    tau, low = float(params["headline_tau"]), min(float(t) for t in params["taus"])
    cols = [(ENERGY_EFFECTIVE_RANK, "energy effective rank R̃_eff"),
            (numerical_rank(tau), f"numerical rank (τ = {tau:g})")]
    if low != tau:  # the smallest τ of the config, where the numerical rank counts the most
        cols.append((numerical_rank(low), f"numerical rank (τ = {low:g})"))
    cols = [c for c in cols if c[0] in df.columns]
    fig = plt.figure(figsize=(4.2 * len(cols), 4.0))
    grid = fig.add_gridspec(2, len(cols), height_ratios=[1, 0.1])
    axes = [fig.add_subplot(grid[0, i]) for i in range(len(cols))]
    styles = {ADAM: "-", GD: "--"}
    for ax, (col, label) in zip(axes, cols, strict=True):
        for i, (r_star, part) in enumerate(sorted(df.groupby("r_star"))):
            color = PALETTE[i % len(PALETTE)]
            for opt, g in sorted(part.groupby("optimizer")):
                med = median_over_seeds(g, "step", col).reset_index().sort_values("step")
                ax.plot(med["step"], med[col], color=color, ls=styles.get(opt, ":"), lw=1.4,
                        label=f"r* = {r_star}, {opt}")
                if opt == GD and "early_stopped_step" in g.columns:
                    stop = float(g["early_stopped_step"].median())
                    at = med.iloc[(med["step"] - stop).abs().argsort().iloc[0]]
                    ax.scatter([at["step"]], [at[col]], marker="v", color=color, s=40, zorder=5)
            ax.axhline(r_star, color=color, lw=0.6, ls=":")
        plain_log_axis(ax, "x")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("training step")
        ax.set_title(label)
    axes[0].set_ylabel("rank of the learned A (median over seeds)")
    shared_legend(fig.add_subplot(grid[1, :]), axes)
    n = int(df["rank"].max())
    fig.suptitle(f"Recovery of r* by the r = {n} surrogate: Adam (solid) vs small-init GD "
                 "(dashed, ▼ early stop)")
    return fig
