"""Longest jobs first: each job's seconds in the committed reference, as its Snakemake priority.

With 2 cores and jobs from seconds to tens of minutes long, the order in which Snakemake starts
ready jobs decides how long the end of a run is one long job alone on one core. Every sidecar of
``results/reference`` records its step's ``duration_s``; a rule's ``priority:`` (a function of the
job's wildcards) returns those seconds for the same job (the same rule and wildcards, the scale
aside, so the smoke run is ordered like the full one); a part of a job the reference ran whole
(the plan cuts a long job into parts: the same rule and wildcards but one, whose value extends
the whole's by ``-…`` or ``_…``, e.g. family ``multihead-H8`` of ``multihead``) gets the whole's
seconds; a job that runs whole what the reference ran in parts (one wildcard ``all``, e.g.
family ``all`` of a smoke beyond instance) gets the sum of those parts' seconds; any other job the
reference does not have 0. Priorities only order jobs: they never change what a job computes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

SIDECAR_SUFFIX = ".prov.json"
WHOLE = "all"  # the wildcard value of a job that runs every part of the reference's jobs at once
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


def _is_part(part: Mapping[str, str], whole: Mapping[str, str]) -> bool:
    """Whether wildcards ``part`` name a part of the job of wildcards ``whole``: the same keys,
    every value equal but one, which extends the whole's by ``-…`` or ``_…``."""
    if part.keys() != whole.keys():
        return False
    differ = [k for k in part if part[k] != whole[k]]
    return len(differ) == 1 and any(part[differ[0]].startswith(whole[differ[0]] + sep)
                                    for sep in "-_")


def seconds_of(seconds: Mapping[Key, float], rule: str, wildcards: Mapping[str, Any]) -> float:
    """The reference's seconds of a job (module docstring): its own, else those of the whole job
    it is a part of, else (a wildcard ``WHOLE``) the sum of the parts it runs at once, else 0."""
    key = job_key(rule, wildcards)
    if key in seconds:
        return seconds[key]
    mine = json.loads(key[1])
    wholes = [s for (r, w), s in seconds.items() if r == rule and _is_part(mine, json.loads(w))]
    if wholes:
        return max(wholes)
    fixed = {k: v for k, v in mine.items() if v != WHOLE}
    if len(fixed) == len(mine):
        return 0.0
    return sum(s for (r, w), s in seconds.items() if r == rule
               and json.loads(w).keys() == mine.keys()
               and all(json.loads(w)[k] == v for k, v in fixed.items()))


def longest_first(reference: Path, rule: str) -> Callable[[Any], int]:
    """A rule's ``priority:``: the job's whole seconds in the reference (``seconds_of``; 0 when
    unknown)."""

    def priority(wildcards: Any) -> int:
        return int(seconds_of(reference_seconds(reference), rule, dict(wildcards.items())))

    return priority
