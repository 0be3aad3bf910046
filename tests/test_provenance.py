"""Sidecars: checksums, inputs, parameters; atomic writes leave nothing half-written."""

import json
import os
import stat

import pandas as pd
import pytest

from attnrank.core.io import atomic_path, read_table, write_table
from attnrank.pipeline.codehash import step_code_hash
from attnrank.pipeline.provenance import Run, params_hash, read_sidecar, sha256_file


def test_sidecar_records_checksums_params_and_relative_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_dir = tmp_path / "results" / "demo"
    src = run_dir / "minip" / "in.parquet"
    write_table(pd.DataFrame({"a": [1, 2]}), src)
    run = Run("table", {"x": 1, "y": [2, 3]}, [src], {"w": "v"}, rule="table_rule")
    out = run_dir / "tables" / "out.parquet"
    write_table(read_table(src).assign(b=3), out)
    run.finish([out], device="cpu", seed=7)
    side = read_sidecar(out)
    assert side["sha256"] == sha256_file(out)
    assert side["artifact"] == "tables/out.parquet"
    assert side["inputs"] == {"minip/in.parquet": sha256_file(src)}
    assert side["params_sha256"] == params_hash({"y": [2, 3], "x": 1})
    assert side["step"] == "table" and side["rule"] == "table_rule"
    assert side["wildcards"] == {"w": "v"} and side["seed"] == 7
    assert side["environment"]["device"] == "cpu" and side["environment"]["torch"]
    assert len(side["code"]["src_sha256"]) == 64
    assert side["code"]["step_sha256"] == step_code_hash("table")
    assert "attnrank/core/tables.py" in side["code"]["step_modules"]
    assert side["command"].startswith("python -m attnrank ")
    assert str(tmp_path) not in json.dumps(side), "sidecar holds a machine path"
    assert side["duration_s"] >= 0


def test_missing_input_is_refused_before_work(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing"):
        Run("table", {}, [tmp_path / "nope.parquet"])


def test_unknown_step_is_refused():
    with pytest.raises(ValueError, match="unknown step 'nope'"):
        Run("nope", {})


def test_artifacts_get_the_umask_mode(tmp_path):
    old = os.umask(0o022)
    try:
        write_table(pd.DataFrame({"a": [1]}), tmp_path / "t.parquet")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "t.parquet").stat().st_mode) == 0o644


def test_atomic_path_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "t.json"
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text(json.dumps({"half": True}))
        raise RuntimeError("boom")
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


def test_table_writes_are_byte_identical(tmp_path):
    df = pd.DataFrame({"a": [1.5, 2.5], "b": ["x", "y"]})
    write_table(df, tmp_path / "1.parquet")
    write_table(df, tmp_path / "2.parquet")
    assert sha256_file(tmp_path / "1.parquet") == sha256_file(tmp_path / "2.parquet")
