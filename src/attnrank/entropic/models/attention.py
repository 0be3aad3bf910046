"""Attention students of Paper A, vectorized over a leading model axis.

``AttentionStudents`` (ladder rungs B1, B2 and the attention-native students of A3):
    linear:  Ŷ = scale·(X' W_Q)(X' W_K)ᵀ X' V          softmax: Ŷ = softmax(scale·(X' W_Q)(X' W_K)ᵀ) X' V
with the query-key kernel K = W_Q W_Kᵀ of rank r (W_Q, W_K ∈ R^{d'×r}) and X' = X, or X' = [X, P]
with learned positional features P ∈ R^{N×p} concatenated to every sequence (the ablation).

Layout: I instances × R ranks; parameters (I, R, ...). As in ``models/surrogate.py`` the columns
of W_Q, W_K beyond a student's rank are held at zero by a fixed mask (zero gradient, never moved):
the kernel K is d'×d' whatever r is, so one program serves every rank at no extra cost. The inputs
of one instance are shared by its R students, so X K and the mixer products run as tall matmuls.

Training and evaluation go through ``sse`` (the per-student sum of squared errors over a set
of sequences), which never builds the (S, R, N, N) score tensor of a whole set:
  * the mixer path (softmax kind) runs over chunks of sequences that
    stay in the cache, and computes the gradient of each chunk by hand right after its forward
    (``_mixer_sse``), so nothing of size S·R·N² is kept for a backward pass;
  * the linear kind without positions needs no N-space work at all: with G_s = X_sᵀ X_s and
    C_s = X_sᵀ Y_s, Ŷ_s = X_s Z_s for Z_s = K G_s V, and
        ‖Ŷ_s − Y_s‖² = ⟨G_s Z_s − 2 C_s, Z_s⟩ + ‖Y_s‖²,   ∂/∂Z_s = 2 (G_s Z_s − C_s)
    (``_linear_stats_sse``, exact up to float rounding); with positions (X' = [X, P], P learned)
    the linear kind keeps the reassociated forward through autograd.
Both fast paths return the gradient with the loss (a custom autograd function), equal to autograd's on
``forward`` up to float rounding (tests/test_entropic_speed_paths.py).

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

from attnrank.entropic.jobs import KINDS, LINEAR, SOFTMAX


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
        return scores if self.kind == LINEAR else torch.softmax(scores, dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Predictions for inputs x (I, S, N, d): (I, R, S, N, e)."""
        if self.kind == LINEAR:
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

    def sse(self, x: torch.Tensor, targets: Sequence[torch.Tensor], chunk: int = 0
            ) -> list[torch.Tensor]:
        """Σ_s ‖Ŷ_s − T_s‖² per student, (I, R), for each target T (I, S, N, e) of inputs x
        (I, S, N, d): the same numbers as summing ``forward``'s squared errors (up to float
        rounding), differentiable (one target) without keeping N×N tensors for the backward.
        chunk: sequences per chunk of the mixer path (0: a cache-sized default)."""
        grad = torch.is_grad_enabled() and any(t.requires_grad for t in self.parameters())
        if self.kind == LINEAR and not self.positions:
            if grad:
                if len(targets) != 1:
                    raise ValueError("a differentiable sse takes one target")
                return [_LinearStatsSSE.apply(self.scale * self.kernel(), self.v, x, targets[0])]
            # held-out errors in N-space: Ŷ_s = X_s Z_s (no cancellation of ‖Ŷ‖² against ‖T‖²)
            return _linear_stats_sse(self.scale * self.kernel(), self.v, x, targets, False, 32)[0]
        if self.kind == LINEAR:  # with positions: the reassociated forward, through autograd
            pred = self._linear_forward(self.inputs(x))
            return [((pred - t[:, None]) ** 2).sum(dim=(2, 3, 4)) for t in targets]
        i_, r_, dp = self.n_instances, len(self.ranks), self.d_in
        kcat = (self.scale * self.kernel()).permute(0, 2, 1, 3).reshape(i_, dp, r_ * dp)
        xp = self.inputs(x)
        if chunk <= 0:  # ≈ 2 MiB of scores per chunk
            chunk = max(1, (1 << 19) // (i_ * r_ * self.n_tokens ** 2))
        if grad:
            if len(targets) != 1:
                raise ValueError("a differentiable sse takes one target")
            return [_MixerSSE.apply(kcat, self.v, xp, targets[0], chunk, self.kind == SOFTMAX)]
        return list(_mixer_sse(kcat, self.v, xp, targets, chunk, self.kind == SOFTMAX, False)[0])


def _mixer_sse(kcat: torch.Tensor, v: torch.Tensor, xp: torch.Tensor,
               targets: Sequence[torch.Tensor], chunk: int, softmax: bool, grad: bool
               ) -> tuple[list[torch.Tensor], tuple[torch.Tensor | None, ...]]:
    """Σ_s ‖M_r(X_s) X_s V_r − T_s‖² per (instance, rank) through the explicit mixer
    M_r(X) = X K_r Xᵀ (linear) or softmax(X K_r Xᵀ), over chunks of sequences.

    kcat (I, d', R·d'): the (scaled) kernels K_r side by side; v (I, R, d', e); xp (I, S, N, d');
    targets: (I, S, N, e) each. Returns ([SSE (I, R) per target], (dK (I, d', R·d'), dV, dX'))
    with the gradients of the first target's SSE when ``grad`` (dX' only when xp requires grad:
    then R = 1). Per chunk, with A = X K (N×d'), S = A Xᵀ, P = M(X), Z = P X, Ŷ = Z V, E = Ŷ − T:
        dV = 2 Zᵀ E,  dZ = 2 E Vᵀ,  dP = dZ Xᵀ,  dS = P ⊙ (dP − rowsum(dP ⊙ P)) (softmax) or dP,
        dK = Xᵀ dS X,  dX = dS X Kᵀ + dSᵀ A + Pᵀ dZ.
    """
    i_, s_, n, dp = xp.shape
    r_, e = v.shape[1], v.shape[-1]
    sse = [xp.new_zeros(i_, r_) for _ in targets]
    want_x = grad and xp.requires_grad
    if want_x and r_ != 1:
        raise ValueError("gradients with respect to the inputs need one student per instance")
    xp = xp.detach()
    dk = torch.zeros_like(kcat) if grad else None
    dv = torch.zeros_like(v) if grad else None
    dx = torch.zeros_like(xp) if want_x else None
    vt = v.transpose(-1, -2)
    for lo in range(0, s_, chunk):
        hi = min(lo + chunk, s_)
        c = hi - lo
        xflat = xp[:, lo:hi].reshape(i_, c * n, dp)  # (I, c·N, d'), a view
        xb = xflat.reshape(i_ * c, n, dp)  # (I·c, N, d')
        a = torch.bmm(xflat, kcat)  # rows (s, n), columns (r, j): (X_s K_r)[n, j]
        a2 = a.view(i_, c, n, r_, dp).transpose(2, 3).reshape(i_ * c, r_ * n, dp)
        mix = torch.bmm(a2, xb.transpose(1, 2))  # (I·c, R·N, N): S_r = X K_r Xᵀ
        if softmax:
            mix = torch.softmax(mix, dim=-1)
        z = torch.bmm(mix, xb)  # (I·c, R·N, d'): P_r X
        zr = z.view(i_, c, r_, n, dp).transpose(1, 2).reshape(i_, r_, c * n, dp)
        yhat = torch.matmul(zr, v)  # (I, R, c·N, e)
        for k, t in enumerate(targets):
            res = yhat - t[:, lo:hi].reshape(i_, 1, c * n, e)
            sse[k] += (res * res).sum(dim=(-1, -2))
            if k == 0:
                err = res
        if not grad:
            continue
        dv.add_(torch.matmul(zr.transpose(-1, -2), err))  # ½ dV
        dz = torch.matmul(err, vt).view(i_, r_, c, n, dp).transpose(1, 2).reshape(i_ * c, r_ * n, dp)
        dmix = torch.bmm(dz, xb.transpose(1, 2))  # ½ dP
        ds = torch._softmax_backward_data(dmix, mix, -1, mix.dtype) if softmax else dmix
        da = torch.bmm(ds, xb)  # ½ dA = dS X
        dar = da.view(i_, c, r_, n, dp).transpose(2, 3).reshape(i_, c * n, r_ * dp)
        dk.baddbmm_(xflat.transpose(1, 2), dar)  # ½ dK = Xᵀ dA
        if want_x:  # R = 1: rows of a2, z, ds are the N tokens
            dxs = torch.bmm(dar, kcat.transpose(1, 2)).view(i_, c, n, dp)
            dxs += (torch.bmm(ds.transpose(1, 2), a2) + torch.bmm(mix.transpose(1, 2), dz)).view(i_, c, n, dp)
            dx[:, lo:hi] = dxs
    if not grad:
        return sse, (None, None, None)
    return sse, (2 * dk, 2 * dv, None if dx is None else 2 * dx)


class _MixerSSE(torch.autograd.Function):
    """``_mixer_sse`` of one target as an autograd function: the gradient is computed with the
    forward, chunk by chunk, and scaled by the incoming per-student weights in backward."""

    @staticmethod
    def forward(ctx, kcat, v, xp, target, chunk, softmax):  # noqa: ANN001, ANN205
        (sse,), (dk, dv, dx) = _mixer_sse(kcat, v, xp, [target], chunk, softmax, True)
        ctx.save_for_backward(dk, dv, dx)
        ctx.has_dx = dx is not None
        return sse

    @staticmethod
    def backward(ctx, g):  # noqa: ANN001, ANN205
        dk, dv, dx = ctx.saved_tensors
        i_, r_ = g.shape
        dp = dk.shape[1]
        dk = (dk.view(i_, dp, r_, dp) * g[:, None, :, None]).view(i_, dp, r_ * dp)
        dx = dx * g[:, :, None, None] if ctx.has_dx else None  # R = 1
        return dk, dv * g[:, :, None, None], dx, None, None, None


def _linear_stats_sse(k: torch.Tensor, v: torch.Tensor, x: torch.Tensor,
                      targets: Sequence[torch.Tensor], grad: bool, chunk: int = 0
                      ) -> tuple[list[torch.Tensor], tuple[torch.Tensor | None, ...]]:
    """Σ_s ‖X_s K_r (X_sᵀ X_s) V_r − T_s‖² per (instance, rank) from per-sequence statistics
    G_s = X_sᵀ X_s (d×d) and C_s = X_sᵀ T_s (d×e), with no N-space work (module docstring).

    k (I, R, d, d) the scaled kernels; v (I, R, d, e); x (I, S, N, d). Layouts (all views of
    tall matmuls): Wᵀ[i, r, j, s, b] = (V_rᵀ G_s)[j, b], Zᵀ = Wᵀ K_rᵀ, (ZG)ᵀ_s = Z_sᵀ G_s.
    With E_s = G_s Z_s − C_s, ∂SSE/∂Zᵀ = 2 Eᵀ, so (per student, stacking s along rows)
    ∂/∂K_rᵀ = 2 Σ_s (V_rᵀ G_s)ᵀ E_sᵀ, ∂/∂(V_rᵀ G_s) = 2 E_sᵀ K_r, ∂/∂V_rᵀ = Σ_s ∂/∂(V_rᵀ G_s) G_s.
    Returns ([SSE (I, R) per target], (dK, dV)) with the gradients of the first target's SSE
    (without ``grad``, the SSE from the residuals X_s Z_s − T_s instead); sums run over chunks
    of ``chunk`` sequences (0: ≈ 1 MiB per intermediate)."""
    i_, r_, d, _ = k.shape
    s_all, e = x.shape[1], v.shape[-1]
    kb = k.reshape(i_ * r_, d, d)
    vt = v.transpose(-1, -2).reshape(i_, r_ * e, d)
    sse = [x.new_zeros(i_, r_) for _ in targets]
    dkt = torch.zeros(i_ * r_, d, d, dtype=x.dtype, device=x.device) if grad else None
    dvt = torch.zeros(i_, r_ * e, d, dtype=x.dtype, device=x.device) if grad else None
    step = chunk if chunk > 0 else max(1, (1 << 18) // (i_ * r_ * d * e))  # ≈ 1 MiB per tensor
    for lo in range(0, s_all, step):
        xc = x[:, lo:lo + step]
        s_ = xc.shape[1]
        xb = xc.reshape(i_ * s_, x.shape[2], d)
        g = torch.bmm(xb.transpose(1, 2), xb).view(i_, s_, d, d)  # G_s
        gh = g.transpose(1, 2).reshape(i_, d, s_ * d)  # [a, (s, b)]
        wt = torch.bmm(vt, gh)  # (I, R·e, S·d)
        zt = torch.bmm(wt.view(i_ * r_, e * s_, d), kb.transpose(1, 2))
        zt5 = zt.view(i_, r_, e, s_, d)  # [i, r, j, s, c] = Z_s[c, j]
        if not grad:  # evaluation: the residuals themselves, Ŷ_s = X_s Z_s (S, N, R·e) per instance
            for i in range(i_):
                pred = torch.bmm(xc[i], zt5[i].permute(2, 0, 1, 3).reshape(s_, r_ * e, d).transpose(1, 2))
                pred = pred.view(s_, -1, r_, e)
                for acc, t in zip(sse, targets, strict=True):
                    acc[i] += (pred - t[i, lo:lo + step, :, None]).square_().sum(dim=(0, 1, 3))
            continue
        zg = torch.empty(i_, s_, r_ * e, d, dtype=x.dtype, device=x.device)
        for i in range(i_):  # Z_sᵀ G_s, batched over s (rows (r, j) with stride S·d)
            torch.bmm(zt5[i].permute(2, 0, 1, 3).reshape(s_, r_ * e, d), g[i], out=zg[i])
        zg5 = zg.view(i_, s_, r_, e, d).permute(0, 2, 3, 1, 4)  # as zt5
        err = None
        for acc, t in zip(sse, targets, strict=True):
            tc = t[:, lo:lo + step]
            ct = torch.bmm(tc.reshape(i_ * s_, -1, e).transpose(1, 2), xb).view(i_, 1, s_, e, d)
            ct = ct.transpose(2, 3)  # [i, 1, j, s, c] = C_s[c, j]
            e_t = torch.sub(zg5, ct, out=torch.empty_like(zt5))  # E_sᵀ, laid out as zt5
            acc += (zt5 * (e_t - ct)).sum(dim=(2, 3, 4)) + (tc * tc).sum(dim=(1, 2, 3))[:, None]
            if err is None:
                err = e_t.view(i_ * r_, e * s_, d)
        if grad:
            dkt.baddbmm_(wt.view(i_ * r_, e * s_, d).transpose(1, 2), err)  # ½ ∂/∂Kᵀ
            dwt = torch.bmm(err, kb)  # ½ ∂/∂Wᵀ
            dvt.baddbmm_(dwt.view(i_, r_ * e, s_ * d), gh.transpose(1, 2))  # ½ ∂/∂Vᵀ
    if not grad:
        return sse, (None, None)
    dk = 2 * dkt.view(i_, r_, d, d).transpose(-1, -2)
    dv = 2 * dvt.view(i_, r_, e, d).transpose(-1, -2)
    return sse, (dk, dv)


class _LinearStatsSSE(torch.autograd.Function):
    """``_linear_stats_sse`` of one target as an autograd function (gradient with the forward)."""

    @staticmethod
    def forward(ctx, k, v, x, target):  # noqa: ANN001, ANN205
        (sse,), (dk, dv) = _linear_stats_sse(k, v, x, [target], True)
        ctx.save_for_backward(dk, dv)
        return sse

    @staticmethod
    def backward(ctx, g):  # noqa: ANN001, ANN205
        dk, dv = ctx.saved_tensors
        w = g[:, :, None, None]
        return dk * w, dv * w, None, None


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
