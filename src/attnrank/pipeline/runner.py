"""The step runner: what every step command does around the science it calls.

A command of ``attnrank.cli`` parses its arguments and builds the typed job; the runner sets the
torch threads and device, opens the provenance ``Run`` (and, for training, the checkpoint beside
the first output, which also carries the progress lines), calls the wing's ``step`` function,
writes what it returns (``write_outputs``) and the sidecars. None of this is part of a step's
code hash: it decides where and how outputs are written, never their bytes (``core.io`` writes
them, and is in every hash).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger("attnrank")

CHECKPOINT_ENV = "ATTNRANK_CHECKPOINT_EVERY"  # the workflow's checkpoint_every, for every job
# glibc malloc settings the workflow gives every job (set before its Python starts; a value the
# user's environment already holds wins): tensors up to the largest mmap threshold glibc allows
# (32 MiB) come from the heap, which is neither trimmed nor grown by less than 64 MiB, so a
# training step stops paying page faults for buffers it frees and asks for again. Speed only:
# the bytes of every output are the same (benchmarks/allocator.py checks it side by side).
ALLOCATOR_ENV = {"MALLOC_MMAP_THRESHOLD_": str(32 * 2**20),
                 "MALLOC_TRIM_THRESHOLD_": str(2**30),
                 "MALLOC_TOP_PAD_": str(64 * 2**20)}
StepFn = Callable[..., dict[str, Any]]  # a wing's step: typed job (+ inputs, device, control) -> outputs


COMPILE_CACHE_ENV = "TORCHINDUCTOR_CACHE_DIR"  # where torch.compile keeps its kernels
CACHE_DIR = ".cache"  # a run folder's caches (inductor's compiled kernels): never artifacts


def compile_cache(first_output: str) -> Path:
    """The run folder's inductor cache for a job writing ``first_output``: ``results/<scale>/.cache/
    inductor`` when the output lies in a run folder ``results/<scale>/``, else a ``.cache/inductor``
    beside the output. Kernels compiled by one job are reused by every later job of the run (and
    by reruns), which only saves time: a cached kernel is the kernel a compile would write."""
    out = Path(first_output).resolve()
    folder = next((p for p in out.parents if p.parent.name == "results"), out.parent)
    return folder / CACHE_DIR / "inductor"


def interpreter_first_on_path() -> None:
    """Put the directory of the running interpreter first on PATH (the workflow calls this as it
    loads), so every job's ``python`` is the interpreter that runs Snakemake: a venv's snakemake
    called by path, the venv not activated, runs the package with the venv's python, here and on
    a Slurm node (a job inherits PATH and loads the workflow again). A conda env of --use-conda
    still comes first (it is prepended inside the job's shell)."""
    first = str(Path(sys.executable).parent)
    rest = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != first]
    os.environ["PATH"] = os.pathsep.join([first, *rest])


def set_threads(n: int) -> None:
    import torch

    torch.set_num_threads(max(1, n))


def device_name(device: Any) -> str:
    import torch

    return str(device) if device.type == "cpu" else torch.cuda.get_device_name(device)


def open_checkpoint(a: argparse.Namespace, run: Any, first_output: str, device: Any) -> Any:
    """The training job's checkpoint beside its first output (attnrank.pipeline.checkpoint), keyed by the
    step, its parameters and code hash, torch, the device and the thread count."""
    import torch

    from attnrank.pipeline.checkpoint import Checkpoint, checkpoint_key, checkpoint_path

    key = checkpoint_key(run.step, run.params, run.code["step_sha256"], device_name(device),
                         torch.get_num_threads())
    return Checkpoint.open(checkpoint_path(first_output), key, a.checkpoint_every)


def seed_record(job: Any) -> dict[str, Any]:
    return {"scheme": "(experiment, task instance, seed index, role)",
            "experiment": job.experiment, "instance": job.instance, "seeds": job.seeds}


class TrainingStep:
    """What every training command shares: threads, device, the provenance ``Run`` and the
    checkpoint beside the first output; ``finish`` writes each output (a DataFrame as Parquet, a
    dict of arrays as npz), their sidecars, and removes the checkpoint."""

    def __init__(self, a: argparse.Namespace, step: str, job: Any, first_output: str,
                 what: str) -> None:
        from attnrank.core.train import resolve_device
        from attnrank.pipeline.provenance import Run

        set_threads(a.threads)
        os.environ.setdefault(COMPILE_CACHE_ENV, str(compile_cache(first_output)))
        self.device = resolve_device(a.device)
        self.run = Run(step, job.to_dict(), [], a.wildcards, rule=a.rule)
        log.info("%s on %s", what, self.device)
        self.checkpoint = open_checkpoint(a, self.run, first_output, self.device)

    def finish(self, a: argparse.Namespace, outputs: dict[str, Any], seed: dict[str, Any]) -> None:
        """Write the step's outputs (``write_outputs``), their sidecars, and remove the
        checkpoint."""
        paths = write_outputs(a, outputs)
        self.run.finish(paths, device=device_name(self.device), seed=seed)
        self.checkpoint.remove()


def write_outputs(a: argparse.Namespace, outputs: dict[str, Any]) -> list[str]:
    """Write a step's outputs: each name is the command's output flag (``out`` → ``--out``), a
    DataFrame as Parquet or CSV (by the path), a dict of arrays as npz. Returns the paths."""
    from attnrank.core.io import write_npz, write_table

    paths = []
    for name, value in outputs.items():
        path = getattr(a, name)
        (write_npz if str(path).endswith(".npz") else write_table)(value, path)
        paths.append(path)
    return paths


def table_step(a: argparse.Namespace, step: str, job: Any, fn: StepFn, *args: Any) -> None:
    """A step that reads ``--inputs`` (or nothing) and writes tables: its provenance run, the
    wing's step function ``fn(job, *args)``, its outputs and sidecars."""
    from attnrank.pipeline.provenance import Run

    run = Run(step, job.to_dict(), getattr(a, "inputs", None) or [], a.wildcards, rule=a.rule)
    paths = write_outputs(a, fn(job, *args))
    run.finish(paths)


def cpu_step(a: argparse.Namespace, step: str, job: Any, fn: StepFn, seed: dict[str, Any]) -> None:
    """A step that computes on the CPU from its params alone (no inputs): threads, provenance,
    the wing's ``fn(job)``, outputs."""
    from attnrank.pipeline.provenance import Run

    if hasattr(a, "threads"):
        set_threads(a.threads)
    run = Run(step, job.to_dict(), [], a.wildcards, rule=a.rule)
    paths = write_outputs(a, fn(job))
    run.finish(paths, device="cpu", seed=seed)


def train_step(a: argparse.Namespace, step: str, job: Any, fn: StepFn, first: str, what: str,
               seed: dict[str, Any]) -> None:
    """A training step: ``TrainingStep`` around the wing's ``fn(job, device, control)``, the
    checkpoint beside the output ``first``; ``what`` names the job in the log."""
    t = TrainingStep(a, step, job, first, what)
    t.finish(a, fn(job, t.device, t.checkpoint), seed)
