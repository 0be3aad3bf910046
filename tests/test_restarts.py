"""The restart (trap) study: same init and data stream as the training job (the recipe reproduces
the job's final metrics exactly on CPU), the lr factor is Adam at lr × factor, the config's
cross-key checks, the summary and the sentence the claims add, on synthetic tables."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import pandas as pd
import pytest
import torch

from attnrank.minip.claims import tt3, tt4, tt5
from attnrank.minip.experiments.restarts import run_restarts
from attnrank.minip.experiments.train import run_job
from attnrank.minip.jobs import MinipRestartsJob, RestartVariant, minip_jobs
from attnrank.minip.restarts import claim_sentences, restart_sentence, restart_summary
from attnrank.publish.audit import load_config

CPU = torch.device("cpu")
STEPS = 40  # short runs: the identities hold at any length
METRICS = ("train_loss", "test_mse", "test_sequence_accuracy", "test_worst_case_error")


@pytest.fixture(scope="module")
def config() -> dict:
    return load_config(Path(__file__).resolve().parents[1] / "config.yaml")


def _case(config: dict, experiment: str, instance: str, model: str,
          variants: tuple[RestartVariant, ...] = ()) -> MinipRestartsJob:
    """A smoke-scale restart job of (experiment, instance, model), cut to STEPS steps."""
    c = copy.deepcopy(config)
    c["minip"]["scales"]["smoke"]["restarts"]["cases"] = [
        {"name": "probe", "experiment": experiment, "instance": instance, "model": model}]
    job = minip_jobs(c, "smoke")[("restarts", "probe")]
    job = dataclasses.replace(job, train=dataclasses.replace(job.train, steps=STEPS),
                              log_every=STEPS // 2)
    return dataclasses.replace(job, variants=job.variants[:1] + variants) if variants else job


def _rows(df: pd.DataFrame, model: str) -> pd.DataFrame:
    """The training job's final rows of ``model`` (dense or r<rank>), by seed."""
    sel = df["model"] == "dense" if model == "dense" else df["rank"] == int(model[1:])
    return df[df["final"] & sel].set_index("seed")


@pytest.mark.parametrize("experiment,instance,model", [
    ("rank_vs_m", "m8", "dense"), ("ood", "medium", "dense"), ("witness", "table", "r4")])
def test_the_recipe_reproduces_the_training_jobs_final_metrics(config, experiment, instance,
                                                               model):
    """The original variant of seed 0 (and every seed) ends exactly where the training job's
    model does: same init, same batches, and on CPU the grouping (other ranks in the job, another
    seed count) leaves the arithmetic bit-identical."""
    job = _case(config, experiment, instance, model, (RestartVariant("lr_half", 0.5, 1),))
    restarts = run_restarts(job, CPU)
    original, _ = run_job(job.train, CPU)
    ref = _rows(original, model)
    got = restarts[restarts["final"] & (restarts["variant"] == "original")].set_index("seed")
    assert list(got.index) == list(ref.index) == [0, 1]
    for col in METRICS:
        assert got.loc[0, col] == ref.loc[0, col], col  # exact, seed 0
        assert (got[col] == ref[col]).all(), col


def test_lr_factor_is_adam_at_the_scaled_lr_and_more_steps_continue_the_stream(config):
    """lr_half trained beside the recipe equals the training job run alone at lr / 2 (to float
    rounding); steps × 2 equals the job run at twice the steps (exactly: same init, same stream)."""
    job = _case(config, "rank_vs_m", "m8", "dense", (RestartVariant("lr_half", 0.5, 1),
                                                    RestartVariant("steps_double", 1.0, 2)))
    restarts = run_restarts(job, CPU)
    fin = restarts[restarts["final"]].set_index(["variant", "seed"])
    train = dataclasses.replace(job.train, ranks=(), dense=True)
    half = _rows(run_job(dataclasses.replace(train, lr=train.lr / 2), CPU)[0], "dense")
    double = _rows(run_job(dataclasses.replace(train, steps=2 * STEPS), CPU)[0], "dense")
    for seed in (0, 1):
        for col in ("train_loss", "test_mse"):
            assert fin.loc[("lr_half", seed), col] == pytest.approx(half.loc[seed, col], rel=1e-4)
            assert fin.loc[("steps_double", seed), col] == double.loc[seed, col]
        # and the lr factor changed the run (the check is not vacuous)
        assert fin.loc[("lr_half", seed), "test_mse"] != fin.loc[("original", seed), "test_mse"]
    assert set(restarts.loc[restarts["variant"] == "steps_double", "steps_total"]) == {2 * STEPS}


@pytest.mark.parametrize("edit,key", [
    (lambda r: r["cases"][0].update(instance="m99"), "restarts.cases[0].instance"),
    (lambda r: r["cases"][0].update(model="r64"), "restarts.cases[0].model"),
    (lambda r: r["cases"][0].update(experiment="length_sweep", instance="N3"),
     "restarts.cases[0].experiment"),
    (lambda r: r["cases"].append(dict(r["cases"][0])), "restarts.cases"),
    (lambda r: r["variants"].append({"name": "original", "lr_factor": 0.1, "step_factor": 1}),
     "restarts.variants"),
    (lambda r: r["variants"].append({"name": "same", "lr_factor": 1, "step_factor": 1}),
     "restarts.variants[2]"),
])
def test_bad_cases_are_refused_naming_the_key(config, edit, key):
    c = copy.deepcopy(config)
    edit(c["minip"]["scales"]["smoke"]["restarts"])
    with pytest.raises(ValueError, match=key.replace("[", r"\[").replace("]", r"\]")):
        minip_jobs(c, "smoke")


def test_full_scale_cases_and_criteria_come_from_the_config(config):
    jobs = {k[1]: j for k, j in minip_jobs(config, "full").items() if k[0] == "restarts"}
    assert set(jobs) == {"tt3_dense_m16", "tt5_dense_medium", "tt4_table_r32"}
    tt4_job = jobs["tt4_table_r32"]
    assert (tt4_job.criterion.claim, tt4_job.criterion.metric, tt4_job.criterion.rule) == \
        ("TT-4", "test_worst_case_error", "below")
    assert tt4_job.criterion.threshold == config["claims"]["worst_case_cutoff"]
    assert jobs["tt3_dense_m16"].criterion.threshold == config["claims"]["exact_accuracy"]
    assert [v.name for v in tt4_job.variants] == ["original", "lr_half", "steps_double"]
    assert all(j.seeds == 5 for j in jobs.values())


# ---- the summary and the claims' sentence, on synthetic tables ---------------------------------

def _table(final: dict[tuple[str, int], float], rule: str = "at_least", thr: float = 0.999,
           metric: str = "test_sequence_accuracy", experiment: str = "rank_vs_m",
           model: str = "dense") -> pd.DataFrame:
    """Final rows of one case: (variant, seed) → the criterion metric."""
    factors = {"original": (1.0, 1), "lr_half": (0.5, 1), "steps_double": (1.0, 2)}
    rows = [{"case": "c", "experiment": experiment, "instance": "i", "model": model,
             "claim": "TT-x", "criterion_metric": metric, "criterion_rule": rule,
             "criterion_threshold": thr, "variant": v, "lr_factor": factors[v][0],
             "step_factor": factors[v][1], "seed": s, "step": 10 * factors[v][1], "final": True,
             "train_loss": 0.1, "test_sequence_accuracy": 0.5, "test_worst_case_error": 0.5,
             metric: x} for (v, s), x in final.items()]
    return pd.DataFrame(rows)


def _grid(original: list[float], half: list[float], double: list[float]) -> dict:
    out = {}
    for v, xs in (("original", original), ("lr_half", half), ("steps_double", double)):
        out |= {(v, s): x for s, x in enumerate(xs)}
    return out


def test_summary_counts_failing_and_recovered_seeds():
    s = restart_summary(_table(_grid([1, 0.3, 1, 0.5, 1], [1, 0.2, 1, 1, 1], [1, 1, 0.9, 1, 1])))
    s = s.set_index("variant")
    assert s.loc["original", "passing"] == 3 and s.loc["original", "failing_original"] == "1,3"
    assert s.loc["lr_half", "recovered"] == "3" and s.loc["lr_half", "n_recovered"] == 1
    assert s.loc["steps_double", "recovered"] == "1,3" and s.loc["steps_double", "passing"] == 4
    assert s.loc["lr_half", "failing_metric"] == "1:0.2,3:1"


@pytest.mark.parametrize("grid,verdict,counts", [
    (_grid([0.3, 1, 1, 1, 1], [1, 1, 1, 1, 1], [0.4, 1, 1, 1, 1]), "optimization trap",
     ("1/5", "lr×0.5 recovers 1/1", "2× steps recovers 0/1")),
    (_grid([0.3, 1, 1, 1, 1], [0.2, 1, 1, 1, 1], [0.45, 1, 1, 1, 1]), "persistent",
     ("1/5", "lr×0.5 recovers 0/1", "2× steps recovers 0/1")),
    (_grid([0.3, 0.3, 1, 1, 1], [0.2, 1, 1, 1, 1], [0.4, 1, 1, 1, 1]), "partly a trap",
     ("2/5", "lr×0.5 recovers 1/2", "2× steps recovers 1/2")),
    (_grid([1] * 5, [0.2] * 5, [1] * 5), "no failing seed", ("0/5",)),
])
def test_sentence_names_counts_and_the_verdict(grid, verdict, counts):
    text = restart_sentence(restart_summary(_table(grid)))
    assert text.startswith("5-seed restarts of dense (rank_vs_m i): fails on ")
    assert text.split(" → ")[1].startswith(verdict)
    for c in counts:
        assert c in text


def test_worst_case_criterion_is_below_the_cutoff():
    """TT-4's criterion: worst-case error < cut-off; exactly at it fails."""
    t = _table(_grid([0.1, 0.5, 0.7, 0.1, 0.1], [0.1, 0.49, 0.7, 0.1, 0.1], [0.1] * 5),
               rule="below", thr=0.5, metric="test_worst_case_error", experiment="witness",
               model="r32")
    s = restart_summary(t).set_index("variant")
    assert s.loc["original", "failing_original"] == "1,2"
    assert s.loc["lr_half", "recovered"] == "1"
    assert claim_sentences(restart_summary(t), "witness").endswith(
        "test_worst_case_error of the failing seeds, seed:value — recipe 1:0.5,2:0.7; lr×0.5 "
        "1:0.49,2:0.7; 2× steps 1:0.1,2:0.1)")
    assert claim_sentences(restart_summary(t), "ood") == ""


def test_claims_add_the_sentence_and_keep_their_verdicts():
    """TT-3, TT-4 and TT-5 on the shared world: verdicts as without the study; each note carries
    its own case's sentence (and only its own)."""
    from claims_world import params, world

    tables, p = world(), params()
    for check, case in ((tt3, "rank_vs_m m16"), (tt4, "witness table"), (tt5, "ood medium")):
        out = check(tables, p)
        assert out.passed
        assert f"5-seed restarts of {'r32' if check is tt4 else 'dense'} ({case})" in out.note
        assert out.note.count("-seed restarts") == 1
        assert "→ persistent" in out.note
    empty = tables | {"minip_restarts_summary": tables["minip_restarts_summary"].iloc[:0]}
    assert "restarts" not in tt3(empty, p).note and tt3(empty, p).passed


def _curves(case: str, rule: str, thr: float, metric: str, good: float, bad: float
            ) -> pd.DataFrame:
    """One case's logged rows: seed 0 fails under the recipe and under 2× steps, lr/2 recovers it;
    the loss falls as 1/step over steps 5, 10, … up to each variant's end."""
    final = _table(_grid([bad] + [good] * 4, [good] * 5, [bad] + [good] * 4), rule=rule, thr=thr,
                   metric=metric).assign(case=case)
    early = [final.assign(step=step, final=False) for step in (5, 10, 15)]
    rows = pd.concat([*early, final], ignore_index=True)
    rows = rows[rows["final"] | (rows["step"] < rows["step_factor"] * 10)]
    return rows.assign(train_loss=1.0 / rows["step"])


def test_figure_draws_every_seed_of_every_variant_and_marks_the_failing_ones():
    from attnrank.minip.figures.minip_restarts import plot

    df = pd.concat([_curves("a", "at_least", 0.999, "test_sequence_accuracy", 1.0, 0.3),
                    _curves("b", "below", 0.5, "test_worst_case_error", 0.1, 0.9)])
    fig = plot({"minip_restarts": df}, {})
    panels = [ax for ax in fig.axes if ax.get_xlabel()]
    assert len(panels) == 2
    for ax in panels:
        curves = [ln for ln in ax.lines if len(ln.get_xdata()) > 0]
        assert len(curves) == 3 * 5  # every (variant, seed)
        dashed = [ln for ln in curves if ln.get_linestyle() == "--"]
        assert len(dashed) == 2  # seed 0 under the recipe and under 2× steps
        assert [t.get_text() for t in ax.texts] == ["s0", "s0"]
        assert all(float(lb.get_text()) > 0 for lb in ax.get_yticklabels() if lb.get_text())
        assert all(lb.get_text().replace(",", "").isdigit()
                   for lb in ax.get_xticklabels() if lb.get_text())


def test_the_tables_and_the_jobs_name_the_recipe_alike():
    from attnrank.minip import jobs, restarts

    assert restarts.ORIGINAL == jobs.ORIGINAL
