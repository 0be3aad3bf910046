"""Min-IP model families beyond the single nonnegative head (docs/methods.md §3.9; TT-7).

Leading model axis M.

Shapes: bits (M, B, N, m), or token ids (M, B, N) into a vocabulary (V, m) (``TokenIds``)
→ predictions (M, B, N). Every family is one ``BeyondKernel``: the feature map of a plain
``minip.models.KernelAttention`` of rank F (the total budget), its features split into G equal
groups (the heads), and the plain head's readout
    ŷ_i = Σ_j π_ij ⟨q_i, v_j⟩ + lin_i,   q_i = W_A x_i + b_A,  v_j = W_V x_j + b_V,
    lin_i = w_c·x_i + c₀.
With s^g_ij = log α^g_ij = logsumexp_{f ∈ group g} (a_Q,f(x_i) + a_K,f(x_j)):

    kernel (the plain head, G = 1)         π = softmax_j s
    multihead (G = H heads of rank F/H, own values v^h, summed before the readout)
        ŷ_i = Σ_h Σ_j softmax_j(s^h)_ij ⟨q_i, v^h_j⟩ + lin_i
    differential (G = 2 heads of rank F/2, λ = sigmoid(ℓ) ∈ (0, 1) per model, ℓ₀ = 0: λ₀ = 1/2)
        π = softmax_j(s¹) − λ·softmax_j(s²)   (rows sum to 1 − λ; entries may be negative)
    signed_linear (G = 1, no exp: α_ij = ⟨a_Q(x_i), a_K(x_j)⟩ signed)
        π_ij = α_ij / (|Σ_l α_il| + ε)
    positional (G = 1; a_Q, a_K see the position p of the token as well as its bits)
        table features: one row per (p, token) (N·V rows); mlp: h = GELU(W₁ [x; onehot(p)] + b₁)
    causal_final (G = 1, the plain head, read only at the last position N, whose query attends to
        all N tokens: the loss and every metric use ŷ_N alone; ``BeyondGroup.final_only``)

With an mlp feature map the heads share its hidden layer GELU(W₁x + b₁) (the token's
representation) and each head has its own rows of W₂ (its features), as the heads of a transformer
share their input. The parameters are drawn from the model's generator in a plain head's order
(then the extra values, then λ's logit), so multihead with H = 1 *is* the plain head of rank F.

Two layouts, equal to float rounding (tested): per sequence from bits, and per token pair from
``TokenIds`` (the score, readout and linear tables on the V tokens / V² pairs, then gathered per
sequence; positional heads use the N·V (position, token) pairs for their scores).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional as F

from attnrank.minip.beyond.families import (
    DIFFERENTIAL,
    MULTIHEAD,
    POSITIONAL,
    SIGNED_LINEAR,
    BeyondGroup,
)
from attnrank.minip.models import (
    PAIR_TABLES,
    HeadOptions,
    KernelAttention,
    TokenIds,
    _apply,
    _normal,
    _vocab_input,
    _weight,
    _zeros,
    shared_pairs,
)

Tokens = torch.Tensor | TokenIds  # bits (M, B, N, m) or token ids into a vocabulary


def _pairs(a_q: torch.Tensor, a_k: torch.Tensor, n_groups: int, signed: bool) -> torch.Tensor:
    """Scores of every (query token, key token) from pre-activations a_Q (M, F, Tq), a_K (M, F, Tk):
    (M, G, Tq, Tk) — log α per group (logsumexp over its F/G features, with max shifts, in
    float64), or α = ⟨a_Q, a_K⟩ when ``signed``."""
    n_models, rank, _ = a_q.shape
    if signed:
        return (a_q.transpose(1, 2) @ a_k)[:, None]
    a_q, a_k = (a.double().reshape(n_models, n_groups, rank // n_groups, -1) for a in (a_q, a_k))
    mu, nu = a_q.amax(2, keepdim=True).detach(), a_k.amax(2, keepdim=True).detach()
    inner = (a_q - mu).exp().transpose(2, 3) @ (a_k - nu).exp()  # (M, G, Tq, Tk)
    return (inner.log() + mu.transpose(2, 3) + nu).float()


def _sequence_pairs(table: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """Entries (i, j) of per-token-pair tables (M, G, T, T) for every sequence, where ``rows``
    (M, B, N) gives each token's index into the table: (M, G, N, N, B)."""
    n_models, n_groups, t, _ = table.shape
    bsz, n = rows.shape[1], rows.shape[2]
    r = rows.permute(0, 2, 1)  # (M, N, B)
    flat = (r[:, :, None, :] * t + r[:, None, :, :]).reshape(n_models, 1, -1)
    out = table.reshape(n_models, n_groups, t * t).gather(2, flat.expand(-1, n_groups, -1))
    return out.reshape(n_models, n_groups, n, n, bsz)


class BeyondKernel(KernelAttention):
    """One group of a family (module docstring): a rank-F kernel feature map split into
    ``n_groups`` heads, combined by ``combine`` (the family name)."""

    def __init__(self, group: BeyondGroup, m: int, n_tokens: int,
                 gens: Sequence[torch.Generator], options: HeadOptions, eps: float) -> None:
        feature = "exp" if group.family == SIGNED_LINEAR else options.feature
        super().__init__(m, group.budget, gens, feature_map=options.feature_map,
                         vocab=options.vocab, hidden=options.hidden, feature=feature,
                         compile_pairs=options.compile_pairs)
        self.family, self.n_groups, self.n_tokens = group.family, group.splits, n_tokens
        self.positional = group.family == POSITIONAL
        if self.positional and self.feature_map == "table":
            self.table = nn.Parameter(_normal((n_tokens * self.table.shape[1], 2 * self.rank),
                                              1.0, gens))
        elif self.positional:
            self.w1 = _weight(self.w1.shape[1], m + n_tokens, gens)
        n_values = group.heads - 1 if group.family == MULTIHEAD else 0
        self.w_values = _weight(n_values * m, m, gens)  # W_V of heads 2…H: (M, (H−1)·m, m)
        self.b_values = _zeros(gens, n_values * m)
        if group.family == DIFFERENTIAL:
            self.lam_logit = nn.Parameter(torch.zeros(len(gens)))
        if group.family == SIGNED_LINEAR and not eps > 0:
            raise ValueError(f"the signed-linear ε must be > 0, got {eps!r}")
        self.eps = float(eps)

    # ---- the feature map (positional: rows per (position, token), or bits with a position)

    def _positions(self, t: int, device: torch.device) -> torch.Tensor:
        """Position of each feature-major token t = p·(T/N) + b: (T,) int64."""
        return torch.arange(t, device=device) // (t // self.n_tokens)

    def bits_rows(self, bits: torch.Tensor) -> torch.Tensor | None:
        rows = super().bits_rows(bits)
        if rows is None or not self.positional:
            return rows
        return rows + self._positions(rows.shape[1], rows.device) * len(self.vocab_codes)

    def token_features(self, x: torch.Tensor, rows: torch.Tensor | None,
                       hidden: torch.Tensor | None = None) -> torch.Tensor:
        """[a_Q; a_K] (M, 2F, T); a positional mlp map reads [x; onehot(p)] with p the position
        of feature-major token t = p·(T/N) + b."""
        if self.positional and self.feature_map == "mlp" and hidden is None:
            pos = torch.eye(self.n_tokens, dtype=x.dtype, device=x.device)[
                :, self._positions(x.shape[2], x.device)]
            x = torch.cat([x, pos.expand(x.shape[0], -1, -1)], 1)
        return super().token_features(x, rows, hidden)

    @property
    def shares_hidden(self) -> bool:
        """An mlp map whose first layer reads the token's bits alone (so it can run in one
        matmul with other heads' first layers on the same tokens)."""
        return self.feature_map == "mlp" and not self.positional

    def pair_scores(self, features: torch.Tensor) -> torch.Tensor:
        """Scores of every group: (M, 2F, N, B) → (M, G, N, N, B): log α per group (logsumexp
        over its F/G features), or α = ⟨a_Q, a_K⟩ for the signed kernel."""
        n_models, _, n, bsz = features.shape
        a_q, a_k = (a.reshape(n_models, self.n_groups, -1, n, bsz)
                    for a in features.split(self.rank, 1))
        pair = self.pairs.inner if self.family == SIGNED_LINEAR else self.pairs.logsumexp
        return pair(a_q, a_k)

    def projection(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Weights and biases of every token projection: [W_A; w_c; W_V; W_V of heads 2…H]
        (the query readout, the linear term, then every head's values, contiguous),
        (M, (H+1)·m + 1, m) and (M, (H+1)·m + 1)."""
        m = self.m
        w, b = self.w_out, self.b_out  # rows W_V (m), W_A (m), w_c (1)
        return (torch.cat([w[:, m:], w[:, :m], self.w_values], 1),
                torch.cat([b[:, m:], b[:, :m], self.b_values], 1))

    def combine(self, scores: torch.Tensor, readout: torch.Tensor, lin: torch.Tensor
                ) -> torch.Tensor:
        """ŷ (M, B, N) from the scores (M, G, N, N, B), readouts (M, Gv, N, N, B) and linear terms
        (M, N, B): Σ over heads and j of the family's mixing weights times the readouts."""
        mixed = (self.mixing(scores) * readout).sum((1, 3))  # (M, N, B)
        return (mixed + lin).transpose(1, 2)

    # ---- the parts: scores (M, G, N, N, B), readouts (M, Gv, N, N, B), lin (M, N, B)

    @property
    def lam(self) -> torch.Tensor:
        """λ (M,) of a differential head."""
        return torch.sigmoid(self.lam_logit)

    def _values(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """v of every head (M, Gv, m, T), q (M, m, T), lin (M, T) of feature-major x (M, m, T)."""
        v, q, lin = self._readouts(x)
        extra = _apply(self.w_values, self.b_values, x)  # (M, (H−1)·m, T)
        return torch.cat([v, extra], 1).unflatten(1, (-1, self.m)), q, lin

    def _bits_parts(self, bits: torch.Tensor
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        self.check_sequences(bits)
        return forward_parts([self], bits)[0]

    def check_sequences(self, bits: torch.Tensor) -> None:
        """Bits (M, B, N, m) this head can read (a positional head: N = its n_tokens)."""
        self.check(bits)
        if self.positional and bits.shape[2] != self.n_tokens:
            raise ValueError(f"a positional head of N = {self.n_tokens} got sequences of "
                             f"{bits.shape[2]} tokens: bits {tuple(bits.shape)}")

    def _token_parts(self, tokens: TokenIds
                     ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        ids, vocab = tokens.ids, tokens.vocab
        n_models, bsz, n = ids.shape
        if n != self.n_tokens or vocab.shape[-1] != self.m or n_models != self.n_models:
            raise ValueError(f"expected ids (M={self.n_models}, B, N={self.n_tokens}) into a "
                             f"vocabulary (V, m={self.m}), got {tuple(ids.shape)} and "
                             f"{tuple(vocab.shape)}")
        n_vocab = vocab.shape[0]
        score_ids = ids
        if self.positional:  # the (position, token) pairs: N·V score tokens, position-major
            score_vocab = vocab.repeat(n, 1)
            score_ids = ids + torch.arange(n, device=ids.device) * n_vocab
        else:
            score_vocab = vocab
        x = _vocab_input(score_vocab, self.n_models)
        rows = None
        if self.feature_map == "table":
            rows = self.token_rows(vocab).repeat(n if self.positional else 1)
            if self.positional:
                rows = rows + torch.arange(n, device=rows.device).repeat_interleave(
                    n_vocab) * len(self.vocab_codes)
            rows = rows[None].expand(self.n_models, -1)
        a_q, a_k = self._preactivations(x, rows)  # (M, F, V')
        scores = _sequence_pairs(_pairs(a_q, a_k, self.n_groups, self.family == SIGNED_LINEAR),
                                 score_ids)
        v, q, lin = self._values(_vocab_input(vocab, self.n_models))  # (M, Gv, m, V), (M, m, V)
        readout = _sequence_pairs(q.transpose(1, 2)[:, None] @ v, ids)
        lin = lin.gather(1, ids.permute(0, 2, 1).reshape(n_models, -1)).view(n_models, n, bsz)
        return scores, readout, lin

    def mixing(self, scores: torch.Tensor) -> torch.Tensor:
        """The family's mixing weights (M, G', N, N, B) from its scores (M, G, N, N, B)
        (module docstring); axis 3 is j."""
        if self.family == SIGNED_LINEAR:
            return scores / (scores.sum(3, keepdim=True).abs() + self.eps)
        pi = torch.softmax(scores, dim=3)
        if self.family == DIFFERENTIAL:
            return pi[:, :1] - self.lam[:, None, None, None, None] * pi[:, 1:]
        return pi

    def predict(self, tokens: Tokens) -> torch.Tensor:
        """ŷ (M, B, N) for bits (M, B, N, m) or TokenIds (M, B, N) (``forward_groups``)."""
        return forward_groups([self], tokens)[0]

    def forward(self, bits: torch.Tensor) -> torch.Tensor:
        return self.predict(bits)

    def forward_tokens(self, tokens: TokenIds) -> torch.Tensor:
        return self.predict(tokens)

    def mixing_weights(self, bits: torch.Tensor) -> torch.Tensor:
        """The mixing weights of every sequence: (M, G', B, N, N) (G' = H for multihead, else 1;
        rows i, columns j)."""
        return self.mixing(self._bits_parts(bits)[0]).permute(0, 1, 4, 2, 3)


def forward_parts(heads: Sequence[BeyondKernel], bits: torch.Tensor | None,
                  tokens: TokenIds | None = None
                  ) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """(scores (M, G, N, N, B), readouts (M, Gv, N, N, B), lin (M, N, B)) of every head on the
    same sequences, per sequence: from bits (M, B, N, m), or from TokenIds of layout ``tokens``
    (every per-token quantity on the V tokens, gathered to the batch's N·B tokens; not for
    positional heads).

    What the heads share runs once: the feature-major tokens, every head's projections
    [W_A; w_c; W_V; W_V of heads 2…H] as one matmul (on the batch's tokens), and the first layers
    of the mlp maps that read the bits alone as one matmul and one GELU (on the vocabulary for
    layout ``tokens``, then gathered).
    """
    if tokens is not None:
        n_models, bsz, n = tokens.ids.shape
        x, take = _vocab_input(tokens.vocab, n_models), tokens.take
        rows_of = lambda h: h.vocab_rows(tokens.vocab)  # noqa: E731
    else:
        n_models, bsz, n, _ = bits.shape
        x, take = KernelAttention._feature_major(bits), (lambda t: t)
        rows_of = lambda h: h.bits_rows(bits)  # noqa: E731
    m = heads[0].m
    pairs = shared_pairs(heads)
    weights, biases = zip(*(h.projection() for h in heads), strict=True)
    sizes = [w.shape[1] for w in weights]
    # the projections on the batch's tokens (a matmul over m costs less than gathering its output)
    out = _apply(torch.cat(weights, 1), torch.cat(biases, 1), take(x)).split(sizes, 1)
    readouts, lins = [], []
    for o in out:  # per head: [q (m); lin (1); v of heads 1…H (H·m)]
        o = o.view(n_models, -1, n, bsz)
        v = o[:, m + 1:].unflatten(1, (-1, m))  # (M, Gv, m, N, B)
        readouts.append(pairs.inner(o[:, None, :m], v))  # (M, Gv, N, N, B)
        lins.append(o[:, m])
    shared = [h for h in heads if h.shares_hidden]
    hidden: dict[int, torch.Tensor] = {}
    if shared:
        w1, b1 = torch.cat([h.w1 for h in shared], 1), torch.cat([h.b1 for h in shared], 1)
        layer = F.gelu(_apply(w1, b1, x)).split([h.w1.shape[1] for h in shared], dim=1)
        hidden = {id(h): t for h, t in zip(shared, layer, strict=True)}
    scores = [h.pair_scores(take(h.token_features(x, rows_of(h), hidden.get(id(h))))
                            .reshape(n_models, -1, n, bsz)) for h in heads]
    return list(zip(scores, readouts, lins, strict=True))


def forward_groups(heads: Sequence[BeyondKernel], tokens: Tokens) -> list[torch.Tensor]:
    """ŷ (M, B, N) of every head on the same sequences (bits (M, B, N, m) or TokenIds).

    TokenIds of layout ``pairs``: each head on its V² (or N·V × N·V positional) pair tables;
    layout ``tokens``: ``forward_parts`` on the gathered tokens, positional heads on the bits
    vocab[ids] (their features depend on the position as well); bits: ``forward_parts``.
    """
    if isinstance(tokens, TokenIds) and tokens.layout == PAIR_TABLES:
        return [h.combine(*h._token_parts(tokens)) for h in heads]
    out: dict[int, torch.Tensor] = {}
    if isinstance(tokens, TokenIds):
        plain = [h for h in heads if not h.positional]
        positional = [h for h in heads if h.positional]
        if positional:
            bits = tokens.vocab[tokens.ids]
            for h in positional:
                h.check_sequences(bits)
            parts = forward_parts(positional, bits)
            out |= {id(h): h.combine(*p) for h, p in zip(positional, parts, strict=True)}
        if plain:
            parts = forward_parts(plain, None, tokens)
            out |= {id(h): h.combine(*p) for h, p in zip(plain, parts, strict=True)}
    else:
        for h in heads:
            h.check_sequences(tokens)
        parts = forward_parts(heads, tokens)
        out = {id(h): h.combine(*p) for h, p in zip(heads, parts, strict=True)}
    return [out[id(h)] for h in heads]


def build_beyond_head(group: BeyondGroup, m: int, n_tokens: int, gens: Sequence[torch.Generator],
                      options: HeadOptions, eps: float) -> BeyondKernel:
    """The head of one group for M = len(gens) models (model k's parameters from gens[k] only)."""
    return BeyondKernel(group, m, n_tokens, gens, options, eps)
