"""Sidecars: checksums, inputs, parameters; atomic writes leave nothing half-written."""

import json

import pandas as pd
import pytest

from attnrank.io import read_table, write_table
from attnrank.provenance import Run, atomic_path, params_hash, read_sidecar, sha256_file


def test_sidecar_records_checksums_and_params(tmp_path):
    src = tmp_path / "in.parquet"
    write_table(pd.DataFrame({"a": [1, 2]}), src)
    run = Run("r", {"x": 1, "y": [2, 3]}, [src], {"w": "v"})
    out = tmp_path / "out.parquet"
    write_table(read_table(src).assign(b=3), out)
    run.finish([out], device="cpu", seed=7)
    side = read_sidecar(out)
    assert side["sha256"] == sha256_file(out)
    assert side["inputs"] == {str(src): sha256_file(src)}
    assert side["params_sha256"] == params_hash({"y": [2, 3], "x": 1})
    assert side["rule"] == "r" and side["wildcards"] == {"w": "v"} and side["seed"] == 7
    assert side["environment"]["device"] == "cpu" and side["environment"]["torch"]
    assert len(side["code"]["src_sha256"]) == 64
    assert side["duration_s"] >= 0


def test_missing_input_is_refused_before_work(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing"):
        Run("r", {}, [tmp_path / "nope.parquet"])


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
