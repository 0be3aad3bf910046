"""B2: sequence accuracy against feature rank r per m, every dense seed beside it, and the smallest
r reaching the target accuracy against m (log r): the seed median, every seed's own, the TT-6 fit
log2 r = a + b·m with b's bootstrap interval over seeds, the reading between grid points with its
fit (table ``minip_rank_growth``, docs/methods.md §3.9), and the 2^m line."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from attnrank.core.columns import TEST_SEQUENCE_ACCURACY, WORST_CASE_ERROR
from attnrank.core.style import (
    PALETTE,
    dense_seeds,
    rank_axis,
    seed_points_and_median,
    shared_legend,
)
from attnrank.minip.families import DENSE
from attnrank.minip.growth import accuracy_cube, smallest_reaching
from attnrank.minip.quantities import kernel_rows

PAPER = "B"
TABLES = ('minip_rank_vs_m', 'minip_constructions', 'minip_rank_growth')  # read (by file stem)


def _accuracy(ax: plt.Axes, ax_dense: plt.Axes, df: pd.DataFrame, target: float) -> None:
    """Kernel accuracy against r (seeds and median) per m; the dense seeds per m beside it."""
    groups = []
    for i, (m, part) in enumerate(sorted(kernel_rows(df).groupby("m"))):
        color = PALETTE[i % len(PALETTE)]
        seed_points_and_median(ax, part, "rank", TEST_SEQUENCE_ACCURACY, color, f"m = {m}")
        dense = df[(df["model"] == DENSE) & (df["m"] == m)][TEST_SEQUENCE_ACCURACY]
        groups.append((f"{m}", dense, color))
    for a in (ax, ax_dense):
        a.axhline(target, color="grey", ls=":", lw=1)
    rank_axis(ax, "x", sorted(kernel_rows(df)["rank"].unique()))
    ax.set_xlabel("feature rank r")
    ax.set_ylabel("sequence accuracy (N = 3)")
    ax.set_title(f"kernel attention: accuracy vs r (dotted: target {target:g})")
    dense_seeds(ax_dense, groups, "dense softmax\n(every seed)")
    ax_dense.tick_params(axis="x", labelrotation=90)  # one label per m, side by side
    ax_dense.set_xlabel("m")


def _seed_crossings(ax: plt.Axes, df: pd.DataFrame, target: float, width: float) -> None:
    """Every seed's own smallest r reaching ``target``, per m, side by side (offsets within
    ``width``): filled where reached, hollow at the largest r tried where not."""
    ms, ranks, acc = accuracy_cube(df)
    n_seeds = acc.shape[-1]
    offsets = (np.arange(n_seeds) - (n_seeds - 1) / 2) * width / max(n_seeds, 2)
    for s in range(n_seeds):
        r = smallest_reaching(acc[:, :, s], ranks, target)
        ran = ~np.all(np.isnan(acc[:, :, s]), axis=-1)
        tried = np.array([ranks[~np.isnan(row)].max() if ran[i] else np.nan
                          for i, row in enumerate(acc[:, :, s])])
        hit, miss = ran & np.isfinite(r), ran & ~np.isfinite(r)
        ax.scatter(ms[hit] + offsets[s], r[hit], s=10, color=PALETTE[0], linewidths=0,
                   zorder=6, label="each seed's own smallest r" if s == 0 else None)
        ax.scatter(ms[miss] + offsets[s], tried[miss], s=12, marker="^", color=PALETTE[3],
                   linewidths=0, zorder=6,
                   label="seed not reaching it (largest r tried)" if s == 0 and miss.any() else None)


def _fit_line(ax: plt.Axes, g: pd.DataFrame, level: float, n_boot: int, interp: bool) -> None:
    """A least-squares line of log2 r on m from the growth table's rows ``g`` (one target):
    TT-6's over the m that reach the target, or (``interp``) the reading between grid points'
    over the uncensored m; b and its bootstrap interval in the legend (nothing to draw with
    fewer than two such m)."""
    r = g.iloc[0]
    sfx = "_interp" if interp else ""
    a, b, lo, hi = (float(r[c + sfx]) for c in ("a", "b", "lo", "hi"))
    points = int(r["points" + sfx])
    if not np.isfinite(b):
        return
    used = g["censored"] == "" if interp else np.isfinite(g["smallest"])
    x = np.linspace(g["m"][used].min(), g["m"][used].max(), 50)
    what = "between grid points" if interp else f"on the grid ({level:.0%} interval, {n_boot} resamples)"
    ax.plot(x, 2.0 ** (a + b * x), color=PALETTE[2] if interp else PALETTE[0], lw=1.2,
            ls="--" if interp else "-",
            label=f"fit {what}: b = {b:.2f} [{lo:.2f}, {hi:.2f}] ({points} m)")


def _rank_needed(ax: plt.Axes, df: pd.DataFrame, cons: pd.DataFrame, growth: pd.DataFrame,
                 target: float, cut: float, params: dict[str, Any]) -> None:
    """The smallest trained r reaching ``target`` per m (seed median and every seed), TT-6's fit
    on log2 r with b's bootstrap interval, the reading between grid points with its fit, the 2^m
    line and the exact constructions."""
    level, n_boot = float(params["interval_level"]), int(params["bootstrap_samples"])
    g = growth[np.isclose(growth["target"], target)].sort_values("m")
    cross = pd.Series(g["smallest"].to_numpy(float), index=g["m"].to_numpy())
    reached = np.isfinite(cross.to_numpy())
    ms = np.array(sorted(df["m"].unique()))
    ax.plot(ms, 2.0**ms, color="black", ls="--", lw=1, label="$2^m$ (exact construction)")
    found = cross[reached]
    ax.plot(found.index, found.to_numpy(), "o", color=PALETTE[0], ms=9, mfc="none", zorder=5,
            label=f"smallest r with median (over seeds) accuracy ≥ {target:g}")
    inside = g[g["censored"] == ""]
    ax.plot(inside["m"], 2.0 ** inside["log2_interp"], "D", color=PALETTE[2], ms=5, zorder=6,
            label="the same read between grid points (uncensored m)")
    _seed_crossings(ax, df, target, width=0.9)
    _fit_line(ax, g, level, n_boot, interp=False)
    _fit_line(ax, g, level, n_boot, interp=True)
    missing = cross.index[~reached]
    if len(missing):
        tried = kernel_rows(df).groupby("m")["rank"].max()
        ax.scatter(missing, tried[missing.astype(int)], marker="^", s=80, facecolors="none",
                   edgecolors=PALETTE[3], zorder=5, label="median not reaching it (largest r tried)")
    exp = cons[(cons["construction"] == "exp_features") & (cons["eval_set"] == "all_triples")]
    exact = exp[exp[WORST_CASE_ERROR] < cut]
    ax.scatter(exact["m"], exact["rank"], marker="*", s=80, color="black", zorder=5,
               label="construction exact (all triples)")
    rank_axis(ax, "y")
    ax.set_xticks(sorted(set(ms) | {int(m) for m in exact["m"]}))
    ax.set_xlabel("token width m")
    ax.set_ylabel("feature rank r")
    ax.set_title("rank needed vs m")


def plot(tables: dict[str, pd.DataFrame], params: dict[str, Any]) -> plt.Figure:
    df, cons = tables["minip_rank_vs_m"], tables["minip_constructions"]
    target, cut = float(params["target_accuracy"]), float(params["worst_case_cutoff"])
    fig = plt.figure(figsize=(11, 5.8))
    grid = fig.add_gridspec(2, 3, width_ratios=[4, 1.3, 4], height_ratios=[1, 0.32])
    ax0, ax_dense, ax1 = (fig.add_subplot(grid[0, i]) for i in range(3))
    ax_dense.sharey(ax0)
    _accuracy(ax0, ax_dense, df, target)
    _rank_needed(ax1, df, cons, tables["minip_rank_growth"], target, cut, params["rank_growth"])
    shared_legend(fig.add_subplot(grid[1, :]), [ax0, ax1], ncol=4, fontsize=7)  # off the data
    return fig
