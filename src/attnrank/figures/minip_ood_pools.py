"""B4: exact-sequence accuracy on a disjoint test pool against r, per scale; dense beside."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import pandas as pd

from attnrank.columns import TEST_SEQUENCE_ACCURACY
from attnrank.figures.style import PALETTE, seed_points_and_median
from attnrank.quantities import kernel_rows


def plot(tables: dict[str, pd.DataFrame], params: dict[str, Any]) -> plt.Figure:
    df = tables["minip_ood"]
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    order = (df.groupby("instance")["m"].first().sort_values().index.tolist())
    for i, inst in enumerate(order):
        part = df[df["instance"] == inst]
        kern = kernel_rows(part)
        label = f"{inst} (m = {part['m'].iloc[0]})"
        seed_points_and_median(ax, kern, "rank", TEST_SEQUENCE_ACCURACY, PALETTE[i], label)
        dense = part[part["model"] == "dense"][TEST_SEQUENCE_ACCURACY]
        ax.axhline(dense.median(), color=PALETTE[i], ls="--", lw=1)
    ax.axhline(float(params["target_accuracy"]), color="grey", ls=":", lw=1)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("feature rank r")
    ax.set_ylabel("exact-sequence accuracy, disjoint test pool")
    ax.set_title("OOD pools (dashed: dense softmax)")
    ax.legend(fontsize=8)
    return fig
