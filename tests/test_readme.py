"""README's results section is what `make readme` generates from results/reference, and every
number in it comes from the reference's claims.csv."""

import re
from pathlib import Path

import pandas as pd
import pytest

from attnrank.readme import END, START, render_readme, results_section, update_readme

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "results" / "reference"
pytestmark = pytest.mark.skipif(not (REFERENCE / "claims.csv").exists(),
                                reason="no reference run committed")


def test_make_readme_leaves_the_readme_unchanged():
    assert not update_readme(ROOT / "README.md", REFERENCE, check=True), \
        "README's results section is stale: run `make readme`"


def test_every_number_in_the_section_comes_from_claims_csv():
    section = results_section(REFERENCE, ROOT)
    text = "\n".join(line for line in section.splitlines() if not line.startswith("<a href="))
    table = pd.read_csv(REFERENCE / "claims.csv", dtype=str, keep_default_na=False)
    counts = {str(len(table))} | {str(n) for n in table["verdict"].value_counts()} | {"0"}
    source = (REFERENCE / "claims.csv").read_text()
    for number in re.findall(r"\d+(?:\.\d+)?", text):
        assert number in source or number in counts, number


def test_every_reference_figure_is_a_thumbnail():
    section = results_section(REFERENCE, ROOT)
    for png in sorted((REFERENCE / "figures").glob("*.png")):
        assert f'src="results/reference/figures/{png.name}"' in section


def test_render_replaces_only_between_the_markers():
    text = f"head\n{START}\nold\n{END}\ntail\n"
    assert render_readme(text, "new") == f"head\n{START}\nnew\n{END}\ntail\n"
    with pytest.raises(ValueError, match="one"):
        render_readme("no markers", "new")
