"""The committed reference run is auditable on a fresh clone: every artifact matches its sidecar,
the chain closes down to the training jobs (sidecar-only), nothing is stale against this checkout,
and no committed file holds a path of the machine that produced it."""

import re
import subprocess
from pathlib import Path

import pytest

from attnrank.publish.audit import audit_run, load_config
from attnrank.publish.reference import load_manifest

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "results" / "reference"
MACHINE_PATH = re.compile(r"""["'\s=](/(?:work|root|home|tmp|Users|scratch|mnt|private)/)""")

pytestmark = pytest.mark.skipif(not (REFERENCE / "MANIFEST.json").exists(),
                                reason="no reference run committed")


def test_reference_passes_the_audit():
    report = audit_run(REFERENCE, load_config(ROOT / "config.yaml"))
    assert report.scale == "full"
    assert report.ok, report.summary()


def test_chain_reaches_the_training_jobs():
    manifest = load_manifest(REFERENCE)
    only = set(manifest["sidecar_only"])
    assert any(p.startswith("minip/train/") for p in only)
    assert any(p.startswith("entropic/") for p in only)
    assert "claims.csv" in manifest["files"] and "figures/minip_witness.png" in manifest["files"]


def test_no_committed_file_holds_a_machine_path():
    files = subprocess.run(["git", "ls-files", "results/reference"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split()
    assert files, "results/reference is not committed"
    for rel in files:
        path = ROOT / rel
        if path.suffix in {".json", ".md", ".csv", ".html", ".sha256"}:
            hit = MACHINE_PATH.search(path.read_text(errors="replace"))
            assert hit is None, f"{rel} holds the machine path {hit.group(1)}…"
