"""Provenance sidecars (``X.prov.json`` beside every artifact ``X``) and the atomic writers.

A sidecar records: sha256 of X; the rule and wildcards; the resolved parameters and their hash;
the sha256 of each input; the code version (git commit, dirty flag, hashes of ``src/`` and
``workflow/``); Python, torch, numpy versions, device, host; seed; start, end, duration.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

SIDECAR_SUFFIX = ".prov.json"
PACKAGE_DIR = Path(__file__).resolve().parent


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def params_hash(params: Any) -> str:
    return hashlib.sha256(canonical_json(params).encode()).hexdigest()


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


def code_version() -> dict[str, Any]:
    root = _repo_root()
    info: dict[str, Any] = {"src_sha256": tree_hash(PACKAGE_DIR)}
    if root is not None and (root / "workflow").exists():
        info["workflow_sha256"] = tree_hash(root / "workflow")
    commit, dirty = None, None
    if root is not None:
        try:
            commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"],
                                    capture_output=True, text=True, timeout=10).stdout.strip() or None
            status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--",
                                     "src", "workflow", "Snakefile", "config.yaml"],
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
    try:
        import torch
        env["torch"] = torch.__version__
    except ImportError:  # figures and claims do not need torch
        env["torch"] = None
    return env


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path in the target's folder; rename it onto ``path`` only on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp" + path.suffix,
                               dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, path)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


@dataclass
class Run:
    """One invocation of a pipeline step; writes a sidecar for each of its outputs.

    Usage::

        run = Run(rule="minip_train", params=params, inputs=[...], wildcards={...})
        ... write outputs with atomic_path ...
        run.finish([out1, out2], device="cpu", seed=...)
    """

    rule: str
    params: dict[str, Any]
    inputs: Sequence[str | Path] = ()
    wildcards: dict[str, Any] = field(default_factory=dict)
    started: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        for p in self.inputs:
            if not Path(p).exists():
                raise FileNotFoundError(f"input of rule {self.rule!r} is missing: {p}")

    def finish(self, outputs: Sequence[str | Path], device: str | None = None,
               seed: Any = None, extra: dict[str, Any] | None = None) -> None:
        ended = time.time()
        inputs = {str(p): sha256_file(p) for p in self.inputs}
        base = {
            "rule": self.rule,
            "wildcards": self.wildcards,
            "params": self.params,
            "params_sha256": params_hash(self.params),
            "inputs": inputs,
            "code": code_version(),
            "environment": environment(device),
            "seed": seed,
            "command": sys.argv,
            "start": datetime.fromtimestamp(self.started, UTC).isoformat(),
            "end": datetime.fromtimestamp(ended, UTC).isoformat(),
            "duration_s": round(ended - self.started, 3),
        }
        if extra:
            base["extra"] = extra
        for out in outputs:
            write_sidecar(out, base)


def write_sidecar(path: str | Path, record: dict[str, Any]) -> Path:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"cannot write provenance for missing artifact {path}")
    rec = {"artifact": path.name, "sha256": sha256_file(path), **record}
    side = path.with_name(path.name + SIDECAR_SUFFIX)
    with atomic_path(side) as tmp:
        tmp.write_text(json.dumps(rec, indent=2, sort_keys=True, default=str) + "\n")
    return side


def read_sidecar(path: str | Path) -> dict[str, Any]:
    side = Path(str(path) + SIDECAR_SUFFIX)
    return json.loads(side.read_text())
