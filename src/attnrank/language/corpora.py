"""Corpora of Paper A's appendix B: text that ships with every Python install, controls of known
complexity order made from it, and user text files named in the config (nothing is downloaded).

Builtin corpora (config ``language.corpora.<name>: {builtin: <builtin>}``):

- ``prose``: the reference-manual topics of ``pydoc_data.topics`` (≈ 465 kB of English), their
  texts joined by a blank line in sorted key order.
- ``code``: standard-library source (``sysconfig.get_paths()["stdlib"]``): every ``*.py`` file in
  sorted relative-path order, skipping test directories and ``site-packages``, joined by a newline,
  read until ``max_bytes`` are reached.
- ``prose_words_shuffled``: the prose corpus (already cut to ``max_bytes``) with its words (maximal
  runs of non-whitespace bytes) permuted, every whitespace run kept in place: the same bytes, the
  same layout, no syntax beyond the word.
- ``prose_chars_shuffled``: the prose corpus with its characters permuted: the same unigram
  distribution, no structure at all (the highest complexity of the controls).
- ``templated``: sentences from a few fixed templates with slots filled from small vocabularies
  (seeded): low entropy by construction.

Every corpus is cut to its first ``max_bytes`` bytes after construction and is byte-exact across
runs on one Python install (the prose and code change with the Python version; the corpora table
records each corpus's sha256). Randomness comes from ``attnrank.core.seeding`` with the named parts
``("language", "corpus", <builtin>)``; the corpora do not depend on ``seed_offset`` (they are the
data, not a draw of it). User files are read relative to the working directory (the repository
root) and must be non-empty UTF-8 text without NUL bytes; ``check_corpora`` refuses anything
else before any job runs.

Standard library only at import time (the workflow calls ``check_corpora`` while it plans);
numpy is imported where a seeded permutation is drawn.
"""

from __future__ import annotations

import codecs
import os
import re
import sysconfig
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

PROSE = "prose"
CODE = "code"
WORDS_SHUFFLED = "prose_words_shuffled"
CHARS_SHUFFLED = "prose_chars_shuffled"
TEMPLATED = "templated"
BUILTIN_CORPORA: tuple[str, ...] = (PROSE, CODE, WORDS_SHUFFLED, CHARS_SHUFFLED, TEMPLATED)
BUILTIN = "builtin"  # a corpus's source: a builtin corpus of BUILTIN_CORPORA
FILE = "file"  # a corpus's source: a user text file
SOURCES = (BUILTIN, FILE)
# directory names whose files the code corpus skips (test suites, installed third-party packages)
SKIP_DIRS = frozenset({"test", "tests", "idle_test", "site-packages", "__pycache__"})


@dataclass(frozen=True)
class CorpusSource:
    """Where corpus ``name`` comes from: ``source`` ``BUILTIN`` (``ref`` is the builtin's name) or
    ``FILE`` (``ref`` is the path, relative to the repository root). A job carries it
    (``attnrank.language.jobs``) and ``load_source`` turns it into the corpus's bytes."""

    name: str
    source: str
    ref: str

# templated corpus: sentences of these templates; an upper-case token is a slot filled from _WORDS
_TEMPLATES: tuple[tuple[str, ...], ...] = (
    ("the", "ADJ", "NOUN", "VERB", "the", "NOUN", "."),
    ("a", "NOUN", "VERB", "a", "ADJ", "NOUN", "."),
    ("every", "NOUN", "VERB", "."),
    ("the", "NOUN", "is", "ADJ", "."),
)
_WORDS: dict[str, tuple[str, ...]] = {
    "NOUN": ("cat", "dog", "bird", "fish", "tree", "house", "car", "book"),
    "ADJ": ("red", "big", "old", "small"),
    "VERB": ("sees", "likes", "finds", "moves"),
}


def _seed_parts(builtin: str) -> tuple[str, str, str]:
    return ("language", "corpus", builtin)


@cache
def _prose() -> bytes:
    """The topic texts of ``pydoc_data.topics``, sorted by key, joined by a blank line."""
    from pydoc_data.topics import topics

    return "\n\n".join(topics[k] for k in sorted(topics)).encode("utf-8")


def stdlib_sources(root: Path | None = None) -> list[Path]:
    """The ``*.py`` files of the code corpus: sorted relative (POSIX) paths under the stdlib
    directory, none inside a directory named in ``SKIP_DIRS`` (those are never walked)."""
    root = Path(sysconfig.get_paths()["stdlib"]) if root is None else root
    rel: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        base = Path(folder).relative_to(root)
        rel.extend((base / f).as_posix() for f in files if f.endswith(".py"))
    return [root / r for r in sorted(rel)]


def _code(max_bytes: int, root: Path | None = None) -> bytes:
    """Standard-library source in sorted path order (UTF-8 files only), until max_bytes."""
    out: list[bytes] = []
    total = 0
    for path in stdlib_sources(root):
        if total >= max_bytes:
            break
        data = path.read_bytes()
        if not data or b"\0" in data or not _is_utf8(data, final=True):
            continue
        out.append(data if data.endswith(b"\n") else data + b"\n")
        total += len(out[-1])
    return b"".join(out)


def _words_shuffled(prose: bytes) -> bytes:
    """Permute the words (non-whitespace runs) of ``prose``, whitespace runs kept in place."""
    from attnrank.core.seeding import numpy_rng

    parts = re.split(rb"(\s+)", prose)  # even indices: words (maybe empty at the ends)
    words = parts[0::2]
    order = numpy_rng(*_seed_parts(WORDS_SHUFFLED)).permutation(len(words))
    parts[0::2] = [words[i] for i in order]
    return b"".join(parts)


def _chars_shuffled(prose: bytes) -> bytes:
    """Permute the characters (code points) of ``prose``; for this ASCII-dominated text nearly
    a byte permutation, and the result stays valid UTF-8."""
    from attnrank.core.seeding import numpy_rng

    chars = prose.decode("utf-8")
    order = numpy_rng(*_seed_parts(CHARS_SHUFFLED)).permutation(len(chars))
    return "".join(chars[i] for i in order).encode("utf-8")


def _templated(max_bytes: int) -> bytes:
    """Sentences (one a line) of a uniformly drawn template of ``_TEMPLATES`` with every slot drawn
    uniformly from its vocabulary in ``_WORDS`` (seeded), until at least max_bytes bytes."""
    from attnrank.core.seeding import numpy_rng

    rng = numpy_rng(*_seed_parts(TEMPLATED))
    width = max(len(t) for t in _TEMPLATES)
    lines: list[str] = []
    total = 0
    while total < max_bytes:  # one vectorized draw per block of sentences
        which = rng.integers(len(_TEMPLATES), size=1024)
        u = rng.random((1024, width))
        for i, t in enumerate(which):
            words = [_WORDS[w][int(u[i, j] * len(_WORDS[w]))] if w in _WORDS else w
                     for j, w in enumerate(_TEMPLATES[t])]
            lines.append(" ".join(words) + "\n")
            total += len(lines[-1])
            if total >= max_bytes:
                break
    return "".join(lines).encode("ascii")


def _builtin(builtin: str, max_bytes: int) -> bytes:
    """A builtin corpus cut to its first max_bytes bytes."""
    if builtin == PROSE:
        return _prose()[:max_bytes]
    if builtin == CODE:
        return _code(max_bytes)[:max_bytes]
    if builtin == WORDS_SHUFFLED:
        return _words_shuffled(_prose()[:max_bytes])[:max_bytes]
    if builtin == CHARS_SHUFFLED:
        return _chars_shuffled(_prose()[:max_bytes])[:max_bytes]
    if builtin == TEMPLATED:
        return _templated(max_bytes)[:max_bytes]
    raise ValueError(f"unknown builtin corpus {builtin!r}; expected one of {', '.join(BUILTIN_CORPORA)}")


_cached_builtin: Callable[[str, int], bytes] = cache(_builtin)


def _is_utf8(data: bytes, final: bool) -> bool:
    """Whether ``data`` decodes as UTF-8 (``final=False``: a cut may end inside a character)."""
    try:
        codecs.getincrementaldecoder("utf-8")().decode(data, final=final)
    except UnicodeDecodeError:
        return False
    return True


def _source(name: str, language: dict[str, Any]) -> tuple[str, str]:
    """(kind, value) of corpus ``name``: ("builtin", builtin name) or ("file", path)."""
    corpora = language.get("corpora") or {}
    if name not in corpora:
        raise ValueError(f"language.corpora: no corpus {name!r}; config has "
                         f"{', '.join(corpora) or 'none'}")
    spec = corpora[name]
    if not isinstance(spec, dict) or len(spec) != 1 or next(iter(spec)) not in SOURCES:
        raise ValueError(f"language.corpora.{name}: expected {{builtin: <name>}} or "
                         f"{{file: <path>}}, got {spec!r}")
    kind, value = next(iter(spec.items()))
    if kind == BUILTIN and value not in BUILTIN_CORPORA:
        raise ValueError(f"language.corpora.{name}.builtin: unknown builtin {value!r}; expected "
                         f"one of {', '.join(BUILTIN_CORPORA)}")
    if not isinstance(value, str) or not value:
        raise ValueError(f"language.corpora.{name}.{kind}: expected a non-empty string, got {value!r}")
    return kind, value


def _read_file(name: str, path: str, max_bytes: int) -> bytes:
    """The first max_bytes bytes of a user corpus file; ValueError naming the key and path when
    it is missing, empty or binary (NUL bytes, or not UTF-8)."""
    key = f"language.corpora.{name}.file"
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{key}: no such file {path!r} (paths are relative to the repository root)")
    with p.open("rb") as f:
        head = f.read(max_bytes + 1)
    if not head:
        raise ValueError(f"{key}: file {path!r} is empty")
    cut = len(head) > max_bytes
    head = head[:max_bytes]
    if b"\0" in head or not _is_utf8(head, final=not cut):
        raise ValueError(f"{key}: file {path!r} is not UTF-8 text (binary: NUL bytes or invalid "
                         f"UTF-8 in its first {max_bytes} bytes)")
    return head


def _load(name: str, kind: str, value: str, max_bytes: int) -> bytes:
    if kind == BUILTIN:
        return _cached_builtin(value, max_bytes)
    if kind == FILE:
        return _read_file(name, value, max_bytes)
    raise ValueError(f"corpus {name!r}: unknown source {kind!r}; expected one of {', '.join(SOURCES)}")


def load_corpus(name: str, language: dict[str, Any]) -> bytes:
    """The bytes of corpus ``name`` of config ``language`` (config["language"]): built (builtin)
    or read (file), cut to ``language["max_bytes"]``. Byte-exact across runs."""
    kind, value = _source(name, language)
    return _load(name, kind, value, int(language["max_bytes"]))


def load_source(source: CorpusSource, max_bytes: int) -> bytes:
    """The bytes of a job's corpus ``source``, cut to ``max_bytes``: the same bytes as
    ``load_corpus`` of the config entry the source was made from."""
    return _load(source.name, source.source, source.ref, max_bytes)


def corpus_source(name: str, language: dict[str, Any]) -> str:
    """``builtin`` or ``file``: where corpus ``name`` comes from."""
    return _source(name, language)[0]


def split_corpus(data: bytes, val_fraction: float) -> tuple[bytes, bytes]:
    """(train, validation): the last ``floor(len(data) · val_fraction)`` bytes are held out.
    Both parts are non-empty, else ValueError."""
    if not 0 < val_fraction < 1:
        raise ValueError(f"language.val_fraction must be in (0, 1), got {val_fraction}")
    n_val = int(len(data) * val_fraction)
    if n_val < 1 or n_val >= len(data):
        raise ValueError(f"a corpus of {len(data)} bytes cannot be split with val_fraction "
                         f"{val_fraction} (both parts must be non-empty)")
    return data[:-n_val], data[-n_val:]


def check_corpora(language: dict[str, Any], names: Iterable[str], where: str = "language",
                  min_bytes: int = 1) -> None:
    """Refuse, before any job runs, a corpus of ``names`` that the config cannot provide: a name
    not in ``language.corpora`` (the message names ``where``, e.g. the scale's ``corpora`` key),
    an unknown builtin, a source that is not exactly one of builtin / file, and a user file that
    is missing, empty, binary (NUL bytes or not UTF-8), or shorter than ``min_bytes`` bytes.
    Every message names the config key and, for a file, its path."""
    corpora = language.get("corpora") or {}
    for name in corpora:
        _source(name, language)
    unknown = [n for n in names if n not in corpora]
    if unknown:
        raise ValueError(f"{where}: corpora {unknown} are not in language.corpora "
                         f"({', '.join(corpora) or 'none'})")
    for name in names:
        kind, value = _source(name, language)
        if kind != FILE:
            continue
        n = len(_read_file(name, value, int(language["max_bytes"])))
        if n < min_bytes:
            raise ValueError(f"language.corpora.{name}.file: file {value!r} has {n} bytes; "
                             f"{where} needs at least {min_bytes} (train and validation windows)")
