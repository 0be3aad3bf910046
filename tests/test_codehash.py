"""Derived code hashes: a step's hash covers exactly the science its entry module imports, and only
what that code does (comments, docstrings and formatting never count)."""

import json
import os
import shutil
from pathlib import Path

import pytest

from attnrank.pipeline import codehash
from attnrank.pipeline.codehash import (
    closure_hash,
    direct_imports,
    import_closure,
    is_science,
    normalized_source,
    step_entries,
)
from attnrank.pipeline.registry import FIGURES, STEPS

PACKAGE = Path(codehash.__file__).resolve().parents[1]
SCIENCE_ROOTS = ("core", "minip", "entropic", "language")


def _all_steps():
    return [(s, None) for s in STEPS if s != "figure"] + [("figure", f) for f in FIGURES]


@pytest.fixture(scope="module")
def package_copy(tmp_path_factory):
    dest = tmp_path_factory.mktemp("pkg") / "attnrank"
    shutil.copytree(PACKAGE, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def _edit(path: Path, new: bytes) -> bytes:
    before = path.read_bytes()
    path.write_bytes(new)
    return before


def _cosmetic(source: bytes) -> bytes:
    """The same code with a comment, another docstring and a blank line added."""
    text = source.decode()
    if text.lstrip().startswith(('"""', "'''")):
        quote = text.lstrip()[:3]
        text = text.replace(quote, quote + "An edited docstring. ", 1)
    return ("# a comment\n\n" + text + "\n\n# another comment\n").encode()


@pytest.mark.parametrize(("step", "figure"), _all_steps())
def test_hash_changes_with_every_module_of_the_closure_and_only_those(package_copy, step, figure):
    entries = step_entries(step, figure)
    closure = {p.relative_to(package_copy) for p in import_closure(entries, package_copy)}
    every = {p.relative_to(package_copy) for p in package_copy.rglob("*.py")}
    base = closure_hash(entries, package_copy)
    for rel in sorted(every):
        path = package_copy / rel
        before = _edit(path, path.read_bytes() + b"\n_AN_EDIT = 1\n")
        try:
            changed = closure_hash(entries, package_copy) != base
            path.write_bytes(_cosmetic(before))
            cosmetic = closure_hash(entries, package_copy) != base
        finally:
            path.write_bytes(before)
        assert changed == (rel in closure), (step, figure, rel)
        assert not cosmetic, (step, figure, rel, "a comment or docstring changed the hash")
    assert closure_hash(entries, package_copy) == base


def test_comments_docstrings_and_formatting_never_count(tmp_path):
    a = tmp_path / "a.py"
    b = tmp_path / "b.py"
    a.write_text('"""Doc."""\n\ndef f(x, y):\n    """Adds."""\n    return x + y  # sum\n')
    b.write_text("def f(x,\n      y):\n    return (x\n            + y)\n")
    assert normalized_source(a) == normalized_source(b)
    b.write_text("def f(x, y):\n    return x - y\n")
    assert normalized_source(a) != normalized_source(b)
    b.write_text("def f(x, y):\n    'only a docstring'\n")
    assert b"only a docstring" not in normalized_source(b)


def test_closures_follow_function_level_and_package_imports():
    closure = {p.relative_to(PACKAGE).as_posix() for p in import_closure(step_entries("minip_train"))}
    # minip/experiments/train.py → minip/models.py, which imports minip/task.py inside a function
    assert {"minip/experiments/train.py", "minip/models.py", "minip/task.py", "core/train.py",
            "core/seeding.py", "core/io.py", "core/control.py", "__init__.py",
            "minip/__init__.py", "minip/experiments/__init__.py"} <= closure
    assert not any(p.startswith(("pipeline/", "publish/", "cli.py")) for p in closure)
    figure = {p.relative_to(PACKAGE).as_posix()
              for p in import_closure(step_entries("figure", "minip_witness"))}
    assert {"core/figures.py", "minip/figures/minip_witness.py", "core/style.py"} <= figure
    assert "minip/figures/minip_rank_vs_m.py" not in figure
    assert "minip/experiments/train.py" not in figure


def _science_modules(package: Path) -> list[Path]:
    return sorted(p for root in SCIENCE_ROOTS for p in (package / root).rglob("*.py")) + [
        package / "claims.py"]


def test_science_never_imports_the_pipeline_publishing_or_the_cli():
    """The import boundary: no module of core/ or a wing imports pipeline/, publish/ or the CLI,
    at module level or inside a function; and a wing imports no other wing."""
    wings = ("minip", "entropic", "language")
    for path in _science_modules(PACKAGE):
        rel = path.relative_to(PACKAGE)
        imported = direct_imports(path)
        bad = sorted(n for n in imported if not is_science(n))
        assert not bad, f"{rel} imports {', '.join(bad)}"
        if rel.parts[0] in wings:
            other = sorted(n for n in imported if n.split(".")[1] in wings
                           and n.split(".")[1] != rel.parts[0])
            assert not other, f"{rel} (wing {rel.parts[0]}) imports another wing: {other}"
        if rel.parts[0] == "core":
            assert not [n for n in imported if n.split(".")[1] in wings], rel


def test_a_science_module_that_imports_the_pipeline_is_refused(package_copy):
    path = package_copy / "minip" / "models.py"
    before = _edit(path, path.read_bytes() + b"\ndef _f():\n    from attnrank.pipeline import "
                                                b"progress  # noqa\n")
    try:
        with pytest.raises(ValueError, match=r"reaches attnrank.pipeline.*must not import"):
            closure_hash(step_entries("minip_train"), package_copy)
    finally:
        path.write_bytes(before)


def test_relative_imports_are_resolved(tmp_path):
    pkg = tmp_path / "attnrank"
    (pkg / "sub").mkdir(parents=True)
    for f in ("__init__.py", "sub/__init__.py", "a.py", "sub/b.py", "sub/c.py"):
        (pkg / f).write_text("")
    (pkg / "sub" / "b.py").write_text("from . import c\nfrom ..a import x\n")
    assert direct_imports(pkg / "sub" / "b.py", pkg) >= {"attnrank.sub.c", "attnrank.a"}


def test_unknown_entry_is_refused():
    with pytest.raises(ValueError, match="not a module"):
        closure_hash(("attnrank.no_such_module",))
    with pytest.raises(ValueError, match="unknown step"):
        step_entries("no_such_step")


def test_a_job_records_the_workflow_hashes_only_when_its_package_is_the_same(package_copy,
                                                                            monkeypatch):
    """The workflow's shared hashes (CODE_HASHES_ENV) are exactly what a job would compute, and a
    job whose package differs (or an unreadable value) computes its own."""
    steps = _all_steps()
    monkeypatch.delenv(codehash.CODE_HASHES_ENV, raising=False)
    own = {key: codehash.step_code(*key) for key in steps}
    assert own[("minip_train", None)][0] == closure_hash(step_entries("minip_train"))
    monkeypatch.setenv(codehash.CODE_HASHES_ENV, codehash.shared_code_hashes(steps))
    assert {key: codehash.step_code(*key) for key in steps} == own
    # hashes made from another package (one module edited): never used
    path = package_copy / "core" / "train.py"
    before = _edit(path, path.read_bytes() + b"\nEDITED = 1\n")
    try:
        other = codehash.shared_code_hashes([("minip_train", None)], package_copy)
    finally:
        path.write_bytes(before)
    assert codehash.package_digest(package_copy) == codehash.package_digest()
    before = _edit(path, path.read_bytes() + b"\nEDITED = 1\n")
    try:
        assert codehash.package_digest(package_copy) != codehash.package_digest()
    finally:
        path.write_bytes(before)
    assert json.loads(other)["steps"]["minip_train"][0] != own[("minip_train", None)][0]
    monkeypatch.setenv(codehash.CODE_HASHES_ENV, other)
    assert codehash.step_code("minip_train") == own[("minip_train", None)]
    for damaged in ("{not json", "[]", '{"package": 1}'):
        monkeypatch.setenv(codehash.CODE_HASHES_ENV, damaged)
        assert codehash.step_code("minip_train") == own[("minip_train", None)]


def _fresh(monkeypatch, folder):
    """The cache folder set to ``folder``, this process's hashes forgotten."""
    monkeypatch.setenv(codehash.CACHE_ENV, str(folder))
    monkeypatch.setattr(codehash, "_KNOWN", {})


def test_the_shared_hashes_are_kept_on_disk_and_read_back_as_computed(tmp_path, monkeypatch):
    """The second parse reads the table the first computed (nothing is computed again), and what
    it reads is byte for byte what a computation gives."""
    steps = _all_steps()
    _fresh(monkeypatch, tmp_path / "cache")
    computed = codehash._compute_shared(steps, codehash.package_digest(), PACKAGE)
    assert codehash.shared_code_hashes(steps) == computed
    assert len(list((tmp_path / "cache").glob("code-hashes-*.json"))) == 1

    def no_computing(*args):
        raise AssertionError("computed although a table of this package was kept")

    _fresh(monkeypatch, tmp_path / "cache")
    monkeypatch.setattr(codehash, "_compute_shared", no_computing)
    assert codehash.shared_code_hashes(steps) == computed
    # the rules' step_code_hash takes the same hashes (its per-process cache bypassed)
    assert codehash.step_code_hash.__wrapped__("minip_train") == \
        json.loads(computed)["steps"]["minip_train"][0]
    # another list of steps is another table
    with pytest.raises(AssertionError, match="computed although"):
        codehash.shared_code_hashes(steps[:3])


def test_a_kept_table_of_another_package_or_damaged_is_never_used(tmp_path, monkeypatch):
    steps = [("minip_train", None), ("table", None)]
    digest = codehash.package_digest()
    _fresh(monkeypatch, tmp_path)
    computed = codehash._compute_shared(steps, digest, PACKAGE)
    path = codehash._cache_file(digest, steps)
    other = json.loads(computed)
    other["package"] = "0" * 64
    other["steps"]["minip_train"][0] = "f" * 64
    for kept in (json.dumps(other), "{not json", "[]", '{"package": 1}'):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(kept)
        _fresh(monkeypatch, tmp_path)
        assert codehash.shared_code_hashes(steps) == computed
        assert path.read_text() == computed  # replaced by the right table


def test_a_cache_folder_that_cannot_be_written_only_costs_the_computation(tmp_path, monkeypatch):
    steps = [("minip_train", None)]
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    _fresh(monkeypatch, blocker / "cache")
    assert codehash.shared_code_hashes(steps) == codehash._compute_shared(
        steps, codehash.package_digest(), PACKAGE)


def test_the_cache_keeps_only_its_newest_tables(tmp_path, monkeypatch):
    _fresh(monkeypatch, tmp_path)
    for k in range(codehash.CACHE_KEEP + 5):
        old = tmp_path / f"code-hashes-old{k:02d}.json"
        old.write_text("{}")
        os.utime(old, (1_000_000 + k, 1_000_000 + k))
    codehash.shared_code_hashes([("table", None)])
    kept = sorted(p.name for p in tmp_path.glob("code-hashes-*.json"))
    assert len(kept) == codehash.CACHE_KEEP
    assert "code-hashes-old00.json" not in kept and "code-hashes-old20.json" in kept
