"""The import graph of ``attnrank``, read from the source: no module imports itself through
others (no cycle), and no study of a wing's ``experiments`` package imports another study (what
two studies share lives in the wing, or in ``experiments/common.py``).

The graph: one node per module (``attnrank.x.y``; a package is its ``__init__.py``), an edge
m → n for every ``attnrank`` module n an import in m's file can mean, anywhere in its body (module
level, ``if TYPE_CHECKING:`` blocks, function bodies), relative imports resolved and
``from attnrank.a import b`` meaning ``attnrank.a`` and, when b is a submodule, ``attnrank.a.b``
(``attnrank.pipeline.codehash.direct_imports``: the same edges the code hashes follow).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from attnrank.pipeline import codehash
from attnrank.pipeline.codehash import direct_imports

PACKAGE = Path(codehash.__file__).resolve().parents[1]
WINGS = ("minip", "entropic", "language")
SHARED = "common"  # the one module of a wing's experiments package every study may import

Graph = dict[str, set[str]]


def module_name(path: Path, package_dir: Path = PACKAGE) -> str:
    """``attnrank.x.y`` of the file ``package_dir/x/y.py`` (``attnrank.x`` of ``x/__init__.py``)."""
    parts = [codehash.PACKAGE, *path.relative_to(package_dir).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package_dir: Path = PACKAGE) -> Graph:
    """Module → the modules of the package it imports (self-imports, such as a package's
    ``from . import x`` naming the package itself, dropped). Every module is a key."""
    graph: Graph = {}
    for path in sorted(package_dir.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        name = module_name(path, package_dir)
        graph[name] = direct_imports(path, package_dir) - {name}
    return graph


def cycles(graph: Graph) -> list[list[str]]:
    """One cycle [m₀, m₁, …, m₀] through each strongly connected component of ``graph`` that holds
    one (more than one node, or a self-edge); sorted. Tarjan's algorithm (iterative), then a
    breadth-first search inside the component from its least node back to itself (a shortest
    cycle through that node). Empty: the graph is acyclic."""
    nodes = sorted(set(graph) | {n for deps in graph.values() for n in deps})
    succ = {n: sorted(graph.get(n, ())) for n in nodes}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[set[str]] = []
    for root in nodes:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if i < len(succ[node]):
                work.append((node, i + 1))
                nxt = succ[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if work:  # node is done: pass its low-link to its parent in the search
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp: set[str] = set()
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    comp.add(top)
                    if top == node:
                        break
                components.append(comp)
    out = []
    for comp in components:
        start = min(comp)
        if len(comp) == 1 and start not in succ[start]:
            continue
        came: dict[str, str] = {}
        frontier = [start]
        while start not in came:
            nxt_frontier = []
            for n in frontier:
                for m in succ[n]:
                    if m in comp and m not in came:
                        came[m] = n
                        nxt_frontier.append(m)
            frontier = nxt_frontier
        path = [start]
        while len(path) == 1 or path[-1] != start:
            path.append(came[path[-1]])
        out.append(path[::-1])
    return sorted(out)


def experiments_violations(graph: Graph, wings: tuple[str, ...] = WINGS) -> list[tuple[str, str]]:
    """Edges (importer, imported) where a module of ``attnrank.<wing>.experiments`` imports
    another module of its own wing's ``experiments`` package other than ``common`` (the package's
    ``__init__`` itself does not count); sorted by wing, then edge."""
    bad = []
    for wing in wings:
        pkg = f"{codehash.PACKAGE}.{wing}.experiments"
        for m in sorted(n for n in graph if n.startswith(pkg + ".")):
            for d in sorted(graph[m]):
                if d.startswith(pkg + ".") and d != m and d[len(pkg) + 1:].split(".")[0] != SHARED:
                    bad.append((m, d))
    return bad


def _describe(found: list[list[str]]) -> str:
    return "\n".join(" → ".join(c) for c in found)


# ---- the finder, on graphs whose answer is known ----------------------------------------------

def test_the_cycle_finder_finds_a_cycle_and_names_its_modules():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"a"}}
    assert cycles(graph) == [["a", "b", "c", "a"]]
    with pytest.raises(AssertionError, match="a → b → c → a"):
        assert not cycles(graph), _describe(cycles(graph))


def test_the_cycle_finder_passes_acyclic_graphs_and_finds_every_component():
    assert cycles({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []  # a diamond is no cycle
    assert cycles({}) == []
    assert cycles({"x": {"x"}}) == [["x", "x"]]
    two = {"a": {"b"}, "b": {"a", "c"}, "c": {"d"}, "d": {"c"}}
    assert cycles(two) == [["a", "b", "a"], ["c", "d", "c"]]
    chain = {f"m{i:04d}": {f"m{i + 1:04d}"} for i in range(5000)}  # deep: no recursion limit
    assert cycles(chain) == []
    chain["m5000"] = {"m0000"}
    assert len(cycles(chain)[0]) == 5002


def test_the_graph_sees_every_kind_of_import(tmp_path):
    """TYPE_CHECKING blocks, function bodies, relative imports and a submodule named in a
    ``from`` import all make edges; a cycle through them is found."""
    pkg = tmp_path / "attnrank"
    (pkg / "w" / "experiments").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "w/__init__.py": "",
        "w/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from attnrank.w.b import B\n",
        "w/b.py": "def f():\n    from . import c\n",
        "w/c.py": "from attnrank.w import a\n",
        "w/experiments/__init__.py": "",
        "w/experiments/common.py": "",
        "w/experiments/s1.py": "from .common import x\nfrom attnrank.w.experiments import s2\n",
        "w/experiments/s2.py": "from attnrank.w.experiments.common import y\n",
    }
    for rel, text in files.items():
        (pkg / rel).write_text(text)
    graph = import_graph(pkg)
    assert graph["attnrank.w.a"] == {"attnrank.w.b"}
    assert graph["attnrank.w.b"] == {"attnrank.w", "attnrank.w.c"}  # from the package, a submodule
    assert graph["attnrank.w.c"] == {"attnrank.w", "attnrank.w.a"}
    assert cycles(graph) == [["attnrank.w.a", "attnrank.w.b", "attnrank.w.c", "attnrank.w.a"]]
    assert graph["attnrank.w.experiments.s1"] == {
        "attnrank.w.experiments", "attnrank.w.experiments.common", "attnrank.w.experiments.s2"}
    assert experiments_violations(graph, ("w",)) == [
        ("attnrank.w.experiments.s1", "attnrank.w.experiments.s2")]  # common and the package pass


# ---- the package ------------------------------------------------------------------------------

def test_the_package_has_no_import_cycle():
    graph = import_graph()
    assert "attnrank.language.corpora" in graph and "attnrank.core.train" in graph
    found = cycles(graph)
    assert not found, f"import cycles in attnrank:\n{_describe(found)}"


def test_no_study_imports_another_study_of_its_wing():
    """A module of ``attnrank.<wing>.experiments`` imports no other module of that package but
    ``common``: a study is an entry point, what studies share is science of the wing."""
    bad = experiments_violations(import_graph())
    assert not bad, "studies importing studies of their own wing:\n" + "\n".join(
        f"{a} → {b}" for a, b in bad)
