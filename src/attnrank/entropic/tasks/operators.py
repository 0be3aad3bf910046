"""Fixed-operator tasks of Paper A (A1 linear surrogate, A2 ladder) and the Eckart–Young bound.

A task instance is a teacher Y = A* X V* + E with X ∈ R^{N×d} (entries iid N(0, 1)), a fixed
token mixer A* ∈ R^{N×N} of rank r* (A* = P diag(s) Qᵀ, P, Q random orthonormal), a feature map
V* ∈ R^{d×e} and noise E iid N(0, σ²). V*'s shape is ``teacher_values`` (config
``entropic.teacher_values``, shared by every Paper A teacher): "orthonormal", Haar-random
orthonormal columns (flat spectrum, the default), or "gaussian", iid N(0, 1/d) entries. V* is then
scaled (one scalar) so that the clean signal has variance 1 per entry: E[(A* X V*)_ij²] averaged
over (i, j) equals ‖A*‖_F² ‖V*‖_F² / (N e) = 1, so A* keeps the configured spectrum s exactly and an
orthonormal V* keeps orthogonal columns of equal norm √(N / Σ s_i²).

Everything here is float64 numpy (teachers, the bound); the trainers cast data to float32.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnrank.entropic.jobs import GAUSSIAN, ORTHONORMAL, TEACHER_VALUES

SPECTRA = ("flat", "decaying")


def random_orthonormal(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    """An n×k matrix with orthonormal columns, Haar-distributed (QR of a Gaussian, sign-fixed)."""
    if not 1 <= k <= n:
        raise ValueError(f"need 1 ≤ k ≤ n, got k={k}, n={n}")
    q, r = np.linalg.qr(rng.standard_normal((n, k)))
    return q * np.sign(np.where(np.diag(r) == 0, 1.0, np.diag(r)))


def value_map(rng: np.random.Generator, d: int, e: int, values: str = ORTHONORMAL) -> np.ndarray:
    """A teacher's V* ∈ R^{d×e} before any scaling, from one Gaussian draw G (d×e, iid N(0, 1)):
    "orthonormal": the Q factor of G (Haar orthonormal columns, VᵀV = I_e, needs e ≤ d);
    "gaussian": G / √d (iid N(0, 1/d)). Both have E‖V‖_F² = e and use the same draw, so the two
    choices of one seed share K*, A* and every later draw of ``rng``."""
    if values == ORTHONORMAL:
        if e > d:
            raise ValueError(f"orthonormal teacher values need e ≤ d, got e={e}, d={d}")
        return random_orthonormal(rng, d, e)
    if values == GAUSSIAN:
        return rng.standard_normal((d, e)) / np.sqrt(d)
    raise ValueError(f"teacher values must be one of {TEACHER_VALUES}, got {values!r}")


def spectrum(r_star: int, kind: str = "flat", decay: float = 0.7) -> np.ndarray:
    """The r* nonzero singular values: flat (s_i = 1) or decaying (s_i = decay^(i−1))."""
    if r_star < 1:
        raise ValueError(f"r* must be ≥ 1, got {r_star}")
    if kind == "flat":
        return np.ones(r_star)
    if kind == "decaying":
        if not 0 < decay < 1:
            raise ValueError(f"decay must be in (0, 1), got {decay}")
        return decay ** np.arange(r_star, dtype=np.float64)
    raise ValueError(f"spectrum must be one of {SPECTRA}, got {kind!r}")


def low_rank_matrix(rng: np.random.Generator, n: int, m: int, s: np.ndarray) -> np.ndarray:
    """P diag(s) Qᵀ ∈ R^{n×m} with random orthonormal P (n×k), Q (m×k), k = len(s)."""
    k = len(s)
    if k > min(n, m):
        raise ValueError(f"rank {k} exceeds min({n}, {m})")
    return (random_orthonormal(rng, n, k) * s) @ random_orthonormal(rng, m, k).T


@dataclass(frozen=True)
class OperatorTeacher:
    """Y = A* X V* + E. a_star (N, N), v_star (d, e), s: the spectrum of A*, noise_var σ²."""

    a_star: np.ndarray
    v_star: np.ndarray
    s: np.ndarray
    noise_var: float

    @property
    def n_tokens(self) -> int:
        return self.a_star.shape[0]

    @property
    def r_star(self) -> int:
        return len(self.s)

    def clean(self, x: np.ndarray) -> np.ndarray:
        """A* X V* for inputs (..., N, d) → (..., N, e)."""
        return self.a_star @ x @ self.v_star

    def sample(self, rng: np.random.Generator, n_seq: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(X, clean target, noisy target), each (n_seq, N, ·), float64."""
        n, d = self.a_star.shape[0], self.v_star.shape[0]
        x = rng.standard_normal((n_seq, n, d))
        clean = self.clean(x)
        noisy = clean + np.sqrt(self.noise_var) * rng.standard_normal(clean.shape)
        return x, clean, noisy


def operator_teacher(rng: np.random.Generator, n_tokens: int, d: int, e: int, r_star: int,
                     noise_var: float, kind: str = "flat", decay: float = 0.7,
                     values: str = ORTHONORMAL) -> OperatorTeacher:
    """A teacher of exact rank r* with unit signal variance per entry (see module docstring);
    ``values``: V*'s shape (``value_map``) before its one scale factor."""
    if r_star > n_tokens:
        raise ValueError(f"r* = {r_star} exceeds N = {n_tokens}")
    s = spectrum(r_star, kind, decay)
    a_star = low_rank_matrix(rng, n_tokens, n_tokens, s)
    v = value_map(rng, d, e, values)
    v *= np.sqrt(n_tokens * e / (np.sum(s**2) * np.sum(v**2)))
    return OperatorTeacher(a_star, v, s, float(noise_var))


def eckart_young_bound(s: np.ndarray, v_star: np.ndarray, n_tokens: int, r: int) -> float:
    """min over rank-r A and any V of the excess risk ‖Vᵀ⊗A − V*ᵀ⊗A*‖_F² / (N e), in float64:
    ‖V*‖_F² Σ_{i>r} s_i² / (N e), s the singular values of A* (descending)."""
    s = np.sort(np.asarray(s, dtype=np.float64))[::-1]
    e = v_star.shape[1]
    return float(np.sum(np.asarray(v_star, np.float64) ** 2) * np.sum(s[r:] ** 2) / (n_tokens * e))


def truncate(a: np.ndarray, r: int) -> np.ndarray:
    """The best rank-r approximation of a (SVD truncation), float64."""
    u, s, vt = np.linalg.svd(np.asarray(a, dtype=np.float64))
    return (u[:, :r] * s[:r]) @ vt[:r]


def population_excess(a: np.ndarray, v: np.ndarray, a_star: np.ndarray, v_star: np.ndarray) -> float:
    """E_X ‖A X V − A* X V*‖_F² / (N e) for X iid N(0, 1), exactly:
    (‖A‖²‖V‖² − 2⟨A, A*⟩⟨V, V*⟩ + ‖A*‖²‖V*‖²) / (N e)."""
    a, v, a_star, v_star = (np.asarray(t, dtype=np.float64) for t in (a, v, a_star, v_star))
    n, e = a_star.shape[0], v_star.shape[1]
    val = (np.sum(a**2) * np.sum(v**2) - 2 * np.sum(a * a_star) * np.sum(v * v_star)
           + np.sum(a_star**2) * np.sum(v_star**2))
    return float(val / (n * e))


def best_v(a: np.ndarray, a_star: np.ndarray, v_star: np.ndarray) -> np.ndarray:
    """The population-optimal V for a fixed A: V* ⟨A, A*⟩ / ‖A‖²."""
    den = float(np.sum(np.asarray(a, np.float64) ** 2))
    return np.asarray(v_star, np.float64) * (float(np.sum(a * a_star)) / den if den > 0 else 0.0)
