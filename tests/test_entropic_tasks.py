"""Paper A teachers and the Eckart–Young bound: exact rank r*, unit signal variance, the bound is
the best rank-r excess (SVD truncation), and trained students never beat it beyond sampling noise."""

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from attnrank.entropic.experiments.surrogate import run_job as surrogate_job
from attnrank.entropic.jobs import ADAM, entropic_jobs
from attnrank.entropic.tasks.operators import (
    best_v,
    eckart_young_bound,
    operator_teacher,
    population_excess,
    random_orthonormal,
    spectrum,
    truncate,
)
from attnrank.entropic.tasks.teachers import attention_teacher

N, D, E = 16, 8, 6


@pytest.mark.parametrize("kind", ["flat", "decaying"])
@pytest.mark.parametrize("r_star", [1, 3, 8, 16])
def test_operator_teacher_has_exact_rank_and_spectrum(kind, r_star):
    t = operator_teacher(np.random.default_rng(r_star), N, D, E, r_star, 0.1, kind, 0.7)
    s = np.linalg.svd(t.a_star, compute_uv=False)
    assert np.allclose(s[:r_star], spectrum(r_star, kind, 0.7))
    assert np.all(s[r_star:] < 1e-12 * s[0])
    assert np.linalg.matrix_rank(t.a_star) == r_star
    # unit signal variance per entry, exactly in expectation: ‖A*‖²‖V*‖² = N e
    assert np.sum(t.a_star**2) * np.sum(t.v_star**2) == pytest.approx(N * E)
    x, clean, noisy = t.sample(np.random.default_rng(0), 4000, )
    assert np.mean(clean**2) == pytest.approx(1.0, rel=0.03)
    assert np.var(noisy - clean) == pytest.approx(0.1, rel=0.03)


@pytest.mark.parametrize("kind,beta", [("linear", 1.0), ("softmax", 1.0), ("softmax", 4.0)])
@pytest.mark.parametrize("r_star", [1, 3, 8])
def test_attention_teacher_has_exact_rank_norm_and_unit_signal(kind, beta, r_star):
    t = attention_teacher(np.random.default_rng(r_star), np.random.default_rng(99), kind, N, D, E,
                          r_star, beta, 0.1, calibration_sequences=2000)
    assert np.linalg.matrix_rank(t.k_star) == r_star
    assert np.linalg.norm(t.k_star) == pytest.approx(beta)
    x, clean, _ = t.sample(np.random.default_rng(1), 2000, N)
    assert np.mean(clean**2) == pytest.approx(1.0, rel=0.1)
    if kind == "softmax":
        assert np.allclose(t.mixer(x[:3]).sum(-1), 1.0)



def _reference_clean(k, v, c, kind, x):
    """The teacher's clean target written plainly on the whole stack (the pre-chunking formula):
    c · M(X) X V*, M(X) = X K* Xᵀ or its row softmax (max-shifted), float64."""
    logits = x @ k @ np.swapaxes(x, -1, -2)
    if kind == "softmax":
        z = np.exp(logits - logits.max(axis=-1, keepdims=True))
        logits = z / z.sum(axis=-1, keepdims=True)
    return c * (logits @ x @ v)


@pytest.mark.parametrize("kind,values", [("linear", "orthonormal"), ("softmax", "orthonormal"),
                                         ("softmax", "gaussian")])
def test_chunked_teacher_simulation_equals_the_plain_float64_formula(kind, values):
    """Calibration, mixer, clean and noisy targets of the chunked in-place simulation equal the
    direct formula (same draws, same order: K*, V*; calibration inputs; X, then the noise) to
    1e-12, with a stream length that is not a multiple of the chunk."""
    n, d, e, r_star, beta, noise, n_cal, n_seq = 12, 6, 4, 2, 2.0, 0.1, 70, 45
    t = attention_teacher(np.random.default_rng(1), np.random.default_rng(2), kind, n, d, e,
                          r_star, beta, noise, n_cal, "flat", 0.7, values)
    # calibration: c = 1 / √(mean of (M(X) X V*)²) on the calibration stream
    x_cal = np.random.default_rng(2).standard_normal((n_cal, n, d))
    power = np.mean(_reference_clean(t.k_star, t.v_star, 1.0, kind, x_cal) ** 2)
    assert t.c == pytest.approx(1.0 / np.sqrt(power), rel=1e-12, abs=0)
    # data: X first, then the noise E, noisy = clean + σ E
    rng = np.random.default_rng(3)
    x_ref = rng.standard_normal((n_seq, n, d))
    e_ref = rng.standard_normal((n_seq, n, e))
    clean_ref = _reference_clean(t.k_star, t.v_star, t.c, kind, x_ref)
    noisy_ref = clean_ref + np.sqrt(noise) * e_ref
    for chunk in (1, 7, 32, 64):
        np.testing.assert_allclose(t.clean(x_ref, chunk), clean_ref, rtol=1e-12, atol=1e-12)
    x, clean, noisy = t.sample(np.random.default_rng(3), n_seq, n)
    np.testing.assert_array_equal(x, x_ref)
    np.testing.assert_allclose(clean, clean_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(noisy, noisy_ref, rtol=1e-12, atol=1e-12)
    xb, yb = np.full((n_seq, n, d), np.nan), np.full((n_seq, n, e), np.nan)  # reused buffers
    t.sample_into(np.random.default_rng(3), xb, yb)
    np.testing.assert_array_equal(xb, x_ref)
    np.testing.assert_allclose(yb, noisy_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(t.clean(x_ref[0]), clean_ref[0], rtol=1e-12, atol=1e-12)
    logits = x_ref @ t.k_star @ np.swapaxes(x_ref, -1, -2)  # the mixer, plainly
    if kind == "softmax":
        z = np.exp(logits - logits.max(axis=-1, keepdims=True))
        logits = z / z.sum(axis=-1, keepdims=True)
    np.testing.assert_allclose(t.mixer(x_ref), logits, rtol=1e-12, atol=1e-12)

def test_bad_teachers_are_refused():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="exceeds N"):
        operator_teacher(rng, N, D, E, N + 1, 0.1)
    with pytest.raises(ValueError, match="β"):
        attention_teacher(rng, rng, "softmax", N, D, E, 2, 0.0, 0.1)
    with pytest.raises(ValueError, match="exceeds d"):
        attention_teacher(rng, rng, "linear", N, D, E, D + 1, 1.0, 0.1)


@pytest.mark.parametrize("kind", ["flat", "decaying"])
def test_bound_equals_svd_truncation_and_population_excess(kind):
    t = operator_teacher(np.random.default_rng(5), N, D, E, 6, 0.1, kind, 0.6)
    for r in range(0, 8):
        a_r = truncate(t.a_star, r)
        bound = eckart_young_bound(t.s, t.v_star, N, r)
        # the truncation with V* attains it, and the population-optimal V for a_r does no better
        assert population_excess(a_r, t.v_star, t.a_star, t.v_star) == pytest.approx(bound, abs=1e-12)
        if r:
            v_opt = best_v(a_r, t.a_star, t.v_star)
            assert population_excess(a_r, v_opt, t.a_star, t.v_star) == pytest.approx(bound, abs=1e-12)
    assert eckart_young_bound(t.s, t.v_star, N, 6) == 0.0
    if kind == "flat":  # (r* − r) / r* for a flat spectrum at unit signal variance
        assert eckart_young_bound(t.s, t.v_star, N, 2) == pytest.approx(4 / 6)


def test_population_excess_matches_monte_carlo():
    rng = np.random.default_rng(2)
    t = operator_teacher(rng, N, D, E, 4, 0.1)
    a, v = rng.standard_normal((N, N)) * 0.2, rng.standard_normal((D, E)) * 0.3
    x = rng.standard_normal((20000, N, D))
    mc = np.mean((a @ x @ v - t.clean(x)) ** 2)
    assert population_excess(a, v, t.a_star, t.v_star) == pytest.approx(mc, rel=0.03)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 5))
def test_no_rank_r_operator_beats_the_bound(seed, r):
    """Random rank-r A with its optimal V: excess ≥ bound (the bound is a minimum)."""
    rng = np.random.default_rng(seed)
    t = operator_teacher(np.random.default_rng(11), N, D, E, 6, 0.1, "decaying", 0.8)
    a = random_orthonormal(rng, N, r) @ rng.standard_normal((r, N))
    v = best_v(a, t.a_star, t.v_star)
    assert population_excess(a, v, t.a_star, t.v_star) >= eckart_young_bound(t.s, t.v_star, N, r) - 1e-12


def test_trained_students_never_beat_the_bound_beyond_sampling_noise():
    config = yaml.safe_load((Path(__file__).resolve().parents[1] / "config.yaml").read_text())
    job = replace(entropic_jobs(config, "smoke")[("surrogate", ADAM)], experiment="t",
                  r_star=(4,), ranks=(1, 2, 3, 4, 8), seeds=2, n_tokens=N, d=D, e=E, noise_var=0.1,
                  spectrum="flat", init_std=1e-3, lr=0.01, warmup=20, schedule="cosine", steps=300,
                  log_every=100, n_train=128, eval_sequences=512)
    df, _ = surrogate_job(job, torch.device("cpu"))
    final = df[df["final"]]
    # population excess is exact: never below the bound (float32 training: tiny tolerance)
    assert (final["excess_population"] >= final["bound"] - 1e-5).all()
    # held-out excess: at most sampling noise below (relative 5 % of the bound + 1e-3)
    assert (final["excess"] >= final["bound"] * 0.95 - 1e-3).all()
    deficient = final[final["rank"] < 4]
    assert np.allclose(deficient["excess"], deficient["bound"], rtol=0.1)
    assert (final[final["rank"] >= 4]["excess"] < 0.02).all()
