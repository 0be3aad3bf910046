"""Training checkpoints: a killed training job resumes where it stopped and ends with the same bytes.

A job's checkpoint is one file, ``<first output>.ckpt`` beside its outputs (never an output
itself: Snakemake does not know it, and the audit reports a leftover one as an interrupted job).
It holds

- a **key**: sha256 over the step, its resolved parameters, the step's code hash, the torch
  version, the device and the torch thread count, i.e. everything that decides the bytes of the
  result. A checkpoint whose key differs (or that cannot be read) is ignored and removed;
- one **state per phase**: a phase is one call of ``attnrank.core.train.train`` (a job with several,
  such as the restart study, names each). A state is the step, the parameters and buffers, the
  optimizer state, the rows logged so far, the states of the data stream's
  generators and the experiment's own extra state (``Phase.extra``, e.g. tables an ``evaluate``
  callback collects). A finished phase keeps its final state, so a later phase's kill does not
  redo it.

The file is written every ``every`` steps and at the end of each phase (``every`` = 0: never),
atomically (a temporary file in the same folder, then ``os.replace``), so a kill leaves either
the previous checkpoint or the new one. After a save, a job whose Snakemake is gone stops
(``attnrank.pipeline.recovery.stop_if_orphaned``). The job removes the file once its outputs and sidecars
are written. It is read with pickle (``torch.load(weights_only=False)``: the extra state may hold
tables): it is the job's own file in its own output folder, never one handed in.
"""

from __future__ import annotations

import hashlib
import io
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from attnrank.core.io import atomic_path
from attnrank.core.job import canonical_json
from attnrank.pipeline.progress import Progress
from attnrank.pipeline.provenance import CHECKPOINT_SUFFIX
from attnrank.pipeline.recovery import stop_if_orphaned

log = logging.getLogger("attnrank.pipeline.checkpoint")

FORMAT = 1


def checkpoint_path(first_output: str | Path) -> Path:
    """Where the checkpoint of the job whose first output is ``first_output`` lives."""
    first_output = Path(first_output)
    return first_output.with_name(first_output.name + CHECKPOINT_SUFFIX)


def checkpoint_key(step: str, params: dict[str, Any], code_hash: str, device: str,
                   threads: int) -> str:
    """sha256 over everything that decides a training job's bytes (see the module docstring)."""
    record = {"format": FORMAT, "step": step, "params": params, "code": code_hash,
              "torch": torch.__version__, "device": device, "threads": int(threads)}
    return hashlib.sha256(canonical_json(record).encode()).hexdigest()


def problem(data: Any, key: str) -> str | None:
    """Why loaded checkpoint data cannot be resumed (None: it can)."""
    if not (isinstance(data, dict) and data.get("format") == FORMAT
            and isinstance(data.get("phases"), dict)
            and all(isinstance(v, dict) and {"step", "state"} <= set(v)
                    for v in data["phases"].values())):
        return f"it is not a format-{FORMAT} checkpoint"
    if data.get("key") != key:
        return "it was written for other parameters, code, torch version, device or threads"
    return None


@dataclass
class Checkpoint:
    """The checkpoint file of one job: its key, its save interval and the phases' states."""

    path: Path
    key: str
    every: int
    phases: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        if self.every < 0:
            raise ValueError(f"checkpoint_every must be ≥ 0 (0 disables), got {self.every}")

    @classmethod
    def open(cls, path: str | Path, key: str, every: int) -> Checkpoint:
        """The job's checkpoint: the phases of a matching file at ``path``, else none (a file
        with another key, or one that cannot be read, is removed)."""
        ckpt = cls(Path(path), key, every)
        if not ckpt.path.exists():
            return ckpt
        try:
            data = torch.load(ckpt.path, map_location="cpu", weights_only=False)
        except Exception as err:  # noqa: BLE001 - any unreadable file is discarded the same way
            data, reason = None, f"it cannot be read ({type(err).__name__}: {err})"
        else:
            reason = problem(data, key)
        if reason is not None:
            log.warning("%s: ignoring and removing the checkpoint: %s", ckpt.path, reason)
            ckpt.remove()
            return ckpt
        ckpt.phases = data["phases"]
        log.info("%s: resuming from the checkpoint (%s)", ckpt.path, ", ".join(
            f"{name} at step {state['step']}" for name, state in ckpt.phases.items()))
        return ckpt

    def phase(self, name: str, generators: Sequence[torch.Generator] = (),
              extra: tuple[Callable[[], Any], Callable[[Any], None]] | None = None) -> Phase:
        """The hook a training call gets: its name, the generators its data stream draws from,
        and (get, set) of any other state the experiment keeps across steps."""
        return Phase(self, name, list(generators), extra)

    def save(self) -> None:
        """Write every phase's state atomically."""
        with atomic_path(self.path) as tmp:
            torch.save({"format": FORMAT, "key": self.key, "phases": self.phases}, tmp)

    def remove(self) -> None:
        """Delete the file (the job finished; a missing file is fine)."""
        self.path.unlink(missing_ok=True)


@dataclass
class Phase:
    """One training call's view of the job's checkpoint (see ``Checkpoint.phase``)."""

    checkpoint: Checkpoint
    name: str
    generators: list[torch.Generator]
    extra: tuple[Callable[[], Any], Callable[[Any], None]] | None = None

    def due(self, done: int, steps: int) -> bool:
        """Save after step ``done``: every ``every`` steps and at the phase's last step."""
        every = self.checkpoint.every
        return every > 0 and (done % every == 0 or done == steps)

    def progress(self, desc: str, total: int, start: int) -> Progress:
        """The training call's progress lines (``attnrank.pipeline.progress``, from the
        environment)."""
        return Progress.from_env(desc, total, start)

    def saved(self) -> dict[str, Any] | None:
        """The phase's saved state, restoring the generators and the extra state from it; None
        when nothing was saved."""
        saved = self.checkpoint.phases.get(self.name)
        if saved is None:
            return None
        state = torch.load(io.BytesIO(saved["state"]), map_location="cpu", weights_only=False)
        if len(state["generators"]) != len(self.generators):
            raise ValueError(f"{self.checkpoint.path}: phase {self.name!r} saved "
                             f"{len(state['generators'])} generator states, the job has "
                             f"{len(self.generators)}")
        for g, s in zip(self.generators, state["generators"], strict=True):
            g.set_state(s)
        if self.extra is not None:
            self.extra[1](state["extra"])
        return state

    def record(self, step: int, model: dict[str, Any], optimizer: dict[str, Any],
               rows: list[dict[str, Any]]) -> None:
        """Store the state after step ``step`` (with the generators' and the extra state) and
        write the file. The state is serialized at once: later steps cannot change it."""
        buf = io.BytesIO()
        torch.save({"step": step, "model": model, "optimizer": optimizer,
                    "rows": list(rows), "generators": [g.get_state() for g in self.generators],
                    "extra": None if self.extra is None else self.extra[0]()}, buf)
        self.checkpoint.phases[self.name] = {"step": step, "state": buf.getvalue()}
        self.checkpoint.save()
        stop_if_orphaned(f"the checkpoint {self.checkpoint.path} (step {step})")
