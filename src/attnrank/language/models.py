"""Byte-level causal Transformer language models (appendix B), vectorized over a model axis M.

Every parameter has a leading model axis M (one model per seed), so M models train as ONE program
(``attnrank.core.train``): the models share no parameters, so each follows its own trajectory.

Shapes (B windows, T = context bytes, d = d_model, H heads of width d_h = d / H, V = 256 bytes):
    z⁰_t = E[x_t] + P_t                                    E (M, V, d), P (M, T, d)
    for each of n_layers blocks (pre-LN):
        h = LN₁(z);  Q^h = h W_Q^h, K^h = h W_K^h, V^h = h W_V^h      W_Q, W_K, W_V (M, d, d)
        A^h = softmax(Q^h (K^h)ᵀ / √d_h + causal mask)                 (M, B, H, T, T)
        z ← z + [A¹V¹, …, A^H V^H] W_O                                 W_O (M, d, d)
        z ← z + W₂ GELU(W₁ LN₂(z) + b₁) + b₂                           W₁ (M, d, 4d), W₂ (M, 4d, d)
    logits_t = LN_f(z_t) W_U + b_U                          W_U (M, d, V) (untied from E)
Head h uses columns h·d_h … (h+1)·d_h − 1 of W_Q, W_K, W_V. The causal mask lets position t attend
to positions s ≤ t only, so the logits at t depend on x_1 … x_t alone.

Measured matrices:
    static kernel of (layer, head):  W_Q^h (W_K^h)ᵀ ∈ R^{d×d} (rank ≤ d_h)
    realized mixer of (layer, head): A^h ∈ R^{T×T} averaged over a set of windows
                                     (``evaluate_windows``, with the loss on them);
    causal logits of (layer, head):  Q^h (K^h)ᵀ / √d_h per window, before the mask, handed to a
                                     caller of ``evaluate_windows`` (the logit field, OPEN-4).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
from torch import nn
from torch.nn import functional as F

VOCAB = 256  # bytes
INIT_STD = 0.02  # N(0, 0.02²) weights (GPT-2); residual outputs W_O, W₂ scaled by 1/√(2·n_layers)
MLP_MULT = 4
# attention entries per chunk of ``evaluate_windows`` (≈ 12.6 MB of float32 a layer): 64 windows of
# 64 bytes for 3 models of 4 heads; larger chunks leave the CPU's cache and run slower
CHUNK_ENTRIES = 3 * 64 * 4 * 64 * 64


def _draw(shape: Sequence[int], std: float, gens: Sequence[torch.Generator]) -> torch.Tensor:
    """One draw per model from its own generator, stacked: (M, *shape)."""
    return torch.stack([torch.randn(tuple(shape), generator=g) * std for g in gens])


def _layer_norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """LayerNorm over the last axis with per-model affine w, b (M, d); x (M, ..., d)."""
    shape = (w.shape[0],) + (1,) * (x.ndim - 2) + (w.shape[1],)
    return F.layer_norm(x, x.shape[-1:]) * w.reshape(shape) + b.reshape(shape)


class ByteTransformers(nn.Module):
    """M byte-level causal Transformers of one shape; ``gens``: one torch generator per model
    (its parameters are drawn from it alone, in a fixed order, so model k is the same model
    whether it is built beside others or alone)."""

    def __init__(self, d_model: int, n_layers: int, n_heads: int, context: int,
                 gens: Sequence[torch.Generator]) -> None:
        super().__init__()
        if d_model < 1 or n_layers < 1 or n_heads < 1 or context < 1:
            raise ValueError(f"d_model, n_layers, n_heads and context must be ≥ 1, got "
                             f"{d_model}, {n_layers}, {n_heads}, {context}")
        if d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be a multiple of n_heads ({n_heads})")
        if not gens:
            raise ValueError("need at least one generator (one per model)")
        m, d, h = len(gens), d_model, MLP_MULT * d_model
        self.n_models, self.d_model, self.n_layers, self.n_heads = m, d, n_layers, n_heads
        self.context, self.d_head = context, d // n_heads
        res_std = INIT_STD / math.sqrt(2 * n_layers)
        self.embed = nn.Parameter(_draw((VOCAB, d), INIT_STD, gens))
        self.pos = nn.Parameter(_draw((context, d), INIT_STD, gens))
        self.w_q = nn.ParameterList()
        self.w_k = nn.ParameterList()
        self.w_v = nn.ParameterList()
        self.w_o = nn.ParameterList()
        self.w_1 = nn.ParameterList()
        self.w_2 = nn.ParameterList()
        for _ in range(n_layers):
            self.w_q.append(nn.Parameter(_draw((d, d), INIT_STD, gens)))
            self.w_k.append(nn.Parameter(_draw((d, d), INIT_STD, gens)))
            self.w_v.append(nn.Parameter(_draw((d, d), INIT_STD, gens)))
            self.w_o.append(nn.Parameter(_draw((d, d), res_std, gens)))
            self.w_1.append(nn.Parameter(_draw((d, h), INIT_STD, gens)))
            self.w_2.append(nn.Parameter(_draw((h, d), res_std, gens)))
        self.w_u = nn.Parameter(_draw((d, VOCAB), INIT_STD, gens))
        zeros, ones = (lambda k: torch.zeros(m, k)), (lambda k: torch.ones(m, k))
        self.b_1 = nn.ParameterList([nn.Parameter(zeros(h)) for _ in range(n_layers)])
        self.b_2 = nn.ParameterList([nn.Parameter(zeros(d)) for _ in range(n_layers)])
        self.ln1_w = nn.ParameterList([nn.Parameter(ones(d)) for _ in range(n_layers)])
        self.ln1_b = nn.ParameterList([nn.Parameter(zeros(d)) for _ in range(n_layers)])
        self.ln2_w = nn.ParameterList([nn.Parameter(ones(d)) for _ in range(n_layers)])
        self.ln2_b = nn.ParameterList([nn.Parameter(zeros(d)) for _ in range(n_layers)])
        self.lnf_w = nn.Parameter(ones(d))
        self.lnf_b = nn.Parameter(zeros(d))
        self.b_u = nn.Parameter(zeros(VOCAB))
        self.register_buffer("causal", torch.ones(context, context).tril().bool(), persistent=False)

    def _heads(self, t: torch.Tensor, m: int, b: int, n: int) -> torch.Tensor:
        """(M, B·T, d) → (M·B, H, T, d_h)."""
        return t.reshape(m * b, n, self.n_heads, self.d_head).transpose(1, 2)

    def forward(self, x: torch.Tensor, mixers: bool = False
                ) -> torch.Tensor | tuple[torch.Tensor, list[torch.Tensor]]:
        """Logits (M, B, T, V) for bytes x (M, B, T) (int64, T ≤ context); with ``mixers`` also
        every layer's attention matrices (M, B, H, T, T) (explicit softmax, no fused kernel)."""
        logits, mats, _ = self._run(x, mixers, scores=False)
        return (logits, mats) if mixers else logits

    def _run(self, x: torch.Tensor, explicit: bool, scores: bool
             ) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
        """(logits (M, B, T, V), each layer's attention (M, B, H, T, T) when ``explicit``, each
        layer's causal logits Q Kᵀ / √d_h before the mask (M, B, H, T, T) when ``scores``, which
        needs ``explicit``); the fused kernel when not ``explicit``."""
        m, b, n = x.shape
        if m != self.n_models or n > self.context:
            raise ValueError(f"expected bytes (M={self.n_models}, B, T ≤ {self.context}), got "
                             f"{tuple(x.shape)}")
        if scores and not explicit:
            raise ValueError("the causal logits need the explicit attention (explicit=True)")
        idx = torch.arange(m, device=x.device)[:, None, None]
        z = (self.embed[idx, x] + self.pos[:, None, :n]).reshape(m, b * n, self.d_model)
        mats: list[torch.Tensor] = []
        logits_of: list[torch.Tensor] = []
        for layer in range(self.n_layers):
            h = _layer_norm(z, self.ln1_w[layer], self.ln1_b[layer])
            q, k, v = (self._heads(h @ w[layer], m, b, n) for w in (self.w_q, self.w_k, self.w_v))
            if explicit:
                s = q @ k.transpose(-1, -2) / math.sqrt(self.d_head)
                att = torch.softmax(s.masked_fill(~self.causal[:n, :n], -math.inf), dim=-1)
                mats.append(att.reshape(m, b, self.n_heads, n, n))
                if scores:
                    logits_of.append(s.reshape(m, b, self.n_heads, n, n))
                o = att @ v
            else:
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            o = o.transpose(1, 2).reshape(m, b * n, self.d_model)
            z = z + o @ self.w_o[layer]
            h = _layer_norm(z, self.ln2_w[layer], self.ln2_b[layer])
            hidden = F.gelu(torch.baddbmm(self.b_1[layer][:, None], h, self.w_1[layer]))
            z = z + torch.baddbmm(self.b_2[layer][:, None], hidden, self.w_2[layer])
        z = _layer_norm(z, self.lnf_w, self.lnf_b)
        logits = torch.baddbmm(self.b_u[:, None], z, self.w_u).reshape(m, b, n, VOCAB)
        return logits, mats, logits_of

    def static_kernels(self) -> torch.Tensor:
        """W_Q^h (W_K^h)ᵀ of every layer and head: (M, L, H, d, d) (float64)."""
        out = []
        for layer in range(self.n_layers):
            wq = self.w_q[layer].detach().double()
            wk = self.w_k[layer].detach().double()
            m, d = wq.shape[0], self.d_model
            wq = wq.reshape(m, d, self.n_heads, self.d_head).permute(0, 2, 1, 3)  # (M, H, d, d_h)
            wk = wk.reshape(m, d, self.n_heads, self.d_head).permute(0, 2, 1, 3)
            out.append(wq @ wk.transpose(-1, -2))
        return torch.stack(out, dim=1)

    def window_chunk(self, n: int) -> int:
        """Windows of n bytes per chunk of ``evaluate_windows``: about ``CHUNK_ENTRIES`` attention
        entries (M · chunk · H · n²), at least one."""
        return max(1, CHUNK_ENTRIES // (self.n_models * self.n_heads * n * n))

    @torch.no_grad()
    def evaluate_windows(self, x: torch.Tensor, chunk: int | None = None,
                         on_logits: Callable[[int, torch.Tensor], None] | None = None
                         ) -> tuple[torch.Tensor, torch.Tensor]:
        """On windows x (M, S, T + 1) (inputs x_1..x_T, targets x_2..x_{T+1}): the mean next-byte
        loss in bits per model (M,) (float64) and the attention matrices averaged over the windows
        (M, L, H, T, T) (float64), in one pass over chunks of ``chunk`` windows (default
        ``window_chunk``). ``on_logits``: called with each chunk's first window index and its
        causal logits Q Kᵀ / √d_h before the mask (M, b, L, H, T, T) (``_run``); it sees them, it
        changes nothing here."""
        chunk = chunk or self.window_chunk(x.shape[-1] - 1)
        loss, total = None, None
        for i in range(0, x.shape[1], chunk):
            w = x[:, i:i + chunk]
            logits, mats, scores = self._run(w[..., :-1], True, scores=on_logits is not None)
            part_loss = bits_per_byte(logits, w[..., 1:]).double() * w.shape[1]
            part = torch.stack([a.double().sum(dim=1) for a in mats], dim=1)
            loss = part_loss if loss is None else loss + part_loss
            total = part if total is None else total + part
            if on_logits is not None:
                on_logits(i, torch.stack(scores, dim=2))
        if loss is None or total is None:
            raise ValueError("evaluate_windows needs at least one window")
        return loss / x.shape[1], total / x.shape[1]


def bits_per_byte(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean next-byte cross-entropy in bits per model: logits (M, B, T, V), targets (M, B, T)
    → (M,)."""
    m = logits.shape[0]
    nll = F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1), reduction="none")
    return nll.reshape(m, -1).mean(dim=1) / math.log(2.0)
