"""Derived code hashes: the sha256 of the normalized source of a step's import closure.

A step's code hash is computed from the imports, never from a hand-kept list: the entry module,
every ``attnrank`` module it imports (at module level or inside a function, absolute or relative),
recursively, and the ``__init__.py`` of every package on the way (they run on import).

    hash = sha256( Σ over sorted closure paths p:  p ‖ 0x00 ‖ normalized(p) ‖ 0x00 )

with p relative to the package's parent folder (``attnrank/...``) and ``normalized(p)`` the dump
of the parsed syntax tree with every docstring removed: comments, docstrings and formatting never
count, any change to what the code does (or to a module's name) does. The closure may hold only
science (``attnrank.core``, the wings and the steps' top-level modules): a module of
``attnrank.pipeline``, ``attnrank.publish`` or the CLI in it is an error, so run control can
change without rerunning anything. The dump is that of this Python version (pinned in
requirements.lock); standard library only: the workflow imports this module while it parses the
Snakefile.

A job records its step's hash and module list in its sidecar. Computing them parses the closure
(a fifth of a second a process), so the workflow computes every step's once as it loads and hands
them to its jobs in ``CODE_HASHES_ENV`` (``shared_code_hashes``), stamped with the digest of every
module of the package (``package_digest``); a job uses them only when its own package has that
digest (``step_code``), so what it records is what it would compute.

That table costs about a second to compute, paid by every Snakemake process that parses the
workflow (a dry run, a rebuilt figure, each job of a Slurm bundle). So it is kept on disk, in
``$ATTNRANK_CACHE_DIR`` (default ``$XDG_CACHE_HOME/attnrank``, else ``~/.cache/attnrank``), one
small file per (package digest, Python version, list of steps), the newest ``CACHE_KEEP`` kept: a
file is used only when its package digest is this package's, so an edit to any module computes it
again. A folder that cannot be written only costs the second.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import sys
from collections.abc import Iterable
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

PACKAGE = "attnrank"
PACKAGE_DIR = Path(__file__).resolve().parents[1]
# Every step writes its outputs through the atomic writers of io.py.
BASE_MODULES = ("attnrank.core.io",)
# The workflow's step code hashes for its jobs (``shared_code_hashes``).
CODE_HASHES_ENV = "ATTNRANK_CODE_HASHES"
# Where ``shared_code_hashes`` keeps its tables (see the module docstring), and how many.
CACHE_ENV = "ATTNRANK_CACHE_DIR"
CACHE_KEEP = 16
# Run control and publishing: never part of a step's code (see the module docstring).
NOT_SCIENCE = ("attnrank.pipeline", "attnrank.publish", "attnrank.cli", "attnrank.__main__")


def is_science(name: str) -> bool:
    """Whether module ``name`` may be part of a step's code (not run control or publishing)."""
    return not any(name == p or name.startswith(p + ".") for p in NOT_SCIENCE)


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    """``tree`` with the docstring of every module, class and function removed (in place)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                node.body = body[1:] or [ast.Pass()]
    return tree


def normalized_source(path: Path) -> bytes:
    """What of a module's source counts for its code hash: the dump of its syntax tree without
    docstrings, positions or comments."""
    return _normalized(path.read_bytes(), str(path))


@lru_cache(maxsize=4096)
def _normalized(source: bytes, filename: str) -> bytes:
    tree = ast.parse(source, filename=filename)
    return ast.dump(_strip_docstrings(tree), annotate_fields=True,
                    include_attributes=False).encode()


def module_path(name: str, package_dir: Path = PACKAGE_DIR) -> Path | None:
    """The file of module ``name`` (``attnrank.x.y``), or None when it is not a module of ours."""
    parts = name.split(".")
    if parts[0] != PACKAGE:
        return None
    base = package_dir.joinpath(*parts[1:])
    for cand in (base.with_suffix(".py"), base / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def _module_name(path: Path, package_dir: Path) -> str:
    rel = path.relative_to(package_dir).with_suffix("")
    parts = [PACKAGE, *rel.parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def direct_imports(path: Path, package_dir: Path = PACKAGE_DIR) -> set[str]:
    """Names of the ``attnrank`` modules that the file ``path`` imports, anywhere in its body.

    ``from attnrank.a import b`` yields ``attnrank.a`` and, when ``b`` is a submodule,
    ``attnrank.a.b``; relative imports are resolved against the file's package.
    """
    own = _module_name(path, package_dir)
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    found = _imported_names(path.read_bytes(), str(path), package)
    return {n for n in found if module_path(n, package_dir) is not None}


@lru_cache(maxsize=4096)
def _imported_names(source: bytes, filename: str, package: str) -> frozenset[str]:
    """Every module name an import in ``source`` (of a module in ``package``) can mean."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return frozenset(found)


def _with_parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def import_closure(entries: tuple[str, ...], package_dir: Path = PACKAGE_DIR) -> list[Path]:
    """The files of ``entries`` and of every ``attnrank`` module they import, transitively
    (with each package's ``__init__.py``), sorted."""
    seen: set[str] = set()
    todo = [n for e in entries for n in _with_parents(e)]
    for e in entries:
        if module_path(e, package_dir) is None:
            raise ValueError(f"code hash: {e!r} is not a module of the {PACKAGE} package "
                             f"(looked in {package_dir})")
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = module_path(name, package_dir)
        if path is None:
            continue
        for dep in direct_imports(path, package_dir):
            todo.extend(n for n in _with_parents(dep) if n not in seen)
    outside = sorted(n for n in seen if module_path(n, package_dir) is not None
                     and not is_science(n))
    if outside:
        raise ValueError(f"code hash of {', '.join(entries)}: the import closure reaches "
                         f"{', '.join(outside)}; science (core, the wings) must not import the "
                         "pipeline, publishing or the CLI")
    paths = {module_path(n, package_dir) for n in seen}
    return sorted(p for p in paths if p is not None)


def closure_hash(entries: tuple[str, ...], package_dir: Path = PACKAGE_DIR) -> str:
    """sha256 of the import closure of ``entries`` (see the module docstring)."""
    h = hashlib.sha256()
    root = package_dir.parent
    for path in import_closure(entries, package_dir):
        h.update(str(path.relative_to(root).as_posix()).encode())
        h.update(b"\0")
        h.update(normalized_source(path))
        h.update(b"\0")
    return h.hexdigest()


def step_entries(step: str, figure: str | None = None) -> tuple[str, ...]:
    """The entry modules of a registered step (a figure step adds the figure's own module)."""
    from attnrank.core.figures import figure_module_name
    from attnrank.pipeline.registry import FIGURES, STEPS

    if step not in STEPS:
        raise ValueError(f"unknown step {step!r}; registered: {', '.join(STEPS)}")
    entries = (STEPS[step].entry, *BASE_MODULES)
    if step == "figure":
        if figure not in FIGURES:
            raise ValueError(f"unknown figure {figure!r}; registered: {', '.join(FIGURES)}")
        entries += (figure_module_name(figure),)
    return entries


# Code hashes of this package's steps that ``shared_code_hashes`` computed or read from its
# cache in this process (key: ``_key(step, figure)``).
_KNOWN: dict[str, str] = {}


@cache
def step_code_hash(step: str, figure: str | None = None) -> str:
    """The code hash of a registered step in this checkout (cached per process; taken from
    ``shared_code_hashes`` when it has run here)."""
    known = _KNOWN.get(_key(step, figure))
    return known if known is not None else closure_hash(step_entries(step, figure))


def closure_modules(entries: tuple[str, ...], package_dir: Path = PACKAGE_DIR) -> list[str]:
    """The import closure of ``entries`` as paths relative to the package's parent
    (``attnrank/...``), sorted: the module list a sidecar records."""
    return [p.relative_to(package_dir.parent).as_posix() for p in import_closure(entries, package_dir)]


def package_digest(package_dir: Path = PACKAGE_DIR) -> str:
    """sha256 over the relative path and bytes of every module (``*.py``) of the package, in path
    order: every code hash of the package is a function of it."""
    h = hashlib.sha256()
    for p in sorted(package_dir.rglob("*.py")):
        if "__pycache__" not in p.parts:
            h.update(p.relative_to(package_dir).as_posix().encode())
            h.update(b"\0")
            h.update(p.read_bytes())
            h.update(b"\0")
    return h.hexdigest()


def _key(step: str, figure: str | None) -> str:
    return step if figure is None else f"{step}:{figure}"


def cache_dir() -> Path:
    """The folder of the code-hash tables: ``$ATTNRANK_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/attnrank``, else ``~/.cache/attnrank``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / PACKAGE


def _cache_file(digest: str, steps: list[tuple[str, str | None]]) -> Path:
    key = json.dumps([digest, sys.version, steps], separators=(",", ":"))
    return cache_dir() / f"code-hashes-{hashlib.sha256(key.encode()).hexdigest()[:32]}.json"


def _read_cached(path: Path, digest: str, keys: set[str]) -> str | None:
    """The table in ``path`` when it is one of this package (``digest``) for exactly ``keys``."""
    try:
        text = path.read_text()
        rec = json.loads(text)
        if rec["package"] == digest and set(rec["steps"]) == keys:
            return text
    except (OSError, ValueError, KeyError, TypeError):
        pass  # absent, unreadable or damaged: compute
    return None


def _write_cached(path: Path, text: str) -> None:
    """Write ``path`` atomically and keep the newest ``CACHE_KEEP`` tables; never fails."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
        tables = sorted(path.parent.glob("code-hashes-*.json"), key=lambda p: p.stat().st_mtime)
        for old in tables[:-CACHE_KEEP]:
            old.unlink(missing_ok=True)
    except OSError:
        pass  # a folder we cannot write: the next parse computes again


def shared_code_hashes(steps: Iterable[tuple[str, str | None]],
                       package_dir: Path = PACKAGE_DIR) -> str:
    """The ``CODE_HASHES_ENV`` value for the (step, figure) pairs of ``steps``: JSON
    ``{"package": package_digest, "modules": [path, ...], "steps": {key: [hash, [module index,
    ...]]}}`` (key: the step, or ``step:figure``). For this package, read from the cache folder
    when a table of this package digest is there (``cache_dir``), else computed and kept there."""
    steps = [(step, figure) for step, figure in steps]
    digest = package_digest(package_dir)
    if package_dir != PACKAGE_DIR:  # another package (tests): never cached
        return _compute_shared(steps, digest, package_dir)
    path = _cache_file(digest, steps)
    text = _read_cached(path, digest, {_key(*s) for s in steps})
    if text is None:
        text = _compute_shared(steps, digest, package_dir)
        _write_cached(path, text)
    _KNOWN.update({key: str(rec[0]) for key, rec in json.loads(text)["steps"].items()})
    return text


def _compute_shared(steps: list[tuple[str, str | None]], digest: str, package_dir: Path) -> str:
    modules: list[str] = []
    index: dict[str, int] = {}
    table: dict[str, list[Any]] = {}
    for step, figure in steps:
        entries = step_entries(step, figure)
        paths = closure_modules(entries, package_dir)
        for path in paths:
            if path not in index:
                index[path] = len(modules)
                modules.append(path)
        code = (step_code_hash(step, figure) if package_dir == PACKAGE_DIR
                else closure_hash(entries, package_dir))
        table[_key(step, figure)] = [code, [index[p] for p in paths]]
    return json.dumps({"package": digest, "modules": modules, "steps": table},
                      separators=(",", ":"))


def step_code(step: str, figure: str | None = None) -> tuple[str, list[str]]:
    """(code hash, closure module paths) of a registered step: from the workflow's
    ``CODE_HASHES_ENV`` when it holds the step and was computed from a package with this
    package's digest, else computed here."""
    shared = os.environ.get(CODE_HASHES_ENV)
    if shared:
        try:
            rec = json.loads(shared)
            hit = rec["steps"].get(_key(step, figure))
            if hit is not None and rec["package"] == package_digest():
                return str(hit[0]), [str(rec["modules"][i]) for i in hit[1]]
        except (ValueError, KeyError, TypeError, IndexError, AttributeError):
            pass  # not ours, or damaged: compute
    return step_code_hash(step, figure), closure_modules(step_entries(step, figure))
