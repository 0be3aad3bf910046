"""Provenance sidecars: ``X.prov.json`` beside every artifact ``X``.

A sidecar records: sha256 of X; the step, rule and wildcards; the resolved parameters and their
hash; the sha256 of each input; the code version (git commit, dirty flag, hashes of ``src/`` and
``workflow/``, and the step's own code hash over the import closure of its entry module);
Python, torch, numpy versions, device, host; seed; start, end, duration; the command as
``python -m attnrank ...``. Every path in it is relative to the run folder (``results/<scale>/``),
so a copy of that folder (``results/reference/``) can be audited on any machine.
"""

from __future__ import annotations

import glob
import hashlib
import importlib.metadata
import json
import os
import platform
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from attnrank.core.io import atomic_path
from attnrank.core.job import canonical_json, params_hash

__all__ = ["CHECKPOINT_SUFFIX", "SIDECAR_SUFFIX", "Run", "atomic_path", "canonical_json", "clear_interrupted",
           "params_hash", "read_sidecar", "run_root", "sha256_file", "write_sidecar"]

SIDECAR_SUFFIX = ".prov.json"
CHECKPOINT_SUFFIX = ".ckpt"  # a training job's checkpoint beside its first output (not an artifact)
PACKAGE_DIR = Path(__file__).resolve().parents[1]


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def run_root(path: str | Path) -> Path:
    """The run folder an artifact belongs to: the ``results/<name>/`` above it, else its own
    folder. Sidecars record paths relative to it, so a copied run folder stays checkable."""
    path = Path(os.path.abspath(path))
    for parent in path.parents:
        if parent.parent.name == "results":
            return parent
    return path.parent


def relative_to_run(path: str | Path, root: Path) -> str:
    """``path`` relative to the run folder ``root`` (posix); relative to the working directory
    when it lies outside the run folder."""
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(root).as_posix()
    except ValueError:
        return Path(os.path.relpath(absolute)).as_posix()


def portable_command(argv: Sequence[str]) -> str:
    """The command as ``python -m attnrank ...`` (argv[0] is a machine path of __main__.py)."""
    return "python -m attnrank " + shlex.join(argv[1:])


def tree_hash(root: str | Path, suffixes: Sequence[str] = (".py", ".smk", ".yaml", ".rst")) -> str:
    """sha256 over the relative paths and contents of the files under ``root`` (sorted)."""
    root = Path(root)
    h = hashlib.sha256()
    if root.is_file():
        h.update(root.read_bytes())
        return h.hexdigest()
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.suffix in suffixes and "__pycache__" not in p.parts:
            h.update(str(p.relative_to(root)).encode())
            h.update(b"\0")
            h.update(p.read_bytes())
    return h.hexdigest()


def _repo_root() -> Path | None:
    for parent in [PACKAGE_DIR, *PACKAGE_DIR.parents]:
        if (parent / "Snakefile").exists() or (parent / ".git").exists():
            return parent
    return None


def code_version(step: str | None = None, figure: str | None = None) -> dict[str, Any]:
    """git commit and dirty flag, tree hashes of ``src/`` and ``workflow/``, and the step's own
    code hash (the import closure of its entry module, see codehash.py) with its module list."""
    from attnrank.pipeline.codehash import step_code

    root = _repo_root()
    info: dict[str, Any] = {"src_sha256": tree_hash(PACKAGE_DIR)}
    if step is not None:
        info["step_sha256"], info["step_modules"] = step_code(step, figure)
    if root is not None and (root / "workflow").exists():
        info["workflow_sha256"] = tree_hash(root / "workflow")
    commit, dirty = None, None
    if root is not None:
        try:
            commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"],
                                    capture_output=True, text=True, timeout=10).stdout.strip() or None
            # --no-optional-locks: a git killed by the timeout must not leave .git/index.lock
            status = subprocess.run(["git", "--no-optional-locks", "-C", str(root), "status",
                                     "--porcelain", "--", "src", "workflow", "Snakefile",
                                     "config.yaml"],
                                    capture_output=True, text=True, timeout=10)
            dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
        except (OSError, subprocess.SubprocessError):
            pass
    info["git_commit"] = commit
    info["git_dirty"] = dirty
    return info


def environment(device: str | None = None) -> dict[str, Any]:
    import numpy
    env = {"python": platform.python_version(), "numpy": numpy.__version__,
           "platform": platform.platform(), "host": socket.gethostname(), "device": device}
    env["torch"] = _torch_version()
    return env


def _torch_version() -> str | None:
    """torch's version without importing it (≈ 1.5 s) in steps that do not use it (tables,
    figures, claims); the same string as ``torch.__version__``."""
    if "torch" in sys.modules:
        return sys.modules["torch"].__version__
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None


@dataclass
class Run:
    """One invocation of a registered pipeline step; writes a sidecar for each of its outputs.

    Usage::

        run = Run(step="minip_train", params=job.to_dict(), inputs=[...], wildcards={...})
        ... write outputs with attnrank.core.io's atomic writers ...
        run.finish([out1, out2], device="cpu", seed=...)

    ``rule`` is the Snakemake rule (defaults to the step); ``figure`` names the figure of a
    figure step (its module joins the step's code hash).
    """

    step: str
    params: dict[str, Any]
    inputs: Sequence[str | Path] = ()
    wildcards: dict[str, Any] = field(default_factory=dict)
    rule: str | None = None
    figure: str | None = None
    started: float = field(default_factory=time.time)
    code: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from attnrank.pipeline.registry import STEPS

        if self.step not in STEPS:
            raise ValueError(f"unknown step {self.step!r}; registered: {', '.join(STEPS)}")
        for p in self.inputs:
            if not Path(p).exists():
                raise FileNotFoundError(f"input of step {self.step!r} is missing: {p}")
        # The code as it is when the step starts (an edit while it runs must not be recorded).
        self.code = code_version(self.step, self.figure)

    def finish(self, outputs: Sequence[str | Path], device: str | None = None,
               seed: Any = None, extra: dict[str, Any] | None = None) -> None:
        ended = time.time()
        if not outputs:
            raise ValueError(f"step {self.step!r} finished without outputs")
        root = run_root(outputs[0])
        inputs = {relative_to_run(p, root): sha256_file(p) for p in self.inputs}
        base = {
            "step": self.step,
            "rule": self.rule or self.step,
            "wildcards": self.wildcards,
            "params": self.params,
            "params_sha256": params_hash(self.params),
            "inputs": inputs,
            "code": self.code,
            "environment": environment(device),
            "seed": seed,
            "command": portable_command(sys.argv),
            "start": datetime.fromtimestamp(self.started, UTC).isoformat(),
            "end": datetime.fromtimestamp(ended, UTC).isoformat(),
            "duration_s": round(ended - self.started, 3),
        }
        if extra:
            base["extra"] = extra
        for out in outputs:
            write_sidecar(out, {"artifact": relative_to_run(out, root), **base})


def write_sidecar(path: str | Path, record: dict[str, Any]) -> Path:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"cannot write provenance for missing artifact {path}")
    rec = {"artifact": path.name, **record, "sha256": sha256_file(path)}
    side = sidecar_path(path)
    with atomic_path(side) as tmp:
        tmp.write_text(json.dumps(rec, indent=2, sort_keys=True, default=str) + "\n")
    return side


def clear_interrupted(path: str | Path) -> list[Path]:
    """Before a step writes artifact ``path``, remove what an interrupted run left for it: the
    sidecar when the artifact is gone (Snakemake deletes a job's outputs, not their sidecars,
    before it reruns the job, so a kill in between would leave the sidecar alone), and the
    temporary files of killed atomic writes of the artifact, its sidecar and its training
    checkpoint (``.<name>.*.tmp*``). Returns what was removed."""
    path = Path(path)
    gone = sorted(path.parent.glob(f".{glob.escape(path.name)}.*.tmp*"))
    side = sidecar_path(path)
    if side.exists() and not path.exists():
        gone.append(side)
    for p in gone:
        p.unlink(missing_ok=True)
    return gone


def sidecar_path(path: str | Path) -> Path:
    path = Path(path)
    return path.with_name(path.name + SIDECAR_SUFFIX)


def read_json_object(path: str | Path, what: str = "provenance sidecar") -> dict[str, Any]:
    """A JSON object from ``path``; ValueError naming the file when it is unreadable or not an
    object (a sidecar, a manifest)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: unreadable {what} ({exc})") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path}: {what} is not a JSON object")
    return data


def read_sidecar(path: str | Path) -> dict[str, Any]:
    """The sidecar of artifact ``path`` (ValueError naming the file when it is not valid)."""
    return read_json_object(sidecar_path(path))
