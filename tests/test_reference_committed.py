"""The committed reference run is auditable on a fresh clone: every artifact matches its sidecar,
the chain closes down to the training jobs (sidecar-only), nothing is stale against this checkout,
and no committed file holds a path of the machine that produced it."""

import re
import shutil
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
    every = set(manifest["sidecar_only"]) | set(manifest["files"])
    for prefix in ("minip/train/", "entropic/", "language/train/"):
        assert any(p.startswith(prefix) for p in every), prefix
    assert "claims.csv" in manifest["files"] and "figures/minip_witness.png" in manifest["files"]


def test_the_reference_is_restorable_and_small():
    """Everything a later run needs is in the reference (the training outputs too), and the
    folder stays small enough to commit."""
    manifest = load_manifest(REFERENCE)
    assert any(p.startswith("minip/train/") and p.endswith("weights.npz")
               for p in manifest["files"]), "training weights are published"
    assert "figures/minip_witness.pdf" in manifest["files"]
    files = [p for p in REFERENCE.rglob("*") if p.is_file()]
    # The largest files are the language models' weights (appendix B: 10 seeds a corpus, about
    # 5.7 MB a corpus); no single file comes near a Git host's per-file warning (50 MB).
    largest = max(files, key=lambda p: p.stat().st_size)
    assert largest.stat().st_size < 10_000_000, f"{largest} is {largest.stat().st_size / 1e6:.1f} MB"
    size = sum(p.stat().st_size for p in files)
    assert size < 100_000_000, f"results/reference is {size / 1e6:.1f} MB"


def test_a_restored_reference_plans_nothing(tmp_path):
    """A fresh clone: results/full restored from the reference is current, and Snakemake agrees
    (`make restore` then `snakemake -n` plans no job)."""
    from conftest import copy_repo, snakemake

    from attnrank.publish.restore import restore_reference

    copy_repo(tmp_path)
    shutil.copytree(REFERENCE, tmp_path / "results" / "reference")
    done = restore_reference(tmp_path / "results" / "reference", tmp_path / "results" / "full",
                             load_config(ROOT / "config.yaml"))
    assert not [r for r, why in done.left.items() if not why.startswith("sidecar-only")], done.left
    res = snakemake(tmp_path, "-n", scale="full")
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Nothing to be done" in res.stdout + res.stderr, (res.stdout + res.stderr)[-3000:]


def test_no_committed_file_holds_a_machine_path():
    files = subprocess.run(["git", "ls-files", "results/reference"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split()
    assert files, "results/reference is not committed"
    for rel in files:
        path = ROOT / rel
        if path.suffix in {".json", ".md", ".csv", ".html", ".sha256"}:
            hit = MACHINE_PATH.search(path.read_text(errors="replace"))
            assert hit is None, f"{rel} holds the machine path {hit.group(1)}…"
