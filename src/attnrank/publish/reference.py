"""Publish the small, reviewable part of a finished run as the committed reference (results/reference/).

``publish_reference(run_dir, dest)``:

1. checks the whole run before touching ``dest``: it is finished (``claims.md`` exists), every
   artifact has its ``X.prov.json`` sidecar and every sidecar its artifact, each sidecar's
   ``sha256`` matches its artifact, and each recorded input that is an artifact of the run still
   has the checksum the sidecar recorded (the provenance chain is consistent);
2. builds the new reference in a temporary sibling of ``dest`` (``.<name>.tmp-XXXX``);
3. swaps it in (old ``dest`` renamed aside, new one renamed into place, old one deleted); on any
   failure the temporary folder is removed and ``dest`` is left exactly as it was.

What is copied: every artifact a later run needs to skip a step that is current — tables
(``tables/*.parquet``, ``tables/*.csv``), figures (PDF and PNG), ``claims.*`` and the training
outputs of every study (``minip/**``, ``entropic/**``, ``language/**``: metrics, weights,
spectra) — each with its sidecar, when at most ``MAX_BYTES``. Anything larger is published
*sidecar-only*: its sidecar is copied, the artifact is not, so the provenance chain from a figure
back to its training jobs stays closed in the reference (and ``restore`` leaves that step to be
rerun). ``restore_reference`` (``make restore``) copies a reference back into a run folder.

``attnrank reference`` copies what ``run_patterns`` gives for the run's scale (the one its claims
sidecar records): a smoke run is published as the smoke reference that ``make smoke`` compares
itself with, so only what ``compare`` reads is copied (``SMOKE_PATTERNS``: tables and claims,
about a sixth of the run's bytes), every other artifact sidecar-only, so the audit still tells
when any of its steps is stale.

``MANIFEST.json`` records ``source`` (the run folder, relative), ``files`` (copied artifact ->
sha256) and ``sidecar_only`` (artifact -> the sha256 its sidecar records); ``MANIFEST.sha256``
lists every copied file, artifacts and sidecars (``sha256sum -c MANIFEST.sha256`` in ``dest``).
All paths written are relative (to the run folder, which is also the layout of ``dest``).

A run folder holds artifacts only. Hidden files and folders (names starting with ``.``, such as
temporary files of an interrupted atomic write) are not artifacts and are ignored, as are the
top-level ``NON_ARTIFACTS`` (the MANIFEST files of a published reference, audit.json, report.html).
"""

from __future__ import annotations

import fnmatch
import json
import os
import secrets
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from attnrank.pipeline.plan import NON_ARTIFACTS
from attnrank.pipeline.provenance import SIDECAR_SUFFIX, read_json_object, sha256_file

PATTERNS = ("tables/*.parquet", "tables/*.csv", "figures/*.png", "figures/*.pdf", "claims.md",
            "claims.csv", "claims.html", "minip/**", "entropic/**", "language/**")
SMOKE_PATTERNS = ("tables/*.parquet", "tables/*.csv", "claims.md", "claims.csv", "claims.html")
PATTERNS_BY_SCALE = {"smoke": SMOKE_PATTERNS}  # any other scale: PATTERNS
MAX_BYTES = 8_000_000  # a matching artifact larger than this is published sidecar-only
MANIFEST_JSON = "MANIFEST.json"
MANIFEST_SHA256 = "MANIFEST.sha256"
MANIFEST_FORMAT = 1
_MANIFEST_NAMES = frozenset({MANIFEST_JSON, MANIFEST_SHA256})
_MAX_LISTED = 20  # problems named in one error message


@dataclass(frozen=True)
class Artifact:
    """One checked artifact of a run: its path relative to the run folder, checksum and size."""

    rel: str  # POSIX path relative to the run folder
    sha256: str
    size: int
    sidecar_sha256: str  # checksum of the sidecar file itself

    @property
    def sidecar_rel(self) -> str:
        return self.rel + SIDECAR_SUFFIX


# ----------------------------------------------------------------------------------------- scanning


def _is_hidden(rel: PurePosixPath) -> bool:
    return any(part.startswith(".") for part in rel.parts)


def scan_run(run_dir: Path) -> tuple[set[str], set[str]]:
    """Artifact and sidecar paths (POSIX, relative to ``run_dir``) of the files in a run folder.

    Hidden files/folders and the top-level ``NON_ARTIFACTS`` (manifests, reports) are skipped.
    Returns ``(artifacts, sidecars)`` where a sidecar is named by its own path (``X.prov.json``).
    """
    artifacts: set[str] = set()
    sidecars: set[str] = set()
    for path in run_dir.rglob("*"):
        rel = PurePosixPath(path.relative_to(run_dir).as_posix())
        if _is_hidden(rel) or not path.is_file():
            continue
        if len(rel.parts) == 1 and rel.name in NON_ARTIFACTS:
            continue
        (sidecars if rel.name.endswith(SIDECAR_SUFFIX) else artifacts).add(str(rel))
    return artifacts, sidecars


def pairing_problems(artifacts: set[str], sidecars: set[str]) -> list[str]:
    """Artifacts without a sidecar and sidecars without an artifact, as messages."""
    problems = [f"{a}: artifact has no provenance sidecar {a + SIDECAR_SUFFIX}"
                for a in sorted(artifacts) if a + SIDECAR_SUFFIX not in sidecars]
    problems += [f"{s}: sidecar has no artifact {s[:-len(SIDECAR_SUFFIX)]}"
                 for s in sorted(sidecars) if s[:-len(SIDECAR_SUFFIX)] not in artifacts]
    return problems


def sidecar_problems(rel: str, record: Mapping[str, Any], actual_sha: str) -> list[str]:
    """Messages for a sidecar that does not describe the artifact ``rel`` with checksum ``actual_sha``."""
    problems = []
    named = record.get("artifact")
    if named is not None and named not in (rel, PurePosixPath(rel).name):
        problems.append(f"{rel + SIDECAR_SUFFIX}: sidecar names artifact {named!r}, expected {rel!r}")
    recorded = record.get("sha256")
    if recorded != actual_sha:
        problems.append(f"{rel}: sha256 is {actual_sha}, but its sidecar records {recorded}")
    return problems


def input_problems(rel: str, record: Mapping[str, Any], shas: Mapping[str, str]) -> list[str]:
    """Messages for recorded inputs that are artifacts of the run but have changed since.

    Input keys are paths relative to the run folder; keys that do not name an artifact of the run
    (configuration files, inputs recorded in another form) are not checked here.
    """
    inputs = record.get("inputs") or {}
    if not isinstance(inputs, Mapping):
        return [f"{rel + SIDECAR_SUFFIX}: 'inputs' is not a mapping of path to sha256"]
    problems = []
    for key, recorded in sorted(inputs.items()):
        key_rel = PurePosixPath(str(key)).as_posix()
        if key_rel in shas and shas[key_rel] != recorded:
            problems.append(f"{rel}: was built from {key_rel} with sha256 {recorded}, "
                            f"which is now {shas[key_rel]} (stale provenance chain)")
    return problems


def _raise_problems(kind: type[Exception], run_dir: Path, problems: list[str]) -> None:
    shown = problems[:_MAX_LISTED]
    more = f"\n  ... and {len(problems) - len(shown)} more" if len(problems) > len(shown) else ""
    raise kind(f"{run_dir} cannot be published ({len(problems)} problem(s)):\n  "
               + "\n  ".join(shown) + more)


def check_run(run_dir: str | Path, check_inputs: bool = True) -> dict[str, Artifact]:
    """Verify a finished run folder and return its artifacts by relative path.

    Raises ``FileNotFoundError`` when the folder, ``claims.md``, a sidecar or an artifact is
    missing, and ``ValueError`` when a sidecar is unreadable or its checksum (or, with
    ``check_inputs``, a recorded input checksum) does not match. Messages name every offending path.
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"{run_dir}: run folder not found")
    if not (run_dir / "claims.md").is_file():
        raise FileNotFoundError(f"{run_dir} holds no finished run (expected {run_dir / 'claims.md'})")
    artifacts, sidecars = scan_run(run_dir)
    missing = pairing_problems(artifacts, sidecars)
    if missing:
        _raise_problems(FileNotFoundError, run_dir, missing)
    found: dict[str, Artifact] = {}
    records: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    for rel in sorted(artifacts):
        path = run_dir / rel
        side = run_dir / (rel + SIDECAR_SUFFIX)
        records[rel] = read_json_object(side)
        sha = sha256_file(path)
        problems += sidecar_problems(rel, records[rel], sha)
        found[rel] = Artifact(rel, sha, path.stat().st_size, sha256_file(side))
    if check_inputs:
        shas = {rel: a.sha256 for rel, a in found.items()}
        for rel in sorted(records):
            problems += input_problems(rel, records[rel], shas)
    if problems:
        _raise_problems(ValueError, run_dir, problems)
    return found


# ------------------------------------------------------------------------------------------ planning


def matches(rel: str, patterns: Iterable[str] = PATTERNS) -> bool:
    """Whether ``rel`` matches one of ``patterns`` part by part (``*`` never crosses a ``/``; a
    pattern ``folder/**`` matches everything under ``folder``)."""
    parts = PurePosixPath(rel).parts
    for pattern in patterns:
        if pattern.endswith("/**"):
            if rel.startswith(pattern[:-2]):
                return True
            continue
        pparts = PurePosixPath(pattern).parts
        if len(pparts) == len(parts) and all(fnmatch.fnmatchcase(p, q) for p, q in zip(parts, pparts,
                                                                                       strict=True)):
            return True
    return False


def split_artifacts(artifacts: Mapping[str, Artifact], max_bytes: int = MAX_BYTES,
                    patterns: Iterable[str] = PATTERNS) -> tuple[list[Artifact], list[Artifact]]:
    """``(copied, sidecar_only)``: artifacts matching ``patterns`` and at most ``max_bytes`` are copied."""
    patterns = tuple(patterns)
    copied, sidecar_only = [], []
    for rel in sorted(artifacts):
        a = artifacts[rel]
        (copied if matches(rel, patterns) and a.size <= max_bytes else sidecar_only).append(a)
    return copied, sidecar_only


def run_patterns(run_dir: Path) -> tuple[str, ...]:
    """What is copied from a checked run: ``PATTERNS_BY_SCALE`` of the scale its claims sidecar
    records, else ``PATTERNS``."""
    params = read_json_object(run_dir / ("claims.md" + SIDECAR_SUFFIX)).get("params")
    scale = params.get("scale") if isinstance(params, dict) else None
    return PATTERNS_BY_SCALE.get(scale, PATTERNS) if isinstance(scale, str) else PATTERNS


def _relative_source(run_dir: Path) -> str:
    """``run_dir`` as a relative POSIX path (relative to the working directory when given absolute)."""
    if run_dir.is_absolute():
        return Path(os.path.relpath(run_dir, Path.cwd())).as_posix()
    return run_dir.as_posix()


def build_manifest(source: str, copied: list[Artifact], sidecar_only: list[Artifact],
                   max_bytes: int = MAX_BYTES, patterns: Iterable[str] = PATTERNS) -> dict[str, Any]:
    """The ``MANIFEST.json`` record of a reference (all paths relative)."""
    return {
        "format": MANIFEST_FORMAT,
        "source": source,
        "patterns": list(patterns),
        "max_bytes": max_bytes,
        "files": {a.rel: a.sha256 for a in copied},
        "sidecar_only": {a.rel: a.sha256 for a in sidecar_only},
        "sidecars": {a.sidecar_rel: a.sidecar_sha256 for a in [*copied, *sidecar_only]},
    }


def sha256_lines(copied: list[Artifact], sidecar_only: list[Artifact]) -> str:
    """``MANIFEST.sha256`` text: ``<sha256>  <relpath>`` for every copied file (``sha256sum -c``)."""
    entries = {a.rel: a.sha256 for a in copied}
    entries |= {a.sidecar_rel: a.sidecar_sha256 for a in [*copied, *sidecar_only]}
    return "".join(f"{entries[rel]}  {rel}\n" for rel in sorted(entries))


# ------------------------------------------------------------------------------------------ writing


def _copy_checked(src: Path, dst: Path, expected_sha: str) -> None:
    """Copy bytes only (new file, so the umask sets the mode) and verify the copy's checksum."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    actual = sha256_file(dst)
    if actual != expected_sha:
        raise ValueError(f"{src} changed while publishing: copied sha256 {actual}, "
                         f"checked {expected_sha}")


def _sibling(dest: Path, tag: str) -> Path:
    """A fresh, unused hidden folder name beside ``dest``."""
    while True:
        candidate = dest.parent / f".{dest.name}.{tag}-{secrets.token_hex(4)}"
        if not candidate.exists():
            return candidate


def _check_dest(run_dir: Path, dest: Path) -> None:
    """Refuse a destination that overlaps the run folder or is not a previously published reference."""
    run_abs, dest_abs = run_dir.resolve(), dest.resolve()
    if dest_abs == run_abs or dest_abs.is_relative_to(run_abs) or run_abs.is_relative_to(dest_abs):
        raise ValueError(f"{dest}: destination overlaps the run folder {run_dir}")
    if dest.is_symlink() or (dest.exists() and not dest.is_dir()):
        raise ValueError(f"{dest}: destination exists and is not a folder")
    if dest.is_dir() and any(dest.iterdir()) and not any((dest / n).is_file() for n in _MANIFEST_NAMES):
        raise ValueError(f"{dest}: destination is a non-empty folder without {MANIFEST_JSON} or "
                         f"{MANIFEST_SHA256}; refusing to replace something that is not a reference")


def _write_tree(run_dir: Path, tmp: Path, copied: list[Artifact], sidecar_only: list[Artifact],
                manifest: dict[str, Any]) -> None:
    for a in copied:
        _copy_checked(run_dir / a.rel, tmp / a.rel, a.sha256)
    for a in [*copied, *sidecar_only]:
        _copy_checked(run_dir / a.sidecar_rel, tmp / a.sidecar_rel, a.sidecar_sha256)
    (tmp / MANIFEST_JSON).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    (tmp / MANIFEST_SHA256).write_text(sha256_lines(copied, sidecar_only))


def _swap_in(tmp: Path, dest: Path) -> None:
    """Replace ``dest`` by ``tmp``: old one renamed aside, new one renamed in, old one deleted."""
    if not dest.exists():
        os.rename(tmp, dest)
        return
    old = _sibling(dest, "old")
    os.rename(dest, old)
    try:
        os.rename(tmp, dest)
    except BaseException:
        os.rename(old, dest)
        raise
    try:
        shutil.rmtree(old)
    except OSError as exc:
        raise OSError(f"{dest} was published, but the previous reference set aside at {old} could "
                      f"not be deleted ({exc}); delete it by hand") from exc


def publish_reference(run_dir: str | Path, dest: str | Path, *, max_bytes: int = MAX_BYTES,
                      check_inputs: bool = True,
                      patterns: Iterable[str] = PATTERNS) -> list[Path]:
    """Publish the finished run in ``run_dir`` as the reference folder ``dest``.

    Everything is checked first (see ``check_run``); nothing is written if a check fails. The new
    reference is built beside ``dest`` and swapped in atomically; on failure ``dest`` is untouched.
    ``patterns``: what is copied (default ``PATTERNS``; ``run_patterns`` gives the one for the
    run's scale). Returns the paths (under ``dest``) of the copied artifacts, sidecars and
    manifests excluded.
    """
    run_dir, dest = Path(run_dir), Path(dest)
    artifacts = check_run(run_dir, check_inputs=check_inputs)
    _check_dest(run_dir, dest)
    patterns = tuple(patterns)
    copied, sidecar_only = split_artifacts(artifacts, max_bytes, patterns)
    manifest = build_manifest(_relative_source(run_dir), copied, sidecar_only, max_bytes, patterns)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = _sibling(dest, "tmp")
    tmp.mkdir()  # plain mkdir: the umask sets the mode (tempfile.mkdtemp would make it 0700)
    try:
        _write_tree(run_dir, tmp, copied, sidecar_only, manifest)
        _swap_in(tmp, dest)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return [dest / a.rel for a in copied]


# ------------------------------------------------------------------------------------------ reading


def load_manifest(run_dir: str | Path) -> dict[str, Any] | None:
    """The ``MANIFEST.json`` of a published reference, or ``None`` if the folder has none.

    Audit code uses ``manifest["sidecar_only"]`` (artifact path -> sha256 recorded in its sidecar)
    to know which artifacts are expected to be absent, and ``manifest["files"]`` for the copied ones.
    Raises ``ValueError`` if the file exists but is not a valid manifest.
    """
    path = Path(run_dir) / MANIFEST_JSON
    if not path.is_file():
        return None
    data = read_json_object(path, "manifest")
    for key in ("files", "sidecar_only"):
        if not isinstance(data.get(key), dict):
            raise ValueError(f"{path}: manifest lacks the mapping {key!r} (path -> sha256)")
    return data


def sidecar_only_paths(run_dir: str | Path) -> set[str]:
    """Relative paths of the artifacts published sidecar-only in ``run_dir`` (empty without a manifest)."""
    manifest = load_manifest(run_dir)
    return set(manifest["sidecar_only"]) if manifest else set()


def git_is_clean(repo_root: str | Path) -> tuple[bool, str]:
    """``(clean, porcelain)``: whether ``git status --porcelain`` in ``repo_root`` lists nothing.

    Tracked changes and untracked files that are not ignored make the tree dirty; the porcelain
    text says which. If git cannot run there, returns ``(False, <reason>)``.
    """
    try:
        proc = subprocess.run(["git", "-C", str(repo_root), "status", "--porcelain"],
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"git status failed in {repo_root}: {exc}"
    if proc.returncode != 0:
        return False, f"git status failed in {repo_root}: {proc.stderr.strip()}"
    return not proc.stdout.strip(), proc.stdout
