"""Data-only estimators of the intrinsic rank r* of an attention teacher, from (X, Y) alone.

Every estimator returns the singular values (float64, descending) of a matrix whose rank is r* for
a noise-free linear teacher Y_s = X_s K (X_sᵀ X_s) V; the rank estimators of ``rank.py`` then act on
them. Statistics are sums over sequences, so they accumulate in chunks (and can be read off at
nested prefixes S₁ < S₂ < … of one stream of sequences).

E1 (V known): least squares for K in Y_s = X_s K B_s, B_s = X_sᵀ X_s V (d² unknowns, S·N·e
    equations). Normal equations Σ_s (G_s ⊗ B_s B_sᵀ) vec K = vec Σ_s X_sᵀ Y_s B_sᵀ, G_s = X_sᵀ X_s.
E2 (V unknown): regress each output row y_n on the features x_n ⊗ vech(G_s) (d·d(d+1)/2 of them);
    the coefficient tensor Θ[a, p, j] unfolded along the x-index a is a d × (D·e) matrix
    K·(…) of rank r*. When S·N is below the number of features the ridge-regularized solution is
    (close to) the minimum-norm one, and is not expected to be exact.
E2 debiased (V unknown): the per-sequence OLS maps M_s = X_s⁺ Y_s = K G_s V + G_s⁻¹ X_sᵀ E_s;
    Σ_s M_s M_sᵀ − σ̂² e Σ_s G_s⁻¹ removes the noise Gram (σ̂² from the per-sequence residuals);
    the estimator's singular values are the square roots of its eigenvalues clipped at 0.
Realized mixer: the rank estimators of each input's N×N mixer M(X), averaged over inputs.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from attnrank.core.rank import (
    TAUS,
    energy_effective_rank,
    entropy_effective_rank,
    numerical_rank,
    stable_rank,
)

RIDGE = 1e-9  # relative to the mean diagonal of a normal matrix (numerical safety only)
# E2's regression has d·d(d+1)/2 features: 2,176 at d = 16, 16,896 at d = 32. At d = 32 its normal
# matrix alone is 2.3 GB and one (r*, seed) instance costs ≈ 800 CPU-s (statistics ≈ 2.1 s per 64
# sequences, a Cholesky ≈ 50 s per S; measured, 1 thread), so E2 is not run beyond this many.
E2_MAX_FEATURES = 4096


def e2_features(d: int) -> int:
    """The number of features of E2's regression, d · d(d+1)/2."""
    return d * d * (d + 1) // 2


def e2_runs(d: int) -> bool:
    """Whether E2 (tensor unfolding) is computed at ``d`` (at most ``E2_MAX_FEATURES`` features)."""
    return e2_features(d) <= E2_MAX_FEATURES


def estimates(s: np.ndarray, taus: tuple[float, ...] = TAUS) -> dict[str, float | np.ndarray]:
    """Every rank estimator of a spectrum, or of a stack of spectra (…, k)."""
    out: dict[str, float | np.ndarray] = {f"numerical_rank_tau{t:g}": numerical_rank(s, t) for t in taus}
    out["energy_effective_rank"] = energy_effective_rank(s)
    out["entropy_effective_rank"] = entropy_effective_rank(s)
    out["stable_rank"] = stable_rank(s)
    return out


def gram(x: np.ndarray) -> np.ndarray:
    """G_s = X_sᵀ X_s for sequences (S, N, d): (S, d, d)."""
    return np.swapaxes(x, -1, -2) @ x


def _solve_psd(f: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Solve (F + λI) θ = rhs for a symmetric PSD F (Cholesky, float64; LU if it fails)."""
    import torch

    lam = RIDGE * float(np.trace(f)) / f.shape[0]
    a = torch.from_numpy(f + lam * np.eye(f.shape[0]))
    b = torch.from_numpy(np.ascontiguousarray(rhs.reshape(f.shape[0], -1)))
    chol, info = torch.linalg.cholesky_ex(a)
    theta = torch.cholesky_solve(b, chol) if int(info) == 0 else torch.linalg.solve(a, b)
    return theta.numpy().reshape(rhs.shape)


def vech_index(d: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices (b ≤ l) of the half-vectorization of a symmetric d×d matrix."""
    return np.triu_indices(d)


# ----------------------------------------------------------------------------------------------
# E1: V known


def e1_stats(x: np.ndarray, y: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(normal matrix (d², d²), right-hand side (d, d)) of sequences x (S, N, d), y (S, N, e)."""
    s_, _, d = x.shape
    g = gram(x)
    b = g @ v  # (S, d, e)
    c = b @ np.swapaxes(b, -1, -2)  # B_s B_sᵀ (S, d, d)
    f = (g.reshape(s_, d * d).T @ c.reshape(s_, d * d)).reshape(d, d, d, d)  # [a, a', b, b']
    f = f.transpose(0, 2, 1, 3).reshape(d * d, d * d)  # [(a, b), (a', b')]
    rhs = np.einsum("sna,snj,sbj->ab", x, y, b, optimize=True)
    return f, rhs


def e1_solve(f: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """K̂ (d, d) from E1's statistics."""
    d = rhs.shape[0]
    return _solve_psd(f, rhs.reshape(d * d)).reshape(d, d)


def e1_kernel(x: np.ndarray, y: np.ndarray, v: np.ndarray) -> np.ndarray:
    """K̂ by least squares with V known."""
    return e1_solve(*e1_stats(x, y, v))


# ----------------------------------------------------------------------------------------------
# E2: V unknown, tensor unfolding


def e2_stats(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Statistics of the regression of y_n on x_n ⊗ vech(G_s), D = d(d+1)/2 features per x-index:
    (the normal matrix in compact form, see ``e2_normal_matrix``; right-hand side (d·D, e), feature
    index (a, p) a-major)."""
    s_, _, d = x.shape
    g = gram(x)
    rows, cols = vech_index(d)
    gv = g[:, rows, cols]  # (S, D)
    pp, qq = np.triu_indices(gv.shape[1])
    # F[a, a', p, p'] = Σ_s G_s[a, a'] g_s[p] g_s[p'] is symmetric in (a, a') and in (p, p'):
    # accumulate only a ≤ a', p ≤ p' (a quarter of the work).
    compact = gv.T @ (gv[:, pp] * gv[:, qq])
    xty = np.swapaxes(x, -1, -2) @ y  # (S, d, e)
    rhs = np.einsum("saj,sp->apj", xty, gv, optimize=True).reshape(d * gv.shape[1], -1)
    return compact, rhs


def e2_normal_matrix(compact: np.ndarray, d: int) -> np.ndarray:
    """The full normal matrix (d·D, d·D) from its compact form (vech (a, a'), vech (p, p'))."""
    rows, cols = vech_index(d)
    n_p = len(rows)
    pp, qq = np.triu_indices(n_p)
    blocks = np.empty((len(rows), n_p, n_p))
    blocks[:, pp, qq] = compact
    blocks[:, qq, pp] = compact
    full = np.empty((d, d, n_p, n_p))
    full[rows, cols] = blocks
    full[cols, rows] = blocks
    return full.transpose(0, 2, 1, 3).reshape(d * n_p, d * n_p)


def e2_unfolding(compact: np.ndarray, rhs: np.ndarray, d: int) -> np.ndarray:
    """The coefficient tensor unfolded along the x-index: (d, D·e)."""
    theta = _solve_psd(e2_normal_matrix(compact, d), rhs)  # (d·D, e)
    return theta.reshape(d, -1)


def e2_debiased_stats(x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray | float]:
    """Sums over sequences of M_s M_sᵀ, G_s⁻¹, the residual sum of squares and its dof."""
    s_, n, d = x.shape
    e = y.shape[-1]
    if n <= d:
        raise ValueError(f"per-sequence OLS needs N > d, got N={n}, d={d}")
    g = gram(x)
    g_inv = np.linalg.inv(g)
    m = g_inv @ (np.swapaxes(x, -1, -2) @ y)  # (S, d, e)
    resid = y - x @ m
    return {"mm": np.einsum("sae,sbe->ab", m, m), "g_inv": g_inv.sum(0),
            "rss": float(np.sum(resid**2)), "dof": float(s_ * (n - d) * e), "e": float(e)}


def e2_debiased_spectrum(st: dict[str, np.ndarray | float]) -> np.ndarray:
    """Singular values of the debiased stack: sqrt of the clipped eigenvalues of
    Σ M_s M_sᵀ − σ̂² e Σ G_s⁻¹ (descending)."""
    sigma2 = st["rss"] / st["dof"]
    c = st["mm"] - sigma2 * st["e"] * st["g_inv"]
    w = np.linalg.eigvalsh((c + c.T) / 2)
    return np.sqrt(np.clip(w, 0, None))[::-1]


def add_stats(a, b):
    """Sum of two statistics of the same kind (tuples of arrays or dicts of arrays/floats)."""
    if a is None:
        return b
    if isinstance(a, dict):
        return {k: (a[k] + b[k] if k != "e" else a[k]) for k in a}
    return tuple(p + q for p, q in zip(a, b, strict=True))


# ----------------------------------------------------------------------------------------------
# Realized mixer


def mixer_estimates(mixers: np.ndarray, taus: tuple[float, ...] = TAUS) -> dict[str, float]:
    """Every rank estimator of each N×N mixer of a stack (n, N, N), averaged over the stack."""
    s = np.linalg.svd(np.asarray(mixers, dtype=np.float64), compute_uv=False)
    return {k: float(np.mean(v)) for k, v in estimates(s, taus).items()}


# ----------------------------------------------------------------------------------------------
# Nested prefixes of one stream


def prefix_stats(stat: Callable, arrays: tuple[np.ndarray, ...], sizes: list[int],
                 chunk: int = 256) -> dict[int, object]:
    """stat summed over the first S sequences of ``arrays`` (each (S_max, …)), for every S in
    ``sizes``: one pass over the stream, in chunks that end on every prefix boundary."""
    sizes = sorted(set(int(s) for s in sizes))
    if sizes[-1] > arrays[0].shape[0]:
        raise ValueError(f"prefix {sizes[-1]} exceeds the {arrays[0].shape[0]} sequences given")
    out, total, start = {}, None, 0
    for cut in sizes:
        for lo in range(start, cut, chunk):
            hi = min(lo + chunk, cut)
            total = add_stats(total, stat(*(a[lo:hi] for a in arrays)))
        out[cut] = total
        start = cut
    return out
