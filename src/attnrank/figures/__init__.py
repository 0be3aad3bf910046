"""Figures: one module per figure, each with ``plot(tables, params) -> Figure``; they read only
the pipeline's tables (keyed by file stem, e.g. ``tables["minip_witness"]``).

The figure names and the tables each one reads are ``attnrank.registry.FIGURES``."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from attnrank.registry import FIGURES


def check_inputs(name: str, inputs: Sequence[str | Path]) -> None:
    """Refuse an unknown figure, or inputs whose stems are not the registry's tables for it."""
    if name not in FIGURES:
        raise ValueError(f"unknown figure {name!r}; known: {', '.join(FIGURES)}")
    expected = FIGURES[name].tables
    stems = [Path(p).stem for p in inputs]
    if sorted(stems) != sorted(expected):
        missing = [t for t in expected if t not in stems]
        extra = [s for s in stems if s not in expected]
        duplicated = sorted({s for s in stems if stems.count(s) > 1})
        raise ValueError(
            f"figure {name} reads the tables {', '.join(expected)} (registry.FIGURES); got "
            f"{', '.join(stems) or 'none'}: missing {missing}, not registered for it {extra}, "
            f"given twice {duplicated}")


def draw(name: str, inputs: Sequence[str | Path], out_pdf: str | Path,
         params: dict[str, Any]) -> list[Path]:
    """Draw figure ``name`` from the tables ``inputs`` into ``out_pdf`` and the PNG beside it."""
    from attnrank.figures.style import save
    from attnrank.io import read_table

    check_inputs(name, inputs)
    out_pdf = Path(out_pdf)
    if out_pdf.suffix != ".pdf":
        raise ValueError(f"figure output must be a .pdf path, got {out_pdf}")
    tables = {Path(p).stem: read_table(p) for p in inputs}
    module = importlib.import_module(f"attnrank.figures.{name}")
    fig = module.plot(tables, params)
    return save(fig, out_pdf)
