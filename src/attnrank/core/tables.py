"""The table step: concatenate per-job metrics tables into one tidy table, keeping some rows.

``select``: "all" keeps every logged row; "final" the last step of each model; "selected" each
student's reported row (both are boolean columns the training steps write). ``max_rank_only``
keeps only the largest student rank (the traces of the over-parameterized students).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from attnrank.core.io import read_table
from attnrank.core.table_job import SELECT

if TYPE_CHECKING:
    from attnrank.core.table_job import TableJob


def concat_tables(inputs: Sequence[str | Path], select: str, max_rank_only: bool) -> pd.DataFrame:
    """Rows of every input table (in input order), filtered as above; index reset."""
    if select not in SELECT:
        raise ValueError(f"table params.select must be one of {', '.join(SELECT)}, got {select!r}")
    frames = [read_table(p) for p in inputs]
    for path, df in zip(inputs, frames, strict=True):
        if select != "all" and select not in df.columns:
            raise ValueError(f"{path}: has no boolean column {select!r} to select rows by")
    df = pd.concat(frames, ignore_index=True)
    if select != "all":
        df = df[df[select]]
    if max_rank_only:
        df = df[df["rank"] == df["rank"].max()]
    return df.reset_index(drop=True)


def step(job: TableJob, inputs: Sequence[str | Path]) -> dict[str, Any]:
    """The table step: the rows of ``inputs`` the job selects, as the ``out`` table."""
    return {"out": concat_tables(inputs, job.select, job.max_rank_only)}
