"""Claims are real checks: synthetic tables built to pass, to fail, and to lack grid points."""

import pandas as pd
import pytest

from attnrank.claims import NotRun
from attnrank.claims.minip import tt1, tt2, tt4, tt5
from attnrank.quantities import crossing_rank

P = {"minip": {"exact_accuracy": 0.999, "target_accuracy": 0.9,
               "witness_claim": {"fails_below": 8, "solves_at": 32}},
     "minip_grid": {"witness": {"blocks": 8, "width": 3}}}


def rows(model, n, rank, accs, worst=0.1, m=8, fm="table", inst="x"):
    return [{"model": model, "n_tokens": n, "rank": rank, "seed": s, "m": m, "feature_map": fm,
             "instance": inst, "test_sequence_accuracy": a, "test_worst_case_error": worst}
            for s, a in enumerate(accs)]


def cons(acc):
    return pd.DataFrame([{"construction": "rank1", "n_tokens": n, "eval_set": "random",
                          "sequence_accuracy": acc} for n in (1, 2)])


def test_tt1_passes_only_when_every_seed_is_exact():
    good = pd.DataFrame(rows("kernel", 1, 1, [1.0, 1.0]) + rows("kernel", 2, 1, [1.0, 0.9995]))
    assert tt1({"minip_length_sweep": good, "minip_constructions": cons(1.0)}, P)[0]
    bad = pd.DataFrame(rows("kernel", 1, 1, [1.0, 1.0]) + rows("kernel", 2, 1, [1.0, 0.99]))
    assert not tt1({"minip_length_sweep": bad, "minip_constructions": cons(1.0)}, P)[0]
    assert not tt1({"minip_length_sweep": good, "minip_constructions": cons(0.5)}, P)[0]


def test_tt2_needs_low_rank1_and_rising_accuracy():
    up = pd.DataFrame(rows("kernel", 3, 1, [0.6, 0.7]) + rows("kernel", 3, 8, [0.95, 0.96]))
    assert tt2({"minip_length_sweep": up}, P)[0]
    down = pd.DataFrame(rows("kernel", 3, 1, [0.6, 0.7]) + rows("kernel", 3, 8, [0.5, 0.5]))
    assert not tt2({"minip_length_sweep": down}, P)[0]
    with pytest.raises(NotRun):
        tt2({"minip_length_sweep": pd.DataFrame(rows("kernel", 3, 8, [0.9]))}, P)


def test_tt4_fails_when_a_low_rank_seed_succeeds():
    def table(low_worst):
        r = []
        for fm in ("table", "mlp"):
            r += rows("kernel", 3, 4, [0.1, 0.1], worst=low_worst, fm=fm)
            r += rows("kernel", 3, 32, [1.0, 1.0], worst=0.2, fm=fm)
        return pd.DataFrame(r)
    ok, measured, _, note = tt4({"minip_witness": table(1.2)}, P)
    assert ok and "r_lb = min(K, w) = 3" in note
    assert not tt4({"minip_witness": table(0.3)}, P)[0]


def test_crossing_rank_and_tt5_direction():
    r = []
    for inst, m, cross in (("a", 8, 4), ("b", 12, 16)):
        for rank in (1, 4, 16, 64):
            r += rows("kernel", 3, rank, [0.95 if rank >= cross else 0.5] * 2, m=m, inst=inst)
        r += rows("dense", 3, -1, [1.0, 1.0], m=m, inst=inst)
    df = pd.DataFrame(r)
    assert crossing_rank(df, 0.9, "instance").to_dict() == {"a": 4.0, "b": 16.0}
    assert tt5({"minip_ood": df}, P)[0]
    flipped = df.assign(m=df["m"].map({8: 12, 12: 8}))
    assert not tt5({"minip_ood": flipped}, P)[0]
