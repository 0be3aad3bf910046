"""EB-1 … EB-14 on small constructed tables: pass where the numbers say so, fail where they do not,
not run where the grid lacks what a claim needs."""

import numpy as np
import pandas as pd
import pytest

from attnrank.claims import CHECKS as REGISTERED
from attnrank.claims import NotRun

P = {"entropic": {"n_tokens": 8, "d": 4, "taus": [0.01, 0.05, 0.1], "headline_tau": 0.05,
                  "headline_beta": 1.0}}
CHECKS = {cid: c.check for cid, c in REGISTERED.items() if cid.startswith("EB-")}


def _ranks(r_star, r):
    return {f"numerical_rank_tau{t:g}": float(min(r, r_star)) for t in (0.01, 0.05, 0.1)} | {
        "energy_effective_rank": float(min(r, r_star)), "entropy_effective_rank": float(min(r, r_star)),
        "stable_rank": float(min(r, r_star))}


def surrogate_table():
    rows = []
    for opt, ranks in (("adam", range(1, 9)), ("gd", [8])):
        for r_star in (2, 4):
            for seed in range(2):
                for r in ranks:
                    bound = max(0, r_star - r) / r_star
                    exc = bound * 1.01 if r < r_star else 0.001
                    rows.append({"optimizer": opt, "r_star": r_star, "seed": seed, "rank": r,
                                 "excess": exc, "excess_population": exc, "bound": bound,
                                 **_ranks(r_star, r)})
    return pd.DataFrame(rows)


def test_surrogate_claims_pass_on_a_textbook_table():
    t = {"entropic_surrogate": surrogate_table()}
    for cid in ("EB-1", "EB-2", "EB-3", "EB-4"):
        passed, measured, threshold, _ = CHECKS[cid](t, P)
        assert passed, (cid, measured)


def test_surrogate_claims_fail_when_training_fails():
    df = surrogate_table()
    df.loc[(df["rank"] == 1) & (df["r_star"] == 4), "excess"] = 1.5  # far above the bound
    df.loc[(df["rank"] == 6) & (df["r_star"] == 2), "excess"] = 0.05  # above the floor
    t = {"entropic_surrogate": df}
    assert not CHECKS["EB-1"](t, P)[0]
    assert not CHECKS["EB-2"](t, P)[0]
    df.loc[df["rank"] == 8, "energy_effective_rank"] = 7.0  # r = N recovers nothing
    assert not CHECKS["EB-4"](t, P)[0]


def test_missing_tables_and_grid_points_are_not_run():
    for fn in CHECKS.values():
        with pytest.raises(NotRun):
            fn({}, P)
    df = surrogate_table()
    with pytest.raises(NotRun):  # no r = N = 8 student
        CHECKS["EB-4"]({"entropic_surrogate": df[df["rank"] < 8]}, P)


def test_ladder_claims():
    rows = [{"model": m, "seed": s, "excess": v} for s in range(3)
            for m, v in (("B0", 0.001), ("B1", 1.0), ("B2", 1.0), ("B3", 1.1), ("B1_pos", 0.002),
                         ("B2_pos", 0.6))]
    t = {"entropic_ladder": pd.DataFrame(rows)}
    assert CHECKS["EB-5"](t, P)[0] and CHECKS["EB-6"](t, P)[0]
    t["entropic_ladder"].loc[t["entropic_ladder"]["model"] == "B1_pos", "excess"] = 0.5
    assert not CHECKS["EB-6"](t, P)[0]


def attention_table(soft_factor=0.8):
    rows = []
    for teacher, beta in (("linear", 1.0), ("softmax", 1.0), ("softmax", 4.0)):
        for r_star in (2, 3):
            for seed in range(2):
                for r in range(1, 5):
                    exc = 0.001 if r >= r_star else 0.3 * (r_star - r)
                    if teacher == "softmax" and r < r_star:
                        exc *= soft_factor if beta == 1.0 else 1.2
                    rows.append({"teacher": teacher, "beta": beta, "r_star": r_star, "seed": seed,
                                 "rank": r, "excess": exc, **_ranks(r_star, r)})
    return pd.DataFrame(rows)


def test_attention_claims():
    t = {"entropic_attention": attention_table()}
    for cid in ("EB-7", "EB-8", "EB-9", "EB-10"):
        assert CHECKS[cid](t, P)[0], cid
    t = {"entropic_attention": attention_table(soft_factor=1.5)}
    assert not CHECKS["EB-9"](t, P)[0]


def predict_table():
    rows = []
    for teacher in ("linear", "softmax"):
        for r_star in (1, 2, 4, 6):
            for seed in range(2):
                for s_ in (32, 4096):
                    for est in ("E1", "E2", "E2_debiased"):
                        good = est == "E1" or s_ == 4096
                        val = float(r_star) if good else 9.0
                        num01 = 12.0 + 0.2 * r_star if teacher == "softmax" else val
                        rows.append({"teacher": teacher, "beta": 1.0, "estimator": est, "r_star": r_star,
                                     "seed": seed, "S": s_, "numerical_rank_tau0.05": val,
                                     "numerical_rank_tau0.01": num01, "energy_effective_rank": val,
                                     "entropy_effective_rank": val})
                level = {1: 5.0, 2: 10.0, 4: 18.0, 6: 18.5}[r_star]  # rises, then levels off
                mix = {"linear": (r_star, 0.8 * r_star), "softmax": (level, r_star + 1.0)}[teacher]
                rows.append({"teacher": teacher, "beta": 1.0, "estimator": "mixer", "r_star": r_star,
                             "seed": seed, "S": 64, "numerical_rank_tau0.05": mix[0],
                             "numerical_rank_tau0.01": mix[0], "energy_effective_rank": mix[1],
                             "entropy_effective_rank": mix[1]})
    return pd.DataFrame(rows)


def test_predictability_claims():
    t = {"entropic_predict": predict_table()}
    for cid in ("EB-11", "EB-12", "EB-13", "EB-14"):
        passed, measured, _, note = CHECKS[cid](t, P)
        assert passed, (cid, measured, note)
    df = predict_table()
    df.loc[(df["estimator"] == "E2") & (df["S"] == 32), "energy_effective_rank"] = \
        df["r_star"].astype(float)
    assert not CHECKS["EB-12"]({"entropic_predict": df}, P)[0]  # exact everywhere: no frontier
    df = predict_table()
    sel = (df["estimator"] == "mixer") & (df["teacher"] == "softmax")
    df.loc[sel, "numerical_rank_tau0.01"] = np.array(df.loc[sel, "r_star"], float) * 5
    assert not CHECKS["EB-14"]({"entropic_predict": df}, P)[0]  # never levels off
