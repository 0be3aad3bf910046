"""Teacher values V* (config ``entropic.teacher_values``): orthonormal V* has orthonormal columns,
every Paper A teacher's clean signal has variance 1 under both choices, the two choices of one seed
share every other draw, the config refuses an unknown choice naming the key, the extra jobs run the
other choice only where EB-7, EB-8, EB-9 and EB-12 need it, and those claims report both choices
(verdict on the config's), pass and fail both ways on synthetic tables."""

import copy
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml
from claims_world import params, world
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate
from test_claims_verdicts import ATT, PRE, Tables, where

from attnrank.claims import CHECKS, FAIL, NOT_RUN, PASS, NotRun
from attnrank.entropic import jobs
from attnrank.entropic.experiments.attention import make_teacher
from attnrank.entropic.experiments.common import seed_instance
from attnrank.entropic.tasks import operators
from attnrank.entropic.tasks.operators import operator_teacher, value_map
from attnrank.entropic.tasks.teachers import attention_teacher
from attnrank.pipeline.plan import build_plan

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = str(ROOT / "workflow" / "schemas" / "config.schema.yaml")
VALUES = ("orthonormal", "gaussian")
N, D, E = 32, 16, 16  # the full config's task


@pytest.fixture()
def config():
    return yaml.safe_load((ROOT / "config.yaml").read_text())


# ---- teachers ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("d", "e"), [(16, 16), (16, 6), (5, 1)])
def test_orthonormal_values_have_orthonormal_columns_from_the_gaussian_draw(d, e):
    v = value_map(np.random.default_rng(d * e), d, e, "orthonormal")
    assert np.allclose(v.T @ v, np.eye(e), atol=1e-12)
    g = value_map(np.random.default_rng(d * e), d, e, "gaussian")
    assert not np.allclose(g.T @ g, np.eye(e), atol=0.05)
    # the same draw: G = V R with R upper triangular, positive diagonal (QR, sign-fixed)
    r = v.T @ (g * np.sqrt(d))
    assert np.allclose(np.tril(r, -1), 0, atol=1e-10) and np.all(np.diag(r) > 0)


def test_gaussian_values_have_variance_one_over_d():
    g = value_map(np.random.default_rng(0), 400, 300, "gaussian")
    assert np.var(g) * 400 == pytest.approx(1.0, rel=0.02)


def test_unknown_values_and_wide_orthonormal_values_are_refused():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="teacher values must be one of"):
        value_map(rng, 4, 2, "haar")
    with pytest.raises(ValueError, match="e ≤ d"):
        value_map(rng, 4, 5, "orthonormal")
    with pytest.raises(ValueError, match="teacher values"):
        attention_teacher(rng, rng, "linear", N, D, E, 2, 1.0, 0.1, 64, values="uniform")
    assert operators.TEACHER_VALUES == jobs.TEACHER_VALUES == VALUES


@pytest.mark.parametrize("values", VALUES)
@pytest.mark.parametrize(("kind", "beta"), [("linear", 1.0), ("softmax", 1.0), ("softmax", 4.0)])
def test_attention_teacher_signal_variance_is_one_under_both_values(values, kind, beta):
    t = attention_teacher(np.random.default_rng(3), np.random.default_rng(4), kind, N, D, E, 4,
                          beta, 0.1, calibration_sequences=4096, values=values)
    if values == "orthonormal":
        assert np.allclose(t.v_star.T @ t.v_star, np.eye(E), atol=1e-12)
    _, clean, _ = t.sample(np.random.default_rng(5), 4096, N)  # inputs c was not fitted on
    assert np.mean(clean**2) == pytest.approx(1.0, abs=0.04)


@pytest.mark.parametrize("values", VALUES)
@pytest.mark.parametrize(("kind", "r_star"), [("flat", 2), ("flat", 8), ("decaying", 6)])
def test_operator_teacher_signal_variance_is_one_under_both_values(values, kind, r_star):
    t = operator_teacher(np.random.default_rng(r_star), N, D, E, r_star, 0.1, kind, 0.7, values)
    # exact in expectation: ‖A*‖²‖V*‖² = N e
    assert np.sum(t.a_star**2) * np.sum(t.v_star**2) == pytest.approx(N * E)
    if values == "orthonormal":  # orthogonal columns of equal norm √(N / Σ s²)
        gram = t.v_star.T @ t.v_star
        assert np.allclose(gram, np.eye(E) * N / np.sum(t.s**2), atol=1e-10)
    _, clean, _ = t.sample(np.random.default_rng(9), 4000)
    assert np.mean(clean**2) == pytest.approx(1.0, abs=0.04)


def _attention_job(**changes) -> jobs.AttentionJob:
    """The smoke plan's headline softmax attention job, changed."""
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    return replace(jobs.entropic_jobs(config, "smoke")[("attention", "softmax_b1")],
                   teacher=jobs.Teacher(jobs.SOFTMAX, 1.0), **changes)


def test_the_two_values_of_one_seed_share_every_other_draw():
    def job(values, instance):
        return _attention_job(experiment="attention", instance=instance, n_tokens=N, d=D, e=E,
                              noise_var=0.1, calibration_sequences=256, teacher_values=values)

    a = make_teacher(job("orthonormal", "softmax_b1"), 4, 0)
    b = make_teacher(job("gaussian", "softmax_b1_gaussian"), 4, 0)
    assert np.array_equal(a.k_star, b.k_star)
    r = a.v_star.T @ b.v_star  # V_gauss = V_orth R, R upper triangular
    assert np.allclose(a.v_star @ r, b.v_star, atol=1e-12) and np.allclose(np.tril(r, -1), 0)
    assert seed_instance(job("gaussian", "softmax_b1_gaussian")) == "softmax_b1"
    assert seed_instance(job("orthonormal", "softmax_b1")) == "softmax_b1"
    assert seed_instance(job("orthonormal", "linear_gaussian")) == "linear_gaussian"


def test_evaluating_less_often_leaves_the_final_rows_unchanged():
    """The extra attention jobs evaluate only at the last step: the final rows are the same."""
    import torch

    from attnrank.entropic.experiments.attention import run_job

    job = _attention_job(experiment="attention", instance="softmax_b1_gaussian",
                         teacher_values="gaussian", r_star=(2,), ranks=(1, 2, 4), seeds=2,
                         n_tokens=8, d=4, e=4, noise_var=0.1, calibration_sequences=64,
                         init_std=1e-3, lr=0.01, warmup=5, schedule="cosine", steps=30,
                         n_train=16, eval_sequences=32, chunk=0)
    every, once = (run_job(replace(job, log_every=k), torch.device("cpu"))[0] for k in (10, 30))
    assert len(every) == 3 * len(once)
    final = every[every["final"]].reset_index(drop=True)
    assert final.equals(once.reset_index(drop=True))


# ---- config, jobs and plan ---------------------------------------------------------------------

def test_shipped_config_uses_orthonormal_values(config):
    assert config["entropic"]["teacher_values"] == "orthonormal"


def test_unknown_teacher_values_are_refused_naming_the_key(config):
    config["entropic"]["teacher_values"] = "haar"
    with pytest.raises(WorkflowError, match="teacher_values"):
        validate(copy.deepcopy(config), SCHEMA)
    with pytest.raises(ValueError, match=r"entropic\.teacher_values.*orthonormal, gaussian.*'haar'"):
        jobs.check_entropic_config(config["entropic"])
    with pytest.raises(ValueError, match=r"entropic\.teacher_values"):
        jobs.entropic_jobs(config, "smoke")


def test_more_outputs_than_features_are_refused_naming_the_key(config):
    config["entropic"]["e"] = config["entropic"]["d"] + 1
    with pytest.raises(ValueError, match=r"entropic\.e: orthonormal .* e ≤ d"):
        jobs.check_entropic_config(config["entropic"])


@pytest.mark.parametrize("values", VALUES)
@pytest.mark.parametrize("scale", ["smoke", "full"])
def test_extra_jobs_run_the_other_values_only_for_eb7_to_eb9_and_eb12(config, values, scale):
    config["entropic"]["teacher_values"] = values
    other = jobs.other_values(values)
    all_jobs = jobs.entropic_jobs(config, scale)
    extra = {k: j for k, j in all_jobs.items() if j.teacher_values != values}
    beta = jobs.beta_tag(config["entropic"]["headline_beta"])
    assert set(extra) == {("attention", f"linear_{other}"), ("attention", f"softmax_b{beta}_{other}"),
                          ("predict", f"linear_{other}")}
    assert {j.teacher_values for j in extra.values()} == {other}
    for (exp, inst), job in extra.items():  # the same grid as the default twin
        twin = all_jobs[(exp, inst.removesuffix(f"_{other}"))]
        same = {"instance": twin.instance, "teacher_values": values}
        if exp == "attention":  # final rows only: evaluated once, at the last step
            assert job.log_every == job.steps
            same["log_every"] = twin.log_every
        assert job.to_dict() | same == twin.to_dict()
    plan = build_plan(config, scale)
    tables = {t: set(plan.by_output[f"tables/{t}.parquet"].inputs)
              for t in ("entropic_attention", "entropic_attention_trace", "entropic_predict",
                        "entropic_attention_other_values", "entropic_predict_other_values")}
    assert tables["entropic_attention_other_values"] == {
        f"entropic/attention/linear_{other}/metrics.parquet",
        f"entropic/attention/softmax_b{beta}_{other}/metrics.parquet"}
    assert tables["entropic_predict_other_values"] == {
        f"entropic/predict/linear_{other}/estimates.parquet"}
    for t in ("entropic_attention", "entropic_attention_trace", "entropic_predict"):
        assert tables[t] and not any(other in i for i in tables[t]), t
    claims = set(plan.by_output["claims.md"].inputs)
    assert {"tables/entropic_attention_other_values.parquet",
            "tables/entropic_predict_other_values.parquet"} <= claims


# ---- claims under both values ------------------------------------------------------------------

ATT_OTHER, PRE_OTHER = "entropic_attention_other_values", "entropic_predict_other_values"


def breaks(cid: str, table: str):
    """An edit of ``table`` (default or other values) that makes claim ``cid`` fail there."""
    return {
        "EB-7": lambda t: where(t, table, "excess", 0.04, teacher="linear", r_star=3, rank=1),
        "EB-8": lambda t: where(t, table, "excess", 0.03, teacher="softmax", beta=1.0, r_star=3,
                                rank=4),
        "EB-9": lambda t: where(t, table, "excess", 10.0, teacher="softmax", beta=1.0, r_star=3,
                                rank=1),
        "EB-12": lambda t: where(t, table, "energy_effective_rank", 9.0, teacher="linear",
                                 estimator="E2", S=4096),
    }[cid]


TABLES = {"EB-7": (ATT, ATT_OTHER), "EB-8": (ATT, ATT_OTHER), "EB-9": (ATT, ATT_OTHER),
          "EB-12": (PRE, PRE_OTHER)}


def outcome(cid: str, *edits, values: str = "orthonormal"):
    tables: Tables = world()
    for edit in edits:
        edit(tables)
    p = params()
    p["entropic"]["teacher_values"] = values
    return CHECKS[cid].check(tables, p)


@pytest.mark.parametrize("cid", TABLES)
@pytest.mark.parametrize(("head_ok", "other_ok"), [(True, True), (True, False), (False, True),
                                                   (False, False)])
def test_verdict_on_the_config_values_and_the_other_reported(cid, head_ok, other_ok):
    head, alt = TABLES[cid]
    edits = ([] if head_ok else [breaks(cid, head)]) + ([] if other_ok else [breaks(cid, alt)])
    out = outcome(cid, *edits)
    verdict = {True: PASS, False: FAIL}
    assert out.passed == head_ok  # the verdict is the config's V* only
    assert out.sweep == (f"V*=orthonormal (headline): {verdict[head_ok]}; "
                         f"V*=gaussian: {verdict[other_ok]}")
    assert out.measured.startswith("V*=orthonormal: ")
    assert f"V*=gaussian (reported, not in the verdict): {verdict[other_ok]}: " in out.note


@pytest.mark.parametrize("cid", TABLES)
def test_the_headline_follows_the_config_values(cid):
    """With teacher_values: gaussian the default tables hold Gaussian V* and the other tables the
    orthonormal one: the labels swap, the verdict still reads the default table."""
    head, _ = TABLES[cid]
    out = outcome(cid, breaks(cid, head), values="gaussian")
    assert not out.passed
    assert out.sweep == "V*=gaussian (headline): fail; V*=orthonormal: pass"
    assert out.measured.startswith("V*=gaussian: ")


@pytest.mark.parametrize("cid", TABLES)
def test_the_other_values_lacking_the_grid_is_reported_not_run(cid):
    _, alt = TABLES[cid]

    def empty(t: Tables) -> None:
        t[alt] = t[alt].iloc[0:0]

    out = outcome(cid, empty)
    assert out.passed and out.sweep == f"V*=orthonormal (headline): {PASS}; V*=gaussian: {NOT_RUN}"


@pytest.mark.parametrize("cid", TABLES)
@pytest.mark.parametrize("which", [0, 1])
def test_a_missing_table_of_either_values_is_not_run(cid, which):
    table = TABLES[cid][which]
    with pytest.raises(NotRun, match=table):
        outcome(cid, lambda t: t.pop(table))


def test_eb12_reports_the_debiased_e2_under_both_values():
    gaussian_population = {1: 1.0, 2: 1.9, 4: 3.4, 6: 4.7}

    def biased(t: Tables) -> None:
        for r, v in gaussian_population.items():
            where(t, PRE_OTHER, "energy_effective_rank", v, teacher="linear",
                  estimator="E2_debiased", S=4096, r_star=r)

    out = outcome("EB-12", biased)
    assert out.passed and out.sweep.endswith("V*=gaussian: pass")  # E2 itself is not edited
    default, other = out.note.split("V*=gaussian (reported, not in the verdict)")
    assert "debiased E2" in default and "r*=2:2, r*=4:4, r*=6:6" in default
    assert "debiased E2" in other and "r*=2:1.9, r*=4:3.4, r*=6:4.7" in other
