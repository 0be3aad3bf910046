"""The claims machinery: verdicts, the ``@claim`` registry of checks, and their evaluation.

A failed claim is a scientific result, not a crash. Each check is a pure function
``check(tables, params, values) -> (passed, measured, threshold, note[, sweep])`` registered with
``@claim``; ``tables`` maps a table's file stem (e.g. "minip_witness") to its DataFrame. A check
whose tables or grid points are missing raises ``NotRun`` with the reason.

Free parameters the paper leaves open (τ of a numerical rank, β of a softmax teacher) are reported,
never picked after the fact: a check judged at a value fixed before the run returns, as ``sweep``,
the verdict at every value of the config's grid (``sweep_text``), headline marked. It is the
verdict table's ``sweep`` column, empty for claims without such a parameter.

Every threshold comes from the config's ``claims`` block: ``claim_values`` gives a claim its named
values (the block's shared thresholds, the claim's own sub-block, Paper A's headline τ and β), the
check reads them and the claim's statement is rendered from the same values, so the text and the
check cannot diverge.

A claim is declared once, where its check lives: ``@claim(id, paper, tables, statement)``; it can
read (through ``need``) only the tables it declares. Verdicts come out in the order the checks were
registered (``attnrank.claims`` imports the wings in paper order); the pipeline's registry collects
the same declarations from the source (``attnrank.pipeline.registry.CLAIMS``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from attnrank.core import WINGS

PASS, FAIL, NOT_RUN = "pass", "fail", "not run"
MEASURED = "measured"  # a question the papers leave open: reported, never pass/fail


@dataclass
class Verdict:
    id: str
    paper: str
    statement: str
    measured: str
    threshold: str
    verdict: str
    note: str = ""
    sweep: str = ""
    quorum: str = ""


class NotRun(Exception):
    """Raised by a check when its inputs are not in this run (e.g. the smoke grid)."""


class UnlistedTable(Exception):
    """A check asked for a table that its ``@claim`` does not declare (a bug)."""


class Outcome(NamedTuple):
    """What a check returns: the verdict (``passed``; None for a ``measured`` claim), its texts,
    where a free parameter is swept, the verdict at every value of it (``sweep_text``), and, for
    a verdict judged by the seed quorum, every per-seed condition's success count
    (``quorum``: (condition, k, n) each)."""

    passed: bool | None
    measured: str
    threshold: str
    note: str
    sweep: str = ""
    quorum: tuple[tuple[str, int, int], ...] = ()


Check = Callable[[Mapping[str, pd.DataFrame], dict[str, Any]], Outcome]
Values = dict[str, Any]
ValueCheck = Callable[[Mapping[str, pd.DataFrame], dict[str, Any], Values], Outcome]
Statement = str | Callable[[Values], str]


def claim_values(cid: str, params: dict[str, Any]) -> Values:
    """The named values claim ``cid`` is judged with: the shared thresholds of ``params["claims"]``
    (its entries that are not claim ids), then the claim's own sub-block, plus Paper A's
    ``headline_tau`` and ``headline_beta``. A KeyError when ``params`` has no claims block."""
    block = params["claims"]
    entropic = params.get("entropic", {})
    values = {k: entropic[k] for k in ("headline_tau", "headline_beta") if k in entropic}
    values.update({k: v for k, v in block.items() if k not in CHECKS})
    values.update(block.get(cid) or {})
    return values


class ClaimTables(Mapping[str, pd.DataFrame]):
    """The run's tables as one claim sees them: only those the claim declares."""

    def __init__(self, claim_id: str, allowed: tuple[str, ...],
                 tables: Mapping[str, pd.DataFrame]) -> None:
        self.claim_id = claim_id
        self.allowed = allowed
        self._tables = tables

    def _check(self, name: object) -> None:
        if name not in self.allowed:
            raise UnlistedTable(f"claim {self.claim_id} reads table {name!r}, which "
                                f"its @claim does not declare ({', '.join(self.allowed)})")

    def __getitem__(self, name: str) -> pd.DataFrame:
        self._check(name)
        return self._tables[name]

    def __contains__(self, name: object) -> bool:
        self._check(name)
        return name in self._tables

    def __iter__(self) -> Iterator[str]:
        return (t for t in self.allowed if t in self._tables)

    def __len__(self) -> int:
        return sum(1 for _ in self)


@dataclass(frozen=True)
class RegisteredClaim:
    id: str
    paper: str  # as recorded in the verdict: the declared paper, plus the caveat if any
    template: Statement  # a str.format template over the claim's values, or a function of them
    check: Check
    tables: tuple[str, ...] = ()  # the tables it declares
    module: str = ""  # the module that declares it (attnrank.<wing>.claims)
    measured: bool = False  # an open question: its check returns passed=None, verdict MEASURED

    def statement(self, params: dict[str, Any]) -> str:
        """The claim's statement with the values of ``params`` filled in."""
        values = claim_values(self.id, params)
        return self.template(values) if callable(self.template) else self.template.format(**values)


CHECKS: dict[str, RegisteredClaim] = {}


def claim(cid: str, paper: str, tables: tuple[str, ...], statement: Statement,
          caveat: str = "", measured: bool = False) -> Callable[[ValueCheck], Check]:
    """Declare claim ``cid`` of ``paper`` ("A" or "B"), reading ``tables`` (file stems), and
    register its check; the verdict's paper is ``paper`` followed by ``(caveat)`` when one is
    given. ``measured``: a question the paper leaves open, whose verdict is always MEASURED (its
    check returns passed=None; a pass/fail from it, or None from a paper claim, is a bug).
    ``statement`` is rendered from the claim's values
    (``claim_values``): a ``str.format`` template or a function of the values. The check is called
    as ``fn(tables, params, values)``; the returned ``check(tables, params)`` sees only the
    claim's tables."""
    if cid in CHECKS:
        raise ValueError(f"claim {cid!r} is registered twice")
    if paper not in ("A", "B") or not tables:
        raise ValueError(f"claim {cid!r}: paper must be 'A' or 'B' and tables non-empty")
    allowed = tuple(tables)
    shown = paper + (f" ({caveat})" if caveat else "")

    def deco(fn: ValueCheck) -> Check:
        @functools.wraps(fn)
        def check(tables: Mapping[str, pd.DataFrame], params: dict[str, Any]) -> Outcome:
            out = Outcome(*fn(ClaimTables(cid, allowed, tables), params,
                              claim_values(cid, params)))
            if (out.passed is None) != measured:
                raise ValueError(f"claim {cid}: a {'measured' if measured else 'paper'} claim "
                                 f"returned passed={out.passed!r}")
            return out

        CHECKS[cid] = RegisteredClaim(cid, shown, statement, check, allowed, fn.__module__,
                                      measured)
        return check

    return deco


def need(tables: Mapping[str, pd.DataFrame], name: str) -> pd.DataFrame:
    """The table ``name``; ``NotRun`` when it is not in this run, ``UnlistedTable`` when the
    claim being checked does not declare it."""
    if name not in tables:
        raise NotRun(f"table {name} is not in this run")
    return tables[name]


def fmt(x: float | None) -> str:
    """A number in a verdict's text: 4 significant digits, "nan" for a missing value."""
    return "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.4g}"


def share(ok: pd.Series, what: str) -> str:
    """How many of a claim's units satisfy a condition, as text beside a measured value: ``ok``
    holds one boolean per unit (seed, student, (r*, seed) pair), e.g. "7/8 students"."""
    return f"{int(ok.sum())}/{len(ok)} {what}"


def seeds_of(ok: pd.Series, what: str) -> str:
    """``share`` for one boolean per seed: "2/3 seeds exact"."""
    return share(ok, f"seeds {what}")


def quorum_size(n: int, quorum: float) -> int:
    """How many of ``n`` seeds a per-seed condition needs under the seed quorum
    (``claims.seed_quorum``): ⌈quorum · n⌉, at least 1 (0.8: 4 of 5, 3 of 3, 2 of 2)."""
    return max(1, math.ceil(quorum * n - 1e-9))


def meets_quorum(ok: pd.Series, quorum: float) -> bool:
    """Whether at least ``quorum_size`` of the seeds behind ``ok`` (one boolean per seed) meet the
    condition; False when there is no seed."""
    return len(ok) > 0 and int(ok.sum()) >= quorum_size(len(ok), quorum)


def quorum_count(condition: str, ok: pd.Series) -> tuple[str, int, int]:
    """A per-seed condition's success count for ``Outcome.quorum``: (condition, k, n) from one
    boolean per seed."""
    return condition, int(ok.sum()), len(ok)


def quorum_text(counts: Sequence[tuple[str, int, int]]) -> str:
    """The ``quorum`` column: "m=6: 5/5; m=16: 4/5" (conditions in the check's order)."""
    return "; ".join(f"{c}: {k}/{n}" for c, k, n in counts)


def parse_quorum(text: str) -> list[tuple[str, int, int]]:
    """``quorum_text`` read back (the held-out record pools two runs' counts). A ValueError on a
    part that is not "condition: k/n"."""
    out = []
    for part in filter(None, (t.strip() for t in str(text).split("; "))):
        cond, _, frac = part.rpartition(": ")
        k, _, n = frac.partition("/")
        if not cond or not k.isdigit() or not n.isdigit():
            raise ValueError(f"quorum column: {part!r} is not 'condition: k/n'")
        out.append((cond, int(k), int(n)))
    return out


def weakest_text(counts: Sequence[tuple[str, int, int]], level: float) -> str:
    """The weakest condition (smallest k/n, the first on a tie) with its Clopper–Pearson interval
    at ``level``: "weakest m=16: 4/5 seeds (90% CP 0.34–0.99)"; empty without conditions."""
    from attnrank.core.stats import clopper_pearson

    if not counts:
        return ""
    cond, k, n = min(counts, key=lambda c: c[1] / c[2])
    lo, hi = clopper_pearson(k, n, level)
    return f"weakest {cond}: {k}/{n} seeds ({level:.0%} CP {lo:.2f}–{hi:.2f})"


def every_seed_reading(every: bool) -> str:
    """The paper's every-seed reading of a quorum-judged claim, for its note."""
    return f"every seed (the paper's reading): {PASS if every else FAIL}"


def sweep_text(verdicts: Mapping[str, bool], headline: str) -> str:
    """The verdict at every value of a free parameter, the headline (the one judged) marked:
    ``{"τ=0.01": True, "τ=0.05": False}`` → "τ=0.01 (headline): pass; τ=0.05: fail"."""
    return "; ".join(f"{k}{' (headline)' if k == headline else ''}: {PASS if ok else FAIL}"
                     for k, ok in verdicts.items())


def registered_checks() -> list[RegisteredClaim]:
    """Every registered check: wing by wing (``attnrank.core.WINGS``), each wing's in the order
    its module declares them."""
    order = {wing: i for i, wing in enumerate(WINGS)}

    def wing(c: RegisteredClaim) -> int:
        parts = c.module.split(".")
        return order.get(parts[1] if len(parts) > 1 else "", len(order))

    return sorted(CHECKS.values(), key=wing)  # stable: declaration order within a wing


def evaluate_claims(inputs: Sequence[str | Path], params: dict[str, Any]) -> pd.DataFrame:
    """Run every registered check on the tables ``inputs`` (Parquet files): one row per claim."""
    from attnrank.core.io import read_table

    tables = {Path(p).stem: read_table(p) for p in inputs}
    rows = []
    for c in registered_checks():
        try:
            passed, measured, threshold, note, sweep, quorum = c.check(tables, params)
            verdict = MEASURED if passed is None else PASS if passed else FAIL
        except NotRun as why:
            measured, threshold, note, sweep, quorum, verdict = "", "", str(why), "", (), NOT_RUN
        rows.append(asdict(Verdict(c.id, c.paper, c.statement(params), measured, threshold,
                                   verdict, note, sweep, quorum_text(quorum))))
    return pd.DataFrame(rows)


SWEEP_HEADER = "verdict at every value"
COLUMNS = ("id", "verdict", "statement", "measured", "threshold", "note", SWEEP_HEADER)
QUORUM_HEADER = "seeds behind a quorum verdict"
SMOKE_NOTE = ("Smoke scale: these grids (a few hundred training steps, 2 seeds) are too small to "
              "judge the papers. A smoke run shows that every path of the pipeline runs and is "
              "checked against the committed smoke reference; the verdicts of the reproduction "
              "are the full run's")
REFERENCE_CLAIMS = "results/reference/claims.md"


def _sweep(row: Any) -> str:
    """A verdict row's ``sweep`` (empty for a table written before the column existed)."""
    return getattr(row, "sweep", "") or ""


def _weakest(row: Any, level: float) -> str:
    """A verdict row's weakest quorum condition with its interval (empty without a quorum)."""
    return weakest_text(parse_quorum(getattr(row, "quorum", "") or ""), level)


def _counts(table: pd.DataFrame) -> str:
    counts = table["verdict"].value_counts().to_dict()
    return ", ".join(f"{counts.get(v, 0)} {v}" for v in (PASS, FAIL, MEASURED, NOT_RUN))


def claims_html(table: pd.DataFrame, scale: str, level: float) -> str:
    """The verdicts as a self-contained HTML page (the report shows it inline); the weakest quorum
    condition with its Clopper–Pearson interval at ``level`` beside each verdict."""
    import html

    colors = {PASS: "#d9f2d9", FAIL: "#f8d7d7", NOT_RUN: "#eeeeee", MEASURED: "#e3ecf7"}
    cols = ("id", "verdict", QUORUM_HEADER, *COLUMNS[2:])
    head = "".join(f"<th>{c}</th>" for c in cols)
    rows = []
    for r in table.itertuples():
        cells = [r.id, r.verdict, _weakest(r, level), r.statement, r.measured, r.threshold,
                 r.note, _sweep(r)]
        tds = "".join(f"<td>{html.escape(str(c))}</td>" for c in cells)
        rows.append(f'<tr style="background:{colors.get(r.verdict, "#fff")}">{tds}</tr>')
    smoke = (f"<p><b>{html.escape(SMOKE_NOTE)}</b> ({html.escape(REFERENCE_CLAIMS)} in the "
             "repository).</p>" if scale == "smoke" else "")
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>Claims</title><style>"
            "body{font-family:sans-serif;font-size:13px}table{border-collapse:collapse}"
            "td,th{border:1px solid #999;padding:3px 6px;vertical-align:top;text-align:left}"
            f"</style></head><body><h2>Claims — scale {html.escape(scale)}</h2>{smoke}"
            f"<p>Each claim checked on this run's tables: {_counts(table)}.</p>"
            f"<table><tr>{head}</tr>{''.join(rows)}</table></body></html>\n")


def _md(text: Any) -> str:
    """Claim text as Markdown: ``*`` escaped (r* is not emphasis)."""
    return str(text).replace("*", "\\*")


def _cell(text: Any) -> str:
    """Claim text in a Markdown table cell: ``_md`` with ``|`` escaped (|ρ| stays |ρ|)."""
    return _md(text).replace("|", "\\|")


def claims_markdown(table: pd.DataFrame, scale: str, level: float) -> str:
    """claims.md: the counts, an overview table (id, verdict, the weakest quorum condition with
    its Clopper–Pearson interval at ``level``, statement), then every claim in full (statement,
    measured, threshold, note, verdict at every value) under its own heading."""
    lines = [f"# Claims — scale `{scale}`", ""]
    if scale == "smoke":
        lines += [f"**{SMOKE_NOTE}: [`{REFERENCE_CLAIMS}`](../reference/claims.md).**", ""]
    lines += [f"Each claim checked on this run's tables: {_counts(table)} (*measured*: a question "
              "the papers leave open, never pass/fail). A verdict judged by the seed quorum shows "
              f"its weakest per-seed condition with the exact (Clopper–Pearson) {level:.0%} "
              "interval of its success rate. Free parameters: *" + SWEEP_HEADER + "* gives the "
              "verdict at every value in the config; the verdict is the headline's (fixed "
              "before the run).", "",
              f"| id | verdict | {QUORUM_HEADER} | statement |", "|---|---|---|---|"]
    for r in table.itertuples():
        lines.append(f"| [{r.id}](#{r.id.lower()}) | **{r.verdict}** | {_cell(_weakest(r, level))}"
                     f" | {_cell(r.statement)} |")
    lines += ["", "## Every claim in full"]
    for r in table.itertuples():
        lines += ["", f"### {r.id}", "", f"**{r.verdict}** — {_md(r.statement)}"]
        for head, text in (("Measured", r.measured), ("Threshold", r.threshold),
                           ("Seeds behind the quorum", r.quorum if hasattr(r, "quorum") else ""),
                           ("Note", r.note), (SWEEP_HEADER.capitalize(), _sweep(r))):
            if str(text or ""):
                lines += ["", f"*{head}.* {_md(text)}"]
    return "\n".join(lines) + "\n"


def write_claims(table: pd.DataFrame, md_path: str | Path, csv_path: str | Path,
                 scale: str, html_path: str | Path | None = None, *, level: float
                 ) -> list[Path]:
    """Write the verdicts as Markdown (``claims_markdown``), as CSV and, when ``html_path`` is
    given, as an HTML page; ``level``: the Clopper–Pearson interval beside quorum verdicts."""
    from attnrank.core.io import write_table, write_text

    write_text(claims_markdown(table, scale, level), md_path)
    write_table(table, Path(csv_path))
    outs = [Path(md_path), Path(csv_path)]
    if html_path is not None:
        write_text(claims_html(table, scale, level), html_path)
        outs.append(Path(html_path))
    return outs
