"""Figures: one module per figure, each with ``plot(tables, params) -> Figure``; they read only
the pipeline's tables (keyed by file stem, e.g. ``tables["minip_witness"]``)."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

FIGURES = ("minip_length_sweep", "minip_rank_vs_m", "minip_witness", "minip_ood_pools",
           "entropic_surrogate_phase", "entropic_surrogate_recovery", "entropic_ladder",
           "entropic_attention_native", "entropic_attention_recovery", "entropic_predictability")


def draw(name: str, inputs: Sequence[str | Path], out_pdf: str | Path,
         params: dict[str, Any]) -> list[Path]:
    """Draw figure ``name`` from the tables ``inputs`` into ``out_pdf`` and the PNG beside it."""
    from attnrank.figures.style import save
    from attnrank.io import read_table

    if name not in FIGURES:
        raise ValueError(f"unknown figure {name!r}; known: {', '.join(FIGURES)}")
    out_pdf = Path(out_pdf)
    if out_pdf.suffix != ".pdf":
        raise ValueError(f"figure output must be a .pdf path, got {out_pdf}")
    tables = {Path(p).stem: read_table(p) for p in inputs}
    module = importlib.import_module(f"attnrank.figures.{name}")
    fig = module.plot(tables, params)
    return save(fig, out_pdf)
