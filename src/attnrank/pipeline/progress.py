"""Progress lines of a training job on the terminal that started the run.

Every training rule sends its stdout and stderr to its log file and keeps Snakemake's stderr open
as file descriptor ``PROGRESS_FD`` (``3>&2`` before ``> {log} 2>&1``); the Snakefile sets
``ATTNRANK_PROGRESS_FD`` to that number. While a job trains, at most one line every
``ATTNRANK_PROGRESS_SECONDS`` seconds (default 30; 0 turns the lines off) goes there:

    attnrank | rank_vs_m/m10: step 3000/6000 (50%)  loss 0.0123  45.2 steps/s  ETA 1m06s

so a run shows each job's step, mean loss, rate and time left without flooding the terminal (two
jobs on two cores: four lines a minute). Outside a workflow (the variable unset, or the descriptor
not open) no line is written: the job's own logging already goes to the terminal.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TextIO

FD_ENV = "ATTNRANK_PROGRESS_FD"
SECONDS_ENV = "ATTNRANK_PROGRESS_SECONDS"
PROGRESS_FD = 3
DEFAULT_SECONDS = 30.0


def format_duration(seconds: float) -> str:
    """``seconds`` as ``1h02m``, ``4m05s`` or ``12s`` (rounded to whole seconds)."""
    s = max(0, round(seconds))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


def progress_line(desc: str, done: int, total: int, loss: float, rate: float) -> str:
    """One progress line: step, percentage, mean loss, steps per second and the time left
    (``(total − done) / rate``)."""
    eta = format_duration((total - done) / rate) if rate > 0 else "?"
    return (f"attnrank | {desc}: step {done}/{total} ({100 * done // max(total, 1)}%)  "
            f"loss {loss:.4g}  {rate:.1f} steps/s  ETA {eta}")


def interval_from_env() -> float:
    """Seconds between lines from ``ATTNRANK_PROGRESS_SECONDS`` (default 30); a ValueError naming
    the variable when it is not a number ≥ 0."""
    text = os.environ.get(SECONDS_ENV, "")
    if not text:
        return DEFAULT_SECONDS
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise ValueError(f"${SECONDS_ENV} = {text!r}: expected a number of seconds ≥ 0")
    return value


def stream_from_env() -> TextIO | None:
    """The terminal stream named by ``ATTNRANK_PROGRESS_FD``, or None when unset or not open."""
    text = os.environ.get(FD_ENV, "")
    if not text.isdigit():
        return None
    fd = int(text)
    try:
        os.fstat(fd)
    except OSError:
        return None
    return open(os.dup(fd), "w", buffering=1, encoding="utf-8")  # noqa: SIM115 (lives with the job)


class Progress:
    """Rate-limited progress lines of one training call (``train.train``).

    ``update(done, loss)`` is called after every step; it writes a line when ``every`` seconds have
    passed since the last one (never at step 0), evaluating ``loss()`` only then, so the cost per
    step is one clock read.
    """

    def __init__(self, desc: str, total: int, start: int, stream: TextIO | None, every: float,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.desc, self.total, self.start = desc, total, start
        self.stream = stream if every > 0 else None
        self.every, self.clock = every, clock
        self.t0 = self.last = clock()

    @classmethod
    def from_env(cls, desc: str, total: int, start: int) -> Progress:
        return cls(desc, total, start, _shared_stream(), interval_from_env())

    def update(self, done: int, loss: Callable[[], float]) -> None:
        if self.stream is None:
            return
        now = self.clock()
        if now - self.last < self.every:
            return
        self.last = now
        rate = (done - self.start) / max(now - self.t0, 1e-9)
        self.stream.write(progress_line(self.desc, done, self.total, loss(), rate) + "\n")


_STREAM: list[TextIO | None] = []


def _shared_stream() -> TextIO | None:
    """The process's progress stream, opened once."""
    if not _STREAM:
        _STREAM.append(stream_from_env())
    return _STREAM[0]
