"""A3: excess risk of rank-r attention students against r, linear teacher and softmax teachers,
one panel per β."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import pandas as pd

from attnrank.columns import EXCESS
from attnrank.figures.style import PALETTE, seed_points_and_median


def plot(tables: dict[str, pd.DataFrame], params: dict[str, Any]) -> plt.Figure:
    df = tables["entropic_attention"].copy()
    df["panel"] = [("linear" if t == "linear" else f"softmax, β = {b:g}")
                   for t, b in zip(df["teacher"], df["beta"], strict=True)]
    panels = ["linear"] + sorted((p for p in set(df["panel"]) if p != "linear"),
                                 key=lambda s: float(s.split("= ")[1]))
    panels = [p for p in panels if p in set(df["panel"])]
    fig, axes = plt.subplots(1, len(panels), figsize=(3.3 * len(panels), 3.4), sharey=True,
                             squeeze=False)
    floor = float(params["floor"])
    for ax, panel in zip(axes[0], panels, strict=True):
        part = df[df["panel"] == panel]
        for i, (r_star, g) in enumerate(sorted(part.groupby("r_star"))):
            color = PALETTE[i % len(PALETTE)]
            seed_points_and_median(ax, g, "rank", EXCESS, color, f"r* = {r_star}")
            ax.axvline(r_star, color=color, lw=0.7, ls=":")
        ax.axhline(floor, color="gray", ls=":", lw=1)
        ax.set_yscale("log")
        ax.set_title(panel + " teacher")
        ax.set_xlabel("student kernel rank r")
    axes[0][0].set_ylabel("excess risk (held-out)")
    axes[0][0].legend(fontsize=7, loc="lower left")
    fig.suptitle("Attention-native rank: same-class teacher and students (dotted: floor, r*)")
    return fig
