"""Shared look, the deterministic PDF + PNG writer, and the pieces several figures draw: seeds with
their median, every seed of a dense baseline, and integer-labelled log rank axes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.ticker import (  # noqa: E402
    FixedLocator,
    FuncFormatter,
    LogLocator,
    NullFormatter,
    NullLocator,
)

from attnrank.core.io import atomic_path  # noqa: E402
from attnrank.core.quantities import median_over_seeds  # noqa: E402

sns.set_theme(context="paper", style="whitegrid", font_scale=1.0)
PALETTE = sns.color_palette("colorblind")
FULL_DIGITS = 65536  # rank labels up to this are written out (1, 2, 4, …, 65536), above as 2^k


def save(fig: plt.Figure, out_pdf: Path) -> list[Path]:
    """Write ``out_pdf`` and ``out_pdf.with_suffix('.png')`` (no timestamps: byte-identical reruns)."""
    out_png = out_pdf.with_suffix(".png")
    fig.tight_layout()
    with atomic_path(out_pdf) as tmp:
        fig.savefig(tmp, format="pdf", metadata={"CreationDate": None, "ModDate": None})
    with atomic_path(out_png) as tmp:
        fig.savefig(tmp, format="png", dpi=150, metadata={"Software": None})
    plt.close(fig)
    return [out_pdf, out_png]


def seed_points_and_median(ax: plt.Axes, df: pd.DataFrame, x: str, y: str, color, label: str,
                           marker: str = "o", lw: float = 1.6, ms: float = 4) -> None:
    """Seeds as light points drawn over their median's line (none hidden behind it); a wider
    ``lw`` and ``ms`` keep a line visible as a halo under another that coincides with it."""
    ax.scatter(df[x], df[y], color=color, alpha=0.5, s=14, marker=marker, linewidths=0, zorder=3)
    med = median_over_seeds(df, x, y).reset_index().sort_values(x)
    ax.plot(med[x], med[y], color=color, marker=marker, label=label, lw=lw, ms=ms)


def rank_label(value: float, _pos: object = None) -> str:
    """A tick label for a rank: the integer (1, 2, 4, …, 65536), 2^k above that."""
    if value <= 0 or not math.isfinite(value):
        return ""
    if value <= FULL_DIGITS:
        return f"{value:.0f}" if float(value).is_integer() else f"{value:g}"
    return f"$2^{{{math.log2(value):.0f}}}$"


def power_of_two_ticks(lo: float, hi: float, max_ticks: int = 9) -> list[float]:
    """Powers of two in [lo, hi], every ``step``-th exponent (step 1, 2, 4, …: at most
    ``max_ticks`` of them); the two around the range when none lies inside."""
    k_lo, k_hi = math.ceil(math.log2(lo)), math.floor(math.log2(hi))
    if k_lo > k_hi:  # no power of two inside: the two around the range
        return [2.0**k_hi, 2.0**k_lo]
    step = 1
    while (k_hi - k_lo) // step + 1 > max_ticks:
        step *= 2
    first = math.ceil(k_lo / step) * step
    return [2.0**k for k in range(first, k_hi + 1, step)]


def rank_axis(ax: plt.Axes, axis: str = "x", ticks: Sequence[float] | None = None,
              max_ticks: int = 9) -> None:
    """Put the ``axis`` ('x' or 'y') of ``ax`` on a log2 scale labelled with integer ranks: at
    ``ticks`` (e.g. the ranks of the grid) or, without them, at powers of two over the current
    limits (call it after drawing)."""
    getattr(ax, f"set_{axis}scale")("log", base=2)
    target = ax.xaxis if axis == "x" else ax.yaxis
    if ticks is None:
        lo, hi = getattr(ax, f"get_{axis}lim")()
        ticks = power_of_two_ticks(lo, hi, max_ticks)
    target.set_major_locator(FixedLocator(sorted({float(t) for t in ticks})))
    target.set_major_formatter(FuncFormatter(rank_label))
    target.set_minor_locator(NullLocator())
    target.set_minor_formatter(NullFormatter())


def dense_seeds(ax: plt.Axes, groups: Sequence[tuple[str, pd.Series, object]],
                title: str = "dense\nsoftmax") -> None:
    """Every seed of a dense baseline as its own marker, one column per group (label, values,
    colour) with the median as a short bar: a seed that fails stays visible."""
    for i, (_, values, color) in enumerate(groups):
        v = np.asarray(values, dtype=float)
        jitter = np.linspace(-0.18, 0.18, len(v)) if len(v) > 1 else np.zeros(len(v))
        ax.scatter(i + jitter, v, color=color, s=26, marker="D", edgecolors="black",
                   linewidths=0.5, zorder=5)
        if len(v):
            ax.hlines(np.median(v), i - 0.32, i + 0.32, color=color, lw=1.4, zorder=4)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([g[0] for g in groups], fontsize=7)
    ax.set_xlim(-0.6, len(groups) - 0.4)
    ax.grid(axis="x", visible=False)
    ax.tick_params(axis="y", labelleft=False)
    ax.set_title(title, fontsize=8)


def shared_legend(ax_legend: plt.Axes, axes: Sequence[plt.Axes], ncol: int | None = None,
                  fontsize: float = 7) -> None:
    """One legend for ``axes`` (each label once, in order of first appearance) on ``ax_legend``,
    an axes of its own (e.g. a short row under the panels) whose frame is hidden: no legend
    covers data. ``ncol`` defaults to one row."""
    handles: dict[str, object] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    ax_legend.axis("off")
    ax_legend.legend(list(handles.values()), list(handles), loc="center",
                     ncol=ncol or max(1, len(handles)),
                     fontsize=fontsize, frameon=False)


def plain_log_axis(ax: plt.Axes, axis: str = "x") -> None:
    """Put the ``axis`` of ``ax`` on a log10 scale with plain labels at 1, 2, 3, 5 × 10^k (e.g. 30,
    50, 100, 200, 300, 500 training steps), unlabelled minor ticks."""
    getattr(ax, f"set_{axis}scale")("log")
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 3.0, 5.0)))
    target.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    target.set_minor_formatter(NullFormatter())
