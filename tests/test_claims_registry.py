"""The claims' names live in attnrank.registry.CLAIMS: ids, papers, order and the tables a check
may read."""

import pandas as pd
import pytest

from attnrank.claims import CHECKS, UnlistedTable, claim, need, registered_checks
from attnrank.claims.core import ClaimTables
from attnrank.registry import CLAIMS


def test_every_registry_claim_has_one_check_in_registry_order():
    assert sorted(CHECKS) == sorted(CLAIMS)
    assert [c.id for c in registered_checks()] == list(CLAIMS)


def test_recorded_paper_is_the_registry_s():
    for cid, c in CHECKS.items():
        assert c.paper.split(" (")[0] == CLAIMS[cid].paper, cid
    assert CHECKS["TT-gap"].paper == "B (our caution, not a paper claim)"


def test_new_claims_sit_right_after_the_claim_they_refine():
    ids = list(CLAIMS)
    assert ids[ids.index("TT-4") + 1] == "TT-4p" and ids[ids.index("EB-13") + 1] == "EB-13b"
    assert CLAIMS["TT-4p"].tables == ("minip_witness",)
    assert CLAIMS["TT-4"].tables == ("minip_witness", "minip_witness_families",  # + the sweep
                                     "minip_restarts_summary")  # + the restarts note


def test_no_claim_text_points_to_a_document_the_repository_lacks():
    """Statements, papers and notes point to docs/methods.md, never to SPEC or DESIGN (not in the
    repository)."""
    import inspect

    from attnrank.claims import entropic, language, minip

    for module in (minip, entropic, language):
        source = inspect.getsource(module)
        for name in ("SPEC", "DESIGN"):
            assert name not in source, (module.__name__, name)
    assert all("SPEC" not in c.paper for c in CHECKS.values())


def test_claim_refuses_unknown_and_duplicate_ids():
    with pytest.raises(ValueError, match="not in registry.CLAIMS"):
        claim("TT-99", "no such claim")
    with pytest.raises(ValueError, match="registered twice"):
        claim("TT-1", "again")


def test_need_refuses_a_table_the_registry_does_not_list():
    tables = ClaimTables("TT-2", {"minip_length_sweep": pd.DataFrame(), "minip_ood": pd.DataFrame()})
    assert need(tables, "minip_length_sweep").empty
    with pytest.raises(UnlistedTable, match="TT-2 reads table 'minip_ood'"):
        need(tables, "minip_ood")
    assert list(tables) == ["minip_length_sweep"]


def test_a_check_sees_only_its_registered_tables():
    """Every check, given every table of the run empty, asks only for tables listed for it."""
    every = {t: pd.DataFrame() for spec in CLAIMS.values() for t in spec.tables}
    for cid, c in CHECKS.items():
        try:
            c.check(every, {})
        except UnlistedTable:
            pytest.fail(f"{cid} reads a table that registry.CLAIMS does not list for it")
        except Exception:  # empty tables: any other failure is expected here
            pass
