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

A copied file carries no Snakemake metadata, so Snakemake alone could not see a later change to
its step's code or parameters. ``record_for_snakemake`` (called by ``attnrank restore``) lets
Snakemake record it through its own interface: ``snakemake --touch --forceall`` over the restored
scale writes every job's metadata (its params, the step's code hash among them) as if it had run,
touching the outputs in DAG order. Plain ``snakemake`` then reruns a job whose code hash or
parameters change, and everything below it, as in a self-made run (a comment stales nothing).
``stale_artifacts`` lists what the audit calls stale; ``make reference`` / ``make reproduce``
also pass it to ``snakemake --forcerun`` (which adds what Snakemake cannot see: an artifact
edited by hand).

Refuses a ``run_dir`` that already holds artifacts (``replace=True`` empties it first).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
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


def record_for_snakemake(run_dir: str | Path, config_file: str | Path | None = None) -> str:
    """Write Snakemake's metadata for a restored ``run_dir`` (``<workflow>/results/<scale>``):
    ``snakemake --touch --forceall --config scale=<scale>`` run in the workflow folder, so every
    job of the scale is recorded with its current params (module docstring). Returns one line
    saying what was done; a run folder that is not ``results/<scale>`` of a folder with a
    Snakefile is left alone (the line says how to rerun it instead)."""
    run_dir = Path(run_dir).resolve()
    workdir, scale = run_dir.parents[1], run_dir.name
    if run_dir.parent.name != "results" or not (workdir / "Snakefile").is_file():
        return (f"{run_dir.name}: not results/<scale> of a workflow folder, so no Snakemake "
                "metadata was written; rerun it with --forcerun $(python -m attnrank stale ...)")
    local = Path(sys.executable).with_name("snakemake")
    exe = str(local) if local.exists() else shutil.which("snakemake")
    if exe is None:
        raise FileNotFoundError("snakemake: not found beside this interpreter nor on PATH")
    argv = [exe, "--touch", "--forceall", "--cores", "1", "--quiet", "all",
            "--config", f"scale={scale}"]
    if config_file is not None and Path(config_file).resolve() != workdir / "config.yaml":
        argv += ["--configfile", str(Path(config_file).resolve())]
    done = subprocess.run(argv, cwd=workdir, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{' '.join(argv[1:4])} in {workdir} failed (the files are restored; "
                           f"Snakemake's metadata is not):\n{done.stderr[-3000:]}")
    return (f"snakemake: metadata of every {scale} job recorded (--touch --forceall), so plain "
            "snakemake reruns what a later code or config change stales")
