"""A2: excess risk per ladder rung (B0 → B3), seeds as points on a log scale, and the positional
ablation for B1 and B2."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from attnrank.core.columns import EXCESS
from attnrank.core.style import PALETTE
from attnrank.entropic.jobs import B0, B1, B1_POS, B2, B2_POS, B3, POSITIONS_SUFFIX

PAPER = "A"
TABLES = ('entropic_ladder',)  # the tables this figure reads (by file stem)


def _strip(ax: plt.Axes, df: pd.DataFrame, order: list[str], colors: list) -> None:
    for i, (name, color) in enumerate(zip(order, colors, strict=True)):
        vals = df[df["model"] == name][EXCESS].to_numpy()
        if not len(vals):
            continue
        jitter = np.linspace(-0.12, 0.12, len(vals)) if len(vals) > 1 else np.zeros(1)
        ax.bar(i, np.median(vals), color=color, alpha=0.35, width=0.6)
        ax.scatter(i + jitter, vals, color=color, s=18, zorder=5)
    ax.set_xticks(range(len(order)))


def plot(tables: dict[str, pd.DataFrame], params: dict[str, Any]) -> plt.Figure:
    df = tables["entropic_ladder"]
    floor = float(params["floor"])
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9.5, 3.8), sharey=True,
                                   gridspec_kw={"width_ratios": [4, 4]})
    rungs = [r for r in (B0, B1, B2, B3) if r in set(df["model"])]
    _strip(ax1, df, rungs, [PALETTE[i] for i in range(len(rungs))])
    ax1.set_xticklabels({B0: "B0\nA X V", B1: "B1\nlinear QK", B2: "B2\nsoftmax",
                         B3: "B3\nblock"}.get(r, r) for r in rungs)
    ax1.set_title("ladder, no positions (full-rank kernels)")
    abl = [m for m in (B1, B1_POS, B2, B2_POS) if m in set(df["model"])]
    _strip(ax2, df, abl, [PALETTE[1] if m.startswith(B1) else PALETTE[2] for m in abl])
    ax2.set_xticklabels(m.replace(POSITIONS_SUFFIX, "\n+ positions") for m in abl)
    ax2.set_title("ablation: learned positional features")
    for ax in (ax1, ax2):
        ax.axhline(floor, color="gray", ls=":", lw=1)
        ax.set_yscale("log")
    ax1.set_ylabel("excess risk (held-out; bars: median, points: seeds)")
    r_star = int(df["r_star"].iloc[0]) if len(df) else 0
    fig.suptitle(f"Interpolation ladder on a fixed operator of rank r* = {r_star} "
                 f"(dotted: floor {floor:g})")
    return fig
