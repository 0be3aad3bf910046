"""B3: sequence and worst-case error against r on the witness suite, with r_lb marked."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import pandas as pd

from attnrank.columns import TEST_SEQUENCE_ACCURACY, TEST_WORST_CASE_ERROR
from attnrank.figures.style import PALETTE, seed_points_and_median
from attnrank.quantities import kernel_rows, witness_lower_bound


def plot(tables: dict[str, pd.DataFrame], params: dict[str, Any]) -> plt.Figure:
    df = tables["minip_witness"].copy()
    df["sequence_error"] = 1.0 - df[TEST_SEQUENCE_ACCURACY]
    w, cut = params["witness"], float(params["worst_case_cutoff"])
    r_lb = witness_lower_bound(w["blocks"], w["width"])
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, col, label in ((axes[0], "sequence_error", "sequence error"),
                           (axes[1], TEST_WORST_CASE_ERROR, "worst-case error max|ŷ − t|")):
        kern = kernel_rows(df)
        for i, (fm, part) in enumerate(sorted(kern.groupby("feature_map"))):
            seed_points_and_median(ax, part, "rank", col, PALETTE[i], f"{fm} features")
        dense = df[df["model"] == "dense"][col]
        ax.axhline(dense.median(), color="black", ls="--", lw=1, label="dense softmax")
        ax.axvline(r_lb, color=PALETTE[3], ls=":", lw=1.2, label=f"proven $r_{{lb}}$ = {r_lb}")
        if col == TEST_WORST_CASE_ERROR:
            ax.axhline(cut, color="grey", ls=":", lw=1, label=f"error {cut:g}")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("feature rank r")
        ax.set_ylabel(label)
        ax.legend(fontsize=7)
    fig.suptitle(f"Witness suite (K = {w['blocks']}, w = {w['width']})")
    return fig
