"""The claims step: every paper claim as a check over the result tables (pass, fail or not run).

The machinery (verdicts, ``@claim``, ``need``, evaluation) is ``attnrank.core.claims``; the checks
are in each wing's ``claims`` module: ``attnrank.minip.claims`` (paper B, TT-n),
``attnrank.entropic.claims`` (paper A, EB-1 … EB-14) and ``attnrank.language.claims`` (paper A's
appendix B, EB-15 and EB-16), imported here so that they register (verdicts come out wing by
wing, ``attnrank.core.WINGS``). This module's import closure is the claims step's code hash.
"""

from pathlib import Path
from typing import Any

from attnrank.core.claims import (
    CHECKS,
    FAIL,
    MEASURED,
    NOT_RUN,
    PASS,
    ClaimTables,
    NotRun,
    RegisteredClaim,
    UnlistedTable,
    Verdict,
    claim,
    claim_values,
    evaluate_claims,
    need,
    registered_checks,
    write_claims,
)
from attnrank.entropic import claims as _entropic  # noqa: F401  (each registers its checks)
from attnrank.language import claims as _language  # noqa: F401
from attnrank.minip import claims as _minip  # noqa: F401

__all__ = ["CHECKS", "FAIL", "MEASURED", "NOT_RUN", "PASS", "ClaimTables", "NotRun", "RegisteredClaim",
           "UnlistedTable", "Verdict", "claim", "claim_values", "evaluate_claims", "need",
           "registered_checks", "write_claims"]


def step(inputs: list[str], params: dict[str, Any], md: str | Path, csv: str | Path,
         html: str | Path | None) -> list[Path]:
    """The claims step: every registered check on the tables ``inputs``, written as Markdown, CSV
    and (when given) HTML (a smoke page says what its verdicts are for,
    ``core.claims.SMOKE_NOTE``); returns the paths written."""
    table = evaluate_claims(inputs, params)
    return write_claims(table, md, csv, params.get("scale", "?"), html,
                        level=float(params["claims"]["quorum_interval_level"]))
