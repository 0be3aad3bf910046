"""Min-IP models with a leading model axis M: normalized nonnegative kernel attention and dense
softmax attention, plus the hand-built constructions.

Shapes: bits (M, B, N, m) → predictions (M, B, N).

Kernel attention of feature rank r (Opazo):
    a_Q(x), a_K(x) ∈ R^r;  φ = exp(a) ≥ 0;  α_ij = ⟨φ_Q(x_i), φ_K(x_j)⟩;  π_ij = α_ij / Σ_l α_il
    log α_ij = logsumexp_f (a_Q,f(x_i) + a_K,f(x_j))   (normalized in log space, no clamps)
Dense softmax attention: π_ij = softmax_j ⟨W_Q x_i + b_Q, W_K x_j + b_K⟩ (score dimension m).
Both share values v(x) = W_V x + b_V ∈ R^m, o_i = Σ_j π_ij v(x_j), and the query-dependent affine
readout ŷ_i = ⟨W_A x_i + b_A, o_i⟩ + w_c·x_i + c₀.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional as F

from attnrank.tasks.minip import bit_codes

FEATURE_MAPS = ("table", "mlp")
LOOKUP_BITS = 16  # token tables index rows through a dense code → row lookup up to this m
FEATURES = ("exp", "softplus")


def _normal(shape: Sequence[int], std: float, gens: Sequence[torch.Generator]) -> torch.Tensor:
    """One slice per model, slice k drawn from gens[k] only: (M, *shape)."""
    return torch.stack([torch.randn(tuple(shape), generator=g) * std for g in gens])


def _weight(out_dim: int, in_dim: int, gens: Sequence[torch.Generator]) -> nn.Parameter:
    """Weights ~ N(0, 1/fan_in): (M, out_dim, in_dim)."""
    return nn.Parameter(_normal((out_dim, in_dim), 1.0 / math.sqrt(in_dim), gens))


def _zeros(gens: Sequence[torch.Generator], *shape: int) -> nn.Parameter:
    return nn.Parameter(torch.zeros(len(gens), *shape))


def _apply(w: torch.Tensor, b: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Batched affine map: w (M, o, i), b (M, o), x (M, B, N, i) → (M, B, N, o)."""
    mdl, bsz, n, i = x.shape
    y = torch.baddbmm(b[:, None, :], x.reshape(mdl, bsz * n, i), w.transpose(1, 2))
    return y.reshape(mdl, bsz, n, -1)


class MinIPHead(nn.Module):
    """Values and readout shared by both attention kinds; subclasses give log π (M, B, N, N).

    One projection (M, 2m+1, m) holds [W_V; W_A; w_c] so that v, the query readout vector and the
    linear term come from a single batched matmul.
    """

    def __init__(self, m: int, gens: Sequence[torch.Generator]) -> None:
        super().__init__()
        self.m = m
        self.n_models = len(gens)
        self.w_out = _weight(2 * m + 1, m, gens)  # rows: W_V (m), W_A (m), w_c (1)
        self.b_out = _zeros(gens, 2 * m + 1)  # b_V, b_A, c_0

    def log_attention(self, bits: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def attention(self, bits: torch.Tensor) -> torch.Tensor:
        """Row-stochastic π: (M, B, N, N)."""
        return self.log_attention(bits).exp()

    def check(self, bits: torch.Tensor) -> None:
        if bits.ndim != 4 or bits.shape[0] != self.n_models or bits.shape[-1] != self.m:
            raise ValueError(f"expected bits of shape (M={self.n_models}, B, N, m={self.m}), "
                             f"got {tuple(bits.shape)}")

    def forward(self, bits: torch.Tensor) -> torch.Tensor:
        self.check(bits)
        pi = self.attention(bits)
        proj = _apply(self.w_out, self.b_out, bits)
        m = self.m
        v, q, lin = torch.split(proj, [m, m, 1], dim=-1)  # split: one cheap backward, no slices
        return ((q * (pi @ v)).sum(-1, keepdim=True) + lin).squeeze(-1)


class KernelAttention(MinIPHead):
    """Normalized nonnegative kernel attention with feature rank r (see module docstring).

    feature_map="table": a free vector per distinct token of ``vocab`` ((V, m) bits), init N(0, 1).
    feature_map="mlp":   h = GELU(W₁x + b₁) (width ``hidden``), [a_Q, a_K] = W h + b.
    feature="exp" (φ = exp a, computed in log space) or "softplus" (φ = softplus a).
    """

    def __init__(self, m: int, rank: int, gens: Sequence[torch.Generator], feature_map: str = "table",
                 vocab: torch.Tensor | None = None, hidden: int = 32, feature: str = "exp") -> None:
        super().__init__(m, gens)
        if rank < 1:
            raise ValueError(f"feature rank must be ≥ 1, got {rank}")
        if feature_map not in FEATURE_MAPS:
            raise ValueError(f"feature_map must be one of {FEATURE_MAPS}, got {feature_map!r}")
        if feature not in FEATURES:
            raise ValueError(f"feature must be one of {FEATURES}, got {feature!r}")
        self.rank, self.feature_map, self.feature = rank, feature_map, feature
        if feature_map == "table":
            if vocab is None:
                raise ValueError("feature_map='table' needs the vocabulary of tokens (V, m)")
            codes = bit_codes(vocab).sort().values
            self.register_buffer("vocab_codes", codes)
            # code → row lookup (−1: not in the vocabulary) when codes are small; else searchsorted
            lookup = torch.full((int(codes.max()) + 1 if m <= LOOKUP_BITS else 0,), -1)
            lookup[codes[codes < lookup.numel()]] = torch.arange(len(codes))[codes < lookup.numel()]
            self.register_buffer("code_rows", lookup, persistent=False)
            self._rows_cache: tuple[torch.Tensor, torch.Tensor] | None = None
            self.table = nn.Parameter(_normal((vocab.shape[0], 2 * rank), 1.0, gens))  # [a_Q, a_K]
        else:
            self.w1, self.b1 = _weight(hidden, m, gens), _zeros(gens, hidden)
            self.w2, self.b2 = _weight(2 * rank, hidden, gens), _zeros(gens, 2 * rank)

    def token_rows(self, bits: torch.Tensor) -> torch.Tensor:
        """Row of each token in the table: (M, B, N) int64; unknown tokens are an error.

        The rows of the last bits tensor are cached (a full-batch family is the same tensor every
        step)."""
        if self._rows_cache is not None and self._rows_cache[0] is bits:
            return self._rows_cache[1]
        codes = bit_codes(bits)
        if self.code_rows.numel():
            rows = self.code_rows[codes.clamp(max=self.code_rows.numel() - 1)]
            if bool((rows < 0).any()) or not torch.equal(self.vocab_codes[rows.clamp(min=0)], codes):
                raise ValueError("a token is not in the feature table's vocabulary")
        else:
            rows = torch.searchsorted(self.vocab_codes, codes).clamp(max=len(self.vocab_codes) - 1)
            if not torch.equal(self.vocab_codes[rows], codes):
                raise ValueError("a token is not in the feature table's vocabulary")
        self._rows_cache = (bits, rows)
        return rows

    def preactivations(self, bits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """a_Q, a_K: (M, B, N, r) each."""
        if self.feature_map == "table":
            rows = self.token_rows(bits)
            n_vocab = self.table.shape[1]
            offset = torch.arange(self.n_models, device=bits.device)[:, None, None] * n_vocab
            # index_select on the flattened (M·V, 2r) table: its backward is far cheaper than
            # advanced indexing's scatter.
            flat = self.table.reshape(self.n_models * n_vocab, -1)
            a = flat.index_select(0, (rows + offset).reshape(-1)).reshape(*rows.shape, -1)
        else:
            a = _apply(self.w2, self.b2, F.gelu(_apply(self.w1, self.b1, bits)))
        a_q, a_k = torch.split(a, self.rank, dim=-1)
        return a_q, a_k

    def log_attention(self, bits: torch.Tensor) -> torch.Tensor:
        a_q, a_k = self.preactivations(bits)
        if self.feature == "softplus":
            a_q, a_k = torch.log(F.softplus(a_q)), torch.log(F.softplus(a_k))
        log_alpha = torch.logsumexp(a_q[:, :, :, None, :] + a_k[:, :, None, :, :], dim=-1)
        return log_alpha - torch.logsumexp(log_alpha, dim=-1, keepdim=True)

    def kernel_weights(self, bits: torch.Tensor) -> torch.Tensor:
        """Unnormalized α_ij ≥ 0: (M, B, N, N)."""
        a_q, a_k = self.preactivations(bits)
        if self.feature == "softplus":
            return torch.einsum("mbir,mbjr->mbij", F.softplus(a_q), F.softplus(a_k))
        return torch.logsumexp(a_q[:, :, :, None, :] + a_k[:, :, None, :, :], dim=-1).exp()


class DenseAttention(MinIPHead):
    """Dense softmax attention with score dimension m: π = softmax_j ⟨W_Q x_i + b_Q, W_K x_j + b_K⟩.

    b_K is left out: it adds ⟨W_Q x_i + b_Q, b_K⟩, constant over j, which the softmax cancels, so
    the function class is the same; as a parameter its gradient is exactly zero in theory and pure
    rounding noise in practice, which Adam would amplify into a random walk.
    """

    def __init__(self, m: int, gens: Sequence[torch.Generator]) -> None:
        super().__init__(m, gens)
        self.w_q, self.b_q = _weight(m, m, gens), _zeros(gens, m)
        self.w_k = _weight(m, m, gens)

    def log_attention(self, bits: torch.Tensor) -> torch.Tensor:
        q = _apply(self.w_q, self.b_q, bits)
        k = _apply(self.w_k, torch.zeros_like(self.b_q), bits)
        return torch.log_softmax(q @ k.transpose(-1, -2), dim=-1)


# ---------------------------------------------------------------------------------------------
# Hand-built constructions (no training)


def _set_readout(model: MinIPHead, w_a_scale: float, w_c: float) -> None:
    """v = x, W_A = w_a_scale·I, b = 0, linear term w_c·Σ x."""
    m = model.m
    w = torch.zeros(2 * m + 1, m)
    w[:m] = torch.eye(m)
    w[m:2 * m] = w_a_scale * torch.eye(m)
    w[2 * m] = w_c
    with torch.no_grad():
        model.w_out.copy_(w.expand_as(model.w_out))
        model.b_out.zero_()


def rank1_construction(m: int) -> KernelAttention:
    """Rank-1 kernel attention solving Min-IP exactly for N ≤ 2.

    a = 0 so φ ≡ 1 and π is uniform; v = x, W_A = 2I, w_c = −1:
    N = 1: ŷ = 2⟨x, x⟩ − |x| = |x| = t;  N = 2: ŷ_1 = ⟨x_1, x_1 + x_2⟩ − |x_1| = ⟨x_1, x_2⟩ = t_1.
    """
    gens = [torch.Generator().manual_seed(0)]
    model = KernelAttention(m, 1, gens, feature_map="mlp")
    with torch.no_grad():
        model.w2.zero_()
        model.b2.zero_()
    _set_readout(model, 2.0, -1.0)
    return model


def exponential_construction(m: int, beta: float) -> KernelAttention:
    """The exact positive-feature realization with 2^m features, for N = 3.

    φ_K(z) = onehot(z) (a_K(z)_f = 0 at f = z, −∞ elsewhere) and a_Q(x)_z = −β⟨x, z⟩, so
    α(x, z) = exp(−β⟨x, z⟩): π is a softmin over inner products. v = x, W_A = I, w_c = 0 gives
    ŷ_i = Σ_j π_ij ⟨x_i, x_j⟩, which rounds to t_i for β ≥ 2.
    """
    if m > 12:
        raise ValueError(f"the 2^m-feature construction is built for m ≤ 12, got m={m}")
    from attnrank.tasks.minip import token_vocab

    vocab = token_vocab(m, "bernoulli")  # (2^m, m), row z has code z
    gens = [torch.Generator().manual_seed(0)]
    model = KernelAttention(m, 2**m, gens, feature_map="table", vocab=vocab)
    with torch.no_grad():
        onehot = torch.full((2**m, 2**m), float("-inf"))
        onehot.fill_diagonal_(0.0)
        model.table.copy_(torch.cat([-beta * (vocab @ vocab.T), onehot], dim=1)[None])
    _set_readout(model, 1.0, 0.0)
    return model


def dense_construction(m: int, beta: float = 20.0) -> DenseAttention:
    """Dense softmax with a large constant temperature: scores −β⟨x_i, x_j⟩ (W_Q = −βI, W_K = I),
    v = x, W_A = I: ŷ_i = Σ_j softmin_β ⟨x_i, x_j⟩ → t_i."""
    gens = [torch.Generator().manual_seed(0)]
    model = DenseAttention(m, gens)
    eye = torch.eye(m)[None]
    with torch.no_grad():
        model.w_q.copy_(-beta * eye)
        model.b_q.zero_()
        model.w_k.copy_(eye)
    _set_readout(model, 1.0, 0.0)
    return model
