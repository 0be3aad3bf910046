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
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from attnrank.minip.families import DENSE, KERNEL, Group
from attnrank.minip.pairs import PairKernels, pair_kernels
from attnrank.minip.task import bit_codes

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
    """Batched affine map, feature-major: w (M, o, i), b (M, o), x (M, i, T) → (M, o, T)."""
    return torch.baddbmm(b[:, :, None], w, x)


def _vocab_input(vocab: torch.Tensor, n_models: int) -> torch.Tensor:
    """The vocabulary (V, m) as a feature-major input for every model: (M, m, V)."""
    return vocab.T[None].expand(n_models, -1, -1)


def _mix(scores: torch.Tensor, readout: torch.Tensor, lin: torch.Tensor) -> torch.Tensor:
    """ŷ_i = Σ_j softmax_j(s_ij) ⟨q_i, v_j⟩ + lin_i, batch axis innermost.

    scores, readout (⟨q_i, v_j⟩): (..., N, N, B); lin: (..., N, B) → ŷ (..., B, N) (a transposed
    view). The softmax runs over the second-last axis so every kernel is vectorized over the batch
    (a softmax over a last axis of length N = 3 costs ~10× more).
    """
    pi = torch.softmax(scores, dim=-2)
    return ((pi * readout).sum(-2) + lin).transpose(-1, -2)


PAIR_TABLES = "pairs"  # TokenIds layout: tables on the V² token pairs, gathered per sequence
GATHERED = "tokens"  # TokenIds layout: per-token quantities on the V tokens, gathered per token
LAYOUTS = (PAIR_TABLES, GATHERED)


class TokenIds:
    """Token ids (M, B, N) into a vocabulary (V, m), and the layout the heads compute them in
    (``forward_tokens``): ``pairs`` (scores and readouts on the V² token pairs) or ``tokens``
    (features and projections on the V tokens, gathered to the N·B tokens of the batch, the pairs
    per sequence). Gather indices are computed once, on first use."""

    def __init__(self, ids: torch.Tensor, vocab: torch.Tensor, layout: str = PAIR_TABLES) -> None:
        if ids.ndim != 3 or vocab.ndim != 2:
            raise ValueError(f"expected ids (M, B, N) into a vocabulary (V, m), got "
                             f"{tuple(ids.shape)} and {tuple(vocab.shape)}")
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
        self.ids, self.vocab, self.layout = ids, vocab, layout
        self._index: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        self._flat: torch.Tensor | None = None

    def flat(self) -> torch.Tensor:
        """Row of each token of the batch in a model-stacked (M·V, ·) vocabulary table, in
        feature-major token order t = i·B + b: (M·N·B,) int64."""
        if self._flat is None:
            n_models, n_vocab = self.ids.shape[0], self.vocab.shape[0]
            offset = torch.arange(n_models, device=self.ids.device)[:, None, None] * n_vocab
            self._flat = (self.ids.transpose(1, 2) + offset).reshape(-1)
        return self._flat

    def index(self, n_heads: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Flat indices into G heads' stacked tables, per model: tokens (M, G·N·B) into the
        linear terms (M, G·V), ordered pairs (i, j) (M, G·2·N²·B) into the pair tables
        (M, G·2·V²) (scores then readouts per head); head-major, feature-major order."""
        if n_heads not in self._index:
            n_models = self.ids.shape[0]
            n_vocab = self.vocab.shape[0]
            tok = self.ids.transpose(1, 2).reshape(n_models, 1, -1)  # (M, 1, N·B)
            n, bsz = self.ids.shape[2], self.ids.shape[1]
            t = tok.reshape(n_models, 1, n, bsz)
            pair = (t[:, :, :, None, :] * n_vocab + t[:, :, None, :, :]).reshape(n_models, 1, -1)
            pair = torch.cat([pair, pair + n_vocab**2], -1)  # (M, 1, 2·N²·B)
            heads = torch.arange(n_heads, device=self.ids.device)[None, :, None]
            self._index[n_heads] = ((tok + heads * n_vocab).reshape(n_models, -1),
                                    (pair + heads * 2 * n_vocab**2).reshape(n_models, -1))
        return self._index[n_heads]

    def __getitem__(self, key: slice) -> TokenIds:
        """Sequences ``key`` of every model."""
        return TokenIds(self.ids[:, key], self.vocab, self.layout)

    def take(self, table: torch.Tensor) -> torch.Tensor:
        """A per-token quantity on the vocabulary, (M, C, V), at every token of the batch:
        (M, C, N·B), feature-major with the tokens innermost in memory (one index_select along
        the columns of the (C, M·V) table: its backward is an index_add, and the pairwise kernels
        read the batch axis contiguously)."""
        n_models, c, n_vocab = table.shape
        cols = table.transpose(0, 1).reshape(c, n_models * n_vocab).index_select(1, self.flat())
        return cols.view(c, n_models, -1).transpose(0, 1)

    @property
    def shape(self) -> torch.Size:
        return self.ids.shape


def forward_tokens(heads: Sequence[MinIPHead], tokens: TokenIds) -> torch.Tensor:
    """Predictions of G heads (M models each) on the same token ids: (G·M, B, N), row g·M + k
    for model k of head g (each equal to ``head(vocab[ids])`` to float rounding).

    Layout ``pairs``: each head computes its tables on the V tokens and V² token pairs
    (``pair_tables``); one gather, softmax and mix then serve every head and sequence. Layout
    ``tokens``: every per-token quantity (projections, feature maps) is computed on the V tokens
    and gathered to the N·B tokens of the batch, then the pairs as in ``forward_bits``.
    """
    ids, vocab = tokens.ids, tokens.vocab
    n_models, bsz, n = ids.shape
    for head in heads:
        if head.n_models != n_models or head.m != vocab.shape[-1]:
            raise ValueError(f"expected ids (M={head.n_models}, B, N) into a vocabulary (V, "
                             f"m={head.m}), got {tuple(ids.shape)} and {tuple(vocab.shape)}")
    if tokens.layout == GATHERED:
        return _forward_direct(heads, _vocab_input(vocab, n_models),
                               lambda h: h.vocab_rows(vocab), tokens.take, n, bsz)
    pairs, lins = zip(*(head.pair_tables(vocab) for head in heads), strict=True)
    tok, pair = tokens.index(len(heads))
    g = len(heads)
    scores, readouts = (_select(torch.stack(pairs, 1), pair)
                        .reshape(n_models, g, 2, n, n, bsz).unbind(2))
    lin = _select(torch.stack(lins, 1), tok).reshape(n_models, g, n, bsz)
    pred = _mix(scores, readouts, lin)  # (M, G, B, N)
    return pred.transpose(0, 1).reshape(g * n_models, bsz, n)


def _select(tables: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """Entries ``index`` (M, K) of each model's flattened tables (M, ...): (M, K) (one
    index_select on the flat tensor: its backward is an index_add, cheaper than a gather's
    scatter_add)."""
    n_models = tables.shape[0]
    flat = tables.reshape(-1)
    offset = torch.arange(n_models, device=index.device)[:, None] * (flat.numel() // n_models)
    return flat.index_select(0, (index + offset).reshape(-1)).view(n_models, -1)


def shared_pairs(heads: Sequence[MinIPHead]) -> PairKernels:
    """The pairwise kernels of heads that run as one program (all eager or all compiled)."""
    kinds = {id(h.pairs) for h in heads}
    if len(kinds) != 1:
        raise ValueError("heads run together must all be compiled or all eager")
    return heads[0].pairs


def forward_bits(heads: Sequence[MinIPHead], bits: torch.Tensor) -> torch.Tensor:
    """Predictions of G heads (M models each) on the same bits (M, B, N, m): (G·M, B, N), row
    g·M + k for model k of head g (each equal to ``head(bits)`` to float rounding).

    What does not depend on a head's attention kind runs once for all heads: the feature-major
    tokens, the readout projections [W_V; W_A; w_c] of every head as one matmul, the readouts
    ⟨q_i, v_j⟩, the first layer of every ``mlp`` feature map as one matmul and one GELU, and the
    softmax and mix. Only the scores s_ij are per head (their feature ranks differ).
    """
    for head in heads:
        head.check(bits)
    _, bsz, n, _ = bits.shape
    x = MinIPHead._feature_major(bits)  # (M, m, N·B)
    return _forward_direct(heads, x, lambda h: h.bits_rows(bits), lambda t: t, n, bsz)


def _forward_direct(heads: Sequence[MinIPHead], x: torch.Tensor,
                    rows_of: Callable[[MinIPHead], torch.Tensor | None],
                    take: Callable[[torch.Tensor], torch.Tensor], n: int, bsz: int
                    ) -> torch.Tensor:
    """``forward_bits`` on feature-major tokens x (M, m, T): T = N·B (the batch's tokens, ``take``
    the identity) or T = V (the vocabulary; ``take`` gathers a per-token quantity (M, C, V) to the
    batch's tokens (M, C, N·B)); ``rows_of(head)``: the table rows of x's tokens (M, T) for table
    features. The feature maps run on x's tokens and are gathered; the projections and everything
    after run on the batch's tokens. Returns (G·M, B, N)."""
    n_models, m, g = x.shape[0], heads[0].m, len(heads)
    pairs = shared_pairs(heads)
    # the projections on the batch's tokens: a matmul over m costs less than gathering its output
    out = _apply(torch.cat([h.w_out for h in heads], 1), torch.cat([h.b_out for h in heads], 1),
                 take(x))
    v, q, lin = out.view(n_models, g, 2 * m + 1, n, bsz).split([m, m, 1], dim=2)
    readout = pairs.inner(q, v)  # (M, G, N, N, B)
    mlps = [h for h in heads if isinstance(h, KernelAttention) and h.feature_map == "mlp"]
    hidden: dict[int, torch.Tensor] = {}
    if mlps:
        w1, b1 = torch.cat([h.w1 for h in mlps], 1), torch.cat([h.b1 for h in mlps], 1)
        layer = F.gelu(_apply(w1, b1, x)).split([h.w1.shape[1] for h in mlps], dim=1)
        hidden = {id(h): t for h, t in zip(mlps, layer, strict=True)}
    scores = torch.stack([
        h.pair_scores(take(h.token_features(x, rows_of(h), hidden.get(id(h))))
                      .reshape(n_models, -1, n, bsz)) for h in heads], 1)  # (M, G, N, N, B)
    pred = _mix(scores, readout, lin[:, :, 0])  # (M, G, B, N)
    return pred.transpose(0, 1).reshape(g * n_models, bsz, n)


class MinIPHead(nn.Module):
    """Values and readout shared by both attention kinds; subclasses give the unnormalized log
    scores s_ij (π = softmax_j s_ij) in two layouts: per sequence (``log_scores``) and per token
    pair of a vocabulary (``pair_log_scores``).

    One projection (M, 2m+1, m) holds [W_V; W_A; w_c] so that v, the query readout vector and the
    linear term come from a single batched matmul.

    A head is its per-token features ``token_features`` (M, 2C, T) = [query; key] features of
    T feature-major tokens, and ``pair_scores``, the log scores of every (query, key) pair of a
    sequence from them. Three equivalent forward layouts (equal to float rounding, tested):
      forward(bits)               bits (M, B, N, m): every token's features, every pair's score;
      forward_tokens(tokens)      TokenIds (M, B, N) into vocab (V, m), layout ``pairs``: the
                                  features, the scores s(u, w) and the readouts ⟨q(u), v(w)⟩ once
                                  per call on the V tokens / V² pairs, then gathered per sequence
                                  (cheaper whenever V² is small against B·N²: the witness suite,
                                  V = 16); layout ``tokens``: the features and projections on the
                                  V tokens, gathered per token, the pairs per sequence (cheaper
                                  whenever V is small against B·N).
    """

    def __init__(self, m: int, gens: Sequence[torch.Generator], compile_pairs: bool = False
                 ) -> None:
        super().__init__()
        self.m = m
        self.n_models = len(gens)
        self.pairs = pair_kernels(compile_pairs)  # the pairwise reductions (minip.pairs)
        self.w_out = _weight(2 * m + 1, m, gens)  # rows: W_V (m), W_A (m), w_c (1)
        self.b_out = _zeros(gens, 2 * m + 1)  # b_V, b_A, c_0

    def token_features(self, x: torch.Tensor, rows: torch.Tensor | None,
                       hidden: torch.Tensor | None = None) -> torch.Tensor:
        """[query features; key features] (M, 2C, T) of feature-major tokens x (M, m, T);
        ``rows``: their table rows (M, T) (table features, else None); ``hidden``: the first
        layer of an ``mlp`` feature map on x when already computed (``forward_bits``)."""
        raise NotImplementedError

    def pair_scores(self, features: torch.Tensor) -> torch.Tensor:
        """Unnormalized log scores s_ij (M, N, N, B) from the features of a sequence's tokens,
        (M, 2C, N, B) (``token_features`` with its token axis as (N, B))."""
        raise NotImplementedError

    def pair_log_scores(self, vocab: torch.Tensor) -> torch.Tensor:
        """s(u, w) for every ordered pair of vocabulary tokens: (M, V, V)."""
        raise NotImplementedError

    def bits_rows(self, bits: torch.Tensor) -> torch.Tensor | None:
        """Table rows of bits (M, B, N, m) in feature-major token order (M, N·B); None when the
        head has no table."""
        return None

    def vocab_rows(self, vocab: torch.Tensor) -> torch.Tensor | None:
        """Table rows of the vocabulary (V, m) for every model (M, V); None without a table."""
        return None

    def log_scores(self, bits: torch.Tensor, x: torch.Tensor,
                   hidden: torch.Tensor | None = None) -> torch.Tensor:
        """Unnormalized log scores s_ij: (M, N, N, B), from bits (M, B, N, m) and the same tokens
        feature-major x (M, m, N·B)."""
        n_models, bsz, n, _ = bits.shape
        features = self.token_features(x, self.bits_rows(bits), hidden)
        return self.pair_scores(features.reshape(n_models, -1, n, bsz))

    def log_attention(self, bits: torch.Tensor) -> torch.Tensor:
        """log π: (M, B, N, N)."""
        self.check(bits)
        scores = self.log_scores(bits, self._feature_major(bits))
        return torch.log_softmax(scores, dim=2).permute(0, 3, 1, 2)

    def attention(self, bits: torch.Tensor) -> torch.Tensor:
        """Row-stochastic π: (M, B, N, N)."""
        return self.log_attention(bits).exp()

    def check(self, bits: torch.Tensor) -> None:
        if bits.ndim != 4 or bits.shape[0] != self.n_models or bits.shape[-1] != self.m:
            raise ValueError(f"expected bits of shape (M={self.n_models}, B, N, m={self.m}), "
                             f"got {tuple(bits.shape)}")

    @staticmethod
    def _feature_major(bits: torch.Tensor) -> torch.Tensor:
        """(M, B, N, m) → (M, m, N·B): token t = i·B + b, the batch axis innermost."""
        n_models, bsz, n, m = bits.shape
        return bits.permute(0, 3, 2, 1).reshape(n_models, m, n * bsz)

    def _readouts(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """v, q (M, m, T) and lin (M, T) of feature-major tokens x (M, m, T)."""
        m = self.m
        v, q, lin = torch.split(_apply(self.w_out, self.b_out, x), [m, m, 1], dim=1)
        return v, q, lin[:, 0]

    def forward(self, bits: torch.Tensor) -> torch.Tensor:
        """Predictions (M, B, N) for bits (M, B, N, m)."""
        return forward_bits([self], bits)

    def pair_tables(self, vocab: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The head on a vocabulary (V, m): [s(u, w); ⟨q(u), v(w)⟩] flattened (M, 2·V²), and the
        linear terms lin(u) (M, V)."""
        v, q, lin = self._readouts(_vocab_input(vocab, self.n_models))  # (M, m, V), (M, V)
        readout = q.transpose(1, 2) @ v  # (M, V, V)
        return torch.cat([self.pair_log_scores(vocab), readout], 1).reshape(self.n_models, -1), lin

    def forward_tokens(self, tokens: TokenIds) -> torch.Tensor:
        """Predictions (M, B, N) for token ids into a vocabulary (= ``forward(vocab[ids])``)."""
        return forward_tokens([self], tokens)


class KernelAttention(MinIPHead):
    """Normalized nonnegative kernel attention with feature rank r (see module docstring).

    feature_map="table": a free vector per distinct token of ``vocab`` ((V, m) bits), init N(0, 1).
    feature_map="mlp":   h = GELU(W₁x + b₁) (width ``hidden``), [a_Q, a_K] = W h + b.
    feature="exp" (φ = exp a, computed in log space) or "softplus" (φ = softplus a).
    """

    def __init__(self, m: int, rank: int, gens: Sequence[torch.Generator], feature_map: str = "table",
                 vocab: torch.Tensor | None = None, hidden: int = 32, feature: str = "exp",
                 compile_pairs: bool = False) -> None:
        super().__init__(m, gens, compile_pairs)
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
        """Row of each token in the table: bits (..., m) → (...) int64; unknown tokens are an
        error.

        The rows of the last bits tensor are cached (a full-batch family or a vocabulary is the
        same tensor every step)."""
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

    def _table_rows(self, rows: torch.Tensor) -> torch.Tensor:
        """Table rows (M, T) int64 → pre-activations (M, 2r, T) (one index_select on the flattened
        (M·V, 2r) table: its backward is far cheaper than advanced indexing's scatter)."""
        n_models, n_vocab = self.table.shape[:2]
        offset = torch.arange(n_models, device=rows.device)[:, None] * n_vocab
        flat = self.table.reshape(n_models * n_vocab, -1)
        return flat.index_select(0, (rows + offset).reshape(-1)).reshape(n_models, -1,
                                                                           flat.shape[1]).transpose(1, 2)

    def token_features(self, x: torch.Tensor, rows: torch.Tensor | None,
                       hidden: torch.Tensor | None = None) -> torch.Tensor:
        """[log φ_Q; log φ_K] (M, 2r, T) of feature-major tokens x (M, m, T): the table rows
        (M, T) for tables; a = W₂ GELU(W₁x + b₁) + b₂ for mlp maps (``hidden`` = GELU(W₁x + b₁)
        (M, hidden, T) when already computed); log softplus(a) for feature="softplus"."""
        if self.feature_map == "table":
            a = self._table_rows(rows)
        else:
            if hidden is None:
                hidden = F.gelu(_apply(self.w1, self.b1, x))
            a = _apply(self.w2, self.b2, hidden)
        return torch.log(F.softplus(a)) if self.feature == "softplus" else a

    def _preactivations(self, x: torch.Tensor, rows: torch.Tensor | None,
                        hidden: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """log φ_Q, log φ_K (M, r, T) of feature-major tokens x (M, m, T) (``token_features``)."""
        a_q, a_k = torch.split(self.token_features(x, rows, hidden), self.rank, dim=1)
        return a_q, a_k

    def pair_scores(self, features: torch.Tensor) -> torch.Tensor:
        """log α_ij = logsumexp_f (a_Q,f(x_i) + a_K,f(x_j)): (M, 2r, N, B) → (M, N, N, B)."""
        return self.pairs.logsumexp(features[:, :self.rank], features[:, self.rank:])

    def preactivations(self, bits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """log φ_Q, log φ_K: (M, B, N, r) each (the pre-activations a for feature="exp")."""
        n_models, bsz, n, _ = bits.shape
        a_q, a_k = self._preactivations(self._feature_major(bits), self.bits_rows(bits))
        return tuple(a.reshape(n_models, -1, n, bsz).permute(0, 3, 2, 1) for a in (a_q, a_k))

    def bits_rows(self, bits: torch.Tensor) -> torch.Tensor | None:
        if self.feature_map != "table":
            return None
        return self.token_rows(bits).transpose(1, 2).reshape(bits.shape[0], -1)

    def vocab_rows(self, vocab: torch.Tensor) -> torch.Tensor | None:
        if self.feature_map != "table":
            return None
        return self.token_rows(vocab)[None].expand(self.n_models, -1)

    def pair_log_scores(self, vocab: torch.Tensor) -> torch.Tensor:
        """log α(u, w) for every pair of vocabulary tokens: (M, V, V).

        log α = log ⟨e^{a_Q(u) − μ_u}, e^{a_K(w) − ν_w}⟩ + μ_u + ν_w with the max shifts μ, ν
        (constants for autograd), one matmul in float64: exact to rounding unless every feature of
        a pair lies 700 below the pair's maxima.
        """
        x = _vocab_input(vocab, self.n_models)
        a_q, a_k = (a.double() for a in self._preactivations(x, self.vocab_rows(vocab)))  # (M, r, V)
        mu, nu = a_q.amax(1, keepdim=True).detach(), a_k.amax(1, keepdim=True).detach()
        inner = (a_q - mu).exp().transpose(1, 2) @ (a_k - nu).exp()  # (M, V, V)
        return (inner.log() + mu.transpose(1, 2) + nu).float()

    def kernel_weights(self, bits: torch.Tensor) -> torch.Tensor:
        """Unnormalized α_ij ≥ 0: (M, B, N, N)."""
        self.check(bits)
        return self.log_scores(bits, self._feature_major(bits)).exp().permute(0, 3, 1, 2)


class DenseAttention(MinIPHead):
    """Dense softmax attention with score dimension m: π = softmax_j ⟨W_Q x_i + b_Q, W_K x_j + b_K⟩.

    b_K is left out: it adds ⟨W_Q x_i + b_Q, b_K⟩, constant over j, which the softmax cancels, so
    the function class is the same; as a parameter its gradient is exactly zero in theory and pure
    rounding noise in practice, which Adam would amplify into a random walk.
    """

    def __init__(self, m: int, gens: Sequence[torch.Generator], compile_pairs: bool = False
                 ) -> None:
        super().__init__(m, gens, compile_pairs)
        self.w_q, self.b_q = _weight(m, m, gens), _zeros(gens, m)
        self.w_k = _weight(m, m, gens)

    def token_features(self, x: torch.Tensor, rows: torch.Tensor | None,
                       hidden: torch.Tensor | None = None) -> torch.Tensor:
        """[W_Q x + b_Q; W_K x] (M, 2m, T) of feature-major tokens x (M, m, T) (one matmul;
        ``rows`` and ``hidden`` are unused)."""
        b = torch.cat([self.b_q, torch.zeros_like(self.b_q)], 1)
        return _apply(torch.cat([self.w_q, self.w_k], 1), b, x)

    def pair_scores(self, features: torch.Tensor) -> torch.Tensor:
        """s_ij = ⟨W_Q x_i + b_Q, W_K x_j⟩: (M, 2m, N, B) → (M, N, N, B)."""
        return self.pairs.inner(features[:, :self.m], features[:, self.m:])

    def pair_log_scores(self, vocab: torch.Tensor) -> torch.Tensor:
        q, k = self.token_features(_vocab_input(vocab, self.n_models), None).split(self.m, 1)
        return q.transpose(1, 2) @ k


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
    from attnrank.minip.task import token_vocab

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


@dataclass(frozen=True)
class HeadOptions:
    """What a job sets for its heads: the feature map (``table``/``mlp``), the mlp width and the
    feature (``exp``/``softplus``) of kernel heads; the vocabulary (V, m) for table features;
    whether the pairwise reductions run compiled (``minip.pairs``)."""

    feature_map: str
    hidden: int
    feature: str
    vocab: torch.Tensor | None
    compile_pairs: bool = False


def _kernel_head(group: Group, m: int, gens: Sequence[torch.Generator], o: HeadOptions
                 ) -> MinIPHead:
    return KernelAttention(m, int(group.rank), gens, feature_map=o.feature_map, vocab=o.vocab,
                           hidden=o.hidden, feature=o.feature, compile_pairs=o.compile_pairs)


def _dense_head(group: Group, m: int, gens: Sequence[torch.Generator], o: HeadOptions
                ) -> MinIPHead:
    return DenseAttention(m, gens, o.compile_pairs)


# family (minip.families) → builder: the one place a family's name meets its model class
HEADS: dict[str, Callable[[Group, int, Sequence[torch.Generator], HeadOptions], MinIPHead]] = {
    KERNEL: _kernel_head,
    DENSE: _dense_head,
}


def build_head(group: Group, m: int, gens: Sequence[torch.Generator], options: HeadOptions
               ) -> MinIPHead:
    """The head of one group for M = len(gens) models on m-bit tokens (model k's parameters from
    gens[k] only)."""
    return HEADS[group.family](group, m, gens, options)
