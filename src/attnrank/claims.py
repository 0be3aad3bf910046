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


# What a scale's verdicts are for, said under the title of its claims page (Markdown, HTML): the
# smoke grids only show that every path runs; the papers are judged by the full run.
REFERENCE_CLAIMS = "results/reference/claims.md"
SCALE_NOTES = {
    "smoke": ("Smoke scale: these verdicts only show that every path of the pipeline runs (its "
              "grids are too small to judge the papers); the papers' verdicts are the full run's, "
              "in {link}."),
}


def _add_scale_note(paths: list[Path], scale: str) -> None:
    """Put the scale's note (``SCALE_NOTES``) under the title of the Markdown and HTML pages."""
    from attnrank.core.io import write_text

    if scale not in SCALE_NOTES:
        return
    for path in paths:
        text = path.read_text()
        if path.suffix == ".md":  # a link relative to results/<scale>/ (or a published reference)
            note = SCALE_NOTES[scale].format(link=f"[`{REFERENCE_CLAIMS}`](../reference/claims.md)")
            head, rest = text.split("\n", 1)
            write_text(f"{head}\n\n{note}\n{rest}", path)
        elif path.suffix == ".html":
            note = SCALE_NOTES[scale].format(link=f"<code>{REFERENCE_CLAIMS}</code>")
            head, rest = text.split("</h2>", 1)
            write_text(f"{head}</h2><p>{note}</p>{rest}", path)


def step(inputs: list[str], params: dict[str, Any], md: str | Path, csv: str | Path,
         html: str | Path | None) -> list[Path]:
    """The claims step: every registered check on the tables ``inputs``, written as Markdown, CSV
    and (when given) HTML, the scale's note (``SCALE_NOTES``) under the title; returns the paths
    written."""
    table = evaluate_claims(inputs, params)
    scale = params.get("scale", "?")
    paths = write_claims(table, md, csv, scale, html)
    _add_scale_note(paths, scale)
    return paths
