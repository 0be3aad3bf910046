"""The second predictability grid (``predict_d32``): its jobs, its own table, its
teachers (the configured rank and unit signal variance at d = 32) and its cross-key checks."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import numpy as np
import pytest
import yaml

from attnrank.entropic.jobs import entropic_jobs
from attnrank.entropic.predict import E2_MAX_FEATURES, e2_features, e2_runs
from attnrank.entropic.predict_grid import D32, PREDICT_D32, d32_jobs, is_d32
from attnrank.pipeline.plan import build_plan

ROOT = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())


def d32(config, scale):
    return d32_jobs(config, scale)


@pytest.mark.parametrize("scale", ["full", "smoke"])
def test_the_grid_is_the_configs(scale):
    g = CONFIG["entropic"]["scales"][scale][PREDICT_D32]
    head = float(CONFIG["entropic"]["headline_beta"])
    jobs = d32(CONFIG, scale)
    names = {"linear_d32"} | {f"softmax_b{b:g}_d32" for b in g["betas"]} | {
        f"softmax_b{head:g}_d32_{s}" for s in g["variant_spectra"]}
    assert {inst for _, inst in jobs} == names
    for (exp, inst), job in jobs.items():
        assert exp == "predict" and job.instance == inst
        assert (job.n_tokens, job.d, job.e) == (g["n_tokens"], g["d"], g["e"])
        assert job.r_star == tuple(g["r_star"]) and job.seeds == g["seeds"]
        assert job.calibration_sequences == g["calibration_sequences"]
        variant = inst.count("_") == 3 if inst.startswith("softmax") else False
        assert job.spectrum == (inst.rsplit("_", 1)[1] if variant else CONFIG["entropic"]["spectrum"])
        headline = not variant and (job.teacher.kind == "linear" or job.teacher.beta == head)
        assert job.S == tuple(g["S"] if headline else g["other_S"])


def test_full_scale_is_d32_and_flat_with_a_decaying_variant():
    jobs = d32(CONFIG, "full")
    assert {j.d for j in jobs.values()} == {32}
    assert {j.spectrum for i, j in jobs.items() if not i[1].endswith("_decaying")} == {"flat"}
    assert jobs[("predict", "softmax_b1_d32_decaying")].spectrum == "decaying"
    assert max(jobs[("predict", "linear_d32")].S) == 16384 == max(
        jobs[("predict", "softmax_b1_d32")].S)
    assert max(jobs[("predict", "softmax_b1_d32")].r_star) == 24


@pytest.mark.parametrize("scale", ["full", "smoke"])
def test_its_rows_make_their_own_table_and_no_other(scale):
    plan = build_plan(CONFIG, scale)
    inputs = {t: set(plan.run_for(f"tables/{t}.parquet").inputs)
              for t in ("entropic_predict", "entropic_predict_other_values", "entropic_predict_d32")}
    grid = {f"entropic/predict/{inst}/estimates.parquet" for _, inst in d32(CONFIG, scale)}
    assert inputs["entropic_predict_d32"] == grid
    assert not grid & (inputs["entropic_predict"] | inputs["entropic_predict_other_values"])
    claims = set(plan.run_for("claims.md").inputs)
    assert "tables/entropic_predict_d32.parquet" in claims


def test_e2_runs_at_d16_and_not_at_d32():
    assert e2_features(16) == 2176 and e2_features(32) == 16896
    assert e2_runs(16) and not e2_runs(32) and E2_MAX_FEATURES < e2_features(32)


def _teacher(job, r_star):
    from attnrank.entropic.experiments.predict import job_teacher

    return job_teacher(job, r_star, 0)


@pytest.mark.parametrize("inst", ["linear_d32", "softmax_b1_d32", "softmax_b8_d32",
                                  "softmax_b1_d32_decaying"])
def test_the_d32_teacher_has_the_configured_rank_and_unit_signal_variance(inst):
    job = d32(CONFIG, "full")[("predict", inst)]
    rng = np.random.default_rng(123)  # fresh inputs, not the calibration ones
    for r_star in (min(job.r_star), max(job.r_star)):
        t = _teacher(job, r_star)
        assert t.k_star.shape == (job.d, job.d) and t.v_star.shape == (job.d, job.e)
        sv = np.linalg.svd(t.k_star, compute_uv=False)
        assert np.linalg.matrix_rank(t.k_star, tol=1e-9 * sv[0]) == r_star == t.r_star
        assert np.linalg.norm(t.k_star) == pytest.approx(job.teacher.beta, rel=1e-12)
        expect = t.s / np.linalg.norm(t.s) * job.teacher.beta  # flat or decaying, scaled to β
        np.testing.assert_allclose(sv[:r_star], expect, rtol=1e-9)
        np.testing.assert_allclose(t.v_star.T @ t.v_star, np.eye(job.e), atol=1e-12)
        x = rng.standard_normal((2048, job.n_tokens, job.d))
        power = float(np.mean(t.clean(x) ** 2))
        assert power == pytest.approx(1.0, rel=0.05), (inst, r_star, power)


def test_a_d32_job_runs_every_estimator_but_e2():
    from attnrank.entropic.experiments.predict import run_job

    job = d32(CONFIG, "smoke")[("predict", "softmax_b1_d32")]
    job = dataclasses.replace(job, r_star=(4,), seeds=1, S=(32,), mixer_inputs=4,
                              calibration_sequences=64)
    df, spectra = run_job(job)
    assert set(df["estimator"]) == {"E1", "E2_debiased", "mixer"}
    assert set(df["d"]) == {32} and set(df["n_tokens"]) == {64}
    assert all(v.shape == (32,) for v in spectra.values())


def _problems(edit):
    config = copy.deepcopy(CONFIG)
    edit(config["entropic"]["scales"]["smoke"][PREDICT_D32])
    with pytest.raises(ValueError) as err:
        d32_jobs(config, "full")
    return str(err.value)


@pytest.mark.parametrize(("edit", "text"), [
    (lambda g: g.update(n_tokens=32), f"smoke.{PREDICT_D32}.n_tokens: the debiased E2"),
    (lambda g: g.update(e=48), f"smoke.{PREDICT_D32}.e: orthonormal"),
    (lambda g: g.update(r_star=[1, 40]), f"smoke.{PREDICT_D32}.r_star: r* = [40]"),
    (lambda g: g.update(betas=[2]), f"smoke.{PREDICT_D32}.betas: the headline β = 1"),
    (lambda g: g.update(e=1, other_S=[8]), f"smoke.{PREDICT_D32}.other_S: S = [8]"),
    (lambda g: g.update(variant_spectra=["flat"]), f"smoke.{PREDICT_D32}.variant_spectra"),
])
def test_bad_grids_are_refused_naming_the_key(edit, text):
    assert text in _problems(edit)


def test_the_tag_names_the_second_grid_only():
    assert is_d32(f"linear_{D32}") and is_d32(f"softmax_b0p5_{D32}_decaying")
    assert all(is_d32(i) for _, i in d32_jobs(CONFIG, "full"))
    assert not any(is_d32(i) for _, i in entropic_jobs(CONFIG, "full"))
