"""The claims evaluated on the committed reference tables reproduce the committed claims.csv."""

from pathlib import Path

import pandas as pd
import pytest
import yaml

from attnrank.claims import evaluate_claims

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "results" / "reference"
COLUMNS = ["id", "paper", "statement", "verdict", "measured", "threshold", "note"]


def claims_params(scale: str) -> dict:
    """The params the claims step passes: the config's minip and entropic sections and grids."""
    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())
    minip, entropic = cfg["minip"], cfg["entropic"]
    return {"scale": scale, "minip": minip, "minip_grid": minip["scales"][scale],
            "entropic": entropic, "entropic_grid": entropic["scales"][scale]}


@pytest.mark.skipif(not (REFERENCE / "claims.csv").exists(), reason="no reference run committed")
def test_reference_claims_are_reproduced():
    expected = pd.read_csv(REFERENCE / "claims.csv", dtype=str, keep_default_na=False)
    tables = sorted((REFERENCE / "tables").glob("*.parquet"))
    got = evaluate_claims(tables, claims_params("full")).astype(str)
    assert list(got["id"]) == list(expected["id"])
    for col in COLUMNS:
        diff = got[col] != expected[col]
        assert not diff.any(), (col, list(zip(got.loc[diff, "id"], got.loc[diff, col],
                                             expected.loc[diff, col], strict=True)))
