"""The pages a user reads speak about the project, never about how it was built: no issue numbers,
no notes of the build, no path of the machine that wrote them. Checked over docs/, README.md and
the committed claims pages of both references; and every report caption renders without a
docutils message."""

import io
import re
from pathlib import Path

import docutils.core
import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([*(ROOT / "docs").glob("*.md"), ROOT / "README.md", ROOT / "benchmarks" / "NOTES.md",
                *(ROOT / "results" / "reference").glob("claims.*"),
                *(ROOT / "results" / "reference-smoke").glob("claims.*")])
CAPTIONS = sorted((ROOT / "workflow" / "report").glob("*.rst"))

BUILD_NOTES = [
    ("an issue number", re.compile(r"\bissues?\s*#?\s*\d+", re.IGNORECASE)),
    ("an issue-like reference", re.compile(r"(?<![\w&/.#-])#\d+\b(?![\w-])")),
    ("a note of the build", re.compile(r"\bstop-\d+\b", re.IGNORECASE)),
    ("a path of this machine", re.compile(
        r"(?<![\w.~-])/(?:work|root|home|tmp|Users|scratch|mnt|private|opt|var|srv)/")),
]


def build_notes(text: str) -> list[str]:
    """What in ``text`` speaks about how the project was built (a style block of an HTML page
    is skipped: its colours are not references)."""
    text = re.sub(r"<style>.*?</style>", "", text, flags=re.DOTALL)
    return [f"{what}: {m.group(0)!r}" for what, pattern in BUILD_NOTES
            for m in pattern.finditer(text)]


@pytest.mark.parametrize("text, found", [
    ("registered in issue 24", ["an issue number"]),
    ("see Issue #7 and issues 3", ["an issue number", "an issue number",
                                   "an issue-like reference"]),
    ("fixed in #12.", ["an issue-like reference"]),
    ("the stop-39 note", ["a note of the build"]),
    ("written to /tmp/x and /work/main/results", ["a path of this machine"] * 2),
    ("[methods](methods.md#5-claims), &#8804; 3, results/full/x, ~/tmp/y, `sha256 #`", []),
    ("<style>td{border:1px solid #999}</style><p>ok</p>", []),
])
def test_the_check_finds_build_notes_and_nothing_else(text, found):
    assert [f.split(":")[0] for f in build_notes(text)] == found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_speaks_about_how_the_project_was_built(page):
    notes = build_notes(page.read_text())
    assert not notes, f"{page.relative_to(ROOT)}: {notes[:5]}"


def test_the_pages_checked_include_both_claims_pages_when_committed():
    names = {str(p.relative_to(ROOT)) for p in PAGES}
    assert {"README.md", "docs/performance.md", "docs/methods.md"} <= names
    for ref in ("reference", "reference-smoke"):
        if (ROOT / "results" / ref / "claims.md").exists():
            assert f"results/{ref}/claims.md" in names and f"results/{ref}/claims.csv" in names


def docutils_messages(text: str) -> list[str]:
    """Every docutils system message (any level, INFO up) that rendering ``text`` as
    reStructuredText prints, as Snakemake's report renders a caption."""
    stream = io.StringIO()
    docutils.core.publish_doctree(text, settings_overrides={
        "report_level": 1, "halt_level": 5, "warning_stream": stream})
    return [line for line in stream.getvalue().splitlines()
            if re.search(r"\((DEBUG|INFO|WARNING|ERROR|SEVERE)/\d\)", line)]


def test_the_caption_check_sees_an_undefined_substitution():
    assert any("Undefined substitution" in m for m in docutils_messages("ρ is |Spearman ρ| here"))
    assert docutils_messages(r"ρ is \|Spearman ρ\| here") == []


@pytest.mark.parametrize("caption", CAPTIONS, ids=lambda p: p.name)
def test_every_report_caption_renders_without_a_docutils_message(caption):
    assert docutils_messages(caption.read_text()) == []
