"""Appendix B's open problem (OPEN-4): the operator the trained language models realize, over
training. A row per rung (the appendix-B model, then each larger rung); in each, the k90 (singular
components holding 90 % of the energy) of the row-centred causal logit field Ẽ, of the residual
Ẽ − mean field (the structural prior removed) and of the static kernel W_Q W_Kᵀ, on one shared
log scale so the realized-versus-static gap reads across a row, and the prior share (the mean
field's share of Ẽ's energy). Per corpus (one colour each): the median over seeds of each run's
mean over layers and heads as a line, the range over seeds as a band; the outside reference's k90
ranges (pretrained LMs: Ẽ and W_Q W_Kᵀ) as grey bands on the panels they concern. Steps on a
symmetric-log axis (linear up to the first logged step), so the early collapse stays visible."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from attnrank.core.style import rank_axis, shared_legend
from attnrank.language.figures.language_rank_vs_complexity import corpus_colors
from attnrank.language.points import K90, LOGIT_FIELD, RESIDUAL_FIELD, STATIC, Measure, trace
from attnrank.language.realized import PRIOR, name, rungs, shape

PAPER = "A"
TABLES = ('language_field',)  # the tables this figure reads (by file stem)

K90_PANELS = (Measure(LOGIT_FIELD, K90), Measure(RESIDUAL_FIELD, K90), Measure(STATIC, K90))
ANCHOR = {LOGIT_FIELD: "anchor_field_k90", STATIC: "anchor_static_k90"}  # params' reference key


def _lines(ax: plt.Axes, field: pd.DataFrame, measure: Measure, color: dict[str, Any]) -> None:
    """Per corpus: the median over seeds at every logged step, and the seeds' range as a band."""
    t = trace(field, measure)
    for corpus, g in sorted(t.groupby("corpus")):
        by = g.groupby("step")["value"]
        med, lo, hi = by.median(), by.min(), by.max()
        ax.fill_between(med.index, lo, hi, color=color[corpus], alpha=0.18, lw=0, zorder=2)
        ax.plot(med.index, med.to_numpy(), color=color[corpus], lw=1.5, label=corpus, zorder=3)


def plot(tables: dict[str, pd.DataFrame], params: dict[str, Any]) -> plt.Figure:
    field = tables["language_field"]
    order = rungs(field)
    color = corpus_colors(list(field["corpus"].unique()))
    fig = plt.figure(figsize=(13.0, 3.1 * len(order) + 0.5))
    grid = fig.add_gridspec(len(order) + 1, 4, height_ratios=[1] * len(order) + [0.1])
    axes = []
    for i, rung in enumerate(order):
        part = field[field["rung"] == rung]
        sh = shape(part)
        row = [fig.add_subplot(grid[i, j]) for j in range(4)]
        for ax, m in zip(row[:3], K90_PANELS, strict=True):
            _lines(ax, part, m, color)
            key = ANCHOR.get(m.matrix)
            if key and key in params:
                lo, hi = params[key]
                ax.axhspan(lo, hi, color="0.6", alpha=0.25, lw=0, zorder=1,
                           label="pretrained LMs (outside reference)")
            ax.set_title(f"{name(m)}" + (f" (of d_h = {sh.d_head})" if m.matrix == STATIC else ""),
                         fontsize=8)
        lows = [ax.get_ylim()[0] for ax in row[:3]]
        highs = [ax.get_ylim()[1] for ax in row[:3]]
        for ax in row[:3]:
            ax.set_ylim(max(0.8, min(lows)), max(highs))
            rank_axis(ax, "y")
        row[0].set_ylabel(f"{rung} rung: k90\n{sh.text.split(';')[0]}", fontsize=7)
        _lines(row[3], part, PRIOR, color)
        row[3].set_ylim(0, 1)
        row[3].set_title("prior share (mean field's share of Ẽ's energy)", fontsize=8)
        first = float(part.loc[part["step"] > 0, "step"].min())  # the early steps stay apart
        last = float(part["step"].max())
        ticks = sorted({0.0, first, last, *(10.0**k for k in range(1, 7) if first < 10**k
                                             < last / 1.5)})
        for ax in row:
            ax.set_xscale("symlog", linthresh=first, linscale=0.5)
            ax.set_xlim(0, last)
            ax.xaxis.set_major_locator(FixedLocator(ticks))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
            ax.xaxis.set_minor_locator(NullLocator())
            ax.set_xlabel("training step (linear to the first logged step, then log)", fontsize=7)
            ax.tick_params(labelsize=7)
        axes += row
    shared_legend(fig.add_subplot(grid[len(order), :]), axes)
    fig.suptitle("Appendix B, OPEN-4: the realized logit field over training (line: median over "
                 f"seeds, band: their range; mean over layers and heads; scale {params['scale']})",
                 fontsize=9)
    return fig
