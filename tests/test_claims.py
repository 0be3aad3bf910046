"""What the verdict tests (test_claims_verdicts.py) leave out: the quantities behind TT-4 and TT-5,
the fraction of seeds beside every "on every seed" verdict, the verdict at every value of a free
parameter (τ of EB-13 and EB-14, β of EB-13b) beside the headline, and the verdict table's columns.
Verdicts of every claim, both ways, are in test_claims_verdicts.py."""

from collections.abc import Callable

import pandas as pd
import pytest
from claims_world import minip_rows, params, world
from test_claims_verdicts import ACC, CAP, LAD, OOD, PRE, RVM, WIT, WORST, Tables, drop, where

from attnrank.claims import CHECKS, FAIL, NOT_RUN, PASS, NotRun, evaluate_claims, write_claims
from attnrank.core.claims import sweep_text
from attnrank.core.io import write_table
from attnrank.minip.quantities import crossing_rank, exact_transition


def test_crossing_rank_per_group_and_inf_when_never_reached():
    from claims_world import crossing_rows

    df = pd.DataFrame(crossing_rows(4, 8, "a") + crossing_rows(16, 12, "b")
                      + crossing_rows(10**6, 16, "c"))
    assert crossing_rank(df, 0.9, "instance").to_dict() == {"a": 4.0, "b": 16.0, "c": float("inf")}


def test_exact_transition_is_the_smallest_rank_exact_on_every_seed():
    rows = (minip_rows("kernel", 3, 2, [1.0, 0.9]) + minip_rows("kernel", 3, 4, [1.0, 1.0])
            + minip_rows("kernel", 3, 8, [0.99, 1.0]) + minip_rows("kernel", 3, 16, [1.0, 1.0]))
    assert exact_transition(pd.DataFrame(rows)) == 4  # r = 2 is exact on one seed only
    assert exact_transition(pd.DataFrame(minip_rows("kernel", 3, 2, [1.0, 0.9]))) == float("inf")


def outcome(cid: str, edit: Callable[[Tables], None] = lambda t: None,
            witness: tuple[int, int] = (8, 3)):
    tables = world()
    edit(tables)
    return CHECKS[cid].check(tables, params(witness=witness))


def test_tt4_reports_the_transition_against_r_lb_and_k_and_the_0_80_readings():
    out = outcome("TT-4", witness=(6, 10))
    assert out.passed
    assert "K = 6, w = 10, r_lb = 6" in out.measured and "r = 32 (largest)" in out.threshold
    for fm in ("table", "mlp"):  # ranks 1, 2, 4 fail, 16 is the first exact one
        assert f"{fm}: r=1: 2/2 seeds fail, r=2: 2/2 seeds fail, r=4: 2/2 seeds fail" in out.measured
    assert out.measured.count("transition (smallest r exact on every seed) 16 vs r_lb = 6, "
                              "K = 6") == 2
    assert out.note.startswith("every seed (the paper's reading): pass; the paper's 'error > 0.8' "
                               "on the ranks that must fail, read as sequence error or as "
                               "worst-case error")
    assert out.note.count("sequence error median 0.9 (> 0.8 on 6/6 runs), worst-case error median "
                          "1.2 (> 0.8 on 6/6 runs): supports sequence error and worst-case "
                          "error") == 2


def test_the_0_80_reading_follows_the_data_and_the_config():
    def accurate(t: Tables) -> None:  # the failing heads get most sequences right
        where(t, WIT, ACC, 0.9, rank=1)
        where(t, WIT, ACC, 0.9, rank=2)
    out = outcome("TT-4", accurate)
    assert out.note.count("sequence error median 0.1 (> 0.8 on 0/4 runs), worst-case error median "
                          "1.2 (> 0.8 on 4/4 runs): supports worst-case error;") == 2  # mlp, table
    assert "supports worst-case error; witness families" in out.note  # table (last), then the sweep
    claims = params()["claims"] | {"paper_error": 1.5}
    p = params(claims)
    assert CHECKS["TT-4p"].check(world(), p).note.count("supports neither reading") == 2
    assert "(paper: error > 1.5)" in CHECKS["TT-4p"].statement(p)


def test_tt4p_reports_the_same_transition_and_is_not_run_on_another_family():
    out = outcome("TT-4p")
    assert out.passed and "transition (smallest r exact on every seed) 16 vs r_lb = 3, K = 8" \
        in out.measured
    with pytest.raises(NotRun, match="K = 6, w = 4, not the paper's K = 8, w = 3"):
        outcome("TT-4p", witness=(6, 4))


def three_seeds(table: str, **match) -> Callable[[Tables], None]:
    """Add a third seed (a copy of seed 0, all else equal) to the rows of ``table`` matching."""
    def edit(t: Tables) -> None:
        df = t[table]
        sel = pd.Series(True, index=df.index)
        for k, v in match.items():
            sel &= df[k] == v
        t[table] = pd.concat([df, df[sel & (df["seed"] == 0)].assign(seed=2)], ignore_index=True)
    return edit


FRACTIONS = [  # (claim, edit, text the measured value must hold, expected verdict)
    ("TT-1", lambda t: None, "N=2: trained 2/2 seeds exact", PASS),
    ("TT-1", lambda t: where(t, "minip_length_sweep", ACC, 0.9, n_tokens=2, rank=1, seed=1),
     "N=2: trained 1/2 seeds exact (min 0.9)", FAIL),
    ("TT-3", lambda t: (three_seeds(RVM, model="dense", m=10)(t),
                        where(t, RVM, ACC, 0.31, model="dense", m=10, seed=1)),
     "m=10: 2/3 seeds exact (min 0.31)", FAIL),
    ("TT-3", lambda t: None, "m=8: 2/2 seeds exact", PASS),
    ("TT-4", lambda t: (three_seeds(WIT)(t), where(t, WIT, ACC, 0.98, rank=32, seed=2,
                                                   feature_map="table")),
     "table: r=1: 3/3 seeds fail, r=2: 3/3 seeds fail (min worst-case 1.2); r=32: 2/3 seeds exact",
     FAIL),
    ("TT-4", lambda t: where(t, WIT, WORST, 0.2, rank=2, seed=0, feature_map="mlp"),
     "mlp: r=1: 2/2 seeds fail, r=2: 1/2 seeds fail", FAIL),
    ("TT-4p", lambda t: where(t, WIT, WORST, 0.2, rank=4, seed=1, feature_map="table"),
     "r=4: 1/2 seeds fail", FAIL),
    ("TT-5", lambda t: (three_seeds(OOD, model="dense", instance="large")(t),
                        where(t, OOD, ACC, 0.4, model="dense", instance="large", seed=0)),
     "dense: small: 2/2 seeds exact (min 1), large: 2/3 seeds exact (min 0.4)", FAIL),
    ("TT-gap", lambda t: where(t, CAP, WORST, 0.3, instance="scratch", seed=1),
     "scratch (100 steps) median sequence accuracy 0.99, best seed's worst-case error 0.3 "
     "(1/2 seeds not exact)", FAIL),
    ("EB-3", lambda t: None, "2:505 (2/2 seeds ≥ 20), 4:252.5 (2/2 seeds ≥ 20)", PASS),
    ("EB-3", lambda t: where(t, "entropic_surrogate", "excess", 0.015, rank=4, r_star=4, seed=1,
                             optimizer="adam"), "4:134.7 (1/2 seeds ≥ 20)", FAIL),
    ("EB-1", lambda t: where(t, "entropic_surrogate", "excess", 1.5, rank=1, r_star=4,
                             optimizer="adam", seed=0), "; 7/8 students (r, seed) within", FAIL),
    ("EB-2", lambda t: where(t, "entropic_surrogate", "excess", 0.05, rank=6, r_star=2, seed=1,
                             optimizer="adam"), "23/24 students (r, seed) at the floor", FAIL),
    ("EB-7", lambda t: where(t, "entropic_attention", "excess", 0.04, teacher="linear", r_star=3,
                             rank=1, seed=0),
     "min excess r < r*: 0.04 (5/6 students ≥ 0.05); max excess r ≥ r*: 0.001 (10/10 students ≤ "
     "0.02); min excess(r*−1)/excess(r*): 300 (4/4 (r*, seed) ≥ 10)", FAIL),
    ("EB-5", lambda t: where(t, LAD, "excess", 0.03, model="B0", seed=0),
     "(B0: 2/3 seeds at the floor)", FAIL),
    ("EB-6", lambda t: where(t, LAD, "excess", 0.5, model="B1_pos", seed=2),
     "(2/3 seeds at the floor)", FAIL),
]


@pytest.mark.parametrize(("cid", "edit", "text", "verdict"), FRACTIONS,
                         ids=[f"{c[0]}-{c[3]}-{i}" for i, c in enumerate(FRACTIONS)])
def test_every_seed_verdicts_show_the_fraction_that_satisfies_them(cid, edit, text, verdict):
    out = outcome(cid, edit)
    assert (PASS if out.passed else FAIL) == verdict
    assert text in out.measured, out.measured


def test_sweep_text_marks_the_headline():
    assert sweep_text({"τ=0.01": True, "τ=0.05": False}, "τ=0.01") == \
        "τ=0.01 (headline): pass; τ=0.05: fail"


def saturate_at_005_only(t: Tables) -> None:
    """E1's softmax numerical rank grows with r* at τ = 0.01 and saturates at τ = 0.05."""
    where(t, PRE, "numerical_rank_tau0.01", 2.0 * t[PRE]["r_star"], teacher="softmax",
          estimator="E1")
    where(t, PRE, "numerical_rank_tau0.05", 12.0, teacher="softmax", estimator="E1")


SWEEPS = [  # (claim, edit, headline passes, sweep)
    ("EB-13", lambda t: None, True, "τ=0.01 (headline): pass; τ=0.05: fail; τ=0.1: fail"),
    ("EB-13", saturate_at_005_only, False, "τ=0.01 (headline): fail; τ=0.05: pass; τ=0.1: fail"),
    ("EB-14", lambda t: None, True, "β=1 (headline): pass; β=4: fail"),
    ("EB-14", lambda t: (where(t, PRE, "energy_effective_rank", 5.1, teacher="softmax",
                               estimator="mixer", beta=1.0, r_star=6),
                         where(t, PRE, "energy_effective_rank", 5.0, teacher="softmax",
                               estimator="mixer", beta=4.0, r_star=6)),
     False, "β=1 (headline): fail; β=4: pass"),
    ("EB-13b", lambda t: None, True, "β=1 (headline): pass; β=4: fail"),
    ("EB-13b", lambda t: (where(t, PRE, "energy_effective_rank", t[PRE]["r_star"] * 1.0,
                                teacher="softmax", estimator="E1", beta=1.0),
                          where(t, PRE, "energy_effective_rank", 1.5, teacher="softmax",
                                estimator="E1", beta=4.0, r_star=1),
                          where(t, PRE, "energy_effective_rank", 5.5, teacher="softmax",
                                estimator="E1", beta=4.0, r_star=6)),
     False, "β=1 (headline): fail; β=4: pass"),
]


@pytest.mark.parametrize(("cid", "edit", "passed", "sweep"), SWEEPS,
                         ids=[f"{c[0]}-{c[2]}" for c in SWEEPS])
def test_free_parameters_show_the_verdict_at_every_value(cid, edit, passed, sweep):
    out = outcome(cid, edit)
    assert out.passed == passed and out.sweep == sweep, out


def test_eb13b_names_the_beta_where_the_effect_appears():
    out = outcome("EB-13b")
    assert out.note.startswith("the effect (both conditions) appears at β = 1. ")
    assert "β=1: S=4096: R̃_eff 1.5 at r*=1 (over-estimates: True), 5.5 at r*=6 (compressed: " \
        "True); β=4: S=4096: R̃_eff 1 at r*=1 (over-estimates: False)" in out.measured
    none = outcome("EB-13b", lambda t: where(t, PRE, "energy_effective_rank", 1.0, teacher="softmax",
                                             estimator="E1", r_star=1))
    assert not none.passed and none.note.startswith("the effect appears at no β")


def test_eb13b_reports_every_estimator_s_and_beta_at_both_d():
    out = outcome("EB-13b")
    d16, d32 = out.note.split("conditions): d = 4: ", 1)[1].split("; d = 32: ")
    assert d16.startswith("E1: β=1: S=32 1.5/5.5*, S=4096 1.5/5.5*; β=4: S=32 1/6, S=4096 1/6 | "
                          "E2: β=1: S=32 9/9")
    assert "E2_debiased: β=1: S=32 9/9, S=4096 1/6" in d16
    assert d32.startswith("E1: β=1: S=32 1.5/5.5*, S=16384 1.5/5.5*") and "E2: not computed" in d32
    shown = outcome("EB-13b", lambda t: where(t, "entropic_predict_d32", "energy_effective_rank",
                                              t["entropic_predict_d32"]["r_star"] * 0.8 + 0.7,
                                              teacher="softmax", estimator="E2_debiased", S=32,
                                              beta=1.0))
    assert shown.passed and "E2_debiased: β=1: S=32 1.5/5.5*, S=16384 1/6; β=4: S=32 9/9" in \
        shown.note.split("; d = 32: ")[1]


def test_eb13_reports_the_paper_level_at_d32_beside_its_verdict():
    out = outcome("EB-13")
    head, rest = out.note.split("; d = 32 (reported, not in the verdict): ")
    assert head.startswith("E2 (V unknown) at the largest S")
    flat, decaying = rest.split("; d = 32, decaying spectrum (reported): ")
    assert flat.startswith("S=16384: numerical rank (τ=0.01) by r*: 1:18.1, 2:18.2, 4:18.4, 6:18.6")
    assert "saturated level (median over r*) 18.3 in the paper's [17, 23]: True" in flat
    assert flat.endswith("EB-13's rule: pass")
    assert "level (median over r*) 9.15 in the paper's [17, 23]: False" in decaying
    low = outcome("EB-13", lambda t: where(t, "entropic_predict_d32", "numerical_rank_tau0.01",
                                           25.0, teacher="softmax", estimator="E1"))
    assert low.passed and "25 in the paper's [17, 23]: False" in low.note
    gone = outcome("EB-13", lambda t: drop(t, "entropic_predict_d32",
                                           lambda d: d["teacher"] != "softmax"))
    assert gone.passed and "(reported, not in the verdict): not run: no E1 rows" in gone.note


def test_eb14_reports_the_earlier_rule_labelled():
    out = outcome("EB-14")
    assert "earlier rule (numerical rank, registered first): pass (" in out.note
    failed = outcome("EB-14", lambda t: where(t, PRE, "numerical_rank_tau0.01", 30.0,
                                              teacher="softmax", estimator="mixer", r_star=6))
    assert failed.passed
    assert "earlier rule (numerical rank, registered first): fail (" in failed.note
    assert "at every τ: τ=0.01 (headline): fail; τ=0.05: pass; τ=0.1: fail)" in failed.note
    assert "growth per unit r* over the top interval (r* 4→6): softmax 1, linear 0.2" in \
        out.measured and "(r* 1→2): 0.8 (top / bottom 0.25 vs 0.5)" in out.measured


def test_claims_without_a_free_parameter_have_no_sweep():
    # EB-7/8/9/12: both V* (test_teacher_values.py); TT-4: every witness family
    # (test_witness_families.py)
    for cid in ("TT-1", "EB-4", "EB-11"):
        assert outcome(cid).sweep == ""


def test_the_verdict_table_shows_the_sweep_column_in_every_format(tmp_path):
    paths = []
    for name, df in world().items():
        paths.append(tmp_path / f"{name}.parquet")
        write_table(df, paths[-1])
    p = params()
    p["entropic_grid"] = {}
    table = evaluate_claims(paths, p)
    assert list(table.columns) == ["id", "paper", "statement", "measured", "threshold", "verdict",
                                   "note", "sweep", "quorum"]
    row = table.set_index("id").loc["EB-13"]
    assert row["verdict"] == PASS and row["sweep"].startswith("τ=0.01 (headline): pass")
    assert (table.set_index("id").loc["TT-1", "sweep"]) == ""
    assert NOT_RUN not in set(table["verdict"])
    write_claims(table, tmp_path / "c.md", tmp_path / "c.csv", "test", tmp_path / "c.html",
                 level=0.9)
    md = (tmp_path / "c.md").read_text()
    eb13 = md.split("### EB-13\n")[1].split("###")[0]
    assert "*Verdict at every value.* τ=0.01 (headline): pass; τ=0.05: fail; τ=0.1: fail" in eb13
    assert "τ=0.05: fail" in (tmp_path / "c.html").read_text()


def test_the_readme_results_show_the_sweep_of_a_claim_that_did_not_pass(tmp_path):
    from attnrank.publish.readme import results_section

    row = {"id": "EB-13", "paper": "A", "statement": "s", "measured": "m", "threshold": "t",
           "verdict": FAIL, "note": ""}
    pd.DataFrame([row]).to_csv(tmp_path / "claims.csv", index=False)  # written before the column
    assert "Verdict at every value" not in results_section(tmp_path, tmp_path)
    pd.DataFrame([row | {"sweep": "τ=0.01 (headline): fail; τ=0.05: pass"}]).to_csv(
        tmp_path / "claims.csv", index=False)
    assert "*Verdict at every value:* τ=0.01 (headline): fail; τ=0.05: pass." in \
        results_section(tmp_path, tmp_path)
