"""A4: data-only rank estimates against the true r*, one row per teacher, one column per estimator
(one line per S, identity dashed): R̃_eff (o, solid) and the numerical rank (x, dotted) in the
same panel, except E2's numerical rank, which sits at its cap wherever the unfolding is noisy;
the last column is the sufficient-scale frontier of the estimators over S."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from attnrank.core.columns import ENERGY_EFFECTIVE_RANK, ENTROPY_EFFECTIVE_RANK, numerical_rank
from attnrank.core.quantities import median_over_seeds, recovery_frontier
from attnrank.core.style import rank_axis, shared_legend
from attnrank.entropic.jobs import E1, E2, E2_DEBIASED, ESTIMATORS, LINEAR, MIXER, SOFTMAX

PAPER = "A"
TABLES = ('entropic_predict',)  # the tables this figure reads (by file stem)


TITLES = {E1: "E1 (V known)", E2: "E2 (V unknown, unfolding)", E2_DEBIASED: "E2 debiased",
          MIXER: "realized mixer"}
MEASURES = (("o", "-"), ("x", ":"))  # (marker, line) of R̃_eff and of the numerical rank
NUMERICAL_DRAWN = (E1, E2_DEBIASED, MIXER)  # E2's numerical rank sits at its cap: not drawn
FRONTIER = ((E1, "C0"), (E2, "C1"), (E2_DEBIASED, "C2"))  # estimators of the frontier column
TITLE_PT, LABEL_PT, TICK_PT = 12, 10.5, 9.5


def _teacher_name(t: str, b: float) -> str:
    return LINEAR if t == LINEAR else f"{SOFTMAX} β={b:g}"


def _lines(ax: plt.Axes, g: pd.DataFrame, col: str, row: int, color: dict) -> None:
    """``col`` (median over seeds) against r*, one line per S, side by side where they coincide;
    ``row`` 0 draws it as R̃_eff (o, solid), 1 as the numerical rank (x, dotted)."""
    marker, line = MEASURES[row]
    groups = sorted(g.groupby("S"))
    for i, (s_, gs) in enumerate(groups):
        med = median_over_seeds(gs, "r_star", col).reset_index()
        dodge = 0.15 * (i - (len(groups) - 1) / 2)
        ax.plot(med["r_star"] + dodge, med[col], marker=marker, ms=4.5, ls=line, lw=1.3,
                color=color.get(s_, "black"))


def _estimate_panel(ax: plt.Axes, g: pd.DataFrame, est: str, tau: float, color: dict,
                    lim: float) -> None:
    """One estimator against r* over the identity (dashed): its R̃_eff, its numerical rank at
    ``tau`` (unless E2's) and, for the realized mixer, its entropy rank."""
    ax.plot([0, lim], [0, lim], color="black", ls="--", lw=0.8, zorder=1)
    _lines(ax, g, ENERGY_EFFECTIVE_RANK, 0, color)
    if est in NUMERICAL_DRAWN:
        _lines(ax, g, numerical_rank(tau), 1, color)
    if est == MIXER:
        ent = median_over_seeds(g, "r_star", ENTROPY_EFFECTIVE_RANK).reset_index()
        ax.plot(ent["r_star"], ent[ENTROPY_EFFECTIVE_RANK], marker="s", ms=4, ls="--",
                color="C3")
    ax.set_xticks(sorted(g["r_star"].unique()))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.tick_params(labelsize=TICK_PT)


def _legend_entries(ax: plt.Axes, color: dict, mixer_inputs: list, mixer_tau: float,
                    tau: float, tol: float) -> None:
    """Proxy lines on ``ax`` for the shared legend: S by colour, the two measures by marker and
    line, the mixer, the identity and the frontier's estimators and tolerance."""
    for s_, c in color.items():
        ax.plot([], [], color=c, lw=3, label=f"S = {s_}")
    ax.plot([], [], color="gray", marker="o", ls="-", label="o, solid: R̃_eff")
    ax.plot([], [], color="gray", marker="x", ls=":",
            label=f"x, dotted: numerical rank (τ = {tau:g}; mixer τ = {mixer_tau:g}; not for E2)")
    for n in mixer_inputs:
        ax.plot([], [], color="black", lw=3, label=f"mixer: {n} inputs")
    ax.plot([], [], color="C3", marker="s", ls="--", label="mixer: entropy rank")
    ax.plot([], [], color="black", ls="--", lw=0.8, label="identity (estimate = r*)")
    for est, c in FRONTIER:
        ax.plot([], [], color=c, marker="o", label=f"S-frontier: {est}")
    ax.plot([], [], color="gray", ls=":", lw=1, label=f"S-frontier: tolerance {tol:g}")


def _frontier_panel(ax: plt.Axes, part: pd.DataFrame, tol: float) -> None:
    """The S-frontier: max over r* of |R̃_eff − r*| against S, per estimator, tolerance dotted."""
    for est, c in FRONTIER:
        g = part[part["estimator"] == est]
        if g.empty:
            continue
        worst = recovery_frontier(g)
        ax.plot(worst.index, np.maximum(worst.to_numpy(), 1e-4), marker="o", color=c,
                label=f"S-frontier: {est}")
    ax.axhline(tol, color="gray", ls=":", lw=1, label=f"S-frontier: tolerance {tol:g}")
    rank_axis(ax, "x", sorted(part[part["estimator"] != MIXER]["S"].unique()))
    ax.set_yscale("log")
    ax.set_ylabel("max over r* of |R̃_eff − r*|", fontsize=LABEL_PT)
    ax.tick_params(labelsize=TICK_PT)


def plot(tables: dict[str, pd.DataFrame], params: dict[str, Any]) -> plt.Figure:
    df = tables["entropic_predict"]
    tau, mixer_tau = float(params["headline_tau"]), float(params["saturation_tau"])
    tol = float(params["rank_tolerance"])
    teachers = sorted({(t, float(b)) for t, b in zip(df["teacher"], df["beta"], strict=True)})
    ncols = len(ESTIMATORS) + 1
    fig = plt.figure(figsize=(2.9 * ncols, 2.7 * len(teachers) + 0.6))
    grid = fig.add_gridspec(len(teachers) + 1, ncols, height_ratios=[1] * len(teachers) + [0.14])
    sizes = sorted(df[df["estimator"] != MIXER]["S"].unique())
    cmap = plt.get_cmap("viridis")
    color = {s: cmap(i / max(1, len(sizes) - 1)) for i, s in enumerate(sizes)}
    lim = float(df["r_star"].max()) + 1
    last = len(teachers) - 1
    for k, (t, b) in enumerate(teachers):
        part, name = df[(df["teacher"] == t) & (df["beta"] == b)], _teacher_name(t, b)
        for col, est in enumerate(ESTIMATORS):
            ax = fig.add_subplot(grid[k, col])
            _estimate_panel(ax, part[part["estimator"] == est], est,
                            mixer_tau if est == MIXER else tau, color, lim)
            if k == 0:
                ax.set_title(TITLES[est], fontsize=TITLE_PT)
            if col == 0:
                ax.set_ylabel(f"{name}\nrank estimate", fontsize=LABEL_PT)
            if k == last:
                ax.set_xlabel("true r* (S side by side)", fontsize=LABEL_PT)
        front = fig.add_subplot(grid[k, -1])
        _frontier_panel(front, part, tol)
        if k == 0:
            front.set_title("S-frontier (R̃_eff)", fontsize=TITLE_PT)
        if k == last:
            front.set_xlabel("S (sequences)", fontsize=LABEL_PT)
    legend = fig.add_subplot(grid[-1, :])
    mixer_inputs = sorted(df[df["estimator"] == MIXER]["S"].unique())
    _legend_entries(legend, color, mixer_inputs, mixer_tau, tau, tol)
    shared_legend(legend, [legend], ncol=5, fontsize=9.5)
    return fig
