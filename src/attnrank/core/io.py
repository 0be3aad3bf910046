"""Atomic writers for the pipeline's artifact kinds (Parquet tables, npz weights, text).

A writer writes to a temporary file in the target's folder and renames it onto the target only
on success, so no half-written artifact is ever left behind; the result gets the umask's mode.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path in the target's folder; rename it onto ``path`` only on success,
    with the mode a plain ``open()`` would give (0666 less the umask; mkstemp makes 0600)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp" + path.suffix,
                               dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, 0o666 & ~_umask())
        os.replace(tmp_path, path)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def write_table(df: pd.DataFrame, path: str | Path) -> Path:
    """Parquet (pyarrow, no index); a .csv path writes CSV instead."""
    path = Path(path)
    with atomic_path(path) as tmp:
        if path.suffix == ".csv":
            df.to_csv(tmp, index=False)
        else:
            df.to_parquet(tmp, engine="pyarrow", index=False)
    return path


def read_table(path: str | Path) -> pd.DataFrame:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"table not found: {path}")
    return pd.read_parquet(path, engine="pyarrow")


def write_npz(arrays: dict[str, np.ndarray], path: str | Path) -> Path:
    path = Path(path)
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.savez_compressed(fh, **arrays)
    return path


def write_text(text: str, path: str | Path) -> Path:
    path = Path(path)
    with atomic_path(path) as tmp:
        tmp.write_text(text)
    return path
