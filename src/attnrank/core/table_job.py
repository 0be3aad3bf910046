"""The typed job of the table step (see attnrank.core.tables)."""

from __future__ import annotations

from dataclasses import dataclass

from attnrank.core.job import Job

SELECT = ("all", "final", "selected")


@dataclass(frozen=True)
class TableJob(Job):
    """Which rows of the concatenated metrics tables to keep."""

    select: str
    max_rank_only: bool

    def __post_init__(self) -> None:
        if self.select not in SELECT:
            raise ValueError(f"TableJob.select: must be one of {', '.join(SELECT)}, got {self.select!r}")
