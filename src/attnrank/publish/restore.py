"""Restore a run folder from the committed reference, so that a fresh clone reruns only what changed.

``restore_reference(reference, run_dir, config)`` (``make restore``):

1. audits the reference against this checkout and config (``audit_run``): an artifact with a
   finding (its step's code hash or parameters changed, or anything upstream did) is **not**
   restored, so the next run makes it again, and with it everything downstream;
2. copies every other artifact the reference holds, with its sidecar, into ``run_dir`` (each
   copy checked against the manifest's sha256); artifacts published sidecar-only (too large)
   cannot be restored and are left for the run to make;
3. sets the modification times in the order of the DAG (an artifact is newer than every input it
   was made from), so Snakemake sees every restored output as up to date;
4. writes ``audit.json`` (the restored run audited, the audit rule's output) last.

A restored artifact has no Snakemake metadata, so Snakemake alone cannot see a later change to its
step's code or parameters: ``stale_artifacts`` lists what the audit calls stale, and ``make
reference`` / ``make reproduce`` pass it to ``snakemake --forcerun``.

Refuses a ``run_dir`` that already holds artifacts (``replace=True`` empties it first).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attnrank.pipeline.plan import Plan, build_plan
from attnrank.pipeline.provenance import SIDECAR_SUFFIX, sha256_file
from attnrank.publish.audit import audit_run
from attnrank.publish.reference import load_manifest, scan_run

STALE_CATEGORIES = ("modified", "broken chain", "stale")  # what a rerun must make again


@dataclass
class Restored:
    """What ``restore_reference`` did: artifacts copied, and those left for the run with why."""

    run: str
    copied: list[str] = field(default_factory=list)
    left: dict[str, str] = field(default_factory=dict)  # artifact -> why it was not restored

    def summary(self) -> str:
        lines = [f"restore: {len(self.copied)} artifacts restored into {self.run}, "
                 f"{len(self.left)} left for the run to make"]
        reasons: dict[str, int] = {}
        for why in self.left.values():
            reasons[why.split(":")[0]] = reasons.get(why.split(":")[0], 0) + 1
        lines += [f"  {n} {why}" for why, n in sorted(reasons.items())]
        return "\n".join(lines)


def dag_depths(plan: Plan) -> dict[str, int]:
    """Each planned artifact's depth in the DAG: 0 for a step without inputs, else one more than
    its deepest input."""
    depths: dict[str, int] = {}

    def depth(rel: str, seen: tuple[str, ...] = ()) -> int:
        if rel in depths:
            return depths[rel]
        if rel in seen:
            raise ValueError(f"the plan has a cycle through {rel}")
        run = plan.by_output.get(rel)
        inputs = run.inputs if run is not None else ()
        depths[rel] = 1 + max((depth(i, (*seen, rel)) for i in inputs), default=-1)
        return depths[rel]

    for rel in plan.by_output:
        depth(rel)
    return depths


def _existing_artifacts(run_dir: Path) -> set[str]:
    if not run_dir.exists():
        return set()
    artifacts, sidecars = scan_run(run_dir)
    return artifacts | sidecars


def restore_reference(reference: str | Path, run_dir: str | Path, config: Mapping[str, Any],
                      replace: bool = False, now: float | None = None) -> Restored:
    """Restore ``run_dir`` from ``reference`` (see the module docstring)."""
    reference, run_dir = Path(reference), Path(run_dir)
    manifest = load_manifest(reference)
    if manifest is None:
        raise FileNotFoundError(f"{reference}: no MANIFEST.json; not a published reference")
    if (reference.resolve() == run_dir.resolve()
            or run_dir.resolve().is_relative_to(reference.resolve())):
        raise ValueError(f"{run_dir}: the run folder must lie outside the reference {reference}")
    present = _existing_artifacts(run_dir)
    if present and not replace:
        raise FileExistsError(f"{run_dir} already holds {len(present)} artifact(s) (e.g. "
                              f"{sorted(present)[0]}); refusing to mix them with the reference "
                              "(remove the folder, or --replace)")
    report = audit_run(reference, dict(config))
    plan = build_plan(dict(config), report.scale)
    findings = {f.path: f for f in report.findings}
    files: dict[str, str] = manifest["files"]
    result = Restored(run_dir.as_posix())
    for rel in sorted(manifest["sidecar_only"]):
        result.left[rel] = "sidecar-only in the reference (not published, so not restorable)"
    for rel in sorted(files):
        if rel in findings:
            f = findings[rel]
            result.left[rel] = f"{f.category}: {f.detail}"
        elif rel not in plan.by_output:
            result.left[rel] = "orphaned: no step of the current DAG makes it"
        else:
            result.copied.append(rel)
    if replace and run_dir.exists():
        shutil.rmtree(run_dir)
    depths = dag_depths(plan)
    base = (time.time() if now is None else now) - 10 * (max(depths.values(), default=0) + 2)
    for rel in result.copied:
        for name in (rel, rel + SIDECAR_SUFFIX):
            src, dst = reference / name, run_dir / name
            dst.parent.mkdir(parents=True, exist_ok=True)
            tmp = dst.with_name(f".{dst.name}.restore.tmp")
            shutil.copyfile(src, tmp)
            os.replace(tmp, dst)
        if sha256_file(run_dir / rel) != files[rel]:
            raise ValueError(f"{reference / rel}: its sha256 is not the manifest's; the reference "
                             "is damaged (git checkout it again)")
        stamp = base + 10 * depths[rel]
        for name in (rel, rel + SIDECAR_SUFFIX):
            os.utime(run_dir / name, (stamp, stamp))
    if result.copied:
        from attnrank.core.io import write_text

        restored = audit_run(run_dir, dict(config), scale=report.scale)
        write_text(restored.to_json(), run_dir / "audit.json")
    return result


def stale_artifacts(run_dir: str | Path, config: Mapping[str, Any]) -> list[str]:
    """The artifacts of ``run_dir`` a rerun must make again (the audit's modified, broken-chain and
    stale findings that the current DAG still makes), as paths relative to ``run_dir``."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return []
    report = audit_run(run_dir, dict(config))
    plan = build_plan(dict(config), report.scale)
    return sorted(f.path for f in report.findings
                  if f.category in STALE_CATEGORIES and f.path in plan.by_output
                  and (run_dir / f.path).exists())
