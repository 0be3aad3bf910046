"""Longest jobs first (pipeline/schedule.py) and where a training job's compile cache lives."""

from __future__ import annotations

import json
from pathlib import Path

from attnrank.pipeline.runner import compile_cache
from attnrank.pipeline.schedule import job_key, longest_first, reference_seconds


class Wildcards(dict):
    """What Snakemake hands a priority function: a mapping with ``items``."""


def _sidecar(folder: Path, artifact: str, rule: str, wildcards: dict, seconds: float) -> None:
    path = folder / (artifact + ".prov.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"artifact": artifact, "rule": rule, "wildcards": wildcards,
                                "duration_s": seconds}))


def test_priorities_are_the_reference_seconds_of_the_same_job_at_any_scale(tmp_path):
    ref = tmp_path / "reference"
    _sidecar(ref, "minip/train/a/m12/metrics.parquet", "minip_train",
             {"experiment": "a", "instance": "m12", "scale": "full"}, 686.4)
    _sidecar(ref, "minip/train/a/m12/weights.npz", "minip_train",
             {"experiment": "a", "instance": "m12", "scale": "full"}, 686.4)
    _sidecar(ref, "minip/train/a/m6/metrics.parquet", "minip_train",
             {"experiment": "a", "instance": "m6", "scale": "full"}, 99.0)
    (ref / "broken.prov.json").write_text("{not json")
    assert reference_seconds(ref) == {job_key("minip_train", {"experiment": "a", "instance": "m12"}): 686.4,
                                      job_key("minip_train", {"experiment": "a", "instance": "m6"}): 99.0}
    priority = longest_first(ref, "minip_train")
    assert priority(Wildcards(experiment="a", instance="m12", scale="full")) == 686
    assert priority(Wildcards(experiment="a", instance="m12", scale="smoke")) == 686
    assert priority(Wildcards(experiment="a", instance="m6", scale="full")) == 99
    assert priority(Wildcards(experiment="b", instance="m6", scale="full")) == 0  # unknown job
    # a part of a job the reference ran whole gets the whole's seconds
    assert priority(Wildcards(experiment="a", instance="m12_r1_32", scale="full")) == 686
    assert priority(Wildcards(experiment="a", instance="m12-H8", scale="full")) == 686
    assert priority(Wildcards(experiment="a", instance="m123", scale="full")) == 0
    assert priority(Wildcards(experiment="b", instance="m12_r1", scale="full")) == 0
    # a job that runs at once every part the reference ran (a wildcard "all") gets their sum
    assert priority(Wildcards(experiment="a", instance="all", scale="smoke")) == int(686.4 + 99.0)
    assert priority(Wildcards(experiment="b", instance="all", scale="smoke")) == 0
    assert longest_first(ref, "other_rule")(Wildcards(experiment="a", instance="m12")) == 0
    assert longest_first(tmp_path / "missing", "minip_train")(Wildcards(instance="m12")) == 0


def test_the_compile_cache_lives_in_the_run_folder(tmp_path):
    out = tmp_path / "results" / "full" / "minip" / "train" / "a" / "m12" / "metrics.parquet"
    assert compile_cache(str(out)) == tmp_path / "results" / "full" / ".cache" / "inductor"
    elsewhere = tmp_path / "scratch" / "metrics.parquet"
    assert compile_cache(str(elsewhere)) == tmp_path / "scratch" / ".cache" / "inductor"
