"""How the verdicts are written: the exact interval of a quorum verdict's success rate, the
success counts read back, and claims.md (counts with the measured claims, |ρ| kept, an overview
table of short rows with every claim in full below it, the smoke page's sentence)."""

from __future__ import annotations

import pandas as pd
import pytest

from attnrank.core.claims import (
    FAIL,
    MEASURED,
    NOT_RUN,
    PASS,
    claims_html,
    claims_markdown,
    parse_quorum,
    quorum_text,
    weakest_text,
)
from attnrank.core.stats import binomial_tail, clopper_pearson


def test_clopper_pearson_matches_known_intervals():
    lo, hi = clopper_pearson(4, 5, 0.9)
    assert lo == pytest.approx(0.3426, abs=1e-4) and hi == pytest.approx(0.9898, abs=1e-4)
    # closed forms at the edges: k = n gives lo = (α/2)^(1/n), k = 0 gives hi = 1 − (α/2)^(1/n)
    assert clopper_pearson(5, 5, 0.9) == (pytest.approx(0.05 ** (1 / 5), abs=1e-9), 1.0)
    assert clopper_pearson(0, 5, 0.9) == (0.0, pytest.approx(1 - 0.05 ** (1 / 5), abs=1e-9))
    # each end is where its tail equals (1 − level)/2
    lo, hi = clopper_pearson(9, 10, 0.9)
    assert binomial_tail(9, 10, lo, upper=True) == pytest.approx(0.05, abs=1e-9)
    assert binomial_tail(9, 10, hi, upper=False) == pytest.approx(0.05, abs=1e-9)
    # pooling two seed sets at the same rate narrows it
    width = {n: clopper_pearson(4 * n // 5, n, 0.9)[1] - clopper_pearson(4 * n // 5, n, 0.9)[0]
             for n in (5, 10, 20)}
    assert width[20] < width[10] < width[5]
    for bad in ((6, 5, 0.9), (1, 0, 0.9), (1, 5, 1.0)):
        with pytest.raises(ValueError, match="clopper_pearson"):
            clopper_pearson(*bad)


def test_success_counts_read_back_and_the_weakest_is_shown():
    counts = [("dense exact at m=6", 5, 5), ("dense exact at m=16", 4, 5),
              ("table r=32 exact", 4, 5)]
    text = quorum_text(counts)
    assert text == "dense exact at m=6: 5/5; dense exact at m=16: 4/5; table r=32 exact: 4/5"
    assert parse_quorum(text) == counts
    assert parse_quorum("") == []
    with pytest.raises(ValueError, match="not 'condition: k/n'"):
        parse_quorum("m=6 5 of 5")
    assert weakest_text(counts, 0.9) == "weakest dense exact at m=16: 4/5 seeds (90% CP 0.34–0.99)"
    assert weakest_text([], 0.9) == ""


def verdicts() -> pd.DataFrame:
    long = "x" * 3000
    return pd.DataFrame([
        {"id": "TT-3", "paper": "B", "statement": "dense exact on at least the quorum",
         "measured": long, "threshold": "≥ 0.999", "verdict": PASS, "note": "n", "sweep": "",
         "quorum": "m=6: 5/5; m=16: 4/5"},
        {"id": "EB-16", "paper": "A", "statement": "median |ρ| ≥ 0.6 for r* and r*",
         "measured": "|ρ| = 0.5", "threshold": "", "verdict": FAIL, "note": "",
         "sweep": "a: pass", "quorum": ""},
        {"id": "OPEN-1", "paper": "B", "statement": "open", "measured": "b", "threshold": "",
         "verdict": MEASURED, "note": "", "sweep": "", "quorum": ""},
        {"id": "TT-1", "paper": "B", "statement": "s", "measured": "", "threshold": "",
         "verdict": NOT_RUN, "note": "why", "sweep": "", "quorum": ""}])


def test_claims_markdown_is_an_overview_then_every_claim_in_full():
    md = claims_markdown(verdicts(), "full", 0.9)
    assert "1 pass, 1 fail, 1 measured, 1 not run" in md
    overview = [ln for ln in md.split("## Every claim in full")[0].splitlines()
                if ln.startswith("| [")]
    assert len(overview) == 4
    assert max(map(len, overview)) < 300  # the long measured text is not in the overview
    assert "weakest m=16: 4/5 seeds (90% CP 0.34–0.99)" in overview[0]
    assert r"median \|ρ\| ≥ 0.6 for r\* and r\*" in overview[1]  # a table cell: | escaped
    assert "/ρ/" not in md
    details = md.split("## Every claim in full")[1]
    assert "### EB-16" in details and r"median |ρ| ≥ 0.6 for r\* and r\*" in details
    assert "x" * 3000 in details and "*Seeds behind the quorum.* m=6: 5/5; m=16: 4/5" in details
    assert "Smoke scale" not in md


def test_the_smoke_page_says_what_its_verdicts_are_for():
    md = claims_markdown(verdicts(), "smoke", 0.9)
    assert "too small to judge the papers" in md and "every path" in md
    assert "(../reference/claims.md)" in md
    assert "too small to judge the papers" in claims_html(verdicts(), "smoke", 0.9)
    assert "too small" not in claims_html(verdicts(), "full", 0.9)
    assert "1 measured" in claims_html(verdicts(), "full", 0.9)
