"""Derived code hashes: a step's hash covers exactly the import closure of its entry module."""

import shutil
from pathlib import Path

import pytest

from attnrank import codehash
from attnrank.codehash import closure_hash, direct_imports, import_closure, step_entries
from attnrank.registry import FIGURES, STEPS

PACKAGE = Path(codehash.__file__).resolve().parent


def _all_steps():
    return [(s, None) for s in STEPS if s != "figure"] + [("figure", f) for f in FIGURES]


@pytest.fixture(scope="module")
def package_copy(tmp_path_factory):
    dest = tmp_path_factory.mktemp("pkg") / "attnrank"
    shutil.copytree(PACKAGE, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def _touch(path: Path) -> bytes:
    before = path.read_bytes()
    path.write_bytes(before + b"\n# an edit\n")
    return before


@pytest.mark.parametrize(("step", "figure"), _all_steps())
def test_hash_changes_with_every_module_of_the_closure_and_only_those(package_copy, step, figure):
    entries = step_entries(step, figure)
    closure = {p.relative_to(package_copy) for p in import_closure(entries, package_copy)}
    every = {p.relative_to(package_copy) for p in package_copy.rglob("*.py")}
    base = closure_hash(entries, package_copy)
    for rel in sorted(every):
        before = _touch(package_copy / rel)
        try:
            changed = closure_hash(entries, package_copy) != base
        finally:
            (package_copy / rel).write_bytes(before)
        assert changed == (rel in closure), (step, figure, rel)
    assert closure_hash(entries, package_copy) == base


def test_closures_follow_function_level_and_package_imports():
    closure = {p.relative_to(PACKAGE).as_posix() for p in import_closure(step_entries("minip_train"))}
    # experiments/minip.py → models/kernel.py, which imports tasks/minip.py also inside a function
    assert {"experiments/minip.py", "models/kernel.py", "tasks/minip.py", "train.py", "seeding.py",
            "io.py", "__init__.py", "experiments/__init__.py"} <= closure
    assert "cli.py" not in closure and "claims/__init__.py" not in closure
    figure = {p.relative_to(PACKAGE).as_posix()
              for p in import_closure(step_entries("figure", "minip_witness"))}
    assert {"figures/__init__.py", "figures/minip_witness.py", "figures/style.py"} <= figure
    assert "figures/minip_rank_vs_m.py" not in figure and "experiments/minip.py" not in figure


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
