"""Min-IP on Boolean tokens: data generators, the witness family and disjoint pools.

A sequence is X = (x_1, …, x_N), x_i ∈ {0,1}^m; its target is t_i(X) = min_{1≤j≤N} ⟨x_i, x_j⟩,
with j over all positions (i included; so for N = 2, t_i = ⟨x_1, x_2⟩ because ⟨x, z⟩ ≤ ⟨x, x⟩ on
bits).
"""

from __future__ import annotations

import itertools
from math import comb

import torch

TOKEN_KINDS = ("fixed_weight", "bernoulli")
MAX_VOCAB_BITS = 16  # a token table (and an enumerated vocabulary) exists only for m ≤ 16


def minip_targets(bits: torch.Tensor) -> torch.Tensor:
    """t_i = min_j ⟨x_i, x_j⟩. bits: (..., N, m) → targets (..., N) (same dtype as a float)."""
    x = bits.float()
    gram = (x[..., :, None, :] * x[..., None, :, :]).sum(-1)  # elementwise: no tiny matmuls
    return gram.amin(dim=-1)


def bit_codes(bits: torch.Tensor) -> torch.Tensor:
    """Integer code Σ_k bits_k 2^k of each token. bits: (..., m) with m ≤ 62 → (...,) int64."""
    m = bits.shape[-1]
    if m > 62:
        raise ValueError(f"bit codes need m ≤ 62, got m={m}")
    weights = 2 ** torch.arange(m, dtype=torch.int64, device=bits.device)
    return (bits.to(torch.int64) * weights).sum(-1)


def token_vocab(m: int, tokens: str) -> torch.Tensor:
    """Every token of the kind, as rows of bits sorted by code: (V, m) float32.

    fixed_weight: the C(m, m/2) tokens with exactly m/2 ones; bernoulli: all 2^m tokens.
    """
    if tokens not in TOKEN_KINDS:
        raise ValueError(f"tokens must be one of {TOKEN_KINDS}, got {tokens!r}")
    if m > MAX_VOCAB_BITS:
        raise ValueError(f"an enumerated vocabulary needs m ≤ {MAX_VOCAB_BITS}, got m={m}")
    codes = torch.arange(2**m, dtype=torch.int64)
    bits = ((codes[:, None] >> torch.arange(m)) & 1).float()
    if tokens == "fixed_weight":
        if m % 2:
            raise ValueError(f"fixed-weight tokens need an even m, got m={m}")
        bits = bits[bits.sum(-1) == m // 2]
        assert bits.shape[0] == comb(m, m // 2)
    return bits


def token_ids(bits: torch.Tensor, vocab: torch.Tensor) -> torch.Tensor:
    """Row of ``vocab`` (V, m) holding each token of bits (..., m): (...) int64; a token missing
    from the vocabulary is an error."""
    codes, vocab_codes = bit_codes(bits), bit_codes(vocab)
    order = vocab_codes.argsort()
    pos = torch.searchsorted(vocab_codes[order], codes).clamp(max=len(order) - 1)
    ids = order[pos]
    if not torch.equal(vocab_codes[ids], codes):
        raise ValueError("a token is not in the vocabulary")
    return ids


def sample_tokens(gen: torch.Generator, shape: tuple[int, ...], m: int, tokens: str,
                  device: str | torch.device = "cpu") -> torch.Tensor:
    """Random tokens: (*shape, m) float32 bits, fixed-weight (exactly m/2 ones) or Bernoulli(1/2)."""
    if tokens == "bernoulli":
        return torch.randint(0, 2, (*shape, m), generator=gen, device=device).float()
    if tokens != "fixed_weight":
        raise ValueError(f"tokens must be one of {TOKEN_KINDS}, got {tokens!r}")
    if m % 2:
        raise ValueError(f"fixed-weight tokens need an even m, got m={m}")
    keys = torch.rand((*shape, m), generator=gen, device=device)
    ones = keys.argsort(dim=-1)[..., : m // 2]  # the m/2 smallest keys are the ones
    return torch.zeros(*shape, m, device=device).scatter_(-1, ones, 1.0)


def sample_sequences(gens: list[torch.Generator], batch: int, n_tokens: int, m: int, tokens: str,
                     device: str | torch.device = "cpu") -> torch.Tensor:
    """One independent stream per model: (M, batch, N, m), row k drawn from gens[k] only."""
    return torch.stack([sample_tokens(g, (batch, n_tokens), m, tokens, device) for g in gens])


def witness_family(n_blocks: int, block_width: int) -> torch.Tensor:
    """The witness suite: (K·K²·3, 3, m) bits, m = K·w.

    Queries q_a = indicator of block a (w ones); keys k_b = 1 − q_b, so ⟨q_a, k_a⟩ = 0 and
    ⟨q_a, k_b⟩ = w for b ≠ a. Every query with every ordered pair of keys (k_b, k_c), with the query
    at each of the 3 positions (keys fill the other positions in order).
    """
    if n_blocks < 2 or block_width < 1:
        raise ValueError(f"witness family needs K ≥ 2 and w ≥ 1, got K={n_blocks}, w={block_width}")
    m = n_blocks * block_width
    q = torch.zeros(n_blocks, m)
    for a in range(n_blocks):
        q[a, a * block_width:(a + 1) * block_width] = 1.0
    k = 1.0 - q
    seqs = []
    for pos in range(3):
        for a, b, c in itertools.product(range(n_blocks), repeat=3):
            keys = [k[b], k[c]]
            keys.insert(pos, q[a])
            seqs.append(torch.stack(keys))
    return torch.stack(seqs)


MAX_ENUMERATED_SEQUENCES = 2**24  # a sequence space this small is permuted whole


def distinct_sequence_ids(gen: torch.Generator, n_vocab: int, n_train: int, n_test: int,
                          n_tokens: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Disjoint train and test pools of distinct sequences of token ids, drawn uniformly from the
    V^N sequences over a vocabulary of V = ``n_vocab`` tokens: (n_train, N), (n_test, N) int64.

    A sequence is its base-V code c = Σ_k id_k V^(N−1−k). A space of at most
    ``MAX_ENUMERATED_SEQUENCES`` codes is permuted whole (the first n_train codes are the train
    pool, the next n_test the test pool); a larger one is drawn iid uniformly and each code is kept
    at its first draw (a uniform random set of distinct codes, in draw order) until n_train +
    n_test are found. ValueError when the space holds fewer.
    """
    space, need = n_vocab**n_tokens, n_train + n_test
    if need > space:
        raise ValueError(f"pools of {n_train} + {n_test} distinct sequences need that many of the "
                         f"V^N = {n_vocab}^{n_tokens} = {space}; lower the pools or raise m")
    if space <= MAX_ENUMERATED_SEQUENCES:
        codes = torch.randperm(space, generator=gen)[:need]
    else:
        codes = torch.empty(0, dtype=torch.int64)
        while codes.numel() < need:
            short = need - codes.numel()
            drawn = torch.cat([codes, torch.randint(0, space, (short + short // 8 + 16,),
                                                    generator=gen)])
            uniq, inverse = torch.unique(drawn, return_inverse=True)
            first = torch.full((uniq.numel(),), drawn.numel(), dtype=torch.int64).scatter_reduce(
                0, inverse, torch.arange(drawn.numel()), "amin")
            codes = drawn[first.sort().values]
        codes = codes[:need]
    powers = n_vocab ** torch.arange(n_tokens - 1, -1, -1, dtype=torch.int64)
    ids = (codes[:, None] // powers) % n_vocab
    return ids[:n_train], ids[n_train:]


def disjoint_pools(gen: torch.Generator, n_train: int, n_test: int, n_tokens: int, m: int,
                   tokens: str, share_tokens: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Disjoint train and test pools of distinct random sequences: (n_train, N, m), (n_test, N, m).

    No sequence is in both pools. With ``share_tokens=False`` no token is in both pools either:
    each token is assigned to one side by a seeded hash of its code, and a sequence goes to the
    side that owns all of its tokens (mixed sequences are discarded).
    """
    salt = int(torch.randint(0, 2**31 - 1, (1,), generator=gen))
    seen: set[tuple[int, ...]] = set()
    train: list[torch.Tensor] = []
    test: list[torch.Tensor] = []
    for _ in range(200):
        cand = sample_tokens(gen, (2 * (n_train + n_test), n_tokens), m, tokens)
        codes = bit_codes(cand)
        side = ((codes * 2654435761 + salt) >> 7) % 2 == 0  # (P, N): True = train side
        for i in range(cand.shape[0]):
            key = tuple(codes[i].tolist())
            if key in seen:
                continue
            if share_tokens:
                dest = train if len(train) < n_train else test
            elif bool(side[i].all()):
                dest = train
            elif bool((~side[i]).all()):
                dest = test
            else:
                continue
            if (dest is train and len(train) >= n_train) or (dest is test and len(test) >= n_test):
                continue
            seen.add(key)
            dest.append(cand[i])
        if len(train) == n_train and len(test) == n_test:
            return torch.stack(train), torch.stack(test)
    raise ValueError(f"could not draw {n_train}+{n_test} distinct sequences of {n_tokens} tokens "
                     f"with m={m} ({tokens}); lower the pool sizes or raise m")
