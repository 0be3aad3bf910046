"""The reading between grid points (docs/methods.md §3.9): the interpolated crossing, its
censoring and the boundary, both readings' fits on the same resamples, the joint bootstrap of a
slope difference, and the growth tables that carry them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attnrank.core.seeding import numpy_rng
from attnrank.minip.beyond.growth import growth_table
from attnrank.minip.experiments.rank_growth import RankGrowthJob
from attnrank.minip.experiments.rank_growth import step as rank_growth_step
from attnrank.minip.growth import (
    ABOVE,
    BELOW,
    INSIDE,
    interpolated_log2,
    joint_bootstrap_medians,
    rank_growth,
    slope_difference,
    smallest_reaching,
)

RANKS = np.array([1.0, 2.0, 4.0, 8.0, 16.0])


def test_the_crossing_is_interpolated_in_log2_between_the_bracketing_ranks():
    med = np.array([0.5, 0.7, 0.95, 1.0, 1.0])
    y, c = interpolated_log2(med, RANKS, 0.9)
    # log2 2 + (0.9 − 0.7) / (0.95 − 0.7) · (log2 4 − log2 2) = 1.8
    assert y == pytest.approx(1.8) and c == INSIDE
    assert smallest_reaching(med, RANKS, 0.9) == 4.0  # the lattice reading brackets it


def test_a_median_exactly_at_the_target_has_reached_it_in_both_readings():
    """Accuracies are k/n: 900/1000 is 0.9 exactly. ``>=`` turned into ``>`` would move the lattice
    reading to 8 and the interpolated one above log2 4."""
    acc = 900 / 1000
    assert acc == 0.9
    med = np.array([0.5, 0.7, acc, 0.95, 1.0])
    assert smallest_reaching(med, RANKS, 0.9) == 4.0
    y, c = interpolated_log2(med, RANKS, 0.9)
    assert y == 2.0 and c == INSIDE  # exactly log2 4
    # the same through the table a run writes: three seeds at 900/1000 at rank 4
    rows = [{"model": "kernel", "m": m, "rank": r, "seed": s,
             "test_sequence_accuracy": {1: 0.5, 2: 0.7, 4: 900 / 1000}.get(r, 1.0)}
            for m in (6, 8) for r in RANKS for s in range(3)]
    g = rank_growth(pd.DataFrame(rows), [0.9], 20, 0.9)[0.9]
    assert list(g.smallest) == [4.0, 4.0]
    assert list(g.log2_interp) == [2.0, 2.0]


def test_censoring_above_below_and_ranks_not_run():
    y, c = interpolated_log2(np.array([0.1, 0.2, 0.3, 0.4, 0.5]), RANKS, 0.9)
    assert np.isnan(y) and c == ABOVE  # never extrapolated
    y, c = interpolated_log2(np.array([0.92, 0.95, 1.0, 1.0, 1.0]), RANKS, 0.9)
    assert y == 0.0 and c == BELOW  # reached at the smallest rank
    # a rank not run (NaN, e.g. multihead F < H) is skipped: the bracket is ranks 1 and 4
    y, c = interpolated_log2(np.array([0.5, np.nan, 0.95, 1.0, 1.0]), RANKS, 0.9)
    assert y == pytest.approx(0.4 / 0.45 * 2) and c == INSIDE
    # ... and when only ranks not run lie below the crossing, it is censored below
    y, c = interpolated_log2(np.array([np.nan, np.nan, 0.95, 1.0, 1.0]), RANKS, 0.9)
    assert y == 2.0 and c == BELOW


@given(st.floats(0.05, 0.9), st.floats(0.01, 4.0), st.floats(0.01, 0.2))
def test_a_median_linear_in_log2_rank_is_read_exactly(target, crossing, slope):
    """Where the median rises linearly in log2 r, through ``target`` at log2 r = ``crossing``,
    the interpolated crossing is that one (inside the grid 1 … 16)."""
    med = target + slope * (np.log2(RANKS) - crossing)
    y, c = interpolated_log2(med, RANKS, target)
    assert c == INSIDE
    assert y == pytest.approx(crossing, abs=1e-9)


def test_batched_medians_read_alike():
    """(n_boot, M, R) medians read as each (R,) row alone."""
    rng = numpy_rng("test", "between")
    med = rng.uniform(0.3, 1.0, size=(7, 3, len(RANKS)))
    med[0, 1, 2] = np.nan
    y, c = interpolated_log2(med, RANKS, 0.8)
    for i in range(7):
        for j in range(3):
            yi, ci = interpolated_log2(med[i, j], RANKS, 0.8)
            assert ci == c[i, j] and (np.isnan(yi) and np.isnan(y[i, j]) or yi == y[i, j])


def line_rows(label: str, cross: dict[int, float], seeds=range(3), budgets=RANKS,
              model: str = "kernel") -> list[dict]:
    """Rows of one line whose median accuracy rises linearly in log2 F through 0.9 at F̂ =
    ``cross[m]``: acc = 0.9 + 0.1·(log2 F − log2 F̂), clipped to [0, 1]; every seed alike."""
    return [{"label": label, "model": model, "rank": f, "seed": s, "m": m, "final": True,
             "data_kind": "random", "steps_total": 300,
             "test_sequence_accuracy": float(np.clip(0.9 + 0.1 * (np.log2(f) - np.log2(c)), 0, 1))}
            for m, c in cross.items() for f in budgets for s in seeds]


def test_the_interpolated_fit_uses_the_uncensored_m_only():
    cross = {6: 1.5, 8: 3.0, 10: 6.0, 12: 1000.0}  # log2 F̂ = m/2 − 2.4…; m = 12 beyond the grid
    rows = pd.DataFrame(line_rows("kernel", cross))
    g = rank_growth(rows, [0.9], 50, 0.9)[0.9]
    assert list(g.censored) == [INSIDE, INSIDE, INSIDE, ABOVE]
    assert g.points_interp == 3 and g.points == 3
    assert g.b_interp == pytest.approx(0.5)  # log2 1.5 → log2 6 over m = 6 … 10
    assert g.lo_interp == pytest.approx(0.5) and g.hi_interp == pytest.approx(0.5)  # seeds alike
    assert np.isnan(g.log2_interp[3])


def test_identical_lines_differ_by_exactly_zero_under_the_joint_bootstrap():
    """One seed draw for both lines: the difference of two copies is 0 in every resample (two
    independent streams would spread it)."""
    rng = numpy_rng("test", "data")
    rows = pd.DataFrame(line_rows("kernel", {6: 1.5, 8: 3.0, 10: 6.0}, seeds=range(5)))
    rows["test_sequence_accuracy"] = np.clip(
        rows["test_sequence_accuracy"] + rng.normal(0, 0.05, len(rows)), 0, 1)
    diff = slope_difference(rows, rows.copy(), [0.9], 300, 0.9, numpy_rng("test", "diff"))
    assert diff[0.9] == (0.0, 0.0, 0.0)
    a, b = joint_bootstrap_medians([np.ones((2, 3, 4)), np.ones((2, 5, 4))], 10,
                                   numpy_rng("test", "joint"))
    assert a.shape == (10, 2, 3) and b.shape == (10, 2, 5)
    with pytest.raises(ValueError, match="share their m and seed axes"):
        joint_bootstrap_medians([np.ones((2, 3, 4)), np.ones((2, 3, 5))], 10,
                                numpy_rng("test", "joint"))


def test_the_beyond_growth_table_carries_both_readings_and_the_difference():
    kernel = line_rows("kernel", {6: 1.5, 8: 3.0, 10: 6.0})
    h2 = line_rows("H=2", {6: 3.0, 8: 3.0, 10: 6.0}, model="multihead")
    beyond = pd.DataFrame(kernel + h2)
    b2 = pd.DataFrame(line_rows("kernel", {6: 1.5, 8: 3.0, 10: 6.0})).drop(columns="label")
    out = growth_table(beyond, b2.assign(steps_total=6000), [0.9], 50, 0.9)
    assert list(out.columns[:10]) == ["line", "steps", "target", "m", "smallest", "a", "b", "lo",
                                      "hi", "points"]  # the lattice columns first, as before
    k = out[out["line"] == "kernel"]
    assert k["b_interp"].iloc[0] == pytest.approx(0.5) and k["b_diff"].isna().all()
    h = out[out["line"] == "H=2"]
    assert h["b_interp"].iloc[0] == pytest.approx(0.25)  # log2 3, 3, 6 over m = 6, 8, 10
    assert h["b_diff"].iloc[0] == pytest.approx(-0.25)
    assert h["lo_diff"].iloc[0] == pytest.approx(-0.25) == h["hi_diff"].iloc[0]
    assert set(out["censored"]) == {""}


def test_the_rank_growth_step_is_tt6s_fit(tmp_path):
    rows = pd.DataFrame(line_rows("kernel", {6: 1.5, 8: 3.0, 10: 6.0, 12: 1000.0})
                        ).drop(columns="label").assign(model="kernel")
    path = tmp_path / "minip_rank_vs_m.parquet"
    rows.to_parquet(path)
    out = rank_growth_step(RankGrowthJob((0.8, 0.9), 100, 0.9), [path])["out"]
    fits = rank_growth(rows, [0.8, 0.9], 100, 0.9)
    assert len(out) == 2 * 4
    for t, g in fits.items():
        part = out[out["target"] == t].sort_values("m")
        assert part["smallest"].tolist() == list(g.smallest)
        assert (part["b"] == g.b).all() and (part["lo_interp"] == g.lo_interp).all()
        # at 0.8 the crossing of m = 6 (log2 1.5 − 1 < 0) lies below the grid
        assert part["censored"].tolist() == ["below" if t == 0.8 else "", "", "", "above"]
    with pytest.raises(ValueError, match="expected the minip_rank_vs_m table"):
        rank_growth_step(RankGrowthJob((0.9,), 10, 0.9), [path, path])
