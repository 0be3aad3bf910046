"""One smoke run of the whole DAG in a fresh copy of the repository.

Checks: every figure and the claims table are built; every file under results/ has a sidecar
whose sha256 matches; a second run has nothing to do; a single figure rebuilds alone and
byte-identically.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from attnrank.provenance import SIDECAR_SUFFIX, sha256_file

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
pytestmark = pytest.mark.slow


def _copy_repo(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for rel in filter(None, files.split("\0")):
        src = ROOT / rel
        if src.is_file() and not rel.startswith(("results/", "tests/")):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def _snakemake(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run([SNAKEMAKE, *args, "--cores", "2", "--config", "scale=smoke"], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=1200)


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    work = tmp_path_factory.mktemp("repo")
    _copy_repo(work)
    res = _snakemake(work)
    assert res.returncode == 0, res.stderr[-5000:]
    return work


def test_every_figure_and_the_claims_are_built(smoke_run):
    res = smoke_run / "results" / "smoke"
    for name in ("minip_length_sweep", "minip_rank_vs_m", "minip_witness", "minip_ood_pools"):
        for ext in ("pdf", "png"):
            assert (res / "figures" / f"{name}.{ext}").stat().st_size > 1000
    claims = pd.read_csv(res / "claims.csv")
    assert {f"TT-{i}" for i in range(1, 7)} <= set(claims["id"])
    assert set(claims["verdict"]) <= {"pass", "fail", "not run"}
    assert (res / "tables" / "minip_information_bound.csv").exists()


def test_every_artifact_has_a_matching_sidecar(smoke_run):
    res = smoke_run / "results"
    artifacts = [p for p in res.rglob("*") if p.is_file() and not p.name.endswith(SIDECAR_SUFFIX)]
    assert len(artifacts) > 10
    for p in artifacts:
        side = p.with_name(p.name + SIDECAR_SUFFIX)
        assert side.exists(), f"no sidecar for {p}"
        rec = json.loads(side.read_text())
        assert rec["sha256"] == sha256_file(p), p
        for inp, digest in rec["inputs"].items():
            assert sha256_file(smoke_run / inp) == digest, (p, inp)
    assert not [p for p in res.rglob("*.tmp*")], "half-written files left behind"


def test_second_run_has_nothing_to_do(smoke_run):
    res = _snakemake(smoke_run, "-n")
    assert res.returncode == 0
    assert "Nothing to be done" in res.stdout + res.stderr


def test_single_figure_rebuild_is_alone_and_byte_identical(smoke_run):
    fig = smoke_run / "results" / "smoke" / "figures" / "minip_witness.png"
    before = sha256_file(fig)
    fig.with_suffix(".pdf").unlink()
    res = _snakemake(smoke_run, "results/smoke/figures/minip_witness.pdf")
    assert res.returncode == 0, res.stderr[-3000:]
    log = res.stdout + res.stderr
    assert "figure_minip_witness" in log and "minip_train" not in log
    assert sha256_file(fig) == before
