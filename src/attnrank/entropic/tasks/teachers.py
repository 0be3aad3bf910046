"""Attention teachers of Paper A (A3 attention-native rank, A4 predictability).

Linear:  Y = c·(X K* Xᵀ) X V* + E          Softmax: Y = c·softmax(X K* Xᵀ) X V* + E
K* ∈ R^{d×d} has rank r* (P diag(s) Qᵀ, random orthonormal P, Q; flat or decaying spectrum) and is
scaled to ‖K*‖_F = β (the logit scale; no 1/√d). V* ∈ R^{d×e} is ``operators.value_map``: Haar
orthonormal columns (VᵀV = I, "orthonormal", the default) or iid N(0, 1/d) entries ("gaussian"),
config ``entropic.teacher_values``. The constant c makes the clean signal variance 1 per entry
under either V*; it is estimated once per teacher on a seeded calibration sample of inputs (its own
role in the seed scheme), so it is deterministic.

float64 numpy throughout; the trainers cast to float32. The teacher is simulated in chunks of
``CHUNK`` sequences so that every intermediate (the N×N mixers of a chunk) stays in cache and is
updated in place; each sequence gets the same matrix products and row reductions as on the whole
stack at once, so the outputs do not depend on the chunk size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnrank.entropic.jobs import KINDS, LINEAR, ORTHONORMAL
from attnrank.entropic.tasks.operators import low_rank_matrix, spectrum, value_map

# Sequences simulated at once: 32 sequences of N = 64 tokens hold 1 MiB of mixers (cache-sized).
CHUNK = 32


def softmax_(z: np.ndarray) -> np.ndarray:
    """Softmax along the last axis, in place: z ← exp(z − max z) / Σ exp(z − max z), rows of any
    stack (..., N); returns z."""
    z -= z.max(axis=-1, keepdims=True)
    np.exp(z, out=z)
    z /= z.sum(axis=-1, keepdims=True)
    return z


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
        """The realized N×N mixers of inputs x (..., N, d): M(X) = X K* Xᵀ (linear) or
        softmax(X K* Xᵀ) row-wise (softmax), (..., N, N), without c."""
        logits = x @ self.k_star @ np.swapaxes(x, -1, -2)
        return logits if self.kind == LINEAR else softmax_(logits)

    def clean_into(self, x: np.ndarray, out: np.ndarray | None, chunk: int = CHUNK,
                   noisy: np.ndarray | None = None) -> np.ndarray | None:
        """c · M(X_s) X_s V* for inputs x (S, N, d), ``chunk`` sequences at a time (module
        docstring), written into ``out`` (S, N, e) (None: into a chunk-sized scratch, not kept).
        ``noisy`` (S, N, e), holding standard normal noise E on entry, becomes the clean target
        + σ E (σ² = noise_var), each chunk while it is in cache. Returns out."""
        sigma = np.sqrt(self.noise_var)
        scratch = np.empty((min(chunk, x.shape[0]), x.shape[1], self.v_star.shape[1]))
        for lo in range(0, x.shape[0], chunk):
            xc = x[lo:lo + chunk]
            dst = scratch[:len(xc)] if out is None else out[lo:lo + chunk]
            part = np.matmul(self.mixer(xc) @ xc, self.v_star, out=dst)
            part *= self.c
            if noisy is not None:
                noise = noisy[lo:lo + chunk]
                noise *= sigma
                noise += part
        return out

    def clean(self, x: np.ndarray, chunk: int = CHUNK) -> np.ndarray:
        """c · M(X) X V*: inputs (..., N, d) → (..., N, e), float64 (``clean_into``)."""
        if x.ndim == 2:
            return self.clean(x[None], chunk)[0]
        lead = x.shape[:-2]
        flat = x.reshape(-1, *x.shape[-2:])
        out = np.empty((flat.shape[0], x.shape[-2], self.v_star.shape[1]))
        self.clean_into(flat, out, chunk)
        return out.reshape(*lead, *out.shape[1:])

    def sample_into(self, rng: np.random.Generator, x: np.ndarray, noisy: np.ndarray,
                    clean: np.ndarray | None = None) -> None:
        """Draw X iid N(0, 1) into x (S, N, d) (first), then E iid N(0, 1) into noisy (S, N, e)
        (second), and make noisy the noisy target c M(X) X V* + σ E; ``clean`` (S, N, e), if
        given, receives the clean target. Preallocated buffers: a caller drawing many samples
        of one size reuses them instead of asking the system for fresh memory each time."""
        rng.standard_normal(out=x)
        rng.standard_normal(out=noisy)
        self.clean_into(x, clean, noisy=noisy)

    def sample(self, rng: np.random.Generator, n_seq: int, n_tokens: int
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(X, clean target, noisy target), each (n_seq, N, ·), float64 (``sample_into``)."""
        d, e = self.v_star.shape
        x, clean, noisy = (np.empty((n_seq, n_tokens, k)) for k in (d, e, e))
        self.sample_into(rng, x, noisy, clean)
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
    y = t.clean(x)
    power = float(np.mean(np.square(y, out=y)))
    return AttentionTeacher(kind, k, v, 1.0 / np.sqrt(power), float(beta), s, float(noise_var))
