"""Min-IP models: hand-built constructions solve what they provably solve; kernel weights are
nonnegative and attention rows are stochastic."""

import itertools

import pytest
import torch

from attnrank.minip.experiments.constructions import softmin_worst_case
from attnrank.minip.models import (
    DenseAttention,
    KernelAttention,
    dense_construction,
    exponential_construction,
    rank1_construction,
)
from attnrank.minip.task import minip_targets, token_vocab


def all_sequences(m, n_tokens, tokens="bernoulli"):
    """Every ordered sequence of n tokens: (1, V^n, n, m)."""
    v = token_vocab(m, tokens)
    idx = torch.tensor(list(itertools.product(range(v.shape[0]), repeat=n_tokens)))
    return v[idx][None]


def worst_error(model, bits):
    with torch.no_grad():
        return float((model(bits) - minip_targets(bits)).abs().max())


@pytest.mark.parametrize("n_tokens", [1, 2])
@pytest.mark.parametrize("m", [4, 6])
def test_rank1_construction_exact_for_short_sequences(n_tokens, m):
    bits = all_sequences(m, n_tokens)
    assert worst_error(rank1_construction(m), bits) < 1e-4


def test_rank1_construction_fails_at_three_tokens():
    bits = all_sequences(4, 3)
    assert worst_error(rank1_construction(4), bits) >= 0.5


@pytest.mark.parametrize("m", [2, 4])
def test_exponential_construction_exact_on_all_triples(m):
    bits = all_sequences(m, 3)
    model = exponential_construction(m, beta=2.0)
    assert model.rank == 2**m
    err = worst_error(model, bits)
    assert err < 0.5
    assert err == pytest.approx(softmin_worst_case(m, 2.0, "bernoulli"), abs=1e-4)


@pytest.mark.parametrize("m", [6, 8])
def test_exponential_construction_exact_at_three_tokens_up_to_m8(m):
    """All V³ triples in closed form (the model computes exactly the softmin, checked on a sample)."""
    for beta, bound in ((2.0, 0.5), (8.0, 0.01)):
        assert softmin_worst_case(m, beta, "bernoulli") < bound
    g = torch.Generator().manual_seed(m)
    v = token_vocab(m, "bernoulli")
    bits = v[torch.randint(0, v.shape[0], (1, 2000, 3), generator=g)]
    model = exponential_construction(m, beta=2.0)
    with torch.no_grad():
        pred = model(bits)
    gram = bits @ bits.transpose(-1, -2)
    w = torch.softmax(-2.0 * gram, dim=-1)
    assert torch.allclose(pred, (w * gram).sum(-1), atol=1e-4)
    assert torch.all(torch.round(pred) == minip_targets(bits))


def test_exponential_construction_matches_the_spec_numbers_at_m8():
    """SPEC: worst-case error 0.21 at β = 2 and 0.0007 at β = 8 over all 256³ ordered triples."""
    assert softmin_worst_case(8, 2.0, "bernoulli") == pytest.approx(0.21, abs=0.01)
    assert softmin_worst_case(8, 8.0, "bernoulli") == pytest.approx(0.0007, abs=0.0001)


@pytest.mark.parametrize("m", [4, 8])
def test_dense_construction_exact_at_three_tokens(m):
    g = torch.Generator().manual_seed(0)
    v = token_vocab(m, "bernoulli")
    bits = v[torch.randint(0, v.shape[0], (1, 5000, 3), generator=g)]
    assert worst_error(dense_construction(m), bits) < 1e-3


@pytest.mark.parametrize("feature_map", ["table", "mlp"])
@pytest.mark.parametrize("feature", ["exp", "softplus"])
def test_kernel_weights_nonnegative_and_rows_stochastic(feature_map, feature):
    gens = [torch.Generator().manual_seed(s) for s in range(3)]
    vocab = token_vocab(8, "fixed_weight")
    model = KernelAttention(8, 4, gens, feature_map=feature_map, vocab=vocab, feature=feature)
    bits = vocab[torch.randint(0, 70, (3, 64, 3), generator=gens[0])]
    with torch.no_grad():
        alpha = model.kernel_weights(bits)
        pi = model.attention(bits)
    assert torch.all(alpha >= 0)
    assert torch.allclose(pi.sum(-1), torch.ones_like(pi.sum(-1)), atol=1e-5)
    assert torch.allclose(pi, alpha / alpha.sum(-1, keepdim=True), atol=1e-5)
    assert model(bits).shape == (3, 64, 3)


def test_dense_rows_stochastic_and_shape_errors():
    gens = [torch.Generator().manual_seed(s) for s in range(2)]
    model = DenseAttention(6, gens)
    bits = torch.randint(0, 2, (2, 10, 3, 6)).float()
    pi = model.attention(bits)
    assert torch.allclose(pi.sum(-1), torch.ones(2, 10, 3), atol=1e-6)
    with pytest.raises(ValueError, match="expected bits of shape"):
        model(bits[:1])


def test_table_features_refuse_unknown_tokens():
    gens = [torch.Generator().manual_seed(0)]
    model = KernelAttention(4, 2, gens, feature_map="table", vocab=token_vocab(4, "fixed_weight"))
    odd = torch.tensor([[[[1.0, 1.0, 1.0, 0.0]] * 3]])
    with pytest.raises(ValueError, match="not in the feature table"):
        model(odd)


def test_per_model_init_independent_of_batch_composition():
    gens3 = [torch.Generator().manual_seed(s) for s in (10, 11, 12)]
    gens1 = [torch.Generator().manual_seed(11)]
    a = KernelAttention(8, 4, gens3, feature_map="mlp")
    b = KernelAttention(8, 4, gens1, feature_map="mlp")
    for (name, pa), (_, pb) in zip(a.named_parameters(), b.named_parameters(), strict=True):
        assert torch.equal(pa[1], pb[0]), name


def test_vocabulary_construction_is_exact_at_r_equal_vocab_size():
    """The capacity probe's starting point: r = V table features solve N = 3 exactly."""
    from attnrank.minip.experiments.capacity import set_vocab_construction

    vocab = token_vocab(6, "fixed_weight")
    gens = [torch.Generator().manual_seed(s) for s in range(2)]
    model = KernelAttention(6, vocab.shape[0], gens, feature_map="table", vocab=vocab)
    set_vocab_construction(model, vocab, beta=8.0)
    idx = torch.tensor(list(itertools.product(range(vocab.shape[0]), repeat=3)))
    bits = vocab[idx][None].expand(2, -1, -1, -1)
    assert worst_error(model, bits) < 0.01
    with pytest.raises(ValueError, match="r = V"):
        set_vocab_construction(KernelAttention(6, 3, gens, vocab=vocab), vocab, 8.0)
