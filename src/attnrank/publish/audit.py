"""``audit``: check a run folder against its sidecars, its input chain and the current checkout.

Every artifact ``X`` of ``results/<scale>/`` (or of a published reference) is checked, and each
problem is put in one category:

- **missing**: either half of a pair is absent (an artifact without ``X.prov.json``, or a sidecar
  without its artifact, unless the reference's MANIFEST.json lists it as sidecar-only).
- **modified**: the artifact's sha256 is not the one its sidecar recorded.
- **broken chain**: an input the sidecar recorded no longer has the recorded sha256 (or is gone).
- **stale**: the step's code hash (import closure of its entry module) or its resolved
  parameters differ from what this checkout and config would produce; or something upstream
  of the artifact has a finding (its downstream can no longer be trusted).
- **orphaned**: the current DAG no longer produces this artifact.
- **interrupted**: a file an unfinished job left: a training checkpoint ``X.ckpt`` (rerun the same
  command to resume the job) or a temporary file ``.X.*.tmp*`` of a killed atomic write. Neither
  is an artifact; the next run of the job removes them.

Paths are relative to the run folder; the report is a short human summary plus JSON.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from attnrank.core.job import params_hash
from attnrank.pipeline.codehash import step_code_hash
from attnrank.pipeline.plan import NON_ARTIFACTS, Plan, build_plan
from attnrank.pipeline.provenance import CHECKPOINT_SUFFIX, SIDECAR_SUFFIX, read_json_object, sha256_file
from attnrank.pipeline.runner import CACHE_DIR
from attnrank.publish.reference import load_manifest

CATEGORIES = ("missing", "modified", "broken chain", "stale", "orphaned", "interrupted")


@dataclass(frozen=True)
class Finding:
    path: str
    category: str
    detail: str


@dataclass
class AuditReport:
    run: str
    scale: str
    checked: int
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.findings

    def counts(self) -> dict[str, int]:
        return {c: sum(f.category == c for f in self.findings) for c in CATEGORIES}

    def to_json(self) -> str:
        return json.dumps({"run": self.run, "scale": self.scale, "ok": self.ok,
                           "checked": self.checked, "counts": self.counts(),
                           "seconds": round(self.seconds, 3),
                           "findings": [asdict(f) for f in self.findings]}, indent=2) + "\n"

    def summary(self, limit: int = 40) -> str:
        head = (f"audit {self.run} (scale {self.scale}): {self.checked} artifacts checked in "
                f"{self.seconds:.1f} s — ")
        if self.ok:
            return head + "OK, every artifact matches its sidecar, chain and the current checkout."
        counts = ", ".join(f"{n} {c}" for c, n in self.counts().items() if n)
        lines = [head + f"{len(self.findings)} finding(s): {counts}"]
        for f in self.findings[:limit]:
            lines.append(f"  {f.category:<13} {f.path}: {f.detail}")
        if len(self.findings) > limit:
            lines.append(f"  … {len(self.findings) - limit} more in the JSON report")
        return "\n".join(lines)


def load_config(path: str | Path) -> dict[str, Any]:
    """The config file ``path``, checked against the schema; ValueError naming the file and the
    key (YAML errors with line and column)."""
    from attnrank.pipeline import configcheck

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"config not found: {path}")
    config = configcheck.read_config_file(path)
    if configcheck.SCHEMA_PATH.exists():
        problems = configcheck.schema_problems(config, configcheck.load_schema())
        if problems:
            raise ValueError(f"{path}: {configcheck.refusal(problems, limit=1)}")
    return config


def leftover(name: str) -> str | None:
    """Why a file named ``name`` is what an unfinished job left (None: it is not)."""
    if name.endswith(CHECKPOINT_SUFFIX):
        return (f"checkpoint of an unfinished training job ({name[:-len(CHECKPOINT_SUFFIX)]}): "
                "rerun the same command to resume it, or delete it")
    if name.startswith(".") and ".tmp" in name:
        return "temporary file of an interrupted write: rerun the job, or delete it"
    return None


def _files(run: Path) -> tuple[set[str], set[str], dict[str, str]]:
    """(artifacts, sidecars, leftovers of unfinished jobs → why) under ``run``, relative posix
    paths; reports are skipped."""
    artifacts, sidecars, leftovers = set(), set(), {}
    for p in run.rglob("*"):
        if not p.is_file():
            continue
        rel = p.relative_to(run).as_posix()
        if rel in NON_ARTIFACTS or rel.startswith(CACHE_DIR + "/"):
            continue
        if (why := leftover(p.name)) is not None:
            leftovers[rel] = why
        elif rel.endswith(SIDECAR_SUFFIX):
            sidecars.add(rel[: -len(SIDECAR_SUFFIX)])
        else:
            artifacts.add(rel)
    return artifacts, sidecars, leftovers


def _scale_of(run: Path, sidecars: dict[str, dict[str, Any]], config: dict[str, Any]) -> str:
    scales = list(config["minip"]["scales"])
    if run.name in scales:
        return run.name
    manifest = load_manifest(run)
    if manifest and Path(str(manifest.get("source", ""))).name in scales:
        return Path(manifest["source"]).name
    claims = sidecars.get("claims.md", {})
    scale = claims.get("params", {}).get("scale")
    if scale in scales:
        return scale
    raise ValueError(f"{run}: cannot tell which scale this run is ({', '.join(scales)}); pass --scale")


def audit_run(run: str | Path, config: dict[str, Any], scale: str | None = None,
              code_hash: Callable[[str, str | None], str] = step_code_hash) -> AuditReport:
    """Audit the run folder ``run`` against ``config`` (see the module docstring).

    ``code_hash(step, figure)`` gives the code hash this checkout would record for a step (the
    default derives it from the imports; tests pass one computed over an edited copy)."""
    started = time.time()
    run = Path(run)
    if not run.is_dir():
        raise FileNotFoundError(f"run folder not found: {run}")
    artifacts, sidecar_names, leftovers = _files(run)
    manifest = load_manifest(run) or {}
    sidecar_only = set(manifest.get("sidecar_only", {}))
    findings: dict[str, Finding] = {}

    def flag(path: str, category: str, detail: str) -> None:
        findings.setdefault(path, Finding(path, category, detail))

    for rel, why in sorted(leftovers.items()):
        flag(rel, "interrupted", why)

    records: dict[str, dict[str, Any]] = {}
    for rel in sorted(sidecar_names):
        try:
            records[rel] = read_json_object(run / (rel + SIDECAR_SUFFIX))
        except ValueError as err:
            flag(rel, "modified", str(err))
    scale = scale or _scale_of(run, records, config)
    plan: Plan = build_plan(config, scale)

    hashes: dict[str, str] = {}

    def current_hash(rel: str) -> str | None:
        """The sha256 the chain should see for ``rel``: the file's, or a sidecar-only record's."""
        if rel not in hashes:
            if rel in artifacts:
                hashes[rel] = sha256_file(run / rel)
            elif rel in sidecar_only and rel in records:
                hashes[rel] = records[rel].get("sha256", "")
            else:
                return None
        return hashes[rel]

    for rel in sorted(artifacts - sidecar_names):
        flag(rel, "missing", "artifact has no sidecar " + Path(rel).name + SIDECAR_SUFFIX)
    for rel in sorted(sidecar_names - artifacts - sidecar_only):
        flag(rel, "missing", "sidecar without its artifact")

    for rel, rec in sorted(records.items()):
        if rel in findings:
            continue
        if rel in sidecar_only and manifest["sidecar_only"][rel] != rec.get("sha256"):
            flag(rel, "modified", "MANIFEST.json and the sidecar disagree on its sha256")
            continue
        digest = current_hash(rel)
        if digest is not None and digest != rec.get("sha256"):
            flag(rel, "modified", f"sha256 {digest[:12]}… is not the recorded {str(rec.get('sha256'))[:12]}…")
            continue
        broken = [i for i, h in sorted(rec.get("inputs", {}).items()) if current_hash(i) != h]
        if broken:
            gone = [i for i in broken if current_hash(i) is None]
            flag(rel, "broken chain", "recorded input(s) changed: " + ", ".join(broken)
                 + (f" (absent: {', '.join(gone)})" if gone else ""))
            continue
        if rel not in plan.by_output:
            flag(rel, "orphaned", "no step of the current DAG produces it")
            continue
        expected = plan.by_output[rel]
        reasons = []
        if rec.get("step") != expected.step:
            reasons.append(f"made by step {rec.get('step')!r}, now {expected.step!r}")
        if rec.get("params_sha256") != params_hash(expected.params):
            reasons.append("parameters differ from the current config")
        if rec.get("code", {}).get("step_sha256") != code_hash(expected.step, expected.figure):
            reasons.append("code of the step changed since (import closure hash)")
        if set(rec.get("inputs", {})) != set(expected.inputs):
            reasons.append("inputs differ from the current DAG's")
        if reasons:
            flag(rel, "stale", "; ".join(reasons))

    # Whatever depends on an artifact with a finding can no longer be trusted.
    present = artifacts | (sidecar_only & set(records))
    for rel in sorted(plan.downstream(set(findings)) & present):
        upstream = sorted(f for f in findings if rel in plan.downstream({f}))
        flag(rel, "stale", "upstream finding: " + ", ".join(upstream[:3])
             + (" …" if len(upstream) > 3 else ""))

    ordered = sorted(findings.values(), key=lambda f: (CATEGORIES.index(f.category), f.path))
    return AuditReport(run=run.as_posix(), scale=scale, checked=len(artifacts | sidecar_names),
                       findings=ordered, seconds=time.time() - started)
