"""Data-only rank estimators (A4): exactness on noise-free linear teachers, statistics against
their explicit definitions, nested prefixes."""

import numpy as np
import pytest

from attnrank.core.rank import energy_effective_rank, numerical_rank
from attnrank.entropic.jobs import E1, E2, E2_DEBIASED
from attnrank.entropic.predict import (
    add_stats,
    chunk_stats,
    e1_kernel,
    e1_normal_matrix,
    e1_stats,
    e2_debiased_spectrum,
    e2_debiased_stats,
    e2_normal_matrix,
    e2_stats,
    e2_unfolding,
    estimates,
    gram,
    mixer_estimates,
    moment_position,
    prefix_stats,
    spd_inverse,
    third_moment,
    vech_index,
)
from attnrank.entropic.tasks.teachers import attention_teacher

N, D, E = 12, 4, 3


def _teacher(kind, r_star, noise=0.0, beta=1.0, seed=0):
    rng = np.random.default_rng(seed)
    return attention_teacher(rng, np.random.default_rng(seed + 100), kind, N, D, E, r_star, beta,
                             noise, calibration_sequences=256)


def _data(t, n_seq, seed=1):
    x, clean, noisy = t.sample(np.random.default_rng(seed), n_seq, N)
    return x, noisy


@pytest.mark.parametrize("r_star", [1, 2, 3, 4])
def test_e1_recovers_exact_rank_on_noise_free_linear_teacher(r_star):
    t = _teacher("linear", r_star)
    x, y = _data(t, 8)
    k_hat = e1_kernel(x, y, t.v_star)
    assert np.allclose(k_hat, t.c * t.k_star, atol=1e-8)
    s = np.linalg.svd(k_hat, compute_uv=False)
    assert numerical_rank(s, 0.05) == r_star
    assert energy_effective_rank(s) == pytest.approx(r_star, abs=1e-6)


def test_e1_statistics_match_the_explicit_design_matrix():
    rng = np.random.default_rng(3)
    x, y, v = rng.standard_normal((5, N, D)), rng.standard_normal((5, N, E)), rng.standard_normal((D, E))
    b = gram(x) @ v
    # design row (s, n, j), column (a, b): X[s, n, a] · B[s, b, j]
    design = np.einsum("sna,sbj->snjab", x, b).reshape(-1, D * D)
    compact, rhs = e1_stats(x, y, v)
    assert np.allclose(e1_normal_matrix(compact, D), design.T @ design)
    assert np.allclose(rhs.reshape(-1), design.T @ y.reshape(-1))


def test_e2_statistics_match_the_explicit_features():
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal((6, N, D)), rng.standard_normal((6, N, E))
    rows, cols = vech_index(D)
    phi = np.einsum("sna,sp->snap", x, gram(x)[:, rows, cols]).reshape(-1, D * len(rows))
    compact, rhs = e2_stats(x, y)
    assert np.allclose(e2_normal_matrix(compact, D), phi.T @ phi)
    assert np.allclose(rhs, phi.T @ y.reshape(-1, E))


@pytest.mark.parametrize("r_star", [1, 3])
def test_e2_and_debiased_e2_recover_rank_on_noise_free_linear_teacher(r_star):
    t = _teacher("linear", r_star)
    n_feat = D * D * (D + 1) // 2
    x, y = _data(t, 3 * n_feat // N + 20)  # enough sequences: S ≥ D(D+1)/2 and S·N ≥ features
    s = np.linalg.svd(e2_unfolding(*e2_stats(x, y), D), compute_uv=False)
    assert numerical_rank(s, 0.01) == r_star
    s_deb = e2_debiased_spectrum(e2_debiased_stats(x, y))
    assert numerical_rank(s_deb, 0.01) == r_star


def test_e2_frontier_with_noise_fails_small_and_recovers_large_s():
    """Noisy data: with fewer sequences than vech(G) entries the fit absorbs noise and the
    unfolding is not rank r*; with many sequences it is (the sufficient-scale frontier). (Noise-free
    data stay rank r* even when under-determined: the minimum-norm fit only projects the truth.)"""
    t = _teacher("linear", 1, noise=0.1)
    x, y = _data(t, 400)
    s_small = np.linalg.svd(e2_unfolding(*e2_stats(x[:4], y[:4]), D), compute_uv=False)
    s_large = np.linalg.svd(e2_unfolding(*e2_stats(x, y), D), compute_uv=False)
    assert numerical_rank(s_small, 0.05) > 1
    assert numerical_rank(s_large, 0.05) == 1
    assert energy_effective_rank(s_large) == pytest.approx(1, abs=0.05)


def test_debiasing_removes_the_noise_gram():
    """Pure noise (no signal): the raw stack has full rank, the debiased one is small."""
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((4000, N, D)), rng.standard_normal((4000, N, E))
    st = e2_debiased_stats(x, y)
    raw = np.sqrt(np.linalg.eigvalsh(st["mm"]))
    deb = e2_debiased_spectrum(st)
    assert deb.max() < 0.2 * raw.max()


def test_prefix_stats_equal_direct_sums_at_every_prefix():
    rng = np.random.default_rng(6)
    x, y = rng.standard_normal((50, N, D)), rng.standard_normal((50, N, E))
    out = prefix_stats(e2_stats, (x, y), [7, 20, 50], chunk=6)
    for s_ in (7, 20, 50):
        for got, want in zip(out[s_], e2_stats(x[:s_], y[:s_]), strict=True):
            assert np.allclose(got, want)
    deb = prefix_stats(e2_debiased_stats, (x, y), [13, 50], chunk=4)
    assert deb[13]["rss"] == pytest.approx(e2_debiased_stats(x[:13], y[:13])["rss"])
    with pytest.raises(ValueError):
        prefix_stats(e2_stats, (x, y), [60])


def test_linear_mixer_has_rank_r_star_on_every_input():
    t = _teacher("linear", 2)
    xm = np.random.default_rng(7).standard_normal((20, N, D))
    est = mixer_estimates(t.mixer(xm))
    assert est["numerical_rank_tau0.01"] == 2
    assert 1 <= est["entropy_effective_rank"] <= 2


def test_estimates_accept_stacks():
    out = estimates(np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]]))
    assert list(out["numerical_rank_tau0.05"]) == [2, 1]


def test_third_moment_holds_every_entry_of_the_symmetric_tensor():
    gv = np.random.default_rng(8).standard_normal((9, 5))
    full = np.einsum("si,sj,sk->ijk", gv, gv, gv)
    flat = third_moment(gv)
    assert flat.shape == (5 * 6 * 7 // 6,)
    i, j, k = np.meshgrid(*(np.arange(5),) * 3, indexing="ij")
    for a, b, c in ((i, j, k), (k, i, j), (j, k, i), (j, i, k)):  # any order of the indices
        assert np.allclose(flat[moment_position(a, b, c, 5)], full)
    assert sorted(moment_position(i, j, k, 5)[(i <= j) & (j <= k)]) == list(range(len(flat)))


def test_spd_inverse_equals_the_inverse():
    x = np.random.default_rng(9).standard_normal((7, N, D))
    g = gram(x)
    assert np.allclose(spd_inverse(g), np.linalg.inv(g), rtol=1e-10, atol=1e-12)
    g[0] = 0.0  # not positive definite: falls back to LU (which refuses a singular matrix)
    with pytest.raises(np.linalg.LinAlgError):
        spd_inverse(g)


def test_chunk_stats_equal_each_estimators_statistics_and_add_up_over_prefixes():
    rng = np.random.default_rng(10)
    x, y, v = rng.standard_normal((30, N, D)), rng.standard_normal((30, N, E)), rng.standard_normal((D, E))
    st = chunk_stats(x, y, v, with_e2=True)
    assert set(st) == {E1, E2, E2_DEBIASED}
    assert set(chunk_stats(x, y, v, with_e2=False)) == {E1, E2_DEBIASED}
    for got, want in zip(st[E1], e1_stats(x, y, v), strict=True):
        assert np.allclose(got, want)
    for got, want in zip(st[E2], e2_stats(x, y), strict=True):
        assert np.allclose(got, want)
    for key, want in e2_debiased_stats(x, y).items():
        assert np.allclose(st[E2_DEBIASED][key], want)
    out = prefix_stats(lambda a, b: chunk_stats(a, b, v, True), (x, y), [11, 30], chunk=4)
    direct = chunk_stats(x[:11], y[:11], v, True)
    for got, want in zip(out[11][E2], direct[E2], strict=True):
        assert np.allclose(got, want)
    assert out[30][E2_DEBIASED]["rss"] == pytest.approx(st[E2_DEBIASED]["rss"])
    assert out[30][E2_DEBIASED]["e"] == E
    assert add_stats(None, st) is st
