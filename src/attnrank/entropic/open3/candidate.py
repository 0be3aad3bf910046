"""The OPEN-3 candidate (docs/methods.md §2.9): the centred debiased E2 (``E2_centred``) and its
floor rank, from sequences (X, Y) alone.

To first order in the logits a softmax teacher's output is c·1 x̄ᵀV* (uniform mixing, independent
of K*) plus (c/N)·X̃ K* G̃ V*, with X̃ = (I − 11ᵀ/N) X the token-centred inputs and G̃ = X̃ᵀX̃.
Centring tokens removes the first term, and what is left has the linear teacher's form, whose
per-sequence map has rank r*. Per sequence s (N − 1 > d):

    M̃_s = G̃_s⁻¹ X̃_sᵀ Ỹ_s,   σ̂² = Σ_s ‖Ỹ_s − X̃_s M̃_s‖² / (S (N − 1 − d) e),
    C̃ = Σ_s M̃_s M̃_sᵀ − σ̂² e Σ_s G̃_s⁻¹,   λ = eigenvalues of C̃ clipped at 0 (descending),

the singular values are √λ, and the floor rank is

    r̂_floor = min{ r ∈ 1 … d : Ê · Σ_{i>r} λ_i / Σ_i λ_i ≤ φ · V̂ },
    Ê = (Σ_s ‖X̃_s M̃_s‖² − σ̂² e d S) / (S N e),   V̂ = (Σ_s ‖Y_s‖² − σ̂² S N e) / (S N e),

the smallest rank whose estimated truncation cost is at most the fraction φ (the noise floor) of
the signal variance. The statistics are sums over sequences (``centred_stats``), so they add up
over chunks and nested prefixes (``entropic.predict.prefix_stats``, ``add_stats``).
"""

from __future__ import annotations

import numpy as np

from attnrank.entropic.predict import spd_inverse


def centre_tokens(a: np.ndarray) -> np.ndarray:
    """Each sequence of a stack (S, N, k) minus its mean over the N tokens: (I − 11ᵀ/N) A_s."""
    return a - a.mean(axis=-2, keepdims=True)


def centred_stats(x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray | float]:
    """The candidate's sums over sequences x (S, N, d), y (S, N, e): ``mm`` = Σ M̃_s M̃_sᵀ (d, d),
    ``g_inv`` = Σ G̃_s⁻¹ (d, d), ``rss`` = Σ ‖Ỹ_s − X̃_s M̃_s‖² and its ``dof`` S(N − 1 − d)e,
    ``fit`` = Σ ‖X̃_s M̃_s‖², ``yy`` = Σ ‖Y_s‖², ``count`` = S·N·e, ``seqs`` = S, with M̃_s = G̃_s⁻¹ X̃_sᵀ Ỹ_s on
    token-centred sequences; ``e`` (a constant, kept by ``add_stats``). ValueError unless
    N − 1 > d."""
    s_, n, d = x.shape
    e = y.shape[-1]
    if n - 1 <= d:
        raise ValueError(f"the centred per-sequence OLS needs N − 1 > d, got N={n}, d={d}")
    xc, yc = centre_tokens(x), centre_tokens(y)
    g = np.swapaxes(xc, -1, -2) @ xc  # G̃_s (S, d, d)
    g_inv = spd_inverse(g)
    m = g_inv @ (np.swapaxes(xc, -1, -2) @ yc)  # M̃_s (S, d, e)
    fitted = xc @ m
    fit = float(np.vdot(fitted, fitted))
    np.subtract(yc, fitted, out=fitted)  # the residuals, in place
    return {"mm": np.tensordot(m, m, axes=([0, 2], [0, 2])), "g_inv": g_inv.sum(0),
            "rss": float(np.vdot(fitted, fitted)), "dof": float(s_ * (n - 1 - d) * e),
            "fit": fit, "yy": float(np.vdot(y, y)), "count": float(s_ * n * e),
            "seqs": float(s_), "e": float(e)}


def centred_eigenvalues(st: dict[str, np.ndarray | float]) -> np.ndarray:
    """λ (d,), descending: the eigenvalues of C̃ = Σ M̃_s M̃_sᵀ − σ̂² e Σ G̃_s⁻¹ clipped at 0, from
    ``centred_stats``."""
    sigma2 = st["rss"] / st["dof"]
    c = st["mm"] - sigma2 * st["e"] * st["g_inv"]
    w = np.linalg.eigvalsh((c + c.T) / 2)
    return np.clip(w, 0, None)[::-1]


def centred_spectrum(st: dict[str, np.ndarray | float]) -> np.ndarray:
    """E2_centred's singular values √λ (d,), descending (``centred_eigenvalues``)."""
    return np.sqrt(centred_eigenvalues(st))


def energies(st: dict[str, np.ndarray | float]) -> tuple[float, float]:
    """(Ê, V̂) per entry from ``centred_stats``: the energy of the centred fits less the noise's
    expected share σ̂² e d per sequence, and the signal variance, Σ‖Y_s‖² less σ̂² per entry, each
    divided by S·N·e."""
    sigma2 = st["rss"] / st["dof"]
    d = st["mm"].shape[0]
    count = st["count"]
    fit = (st["fit"] - sigma2 * st["e"] * d * st["seqs"]) / count
    return float(fit), float((st["yy"] - sigma2 * count) / count)


def truncation_costs(lam: np.ndarray, fit_energy: float) -> np.ndarray:
    """ε̂(r) for r = 0 … d (d + 1,): Ê · Σ_{i>r} λ_i / Σ_i λ_i for eigenvalues λ (d,), descending;
    all 0 when Σ λ_i = 0."""
    lam = np.asarray(lam, dtype=np.float64)
    total = float(lam.sum())
    tails = np.concatenate([[total], total - np.cumsum(lam)])
    tails = np.clip(tails, 0, None)
    return fit_energy * tails / total if total > 0 else np.zeros(len(lam) + 1)


def floor_rank(lam: np.ndarray, fit_energy: float, signal_variance: float, floor: float) -> int:
    """r̂_floor = min{r ∈ 1 … d : ε̂(r) ≤ floor · V̂} (``truncation_costs``); d when none (ε̂(d) = 0,
    so only a negative V̂ leaves none)."""
    costs = truncation_costs(lam, fit_energy)[1:]
    ok = np.flatnonzero(costs <= floor * signal_variance)
    return int(ok[0]) + 1 if len(ok) else len(lam)
