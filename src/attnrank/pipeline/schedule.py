"""Longest jobs first: each job's seconds in the committed reference, as its Snakemake priority.

With 2 cores and jobs from seconds to tens of minutes long, the order in which Snakemake starts
ready jobs decides how long the end of a run is one long job alone on one core. Every sidecar of
``results/reference`` records its step's ``duration_s``; a rule's ``priority:`` (a function of the
job's wildcards) returns those seconds for the same job (the same rule and wildcards, the scale
aside, so the smoke run is ordered like the full one), and 0 for a job the reference does not
have. Priorities only order jobs: they never change what a job computes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

SIDECAR_SUFFIX = ".prov.json"
Key = tuple[str, str]  # (rule, wildcards without the scale as canonical JSON)


def job_key(rule: str, wildcards: Mapping[str, Any]) -> Key:
    """A job's identity across scales: its rule and its wildcards other than ``scale``."""
    rest = {k: str(v) for k, v in wildcards.items() if k != "scale"}
    return rule, json.dumps(rest, sort_keys=True)


@cache
def reference_seconds(reference: Path) -> dict[Key, float]:
    """Seconds of every job of a published reference folder (one per step run), from its sidecars;
    empty when the folder is missing. A sidecar that cannot be read is skipped (it only orders
    jobs)."""
    out: dict[Key, float] = {}
    if not reference.is_dir():
        return out
    for path in reference.rglob("*" + SIDECAR_SUFFIX):
        try:
            rec = json.loads(path.read_text())
            key = job_key(rec["rule"], rec.get("wildcards") or {})
            out[key] = max(out.get(key, 0.0), float(rec["duration_s"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return out


def longest_first(reference: Path, rule: str) -> Callable[[Any], int]:
    """A rule's ``priority:``: the job's whole seconds in the reference (0 when unknown)."""

    def priority(wildcards: Any) -> int:
        return int(reference_seconds(reference).get(job_key(rule, dict(wildcards.items())), 0.0))

    return priority
