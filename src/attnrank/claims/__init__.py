"""Every paper claim as a check over the result tables: a verdict of pass, fail or not run.

The machinery (verdicts, ``@claim``, ``need``, evaluation) is in ``core``; the checks of each
paper are in ``minip`` (paper B, TT-n), ``entropic`` (paper A, EB-1 … EB-14) and ``language``
(paper A's appendix B, EB-15 and EB-16), imported here so that they register.
"""

from attnrank.claims import entropic, language, minip  # noqa: F401  (registers the checks)
from attnrank.claims.core import (
    CHECKS,
    FAIL,
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

__all__ = ["CHECKS", "FAIL", "NOT_RUN", "PASS", "ClaimTables", "NotRun", "RegisteredClaim",
           "UnlistedTable", "Verdict", "claim", "claim_values", "evaluate_claims", "need",
           "registered_checks", "write_claims"]
