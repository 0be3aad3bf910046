"""The command line refuses bad input with a clear message and writes nothing."""

import json
import subprocess
import sys

import pandas as pd


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "attnrank", *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd)


def test_missing_job_keys_are_named_before_any_work(tmp_path):
    out = tmp_path / "m.parquet"
    res = run("minip-train", "--params", json.dumps({"experiment": "x"}), "--metrics", str(out),
              "--weights", str(tmp_path / "w.npz"), "--device", "cpu")
    assert res.returncode == 2
    assert "missing key(s)" in res.stderr and "ranks" in res.stderr
    assert not out.exists()


def test_bad_json_is_refused():
    res = run("minip-train", "--params", "{not json", "--metrics", "a", "--weights", "b")
    assert res.returncode == 2 and "not valid JSON" in res.stderr


def test_missing_input_table_is_named(tmp_path):
    missing = tmp_path / "nope.parquet"
    res = run("figure", "minip_witness", "--inputs", str(missing), "--out", str(tmp_path / "f.pdf"))
    assert res.returncode == 2 and "nope.parquet" in res.stderr
    assert not (tmp_path / "f.pdf").exists()


def test_unknown_job_keys_are_named(tmp_path):
    res = run("table", "--params", json.dumps({"select": "all", "max_rank_only": False, "typo": 1}),
              "--inputs", "x", "--out", str(tmp_path / "t.parquet"))
    assert res.returncode == 2 and "unknown key(s) typo" in res.stderr


def test_unknown_figure_is_refused(tmp_path):
    table = tmp_path / "minip_witness.parquet"
    pd.DataFrame({"a": [1]}).to_parquet(table)  # the input exists: the name is what is refused
    res = run("figure", "no_such_figure", "--inputs", str(table), "--out", str(tmp_path / "f.pdf"))
    assert res.returncode == 2 and "unknown figure 'no_such_figure'" in res.stderr
    assert not (tmp_path / "f.pdf").exists()
