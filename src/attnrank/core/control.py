"""Run control as the trainer sees it: protocols for a job's checkpoint and its progress lines.

Science defines only these small protocols; the pipeline implements them
(``attnrank.pipeline.checkpoint.Checkpoint`` is a ``Control``, its phases are ``Phase``s) and passes
them in, so no science module imports the pipeline. ``None`` everywhere means: no checkpoint and no
progress lines (tests, or a step run by hand from Python).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import torch

ExtraState = tuple[Callable[[], Any], Callable[[Any], None]]  # (get, set) of an experiment's state


class Progress(Protocol):
    """Where a training call reports its step; ``loss()`` is called only when a line is due."""

    def update(self, done: int, loss: Callable[[], float]) -> None: ...


class Phase(Protocol):
    """One training call's view of the job's checkpoint."""

    def due(self, done: int, steps: int) -> bool:
        """Whether to save after step ``done`` of ``steps``."""
        ...

    def saved(self) -> dict[str, Any] | None:
        """The saved state (step, model, optimizer, rows), restoring the stream's
        generators and the extra state; None when nothing was saved."""
        ...

    def record(self, step: int, model: dict[str, Any], optimizer: dict[str, Any],
               rows: list[dict[str, Any]]) -> None:
        """Save the state after step ``step``."""
        ...

    def progress(self, desc: str, total: int, start: int) -> Progress:
        """Where this call's progress lines go."""
        ...


class Control(Protocol):
    """A training job's checkpoint: one ``Phase`` per training call, by name."""

    def phase(self, name: str, generators: Sequence[torch.Generator] = (),
              extra: ExtraState | None = None) -> Phase: ...


class NoProgress:
    """Progress that reports nothing (a job run without run control)."""

    def update(self, done: int, loss: Callable[[], float]) -> None:
        return None


def phase_of(control: Control | None, name: str, generators: Sequence[torch.Generator] = (),
             extra: ExtraState | None = None) -> Phase | None:
    """``control.phase(...)``, or None for a job run without run control."""
    return None if control is None else control.phase(name, generators, extra)
