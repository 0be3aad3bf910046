"""Every paper claim as a check over the result tables: a verdict of pass, fail or not run.

The machinery (verdicts, ``@claim``, ``need``, evaluation) is in ``core``; the checks of each
paper are in ``minip`` (paper B, TT-n) and ``entropic`` (paper A, EB-n), imported here so that
they register.
"""

from attnrank.claims import entropic, minip  # noqa: F401  (registers the checks)
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
