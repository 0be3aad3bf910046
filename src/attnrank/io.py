"""Atomic writers for the pipeline's artifact kinds (Parquet tables, npz weights, text)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from attnrank.provenance import atomic_path


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
