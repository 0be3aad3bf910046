"""Attention students of Paper A, vectorized over a leading model axis.

``AttentionStudents`` (ladder rungs B1, B2 and the attention-native students of A3):
    linear:  Ŷ = scale·(X' W_Q)(X' W_K)ᵀ X' V          softmax: Ŷ = softmax(scale·(X' W_Q)(X' W_K)ᵀ) X' V
with the query-key kernel K = W_Q W_Kᵀ of rank r (W_Q, W_K ∈ R^{d'×r}) and X' = X, or X' = [X, P]
with learned positional features P ∈ R^{N×p} concatenated to every sequence (the ablation).

Layout: I instances × R ranks; parameters (I, R, ...). As in ``models/surrogate.py`` the columns
of W_Q, W_K beyond a student's rank are held at zero by a fixed mask (zero gradient, never moved):
the kernel K is d'×d' whatever r is, so one program serves every rank at no extra cost. The inputs
of one instance are shared by its R students, so X K and the mixer products run as tall matmuls.

``TransformerBlockStudents`` (ladder rung B3): a pre-LayerNorm Transformer block,
    Z = X + softmax(Q Kᵀ/√d) V  (Q, K, V from LN₁(X)),   Z ← Z + W₂ GELU(W₁ LN₂(Z) + b₁) + b₂,
    Ŷ = Z W_out,  FFN width 4d.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional as F

KINDS = ("linear", "softmax")


def _draw(shape: Sequence[int], std: float, gens: Sequence[torch.Generator]) -> torch.Tensor:
    return torch.stack([torch.randn(tuple(shape), generator=g) * std for g in gens])


class AttentionStudents(nn.Module):
    """gens: one generator per model, instance-major (gens[i * R + j]). positions: p (0 = none);
    with positions every instance has a single student (R = 1), whose P is its own parameter."""

    def __init__(self, n_instances: int, ranks: Sequence[int], n_tokens: int, d: int, e: int,
                 kind: str, init_std: float, gens: Sequence[torch.Generator], scale: float = 1.0,
                 positions: int = 0) -> None:
        super().__init__()
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        ranks = [int(r) for r in ranks]
        d_in = d + positions
        if any(not 1 <= r <= d_in for r in ranks):
            raise ValueError(f"ranks must lie in 1..{d_in}, got {ranks}")
        if positions and len(ranks) != 1:
            raise ValueError("positional features need one student per instance (one rank)")
        n_models = n_instances * len(ranks)
        if len(gens) != n_models:
            raise ValueError(f"need one generator per model ({n_models}), got {len(gens)}")
        self.kind, self.scale, self.positions = kind, float(scale), int(positions)
        self.n_instances, self.ranks = n_instances, ranks
        self.n_tokens, self.d, self.e, self.d_in = n_tokens, d, e, d_in
        r_max = max(ranks)
        wq = torch.zeros(n_models, d_in, r_max)
        wk = torch.zeros(n_models, d_in, r_max)
        v = torch.zeros(n_models, d_in, e)
        pos = torch.zeros(n_models, n_tokens, max(positions, 1))
        for k, g in enumerate(gens):
            r = ranks[k % len(ranks)]
            wq[k, :, :r] = torch.randn(d_in, r, generator=g) * init_std
            wk[k, :, :r] = torch.randn(d_in, r, generator=g) * init_std
            v[k] = torch.randn(d_in, e, generator=g) * init_std
            if positions:
                pos[k] = torch.randn(n_tokens, positions, generator=g) * init_std
        shape = (n_instances, len(ranks))
        self.w_q = nn.Parameter(wq.reshape(*shape, d_in, r_max))
        self.w_k = nn.Parameter(wk.reshape(*shape, d_in, r_max))
        self.v = nn.Parameter(v.reshape(*shape, d_in, e))
        if positions:
            self.pos = nn.Parameter(pos.reshape(n_instances, n_tokens, positions))
        mask = (torch.arange(r_max)[None, :] < torch.tensor(ranks)[:, None]).float()
        self.register_buffer("mask", mask[None, :, None, :])  # (1, R, 1, r_max)

    @property
    def n_models(self) -> int:
        return self.n_instances * len(self.ranks)

    def kernel(self) -> torch.Tensor:
        """K = W_Q W_Kᵀ: (I, R, d', d')."""
        return (self.w_q * self.mask) @ (self.w_k * self.mask).transpose(-1, -2)

    def inputs(self, x: torch.Tensor) -> torch.Tensor:
        """X' = X or [X, P]: (I, S, N, d')."""
        if not self.positions:
            return x
        pos = self.pos[:, None].expand(-1, x.shape[1], -1, -1)
        return torch.cat([x, pos], dim=-1)

    def mixer(self, x: torch.Tensor) -> torch.Tensor:
        """The realized N×N mixer of each student on inputs (I, S, N, d): (I, S, R, N, N)."""
        xp = self.inputs(x)
        i_, s_, n, dp = xp.shape
        r_ = len(self.ranks)
        # the logit scale is folded into the (small) kernel, not the (large) score tensor
        k = (self.scale * self.kernel()).permute(0, 2, 1, 3).reshape(i_, dp, r_ * dp)
        xk = (xp.reshape(i_, s_ * n, dp) @ k).reshape(i_, s_, n, r_, dp).transpose(2, 3)
        scores = xk.reshape(i_ * s_, r_ * n, dp) @ xp.reshape(i_ * s_, n, dp).transpose(1, 2)
        scores = scores.reshape(i_, s_, r_, n, n)
        return scores if self.kind == "linear" else torch.softmax(scores, dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Predictions for inputs x (I, S, N, d): (I, R, S, N, e)."""
        if self.kind == "linear":
            return self._linear_forward(self.inputs(x))
        return self.mix_forward(x)

    def mix_forward(self, x: torch.Tensor) -> torch.Tensor:
        """M(X') X' V through the explicit N×N mixer (any kind): (I, R, S, N, e)."""
        xp = self.inputs(x)
        i_, s_, n, dp = xp.shape
        r_ = len(self.ranks)
        mix = self.mixer(x).reshape(i_ * s_, r_ * n, n)
        mx = (mix @ xp.reshape(i_ * s_, n, dp)).reshape(i_, s_, r_, n, dp)
        mx = mx.permute(0, 2, 1, 3, 4).reshape(i_, r_, s_ * n, dp)
        return (mx @ self.v).reshape(i_, r_, s_, n, self.e)

    def _linear_forward(self, xp: torch.Tensor) -> torch.Tensor:
        """The same function for the linear kind, reassociated: (X K Xᵀ) X V = X (K G V) with the
        d'×d' Gram G = Xᵀ X of each sequence — a third of the multiply-adds, all in tall matmuls."""
        i_, s_, n, dp = xp.shape
        r_, e = len(self.ranks), self.e
        g = xp.transpose(-1, -2) @ xp  # (I, S, d', d')
        k = (self.scale * self.kernel()).reshape(i_, r_ * dp, dp)
        kg = k @ g.permute(0, 2, 1, 3).reshape(i_, dp, s_ * dp)  # block (r, s) = K_r G_s
        kg = kg.reshape(i_, r_, dp, s_, dp).permute(0, 1, 3, 2, 4).reshape(i_, r_, s_ * dp, dp)
        z = (kg @ self.v).reshape(i_, r_, s_, dp, e)  # Z_rs = K_r G_s V_r
        z = z.permute(0, 2, 3, 1, 4).reshape(i_ * s_, dp, r_ * e)
        out = (xp.reshape(i_ * s_, n, dp) @ z).reshape(i_, s_, n, r_, e)
        return out.permute(0, 3, 1, 2, 4)


def _layer_norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """LayerNorm over the last axis with per-model affine w, b (M, d); x (M, ..., d)."""
    shape = (w.shape[0],) + (1,) * (x.ndim - 2) + (w.shape[1],)
    return F.layer_norm(x, x.shape[-1:]) * w.reshape(shape) + b.reshape(shape)


class TransformerBlockStudents(nn.Module):
    """Pre-LN Transformer block (see module docstring), one per instance: parameters (I, ...)."""

    def __init__(self, n_instances: int, n_tokens: int, d: int, e: int, init_std: float,
                 gens: Sequence[torch.Generator], ffn_mult: int = 4) -> None:
        super().__init__()
        if len(gens) != n_instances:
            raise ValueError(f"need one generator per model ({n_instances}), got {len(gens)}")
        self.n_instances, self.n_tokens, self.d, self.e = n_instances, n_tokens, d, e
        h = ffn_mult * d
        self.w_qkv = nn.Parameter(_draw((d, 3 * d), init_std, gens))
        self.w_1 = nn.Parameter(_draw((d, h), init_std, gens))
        self.w_2 = nn.Parameter(_draw((h, d), init_std, gens))
        self.w_out = nn.Parameter(_draw((d, e), init_std, gens))
        self.b_1 = nn.Parameter(torch.zeros(n_instances, h))
        self.b_2 = nn.Parameter(torch.zeros(n_instances, d))
        self.ln1_w = nn.Parameter(torch.ones(n_instances, d))
        self.ln1_b = nn.Parameter(torch.zeros(n_instances, d))
        self.ln2_w = nn.Parameter(torch.ones(n_instances, d))
        self.ln2_b = nn.Parameter(torch.zeros(n_instances, d))

    @property
    def n_models(self) -> int:
        return self.n_instances

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Predictions for inputs x (I, S, N, d): (I, 1, S, N, e)."""
        i_, s_, n, d = x.shape
        flat = x.reshape(i_, s_ * n, d)
        qkv = _layer_norm(flat, self.ln1_w, self.ln1_b) @ self.w_qkv
        q, k, v = (t.reshape(i_ * s_, n, d) for t in qkv.split(d, dim=-1))
        att = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(d), dim=-1) @ v
        z = flat + att.reshape(i_, s_ * n, d)
        hidden = F.gelu(torch.baddbmm(self.b_1[:, None], _layer_norm(z, self.ln2_w, self.ln2_b),
                                      self.w_1))
        z = z + torch.baddbmm(self.b_2[:, None], hidden, self.w_2)
        return (z @ self.w_out).reshape(i_, 1, s_, n, self.e)
