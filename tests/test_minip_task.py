"""Min-IP data: targets against brute force, token kinds, the witness family, disjoint pools."""

import itertools

import pytest
import torch

from attnrank.minip.task import (
    bit_codes,
    disjoint_pools,
    distinct_sequence_ids,
    minip_targets,
    sample_sequences,
    sample_tokens,
    token_vocab,
    witness_family,
)


def brute_force_targets(seq):
    return [min(sum(a * b for a, b in zip(x, z, strict=True)) for z in seq) for x in seq]


@pytest.mark.parametrize("n_tokens", [1, 2, 3, 5])
@pytest.mark.parametrize("tokens", ["fixed_weight", "bernoulli"])
def test_targets_match_brute_force(n_tokens, tokens):
    g = torch.Generator().manual_seed(n_tokens)
    bits = sample_sequences([g], 200, n_tokens, 6, tokens)[0]
    got = minip_targets(bits)
    want = torch.tensor([brute_force_targets(s.int().tolist()) for s in bits], dtype=got.dtype)
    assert torch.equal(got, want)


def test_length_two_target_is_the_cross_inner_product():
    g = torch.Generator().manual_seed(0)
    bits = sample_sequences([g], 500, 2, 8, "bernoulli")[0]
    cross = (bits[:, 0] * bits[:, 1]).sum(-1)
    assert torch.equal(minip_targets(bits), torch.stack([cross, cross], -1))


def test_fixed_weight_tokens_have_half_ones_and_vocab_sizes():
    g = torch.Generator().manual_seed(1)
    x = sample_tokens(g, (1000,), 8, "fixed_weight")
    assert torch.all(x.sum(-1) == 4)
    assert token_vocab(8, "fixed_weight").shape == (70, 8)
    assert token_vocab(6, "bernoulli").shape == (64, 6)
    v = token_vocab(8, "fixed_weight")
    codes = bit_codes(v)
    assert torch.all(codes[1:] > codes[:-1])  # sorted, distinct
    with pytest.raises(ValueError, match="even m"):
        sample_tokens(g, (3,), 7, "fixed_weight")
    with pytest.raises(ValueError, match="tokens must be"):
        token_vocab(4, "ternary")


def test_streams_are_per_model():
    """Row k of a batch depends only on generator k (so vectorized = separate)."""
    gens = [torch.Generator().manual_seed(s) for s in (5, 6, 7)]
    batch = sample_sequences(gens, 16, 3, 8, "fixed_weight")
    alone = sample_sequences([torch.Generator().manual_seed(6)], 16, 3, 8, "fixed_weight")
    assert torch.equal(batch[1], alone[0])


@pytest.mark.parametrize("blocks,width", [(8, 3), (4, 2), (3, 5)])
def test_witness_family_size_and_inner_products(blocks, width):
    fam = witness_family(blocks, width)
    m = blocks * width
    assert fam.shape == (blocks * blocks**2 * 3, 3, m)
    assert len({tuple(bit_codes(s).tolist()) for s in fam}) == fam.shape[0]  # all distinct
    q = torch.zeros(blocks, m)
    for a in range(blocks):
        q[a, a * width:(a + 1) * width] = 1
    k = 1 - q
    ip = q @ k.T
    assert torch.all(ip.diagonal() == 0)
    assert torch.all(ip[~torch.eye(blocks, dtype=bool)] == width)
    # every sequence holds exactly one query (w ones) and two keys ((K-1)w ones)
    weights = fam.sum(-1)
    assert torch.all((weights == width).sum(-1) == 1)
    assert torch.all((weights == (blocks - 1) * width).sum(-1) == 2)
    # each query appears with every ordered key pair at each position
    for pos in range(3):
        at = fam[:, pos].sum(-1) == width
        assert int(at.sum()) == blocks**3


def test_witness_targets_follow_the_construction():
    fam = witness_family(4, 2)
    t = minip_targets(fam)
    # the query's target is 0 iff its own key k_a is present, else w
    for seq, tgt in zip(fam[:50], t[:50], strict=True):
        qpos = int(torch.nonzero(seq.sum(-1) == 2)[0])
        others = [seq[j] for j in range(3) if j != qpos]
        has_own = any(float(seq[qpos] @ o) == 0 for o in others)
        assert float(tgt[qpos]) == (0.0 if has_own else 2.0)


@pytest.mark.parametrize("share_tokens", [True, False])
def test_disjoint_pools(share_tokens):
    g = torch.Generator().manual_seed(3)
    train, test = disjoint_pools(g, 300, 200, 3, 8, "fixed_weight", share_tokens=share_tokens)
    assert train.shape == (300, 3, 8) and test.shape == (200, 3, 8)
    tr = {tuple(bit_codes(s).tolist()) for s in train}
    te = {tuple(bit_codes(s).tolist()) for s in test}
    assert len(tr) == 300 and len(te) == 200 and not tr & te
    if not share_tokens:
        tok_tr = set(itertools.chain.from_iterable(tr))
        tok_te = set(itertools.chain.from_iterable(te))
        assert not tok_tr & tok_te


def test_pools_refuse_impossible_sizes():
    g = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="distinct sequences"):
        disjoint_pools(g, 5000, 5000, 1, 4, "fixed_weight")


def _codes(ids, n_vocab):
    return ((ids[:, 0] * n_vocab + ids[:, 1]) * n_vocab + ids[:, 2]).tolist()


@pytest.mark.parametrize("n_vocab,n_train,n_test", [
    (20, 7744, 256),          # the whole space of m = 6 (20^3 = 8000): every sequence used once
    (70, 1024, 4096),         # a permuted space, small pool
    (300, 60000, 4096),       # 300^3 = 2.7e7 > 2^24: drawn iid, first draws kept
])
def test_sequence_pools_are_distinct_disjoint_and_in_the_space(n_vocab, n_train, n_test):
    g = torch.Generator().manual_seed(5)
    train, test = distinct_sequence_ids(g, n_vocab, n_train, n_test, 3)
    assert train.shape == (n_train, 3) and test.shape == (n_test, 3)
    assert train.dtype == test.dtype == torch.int64
    for ids in (train, test):
        assert int(ids.min()) >= 0 and int(ids.max()) < n_vocab
    tr, te = set(_codes(train, n_vocab)), set(_codes(test, n_vocab))
    assert len(tr) == n_train and len(te) == n_test and not tr & te
    if n_train + n_test == n_vocab**3:
        assert tr | te == set(range(n_vocab**3))


def test_sequence_pools_are_seeded_and_uniform_over_positions():
    a = distinct_sequence_ids(torch.Generator().manual_seed(1), 70, 5000, 100, 3)
    b = distinct_sequence_ids(torch.Generator().manual_seed(1), 70, 5000, 100, 3)
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
    counts = torch.bincount(a[0].flatten(), minlength=70).float()
    assert counts.min() > 0.6 * counts.mean() and counts.max() < 1.4 * counts.mean()


def test_sequence_pools_refuse_more_than_the_space():
    with pytest.raises(ValueError, match="V\\^N = 20\\^3 = 8000"):
        distinct_sequence_ids(torch.Generator().manual_seed(0), 20, 7800, 256, 3)
