"""B6 and TT-7: the families beyond the single head against the total feature budget F.

Top row: held-out sequence accuracy against F per instance (B2's random tokens at each m, B3's
witness suite), one line per family (seed median) with every seed drawn as a point, the single
nonnegative head (``kernel``, same recipe) in black. Bottom row: the worst-case error |ŷ − t|
(dotted: the exactness cut-off). Right column: the F reaching the target accuracy against m per
line, on the grid (top, TT-6's fit log2 F = a + b·m) and read between grid points (bottom,
docs/methods.md §3.9; censored cells hollow), both slopes with their seed-bootstrap intervals in
the legend; B2's own single head (its 6000-step recipe) dashed."""

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


def _coinciding(g: pd.DataFrame, lines: list[str]) -> list[str]:
    """Groups of lines whose lattice fits coincide (equal a and b), as text: "H=2 = differential"."""
    fits = {line: g[g["line"] == line].iloc[0] for line in lines}
    groups: list[list[str]] = []
    for line, r in fits.items():
        if not np.isfinite(r["b"]):
            continue
        for grp in groups:
            q = fits[grp[0]]
            if np.isclose(q["a"], r["a"]) and np.isclose(q["b"], r["b"]):
                grp.append(line)
                break
        else:
            groups.append([line])
    return [" = ".join(grp) for grp in groups if len(grp) > 1]


def _growth(ax: plt.Axes, g: pd.DataFrame, lines: list[str], reading: str) -> None:
    """One reading of the budget needed per m and line: ``lattice`` (the smallest F of the grid
    whose median reaches the target, TT-6's fit) or ``interp`` (between grid points, censored
    cells hollow at the grid's edge). Points of a line sit side by side and fitted lines are
    offset by a few percent in F, so coinciding lines stay visible (named in the panel)."""
    n = len(lines)
    offsets = (np.arange(n) - (n - 1) / 2) / max(n, 2)
    for line, k in zip(lines, offsets, strict=True):
        part = g[g["line"] == line].sort_values("m")
        color, marker = _style(line)
        ls = "--" if line == B2_LINE else "-"
        r = part.iloc[0]
        x = part["m"].to_numpy(float) + 0.9 * k
        if reading == "lattice":
            y, a, b, shown = part["smallest"].to_numpy(float), r["a"], r["b"], np.isfinite(
                part["smallest"].to_numpy(float))
        else:
            y, a, b = 2.0 ** part["log2_interp"].to_numpy(float), r["a_interp"], r["b_interp"]
            shown = part["censored"].to_numpy() == ""
            below = part["censored"].to_numpy() == "below"
            ax.plot(x[below], part["smallest"].to_numpy(float)[below], marker=marker, ls="none",
                    mfc="none", color=color, ms=6, zorder=4)
        ax.plot(x[shown], y[shown], marker=marker, ls="none", color=color, ms=6, zorder=4)
        if np.isfinite(b):
            xs = np.linspace(x[shown].min(), x[shown].max(), 20)
            ax.plot(xs, 2.0 ** (a + b * xs + 0.12 * k), color=color, ls=ls, lw=1.2)
    if not np.isfinite(g["smallest"]).any():
        ax.text(0.5, 0.5, "no line reaches the target\non this grid", transform=ax.transAxes,
                ha="center", va="center", fontsize=8, color="grey")
    rank_axis(ax, "y")
    ax.set_xticks(sorted(g["m"].unique()))
    ax.set_xlabel("token width m")
    if reading == "lattice":
        ax.set_title("budget needed vs m, on the grid: fit log$_2$ F = a + b·m", fontsize=9)
        same = _coinciding(g, lines)
        if same:  # drawn offset; named under the axis, off the data
            ax.set_xlabel("token width m\n(same fit, drawn offset: " + "; ".join(same) + ")",
                          fontsize=8)
    else:
        ax.set_title("read between grid points (hollow: censored below)", fontsize=9)
        ax.set_ylabel("F̂ (between grid points)")


def _growth_legend(ax: plt.Axes, g: pd.DataFrame, lines: list[str], target: float) -> None:
    """One entry per line: its marker and both slopes with their intervals."""
    def slope(b: float, lo: float, hi: float, pts: int) -> str:
        return f"{b:.2f} [{lo:.2f}, {hi:.2f}] ({pts} m)" if np.isfinite(b) else f"none ({pts} m)"

    handles, labels = [], []
    for line in lines:
        r = g[g["line"] == line].iloc[0]
        color, marker = _style(line)
        handles.append(plt.Line2D([], [], color=color, marker=marker,
                                  ls="--" if line == B2_LINE else "-"))
        labels.append(f"{line}: {slope(r['b'], r['lo'], r['hi'], int(r['points']))}; "
                      f"{slope(r['b_interp'], r['lo_interp'], r['hi_interp'], int(r['points_interp']))}")
    ax.axis("off")
    ax.legend(handles, labels, loc="upper center", fontsize=6.5, frameon=False,
              title=f"F reaching median accuracy {target:g}: slope b [90% seed-bootstrap\n"
                    "interval] (m fitted), on the grid; between grid points", title_fontsize=7)


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
    top[0].set_ylabel("sequence accuracy\n(causal_final: last position)")
    mid[0].set_ylabel("worst-case error |ŷ − t|")
    g = growth[np.isclose(growth["target"], target)]
    lines = list(g["line"].unique())
    lattice = fig.add_subplot(grid[0, n])
    _growth(lattice, g, lines, "lattice")
    _growth(fig.add_subplot(grid[1, n], sharey=lattice), g, lines, "interp")
    lattice.set_ylabel(f"F with median accuracy ≥ {target:g}")
    _growth_legend(fig.add_subplot(grid[2, n]), g, lines, target)
    shared_legend(fig.add_subplot(grid[2, :n]), top, ncol=8, fontsize=7)
    return fig
