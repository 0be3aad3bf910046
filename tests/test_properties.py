"""Property tests (hypothesis) of the rank estimators and the data generators: what must hold for
every input, not only for the constructed cases of test_rank.py, test_minip_task.py,
test_corpora.py and test_entropic_tasks.py. Examples are derandomized (conftest's "ci" profile);
the whole file runs in seconds."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from attnrank.core.rank import (
    TAUS,
    all_estimates,
    energy_effective_rank,
    entropy_effective_rank,
    numerical_rank,
    singular_values,
    stable_rank,
)
from attnrank.core.seeding import numpy_rng, torch_generator
from attnrank.entropic.tasks.operators import (
    eckart_young_bound,
    low_rank_matrix,
    operator_teacher,
    random_orthonormal,
)
from attnrank.entropic.tasks.teachers import attention_teacher
from attnrank.language.complexity import (
    corpus_complexity,
    kgram_conditional_entropy,
    vocabulary_size,
)
from attnrank.language.corpora import load_corpus, split_corpus
from attnrank.minip.task import (
    bit_codes,
    minip_targets,
    sample_sequences,
    sample_tokens,
    token_ids,
    token_vocab,
)

FAST = settings(max_examples=40, deadline=None)
SLOW = settings(max_examples=12, deadline=None)  # examples that build a teacher or a corpus
LZMA = settings(max_examples=8, deadline=None)  # preset 9 extreme: ~0.7 GB of match finder a call
ESTIMATORS = (energy_effective_rank, entropy_effective_rank, stable_rank)
seeds = st.integers(0, 2**31 - 1)
spectra = arrays(np.float64, st.integers(1, 12),
                 elements=st.floats(0, 1e3, allow_nan=False, allow_infinity=False))


def rng(*parts: str | int) -> np.random.Generator:
    return numpy_rng("test_properties", *parts)


# ---- rank estimators ----------------------------------------------------------------------


@st.composite
def rank_k_matrices(draw):
    """(matrix, k): U diag(s) Vᵀ of exact rank k, s in [1, 8] (so s_k / s_1 ≥ 1/8 > every τ)."""
    n, m = draw(st.integers(1, 9)), draw(st.integers(1, 9))
    k = draw(st.integers(1, min(n, m)))
    s = np.array(draw(st.lists(st.floats(1, 8), min_size=k, max_size=k)))
    return low_rank_matrix(rng("rank-k", draw(seeds)), n, m, s), k


@FAST
@given(rank_k_matrices())
def test_exact_rank_k_construction_is_rank_k_and_bounds_the_effective_ranks(case):
    a, k = case
    s = singular_values(a)
    assert np.linalg.matrix_rank(a) == k
    for tau in TAUS:
        assert numerical_rank(s, tau) == k
    energy, entropy, stable = energy_effective_rank(s), entropy_effective_rank(s), stable_rank(s)
    tol = 1e-9 * k
    assert 1 - tol <= stable <= energy + tol  # 1 ≤ R̃_eff ≤ rank, and the stable rank below
    assert 1 - tol <= energy <= k + tol
    assert energy <= entropy + tol <= k + 2 * tol  # the entropy rank is at most the rank too


@FAST
@given(rank_k_matrices(), st.integers(-60, 60), seeds)
def test_invariant_to_any_scale_and_orthogonal_maps_on_both_sides(case, log2_scale, seed):
    """Scales over 36 decades (test_rank.py stays within 6) and Haar orthogonal maps."""
    a, k = case
    g = rng("orthogonal", seed)
    p, q = random_orthonormal(g, a.shape[0], a.shape[0]), random_orthonormal(g, a.shape[1], a.shape[1])
    s, s2 = singular_values(a), singular_values(2.0**log2_scale * p @ a @ q.T)
    for est in ESTIMATORS:
        assert est(s2) == pytest.approx(est(s), rel=1e-9)
    for tau in TAUS:
        assert numerical_rank(s2, tau) == numerical_rank(s, tau) == k


@FAST
@given(spectra, st.floats(0, 1, exclude_max=True), st.floats(0, 1, exclude_max=True))
def test_numerical_rank_is_monotone_in_tau(s, t1, t2):
    lo, hi = sorted((t1, t2))
    nonzero = int(np.sum(s > 0))
    assert nonzero >= numerical_rank(s, lo) >= numerical_rank(s, hi)
    assert numerical_rank(s, 0.0) == nonzero
    if nonzero:
        assert numerical_rank(s, hi) >= 1  # s_1 > τ·s_1 for every τ < 1


@FAST
@given(spectra, st.integers(0, 5), seeds)
def test_estimators_ignore_order_and_zero_padding_of_the_spectrum(s, zeros, seed):
    padded = rng("pad", seed).permutation(np.concatenate([s, np.zeros(zeros)]))
    for est in ESTIMATORS:
        assert est(padded) == pytest.approx(est(s), rel=1e-12, abs=0)
    for tau in TAUS:
        assert numerical_rank(padded, tau) == numerical_rank(s, tau)


@FAST
@given(st.lists(st.integers(1, 6), min_size=2, max_size=4))
def test_zero_matrices_of_any_shape_and_stack_are_rank_zero(shape):
    s = singular_values(np.zeros(shape))
    for est in (*ESTIMATORS, numerical_rank):
        out = np.asarray(est(s))
        assert out.shape == tuple(shape[:-2]) and np.all(out == 0)
    if len(shape) == 2:
        assert set(all_estimates(s).values()) == {0.0}


@FAST
@given(st.integers(1, 8), st.integers(1, 8), st.integers(1, 4), seeds)
def test_products_of_rank_k_factors_never_exceed_rank_k(n, m, k, seed):
    """B C with B n×k, C k×m Gaussian: rank ≤ k, so every estimator is ≤ min(k, n, m)."""
    g = rng("factors", seed)
    s = singular_values(g.standard_normal((n, k)) @ g.standard_normal((k, m)))
    bound = min(k, n, m)
    assert numerical_rank(s, 1e-8) <= bound
    for est in ESTIMATORS:
        assert 1 - 1e-9 <= est(s) <= bound + 1e-6


# ---- Min-IP data --------------------------------------------------------------------------

bit_sequences = arrays(np.int8, st.tuples(st.integers(1, 4), st.integers(1, 6), st.integers(1, 8)),
                       elements=st.integers(0, 1))


def brute_force_targets(seq: list[list[int]]) -> list[int]:
    """t_i = min over every position j (i included) of ⟨x_i, x_j⟩, by the definition."""
    return [min(sum(a * b for a, b in zip(x, z, strict=True)) for z in seq) for x in seq]


@FAST
@given(bit_sequences)
def test_targets_are_the_min_ip_definition_on_any_bits(bits):
    got = minip_targets(torch.from_numpy(bits))
    want = [brute_force_targets(seq.tolist()) for seq in bits]
    assert got.tolist() == want
    ones = bits.sum(-1)
    assert np.all(got.numpy() <= ones)  # ⟨x_i, x_i⟩ is among the candidates
    if bits.shape[1] == 1:
        assert np.array_equal(got.numpy(), ones)


@FAST
@given(st.integers(1, 8).map(lambda h: 2 * h), st.integers(1, 5), st.integers(1, 6), seeds)
def test_fixed_weight_sequences_have_half_ones_and_definition_targets(m, batch, n_tokens, seed):
    g = torch_generator("test_properties", "fixed", seed)
    x = sample_sequences([g], batch, n_tokens, m, "fixed_weight")[0]
    assert x.shape == (batch, n_tokens, m)
    assert set(x.unique().tolist()) <= {0.0, 1.0}
    assert torch.all(x.sum(-1) == m // 2)
    t = minip_targets(x)
    assert t.tolist() == [brute_force_targets(seq.int().tolist()) for seq in x]
    assert torch.all((t >= 0) & (t <= m // 2))


@FAST
@given(st.integers(1, 8).map(lambda h: 2 * h), st.sampled_from(["fixed_weight", "bernoulli"]),
       seeds)
def test_sampled_tokens_are_in_the_vocabulary_and_round_trip(m, kind, seed):
    g = torch_generator("test_properties", "vocab", seed)
    x = sample_tokens(g, (64,), m, kind)
    vocab = token_vocab(m, kind)
    assert torch.equal(vocab[token_ids(x, vocab)], x)
    codes = bit_codes(vocab)
    assert torch.all(codes[1:] > codes[:-1])  # distinct, sorted
    assert len(vocab) == (math.comb(m, m // 2) if kind == "fixed_weight" else 2**m)


@FAST
@given(st.integers(1, 6).map(lambda h: 2 * h), seeds)
def test_sampling_is_a_function_of_the_seed(m, seed):
    draw = [sample_tokens(torch_generator("test_properties", "det", seed), (5, 3), m,
                          "fixed_weight") for _ in range(2)]
    assert torch.equal(*draw)


# ---- corpora and complexity ---------------------------------------------------------------

corpora_bytes = st.one_of(st.binary(min_size=1, max_size=400),
                          st.text(alphabet="ab c\n", min_size=1, max_size=400).map(str.encode))


@FAST
@given(corpora_bytes, st.integers(0, 4))
def test_kgram_entropy_is_between_zero_and_log2_of_the_vocabulary(data, k):
    assume(len(data) > k)
    h = kgram_conditional_entropy(data, k)
    vocab = vocabulary_size(data)
    assert vocab == len(set(data)) and 1 <= vocab <= 256
    assert 0.0 <= h <= math.log2(vocab) + 1e-9
    if vocab == 1:
        assert h == 0.0


@LZMA
@given(corpora_bytes, st.integers(0, 3))
def test_corpus_complexity_is_its_measures_and_lzma_is_within_its_bounds(data, k):
    """Raw LZMA2 stores an incompressible chunk verbatim: at most n bytes + 3 per 64 KiB chunk +
    1 end byte (+ 2 for a compressed chunk's larger header), so bits/byte ≤ 8 + 8·6 / n."""
    assume(len(data) > k)
    row = corpus_complexity(data, k)
    assert 0 < row["lzma_bits_per_byte"] <= 8 + 48 / len(data)
    assert row == {"n_bytes": len(data), "lzma_bits_per_byte": row["lzma_bits_per_byte"],
                   "kgram_entropy_bits": kgram_conditional_entropy(data, k), "kgram_k": k,
                   "vocab_size": vocabulary_size(data)}


@FAST
@given(st.binary(min_size=2, max_size=200), st.floats(0.01, 0.99))
def test_split_is_the_corpus_with_its_tail_held_out(data, fraction):
    n_val = int(len(data) * fraction)
    assume(1 <= n_val < len(data))
    train, val = split_corpus(data, fraction)
    assert train + val == data and len(val) == n_val and train and val


@LZMA
@given(st.sampled_from(["prose", "code", "templated"]), st.integers(1, 3000), st.integers(1, 3000))
def test_builtin_corpora_are_cut_prefixes_of_one_text(name, a, b):
    """The unshuffled builtins are one fixed text cut to max_bytes: a shorter cut is a prefix."""
    lo, hi = sorted((a, b))
    short = load_corpus(name, {"max_bytes": lo, "corpora": {name: {"builtin": name}}})
    long = load_corpus(name, {"max_bytes": hi, "corpora": {name: {"builtin": name}}})
    assert len(short) == lo and len(long) == hi and long.startswith(short)
    if hi > 2:
        assert kgram_conditional_entropy(long, 2) <= math.log2(vocabulary_size(long)) + 1e-9


# ---- teachers -----------------------------------------------------------------------------


@FAST
@given(st.integers(1, 12), st.integers(1, 12), seeds)
def test_random_orthonormal_columns_are_orthonormal(n, k, seed):
    assume(k <= n)
    q = random_orthonormal(rng("orthonormal", seed), n, k)
    assert q.shape == (n, k)
    assert np.allclose(q.T @ q, np.eye(k), atol=1e-12)


@SLOW
@given(st.integers(2, 10), st.integers(1, 10), st.sampled_from(["flat", "decaying"]),
       st.sampled_from(["orthonormal", "gaussian"]), seeds)
def test_operator_teacher_has_its_spectrum_and_unit_signal_variance(n, r_star, kind, values, seed):
    assume(r_star <= n)
    d, e = 6, 4
    t = operator_teacher(rng("operator", seed), n, d, e, r_star, 0.1, kind, 0.7, values)
    s = np.linalg.svd(t.a_star, compute_uv=False)
    assert np.allclose(s[:r_star], t.s) and np.all(s[r_star:] < 1e-10)
    # E[(A* X V*)_ij²] over (i, j) = ‖A*‖²‖V*‖² / (N e) = 1: exact, no sampling
    assert np.sum(t.a_star**2) * np.sum(t.v_star**2) / (n * e) == pytest.approx(1.0, rel=1e-12)
    if values == "orthonormal":
        gram = t.v_star.T @ t.v_star
        assert np.allclose(gram, gram[0, 0] * np.eye(e), atol=1e-12)
    bounds = [eckart_young_bound(t.s, t.v_star, n, r) for r in range(r_star + 2)]
    assert bounds[0] == pytest.approx(1.0) and bounds[r_star] == 0.0 == bounds[-1]
    assert all(b1 >= b2 for b1, b2 in zip(bounds, bounds[1:], strict=False))


@SLOW
@given(st.sampled_from(["linear", "softmax"]), st.integers(1, 6), st.floats(0.1, 8.0), seeds)
def test_attention_teacher_has_rank_norm_and_unit_variance_on_its_calibration(kind, r_star, beta,
                                                                               seed):
    d, e, n = 6, 4, 5
    t = attention_teacher(rng("attention", seed), rng("calibration", seed), kind, n, d, e, r_star,
                          beta, 0.1, calibration_sequences=64)
    assert np.linalg.matrix_rank(t.k_star) == r_star
    assert np.linalg.norm(t.k_star) == pytest.approx(beta, rel=1e-12)
    x = rng("calibration", seed).standard_normal((64, n, d))  # the calibration inputs again
    assert np.mean(t.clean(x) ** 2) == pytest.approx(1.0, rel=1e-9)
    if kind == "softmax":
        assert np.allclose(t.mixer(x[:4]).sum(-1), 1.0)
