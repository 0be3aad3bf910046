"""OPEN-3: each data-only estimator's error against the attention-native rank r_attn as S grows,
a panel per teacher (the linear teacher, then each softmax β) and a row per spectrum; d = 16 solid,
d = 32 dashed. The y value at S is the largest over r* of the quorum error (the ⌈quorum·n⌉-th
smallest |reading − r_attn| over seeds), so a curve at or below the tolerance line passes at that S
(S_min: from where it stays there); lines sit side by side in S, a few percent apart, where they
coincide. R̃_eff of every estimator and the candidate's floor rank; the
other readings are in the tables."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from attnrank.core.style import rank_axis, shared_legend
from attnrank.entropic.jobs import E1, E2, E2_DEBIASED, LINEAR, MIXER, SOFTMAX
from attnrank.entropic.open3.jobs import E2_CENTRED, FLOOR_RANK

PAPER = "A"
TABLES = ('entropic_open3_errors', 'entropic_open3')  # the tables this figure reads (by file stem)

R_EFF = "energy_effective_rank"
# (estimator, reading) drawn, with colour and name
LINES = ((E1, R_EFF, "C0", "E1 R̃_eff (V known)"), (E2, R_EFF, "C1", "E2 R̃_eff"),
         (E2_DEBIASED, R_EFF, "C2", "debiased E2 R̃_eff"), (MIXER, R_EFF, "C3", "mixer R̃_eff"),
         (E2_CENTRED, R_EFF, "C4", "E2_centred R̃_eff (candidate)"),
         (E2_CENTRED, FLOOR_RANK, "black", "E2_centred floor rank (candidate)"))
FLOOR = 1e-2  # a quorum error of 0 (an integer reading that is exact) is drawn here
STYLE = {0: ("-", "o"), 1: ("--", "s")}  # d rank (smallest first): line, marker
DODGE = 0.04  # log2 S between neighbouring lines (12 lines: ± 0.22, well inside a factor 4 of S)


def worst_quorum_error(errors: pd.DataFrame) -> pd.Series:
    """The largest quorum error over r* at each S of one (reading, teacher, d, spectrum)."""
    return errors.groupby("S")["quorum_error"].max().sort_index()


def _teachers(errors: pd.DataFrame) -> list[tuple[str, float]]:
    found = {(str(t), float(b)) for t, b in zip(errors["teacher"], errors["beta"], strict=True)}
    return sorted(found, key=lambda tb: (tb[0] != LINEAR, tb[1]))


def plot(tables: dict[str, pd.DataFrame], params: dict[str, Any]) -> plt.Figure:
    errors = tables["entropic_open3_errors"]
    tol = float(params["rank_tolerance"])
    teachers = _teachers(errors)
    spectra = sorted(errors["spectrum"].unique(), key=lambda s: (s != "flat", s))
    dims = sorted(int(d) for d in errors["d"].unique())
    sizes = sorted(errors["S"].unique())
    fig = plt.figure(figsize=(max(3.4 * len(teachers), 7.5), 2.8 * len(spectra) + 1.2))
    grid = fig.add_gridspec(len(spectra) + 1, len(teachers),
                            height_ratios=[1] * len(spectra) + [0.4])
    axes = []
    for i, spec in enumerate(spectra):
        for j, (kind, beta) in enumerate(teachers):
            ax = fig.add_subplot(grid[i, j], sharey=axes[0] if axes else None)
            axes.append(ax)
            part = errors[(errors["spectrum"] == spec) & (errors["teacher"] == kind)
                          & np.isclose(errors["beta"], beta)]
            for n_line, (est, reading, color, name) in enumerate(LINES):
                for k, d in enumerate(dims):
                    g = part[(part["estimator"] == est) & (part["reading"] == reading)
                             & (part["d"] == d)]
                    if g.empty:
                        continue
                    worst = worst_quorum_error(g)
                    line, marker = STYLE[min(k, 1)]
                    # side by side where lines coincide: each (line, d) a little apart in S
                    slot = n_line * len(dims) + k - (len(LINES) * len(dims) - 1) / 2
                    x = worst.index.to_numpy(float) * 2 ** (DODGE * slot)
                    ax.plot(x, np.maximum(worst.to_numpy(), FLOOR), ls=line,
                            marker=marker, ms=3.5, lw=1.1, color=color, label=name)
            if part.empty:
                ax.text(0.5, 0.7, "no cell with a target", transform=ax.transAxes, ha="center",
                        va="center", fontsize=8, color="gray")
            ax.axhline(tol, color="gray", ls=":", lw=1)
            ax.set_yscale("log")
            rank_axis(ax, "x", sizes)
            ax.tick_params(axis="x", labelsize=6.5)
            who = LINEAR if kind == LINEAR else f"{SOFTMAX} β = {beta:g}"
            ax.set_title(f"{who}, {spec} spectrum", fontsize=8)
            if j == 0:
                ax.set_ylabel("max over r* of the quorum\n|reading − r_attn|", fontsize=7.5)
            if i == len(spectra) - 1:
                ax.set_xlabel("S (sequences; mixer: inputs)", fontsize=7.5)
    legend = fig.add_subplot(grid[-1, :])
    for k, d in enumerate(dims):
        line, marker = STYLE[min(k, 1)]
        legend.plot([], [], color="gray", ls=line, marker=marker, label=f"d = {d}")
    legend.plot([], [], color="gray", ls=":", label=f"tolerance {tol:g} (0 drawn at {FLOOR:g})")
    shared_legend(legend, [legend, *axes], ncol=3, fontsize=7)
    fig.suptitle("OPEN-3: data-only readings against r_attn", fontsize=9)
    return fig
