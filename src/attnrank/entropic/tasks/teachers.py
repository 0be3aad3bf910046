"""Attention teachers of Paper A (A3 attention-native rank, A4 predictability).

Linear:  Y = c·(X K* Xᵀ) X V* + E          Softmax: Y = c·softmax(X K* Xᵀ) X V* + E
K* ∈ R^{d×d} has rank r* (P diag(s) Qᵀ, random orthonormal P, Q; flat or decaying spectrum) and is
scaled to ‖K*‖_F = β (the logit scale; no 1/√d). V* ∈ R^{d×e} is ``operators.value_map``: Haar
orthonormal columns (VᵀV = I, "orthonormal", the default) or iid N(0, 1/d) entries ("gaussian"),
config ``entropic.teacher_values``. The constant c makes the clean signal variance 1 per entry
under either V*; it is estimated once per teacher on a seeded calibration sample of inputs (its own
role in the seed scheme), so it is deterministic.

float64 numpy throughout; the trainers cast to float32.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnrank.entropic.jobs import KINDS, LINEAR, ORTHONORMAL
from attnrank.entropic.tasks.operators import low_rank_matrix, spectrum, value_map


def softmax(z: np.ndarray, axis: int = -1) -> np.ndarray:
    z = z - z.max(axis=axis, keepdims=True)
    ez = np.exp(z)
    return ez / ez.sum(axis=axis, keepdims=True)


@dataclass(frozen=True)
class AttentionTeacher:
    kind: str
    k_star: np.ndarray  # (d, d), rank r*, ‖K*‖_F = β
    v_star: np.ndarray  # (d, e)
    c: float
    beta: float
    s: np.ndarray  # the spectrum of K* before scaling to β
    noise_var: float

    @property
    def r_star(self) -> int:
        return len(self.s)

    def mixer(self, x: np.ndarray) -> np.ndarray:
        """The realized N×N mixer of inputs (..., N, d): X K* Xᵀ or softmax(X K* Xᵀ) (without c)."""
        logits = x @ self.k_star @ np.swapaxes(x, -1, -2)
        return logits if self.kind == LINEAR else softmax(logits)

    def clean(self, x: np.ndarray, chunk: int = 2048) -> np.ndarray:
        """c · M(X) X V*, (..., N, d) → (..., N, e), in chunks along the leading axis."""
        if x.ndim == 2:
            return self.clean(x[None], chunk)[0]
        out = [self.c * (self.mixer(x[i:i + chunk]) @ x[i:i + chunk] @ self.v_star)
               for i in range(0, x.shape[0], chunk)]
        return np.concatenate(out, axis=0)

    def sample(self, rng: np.random.Generator, n_seq: int, n_tokens: int
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(X, clean target, noisy target), each (n_seq, N, ·), float64."""
        d = self.k_star.shape[0]
        x = rng.standard_normal((n_seq, n_tokens, d))
        clean = self.clean(x)
        noisy = clean + np.sqrt(self.noise_var) * rng.standard_normal(clean.shape)
        return x, clean, noisy


def attention_teacher(rng: np.random.Generator, calib_rng: np.random.Generator, kind: str,
                      n_tokens: int, d: int, e: int, r_star: int, beta: float, noise_var: float,
                      calibration_sequences: int = 4096, spectrum_kind: str = "flat",
                      decay: float = 0.7, values: str = ORTHONORMAL) -> AttentionTeacher:
    """A teacher of exact kernel rank r*; V* of shape ``values`` (``value_map``, unscaled); c from
    ``calibration_sequences`` inputs of calib_rng: c = 1 / √(mean of (M(X) X V*)² over them)."""
    if kind not in KINDS:
        raise ValueError(f"teacher kind must be one of {KINDS}, got {kind!r}")
    if not beta > 0:
        raise ValueError(f"β must be > 0, got {beta}")
    if r_star > d:
        raise ValueError(f"r* = {r_star} exceeds d = {d}")
    s = spectrum(r_star, spectrum_kind, decay)
    k = low_rank_matrix(rng, d, d, s)
    k *= beta / np.linalg.norm(k)
    v = value_map(rng, d, e, values)
    t = AttentionTeacher(kind, k, v, 1.0, float(beta), s, float(noise_var))
    x = calib_rng.standard_normal((calibration_sequences, n_tokens, d))
    power = float(np.mean(t.clean(x) ** 2))
    return AttentionTeacher(kind, k, v, 1.0 / np.sqrt(power), float(beta), s, float(noise_var))
