"""Appendix B: Spearman ρ and its seed bootstrap (attnrank.language.correlation), the points of the
language tables (attnrank.language.points), and EB-15 / EB-16 on the synthetic language tables of
``claims_world``, each verdict both ways (the pass/fail/not-run cases of every claim are also in
test_claims_verdicts.py)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from claims_world import (
    FINAL_STATIC,
    LANGUAGE_SEEDS,
    LANGUAGE_STEPS,
    language_corpora,
    language_loss,
    language_ranks,
    params,
    world,
)
from test_claims_verdicts import RISING, SCRAMBLED, TWO_SWAPS

from attnrank.claims import CHECKS, NotRun
from attnrank.core.seeding import numpy_rng
from attnrank.language.correlation import average_ranks, correlation, grouped_bootstrap, spearman
from attnrank.language.points import HEADLINE, Measure, complexity_points, final, measures

LR = "language_ranks"


def outcome(cid: str, claims: dict | None = None, **tables):
    t = world()
    t.update(tables)
    return CHECKS[cid].check(t, params(claims))


def with_claims(**changes) -> dict:
    """The config's claims block with ``EB-15``/``EB-16`` sub-blocks updated."""
    from claims_world import CONFIG

    block = {k: (dict(v) if isinstance(v, dict) else v) for k, v in CONFIG["claims"].items()}
    for cid, values in changes.items():
        block[cid.replace("_", "-")].update(values)
    return block


# ---- Spearman ρ and its bootstrap --------------------------------------------------------------

def test_average_ranks_give_ties_their_mean_rank():
    assert average_ranks(np.array([3.0, 1.0, 3.0, 2.0])).tolist() == [3.5, 1.0, 3.5, 2.0]
    v = np.random.default_rng(0).integers(0, 4, size=(5, 9)).astype(float)
    want = pd.DataFrame(v.T).rank(method="average").to_numpy().T
    assert np.array_equal(average_ranks(v), want)


def test_spearman_is_pearson_of_average_ranks():
    rng = np.random.default_rng(1)
    x, y = rng.integers(0, 5, 20).astype(float), rng.normal(size=20)
    want = np.corrcoef(pd.Series(x).rank(), pd.Series(y).rank())[0, 1]
    assert float(spearman(x, y)) == pytest.approx(want, abs=1e-12)
    assert float(spearman(x, np.exp(x))) == pytest.approx(1.0)
    assert float(spearman(x, -x)) == pytest.approx(-1.0)
    assert np.isnan(spearman(x, np.ones(20)))  # a constant side: undefined
    batch = spearman(np.stack([x, x]), np.stack([y, -y]))
    assert batch.shape == (2,) and batch[0] == pytest.approx(-batch[1])


def test_the_bootstrap_resamples_seeds_within_groups_only():
    """With one y per group (seeds identical), every resample is the original points: the
    interval collapses on ρ. With seed noise it does not."""
    groups = np.repeat(np.arange(4), 3)
    x = groups.astype(float)
    y = np.repeat([2.0, 1.0, 4.0, 3.0], 3)
    c = correlation(x, y, groups, 500, 0.9, numpy_rng("test", "boot"))
    assert c.lo == c.hi == pytest.approx(c.rho) and c.groups == 4 and c.points == 12
    noisy = y + np.tile([-1.5, 0.0, 1.5], 4)
    c = correlation(x, noisy, groups, 500, 0.9, numpy_rng("test", "boot"))
    assert c.lo < c.rho < c.hi


def test_the_bootstrap_is_byte_deterministic_in_and_across_processes():
    groups = np.repeat(np.arange(5), 3)
    x = groups * 0.7
    y = np.sin(np.arange(15.0))
    a = grouped_bootstrap(x, y, groups, 2000, numpy_rng("language", "EB-15", "bootstrap"))
    b = grouped_bootstrap(x, y, groups, 2000, numpy_rng("language", "EB-15", "bootstrap"))
    assert a.tobytes() == b.tobytes()
    code = ("import numpy as np, hashlib\n"
            "from attnrank.language.correlation import correlation\n"
            "g = np.repeat(np.arange(5), 3)\n"
            "c = correlation(g * 0.7, np.sin(np.arange(15.0)), g, 2000, 0.9)\n"
            "print(repr((c.rho, c.lo, c.hi)))")
    runs = {subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                           text=True).stdout for _ in range(2)}
    here = correlation(x, y, groups, 2000, 0.9)
    assert runs == {repr((here.rho, here.lo, here.hi)) + "\n"}


def test_bad_bootstrap_settings_are_refused():
    g = np.arange(4)
    with pytest.raises(ValueError, match="bootstrap samples must be ≥ 1"):
        correlation(g, g, g, 0, 0.9)
    with pytest.raises(ValueError, match="interval level"):
        correlation(g, g, g, 10, 1.5)


# ---- the points --------------------------------------------------------------------------------

def test_points_average_layers_and_heads_at_the_last_step():
    pts = final(language_ranks())
    assert len(pts) == len(FINAL_STATIC) * LANGUAGE_SEEDS and set(pts["step"]) == {500}
    row = pts[(pts["corpus"] == "prose") & (pts["seed"] == 1)]
    assert float(row["value"].iloc[0]) == pytest.approx(8.0 + 0.6 + 0.025)  # heads 0, 0.05
    joined = complexity_points(language_ranks(), language_corpora())
    assert joined.groupby("corpus")["complexity"].first().to_dict()["code"] == 2.5
    with pytest.raises(ValueError, match=r"no complexity for the corpora \['code'\]"):
        complexity_points(language_ranks(), language_corpora({"prose": 1.0, "templated": 2.0,
                                                              "prose_chars_shuffled": 3.0}))


def test_measures_list_the_headline_first_then_every_estimator_and_tau():
    labels = [m.label for m in measures(language_ranks())]
    assert labels[0] == HEADLINE.label == "static R̃_eff"
    assert labels[:5] == ["static R̃_eff", "static entropy rank", "static stable rank",
                          "static numerical rank τ=0.01", "static numerical rank τ=0.05"]
    assert labels[5:] == [lab.replace("static", "realized") for lab in labels[:5]]
    assert Measure("realized", "numerical", 0.05).label == "realized numerical rank τ=0.05"


# ---- EB-15 -------------------------------------------------------------------------------------

def test_eb15_passes_without_a_positive_correlation_and_reports_every_measure():
    out = outcome("EB-15")
    assert out.passed
    assert "12 points, 4 corpora; x = lzma_bits_per_byte" in out.measured
    assert "templated: 0.5 / 6.625" in out.measured  # complexity / median final rank
    assert out.sweep.startswith("static R̃_eff (headline): pass; static entropy rank: pass")
    assert out.sweep.count(": pass") == 10


def test_eb15_passes_a_positive_rho_whose_interval_reaches_zero():
    weak = {"templated": 6.0, "prose": 6.2, "code": 6.4, "prose_chars_shuffled": 6.6}
    out = outcome("EB-15", language_ranks=language_ranks(weak))
    rho = float(out.measured.split("ρ = ")[1].split(",")[0])
    lo = float(out.measured.split("interval [")[1].split(",")[0])
    assert rho > 0 and lo <= 0 and out.passed


def test_eb15_fails_when_rank_rises_with_complexity():
    out = outcome("EB-15", language_ranks=language_ranks(RISING))
    lo = float(out.measured.split("interval [")[1].split(",")[0])
    assert not out.passed and lo > 0


def test_eb15_sweep_shows_a_measure_that_disagrees_with_the_headline():
    """The realized mixer's rank rising with complexity: its verdict fails beside the headline's."""
    t = language_ranks()
    rise = t["corpus"].map({"templated": 1.0, "prose": 2.0, "code": 3.0,
                            "prose_chars_shuffled": 4.0})
    t.loc[t["matrix"] == "realized", "value"] += 10 * rise[t["matrix"] == "realized"]
    out = outcome("EB-15", language_ranks=t)
    assert out.passed
    assert "realized R̃_eff: fail" in out.sweep and "static R̃_eff (headline): pass" in out.sweep


def test_eb15_note_lists_the_realized_medians_in_complexity_order_where_rho_hides_them():
    """A rise over three corpora and a collapse on the most complex one: ρ of the realized mixer
    is near 0, and the note shows the rise and the fall."""
    t = language_ranks()
    level = t["corpus"].map({"templated": 5.0, "prose": 10.0, "code": 15.0,
                             "prose_chars_shuffled": 0.0})  # complexities 0.5 < 1 < 2.5 < 4
    realized = t["matrix"] == "realized"
    t.loc[realized, "value"] = level[realized]
    out = outcome("EB-15", language_ranks=t)
    note = out.note.split("realized R̃_eff (ρ = ")[1]
    assert abs(float(note.split(",")[0])) < 0.5  # small: it alone would hide the shape
    assert note.split("order of complexity: ")[1] == (
        "templated 5 < prose 10 < code 15 > prose_chars_shuffled 0")


def test_eb15_is_not_run_below_min_corpora_and_runs_when_it_is_lowered():
    two = language_ranks({c: FINAL_STATIC[c] for c in ("prose", "templated")})
    with pytest.raises(NotRun, match=r"2 corpora \(prose, templated\), fewer than min_corpora = 4; "
                                     r"for information: ρ = "):
        outcome("EB-15", language_ranks=two)
    out = outcome("EB-15", with_claims(EB_15={"min_corpora": 2}), language_ranks=two)
    assert "2 corpora" in out.measured and "≥ 2 corpora" in out.threshold
    assert "at least 2 corpora" in CHECKS["EB-15"].statement(params(with_claims(
        EB_15={"min_corpora": 2})))


def test_eb15_statement_and_interval_follow_the_config():
    claims = with_claims(EB_15={"interval_level": 0.5, "bootstrap_samples": 300})
    assert "50% bootstrap interval (300 resamples" in CHECKS["EB-15"].statement(params(claims))
    wide, narrow = outcome("EB-15"), outcome("EB-15", claims)

    def width(o):
        lo, hi = o.measured.split("interval [")[1].split("]")[0].split(", ")
        return float(hi) - float(lo)
    assert width(narrow) < width(wide) and "resamples: 300" in narrow.note


def test_eb15_is_not_run_when_a_corpus_lacks_its_complexity():
    with pytest.raises(NotRun, match="no complexity for the corpora"):
        outcome("EB-15", language_corpora=language_corpora({"prose": 1.0}))


# ---- EB-16 -------------------------------------------------------------------------------------

def test_eb16_passes_when_rank_tracks_loss_and_reports_sign_and_corpora():
    out = outcome("EB-16")
    assert out.passed
    assert "median |ρ(static R̃_eff, train loss)| 1 over 12 runs" in out.measured
    assert "ρ < 0 (rank rises as loss falls) on 0/12 runs" in out.measured  # rank falls with loss
    assert "median ρ by corpus: code: 1, prose: 1, prose_chars_shuffled: 1, templated: 1" \
        in out.measured
    assert "realized R̃_eff: fail" in out.sweep  # the mixer's rank does not move


def test_eb16_judges_the_magnitude_whatever_the_sign():
    """Rank rising as the loss falls (final above the start) tracks the loss just as well."""
    up = {c: 20.0 + v for c, v in FINAL_STATIC.items()}
    out = outcome("EB-16", language_ranks=language_ranks(up))
    assert out.passed and "ρ < 0 (rank rises as loss falls) on 12/12 runs" in out.measured


def test_eb16_fails_when_rank_does_not_track_loss():
    out = outcome("EB-16", language_ranks=language_ranks(path=SCRAMBLED))
    assert not out.passed and "median |ρ(static R̃_eff, train loss)| 0.1429" in out.measured


def test_eb16_fails_when_complexity_correlates_more_than_loss():
    ranks = language_ranks(RISING, path=TWO_SWAPS)
    out = outcome("EB-16", language_ranks=ranks)
    med = float(out.measured.split("| ")[1].split(" over")[0])
    rho15 = float(out.measured.split("|ρ| of EB-15 ")[1].split(";")[0])
    assert med >= 0.6 and rho15 > med and not out.passed  # the second condition alone fails it


def test_eb16_threshold_follows_the_config():
    scrambled = language_ranks(path=SCRAMBLED)
    assert outcome("EB-16", with_claims(EB_16={"min_abs_rho": 0.1}),
                   language_ranks=scrambled).passed
    assert "≥ 0.1 and exceeds" in CHECKS["EB-16"].statement(params(with_claims(
        EB_16={"min_abs_rho": 0.1})))


def test_eb16_is_not_run_below_min_corpora_or_with_two_logged_steps():
    two = language_ranks({c: FINAL_STATIC[c] for c in ("prose", "templated")})
    with pytest.raises(NotRun, match=r"fewer than EB-15's min_corpora = 4; for information: "
                                     r"median \|ρ"):
        outcome("EB-16", language_ranks=two)
    short = world()[LR]
    short = short[short["step"].isin([0, 500])]
    with pytest.raises(NotRun, match="12 runs have fewer than three logged steps"):
        outcome("EB-16", language_ranks=short)


def test_eb16_uses_only_steps_logged_in_both_tables():
    loss = language_loss()
    loss = loss[loss["step"] != 300]
    assert outcome("EB-16", language_loss=loss).passed


# ---- EB-16 against the validation loss (reported, registered in docs/methods.md) -------------

VAL_ENTRY = "static R̃_eff against the validation loss (reported, registered in docs/methods.md)"


def _val_loss_along(path: tuple[float, ...]) -> pd.DataFrame:
    """``language_loss`` with the validation loss falling from 8 to 2 bits per byte along ``path``
    (its share of the way at each logged step), the train loss as in the shared fixture."""
    loss = language_loss()
    share = loss["step"].map(dict(zip(LANGUAGE_STEPS, path, strict=True)))
    return loss.assign(val_loss=8.0 - 6.0 * share + 0.01 * loss["seed"])


def test_loss_points_carry_both_losses_at_the_same_steps():
    from attnrank.language.points import loss_points

    pts = loss_points(language_ranks(), language_loss())
    assert {"train_loss", "val_loss"} <= set(pts.columns) and len(pts) == 12 * len(LANGUAGE_STEPS)
    assert (pts["val_loss"] == pts["train_loss"] + 0.05).all()
    assert "val_loss" not in loss_points(language_ranks(), language_loss().drop(columns="val_loss"))


def test_eb16_reports_the_validation_reading_beside_the_headline():
    out = outcome("EB-16")
    assert out.passed
    assert ("against the validation loss at the same steps (reported, registered in docs/methods.md): "
            "median |ρ(static R̃_eff, val loss)| 1 over 12 runs; sign: ρ < 0 (rank rises as loss "
            "falls) on 0/12 runs") in out.note and "that reading: pass" in out.note
    assert out.sweep.startswith(f"static R̃_eff (headline): pass; {VAL_ENTRY}: pass; ")
    assert "validation loss" in CHECKS["EB-16"].statement(params())


def test_eb16_validation_reading_fails_and_the_verdict_stays_the_train_loss_s():
    out = outcome("EB-16", language_loss=_val_loss_along(SCRAMBLED))
    assert out.passed  # the headline (train loss) still tracks
    assert "median |ρ(static R̃_eff, val loss)| 0.1429 over 12 runs" in out.note
    assert "that reading: fail" in out.note and f"{VAL_ENTRY}: fail" in out.sweep
    assert "median |ρ(static R̃_eff, train loss)| 1 over 12 runs" in out.measured


def test_eb16_validation_reading_passes_where_the_headline_fails():
    """Rank and validation loss out of order together: the reported reading passes, the verdict
    (on the train loss, monotone) fails."""
    out = outcome("EB-16", language_ranks=language_ranks(path=SCRAMBLED),
                  language_loss=_val_loss_along(SCRAMBLED))
    assert not out.passed and "that reading: pass" in out.note
    assert f"{VAL_ENTRY}: pass" in out.sweep and "(headline): fail" in out.sweep


def test_eb16_without_a_validation_loss_says_so_and_judges_the_train_loss():
    out = outcome("EB-16", language_loss=language_loss().drop(columns="val_loss"))
    assert out.passed and VAL_ENTRY not in out.sweep
    assert ("against the validation loss (reported, registered in docs/methods.md): not run "
            "(language_loss has no val_loss column)") in out.note
