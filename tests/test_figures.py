"""What the figures show, on small synthetic tables: every dense seed (a failing one included),
integer labels on rank axes, plain labels on log step axes, the thresholds and references drawn
where the figure promises them, from the params it is given."""

from __future__ import annotations

import importlib
import itertools
import re

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PathCollection

from attnrank.core.columns import (
    ENERGY_EFFECTIVE_RANK,
    ENTROPY_EFFECTIVE_RANK,
    EXCESS,
    SEQUENCE_ACCURACY,
    TEST_SEQUENCE_ACCURACY,
    TEST_WORST_CASE_ERROR,
    WORST_CASE_ERROR,
    numerical_rank,
)
from attnrank.core.figures import figure_module_name
from attnrank.core.style import power_of_two_ticks, rank_label

FAILING = 0.31  # a dense seed that failed, as TT-3's at m = 16
SEEDS = 3
PARAMS_B = {"scale": "test", "target_accuracy": 0.9, "exact_accuracy": 0.999,
            "worst_case_cutoff": 0.5, "witness": {"blocks": 8, "width": 3},
            "paper_witness_rank": 8,
            "rank_growth": {"bootstrap_samples": 200, "interval_level": 0.9}}
PARAMS_A = {"scale": "test", "headline_tau": 0.05, "headline_beta": 1.0, "taus": [0.01, 0.05],
            "noise_var": 0.01, "floor": 0.02, "rank_tolerance": 0.25, "saturation_tau": 0.01,
            "d": 4, "n_tokens": 8, "deficiency_excess": {"linear": 0.07, "softmax": 0.06}}


def plot(name: str, tables: dict[str, pd.DataFrame], params: dict) -> plt.Figure:
    return importlib.import_module(figure_module_name(name)).plot(tables, params)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def tick_labels(ax: plt.Axes, axis: str = "x") -> list[str]:
    """The labels the axis formatter gives the major ticks inside the axis limits."""
    target = ax.xaxis if axis == "x" else ax.yaxis
    lo, hi = sorted(getattr(ax, f"get_{axis}lim")())
    fmt = target.get_major_formatter()
    return [fmt(v, i) for i, v in enumerate(target.get_majorticklocs()) if lo <= v <= hi]


def points(ax: plt.Axes) -> np.ndarray:
    """Every scattered (x, y) of ``ax``."""
    offs = [c.get_offsets() for c in ax.collections
            if isinstance(c, PathCollection) and len(c.get_offsets())]
    return np.concatenate(offs) if offs else np.empty((0, 2))


def vertical_lines(ax: plt.Axes) -> set[float]:
    return {float(ln.get_xdata()[0]) for ln in ax.get_lines()
            if len(ln.get_xdata()) == 2 and ln.get_xdata()[0] == ln.get_xdata()[1]}


def horizontal_lines(ax: plt.Axes) -> set[float]:
    return {float(ln.get_ydata()[0]) for ln in ax.get_lines()
            if len(ln.get_ydata()) == 2 and ln.get_ydata()[0] == ln.get_ydata()[1]
            and list(ln.get_xdata()) == [0, 1]}


# ---- Paper B -----------------------------------------------------------------------------------

def minip(groups: dict[str, tuple[int, list[float]]], ranks=(1, 2, 4, 8), by: str = "instance",
          fms=("table",)) -> pd.DataFrame:
    """Kernel rows rising with r and dense rows with the given seed accuracies, per group name
    → (m, dense accuracies)."""
    rows = []
    for (name, (m, dense)), fm in itertools.product(groups.items(), fms):
        for r, s in itertools.product(ranks, range(SEEDS)):
            rows.append({"model": "kernel", "instance": name, "m": m, "rank": r, "seed": s,
                         "feature_map": fm, "n_tokens": 3,
                         TEST_SEQUENCE_ACCURACY: min(1.0, 0.5 + 0.1 * r),
                         TEST_WORST_CASE_ERROR: 1.0 / r})
        rows += [{"model": "dense", "instance": name, "m": m, "rank": -1, "seed": s,
                  "feature_map": "none", "n_tokens": 3, TEST_SEQUENCE_ACCURACY: a,
                  TEST_WORST_CASE_ERROR: 0.1 if a == 1.0 else 2.5} for s, a in enumerate(dense)]
    return pd.DataFrame(rows)


def constructions() -> pd.DataFrame:
    return pd.DataFrame([{"construction": "exp_features", "eval_set": "all_triples", "m": m,
                          "rank": 2**m, "n_tokens": 3, "beta": 4.0, SEQUENCE_ACCURACY: 1.0,
                          WORST_CASE_ERROR: 0.1} for m in (2, 4)])


def rank_growth_table(df: pd.DataFrame) -> pd.DataFrame:
    """The minip_rank_growth table of a rank-vs-m table, by the pipeline's own function."""
    from attnrank.minip.growth import growth_rows, rank_growth

    g = PARAMS_B["rank_growth"]
    return pd.DataFrame(growth_rows(rank_growth(df, [0.9], g["bootstrap_samples"],
                                                g["interval_level"])))


@pytest.mark.parametrize("name,table,dense_axis", [("minip_rank_vs_m", "minip_rank_vs_m", 1),
                                                   ("minip_ood_pools", "minip_ood", 2)])
def test_every_dense_seed_is_drawn_a_failing_one_too(name, table, dense_axis):
    df = minip({"small": (8, [1.0] * SEEDS), "large": (12, [1.0, 1.0, FAILING])})
    df = df.assign(train_sequence_accuracy=df["test_sequence_accuracy"])
    tables = {table: df, "minip_constructions": constructions(),
              "minip_rank_growth": rank_growth_table(df)}
    fig = plot(name, {k: v for k, v in tables.items()
                      if k in (table, "minip_constructions", "minip_rank_growth")}, PARAMS_B)
    dense_ax = fig.axes[dense_axis]
    ys = sorted(points(dense_ax)[:, 1])
    assert ys == sorted([1.0] * (2 * SEEDS - 1) + [FAILING])  # one marker per seed, none merged
    assert len(set(points(dense_ax)[:, 0])) == 2 * SEEDS  # side by side, not on top of each other
    assert dense_ax.get_ylim()[0] < FAILING  # and inside the axis
    assert tick_labels(fig.axes[0]) == ["1", "2", "4", "8"]


def test_rank_vs_m_labels_its_rank_axes_with_integers():
    df = minip({"m8": (8, [1.0] * SEEDS), "m12": (12, [1.0] * SEEDS)})
    fig = plot("minip_rank_vs_m", {"minip_rank_vs_m": df, "minip_constructions": constructions(),
                                   "minip_rank_growth": rank_growth_table(df)}, PARAMS_B)
    labels = tick_labels(fig.axes[2], "y")
    assert labels and all(re.fullmatch(r"\d+|\$2\^\{\d+\}\$", s) for s in labels), labels


def test_rank_vs_m_draws_both_readings_and_keeps_its_legends_off_the_data():
    # median accuracy 0.5 + 0.1 r: r = 4 reaches 0.9 exactly, read as 4 in both readings
    df = minip({"m8": (8, [1.0] * SEEDS), "m12": (12, [1.0] * SEEDS)}, ranks=(1, 2, 4, 8))
    growth = rank_growth_table(df)
    fig = plot("minip_rank_vs_m", {"minip_rank_vs_m": df, "minip_constructions": constructions(),
                                   "minip_rank_growth": growth}, PARAMS_B)
    right = fig.axes[2]
    diamonds = [ln for ln in right.get_lines() if ln.get_marker() == "D"]
    assert len(diamonds) == 1
    assert list(diamonds[0].get_ydata()) == pytest.approx(2.0 ** growth["log2_interp"])
    labels = [t for t in right.get_legend_handles_labels()[1]]
    assert any(t.startswith("fit on the grid") for t in labels)
    assert any(t.startswith("fit between grid points") for t in labels)
    assert all(ax.get_legend() is None for ax in fig.axes[:3])  # the legends have their own row


def test_witness_marks_the_proven_bound_and_the_papers_rank_and_every_dense_seed():
    df = minip({"table": (24, [1.0, 0.9, 0.87]), "mlp": (24, [1.0, 1.0, FAILING])},
               ranks=(1, 2, 4, 6, 8, 16, 32))
    df = df[(df["model"] == "dense") | (df["feature_map"] == df["instance"])]
    df.loc[df["model"] == "kernel", "feature_map"] = df["instance"]
    params = {**PARAMS_B, "witness": {"blocks": 6, "width": 4}, "paper_witness_rank": 8}
    fig = plot("minip_witness", {"minip_witness": df, "minip_constructions": constructions()},
               params)
    main, dense = fig.axes[0::2], fig.axes[1::2]
    for ax in main:
        assert {4.0, 8.0} <= vertical_lines(ax)  # r_lb = min(6, 4) and the paper's r
        assert tick_labels(ax) == ["1", "2", "4", "6", "8", "16", "32"]  # r_lb, 8 in the grid
    legend = " ".join(t.get_text() for t in main[0].get_legend().get_texts())
    assert "= 4" in legend and "r < 8" in legend
    assert sorted(points(dense[0])[:, 1]) == pytest.approx(sorted(
        1 - np.array([1.0, 0.9, 0.87, 1.0, 1.0, FAILING])))


# ---- Paper A -----------------------------------------------------------------------------------

def attention() -> pd.DataFrame:
    rows = []
    for (teacher, beta), r_star, r, s in itertools.product(
            (("linear", 1.0), ("softmax", 1.0), ("softmax", 4.0)), (2, 4), range(1, 7),
            range(SEEDS)):
        rows.append({"teacher": teacher, "beta": beta, "r_star": r_star, "rank": r, "seed": s,
                     EXCESS: 0.5 if r < r_star else 0.002, ENERGY_EFFECTIVE_RANK: float(r_star),
                     numerical_rank(0.05): float(r_star)})
    return pd.DataFrame(rows)


def test_attention_native_draws_the_deficiency_line_and_the_linear_reference():
    fig = plot("entropic_attention_native", {"entropic_attention": attention()}, PARAMS_A)
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == [
        "linear teacher", "softmax, β = 1 teacher", "softmax, β = 4 teacher"]
    assert 0.07 in horizontal_lines(panels[0])  # EB-7's value, from the params
    for ax in panels[1:]:
        assert 0.06 in horizontal_lines(ax)  # EB-8's
        dashed = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--" and len(ln.get_xdata())]
        assert len(dashed) == 2  # the linear teacher's median per r*
    assert not [ln for ln in panels[0].get_lines() if ln.get_linestyle() == "--"
                and len(ln.get_xdata())]
    legend = " ".join(t.get_text() for ax in fig.axes if ax.get_legend()
                      for t in ax.get_legend().get_texts())
    assert "EB-7" in legend and "EB-8" in legend and "linear teacher" in legend


def test_attention_recovery_writes_its_step_axis_in_plain_numbers():
    trace = pd.DataFrame([{"teacher": t, "beta": 1.0, "r_star": r, "seed": s, "step": step,
                           ENERGY_EFFECTIVE_RANK: r * (1 - 1 / step)}
                          for t in ("linear", "softmax") for r in (2, 4) for s in range(SEEDS)
                          for step in (25, 50, 100, 200, 400, 600)])
    df = attention()
    df["rank"] = df["rank"].where(df["rank"] < 6, 16)
    fig = plot("entropic_attention_recovery",
               {"entropic_attention": df, "entropic_attention_trace": trace}, PARAMS_A)
    labels = tick_labels(fig.axes[2])
    assert labels and all(re.fullmatch(r"\d+", s) for s in labels), labels


def predict() -> pd.DataFrame:
    rows = []
    for (teacher, est), r_star, s in itertools.product(
            itertools.product(("linear", "softmax"), ("E1", "E2", "E2_debiased", "mixer")),
            (1, 2, 4), range(SEEDS)):
        for size in ((256,) if est == "mixer" else (32, 128)):
            rows.append({"teacher": teacher, "beta": 1.0, "estimator": est, "r_star": r_star,
                         "seed": s, "S": size, ENERGY_EFFECTIVE_RANK: r_star + 32 / size,
                         ENTROPY_EFFECTIVE_RANK: float(r_star), numerical_rank(0.01): r_star + 1,
                         numerical_rank(0.05): float(r_star)})
    return pd.DataFrame(rows)


def test_predictability_is_one_row_per_teacher_with_both_measures_and_no_capped_e2_rank():
    fig = plot("entropic_predictability", {"entropic_predict": predict()}, PARAMS_A)
    grid, legend_ax = fig.axes[:-1], fig.axes[-1]
    assert len(grid) == 2 * 5  # teachers × (E1, E2, E2 debiased, mixer, S-frontier)
    assert [ax.get_title() for ax in grid[:5]] == ["E1 (V known)", "E2 (V unknown, unfolding)",
                                                   "E2 debiased", "realized mixer",
                                                   "S-frontier (R̃_eff)"]
    assert all(ax.get_title() == "" for ax in grid[5:])  # the estimators head the columns only
    assert [grid[k * 5].get_ylabel().split("\n")[0] for k in range(2)] == ["linear",
                                                                          "softmax β=1"]
    for k in range(2):
        for col, est in enumerate(("E1", "E2", "E2_debiased", "mixer")):
            drawn = [ln for ln in grid[k * 5 + col].get_lines() if len(ln.get_xdata())]
            markers = [ln.get_marker() for ln in drawn]
            sizes = 1 if est == "mixer" else 2  # lines per measure: the S values (mixer: one)
            assert markers.count("o") == sizes, (est, markers)  # R̃_eff
            # the numerical rank, except E2's (at its cap wherever the unfolding is noisy)
            assert markers.count("x") == (0 if est == "E2" else sizes), (est, markers)
            assert markers.count("s") == (1 if est == "mixer" else 0)  # the mixer's entropy rank
    legend = legend_ax.get_legend()
    markers = {h.get_marker() for h in legend.legend_handles}
    assert {"o", "x"} <= markers
    text = " ".join(t.get_text() for t in legend.get_texts())
    assert "S = 32" in text and "τ = 0.05" in text and "mixer τ = 0.01" in text
    assert "not for E2" in text and "S-frontier: E2" in text


# ---- shared pieces -----------------------------------------------------------------------------

def test_rank_labels_are_integers_then_powers_of_two():
    assert [rank_label(v) for v in (1, 2, 4, 12, 65536)] == ["1", "2", "4", "12", "65536"]
    assert rank_label(2.0**20) == "$2^{20}$"
    assert power_of_two_ticks(1, 64) == [2.0**k for k in range(7)]
    ticks = power_of_two_ticks(3, 2.0**25, max_ticks=9)
    assert len(ticks) <= 9 and ticks[0] == 16 and ticks[-1] == 2.0**24
    assert power_of_two_ticks(5, 7) == [4, 8]


def test_ood_pools_draws_every_seed_of_the_train_test_gap():
    df = minip({"small": (8, [1.0] * SEEDS), "large": (12, [1.0] * SEEDS)})
    kernel = df["model"] == "kernel"
    gaps = np.where(kernel, 0.01 * np.arange(len(df)) % 0.2, 0.0)
    df = df.assign(train_sequence_accuracy=df["test_sequence_accuracy"] + gaps)
    fig = plot("minip_ood_pools", {"minip_ood": df}, PARAMS_B)
    ys = sorted(np.round(points(fig.axes[1])[:, 1], 9))
    assert ys == sorted(np.round(gaps[kernel], 9))  # one point per kernel head and seed


def test_ood_pool_sweep_draws_train_and_test_of_every_seed_and_the_gap():
    rows = [{"model": "kernel", "rank": r, "seed": s, "instance": f"pool{n}", "m": 8,
             "test_sequence_accuracy": 0.5 + 0.01 * s, "train_sequence_accuracy": 0.9 - 0.01 * s}
            for n in (1024, 65536) for r in (8, 64) for s in range(SEEDS)]
    fig = plot("minip_ood_pool_sweep", {"minip_ood_pool_sweep": pd.DataFrame(rows)}, PARAMS_B)
    acc, gap = fig.axes
    assert len(points(acc)) == 2 * len(rows)  # train and test of every head and seed
    assert sorted(np.round(points(gap)[:, 1], 9)) == sorted(
        np.round([r["train_sequence_accuracy"] - r["test_sequence_accuracy"] for r in rows], 9))
    assert tick_labels(acc) == ["1,024", "65,536"]


def test_beyond_keeps_coinciding_fits_visible_and_draws_both_readings():
    """Every line of the claims world crosses at the same F: their lattice fits coincide, so each
    is drawn offset (no two fitted lines on the same pixels) and the panel names them."""
    from claims_world import beyond, beyond_growth

    df = beyond()
    growth = beyond_growth(df)
    fig = plot("minip_beyond", {"minip_beyond": df, "minip_beyond_growth": growth}, PARAMS_B)
    lattice = next(ax for ax in fig.axes if ax.get_title().startswith("budget needed vs m"))
    between = next(ax for ax in fig.axes if ax.get_title().startswith("read between grid"))
    assert "same fit, drawn offset" in lattice.get_xlabel()
    assert "H=2 = differential" in lattice.get_xlabel()
    for ax in (lattice, between):
        fits = [tuple(np.round(ln.get_ydata(), 9)) for ln in ax.get_lines()
                if len(ln.get_xdata()) == 20]
        with_slope = growth[np.isfinite(growth["b"]) & np.isclose(growth["target"], 0.9)]
        assert len(fits) == with_slope["line"].nunique() == len(set(fits))  # all distinct
    legend = next(ax.get_legend() for ax in fig.axes if ax.get_legend()
                  and "between grid points" in ax.get_legend().get_title().get_text())
    assert len(legend.get_texts()) == growth["line"].nunique()
