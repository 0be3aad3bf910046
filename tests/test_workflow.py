"""One smoke run of the whole DAG in a fresh copy of the repository.

Checks: every figure and the claims table are built; every file under results/ has a sidecar
whose sha256 matches; a second run has nothing to do; a single figure rebuilds alone and
byte-identically.
"""

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import copy_repo, snakemake

from attnrank.claims import evaluate_claims
from attnrank.pipeline.plan import NON_ARTIFACTS, build_plan, claims_params
from attnrank.pipeline.provenance import SIDECAR_SUFFIX, sha256_file
from attnrank.pipeline.registry import CLAIMS, FIGURES, claim_tables
from attnrank.publish.audit import load_config

pytestmark = pytest.mark.slow


def assert_claims_recomputed(run: Path, config_path: Path, scale: str) -> None:
    """The run's claims.csv is what the checks give on the run's own tables with the plan's
    params: every registry claim, in order, same verdict, measured values, threshold and note
    (a wrong verdict, a dropped claim or a stale table fails)."""
    written = pd.read_csv(run / "claims.csv", dtype=str, keep_default_na=False)
    assert list(written["id"]) == list(CLAIMS)
    tables = [run / "tables" / f"{t}.parquet" for t in claim_tables()]
    config = yaml.safe_load(config_path.read_text())
    again = evaluate_claims(tables, claims_params(config, scale)).astype(str)
    for col in ("verdict", "statement", "measured", "threshold", "note"):
        diff = written[col] != again[col]
        assert not diff.any(), (col, list(written.loc[diff, "id"]))
    not_run = written[written["verdict"] == "not run"]
    assert all(n.strip() for n in not_run["note"]), "a not-run claim without its reason"


def assert_figure_files(pdf: Path, png: Path) -> None:
    """A one-page PDF and a PNG whose pixel size is the PDF page's at the PNG's 150 dpi."""
    import re
    import struct

    data = pdf.read_bytes()
    assert data.startswith(b"%PDF-") and data.rstrip().endswith(b"%%EOF"), pdf
    assert len(re.findall(rb"/Type\s*/Page\b", data)) == 1, pdf
    box = [float(v) for v in re.search(rb"/MediaBox\s*\[([^\]]*)\]", data).group(1).split()]
    head = png.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", png
    width, height = struct.unpack(">II", head[16:24])
    points = (box[2] - box[0], box[3] - box[1])  # 72 per inch
    assert (width, height) == (round(points[0] / 72 * 150), round(points[1] / 72 * 150)), png


def test_every_figure_and_the_claims_are_built(smoke_run):
    """Every registered figure, drawn from exactly the tables its module declares."""
    res = smoke_run / "results" / "smoke"
    for name, fig in FIGURES.items():
        pdf, png = res / "figures" / f"{name}.pdf", res / "figures" / f"{name}.png"
        assert_figure_files(pdf, png)
        side = json.loads(pdf.with_name(pdf.name + SIDECAR_SUFFIX).read_text())
        assert sorted(side["inputs"]) == sorted(f"tables/{t}.parquet" for t in fig.tables), name
    assert_claims_recomputed(res, smoke_run / "config.yaml", "smoke")
    assert (res / "tables" / "minip_information_bound.csv").exists()
    assert "<table>" in (res / "claims.html").read_text()


def test_every_artifact_has_a_matching_sidecar(smoke_run):
    res = smoke_run / "results"
    run_dir = res / "smoke"
    artifacts = [p for p in res.rglob("*") if p.is_file() and not p.name.endswith(SIDECAR_SUFFIX)
                 and p.name not in NON_ARTIFACTS]
    assert len(artifacts) > 10
    for p in artifacts:
        side = p.with_name(p.name + SIDECAR_SUFFIX)
        assert side.exists(), f"no sidecar for {p}"
        text = side.read_text()
        assert str(smoke_run) not in text, f"{side} holds a machine path"
        rec = json.loads(text)
        assert rec["sha256"] == sha256_file(p), p
        assert rec["artifact"] == p.relative_to(run_dir).as_posix()
        assert rec["command"].startswith("python -m attnrank ")
        for inp, digest in rec["inputs"].items():
            assert sha256_file(run_dir / inp) == digest, (p, inp)
    assert not [p for p in res.rglob("*.tmp*")], "half-written files left behind"


def test_second_run_has_nothing_to_do(smoke_run):
    res = snakemake(smoke_run, "-n")
    assert res.returncode == 0
    assert "Nothing to be done" in res.stdout + res.stderr


def test_single_figure_rebuild_is_alone_and_byte_identical(smoke_copy):
    fig = smoke_copy / "results" / "smoke" / "figures" / "minip_witness.png"
    before = sha256_file(fig)
    fig.with_suffix(".pdf").unlink()
    res = snakemake(smoke_copy, "results/smoke/figures/minip_witness.pdf", scale=None)
    assert res.returncode == 0, res.stderr[-3000:]
    log = res.stdout + res.stderr
    assert "figure_minip_witness" in log and "minip_train" not in log
    assert sha256_file(fig) == before


def test_the_dag_ends_with_a_clean_audit(smoke_run):
    report = json.loads((smoke_run / "results" / "smoke" / "audit.json").read_text())
    assert report["ok"] and report["findings"] == [] and report["checked"] > 40


def test_one_figure_plans_only_its_upstream_without_config(tmp_path):
    copy_repo(tmp_path)
    res = snakemake(tmp_path, "-n", "results/smoke/figures/minip_witness.pdf", scale=None)
    assert res.returncode == 0, res.stderr[-3000:]
    stats = res.stdout.split("Job stats:")[1].split("total")[0].splitlines()[3:]
    jobs = {line.split()[0] for line in stats if line.strip()}
    # the smoke scale runs every minip_train job as one (config one_job_per_rule)
    assert jobs == {"smoke_minip_train", "minip_constructions", "table", "figure_minip_witness"}
    assert "results/smoke/minip/train/witness/table/metrics.parquet" in res.stdout
    assert "results/full" not in res.stdout
    res = snakemake(tmp_path, "-n", "results/smoke/figures/minip_witness.pdf", "--config",
                    "one_job_per_rule=[]", scale=None)
    assert res.returncode == 0, res.stderr[-3000:]
    stats = res.stdout.split("Job stats:")[1].split("total")[0].splitlines()[3:]
    counts = {line.split()[0]: int(line.split()[1]) for line in stats if line.strip()}
    assert set(counts) == {"minip_train", "minip_constructions", "table", "figure_minip_witness"}
    assert counts["minip_train"] < sum(1 for r in build_plan(load_config(tmp_path / "config.yaml"),
                                                             "smoke").runs
                                       if r.step == "minip_train")  # only the witness jobs


def test_a_venvs_snakemake_called_by_path_runs_without_the_venv_on_path(tmp_path):
    """`.venv/bin/snakemake <target>` with the venv not activated (its bin not on PATH, so the
    shell's `python` is another interpreter or none): the job runs the package with the
    interpreter that runs Snakemake."""
    import os
    import subprocess

    from conftest import SNAKEMAKE

    copy_repo(tmp_path)
    venv_bin = str(Path(SNAKEMAKE).parent)
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p != venv_bin)
    res = subprocess.run([SNAKEMAKE, "--cores", "1", "results/smoke/tables/language_corpora.parquet"],
                         cwd=tmp_path, env=dict(os.environ, PATH=path), capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 0, (res.stderr[-2000:],
                                 (tmp_path / "logs" / "smoke" / "language_corpora.log").read_text()
                                 if (tmp_path / "logs" / "smoke" / "language_corpora.log").exists()
                                 else "")
    assert (tmp_path / "results" / "smoke" / "tables" / "language_corpora.parquet").exists()


def test_report_shows_figures_and_the_claims_table(smoke_run, tmp_path):
    out = tmp_path / "report.html"
    res = snakemake(smoke_run, "--report", str(out))
    assert res.returncode == 0, res.stderr[-3000:]
    html = out.read_text()
    assert "minip_witness.png" in html and "claims.html" in html
