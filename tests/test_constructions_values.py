"""The committed reference's construction rows and information-bound table, checked by value
against their closed forms (``experiments.minip_constructions``)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from attnrank.minip.experiments.constructions import information_bound, softmin_worst_case

ROOT = Path(__file__).resolve().parents[1]
TABLES = ROOT / "results" / "reference" / "tables"
pytestmark = pytest.mark.skipif(not (TABLES / "minip_constructions.parquet").exists(),
                                reason="no reference run committed")
CUTOFF = 0.5  # the theorem's "error < 1/2" (the value of claims.worst_case_cutoff)


def test_all_triples_rows_are_the_closed_form_softmin_worst_case():
    cons = pd.read_parquet(TABLES / "minip_constructions.parquet")
    rows = cons[cons["eval_set"] == "all_triples"]
    assert len(rows) > 0
    for r in rows.itertuples():
        expected = softmin_worst_case(int(r.m), float(r.beta), r.tokens)
        assert r.worst_case_error == pytest.approx(expected, rel=1e-12, abs=1e-15), (r.m, r.beta)
        assert r.rank == 2 ** int(r.m)


def test_construction_accuracy_iff_worst_case_below_one_half():
    cons = pd.read_parquet(TABLES / "minip_constructions.parquet")
    rows = cons[cons["eval_set"] == "all_triples"]
    assert ((rows["sequence_accuracy"] == 1.0) == (rows["worst_case_error"] < CUTOFF)).all()
    # Fresh sequences: a head with worst-case error < 1/2 rounds every position right.
    exact = cons[(cons["eval_set"] != "all_triples") & (cons["worst_case_error"] < CUTOFF)]
    assert (exact["sequence_accuracy"] == 1.0).all()


def test_information_bound_table_is_its_closed_form():
    bound = pd.read_parquet(TABLES / "minip_information_bound.parquet")
    assert np.allclose(bound["transcript_bound_bits"],
                       bound["q_answers"] * np.log2(bound["alphabet_s"] + 1), rtol=0, atol=1e-12)
    assert (bound["q_answers"] == bound["n_tokens"]).all()
    assert (bound["alphabet_s"] == bound["m"]).all()
    assert (bound["model_bits"] == bound["rank"] * bound["layers"] * bound["float_bits"]).all()
    assert (bound["model_bits_cover_bound"]
            == (bound["model_bits"] >= bound["transcript_bound_bits"])).all()


def test_information_bound_table_is_recomputed_from_the_reference_tables():
    trained = pd.concat([pd.read_parquet(TABLES / f"minip_{e}.parquet").assign(experiment=e)
                         for e in ("length_sweep", "rank_vs_m", "witness")], ignore_index=True)
    got = information_bound(trained)
    ref = pd.read_parquet(TABLES / "minip_information_bound.parquet")
    keys = ["experiment", "feature_map", "n_tokens", "m", "rank"]
    got, ref = (d.sort_values(keys).reset_index(drop=True) for d in (got, ref))
    pd.testing.assert_frame_equal(got[ref.columns], ref, check_dtype=False)
