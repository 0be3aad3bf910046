"""B2: sequence accuracy against feature rank r per m, every dense seed beside it, and the smallest
r reaching the target accuracy against m (log r): the seed median, every seed's own, the TT-6 fit
log2 r = a + b·m with b's bootstrap interval over seeds, and the 2^m line."""

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
from attnrank.minip.growth import Growth, accuracy_cube, rank_growth, smallest_reaching
from attnrank.minip.quantities import kernel_rows

PAPER = "B"
TABLES = ('minip_rank_vs_m', 'minip_constructions')  # the tables this figure reads (by file stem)


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
    ax.legend(fontsize=8, loc="lower right")
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


def _fit_line(ax: plt.Axes, g: Growth, level: float, n_boot: int) -> None:
    """The least-squares line log2 r = a + b·m over the m that reach the target, b and its
    bootstrap interval in the legend (nothing to draw with fewer than two such m)."""
    if not np.isfinite(g.b):
        return
    x = g.ms[np.isfinite(g.smallest)]
    x = np.linspace(x.min(), x.max(), 50)
    ax.plot(x, 2.0 ** (g.a + g.b * x), color=PALETTE[0], lw=1.2,
            label=f"fit log$_2$ r = a + b·m: b = {g.b:.2f}, {level:.0%} interval "
                  f"[{g.lo:.2f}, {g.hi:.2f}]\n({n_boot} bootstrap resamples of the seeds, "
                  f"{g.points} m)")


def _rank_needed(ax: plt.Axes, df: pd.DataFrame, cons: pd.DataFrame, target: float,
                 cut: float, growth: dict[str, Any]) -> None:
    """The smallest trained r reaching ``target`` per m (seed median and every seed), its fit on
    log2 r with b's bootstrap interval, the 2^m line and the exact constructions."""
    level, n_boot = float(growth["interval_level"]), int(growth["bootstrap_samples"])
    g = rank_growth(df, [target], n_boot, level)[target]
    cross = pd.Series(g.smallest, index=g.ms)  # inf where no rank in the grid reaches the target
    reached = np.isfinite(cross.to_numpy())
    ms = np.array(sorted(df["m"].unique()))
    ax.plot(ms, 2.0**ms, color="black", ls="--", lw=1, label="$2^m$ (exact construction)")
    found = cross[reached]
    ax.plot(found.index, found.to_numpy(), "o", color=PALETTE[0], ms=9, mfc="none", zorder=5,
            label=f"smallest r with median (over seeds) accuracy ≥ {target:g}")
    _seed_crossings(ax, df, target, width=0.9)
    _fit_line(ax, g, level, n_boot)
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
    fig = plt.figure(figsize=(11, 5))
    grid = fig.add_gridspec(2, 3, width_ratios=[4, 1.3, 4], height_ratios=[1, 0.2])
    ax0, ax_dense, ax1 = (fig.add_subplot(grid[0, i]) for i in range(3))
    ax_dense.sharey(ax0)
    _accuracy(ax0, ax_dense, df, target)
    _rank_needed(ax1, df, cons, target, cut, params["rank_growth"])
    shared_legend(fig.add_subplot(grid[1, :]), [ax1], ncol=3, fontsize=7)  # off the data
    return fig
