"""``python -m attnrank estimate-rank X.npy Y.npy [--values V.npy]``: every data-only rank reading
of a user's sequences, and whether their number S reaches each reading's S_min at their d in the
committed OPEN-3 table (docs/methods.md §2.9).

X (S, N, d) holds the inputs, Y (S, N, e) the outputs of S sequences of N tokens; V (d, e), when
known, adds E1. The readings: E1 (V known; S·N·e ≥ d²), E2 (where it runs: d·d(d+1)/2 ≤ 4096
features), the debiased E2 (N > d) and the candidate E2_centred with its floor rank (N − 1 > d),
each read by every rank estimator; the realized mixer needs the teacher and is not computed.
Inputs are checked (shape, finiteness) before any estimator runs (``load_arrays``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from attnrank.entropic.jobs import E1, E2, E2_DEBIASED, SOFTMAX
from attnrank.entropic.open3.candidate import (
    centred_eigenvalues,
    centred_stats,
    energies,
    floor_rank,
)
from attnrank.entropic.open3.jobs import E2_CENTRED, FLOOR_RANK, SMIN_TABLE
from attnrank.entropic.open3.table import reading_label, readings
from attnrank.entropic.predict import (
    e1_solve,
    e1_stats,
    e2_debiased_spectrum,
    e2_debiased_stats,
    e2_runs,
    e2_stats,
    e2_unfolding,
    estimates,
    prefix_stats,
)

CHUNK = 256  # sequences per chunk of the statistics


def _load(path: str | Path, what: str) -> np.ndarray:
    try:
        a = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file; expected {what} as a .npy array") from None
    except Exception as err:  # any failure to read is the answer
        raise ValueError(f"{path}: not a readable .npy array ({type(err).__name__}); expected "
                         f"{what}") from None
    if not isinstance(a, np.ndarray) or not np.issubdtype(a.dtype, np.number) \
            or np.issubdtype(a.dtype, np.complexfloating):
        raise ValueError(f"{path}: expected {what} of real numbers, got dtype {a.dtype}")
    return a


def load_arrays(x_path: str | Path, y_path: str | Path, v_path: str | Path | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """X (S, N, d), Y (S, N, e) and V (d, e) or None, as float64, checked before any work:
    ValueError naming the file and the shape expected (or the non-finite values) otherwise."""
    x = _load(x_path, "X of shape (S, N, d)")
    if x.ndim != 3 or min(x.shape) < 1:
        raise ValueError(f"{x_path}: expected X of shape (S, N, d), got shape {x.shape}")
    s_, n, d = x.shape
    y = _load(y_path, f"Y of shape (S, N, e) = ({s_}, {n}, e)")
    if y.ndim != 3 or y.shape[:2] != (s_, n) or y.shape[2] < 1:
        raise ValueError(f"{y_path}: expected Y of shape (S, N, e) = ({s_}, {n}, e) as X "
                         f"{x.shape}, got shape {y.shape}")
    v = None
    if v_path is not None:
        v = _load(v_path, f"V of shape (d, e) = ({d}, {y.shape[2]})")
        if v.shape != (d, y.shape[2]):
            raise ValueError(f"{v_path}: expected V of shape (d, e) = ({d}, {y.shape[2]}), got "
                             f"shape {v.shape}")
    for path, a, name in ((x_path, x, "X"), (y_path, y, "Y"), (v_path, v, "V")):
        if a is not None and not np.all(np.isfinite(a)):
            bad = int(np.size(a) - np.count_nonzero(np.isfinite(a)))
            raise ValueError(f"{path}: {name} holds {bad} NaN or infinite value(s); expected finite "
                             "numbers")
    return (x.astype(np.float64), y.astype(np.float64),
            None if v is None else v.astype(np.float64))


def data_readings(x: np.ndarray, y: np.ndarray, v: np.ndarray | None, taus: tuple[float, ...],
                  noise_floor: float) -> tuple[pd.DataFrame, list[str]]:
    """Every data-only reading of (X, Y[, V]) on all S sequences: rows (estimator, reading, label,
    value), and a line for each estimator that cannot run here (why)."""
    s_, n, d = x.shape
    e = y.shape[2]
    spectra: dict[str, np.ndarray] = {}
    skipped: list[str] = []
    whole = [s_]
    if v is None:
        skipped.append(f"{E1}: needs V (--values)")
    elif s_ * n * e < d * d:
        skipped.append(f"{E1}: needs S·N·e ≥ d² = {d * d} equations, got {s_ * n * e}")
    else:
        spectra[E1] = np.linalg.svd(e1_solve(*prefix_stats(
            lambda a, b: e1_stats(a, b, v), (x, y), whole, CHUNK)[s_]), compute_uv=False)
    if e2_runs(d):
        spectra[E2] = np.linalg.svd(e2_unfolding(*prefix_stats(e2_stats, (x, y), whole,
                                                               CHUNK)[s_], d), compute_uv=False)
    else:
        skipped.append(f"{E2}: not run at d = {d} (its regression has d·d(d+1)/2 > 4096 features)")
    if n > d:
        spectra[E2_DEBIASED] = e2_debiased_spectrum(
            prefix_stats(e2_debiased_stats, (x, y), whole, CHUNK)[s_])
    else:
        skipped.append(f"{E2_DEBIASED}: needs N > d, got N = {n}, d = {d}")
    rows = []
    if n - 1 > d:
        st = prefix_stats(centred_stats, (x, y), whole, CHUNK)[s_]
        lam = centred_eigenvalues(st)
        fit, var = energies(st)
        spectra[E2_CENTRED] = np.sqrt(lam)
        rows.append((E2_CENTRED, FLOOR_RANK, float(floor_rank(lam, fit, var, noise_floor))))
    else:
        skipped.append(f"{E2_CENTRED}: needs N − 1 > d, got N = {n}, d = {d}")
    for est, sv in spectra.items():
        rows += [(est, k, float(val)) for k, val in estimates(sv, taus).items()]
    df = pd.DataFrame(rows, columns=["estimator", "reading", "value"])
    order = {k: i for i, k in enumerate(readings(list(df["reading"].unique())))}
    df = df.assign(_o=df["reading"].map(order)).sort_values(["estimator", "_o"], kind="stable")
    df.insert(2, "label", [reading_label(a, b) for a, b in zip(df["estimator"], df["reading"],
                                                                 strict=True)])
    return df.drop(columns="_o").reset_index(drop=True), skipped


def reference_path(reference: str | Path) -> Path:
    """The S_min table of a reference folder: ``<reference>/tables/entropic_open3.parquet``."""
    return Path(reference) / "tables" / f"{SMIN_TABLE}.parquet"


def sufficiency(smin: pd.DataFrame, label: str, d: int, s_: int) -> str:
    """Whether S = ``s_`` sequences reach the S_min of reading ``label`` at ``d`` over every softmax
    (β, spectrum) cell of the S_min table, in words."""
    at_d = smin[(smin["d"] == d) & (smin["teacher"] == SOFTMAX)]
    if at_d.empty:
        found = ", ".join(str(int(x)) for x in sorted(smin["d"].unique()))
        return f"no reference at d = {d} (it has d = {found})"
    rows = at_d[at_d["label"] == label]
    if rows.empty:
        return f"not in the reference at d = {d}"
    cells = {(float(b), str(sp)) for b, sp in zip(at_d["beta"], at_d["spectrum"], strict=True)}
    have = {(float(r.beta), str(r.spectrum)): r for r in rows.itertuples()}
    bad = sorted(f"{sp} β={b:g}" for (b, sp) in cells
                 if (b, sp) not in have or have[(b, sp)].status != "S_min")
    if bad:
        return "no S of the reference grid suffices at " + ", ".join(bad)
    need = int(max(float(r.S_min) for r in have.values()))
    return (f"S_min = {need}: S = {s_} suffices" if s_ >= need
            else f"S_min = {need}: S = {s_} is too few")


def report(x_path: str | Path, y_path: str | Path, v_path: str | Path | None,
           config: dict[str, Any], reference: str | Path) -> str:
    """The text ``estimate-rank`` prints: the data's shape, every reading with whether S suffices
    at that d (the reference's S_min over every softmax β and spectrum), what was not computed."""
    x, y, v = load_arrays(x_path, y_path, v_path)
    s_, n, d = x.shape
    taus = tuple(float(t) for t in config["entropic"]["taus"])
    floor = float(config["claims"]["noise_floor"])
    table, skipped = data_readings(x, y, v, taus, floor)
    ref = reference_path(reference)
    smin = pd.read_parquet(ref) if ref.is_file() else None
    lines = [f"{x_path}, {y_path}: S = {s_} sequences of N = {n} tokens, d = {d}, e = {y.shape[2]}"
             + (f", V from {v_path}" if v_path is not None else ""),
             f"floor rank at noise floor {floor:g} (claims.noise_floor)"]
    if smin is None:
        lines.append(f"no reference table at {ref}: whether S = {s_} suffices is not known (the "
                     "full run writes it; docs/methods.md §2.9)")
    width = max(len(s) for s in table["label"]) + 2
    for r in table.itertuples():
        value = f"{r.value:.4g}" if math.isfinite(r.value) else "nan"
        tail = f"   {sufficiency(smin, r.label, d, s_)}" if smin is not None else ""
        lines.append(f"  {r.label:<{width}}{value:>8}{tail}")
    lines += [f"  not computed: {why}" for why in skipped]
    lines.append("  not computed: the realized mixer (it needs the teacher, not (X, Y))")
    return "\n".join(lines)
