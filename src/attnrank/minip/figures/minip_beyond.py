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


# every line its own colour and marker (the multihead lines in blues and green)
STYLE: dict[str, tuple[int | None, str]] = {
    PLAIN_LINE: (None, "o"), "H=2": (0, "s"), "H=4": (9, "D"), "H=8": (2, "^"),
    "differential": (3, "v"), "signed_linear": (4, "P"), "positional": (5, "X"),
    "causal_final": (1, "h"), B2_LINE: (7, "o")}


def _style(line: str) -> tuple[Any, str]:
    """(colour, marker) of a line: the single head black; a line not in STYLE grey circles."""
    index, marker = STYLE.get(line, (7, "o"))
    return ("black" if index is None else PALETTE[index % len(PALETTE)]), marker


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


def _growth(ax: plt.Axes, ax_legend: plt.Axes, growth: pd.DataFrame, target: float) -> None:
    """The smallest F reaching ``target`` per m and line (points side by side, so coinciding
    lines stay visible), each line's fit, and the fits' legend on ``ax_legend``."""
    g = growth[np.isclose(growth["target"], target)]
    lines = list(g["line"].unique())
    offsets = (np.arange(len(lines)) - (len(lines) - 1) / 2) * 0.9 / max(len(lines), 2)
    for line, dx in zip(lines, offsets, strict=True):
        part = g[g["line"] == line].sort_values("m")
        reached = part[np.isfinite(part["smallest"])]
        color, marker = _style(line)
        ls = "--" if line == B2_LINE else "-"
        r = part.iloc[0]
        label = (f"{line}: b = {r['b']:.2f} [{r['lo']:.2f}, {r['hi']:.2f}] ({int(r['points'])} m)"
                 if np.isfinite(r["b"]) else f"{line}: no slope ({int(r['points'])} m reach it)")
        ax.plot(reached["m"] + dx, reached["smallest"], marker=marker, ls="none", color=color,
                ms=6, zorder=4)
        if np.isfinite(r["b"]):
            x = np.linspace(reached["m"].min(), reached["m"].max(), 20)
            ax.plot(x, 2.0 ** (r["a"] + r["b"] * x), color=color, ls=ls, lw=1.2, label=label,
                    marker=marker, markevery=[0], ms=0)
        else:
            ax.plot([], [], color=color, ls=ls, marker=marker, label=label)
    rank_axis(ax, "y")
    ax.set_xticks(sorted(g["m"].unique()))
    ax.set_xlabel("token width m (points of a line side by side)")
    ax.set_ylabel(f"smallest F with median accuracy ≥ {target:g}")
    ax.set_title("budget needed vs m: fit log$_2$ F = a + b·m", fontsize=9)
    handles, labels = ax.get_legend_handles_labels()
    ax_legend.axis("off")
    ax_legend.legend(handles, labels, loc="upper center", fontsize=6.5, frameon=False,
                     title="b [90% seed-bootstrap interval]", title_fontsize=7)


def plot(tables: dict[str, pd.DataFrame], params: dict[str, Any]) -> plt.Figure:
    df, growth = tables["minip_beyond"], tables["minip_beyond_growth"]
    target, cut = float(params["target_accuracy"]), float(params["worst_case_cutoff"])
    instances = _instances(df)
    n = len(instances)
    fig = plt.figure(figsize=(3.2 * (n + 1.4), 8.2))
    grid = fig.add_gridspec(3, n + 1, height_ratios=[1, 1, 0.5], width_ratios=[1] * n + [1.4])
    top = [fig.add_subplot(grid[0, i]) for i in range(n)]
    mid = [fig.add_subplot(grid[1, i]) for i in range(n)]
    for i, (_, part) in enumerate(instances):
        budgets = sorted(part["rank"].unique())
        for label, rows in part.groupby("label", sort=False):
            lw, ms = (2.6, 6) if label == PLAIN_LINE else (1.2, 4)  # the reference as a halo
            color, marker = _style(str(label))
            for ax, col in ((top[i], TEST_SEQUENCE_ACCURACY), (mid[i], TEST_WORST_CASE_ERROR)):
                seed_points_and_median(ax, rows, "rank", col, color, str(label), marker=marker,
                                       lw=lw, ms=ms)
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
    _growth(fig.add_subplot(grid[0:2, n]), fig.add_subplot(grid[2, n]), growth, target)
    shared_legend(fig.add_subplot(grid[2, :n]), top, ncol=8, fontsize=7)
    return fig
