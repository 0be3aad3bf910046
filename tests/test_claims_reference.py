"""The claims evaluated on the committed reference tables reproduce the committed claims.csv."""

from pathlib import Path

import pandas as pd
import pytest
import yaml

from attnrank.claims import evaluate_claims
from attnrank.pipeline.plan import claims_params

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "results" / "reference"
COLUMNS = ["id", "paper", "statement", "measured", "threshold", "verdict", "note", "sweep",
           "quorum"]


def reference_params() -> dict:
    """The params the claims step of the full run passes (``plan.claims_params``)."""
    return claims_params(yaml.safe_load((ROOT / "config.yaml").read_text()), "full")


@pytest.mark.skipif(not (REFERENCE / "claims.csv").exists(), reason="no reference run committed")
def test_reference_claims_are_reproduced():
    expected = pd.read_csv(REFERENCE / "claims.csv", dtype=str, keep_default_na=False)
    tables = sorted((REFERENCE / "tables").glob("*.parquet"))
    got = evaluate_claims(tables, reference_params()).astype(str)
    assert list(got.columns) == list(expected.columns) == COLUMNS
    assert list(got["id"]) == list(expected["id"])
    for col in COLUMNS:
        diff = got[col] != expected[col]
        assert not diff.any(), (col, list(zip(got.loc[diff, "id"], got.loc[diff, col],
                                             expected.loc[diff, col], strict=True)))
