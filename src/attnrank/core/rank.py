"""Rank estimators: pure functions of the singular values s_1 >= s_2 >= ... >= 0 of a matrix.

All estimators return 0.0 for the zero matrix (never NaN). Inputs are cast to float64.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

TAUS: tuple[float, ...] = (0.01, 0.05, 0.1)


def singular_values(matrix: ArrayLike) -> np.ndarray:
    """Singular values (descending, float64) of a 2-D matrix or a stack (..., n, k)."""
    a = np.asarray(matrix, dtype=np.float64)
    if a.ndim < 2:
        raise ValueError(f"expected a matrix (…, n, k), got shape {a.shape}")
    return np.linalg.svd(a, compute_uv=False)


def _check(s: ArrayLike) -> np.ndarray:
    s = np.asarray(s, dtype=np.float64)
    if np.any(s < 0) or not np.all(np.isfinite(s)):
        raise ValueError("singular values must be finite and non-negative")
    return np.sort(s, axis=-1)[..., ::-1]


def numerical_rank(s: ArrayLike, tau: float = 0.05) -> np.ndarray | int:
    """#{i : s_i > tau * s_1}; 0 for the zero matrix."""
    s = _check(s)
    top = s[..., :1]
    out = np.where(top[..., 0] > 0, np.sum(s > tau * top, axis=-1), 0)
    return int(out) if out.ndim == 0 else out


def energy_effective_rank(s: ArrayLike) -> np.ndarray | float:
    """R̃_eff = (Σ s_i²)² / Σ s_i⁴ (participation ratio of the energies); 0 for zero."""
    s = _check(s)
    e = s**2
    num = np.sum(e, axis=-1) ** 2
    den = np.sum(e**2, axis=-1)
    out = np.divide(num, den, out=np.zeros_like(num), where=den > 0)
    return float(out) if out.ndim == 0 else out


def entropy_effective_rank(s: ArrayLike) -> np.ndarray | float:
    """exp(H(p)), p_i = s_i² / Σ s_j² (natural log); 0 for zero."""
    s = _check(s)
    e = s**2
    tot = np.sum(e, axis=-1, keepdims=True)
    p = np.divide(e, tot, out=np.zeros_like(e), where=tot > 0)
    plogp = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    out = np.where(tot[..., 0] > 0, np.exp(-np.sum(plogp, axis=-1)), 0.0)
    return float(out) if out.ndim == 0 else out


def stable_rank(s: ArrayLike) -> np.ndarray | float:
    """Σ s_i² / s_1²; 0 for zero."""
    s = _check(s)
    top = s[..., 0] ** 2
    tot = np.sum(s**2, axis=-1)
    out = np.divide(tot, top, out=np.zeros_like(tot), where=top > 0)
    return float(out) if out.ndim == 0 else out


def all_estimates(s: ArrayLike, taus: tuple[float, ...] = TAUS) -> dict[str, float]:
    """Every estimator on one spectrum, as a flat dict (column names for the tidy tables)."""
    s = _check(s)
    if s.ndim != 1:
        raise ValueError(f"all_estimates takes one spectrum, got shape {s.shape}")
    out: dict[str, float] = {f"numerical_rank_tau{t:g}": float(numerical_rank(s, t)) for t in taus}
    out["energy_effective_rank"] = float(energy_effective_rank(s))
    out["entropy_effective_rank"] = float(entropy_effective_rank(s))
    out["stable_rank"] = float(stable_rank(s))
    return out
