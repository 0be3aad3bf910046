"""The README's results section, generated from the committed reference run (``make readme``).

The text between ``<!-- results:start -->`` and ``<!-- results:end -->`` is rewritten from
``results/reference/claims.csv`` (counts, verdicts per paper, and the statement, measured values
and note of every claim that did not pass) and links every PNG under
``results/reference/figures/`` as a thumbnail, in registry order. Every number in the section comes
from claims.csv; nothing is typed by hand. Standard library and pandas only.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from attnrank.registry import FIGURES

START, END = "<!-- results:start -->", "<!-- results:end -->"
PAPERS = {"B": "Paper B (Min-IP)", "A": "Paper A (Entropic Bound)"}
VERDICTS = ("pass", "fail", "not run")
THUMB_WIDTH = 260  # pixels


def _paper(label: str) -> str:
    """The registry's paper of a verdict's paper column ("B (SPEC caution)" → "B")."""
    return label.split(" ")[0]


def _ids(table: pd.DataFrame, verdict: str) -> str:
    ids = table[table["verdict"] == verdict]["id"].tolist()
    return ", ".join(ids) if ids else "none"


def _sentence(text: str) -> str:
    return text if text.endswith((".", "!", "?")) else text + "."


def results_section(reference: Path, readme_dir: Path) -> str:
    """The generated section (without the markers) for the reference folder ``reference``; links
    are relative to ``readme_dir``."""
    table = pd.read_csv(reference / "claims.csv", dtype=str, keep_default_na=False)
    counts = table["verdict"].value_counts()
    rel = Path(os.path.relpath(reference, readme_dir)).as_posix()
    lines = [f"`{rel}/claims.md` (published from `results/full` by `make reference`; this section "
             f"is generated from `{rel}/claims.csv` by `make readme`): "
             f"{counts.get('pass', 0)} of {len(table)} claims pass, {counts.get('fail', 0)} fail, "
             f"{counts.get('not run', 0)} not run.", ""]
    for paper, title in PAPERS.items():
        part = table[table["paper"].map(_paper) == paper]
        lines.append(f"- **{title}**: " + "; ".join(f"{v}: {_ids(part, v)}" for v in VERDICTS)
                     + ".")
    others = table[table["verdict"] != "pass"]
    if len(others):
        lines += ["", "Every claim that did not pass, with what the run measured:", ""]
        for r in others.itertuples():
            note = f" *Note:* {_sentence(r.note)}" if r.note else ""
            lines.append(f"- **{r.id}** ({r.verdict}) — {r.statement}. *Measured:* {r.measured}."
                         f" *Threshold:* {r.threshold}.{note}")
    figures = [reference / "figures" / f"{n}.png" for n in FIGURES]
    figures = [p for p in figures if p.exists()]
    if figures:
        lines += ["", "Figures of the reference run (click for full size):", ""]
        for p in figures:
            link = Path(os.path.relpath(p, readme_dir)).as_posix()
            lines.append(f'<a href="{link}"><img src="{link}" width="{THUMB_WIDTH}" '
                         f'alt="{p.stem}" title="{p.stem}"></a>')
    return "\n".join(lines)


def render_readme(text: str, section: str) -> str:
    """``text`` with the part between the markers replaced by ``section``."""
    if text.count(START) != 1 or text.count(END) != 1 or text.index(START) > text.index(END):
        raise ValueError(f"README: expected one {START} … {END} block")
    head, rest = text.split(START)
    _, tail = rest.split(END)
    return f"{head}{START}\n{section}\n{END}{tail}"


def update_readme(readme: Path, reference: Path, check: bool = False) -> bool:
    """Rewrite the results section of ``readme`` from ``reference``; True when it changed (with
    ``check``, nothing is written)."""
    text = readme.read_text(encoding="utf-8")
    new = render_readme(text, results_section(reference, readme.parent))
    if new != text and not check:
        from attnrank.io import write_text

        write_text(new, readme)
    return new != text
