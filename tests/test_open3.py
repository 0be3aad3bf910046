"""OPEN-3 (docs/methods.md §2.9): the candidate E2_centred and its floor rank on constructions of
known rank, r_attn and its labelled assumptions, S_min and its censoring on hand-built tables, the
claim's sentence, the figure, the jobs, and the estimate-rank tool (good input and bad)."""

from __future__ import annotations

import copy
import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from claims_world import CONFIG, D, open3_inputs, open3_job, open3_world, params

from attnrank.claims import CHECKS
from attnrank.core.rank import energy_effective_rank, numerical_rank
from attnrank.entropic.claims import _open3_sentence, open3_standing
from attnrank.entropic.experiments import predict as predict_experiment
from attnrank.entropic.experiments.open3_candidate import candidate_rows, predict_teacher
from attnrank.entropic.jobs import PredictJob, Teacher
from attnrank.entropic.open3.candidate import (
    centre_tokens,
    centred_eigenvalues,
    centred_stats,
    energies,
    floor_rank,
    truncation_costs,
)
from attnrank.entropic.open3.jobs import (
    E2_CENTRED,
    FLOOR_RANK,
    Open3CandidateJob,
    open3_config_problems,
    open3_jobs,
)
from attnrank.entropic.open3.table import (
    CENSORED,
    EQUALS_R_STAR,
    MEASURED,
    NONE,
    SAME_CELL,
    cell_errors,
    measured_rattn,
    s_min,
    smallest_sufficient,
    targets,
)
from attnrank.entropic.open3.tool import data_readings, load_arrays, sufficiency
from attnrank.entropic.predict import e2_debiased_spectrum, e2_debiased_stats, prefix_stats
from attnrank.entropic.tasks.teachers import attention_teacher

N, DIM, E = 16, 6, 6
FLOOR, TOL, QUORUM = 0.02, 0.25, 0.8


def _teacher(kind: str, r_star: int, noise: float = 0.0, spectrum: str = "flat", beta: float = 1.0,
             n: int = N, d: int = DIM, seed: int = 0):
    return attention_teacher(np.random.default_rng(seed), np.random.default_rng(seed + 50), kind,
                             n, d, d, r_star, beta, noise, 512, spectrum, 0.7)


# ---- the candidate ------------------------------------------------------------------------------

def test_centred_statistics_match_their_definitions_sequence_by_sequence():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((5, N, DIM)), rng.standard_normal((5, N, E))
    st = centred_stats(x, y)
    mm, g_inv, rss, fit = np.zeros((DIM, DIM)), np.zeros((DIM, DIM)), 0.0, 0.0
    for xs, ys in zip(x, y, strict=True):
        xc, yc = xs - xs.mean(0), ys - ys.mean(0)
        m = np.linalg.solve(xc.T @ xc, xc.T @ yc)
        mm, g_inv = mm + m @ m.T, g_inv + np.linalg.inv(xc.T @ xc)
        rss, fit = rss + np.sum((yc - xc @ m) ** 2), fit + np.sum((xc @ m) ** 2)
    assert np.allclose(st["mm"], mm) and np.allclose(st["g_inv"], g_inv)
    assert st["rss"] == pytest.approx(rss) and st["fit"] == pytest.approx(fit)
    assert st["yy"] == pytest.approx(float(np.sum(y ** 2)))
    assert st["dof"] == 5 * (N - 1 - DIM) * E and st["count"] == 5 * N * E and st["seqs"] == 5
    assert np.allclose(centre_tokens(x).sum(axis=1), 0)


def test_centred_statistics_add_up_over_chunks():
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((40, N, DIM)), rng.standard_normal((40, N, E))
    chunked = prefix_stats(centred_stats, (x, y), [40], chunk=7)[40]
    whole = centred_stats(x, y)
    for k in whole:
        assert np.allclose(chunked[k], whole[k]), k


def test_centred_statistics_need_n_minus_one_above_d():
    with pytest.raises(ValueError, match="N − 1 > d"):
        centred_stats(np.zeros((2, DIM + 1, DIM)), np.zeros((2, DIM + 1, E)))


@pytest.mark.parametrize("r_star", [1, 2, 4])
def test_e2_centred_has_the_rank_of_a_noise_free_linear_teacher(r_star):
    t = _teacher("linear", r_star)
    x, _, y = t.sample(np.random.default_rng(2), 64, N)
    lam = centred_eigenvalues(centred_stats(x, y))
    sv = np.sqrt(lam)
    assert numerical_rank(sv, 0.05) == r_star
    assert energy_effective_rank(sv) == pytest.approx(r_star, abs=0.05)
    assert lam[r_star:].max() < 1e-9 * lam[0]


def test_centring_removes_uniform_mixing_that_the_uncentred_estimate_keeps():
    """Y = 1 x̄ᵀ W: uniform mixing, the term of softmax that does not depend on K*. The debiased E2
    reads energy (a map of rank > 1) from it; the centred one reads nothing."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((200, N, DIM))
    y = np.repeat(x.mean(axis=1, keepdims=True), N, axis=1) @ rng.standard_normal((DIM, E))
    y += 1e-3 * rng.standard_normal(y.shape)
    plain = e2_debiased_spectrum(e2_debiased_stats(x, y))
    lam = centred_eigenvalues(centred_stats(x, y))
    assert numerical_rank(plain, 0.05) > 1 and float(np.sum(plain ** 2)) > 1.0
    assert lam.sum() < 1e-4 * float(np.sum(plain ** 2))


def test_e2_centred_reads_a_flat_softmax_teacher_at_its_rank_where_the_plain_estimate_cannot():
    t = _teacher("softmax", 2, noise=0.01, n=24, d=6)
    x, _, y = t.sample(np.random.default_rng(4), 1500, 24)
    sv = np.sqrt(centred_eigenvalues(centred_stats(x, y)))
    assert abs(energy_effective_rank(sv) - 2) <= TOL


def test_the_floor_rank_on_a_known_spectrum():
    lam = np.array([4.0, 2.0, 1.0, 0.5, 0.0])  # tail fractions after r = 1, 2, 3: 7/15, 1/5, 1/15
    assert np.allclose(truncation_costs(lam, 1.0), [1, 3.5 / 7.5, 1.5 / 7.5, 0.5 / 7.5, 0, 0])
    assert floor_rank(lam, 1.0, 1.0, 0.1) == 3
    assert floor_rank(lam, 1.0, 2.0, 0.1) == 2  # half the floor in units of a larger signal
    assert floor_rank(lam, 0.5, 1.0, 0.1) == 2  # half the energy in the centred part
    assert floor_rank(np.zeros(4), 1.0, 1.0, 0.1) == 1
    assert floor_rank(lam, 1.0, 1.0, 0.0) == 4  # only the exact rank reaches a zero floor


def test_the_floor_rank_of_a_decaying_linear_teacher_is_where_its_tail_drops_below_the_floor():
    t = _teacher("linear", 8, spectrum="decaying", n=32, d=16)
    x, _, y = t.sample(np.random.default_rng(5), 256, 32)
    st = centred_stats(x, y)
    lam = centred_eigenvalues(st)
    fit, var = energies(st)
    s2 = np.sort(t.s)[::-1] ** 2
    tail = np.array([s2[r:].sum() / s2.sum() for r in range(1, len(s2) + 1)])
    expected = int(np.flatnonzero(tail <= FLOOR)[0]) + 1  # 6: tails 0.025 after 5, 0.011 after 6
    assert expected == 6 and tail[4] > FLOOR * 1.2 and tail[5] < FLOOR * 0.6  # off the boundary
    assert fit == pytest.approx(var, rel=0.1)  # the linear teacher's signal is all centred fit
    assert floor_rank(lam, fit, var, FLOOR) == expected


def _predict_job(**kw) -> PredictJob:
    base = dict(experiment="predict", instance="softmax_b1", seed_offset=0, n_tokens=12, d=4, e=4,
                noise_var=0.1, spectrum="decaying", decay=0.7, taus=(0.01, 0.05),
                calibration_sequences=64, teacher_values="orthonormal",
                teacher=Teacher("softmax", 1.0), r_star=(1, 3), S=(16, 32), seeds=2,
                mixer_inputs=8, chunk=8)
    return PredictJob(**(base | kw))


def test_the_candidate_reads_the_teacher_and_stream_of_the_predict_job():
    job = _predict_job()
    for r_star, seed in ((1, 0), (3, 1)):
        a, b = predict_teacher(job, r_star, seed), predict_experiment.job_teacher(job, r_star, seed)
        assert np.array_equal(a.k_star, b.k_star) and np.array_equal(a.v_star, b.v_star)
        assert a.c == b.c
    gaussian = _predict_job(instance="softmax_b1_gaussian", teacher_values="gaussian")
    assert np.array_equal(predict_teacher(gaussian, 3, 0).k_star, predict_teacher(job, 3, 0).k_star)
    rows = pd.DataFrame(candidate_rows(job, FLOOR))
    assert len(rows) == 2 * 2 * 2 and set(rows["estimator"]) == {E2_CENTRED}
    assert rows[FLOOR_RANK].between(1, job.d).all()
    assert rows.equals(pd.DataFrame(candidate_rows(job, FLOOR)))  # the same draws every time


def test_the_candidate_job_round_trips_its_predict_jobs():
    job = Open3CandidateJob((_predict_job(), _predict_job(instance="linear",
                                                          teacher=Teacher("linear", 1.0))), FLOOR)
    assert Open3CandidateJob.from_json(job.to_json()) == job
    with pytest.raises(ValueError, match=r"predict\[0\]: missing key"):
        Open3CandidateJob.from_dict({"predict": [{"experiment": "predict"}], "noise_floor": 0.02})


# ---- r_attn and its assumptions -----------------------------------------------------------------

def _students(at_floor: dict[int, int], seeds: int = 5, r_star: int = 3, d: int = 16,
              spectrum: str = "decaying", beta: float = 1.0) -> pd.DataFrame:
    """Final rows of one cell: ``at_floor[rank]`` of the seeds reach the floor at that rank."""
    rows = []
    for rank, k in at_floor.items():
        for seed in range(seeds):
            rows.append({"d": d, "spectrum": spectrum, "teacher": "softmax", "beta": beta,
                         "r_star": r_star, "rank": rank, "seed": seed,
                         "excess": 0.01 if seed < k else 0.05})
    return pd.DataFrame(rows)


def test_r_attn_is_the_smallest_rank_with_the_seed_quorum_at_the_floor():
    # 4 of 5 seeds = ⌈0.8·5⌉: the quorum, exactly
    got = measured_rattn(_students({1: 0, 2: 4, 3: 5}), FLOOR, QUORUM).iloc[0]
    assert got["r_attn"] == 2 and got["at_floor"] == 4 and got["source"] == MEASURED
    got = measured_rattn(_students({1: 0, 2: 3, 3: 5}), FLOOR, QUORUM).iloc[0]
    assert got["r_attn"] == 3  # 3 of 5 is one short
    got = measured_rattn(_students({1: 2, 2: 3}, seeds=3), FLOOR, QUORUM).iloc[0]
    assert got["r_attn"] == 2  # 3 of 3 = ⌈0.8·3⌉
    got = measured_rattn(_students({1: 0, 2: 3, 3: 3}), FLOOR, QUORUM).iloc[0]
    assert math.isnan(got["r_attn"]) and got["source"] == CENSORED


def test_targets_measured_carried_to_d32_assumed_at_unswept_r_star_or_none():
    flat = pd.concat([_students({1: 0, 2: 5}, r_star=2, spectrum="flat"),
                      _students({1: 0, 2: 0, 3: 5}, r_star=3, spectrum="flat")])
    decaying = pd.concat([_students({1: 0, 2: 5}, r_star=2), _students({1: 0, 2: 5}, r_star=3),
                          _students({1: 0}, r_star=4)])
    measured = measured_rattn(pd.concat([flat, decaying]), FLOOR, QUORUM)
    cells = pd.DataFrame([{"d": d, "spectrum": s, "teacher": "softmax", "beta": b, "r_star": r}
                          for d in (16, 32) for s in ("flat", "decaying") for b in (1.0, 8.0)
                          for r in (1, 2, 3, 4, 6)])
    t = targets(measured, cells, 16).set_index(["d", "spectrum", "beta", "r_star"])
    assert t.loc[(16, "decaying", 1.0, 3), ["r_attn", "source"]].tolist() == [2.0, MEASURED]
    assert t.loc[(16, "decaying", 1.0, 4), "source"] == CENSORED
    assert t.loc[(32, "decaying", 1.0, 3), ["r_attn", "source"]].tolist() == [
        2.0, SAME_CELL.format(d=16)]
    assert t.loc[(32, "decaying", 1.0, 4), "source"] == NONE  # censored at d = 16: no target
    assert t.loc[(32, "decaying", 1.0, 6), "source"] == NONE  # decaying: r_attn ≠ r* somewhere
    for d in (16, 32):
        assert t.loc[(d, "flat", 1.0, 6), ["r_attn", "source"]].tolist() == [6.0, EQUALS_R_STAR]
        assert t.loc[(d, "flat", 8.0, 2), "source"] == NONE  # β never swept
    assert t.loc[(32, "flat", 1.0, 2), "source"] == SAME_CELL.format(d=16)


# ---- errors and S_min ---------------------------------------------------------------------------

def _errors(passes: dict[int, bool], r_star: int = 2) -> pd.DataFrame:
    return pd.DataFrame([{"estimator": "E1", "reading": "energy_effective_rank", "label": "E1 R̃_eff",
                          "teacher": "softmax", "beta": 1.0, "d": 16, "spectrum": "flat",
                          "r_star": r_star, "S": s, "passes": ok, "quorum_error": 0.1 if ok else 1,
                          "source": MEASURED} for s, ok in passes.items()])


@pytest.mark.parametrize("pattern, expected", [
    ({32: False, 128: True, 1024: True}, 128.0),
    ({32: True, 128: False, 1024: True}, 1024.0),  # passes again late: sufficient from 1024 only
    ({32: True, 128: True, 1024: False}, math.nan),  # the largest fails: censored
    ({32: True, 128: True, 1024: True}, 32.0)])
def test_s_min_is_the_smallest_s_after_which_every_s_passes(pattern, expected):
    got = s_min(_errors(pattern)).iloc[0]
    assert (math.isnan(got["S_min"]) and got["status"] == "censored") if math.isnan(expected) \
        else (got["S_min"] == expected and got["status"] == "S_min")
    assert smallest_sufficient(pd.Series(pattern)) == expected or math.isnan(expected)


def test_s_min_needs_every_r_star_of_the_cell():
    both = pd.concat([_errors({32: True, 128: True}, 2), _errors({32: False, 128: True}, 4)])
    assert s_min(both).iloc[0]["S_min"] == 128.0


def test_the_quorum_error_is_the_quorum_th_smallest_error_and_the_tolerance_is_inclusive():
    est = pd.DataFrame([{"estimator": "E1", "d": 16, "spectrum": "flat", "teacher": "softmax",
                         "beta": 1.0, "r_star": 2, "seed": i, "S": 32,
                         "energy_effective_rank": 2 + e} for i, e in enumerate(
                             [0.0, -0.1, 0.2, TOL, 2.0])])
    tgt = pd.DataFrame([{"d": 16, "spectrum": "flat", "teacher": "softmax", "beta": 1.0,
                         "r_star": 2, "r_attn": 2.0, "source": MEASURED}])
    row = cell_errors(est, tgt, TOL, QUORUM).iloc[0]
    assert row["quorum_error"] == pytest.approx(TOL) and row["passes"] and row["within"] == 4
    est.loc[3, "energy_effective_rank"] = 2.3
    assert not cell_errors(est, tgt, TOL, QUORUM).iloc[0]["passes"]


def test_the_world_tables_judge_only_cells_with_a_target():
    w = open3_world()
    assert set(w["entropic_open3_errors"]["source"]) == {MEASURED, SAME_CELL.format(d=D)}
    assert not (w["entropic_open3"]["d"] == 2 * D)[w["entropic_open3"]["estimator"] == "E2"].any()


# ---- the claim ----------------------------------------------------------------------------------

def _smin(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame([{"label": lab, "teacher": "softmax", "beta": b, "d": d, "spectrum": s,
                          "S_min": smin, "status": "S_min" if np.isfinite(smin) else "censored"}
                         for lab, b, d, s, smin in rows])


def _cells(label: str, d: int, s_of: dict) -> list[tuple]:
    return [(label, b, d, s, s_of.get((b, s), 128.0)) for b in (1.0, 2.0)
            for s in ("flat", "decaying")]


def test_the_sentence_names_the_reading_that_holds_at_both_d_with_its_s():
    table = _smin(_cells("A", 16, {}) + _cells("A", 32, {(2.0, "decaying"): 1024.0})
                  + _cells("B", 16, {(1.0, "flat"): math.nan}) + _cells("B", 32, {}))
    at = {d: open3_standing(table, ["flat", "decaying"], d) for d in (16, 32)}
    assert at[32]["A"].holds and at[32]["A"].need == 1024 and not at[16]["B"].holds
    text = _open3_sentence(at, 16, 32, TOL, ["flat", "decaying"])
    assert text.startswith("A stays within ±0.25 of r_attn at every softmax β and both spectra")
    assert "from S = 128 at d = 16 and S = 1024 at d = 32" in text and "B" not in text


def test_the_sentence_names_a_reading_that_holds_at_d16_only_and_where_d32_fails():
    table = _smin(_cells("A", 16, {}) + _cells("A", 32, {(1.0, "decaying"): math.nan}))
    at = {d: open3_standing(table, ["flat", "decaying"], d) for d in (16, 32)}
    text = _open3_sentence(at, 16, 32, TOL, ["flat", "decaying"])
    assert "A stays" in text and "at d = 16 from S = 128, but not at d = 32 (decaying β=1: " \
        "censored)" in text


def test_the_sentence_when_no_reading_holds_names_the_closest():
    table = _smin(_cells("A", 16, {(1.0, "flat"): math.nan, (2.0, "flat"): math.nan})
                  + _cells("B", 16, {(1.0, "decaying"): math.nan}))
    at = {16: open3_standing(table, ["flat", "decaying"], 16)}
    text = _open3_sentence(at, 16, None, TOL, ["flat", "decaying"])
    assert text.startswith("no data-only reading stays") and "closest: B" in text


def test_a_reading_without_a_spectrum_does_not_hold():
    table = _smin([("A", 1.0, 16, "flat", 32.0)])
    assert open3_standing(table, ["flat", "decaying"], 16)["A"].fails == [
        "decaying: no cell with a target"]


def test_the_claim_on_the_world_names_the_floor_rank():
    out = CHECKS["OPEN-3"].check(world_tables(), params())
    assert out.passed is None
    assert out.note.startswith("E2_centred floor rank stays within ±0.25 of r_attn")
    assert "decaying softmax β=1: r*=2→2, r*=3→2" in out.note


def world_tables() -> dict[str, pd.DataFrame]:
    from claims_world import world

    return world()


# ---- the figure ---------------------------------------------------------------------------------

def test_the_figure_draws_a_panel_per_teacher_and_spectrum_with_the_tolerance():
    from attnrank.entropic.figures.entropic_open3 import plot

    w = open3_world()
    fig = plot(w, {"rank_tolerance": TOL})
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert len(panels) == 3 * 2  # linear, softmax β = 1, 2 × flat, decaying
    titles = {ax.get_title() for ax in panels}
    assert "softmax β = 2, decaying spectrum" in titles and "linear, flat spectrum" in titles
    for ax in panels:
        assert any(np.allclose(line.get_ydata(), TOL) for line in ax.get_lines())
        labels = {line.get_label() for line in ax.get_lines()}
        assert "E2_centred floor rank (candidate)" in labels
    plt.close(fig)
    errors = w["entropic_open3_errors"]
    w["entropic_open3_errors"] = errors[(errors["beta"] != 2.0) | (errors["spectrum"] != "flat")]
    fig = plot(w, {"rank_tolerance": TOL})
    empty = next(ax for ax in fig.axes if ax.get_title() == "softmax β = 2, flat spectrum")
    assert [t.get_text() for t in empty.texts] == ["no cell with a target"]
    plt.close(fig)


# ---- jobs and config ----------------------------------------------------------------------------

def test_open3_jobs_add_sweeps_and_predict_jobs_under_the_other_spectrum():
    jobs = open3_jobs(CONFIG, "full")
    names = {inst for _, inst in jobs.runs}
    assert {"linear_decaying", "softmax_b4_decaying", "linear_d32_decaying",
            "softmax_b2_d32_decaying"} <= names
    assert "softmax_b1_d32_decaying" not in names  # the second grid runs it already
    att = jobs.runs[("attention", "softmax_b2_decaying")]
    assert att.spectrum == "decaying" and att.log_every == att.steps and att.r_star == (2, 4, 8)
    judged = {p.instance for p in jobs.candidate.predict}
    assert {"softmax_b1", "softmax_b1_d32_decaying", "softmax_b4_decaying"} <= judged
    assert not any(i.endswith("_gaussian") for i in judged)


def test_open3_config_problems_name_the_key():
    ent = copy.deepcopy(CONFIG["entropic"])
    ent["scales"]["smoke"]["open3"].update(spectra=["flat"], ranks=[1, 40], betas=[0])
    problems = open3_config_problems(ent)
    assert any("entropic.scales.smoke.open3.spectra" in p for p in problems)
    assert any("entropic.scales.smoke.open3.ranks: ranks [40] exceed d = 16" in p for p in problems)
    assert any("open3.betas: β must be > 0" in p for p in problems)


# ---- the tool -----------------------------------------------------------------------------------

def test_estimate_rank_reads_a_known_rank_teacher_within_the_tolerance_at_large_s():
    t = _teacher("linear", 3, noise=0.1, n=16, d=6)
    x, _, y = t.sample(np.random.default_rng(6), 3000, 16)
    table, skipped = data_readings(x, y, t.v_star, (0.01, 0.05), FLOOR)
    got = table.set_index("label")["value"]
    for label in ("E1 R̃_eff", "E2_debiased R̃_eff", "E2_centred R̃_eff", "E2_centred floor rank",
                  "E1 numerical rank τ=0.05", "E2_centred numerical rank τ=0.05"):
        assert abs(got[label] - 3) <= TOL, (label, got[label])
    assert not skipped


def _save(tmp_path, name, a):
    path = tmp_path / name
    np.save(path, a)
    return str(path)


def test_estimate_rank_cli_prints_readings_and_whether_s_suffices(tmp_path, capsys):
    from attnrank.cli import main

    t = _teacher("linear", 2, noise=0.1, n=16, d=6)
    x, _, y = t.sample(np.random.default_rng(7), 500, 16)
    xp, yp = _save(tmp_path, "X.npy", x), _save(tmp_path, "Y.npy", y)
    assert main(["estimate-rank", xp, yp, "--reference", str(tmp_path / "none")]) == 0
    out = capsys.readouterr().out
    assert "S = 500 sequences of N = 16 tokens, d = 6, e = 6" in out
    assert "no reference table at" in out and "E1: needs V (--values)" in out
    ref = tmp_path / "ref" / "tables"
    ref.mkdir(parents=True)
    smin = _smin(_cells("E2_centred floor rank", 6, {(2.0, "decaying"): 1024.0})
                 + _cells("E2_debiased R̃_eff", 6, {(1.0, "flat"): math.nan}))
    smin.to_parquet(ref / "entropic_open3.parquet")
    assert main(["estimate-rank", xp, yp, "--reference", str(tmp_path / "ref")]) == 0
    lines = capsys.readouterr().out.splitlines()
    floor_line = next(line for line in lines if "E2_centred floor rank" in line)
    assert "S_min = 1024: S = 500 is too few" in floor_line
    deb = next(line for line in lines if "E2_debiased R̃_eff" in line)
    assert "no S of the reference grid suffices at flat β=1" in deb
    assert "not in the reference at d = 6" in next(line for line in lines if "E1" not in line
                                                   and "stable rank" in line)


def test_sufficiency_at_a_d_the_reference_lacks():
    smin = _smin(_cells("A", 16, {}))
    assert sufficiency(smin, "A", 16, 128) == "S_min = 128: S = 128 suffices"
    assert sufficiency(smin, "A", 8, 128) == "no reference at d = 8 (it has d = 16)"


@pytest.mark.parametrize("case, message", [
    ("nan", "X.npy: X holds 1 NaN or infinite value(s); expected finite numbers"),
    ("x2d", "X.npy: expected X of shape (S, N, d), got shape (4, 6)"),
    ("ybad", "Y.npy: expected Y of shape (S, N, e) = (3, 4, e) as X (3, 4, 6), got shape (3, 5, 2)"),
    ("vbad", "V.npy: expected V of shape (d, e) = (6, 2), got shape (2, 6)"),
    ("text", "X.npy: not a readable .npy array")])
def test_estimate_rank_refuses_bad_input_in_one_line_before_any_work(tmp_path, capsys, case,
                                                                     message):
    from attnrank.cli import main

    rng = np.random.default_rng(8)
    x, y, v = rng.standard_normal((3, 4, 6)), rng.standard_normal((3, 4, 2)), None
    if case == "nan":
        x[1, 2, 3] = np.nan
    elif case == "x2d":
        x = x[0]
    elif case == "ybad":
        y = rng.standard_normal((3, 5, 2))
    elif case == "vbad":
        v = rng.standard_normal((2, 6))
    xp, yp = _save(tmp_path, "X.npy", x), _save(tmp_path, "Y.npy", y)
    if case == "text":
        (tmp_path / "X.npy").write_text("not an array")
    argv = ["estimate-rank", xp, yp] + (["--values", _save(tmp_path, "V.npy", v)] if v is not None
                                        else [])
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


def test_load_arrays_keeps_good_input_as_float64(tmp_path):
    x = np.ones((2, 5, 3), np.float32)
    got = load_arrays(_save(tmp_path, "X.npy", x), _save(tmp_path, "Y.npy", x))
    assert got[0].dtype == np.float64 and got[2] is None


def test_the_world_job_uses_the_config_thresholds():
    job = open3_job()
    assert (job.noise_floor, job.rank_tolerance, job.seed_quorum) == (
        CONFIG["claims"]["noise_floor"], CONFIG["claims"]["rank_tolerance"],
        CONFIG["claims"]["seed_quorum"])
    assert set(open3_inputs()) == {"entropic_attention", "entropic_open3_attention",
                                   "entropic_predict", "entropic_predict_d32",
                                   "entropic_open3_predict", "entropic_open3_candidate"}
