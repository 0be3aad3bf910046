"""Restart (trap) study: training loss against step, one panel per case, every seed of every
variant drawn (colour: variant; the recipe is ``original``), all from the same inits. A seed that
misses the case's claim criterion at the end of its run is dashed and ends in a cross labelled
with its seed index; a passing seed is solid and ends in a dot."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

from attnrank.core.style import PALETTE, plain_log_axis, shared_legend
from attnrank.minip.restarts import ORIGINAL, passes, variant_label

PAPER = "B"
TABLES = ('minip_restarts',)  # the tables this figure reads (by file stem)


PANEL_WIDTH = 3.6
DECADES_FOR_DETAIL = 100  # a loss axis spanning more than this ratio gets 10^k ticks only
MIN_WIDTH = 7.0  # one panel still fits the title and legend


def _loss_axis(ax: plt.Axes) -> None:
    """Log y axis with plain labels: 1, 2, 3, 5 × 10^k over at most two decades, else 10^k only
    (written out, e.g. 0.001), unlabelled minor ticks."""
    plain_log_axis(ax, "y")
    lo, hi = ax.get_ylim()
    if hi / lo > DECADES_FOR_DETAIL:
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0,)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())


def _panel(ax: plt.Axes, part: pd.DataFrame, colours: dict[str, Any]) -> None:
    fin = part[part["final"]].copy()
    fin["passes"] = passes(fin)
    ok = {(r.variant, int(r.seed)): bool(r.passes) for r in fin.itertuples()}
    for (variant, seed), curve in part.groupby(["variant", "seed"], sort=False):
        curve = curve.sort_values("step")
        good = ok.get((variant, int(seed)), True)
        colour = colours[variant]
        ax.plot(curve["step"], curve["train_loss"], color=colour, lw=1.0 if good else 1.4,
                ls="-" if good else "--", alpha=0.75)
        end = curve.iloc[-1]
        ax.scatter([end["step"]], [end["train_loss"]], color=colour, marker="o" if good else "X",
                   s=18 if good else 46, zorder=4, edgecolors="black", linewidths=0.4)
        if not good:
            ax.annotate(f"s{int(seed)}", (end["step"], end["train_loss"]), xytext=(4, 0),
                        textcoords="offset points", fontsize=6, color=colour, va="center")
    c = part.iloc[0]
    rule = "≥" if c["criterion_rule"] == "at_least" else "<"
    n_fail = int((~fin.loc[fin["variant"] == ORIGINAL, "passes"]).sum())
    n = int(fin.loc[fin["variant"] == ORIGINAL, "seed"].nunique())
    ax.set_title(f"{c['case']}: {c['model']}, {c['experiment']} {c['instance']} ({c['claim']})\n"
                 f"criterion {c['criterion_metric'].removeprefix('test_')} {rule} "
                 f"{c['criterion_threshold']:g}; recipe fails {n_fail}/{n} seeds", fontsize=8)
    _loss_axis(ax)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=5, integer=True))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:,.0f}"))
    ax.set_xlabel("optimizer step")
    ax.set_xlim(0, part["step"].max() * 1.08)


def plot(tables: dict[str, pd.DataFrame], params: dict[str, Any]) -> plt.Figure:
    df = tables["minip_restarts"]
    cases = list(dict.fromkeys(df["case"]))
    variants = list(dict.fromkeys(df["variant"]))
    colours = {v: PALETTE[i % len(PALETTE)] for i, v in enumerate(variants)}
    fig = plt.figure(figsize=(max(PANEL_WIDTH * len(cases) + 0.6, MIN_WIDTH), 4.6))
    grid = fig.add_gridspec(2, len(cases), height_ratios=[12, 1])
    axes = [fig.add_subplot(grid[0, i]) for i in range(len(cases))]
    for ax, case in zip(axes, cases, strict=True):
        _panel(ax, df[df["case"] == case], colours)
    axes[0].set_ylabel("training loss (MSE of the step's batch)")
    first = df.groupby("variant", sort=False)[["lr_factor", "step_factor"]].first()
    for v in variants:  # proxies: a solid line per variant, then the two end markers
        label = f"{v} ({variant_label(float(first.at[v, 'lr_factor']), int(first.at[v, 'step_factor']))})"
        axes[0].plot([], [], color=colours[v], lw=1.4, label=label)
    for marker, ls, label in (("o", "-", "passes at the end"), ("X", "--", "fails (seed index)")):
        axes[0].add_line(Line2D([], [], color="grey", marker=marker, ls=ls, label=label))
    shared_legend(fig.add_subplot(grid[1, :]), axes, ncol=min(len(variants) + 2, 5))
    fig.suptitle("Restart study: every seed from the same init under the recipe and each "
                 "variant\n(dashed, ×: misses the claim's criterion at the end of its run)",
                 fontsize=9)
    return fig
