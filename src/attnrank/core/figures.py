"""Figures: one module per figure in its wing (``attnrank.<wing>.figures.<name>``), each declaring
``PAPER`` and ``TABLES`` (the tables it reads, by file stem) and defining
``plot(tables, params) -> Figure``; figures read only the pipeline's tables.

A figure's name starts with its wing: ``minip_witness`` lives in ``attnrank.minip.figures``.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from attnrank.core import WINGS


def figure_module_name(name: str) -> str:
    """The module of figure ``name``: ``attnrank.<wing>.figures.<name>``, the wing being the
    name's first word."""
    wing = name.split("_")[0]
    if wing not in WINGS:
        raise ValueError(f"figure {name!r}: its name must start with a wing ({', '.join(WINGS)})")
    return f"attnrank.{wing}.figures.{name}"


def figure_module(name: str) -> ModuleType:
    """The imported module of figure ``name`` (see ``figure_module_name``)."""
    return importlib.import_module(figure_module_name(name))


def check_inputs(name: str, inputs: Sequence[str | Path]) -> None:
    """Refuse inputs whose stems are not the tables figure ``name`` declares (``TABLES``)."""
    expected = tuple(figure_module(name).TABLES)
    stems = [Path(p).stem for p in inputs]
    if sorted(stems) != sorted(expected):
        missing = [t for t in expected if t not in stems]
        extra = [s for s in stems if s not in expected]
        duplicated = sorted({s for s in stems if stems.count(s) > 1})
        raise ValueError(
            f"figure {name} reads the tables {', '.join(expected)} (its TABLES); got "
            f"{', '.join(stems) or 'none'}: missing {missing}, not declared by it {extra}, "
            f"given twice {duplicated}")


def draw(name: str, inputs: Sequence[str | Path], out_pdf: str | Path,
         params: dict[str, Any]) -> list[Path]:
    """Draw figure ``name`` from the tables ``inputs`` into ``out_pdf`` and the PNG beside it."""
    from attnrank.core.io import read_table
    from attnrank.core.style import save

    check_inputs(name, inputs)
    out_pdf = Path(out_pdf)
    if out_pdf.suffix != ".pdf":
        raise ValueError(f"figure output must be a .pdf path, got {out_pdf}")
    tables = {Path(p).stem: read_table(p) for p in inputs}
    fig = figure_module(name).plot(tables, params)
    return save(fig, out_pdf)
