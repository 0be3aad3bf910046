"""A claim is declared once, by its ``@claim(id, paper, tables, ...)``; the pipeline's registry
(attnrank.pipeline.registry.CLAIMS) collects the same ids, papers, order and tables from the
source."""

from pathlib import Path

import pandas as pd
import pytest
import yaml

from attnrank.claims import CHECKS, NotRun, UnlistedTable, claim, need, registered_checks
from attnrank.core.claims import ClaimTables
from attnrank.pipeline.registry import CLAIMS

ROOT = Path(__file__).resolve().parents[1]


def test_every_registry_claim_has_one_check_in_registry_order():
    assert sorted(CHECKS) == sorted(CLAIMS)
    assert [c.id for c in registered_checks()] == list(CLAIMS)
    for cid, c in CHECKS.items():
        assert c.tables == CLAIMS[cid].tables, cid
    assert list(CLAIMS)[:2] == ["TT-1", "TT-2"] and list(CLAIMS)[-1] == "OPEN-4"  # wing by wing


def test_the_registry_refuses_a_claim_whose_declaration_is_not_literal(tmp_path):
    from attnrank.pipeline.registry import collect_claims

    for wing in ("minip", "entropic", "language"):
        (tmp_path / wing).mkdir()
        (tmp_path / wing / "claims.py").write_text("")
    (tmp_path / "minip" / "claims.py").write_text(
        'TABLES = ("a",)\n@claim("TT-9", "B", TABLES, "x")\ndef f(t, p, v):\n    pass\n')
    with pytest.raises(ValueError, match=r"claims.py:2: @claim's id, paper and tables must be"):
        collect_claims(tmp_path)
    (tmp_path / "minip" / "claims.py").write_text(
        '@claim("TT-9", "B", ("a",), "x")\ndef f(t, p, v):\n    pass\n')
    assert collect_claims(tmp_path)["TT-9"].tables == ("a",)


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

    from attnrank.entropic import claims as entropic
    from attnrank.language import claims as language
    from attnrank.minip import claims as minip

    for module in (minip, entropic, language):
        source = inspect.getsource(module)
        for name in ("SPEC", "DESIGN"):
            assert name not in source, (module.__name__, name)
    assert all("SPEC" not in c.paper for c in CHECKS.values())


def test_claim_refuses_unknown_and_duplicate_ids():
    with pytest.raises(ValueError, match="paper must be 'A' or 'B' and tables non-empty"):
        claim("TT-99", "C", ("minip_ood",), "no such paper")
    with pytest.raises(ValueError, match="registered twice"):
        claim("TT-1", "B", ("minip_ood",), "again")


def test_need_refuses_a_table_the_claim_does_not_declare():
    tables = ClaimTables("TT-2", CLAIMS["TT-2"].tables,
                         {"minip_length_sweep": pd.DataFrame(), "minip_ood": pd.DataFrame()})
    assert need(tables, "minip_length_sweep").empty
    with pytest.raises(UnlistedTable, match="TT-2 reads table 'minip_ood'"):
        need(tables, "minip_ood")
    assert list(tables) == ["minip_length_sweep"]


def test_a_check_sees_only_its_registered_tables():
    """Every check, given every table of the run empty and the real full-scale params, asks only
    for tables it declares (the params are real, so a check gets as far as reading its tables)."""
    from attnrank.pipeline.plan import claims_params

    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    params = claims_params(config, "full")
    every = {t: pd.DataFrame() for spec in CLAIMS.values() for t in spec.tables}
    for cid, c in CHECKS.items():
        try:
            c.check(every, params)
        except UnlistedTable:
            pytest.fail(f"{cid} reads a table that its @claim does not declare")
        except (KeyError, IndexError, ValueError, NotRun):  # empty tables: expected here
            pass
