"""Shared look and the deterministic PDF + PNG writer."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402

from attnrank.io import atomic_path  # noqa: E402
from attnrank.quantities import median_over_seeds  # noqa: E402

sns.set_theme(context="paper", style="whitegrid", font_scale=1.0)
PALETTE = sns.color_palette("colorblind")


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


def seed_points_and_median(ax: plt.Axes, df, x: str, y: str, color, label: str,
                           marker: str = "o") -> None:
    """Seeds as faint points, their median as a line."""
    ax.scatter(df[x], df[y], color=color, alpha=0.35, s=14, marker=marker, linewidths=0)
    med = median_over_seeds(df, x, y).reset_index().sort_values(x)
    ax.plot(med[x], med[y], color=color, marker=marker, label=label, lw=1.6, ms=4)
