"""Data-only estimators of the intrinsic rank r* of an attention teacher, from (X, Y) alone.

Every estimator returns the singular values (float64, descending) of a matrix whose rank is r* for
a noise-free linear teacher Y_s = X_s K (X_sᵀ X_s) V; the rank estimators of ``rank.py`` then act on
them. Statistics are sums over sequences, so they accumulate in chunks (and can be read off at
nested prefixes S₁ < S₂ < … of one stream of sequences).

E1 (V known): least squares for K in Y_s = X_s K B_s, B_s = X_sᵀ X_s V (d² unknowns, S·N·e
    equations). Normal equations Σ_s (G_s ⊗ B_s B_sᵀ) vec K = vec Σ_s X_sᵀ Y_s B_sᵀ, G_s = X_sᵀ X_s;
    G_s and C_s = B_s B_sᵀ are symmetric, so the normal matrix is accumulated in compact form
    Σ_s vech(G_s) vech(C_s)ᵀ (D × D, D = d(d+1)/2) and expanded once per solve.
E2 (V unknown): regress each output row y_n on the features x_n ⊗ vech(G_s) (d·d(d+1)/2 of them);
    the coefficient tensor Θ[a, p, j] unfolded along the x-index a is a d × (D·e) matrix
    K·(…) of rank r*. When S·N is below the number of features the ridge-regularized solution is
    (close to) the minimum-norm one, and is not expected to be exact. Its normal matrix
    Σ_s G_s ⊗ g_s g_sᵀ (g_s = vech G_s) is read off the symmetric third moment Σ_s g_s ⊗ g_s ⊗ g_s,
    accumulated over its D(D+1)(D+2)/6 distinct entries only.
E2 debiased (V unknown): the per-sequence OLS maps M_s = X_s⁺ Y_s = K G_s V + G_s⁻¹ X_sᵀ E_s;
    Σ_s M_s M_sᵀ − σ̂² e Σ_s G_s⁻¹ removes the noise Gram (σ̂² from the per-sequence residuals);
    the estimator's singular values are the square roots of its eigenvalues clipped at 0.
Realized mixer: the rank estimators of each input's N×N mixer M(X), averaged over inputs.

``chunk_stats`` computes the statistics of every estimator of one chunk of sequences at once,
sharing G_s = X_sᵀ X_s and X_sᵀ Y_s between them.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np

from attnrank.core.rank import (
    TAUS,
    energy_effective_rank,
    entropy_effective_rank,
    numerical_rank,
    stable_rank,
)
from attnrank.entropic.jobs import E1, E2, E2_DEBIASED

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
    """Solve (F + λI) θ = rhs for a symmetric PSD F (n, n) float64, λ = RIDGE · tr(F) / n, rhs
    (n, …): Cholesky F + λI = L Lᵀ, then L z = rhs and Lᵀ θ = z (LU if the Cholesky fails).
    Overwrites f with F + λI (the callers pass a matrix they have just built)."""
    import torch

    lam = RIDGE * float(np.trace(f)) / f.shape[0]
    f.flat[::f.shape[0] + 1] += lam
    a = torch.from_numpy(f)
    b = torch.from_numpy(np.ascontiguousarray(rhs.reshape(f.shape[0], -1)))
    chol, info = torch.linalg.cholesky_ex(a)
    if int(info) == 0:  # L Lᵀ θ = b: two triangular solves
        z = torch.linalg.solve_triangular(chol, b, upper=False)
        theta = torch.linalg.solve_triangular(chol.mT, z, upper=True)
    else:
        theta = torch.linalg.solve(a, b)
    return theta.numpy().reshape(rhs.shape)


def vech_index(d: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices (b ≤ l) of the half-vectorization of a symmetric d×d matrix."""
    return np.triu_indices(d)


def vech_position(d: int) -> np.ndarray:
    """P (d, d), int: P[b, l] = P[l, b] = the position of entry (min(b, l), max(b, l)) in vech, so
    that A = vech(A)[P] for a symmetric A."""
    rows, cols = vech_index(d)
    pos = np.empty((d, d), dtype=np.intp)
    pos[rows, cols] = np.arange(len(rows))
    pos[cols, rows] = pos[rows, cols]
    return pos


def vech(a: np.ndarray) -> np.ndarray:
    """The half-vectorization of each symmetric matrix of a stack (..., d, d): (..., d(d+1)/2)."""
    rows, cols = vech_index(a.shape[-1])
    return a[..., rows, cols]


def xty(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """X_sᵀ Y_s for sequences x (S, N, d), y (S, N, e): (S, d, e)."""
    return np.swapaxes(x, -1, -2) @ y


# ----------------------------------------------------------------------------------------------
# E1: V known


def e1_stats(x: np.ndarray, y: np.ndarray, v: np.ndarray, g: np.ndarray | None = None,
             xy: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """E1's statistics of sequences x (S, N, d), y (S, N, e) with V known (d, e): the compact
    normal matrix Σ_s vech(G_s) vech(B_s B_sᵀ)ᵀ (D, D), D = d(d+1)/2 (``e1_normal_matrix``
    expands it), and the right-hand side Σ_s X_sᵀ Y_s B_sᵀ (d, d), B_s = G_s V. ``g`` = G_s
    (S, d, d) and ``xy`` = X_sᵀ Y_s (S, d, e) when already computed."""
    g = gram(x) if g is None else g
    xy = xty(x, y) if xy is None else xy
    s_, d, e = xy.shape
    b = (g.reshape(s_ * d, d) @ v).reshape(s_, d, e)  # B_s = G_s V
    c = b @ np.swapaxes(b, -1, -2)  # B_s B_sᵀ (S, d, d)
    compact = vech(g).T @ vech(c)
    rhs = np.tensordot(xy, b, axes=([0, 2], [0, 2]))  # Σ_s Σ_j (X_sᵀ Y_s)[a, j] B_s[b, j]
    return compact, rhs


def e1_normal_matrix(compact: np.ndarray, d: int) -> np.ndarray:
    """E1's normal matrix Σ_s G_s ⊗ C_s, rows (a, b), columns (a', b') a-major (d², d²), from its
    compact form (``e1_stats``): F[(a, b), (a', b')] = compact[vech(a, a'), vech(b, b')]."""
    pos = vech_position(d)
    return compact[pos[:, None, :, None], pos[None, :, None, :]].reshape(d * d, d * d)


def e1_solve(compact: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """K̂ (d, d) from E1's statistics (``e1_stats``)."""
    d = rhs.shape[0]
    return _solve_psd(e1_normal_matrix(compact, d), rhs.reshape(d * d)).reshape(d, d)


def e1_kernel(x: np.ndarray, y: np.ndarray, v: np.ndarray) -> np.ndarray:
    """K̂ by least squares with V known."""
    return e1_solve(*e1_stats(x, y, v))


# ----------------------------------------------------------------------------------------------
# E2: V unknown, tensor unfolding


def third_moment(gv: np.ndarray) -> np.ndarray:
    """The distinct entries of the symmetric third moment T[i, j, k] = Σ_s g_s[i] g_s[j] g_s[k] of
    rows gv (S, n): the entries i ≤ j ≤ k, flat (n(n+1)(n+2)/6,), block by block of the middle
    index j (ascending), each block T[0..j, j, j..n−1] i-major (``moment_position`` locates any
    (i, j, k)). A sixth of the n³ products; each block is one matrix product over s."""
    n = gv.shape[1]
    out = np.empty(n * (n + 1) * (n + 2) // 6)
    lo = 0
    for j in range(n):
        size = (j + 1) * (n - j)
        block = out[lo:lo + size].reshape(j + 1, n - j)
        np.matmul(gv[:, :j + 1].T, gv[:, j:j + 1] * gv[:, j:], out=block)
        lo += size
    return out


def moment_position(i: np.ndarray, j: np.ndarray, k: np.ndarray, n: int) -> np.ndarray:
    """The position of T[i, j, k] (any order of the three indices, arrays broadcast together) in
    ``third_moment``'s flat layout: with a ≤ b ≤ c the sorted indices,
    off[b] + a·(n − b) + (c − b), off[b] = Σ_{b' < b} (b' + 1)(n − b')."""
    a = np.minimum(np.minimum(i, j), k)
    c = np.maximum(np.maximum(i, j), k)
    b = i + j + k - a - c
    sizes = (np.arange(n) + 1) * (n - np.arange(n))
    off = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    return off[b] + a * (n - b) + (c - b)


@lru_cache(maxsize=4)
def e2_gather_index(d: int) -> np.ndarray:
    """For E2 at dimension d (D = d(d+1)/2): the position in ``third_moment``'s layout of every
    entry of the full normal matrix (d·D, d·D), F[(a, p), (a', p')] = T[vech(a, a'), p, p'] (rows
    (a, p) a-major). Read-only, cached: as large as the matrix (E2 runs up to E2_MAX_FEATURES)."""
    n = d * (d + 1) // 2
    pos, p = vech_position(d), np.arange(n)
    idx = np.empty((d, n, d, n), dtype=np.intp)
    for a in range(d):  # one row block at a time: small temporaries
        idx[a] = moment_position(pos[a][None, :, None], p[:, None, None], p[None, None, :], n)
    idx = idx.reshape(d * n, d * n)
    idx.flags.writeable = False
    return idx


def e2_stats(x: np.ndarray, y: np.ndarray, g: np.ndarray | None = None,
             xy: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Statistics of the regression of y_n on x_n ⊗ vech(G_s), D = d(d+1)/2 features per x-index:
    the normal matrix F[(a, p), (a', p')] = Σ_s G_s[a, a'] g_s[p] g_s[p'] (g_s = vech(G_s)) in
    compact form, the third moment of g_s (``third_moment``; ``e2_normal_matrix`` expands it),
    and the right-hand side Σ_s (X_sᵀ Y_s)[a, j] g_s[p] (d·D, e), feature index (a, p) a-major.
    ``g``, ``xy``: G_s, X_sᵀ Y_s when already computed."""
    g = gram(x) if g is None else g
    xy = xty(x, y) if xy is None else xy
    d = g.shape[-1]
    gv = vech(g)  # (S, D)
    # G_s[a, a'] is itself an entry of g_s, so F is read off the symmetric third moment of g_s
    rhs = np.einsum("saj,sp->apj", xy, gv, optimize=True).reshape(d * gv.shape[1], -1)
    return third_moment(gv), rhs


def e2_normal_matrix(moment: np.ndarray, d: int) -> np.ndarray:
    """The full normal matrix (d·D, d·D), rows (a, p) a-major, from E2's compact statistics (the
    third moment of g_s, ``e2_stats``): F[(a, p), (a', p')] = T[vech(a, a'), p, p']."""
    return moment[e2_gather_index(d)]


def e2_unfolding(moment: np.ndarray, rhs: np.ndarray, d: int) -> np.ndarray:
    """The coefficient tensor Θ (d·D, e) of E2's statistics (``e2_stats``), (F + λI) Θ = rhs,
    unfolded along the x-index: (d, D·e)."""
    theta = _solve_psd(e2_normal_matrix(moment, d), rhs)  # (d·D, e)
    return theta.reshape(d, -1)


def spd_inverse(g: np.ndarray) -> np.ndarray:
    """G⁻¹ of each symmetric positive definite matrix of a stack (S, d, d), through its Cholesky
    factor (float64; LU where a factorization fails)."""
    import torch

    a = torch.from_numpy(np.ascontiguousarray(g))
    chol, info = torch.linalg.cholesky_ex(a)
    if bool(info.any()):
        return np.linalg.inv(g)
    return torch.cholesky_inverse(chol).numpy()


def e2_debiased_stats(x: np.ndarray, y: np.ndarray, g: np.ndarray | None = None,
                      xy: np.ndarray | None = None) -> dict[str, np.ndarray | float]:
    """Sums over sequences x (S, N, d), y (S, N, e) of M_s M_sᵀ (d, d), G_s⁻¹ (d, d), the residual
    sum of squares Σ_s ‖Y_s − X_s M_s‖² and its dof S(N − d)e, M_s = G_s⁻¹ X_sᵀ Y_s. ``g``, ``xy``:
    G_s, X_sᵀ Y_s when already computed."""
    s_, n, d = x.shape
    e = y.shape[-1]
    if n <= d:
        raise ValueError(f"per-sequence OLS needs N > d, got N={n}, d={d}")
    g = gram(x) if g is None else g
    xy = xty(x, y) if xy is None else xy
    g_inv = spd_inverse(g)
    m = g_inv @ xy  # (S, d, e)
    resid = x @ m
    np.subtract(y, resid, out=resid)
    return {"mm": np.tensordot(m, m, axes=([0, 2], [0, 2])), "g_inv": g_inv.sum(0),
            "rss": float(np.vdot(resid, resid)), "dof": float(s_ * (n - d) * e), "e": float(e)}


def e2_debiased_spectrum(st: dict[str, np.ndarray | float]) -> np.ndarray:
    """Singular values of the debiased stack: sqrt of the clipped eigenvalues of
    Σ M_s M_sᵀ − σ̂² e Σ G_s⁻¹ (descending)."""
    sigma2 = st["rss"] / st["dof"]
    c = st["mm"] - sigma2 * st["e"] * st["g_inv"]
    w = np.linalg.eigvalsh((c + c.T) / 2)
    return np.sqrt(np.clip(w, 0, None))[::-1]


def add_stats(a: Any, b: Any) -> Any:
    """Sum of two statistics of the same kind: arrays or floats, tuples of them, or dicts of them
    (nested; the key "e" is a constant, kept). ``a`` None: b."""
    if a is None:
        return b
    if isinstance(a, dict):
        return {k: (a[k] if k == "e" else add_stats(a[k], b[k])) for k in a}
    if isinstance(a, tuple):
        return tuple(add_stats(p, q) for p, q in zip(a, b, strict=True))
    return a + b


def chunk_stats(x: np.ndarray, y: np.ndarray, v: np.ndarray, with_e2: bool) -> dict[str, Any]:
    """The statistics of every estimator on sequences x (S, N, d), y (S, N, e) (V* (d, e) known to
    E1), sharing G_s and X_sᵀ Y_s: {"E1": ``e1_stats``, "E2_debiased": ``e2_debiased_stats``, and
    "E2": ``e2_stats`` where ``with_e2``}."""
    g, xy = gram(x), xty(x, y)
    out = {E1: e1_stats(x, y, v, g, xy), E2_DEBIASED: e2_debiased_stats(x, y, g, xy)}
    if with_e2:
        out[E2] = e2_stats(x, y, g, xy)
    return out


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
