"""B3: sequence and worst-case error against r on the witness suite, every dense seed beside each,
with the proven r_lb = min(K, w) of the configured family and the paper's r marked."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import pandas as pd

from attnrank.core.columns import TEST_SEQUENCE_ACCURACY, TEST_WORST_CASE_ERROR
from attnrank.core.style import PALETTE, dense_seeds, rank_axis, seed_points_and_median
from attnrank.minip.families import DENSE
from attnrank.minip.quantities import kernel_rows, witness_lower_bound

PAPER = "B"
TABLES = ('minip_witness', 'minip_constructions')  # the tables this figure reads (by file stem)


def _panel(ax: plt.Axes, ax_dense: plt.Axes, df: pd.DataFrame, col: str, label: str,
           marks: list[tuple[float, str, str, str]]) -> None:
    """``col`` against r per feature map (seeds and median), the vertical ``marks`` (rank, colour,
    line style, label), and the dense seeds of each run beside it."""
    kern = kernel_rows(df)
    colors = {fm: PALETTE[i] for i, fm in enumerate(sorted(kern["feature_map"].unique()))}
    for fm, part in sorted(kern.groupby("feature_map")):
        seed_points_and_median(ax, part, "rank", col, colors[fm], f"{fm} features")
    for rank, color, style, text in marks:
        ax.axvline(rank, color=color, ls=style, lw=1.1, label=text, zorder=1)
    rank_axis(ax, "x", sorted(set(kern["rank"]) | {m[0] for m in marks}))
    ax.set_ylabel(label)
    dense = df[df["model"] == DENSE]
    groups = [(f"{inst}\nrun", g[col], colors.get(inst, "black"))
              for inst, g in sorted(dense.groupby("instance"))]
    dense_seeds(ax_dense, groups, "dense softmax\n(every seed)")


def plot(tables: dict[str, pd.DataFrame], params: dict[str, Any]) -> plt.Figure:
    df = tables["minip_witness"].copy()
    df["sequence_error"] = 1.0 - df[TEST_SEQUENCE_ACCURACY]
    w, cut = params["witness"], float(params["worst_case_cutoff"])
    r_lb = witness_lower_bound(w["blocks"], w["width"])
    r_paper = int(params["paper_witness_rank"])
    marks = [(r_lb, PALETTE[3], ":", f"proven $r_{{lb}}$ = min(K, w) = {r_lb}"),
             (r_paper, PALETTE[4], "-.", f"paper: r < {r_paper} fails")]
    fig, axes = plt.subplots(2, 2, figsize=(7.6, 7.0), gridspec_kw={"width_ratios": [4, 1]})
    for row in axes:
        row[1].sharey(row[0])
    axes[1][0].sharex(axes[0][0])
    _panel(axes[0][0], axes[0][1], df, "sequence_error", "sequence error", marks)
    _panel(axes[1][0], axes[1][1], df, TEST_WORST_CASE_ERROR, "worst-case error max|ŷ − t|",
           marks)
    for ax in axes[1]:
        ax.axhline(cut, color="grey", ls=":", lw=1, label=f"error {cut:g}")
    axes[1][0].set_xlabel("feature rank r")
    axes[0][0].legend(fontsize=7, loc="upper right")
    axes[1][0].legend(handles=axes[1][0].get_lines()[-1:], fontsize=7, loc="lower left")
    fig.suptitle(f"Witness suite (K = {w['blocks']}, w = {w['width']}): kernel attention,\n"
                 "dense softmax beside")
    return fig
