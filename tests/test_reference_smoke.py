"""The committed smoke reference (results/reference-smoke/): published by the reference tool from
a smoke run (tables and claims copied, every other artifact sidecar-only), current against this
checkout (the audit says when it is stale), and matched by a fresh smoke run: the shared smoke run
of this suite, and `make smoke`'s own last line. Also: compare refuses two scales, and the smoke
claims page says what its verdicts are for."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from attnrank.publish.audit import audit_run, load_config
from attnrank.publish.compare import ScaleMismatch, compare_runs, folder_scale
from attnrank.publish.reference import (
    PATTERNS,
    SMOKE_PATTERNS,
    load_manifest,
    matches,
    publish_reference,
    run_patterns,
)

ROOT = Path(__file__).resolve().parents[1]
SMOKE_REFERENCE = ROOT / "results" / "reference-smoke"
MACHINE_PATH = re.compile(r"""["'\s=](/(?:work|root|home|tmp|Users|scratch|mnt|private)/)""")
MATCHES = "smoke run matches the committed smoke reference"
committed = pytest.mark.skipif(not (SMOKE_REFERENCE / "MANIFEST.json").exists(),
                               reason="no smoke reference committed")


# ---- the committed smoke reference -------------------------------------------------------------

@committed
def test_the_smoke_reference_is_current():
    """Stale when the code or parameters of any smoke step changed since it was published."""
    report = audit_run(SMOKE_REFERENCE, load_config(ROOT / "config.yaml"))
    assert report.scale == "smoke"
    assert report.ok, (report.summary() + "\nresults/reference-smoke is stale: commit, then "
                       "`make smoke-reference` republishes it")


@committed
def test_the_smoke_reference_holds_what_compare_reads_and_stays_small():
    manifest = load_manifest(SMOKE_REFERENCE)
    assert manifest["source"] == "results/smoke" and tuple(manifest["patterns"]) == SMOKE_PATTERNS
    assert {"claims.csv", "claims.md", "tables/minip_rank_vs_m.parquet"} <= set(manifest["files"])
    assert all(matches(rel, SMOKE_PATTERNS) for rel in manifest["files"])
    # the training outputs and figures are there as sidecars: the chain closes, the audit sees them
    assert any(rel.startswith("minip/train/") for rel in manifest["sidecar_only"])
    assert "figures/minip_witness.png" in manifest["sidecar_only"]
    size = sum(p.stat().st_size for p in SMOKE_REFERENCE.rglob("*") if p.is_file())
    assert size < 3_000_000, f"results/reference-smoke is {size / 1e6:.1f} MB"


@committed
def test_the_smoke_reference_is_committed_without_a_machine_path():
    files = subprocess.run(["git", "ls-files", "results/reference-smoke"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    assert "results/reference-smoke/MANIFEST.json" in files, "results/reference-smoke is not committed"
    for rel in files:
        if Path(rel).suffix in {".json", ".md", ".csv", ".html", ".sha256"}:
            hit = MACHINE_PATH.search((ROOT / rel).read_text(errors="replace"))
            assert hit is None, f"{rel} holds the machine path {hit.group(1)}…"


@committed
def test_the_smoke_claims_page_says_what_its_verdicts_are_for():
    md = (SMOKE_REFERENCE / "claims.md").read_text()
    assert "shows that every path of the pipeline runs" in md.split("\n| ")[0]
    assert "[`results/reference/claims.md`](../reference/claims.md)" in md
    assert (SMOKE_REFERENCE / ".." / "reference" / "claims.md").is_file()  # the link resolves
    assert "results/reference/claims.md" in (SMOKE_REFERENCE / "claims.html").read_text()


# ---- a fresh smoke run against it (the suite's shared smoke run) -------------------------------

@committed
def test_the_shared_smoke_run_matches_the_committed_smoke_reference(smoke_run):
    report = compare_runs(smoke_run / "results" / "smoke", SMOKE_REFERENCE)
    assert report.ok, report.summary(brief=True)


@committed
def test_make_smoke_ends_with_the_comparison(smoke_copy):
    """`make smoke` on a finished smoke run: Snakemake has nothing to do, then the comparison's
    last line (the venv of this checkout stands in for the copy's own)."""
    shutil.copytree(SMOKE_REFERENCE, smoke_copy / "results" / "reference-smoke")
    venv = Path(sys.executable).parent.parent
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    res = subprocess.run(["make", "smoke", f"VENV={venv}", "CORES=1"], cwd=smoke_copy, env=env,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    assert res.stdout.strip().splitlines()[-1].startswith(MATCHES), res.stdout[-3000:]


# ---- the tool: what a smoke run publishes, and compare's scale check ---------------------------

def _run(root: Path, scale: str) -> Path:
    """A finished run folder of ``scale``: one table, one training output and the claims, each with
    a sidecar recording the scale as the steps do."""
    from attnrank.pipeline.provenance import sha256_file

    files = {"tables/t.parquet": b"", "minip/train/x/metrics.parquet": b"",
             "claims.md": b"# Claims", "claims.csv": b"id,verdict\nTT-1,pass\n"}
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
        if rel.endswith(".parquet"):
            pd.DataFrame({"rank": [1, 2], "seed": [0, 0], "loss": [0.5, 0.25]}).to_parquet(root / rel)
        record = {"artifact": rel, "sha256": sha256_file(root / rel), "inputs": {},
                  "params": {"scale": scale} if rel == "claims.md" else {},
                  "wildcards": {"scale": scale} if rel.startswith("tables/") else {}}
        (root / f"{rel}.prov.json").write_text(json.dumps(record))
    return root


def test_a_smoke_run_publishes_its_tables_and_claims_and_the_rest_sidecar_only(tmp_path):
    smoke, full = _run(tmp_path / "results" / "smoke", "smoke"), _run(tmp_path / "full", "full")
    assert run_patterns(smoke) == SMOKE_PATTERNS and run_patterns(full) == PATTERNS
    from attnrank.cli import main

    dest = tmp_path / "results" / "reference-smoke"  # as make smoke-reference publishes it
    assert main(["reference", "--run", str(smoke), "--dest", str(dest), "--allow-dirty"]) == 0
    manifest = load_manifest(dest)
    assert sorted(manifest["files"]) == ["claims.csv", "claims.md", "tables/t.parquet"]
    assert list(manifest["sidecar_only"]) == ["minip/train/x/metrics.parquet"]
    assert (tmp_path / "results" / "reference-smoke" / "minip/train/x/metrics.parquet.prov.json"
            ).is_file()
    assert main(["reference", "--run", str(full), "--dest", str(tmp_path / "ref"), "--allow-dirty"]) == 0
    assert "minip/train/x/metrics.parquet" in load_manifest(tmp_path / "ref")["files"]
    publish_reference(smoke, tmp_path / "all")  # the library's default: everything a restore needs
    assert "minip/train/x/metrics.parquet" in load_manifest(tmp_path / "all")["files"]


def test_compare_refuses_two_scales_in_one_line(tmp_path):
    smoke, full = _run(tmp_path / "smoke", "smoke"), _run(tmp_path / "full", "full")
    assert folder_scale(smoke) == "smoke" and folder_scale(full) == "full"
    with pytest.raises(ScaleMismatch, match="is a smoke run and .* a full one"):
        compare_runs(smoke, full)
    res = subprocess.run([sys.executable, "-m", "attnrank", "compare", str(smoke), str(full)],
                         capture_output=True, text=True)
    assert res.returncode == 2 and res.stdout == ""
    assert len(res.stderr.strip().splitlines()) == 1 and "not compared" in res.stderr
    assert compare_runs(smoke, _run(tmp_path / "smoke2", "smoke")).ok


def test_the_smoke_claims_page_and_only_it_says_what_its_verdicts_are_for(tmp_path):
    from claims_world import CONFIG, world

    from attnrank.claims import step
    from attnrank.core.io import write_table
    from attnrank.pipeline.plan import claims_params

    inputs = []
    for name, df in world().items():
        inputs.append(str(tmp_path / f"{name}.parquet"))
        write_table(df, inputs[-1])
    pages = {}
    for scale in ("smoke", "full"):
        out = tmp_path / scale
        out.mkdir()
        step(inputs, claims_params(CONFIG, scale), out / "claims.md", out / "claims.csv",
             out / "claims.html")
        pages[scale] = ((out / "claims.md").read_text(), (out / "claims.html").read_text())
    md, html = pages["smoke"]
    title, blank, note = md.splitlines()[:3]
    assert title == "# Claims — scale `smoke`" and blank == ""
    assert note.startswith("**Smoke scale: these grids") and "too small to judge the papers" in note
    assert "every path of the pipeline runs" in note
    assert "[`results/reference/claims.md`](../reference/claims.md)" in note
    assert "<h2>Claims — scale smoke</h2><p><b>Smoke scale: these grids" in html
    assert "Smoke scale" not in pages["full"][0] and "Smoke scale" not in pages["full"][1]
    assert md.splitlines()[3] == ""  # then the page as at any scale
    assert md.splitlines()[4].startswith("Each claim checked on this run's tables:")
