"""The realized logit field (OPEN-4; attnrank.language.field): the row-centring against a
hand-computed case, k90 and R̃_eff of constructed fields of known rank, the mean field, residual
and prior share in closed form, training unchanged by the measures, the larger rung's jobs and
seeds, the claim's readings and the figure."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from claims_world import FIELD_RUNGS, language_field, language_ranks, params, world

from attnrank.claims import CHECKS
from attnrank.core.io import write_table
from attnrank.core.rank import energy_effective_rank
from attnrank.language.experiments.train import FIELD_COLUMNS, RANK_COLUMNS, run_job
from attnrank.language.field import (
    FieldAccumulator,
    centre_causal_rows,
    energy_count,
    field_measures,
    field_subset,
    measures_of,
    prior_share,
)
from attnrank.language.jobs import BASE_RUNG, RUNG, TRAIN, LanguageTrainJob, language_jobs
from attnrank.language.models import ByteTransformers
from attnrank.pipeline.plan import build_plan

ROOT = Path(__file__).resolve().parents[1]
CPU = torch.device("cpu")


def _config() -> dict:
    return yaml.safe_load((ROOT / "config.yaml").read_text())


def _orthonormal(n: int, k: int, seed: int) -> np.ndarray:
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((n, k)))
    return q


def _with_spectrum(s: list[float], n: int = 12, seed: int = 0) -> np.ndarray:
    """An n × n matrix whose singular values are ``s`` (then zeros)."""
    k = len(s)
    return _orthonormal(n, k, seed) @ np.diag(s) @ _orthonormal(n, k, seed + 1).T


# ---- the row-centring ---------------------------------------------------------------------------

def test_row_centring_against_a_hand_computed_causal_case():
    """Rows centred over the keys s ≤ t only; what lies above the diagonal (here 9s) never counts
    and comes out 0; row 0 (one allowed key) is 0."""
    s = torch.tensor([[1.0, 9.0, 9.0], [2.0, 4.0, 9.0], [3.0, 6.0, 9.0]], dtype=torch.float64)
    want = torch.tensor([[0.0, 0.0, 0.0], [-1.0, 1.0, 0.0], [-3.0, 0.0, 3.0]], dtype=torch.float64)
    assert torch.equal(centre_causal_rows(s), want)
    assert torch.equal(centre_causal_rows(s[None, None]), want[None, None])  # stacks too
    assert torch.equal(centre_causal_rows(want), want)  # idempotent


def test_a_row_shift_vanishes_and_only_the_allowed_keys_count():
    """Softmax ignores a constant per row: logits that depend on the query alone centre to 0."""
    g = torch.arange(6, dtype=torch.float64)[:, None].expand(6, 6)
    assert float(centre_causal_rows(g).abs().max()) == 0.0
    rng = torch.Generator().manual_seed(0)
    s = torch.randn(4, 6, 6, generator=rng, dtype=torch.float64)
    e = centre_causal_rows(s)
    allowed = torch.ones(6, 6, dtype=torch.bool).tril()
    assert float(e[..., ~allowed].abs().max()) == 0.0
    torch.testing.assert_close(e.sum(-1), torch.zeros(4, 6, dtype=torch.float64))
    with pytest.raises(ValueError, match="square"):
        centre_causal_rows(torch.zeros(3, 4))


def test_the_models_logits_are_what_its_softmax_sees():
    """The causal logits handed to ``on_logits`` are the scores whose masked softmax is the
    attention: softmax(S + mask) equals every layer's and head's attention matrix."""
    model = ByteTransformers(16, 2, 4, 12, [torch.Generator().manual_seed(k) for k in range(2)])
    x = torch.randint(0, 256, (2, 5, 13), generator=torch.Generator().manual_seed(1))
    got: list[torch.Tensor] = []
    loss, mixer = model.evaluate_windows(x, chunk=2, on_logits=lambda i, s: got.append(s))
    assert [g.shape for g in got] == [(2, 2, 2, 4, 12, 12)] * 2 + [(2, 1, 2, 4, 12, 12)]
    scores = torch.cat(got, dim=1)
    causal = torch.ones(12, 12, dtype=torch.bool).tril()
    att = torch.softmax(scores.masked_fill(~causal, -torch.inf), dim=-1)
    _, mats = model(x[..., :-1], mixers=True)
    torch.testing.assert_close(att, torch.stack(mats, dim=2))
    again_loss, again_mixer = model.evaluate_windows(x, chunk=2)
    assert torch.equal(loss, again_loss) and torch.equal(mixer, again_mixer)


# ---- k90 and R̃_eff of constructed fields of known rank ------------------------------------------

@pytest.mark.parametrize(("spectrum", "k90", "r_eff"), [
    ([1.0] * 10, 9, 10.0),  # flat: 9 of 10 components hold 90 % exactly
    ([1.0] * 4, 4, 4.0),  # flat: 3 of 4 hold 75 %
    ([1.0], 1, 1.0),
    ([0.5**0.5, 0.3**0.5, 0.15**0.5, 0.05**0.5], 3, 1.0 / (0.25 + 0.09 + 0.0225 + 0.0025)),
    ([3.0, 1.0], 1, 100.0 / 82.0),  # 9 / 10 of the energy in the first
])
def test_k90_and_r_eff_of_a_field_of_known_spectrum(spectrum, k90, r_eff):
    m = _with_spectrum(spectrum)
    got = measures_of(m)
    assert got["k90"] == k90 and got["r_eff"] == pytest.approx(r_eff)
    assert int(energy_count(np.asarray(spectrum))) == k90


def test_k90_is_zero_for_the_zero_field_and_medians_run_over_the_window_axis():
    assert measures_of(np.zeros((5, 5)))["k90"] == 0.0
    stack = np.stack([_with_spectrum([1.0] * k, seed=k) for k in (1, 2, 2, 5, 8)])[None]
    got = measures_of(stack, axis=1)
    assert got["k90"].tolist() == [2.0] and got["r_eff"].tolist() == pytest.approx([2.0])
    assert energy_count(np.zeros((3, 4))).tolist() == [0, 0, 0]


def _two_part_fields(a: np.ndarray, t: int = 8) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Centred causal fields Ẽ_w = P + a_w Q of known parts (T = 8): Q puts x_t, −x_t on keys 0, 1
    of rows 1–2, P puts y_t, −y_t on keys 2, 3 of rows 3–7 (rows and columns of the two disjoint,
    every row summing to 0): P and Q are orthogonal rank-1 fields."""
    p, q = np.zeros((t, t)), np.zeros((t, t))
    x, y = np.array([1.0, 2.0]), np.array([1.0, -1.0, 2.0, 0.5, 1.5])
    q[1:3, 0], q[1:3, 1] = x, -x
    p[3:, 2], p[3:, 3] = y, -y
    return p, q, a[:, None, None] * q + p


def test_mean_field_residual_and_prior_share_in_closed_form():
    """W windows of P + a_w Q through the accumulator (in two chunks, as the model hands them
    over): the mean field is P + ā Q, the residual (a_w − ā) Q has rank 1, the prior share is
    (‖P‖² + ā²‖Q‖²) / (‖P‖² + mean(a²)‖Q‖²); Ẽ_w has the two singular values √2‖y‖ and
    √2|a_w|‖x‖; the static kernels' ranks come alongside."""
    a = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 6.0])
    p, q, fields = _two_part_fields(a)
    assert np.allclose(centre_causal_rows(torch.from_numpy(fields)).numpy(), fields)
    acc = FieldAccumulator(len(a), field_subset(len(a), 3))  # windows 0, 2 (rounded 2.5), 5
    assert acc.subset == [0, 2, 5]
    scores = torch.from_numpy(fields)[None, :, None, None]  # (M=1, W, L=1, H=1, T, T)
    acc.add(0, scores[:, :4])
    acc.add(4, scores[:, 4:])
    kept, mean, energy = acc.fields()
    np.testing.assert_allclose(mean[0, 0, 0], p + a.mean() * q)
    pp, qq = (p * p).sum(), (q * q).sum()
    share = (pp + a.mean() ** 2 * qq) / (pp + (a**2).mean() * qq)
    np.testing.assert_allclose(prior_share(mean, energy), [[[share]]])
    static = np.stack([_with_spectrum([1.0] * 3, n=6)])[:, None, None]
    got = field_measures(kept, mean, energy, static)
    assert got[("residual_field", "k90")].item() == 1.0
    assert got[("residual_field", "r_eff")].item() == pytest.approx(1.0)
    assert got[("mean_field", "prior_share")].item() == pytest.approx(share)
    assert got[("static", "k90")].item() == 3.0
    # Ẽ of windows 0, 2, 5: singular values √2‖y‖ and √2 a_w ‖x‖ (a = 0, 2, 6)
    e1 = 2 * (np.array([1.0, -1.0, 2.0, 0.5, 1.5]) ** 2).sum()
    e2 = 2 * 5.0 * np.array([0.0, 2.0, 6.0]) ** 2
    r_eff = [float(energy_effective_rank(np.sqrt([u, v]))) for u, v in zip([e1] * 3, e2,
                                                                            strict=True)]
    k90 = [1 + int(min(u, v) / (u + v) > 0.1 - 1e-12) for u, v in zip([e1] * 3, e2, strict=True)]
    assert got[("logit_field", "r_eff")].item() == pytest.approx(np.median(r_eff))
    assert got[("logit_field", "k90")].item() == np.median(k90)


def test_the_accumulator_refuses_a_pass_that_missed_windows():
    acc = FieldAccumulator(4, field_subset(4, 2))
    acc.add(0, torch.zeros(1, 2, 1, 1, 3, 3))
    with pytest.raises(ValueError, match="saw 2 of 4 windows"):
        acc.fields()
    with pytest.raises(ValueError, match="need 0 < count ≤ 4"):
        field_subset(4, 5)


# ---- training is the same with and without the measures --------------------------------------

def _smoke_job(rung: str = BASE_RUNG, corpus: str = "prose") -> LanguageTrainJob:
    jobs = language_jobs(_config(), "smoke")
    key = (TRAIN, corpus) if rung == BASE_RUNG else (RUNG, f"{rung}/{corpus}")
    return jobs[key]


@pytest.fixture(scope="module")
def smoke_pair():
    """One smoke language job run with its field windows and again with none."""
    job = _smoke_job()
    return job, run_job(job, CPU), run_job(dataclasses.replace(job, field_windows=0), CPU)


def test_a_smoke_job_trains_the_same_bytes_with_and_without_the_field(smoke_pair, tmp_path):
    job, (ranks, loss, field, weights), (ranks0, loss0, field0, weights0) = smoke_pair
    assert job.field_windows > 0 and len(field) > 0 and field0.empty
    for name, a, b in (("ranks", ranks, ranks0), ("loss", loss, loss0)):
        pa = write_table(a, tmp_path / f"{name}_with.parquet")
        pb = write_table(b, tmp_path / f"{name}_without.parquet")
        assert pa.read_bytes() == pb.read_bytes(), name
    assert sorted(weights) == sorted(weights0)
    for name, w in weights.items():
        assert w.tobytes() == weights0[name].tobytes(), name
    assert list(field0.columns) == list(FIELD_COLUMNS)


def test_the_field_table_has_every_measure_at_every_logged_step(smoke_pair):
    job, (ranks, loss, field, _), _ = smoke_pair
    assert list(field.columns) == list(FIELD_COLUMNS) and list(ranks.columns) == list(RANK_COLUMNS)
    steps = list(job.logged_steps())
    assert sorted(field["step"].unique()) == steps == sorted(loss["step"].unique())
    combos = set(map(tuple, field[["matrix", "estimator"]].drop_duplicates().to_numpy()))
    assert combos == {(m, e) for m in ("logit_field", "residual_field", "mean_field", "static")
                      for e in ("k90", "r_eff")} | {("mean_field", "prior_share")}
    per = field.groupby(["seed", "step", "matrix", "estimator"]).size()
    assert (per == job.n_layers * job.n_heads).all()
    share = field[field["estimator"] == "prior_share"]["value"]
    assert share.between(0, 1).all()
    d_head = job.d_model // job.n_heads
    static = field[(field["matrix"] == "static") & (field["estimator"] == "k90")]["value"]
    assert static.between(1, d_head).all()
    assert (field["rung"] == BASE_RUNG).all() and (loss["rung"] == BASE_RUNG).all()
    assert field[["field_windows", "mixer_inputs"]].iloc[0].tolist() == [job.field_windows,
                                                                         job.mixer_inputs]
    # the static rows repeat the ranks table's R̃_eff of W_Q W_Kᵀ
    a = field[(field["matrix"] == "static") & (field["estimator"] == "r_eff")]["value"].to_numpy()
    b = ranks[(ranks["matrix"] == "static") & (ranks["estimator"] == "r_eff")]["value"].to_numpy()
    np.testing.assert_allclose(a, b, rtol=1e-12)


# ---- the larger rung ---------------------------------------------------------------------------

def test_rung_jobs_change_their_keys_and_name_their_seeds_apart():
    config = _config()
    for scale in ("smoke", "full"):
        g = config["language"]["scales"][scale]
        jobs = language_jobs(config, scale)
        for rung, over in g["rungs"].items():
            for corpus in g["corpora"]:
                job = jobs[(RUNG, f"{rung}/{corpus}")]
                base = jobs[(TRAIN, corpus)]
                assert job.rung == rung and base.rung == BASE_RUNG
                for k in ("seeds", "d_model", "n_layers", "n_heads", "context", "steps"):
                    assert getattr(job, k) == over.get(k, getattr(base, k)), k
        plan = build_plan(config, scale)
        base_runs = [f"language/train/{c}" for c in g["corpora"]]
        rung_runs = [f"language/rungs/{r}/{c}" for r in g["rungs"] for c in g["corpora"]]
        for table, out, runs in (("language_ranks", "ranks", base_runs),
                                 ("language_loss", "loss", base_runs),
                                 ("language_field", "field", base_runs + rung_runs),
                                 ("language_field_loss", "loss", base_runs + rung_runs)):
            assert plan.run_for(f"tables/{table}.parquet").inputs == tuple(
                f"{r}/{out}.parquet" for r in runs), table
    # the same shape under another rung name: other initial weights and batches
    job = _smoke_job()
    tiny = dict(steps=2, log_every=1, early_log_until=0, field_windows=0)
    base = run_job(dataclasses.replace(job, **tiny), CPU)[3]
    other = run_job(dataclasses.replace(job, rung="elsewhere", **tiny), CPU)[3]
    assert not np.array_equal(base["embed"], other["embed"])


def test_bad_rungs_and_field_windows_are_refused_naming_the_key():
    config = copy.deepcopy(_config())
    config["language"]["scales"]["smoke"]["rungs"]["larger"]["n_heads"] = 5
    with pytest.raises(ValueError, match=r"language\.scales\.smoke\.rungs\.larger\.d_model"):
        language_jobs(config, "smoke")
    config = copy.deepcopy(_config())
    config["language"]["scales"]["smoke"]["field_windows"] = 999
    with pytest.raises(ValueError, match=r"language\.scales\.smoke\.field_windows"):
        language_jobs(config, "smoke")
    config = copy.deepcopy(_config())
    config["language"]["scales"]["smoke"]["rungs"]["base"] = {"steps": 10}
    with pytest.raises(ValueError, match=r"language\.scales\.smoke\.rungs: 'base'"):
        language_jobs(config, "smoke")
    with pytest.raises(ValueError, match="field_windows: must be in 0"):
        dataclasses.replace(_smoke_job(), field_windows=10_000)


# ---- OPEN-4 and the earlier seeds of EB-15 / EB-16 ---------------------------------------------

def _open4(field: pd.DataFrame | None = None):
    t = world()
    if field is not None:
        t["language_field"] = field
    return CHECKS["OPEN-4"].check(t, params())


def test_open4_reads_the_gap_rung_by_rung():
    passed, measured, threshold, note, *_ = _open4()
    assert passed is None
    base, larger, anchor = measured.split(" | ")
    assert base.startswith("base rung (d = 16, 1 layer × 2 heads, d_h = 8")
    assert larger.startswith("larger rung (d = 64, 2 layers × 1 head, d_h = 64")
    assert "lie above W_Q W_Kᵀ's" in base and "lie below W_Q W_Kᵀ's" in larger
    assert "2–11 below W_Q W_Kᵀ 38–75 of d_h = 64/128" in anchor
    assert FIELD_RUNGS["larger"][1] == 30.0  # the world's static k90 at the larger rung


def test_open4_says_whether_removing_the_prior_makes_a_rank_follow_complexity():
    measured = _open4()[1]
    assert "with the prior removed, no rank follows complexity" in measured
    assert "runs against complexity" in measured
    rising = _open4(language_field(residual_sign=1.0))[1]
    assert "with the prior removed, its k90 and R̃_eff follow complexity" in rising
    few = _open4(language_field().query("corpus in ['prose', 'templated']"))[1]
    assert "not judged (2 corpora, fewer than EB-15's min_corpora = 4)" in few


def test_open4_reports_every_measure_over_training_and_against_the_loss():
    note = _open4()[3]
    for label in ("k90 of Ẽ", "R̃_eff of residual Ẽ − mean", "k90 of W_Q W_Kᵀ", "prior share"):
        assert f"{label}: final" in note
    assert "over the 6 logged steps" in note and "tracks the loss" in note


def test_eb15_and_eb16_read_the_first_seeds_beside_the_headline(monkeypatch):
    """With 10 seeds a corpus, EB-15 and EB-16 also report the first 3 seeds' reading, which is
    the claim on a table of those seeds alone; with 3 seeds nothing is added."""
    import claims_world

    assert "first 3 seeds" not in CHECKS["EB-15"].check(world(), params())[1]
    monkeypatch.setattr(claims_world, "LANGUAGE_SEEDS", 10)
    t = world()
    t.update(language_ranks=language_ranks(), language_loss=claims_world.language_loss())
    got15, got16 = (CHECKS[c].check(t, params())[1] for c in ("EB-15", "EB-16"))
    first = {k: v[v["seed"] < 3] if k in ("language_ranks", "language_loss") else v
             for k, v in t.items()}
    head15, head16 = (CHECKS[c].check(first, params())[1] for c in ("EB-15", "EB-16"))
    label = "first 3 seeds a corpus (the earlier design; reported, not judged): "
    assert label + head15.split(" (")[0] in got15
    assert label + "median |ρ| " + head16.split("median |ρ(static R̃_eff, train loss)| ")[1]\
        .split(" over")[0] in got16


# ---- the figure --------------------------------------------------------------------------------

def test_the_figure_draws_a_row_per_rung_with_every_corpus(tmp_path):
    from attnrank.core.figures import draw

    path = write_table(language_field(), tmp_path / "language_field.parquet")
    p = {"scale": "full", "anchor_field_k90": [2, 11], "anchor_static_k90": [38, 75]}
    pdf = tmp_path / "f.pdf"
    draw("language_realized_field", [path], pdf, p)
    first = pdf.with_suffix(".png").read_bytes()
    draw("language_realized_field", [path], pdf, p)
    assert pdf.with_suffix(".png").read_bytes() == first  # byte-identical reruns
    from attnrank.language.figures.language_realized_field import plot

    fig = plot({"language_field": language_field()}, p)
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert len(panels) == 4 * len(FIELD_RUNGS)
    assert [ax.get_title() for ax in panels[:4]] == [
        "k90 of Ẽ", "k90 of residual Ẽ − mean", "k90 of W_Q W_Kᵀ (of d_h = 8)",
        "prior share (mean field's share of Ẽ's energy)"]
    assert all(len(ax.get_lines()) == 4 for ax in panels)  # one line per corpus
