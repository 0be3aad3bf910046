"""B6 and TT-7: the families beyond the single head against the total feature budget F.

Top row: held-out sequence accuracy against F per instance (B2's random tokens at each m, B3's
witness suite), one line per family (seed median) with every seed drawn as a point, the single
nonnegative head (``kernel``, same recipe) in black. Middle row: the worst-case error |ŷ − t|
(dotted: the exactness cut-off). Right: the smallest F reaching the target accuracy against m per
line, with TT-6's fit log2 F = a + b·m (b and its seed-bootstrap interval in the legend) and B2's
own single head (its 6000-step recipe) dashed."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from attnrank.core.columns import TEST_SEQUENCE_ACCURACY, TEST_WORST_CASE_ERROR
from attnrank.core.style import PALETTE, rank_axis, seed_points_and_median, shared_legend

PAPER = "B"
TABLES = ('minip_beyond', 'minip_beyond_growth')  # the tables this figure reads (by file stem)

PLAIN_LINE, B2_LINE = "kernel", "kernel (B2)"


def _colors(labels: list[str]) -> dict[str, Any]:
    """The single head black, every other line its own colour (in table order)."""
    others = [x for x in labels if x != PLAIN_LINE]
    return {PLAIN_LINE: "black", B2_LINE: "grey"} | {
        x: PALETTE[i % len(PALETTE)] for i, x in enumerate(others)}


def _instance_title(part: pd.DataFrame) -> str:
    r = part.iloc[0]
    if r["data_kind"] == "witness":
        return f"witness suite (m = {int(r['m'])}, {int(r['steps_total'])} full-batch steps)"
    return f"random tokens, m = {int(r['m'])} ({int(r['steps_total'])} steps)"


def _instances(df: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """(instance, rows): random-token instances by m, then the witness suite."""
    order = sorted(df["instance"].unique(),
                   key=lambda i: (df[df["instance"] == i]["data_kind"].iloc[0] == "witness",
                                  int(df[df["instance"] == i]["m"].iloc[0])))
    return [(i, df[df["instance"] == i]) for i in order]


def _growth(ax: plt.Axes, growth: pd.DataFrame, colors: dict[str, Any], target: float) -> None:
    g = growth[np.isclose(growth["target"], target)]
    for line, part in g.groupby("line", sort=False):
        part = part.sort_values("m")
        reached = part[np.isfinite(part["smallest"])]
        color = colors.get(line, "grey")
        ls = "--" if line == B2_LINE else "-"
        r = part.iloc[0]
        label = (f"{line}: b = {r['b']:.2f} [{r['lo']:.2f}, {r['hi']:.2f}]"
                 if np.isfinite(r["b"]) else f"{line}: no slope ({int(r['points'])} m reach it)")
        ax.plot(reached["m"], reached["smallest"], marker="o", ls="none", color=color, ms=5)
        if np.isfinite(r["b"]):
            x = np.linspace(reached["m"].min(), reached["m"].max(), 20)
            ax.plot(x, 2.0 ** (r["a"] + r["b"] * x), color=color, ls=ls, lw=1.2, label=label)
        else:
            ax.plot([], [], color=color, ls=ls, label=label)
    rank_axis(ax, "y")
    ax.set_xticks(sorted(g["m"].unique()))
    ax.set_xlabel("token width m")
    ax.set_ylabel(f"smallest F with median accuracy ≥ {target:g}")
    ax.set_title("budget needed vs m (fit log$_2$ F = a + b·m)")
    ax.legend(fontsize=6, loc="upper left")


def plot(tables: dict[str, pd.DataFrame], params: dict[str, Any]) -> plt.Figure:
    df, growth = tables["minip_beyond"], tables["minip_beyond_growth"]
    target, cut = float(params["target_accuracy"]), float(params["worst_case_cutoff"])
    colors = _colors(list(df["label"].unique()))
    instances = _instances(df)
    n = len(instances)
    fig = plt.figure(figsize=(3.2 * (n + 1.4), 7.4))
    grid = fig.add_gridspec(3, n + 1, height_ratios=[1, 1, 0.28], width_ratios=[1] * n + [1.4])
    top = [fig.add_subplot(grid[0, i]) for i in range(n)]
    mid = [fig.add_subplot(grid[1, i]) for i in range(n)]
    for i, (_, part) in enumerate(instances):
        budgets = sorted(part["rank"].unique())
        for label, rows in part.groupby("label", sort=False):
            lw, ms = (2.4, 5) if label == PLAIN_LINE else (1.2, 3)
            seed_points_and_median(top[i], rows, "rank", TEST_SEQUENCE_ACCURACY, colors[label],
                                   str(label), lw=lw, ms=ms)
            seed_points_and_median(mid[i], rows, "rank", TEST_WORST_CASE_ERROR, colors[label],
                                   str(label), lw=lw, ms=ms)
        top[i].axhline(target, color="grey", ls=":", lw=1)
        mid[i].axhline(cut, color="grey", ls=":", lw=1)
        for ax in (top[i], mid[i]):
            rank_axis(ax, "x", budgets)
            ax.set_xlabel("total feature budget F")
        top[i].set_ylim(-0.03, 1.03)
        top[i].set_title(_instance_title(part), fontsize=9)
        mid[i].set_yscale("log")
    top[0].set_ylabel("sequence accuracy (causal_final: last position)")
    mid[0].set_ylabel("worst-case error |ŷ − t|")
    _growth(fig.add_subplot(grid[0:2, n]), growth, colors, target)
    shared_legend(fig.add_subplot(grid[2, :n]), top, ncol=8, fontsize=7)
    return fig
