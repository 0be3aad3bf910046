"""A failure caused by the user's input is one line on stderr naming the path or key and what was
expected, with exit 2; ``-v`` adds the traceback; a genuine bug is never turned into a one-liner."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from attnrank import cli
from attnrank.pipeline import errors

TABLE = json.dumps({"select": "all", "max_rank_only": False})
TRACEBACK = "Traceback (most recent call last)"


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "attnrank", *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd)


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def good_table(path: Path, **columns: list) -> Path:
    pd.DataFrame(columns or {"rank": [1, 2], "final": [True, False]}).to_parquet(path)
    return path


def junk(path: Path, data: bytes = b"this is not the file you expected") -> Path:
    path.write_bytes(data)
    return path


def truncated_table(path: Path) -> Path:
    good_table(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


@dataclass(frozen=True)
class Case:
    """One bad invocation: ``args(tmp)`` builds its files and returns the command line; the one
    error line must contain every string of ``names(tmp)`` (the path or key)."""

    id: str
    args: Callable[[Path], list[str]]
    names: Callable[[Path], list[str]]
    writes: str | None = None  # an output that must not appear


CASES = [
    Case("table-missing-column",
         lambda t: ["minip-information-bound", "--params", '{"float_bits": 32}', "--inputs",
                    str(good_table(t / "t.parquet")), "--out", str(t / "o.parquet"),
                    "--csv", str(t / "o.csv")],
         lambda t: [str(t / "t.parquet"), "'model'", "has no column"], writes="o.parquet"),
    Case("figure-wrong-columns",
         lambda t: ["figure", "minip_witness", "--inputs",
                    str(good_table(t / "minip_witness.parquet", a=[1])),
                    str(good_table(t / "minip_constructions.parquet", a=[1])),
                    "--out", str(t / "f.pdf")],
         lambda t: ["minip_witness.parquet", "has no column"], writes="f.pdf"),
    Case("select-column-absent",
         lambda t: ["table", "--params", json.dumps({"select": "final", "max_rank_only": False}),
                    "--inputs", str(good_table(t / "t.parquet", rank=[1])), "--out",
                    str(t / "o.parquet")],
         lambda t: [str(t / "t.parquet"), "'final'"], writes="o.parquet"),
    Case("out-is-a-directory",
         lambda t: ["table", "--params", TABLE, "--inputs", str(good_table(t / "t.parquet")),
                    "--out", str(t)],
         lambda t: ["--out", str(t), "is a directory"]),
    Case("out-under-a-file",
         lambda t: ["table", "--params", TABLE, "--inputs", str(good_table(t / "t.parquet")),
                    "--out", str(t / "t.parquet" / "o.parquet")],
         lambda t: ["--out", str(t / "t.parquet"), "not a folder"]),
    Case("input-missing",
         lambda t: ["table", "--params", TABLE, "--inputs", str(t / "nope.parquet"), "--out",
                    str(t / "o.parquet")],
         lambda t: [str(t / "nope.parquet"), "not found"], writes="o.parquet"),
    Case("input-is-a-directory",
         lambda t: ["table", "--params", TABLE, "--inputs", str(t), "--out", str(t / "o.parquet")],
         lambda t: [str(t), "is a directory"], writes="o.parquet"),
    Case("params-malformed-json",
         lambda t: ["table", "--params", '{"select": all}', "--inputs", "x", "--out",
                    str(t / "o.parquet")],
         lambda t: ["--params", "not valid JSON", "line 1 column"], writes="o.parquet"),
    Case("params-not-an-object",
         lambda t: ["minip-train", "--params", "[1, 2]", "--metrics", str(t / "m.parquet"),
                    "--weights", str(t / "w.npz")],
         lambda t: ["--params", "expected a JSON object"], writes="m.parquet"),
    Case("wildcards-malformed-json",
         lambda t: ["table", "--params", TABLE, "--wildcards", "{", "--inputs", "x", "--out",
                    str(t / "o.parquet")],
         lambda t: ["--wildcards", "not valid JSON"], writes="o.parquet"),
    Case("params-key-missing",
         lambda t: ["table", "--params", '{"select": "all"}', "--inputs",
                    str(good_table(t / "t.parquet")), "--out", str(t / "o.parquet")],
         lambda t: ["missing key(s) max_rank_only"], writes="o.parquet"),
    Case("params-key-missing-raw",
         lambda t: ["claims", "--params", "{}", "--inputs", str(good_table(t / "t.parquet")),
                    "--md", str(t / "c.md"), "--csv", str(t / "c.csv")],
         lambda t: ["'claims'", "--params"], writes="c.md"),
    Case("parquet-junk",
         lambda t: ["table", "--params", TABLE, "--inputs", str(junk(t / "t.parquet")), "--out",
                    str(t / "o.parquet")],
         lambda t: [str(t / "t.parquet"), "not a readable Parquet table"], writes="o.parquet"),
    Case("parquet-truncated",
         lambda t: ["table", "--params", TABLE, "--inputs", str(truncated_table(t / "t.parquet")),
                    "--out", str(t / "o.parquet")],
         lambda t: [str(t / "t.parquet"), "not a readable Parquet table"], writes="o.parquet"),
    Case("npz-junk",
         lambda t: ["minip-witness-families", "--params", "{}", "--inputs",
                    str(good_table(t / "m.parquet")), str(junk(t / "w.npz")), "--out",
                    str(t / "o.parquet"), "--summary", str(t / "s.parquet"), "--csv",
                    str(t / "s.csv")],
         lambda t: [str(t / "w.npz"), "not a readable npz archive"], writes="o.parquet"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_user_errors_are_one_line_naming_the_culprit(case, tmp_path):
    res = run(*case.args(tmp_path), cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    err = lines(res.stderr)
    assert len(err) == 1, res.stderr
    assert err[0].startswith("python -m attnrank ") and ": error: " in err[0]
    for name in case.names(tmp_path):
        assert name in err[0], (name, err[0])
    assert TRACEBACK not in res.stderr
    if case.writes:
        assert not (tmp_path / case.writes).exists()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_verbose_shows_the_traceback_then_the_same_line(case, tmp_path, capsys):
    args = case.args(tmp_path)
    assert cli.main(["-v", *args]) == 2
    err = capsys.readouterr().err
    assert TRACEBACK in err
    last = lines(err)[-1]
    assert last.startswith("python -m attnrank ") and ": error: " in last
    for name in case.names(tmp_path):
        assert name in last, (name, last)


def test_verbose_through_the_module_shows_the_traceback(tmp_path):
    res = run("-v", "table", "--params", TABLE, "--inputs", str(junk(tmp_path / "t.parquet")),
              "--out", str(tmp_path / "o.parquet"), cwd=tmp_path)
    assert res.returncode == 2 and TRACEBACK in res.stderr
    assert "not a readable Parquet table" in lines(res.stderr)[-1]


def test_usage_errors_are_one_line():
    res = subprocess.run([sys.executable, "-m", "attnrank", "table", "--inputs"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2
    err = lines(res.stderr)
    assert len(err) == 1 and "--inputs" in err[0] and "--help" in err[0], res.stderr


def test_a_genuine_bug_keeps_its_traceback(tmp_path, monkeypatch):
    """An exception that no user input explains (a TypeError in the code) is not caught."""

    def broken(a):
        return len(None)

    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    parser._subparsers._group_actions[0].choices["table"].set_defaults(func=broken)
    with pytest.raises(TypeError):
        cli.main(["table", "--params", TABLE, "--inputs", "x", "--out", str(tmp_path / "o")])


def test_a_corrupt_npy_member_is_diagnosed_on_a_full_read(tmp_path):
    """A valid zip directory with a broken array passes the cheap check; the diagnosis after the
    failure reads in full and names the file."""
    path = tmp_path / "w.npz"
    with zipfile.ZipFile(path, "w") as z:
        buf = io.BytesIO()
        np.save(buf, np.arange(10.0))
        z.writestr("a.npy", buf.getvalue()[:20])  # the header cut short
    errors._open_input(path)  # the directory is fine
    why = errors.unreadable_input(path)
    assert why is not None and str(path) in why and "npz archive" in why
    assert errors.unreadable_input(good_table(tmp_path / "t.parquet")) is None


def test_missing_key_names_the_tables_that_lack_it(tmp_path):
    a, b = good_table(tmp_path / "a.parquet"), good_table(tmp_path / "b.parquet", x=[1])
    args = cli.build_parser().parse_args(["table", "--inputs", str(a), str(b), "--out", "o"])
    args.params = {"select": "all"}
    message = errors.missing_key("x", args)
    assert str(a) in message and "rank, final" in message and str(b) not in message
    assert "--params" in errors.missing_key("nowhere", args)  # neither a column nor a key
    assert errors.missing_key("select", args).startswith("input table")  # a key: the column is meant
