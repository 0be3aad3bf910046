"""Thresholds live in config.yaml's ``claims`` block only: no numeric threshold literal in the claim
checks or the figures, statements rendered from the config, and a changed threshold changes both the
verdict and the statement."""

from __future__ import annotations

import ast
import copy
import re
from pathlib import Path

import pytest
from claims_world import CONFIG, params, world

from attnrank.claims import CHECKS, FAIL, MEASURED, PASS, claim_values, evaluate_claims
from attnrank.core.io import write_table
from attnrank.pipeline.plan import build_plan, claims_params, figure_params
from attnrank.pipeline.registry import CLAIMS

SRC = Path(__file__).resolve().parents[1] / "src" / "attnrank"
TRIVIAL = {0, 1}  # identity elements: rank 1, r* − 1, "sequence error 0", accuracy 1


def _number(node: ast.AST) -> float | None:
    """The value of a numeric literal (``-2`` included), None for anything else (bools too)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    return None


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _inside(node: ast.AST, parents: dict, kinds: tuple[type, ...]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, kinds):
            return True
    return False


def _is_count(node: ast.AST) -> bool:
    """``len(...)`` or ``….nunique()``: a count of grid points, not a measured value."""
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return ((isinstance(f, ast.Name) and f.id == "len")
            or (isinstance(f, ast.Attribute) and f.attr == "nunique"))


def _is_count_bound(node: ast.AST, parents: dict) -> bool:
    cmp = parents.get(node)
    return isinstance(cmp, ast.Compare) and any(map(_is_count, [cmp.left, *cmp.comparators]))


def claim_literals(path: Path) -> list[str]:
    """Numeric literals of a claims module that could be thresholds.

    Allowed: 0 and 1 (identities: rank 1, r* − 1, sequence error 0, accuracy 1); any literal
    inside a subscript (positions: ``v[-2]``, ``iloc[0]``); and the bound of a comparison with a
    count, ``len(...)`` or ``.nunique()`` (how many grid points a computation needs to exist at
    all, e.g. two sizes for "largest and smallest"). Every other number is a threshold and belongs
    in config.yaml.
    """
    tree = ast.parse(path.read_text())
    parents = _parents(tree)
    found = []
    for node in ast.walk(tree):
        value = _number(node)
        if value is None or isinstance(parents.get(node), ast.UnaryOp) or value in TRIVIAL:
            continue
        if _inside(node, parents, (ast.Subscript,)):
            continue
        if _is_count_bound(node, parents):
            continue
        found.append(f"{path.name}:{node.lineno}: {value}")
    return found


DRAWN = {"axhline", "axvline", "numerical_rank"}  # calls whose first argument is a drawn value


def figure_literals(path: Path) -> list[str]:
    """Numeric literals of a figure module that could be thresholds.

    Layout (sizes, widths, alpha, jitter) is free. Flagged: a number compared with data (other
    than 0 and 1, or a count of grid points as in ``claim_literals``), the first argument of
    ``axhline``/``axvline``/``numerical_rank`` (a line drawn at, or a rank column read at, a value:
    it must be the one the claim uses) and any default of ``params.get`` (a figure reads its
    thresholds from its params, never from a fallback).
    """
    tree = ast.parse(path.read_text())
    parents = _parents(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                value = _number(side)
                if value is not None and value not in TRIVIAL and not _is_count_bound(side, parents):
                    found.append(f"{path.name}:{node.lineno}: compared with {value}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name = node.func.attr
            if name in DRAWN and node.args and _number(node.args[0]) is not None:
                found.append(f"{path.name}:{node.lineno}: {name}({_number(node.args[0])})")
            if (name == "get" and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "params" and len(node.args) > 1):
                found.append(f"{path.name}:{node.lineno}: params.get with a default")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in DRAWN and node.args and _number(node.args[0]) is not None):
            found.append(f"{path.name}:{node.lineno}: {node.func.id}({_number(node.args[0])})")
    return found


def test_no_threshold_literal_in_the_claim_checks():
    found = [hit for p in sorted((SRC / "claims").glob("*.py")) for hit in claim_literals(p)]
    assert not found, found


def test_no_threshold_literal_in_the_figures():
    found = [hit for p in sorted((SRC / "figures").glob("*.py")) for hit in figure_literals(p)]
    assert not found, found


def test_the_scanners_catch_what_they_are_for(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f(df, v, params, ax):\n"
                   "    ok = df['x'] >= 20 and len(v) < 3 and v[-2] > 1\n"
                   "    ax.axhline(0.25)\n"
                   "    return params.get('floor', 0.02), numerical_rank(0.01), -0.01\n")
    assert sorted(h.split(": ", 1)[1] for h in claim_literals(bad)) == sorted(
        ["20", "0.25", "0.02", "0.01", "-0.01"])
    assert len(figure_literals(bad)) == 4  # >= 20, axhline, params.get default, numerical_rank


def test_every_statement_renders_from_the_config():
    p = claims_params(CONFIG, "full")
    for cid, c in CHECKS.items():
        text = c.statement(p)
        assert text and not re.search(r"[{}]", text), (cid, text)


def test_another_scale_s_grids_leave_every_full_run_s_parameters_unchanged():
    """A smoke-only grid change (smoke steps halved) changes no parameter of any full-scale run,
    the claims step's included: the committed full reference stays current."""
    changed = copy.deepcopy(CONFIG)
    for wing in ("minip", "entropic"):
        changed[wing]["scales"]["smoke"]["seeds"] = 3
    changed["minip"]["scales"]["smoke"]["random"]["steps"] = 7
    before = {(r.step, tuple(sorted(r.wildcards.items()))): r.params
              for r in build_plan(CONFIG, "full").runs}
    after = {(r.step, tuple(sorted(r.wildcards.items()))): r.params
             for r in build_plan(changed, "full").runs}
    assert before == after
    smoke_claims = [r.params for r in build_plan(changed, "smoke").runs if r.step == "claims"]
    assert smoke_claims[0]["minip_grid"]["random"]["steps"] == 7
    assert "scales" not in smoke_claims[0]["minip"] and "scales" not in smoke_claims[0]["entropic"]


def test_the_config_has_a_value_for_every_key_a_claim_reads():
    p = claims_params(CONFIG, "full")
    tables = world()
    for cid in CLAIMS:
        CHECKS[cid].check(tables, params())  # a missing key would raise KeyError
        assert claim_values(cid, p)


CHANGES = [  # (claim, key in the claims block (dotted for a claim's own), new value, text)
    ("EB-2", "noise_floor", 0.0005, "at most 0.0005"),
    ("EB-3", "EB-3.min_ratio", 1000, "≥ 1000"),
    ("TT-2", "TT-2.rank1_max_accuracy", 0.5, "(≤ 0.5)"),
    ("TT-4p", "TT-4p.fails_below", 32, "every r < 32"),
    ("TT-4", "worst_case_cutoff", 1.5, "error > 1.5"),
    ("EB-13b", "rank_tolerance", 0.6, "r* + 0.6"),
    ("TT-1", "exact_accuracy", 1.5, "≥ 1.5"),
    ("EB-1", "EB-1.bound_tolerance", 0.005, "within 0.005 of it"),
    ("EB-14", "EB-14.saturation_ratio", 0.2, "below 0.2 times"),
]


def _set(block: dict, key: str, value) -> None:
    *path, last = key.split(".")
    for k in path:
        block = block[k]
    block[last] = value


@pytest.mark.parametrize(("cid", "key", "value", "text"), CHANGES, ids=[c[1] for c in CHANGES])
def test_a_changed_threshold_changes_verdict_and_statement(cid, key, value, text):
    claims = copy.deepcopy(CONFIG["claims"])
    before_p, tables = params(claims), world()
    _set(claims, key, value)
    after_p = params(claims)
    c = CHECKS[cid]
    assert c.check(tables, before_p)[0] and not c.check(tables, after_p)[0]
    before, after = c.statement(before_p), c.statement(after_p)
    assert before != after and text in after and text not in before


def test_the_plan_passes_the_claims_block_and_the_figures_their_thresholds(tmp_path):
    """End to end through the plan's params: a changed floor fails EB-2 and changes its text,
    and the Paper A figures draw the new floor."""
    config = copy.deepcopy(CONFIG)
    config["entropic"].update(n_tokens=8, d=4)
    config["minip"]["scales"]["full"]["witness"].update(blocks=8, width=3)
    paths = []
    for name, df in world().items():
        paths.append(tmp_path / f"{name}.parquet")
        write_table(df, paths[-1])
    table = evaluate_claims(paths, claims_params(config, "full")).set_index("id")
    assert set(table["verdict"]) == {PASS, MEASURED}
    config["claims"]["noise_floor"] = 0.0005
    assert figure_params(config, "full", "A")["floor"] == 0.0005
    changed = evaluate_claims(paths, claims_params(config, "full")).set_index("id")
    assert changed.loc["EB-2", "verdict"] == FAIL and "0.0005" in changed.loc["EB-2", "statement"]
    assert changed.loc["EB-2", "threshold"] == "≤ 0.0005"
