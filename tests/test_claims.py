"""What the verdict tests (test_claims_verdicts.py) leave out: the quantities behind TT-5 and
the TT-4 note. Verdicts of every claim, both ways, are in test_claims_verdicts.py."""

import pandas as pd
from claims_world import crossing_rows, params, world

from attnrank.claims.minip import tt4
from attnrank.quantities import crossing_rank


def test_crossing_rank_per_group_and_inf_when_never_reached():
    df = pd.DataFrame(crossing_rows(4, 8, "a") + crossing_rows(16, 12, "b")
                      + crossing_rows(10**6, 16, "c"))
    assert crossing_rank(df, 0.9, "instance").to_dict() == {"a": 4.0, "b": 16.0, "c": float("inf")}


def test_tt4_note_reports_the_family_s_proven_bound():
    ok, _, _, note = tt4(world(), params())
    assert ok and "r_lb = min(K, w) = 3" in note
