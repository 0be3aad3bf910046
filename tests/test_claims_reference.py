"""The claims evaluated on the committed reference tables reproduce the committed claims.csv."""

from pathlib import Path

import pandas as pd
import pytest
import yaml

from attnrank.claims import evaluate_claims
from attnrank.plan import claims_params

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "results" / "reference"
EXACT = ["id", "paper", "verdict", "measured", "note"]
TEXT = ["statement", "threshold"]
# Claims whose statement or threshold text changed when the texts came to be rendered from the
# config's claims block (same values, other wording: "0.5" for "1/2", "0.1" for "0.10", EB-14's
# band as numbers). Empty this set when the reference run is regenerated.
RERENDERED: set[str] = set()
# Issue 10 added claims (NEW: not in the reference yet) and re-worded what others measure (seed
# fractions, TT-4 against the family's r_lb, notes pointing to docs/methods.md, TT-gap's paper
# label): until the reference run is regenerated, NEW is left out and CHANGED compared on the
# verdict only. Empty both when it is (the test says so once they are stale).
NEW: set[str] = {"TT-4p", "EB-13b"}
CHANGED: set[str] = {"TT-1", "TT-3", "TT-4", "TT-5", "TT-gap", "EB-1", "EB-2", "EB-3", "EB-5",
                     "EB-6", "EB-7", "EB-8"}


def reference_params() -> dict:
    """The params the claims step of the full run passes (``plan.claims_params``)."""
    return claims_params(yaml.safe_load((ROOT / "config.yaml").read_text()), "full")


@pytest.mark.skipif(not (REFERENCE / "claims.csv").exists(), reason="no reference run committed")
def test_reference_claims_are_reproduced():
    expected = pd.read_csv(REFERENCE / "claims.csv", dtype=str, keep_default_na=False)
    tables = sorted((REFERENCE / "tables").glob("*.parquet"))
    got = evaluate_claims(tables, reference_params()).astype(str)
    assert not NEW & set(expected["id"]), "the reference has the NEW claims: empty NEW"
    got = got[~got["id"].isin(NEW)].reset_index(drop=True)
    assert list(got["id"]) == list(expected["id"])
    pending = got["id"].isin(CHANGED)
    stale = [i for i in CHANGED if (got[got["id"] == i][EXACT].to_numpy()
                                    == expected[expected["id"] == i][EXACT].to_numpy()).all()]
    assert not stale, f"the reference already matches {stale}: remove them from CHANGED"
    for col in EXACT:
        diff = (got[col] != expected[col]) & (~pending | (col == "verdict"))
        assert not diff.any(), (col, list(zip(got.loc[diff, "id"], got.loc[diff, col],
                                             expected.loc[diff, col], strict=True)))
    changed = set()
    for col in TEXT:
        diff = (got[col] != expected[col]) & ~pending
        changed |= set(got.loc[diff, "id"])
    assert changed == RERENDERED, "the rendered texts differ from the reference's for exactly " \
        "RERENDERED (update RERENDERED, or regenerate the reference and empty it)"
