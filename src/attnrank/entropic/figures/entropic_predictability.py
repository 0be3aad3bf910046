"""A4: data-only rank estimates against the true r*, per estimator × teacher, one line per S
(identity dashed): R̃_eff and the numerical rank in separate rows, τ in every title; and the
sufficient-scale frontier of E2 over S."""

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
MEASURES = (("o", "-"), ("x", ":"))  # (marker, line) of the R̃_eff row and the numerical-rank row


def _teacher_name(t: str, b: float) -> str:
    return LINEAR if t == LINEAR else f"{SOFTMAX} β={b:g}"


def _estimate_panel(ax: plt.Axes, g: pd.DataFrame, col: str, row: int, color: dict,
                    lim: float, mixer: bool) -> None:
    """One estimator's ``col`` (median over seeds) against r*, one line per S, side by side where
    they coincide, over the identity (dashed); the mixer's R̃_eff panel (``row`` 0) also shows
    its entropy rank."""
    marker, line = MEASURES[row]
    ax.plot([0, lim], [0, lim], color="black", ls="--", lw=0.7, zorder=1)
    groups = sorted(g.groupby("S"))
    for i, (s_, gs) in enumerate(groups):
        med = median_over_seeds(gs, "r_star", col).reset_index()
        dodge = 0.15 * (i - (len(groups) - 1) / 2)
        ax.plot(med["r_star"] + dodge, med[col], marker=marker, ms=4, ls=line, lw=1.1,
                color=color.get(s_, "black"))
    if mixer and row == 0:
        ent = median_over_seeds(g, "r_star", ENTROPY_EFFECTIVE_RANK).reset_index()
        ax.plot(ent["r_star"], ent[ENTROPY_EFFECTIVE_RANK], marker="s", ms=3, ls="--",
                color="C3")
    ax.set_xticks(sorted(g["r_star"].unique()))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))


def _legend_entries(ax: plt.Axes, color: dict, mixer_inputs: list, mixer_tau: float,
                    tau: float) -> None:
    """Proxy lines on ``ax`` for the shared legend: S by colour, the two measures by marker and
    line, the mixer and the identity."""
    for s_, c in color.items():
        ax.plot([], [], color=c, lw=3, label=f"S = {s_}")
    ax.plot([], [], color="gray", marker="o", ls="-", label="o, solid: R̃_eff")
    ax.plot([], [], color="gray", marker="x", ls=":",
            label=f"x, dotted: numerical rank (τ = {tau:g}; mixer τ = {mixer_tau:g})")
    for n in mixer_inputs:
        ax.plot([], [], color="black", lw=3, label=f"mixer: {n} inputs")
    ax.plot([], [], color="C3", marker="s", ls="--", label="mixer: entropy rank")
    ax.plot([], [], color="black", ls="--", lw=0.7, label="identity (estimate = r*)")


def _frontier_panel(ax: plt.Axes, part: pd.DataFrame, tol: float, name: str) -> None:
    """The S-frontier: max over r* of |R̃_eff − r*| against S, per estimator, tolerance dotted."""
    for est, c in ((E1, "C0"), (E2, "C1"), (E2_DEBIASED, "C2")):
        g = part[part["estimator"] == est]
        if g.empty:
            continue
        worst = recovery_frontier(g)
        ax.plot(worst.index, np.maximum(worst.to_numpy(), 1e-4), marker="o", color=c, label=est)
    ax.axhline(tol, color="gray", ls=":", lw=1, label=f"tolerance {tol:g}")
    rank_axis(ax, "x", sorted(part[part["estimator"] != MIXER]["S"].unique()))
    ax.set_yscale("log")
    ax.set_title(f"S-frontier (R̃_eff) — {name}", fontsize=8)
    ax.set_xlabel("S (sequences)")
    ax.set_ylabel("max over r* of |R̃_eff − r*|")
    ax.legend(fontsize=6.5, loc="lower left")


def plot(tables: dict[str, pd.DataFrame], params: dict[str, Any]) -> plt.Figure:
    df = tables["entropic_predict"]
    tau, mixer_tau = float(params["headline_tau"]), float(params["saturation_tau"])
    tol = float(params["rank_tolerance"])
    teachers = sorted({(t, float(b)) for t, b in zip(df["teacher"], df["beta"], strict=True)})
    ncols = len(ESTIMATORS) + 1
    fig = plt.figure(figsize=(3.3 * ncols, 2.9 * 2 * len(teachers) + 0.5))
    grid = fig.add_gridspec(2 * len(teachers) + 1, ncols,
                            height_ratios=[1] * (2 * len(teachers)) + [0.12])
    sizes = sorted(df[df["estimator"] != MIXER]["S"].unique())
    cmap = plt.get_cmap("viridis")
    color = {s: cmap(i / max(1, len(sizes) - 1)) for i, s in enumerate(sizes)}
    lim = float(df["r_star"].max()) + 1
    for k, (t, b) in enumerate(teachers):
        part, name = df[(df["teacher"] == t) & (df["beta"] == b)], _teacher_name(t, b)
        for row in (0, 1):
            for col, est in enumerate(ESTIMATORS):
                ax = fig.add_subplot(grid[2 * k + row, col])
                mixer = est == MIXER
                t_ = mixer_tau if mixer else tau
                measure = "R̃_eff" if row == 0 else f"numerical rank, τ = {t_:g}"
                column = ENERGY_EFFECTIVE_RANK if row == 0 else numerical_rank(t_)
                _estimate_panel(ax, part[part["estimator"] == est], column, row, color, lim, mixer)
                ax.set_title(f"{TITLES[est]} — {name}\n{measure}", fontsize=8)
                if col == 0:
                    ax.set_ylabel("R̃_eff estimate" if row == 0 else "numerical-rank estimate")
                if row == 1:
                    ax.set_xlabel("true r* (S side by side)")
        _frontier_panel(fig.add_subplot(grid[2 * k:2 * k + 2, -1]), part, tol, name)
    legend = fig.add_subplot(grid[-1, :])
    mixer_inputs = sorted(df[df["estimator"] == MIXER]["S"].unique())
    _legend_entries(legend, color, mixer_inputs, mixer_tau, tau)
    shared_legend(legend, [legend], fontsize=7.5)
    return fig
