"""Rank estimators on constructed spectra, their invariances, and their ordering."""

import numpy as np
import pytest
from hypothesis import given, settings
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

ESTIMATORS = (energy_effective_rank, entropy_effective_rank, stable_rank)


def _orthogonal(rng, n):
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    return q * np.sign(np.diag(r))


def _matrix(rng, n, m, s):
    """U diag(s) Vᵀ with random orthogonal U (n×n), V (m×m)."""
    d = np.zeros((n, m))
    d[np.arange(len(s)), np.arange(len(s))] = s
    return _orthogonal(rng, n) @ d @ _orthogonal(rng, m).T


@pytest.mark.parametrize("k", [1, 2, 5, 12])
def test_flat_rank_k_matrix_is_rank_k_for_every_estimator(k):
    rng = np.random.default_rng(k)
    s = singular_values(_matrix(rng, 16, 20, np.full(k, 3.0)))
    for tau in TAUS:
        assert numerical_rank(s, tau) == k
    for est in ESTIMATORS:
        assert est(s) == pytest.approx(k, rel=1e-9)


def test_decaying_spectrum_has_closed_form_values():
    s = 0.5 ** np.arange(6)  # 1, 1/2, …, 1/32
    e = s**2
    assert energy_effective_rank(s) == pytest.approx(e.sum() ** 2 / (e**2).sum())
    p = e / e.sum()
    assert entropy_effective_rank(s) == pytest.approx(np.exp(-(p * np.log(p)).sum()))
    assert stable_rank(s) == pytest.approx(e.sum())
    assert numerical_rank(s, 0.05) == 5  # 1/32 < 0.05 ≤ 1/16
    assert numerical_rank(s, 0.1) == 4
    assert numerical_rank(s, 0.01) == 6
    assert 1 < energy_effective_rank(s) < 6


def test_zero_matrix_is_rank_zero_not_nan():
    s = singular_values(np.zeros((8, 5)))
    assert numerical_rank(s) == 0
    for est in ESTIMATORS:
        v = est(s)
        assert v == 0.0 and not np.isnan(v)
    assert all(v == 0.0 for v in all_estimates(s).values())


@pytest.mark.parametrize("n", [1, 3, 16])
def test_identity_is_full_rank(n):
    s = singular_values(np.eye(n))
    assert numerical_rank(s) == n
    for est in ESTIMATORS:
        assert est(s) == pytest.approx(n)


def test_stacks_match_one_by_one_and_include_zero_rows():
    rng = np.random.default_rng(0)
    mats = np.stack([rng.standard_normal((6, 6)), np.zeros((6, 6)), np.eye(6)])
    s = singular_values(mats)
    for est in (*ESTIMATORS, numerical_rank):
        batched = np.asarray(est(s))
        assert batched.shape == (3,)
        assert np.allclose(batched, [est(row) for row in s])


def test_bad_input_is_refused():
    with pytest.raises(ValueError):
        energy_effective_rank([1.0, -0.5])
    with pytest.raises(ValueError):
        numerical_rank([1.0, np.nan])
    with pytest.raises(ValueError):
        singular_values(np.ones(3))
    with pytest.raises(ValueError):
        all_estimates(np.ones((2, 3)))


def test_all_estimates_names_every_estimator():
    out = all_estimates(np.array([2.0, 1.0, 0.0]))
    assert set(out) == {f"numerical_rank_tau{t:g}" for t in TAUS} | {
        "energy_effective_rank", "entropy_effective_rank", "stable_rank"}
    assert out["numerical_rank_tau0.05"] == 2.0


matrices = arrays(np.float64, st.tuples(st.integers(1, 7), st.integers(1, 7)),
                  elements=st.floats(-10, 10, allow_nan=False, allow_infinity=False))


@settings(max_examples=60, deadline=None)
@given(matrices, st.floats(1e-3, 1e3), st.integers(0, 2**31 - 1))
def test_invariant_to_scaling_and_orthogonal_transforms(a, c, seed):
    rng = np.random.default_rng(seed)
    s = singular_values(a)
    s2 = singular_values(c * _orthogonal(rng, a.shape[0]) @ a @ _orthogonal(rng, a.shape[1]))
    if s[0] < 1e-6:  # (numerically) zero: both are zero
        return
    for est in ESTIMATORS:
        assert est(s2) == pytest.approx(est(s), rel=1e-6, abs=1e-9)
    for tau in TAUS:
        # a singular value sitting on the threshold may flip under rounding: compare away from it
        if np.all(np.abs(s / s[0] - tau) > 1e-6):
            assert numerical_rank(s2, tau) == numerical_rank(s, tau)


@settings(max_examples=80, deadline=None)
@given(arrays(np.float64, st.integers(1, 12), elements=st.floats(0, 100, allow_nan=False)))
def test_estimators_are_ordered_and_bounded(s):
    """stable ≤ R̃_eff ≤ entropy rank ≤ #nonzero, all ≥ 1 unless zero."""
    s = np.sort(s)[::-1]
    nonzero = int(np.sum(s > 0))
    stable, energy, ent = stable_rank(s), energy_effective_rank(s), entropy_effective_rank(s)
    if nonzero == 0 or s[0] ** 2 == 0 or np.sum(s**4) == 0:
        return
    tol = 1e-9 * nonzero
    assert 1 - tol <= stable <= energy + tol
    assert energy <= ent + tol
    assert ent <= nonzero + tol
    assert numerical_rank(s, 0.05) <= nonzero
