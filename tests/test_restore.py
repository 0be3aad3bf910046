"""A reference restores a run that Snakemake sees as done; after an edit, only what changed reruns.

On the shared smoke run: publish it as a reference, restore it into a fresh copy of the repository
(no results, no Snakemake metadata), and check that `snakemake -n` plans nothing; then that an edit
to one figure, or to one Min-IP experiment, leaves exactly its artifacts (and their downstream)
out of the restore and in what `attnrank stale` forces to rerun.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import copy_repo, snakemake

from attnrank.pipeline.plan import build_plan
from attnrank.publish.audit import load_config
from attnrank.publish.reference import publish_reference
from attnrank.publish.restore import dag_depths, restore_reference, stale_artifacts

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def reference(smoke_run, tmp_path_factory):
    """The smoke run published as a reference (everything copied: the smoke outputs are small)."""
    dest = tmp_path_factory.mktemp("ref") / "reference"
    run = tmp_path_factory.mktemp("run") / "smoke"
    shutil.copytree(smoke_run / "results" / "smoke", run)
    (run / "audit.json").unlink()
    publish_reference(run, dest)
    return dest


@pytest.fixture()
def clone(tmp_path):
    """A fresh copy of the repository: no results/, no .snakemake/."""
    copy_repo(tmp_path)
    return tmp_path


def _stats(res):
    text = res.stdout + res.stderr
    if "Nothing to be done" in text:
        return {}
    rows = text.split("Job stats:")[1].split("total")[0].splitlines()[3:]
    return {line.split()[0]: int(line.split()[1]) for line in rows if line.strip()}


def _edit(clone: Path, module: str) -> None:
    path = clone / "src" / "attnrank" / module
    path.write_text(path.read_text() + "\n_AN_EDIT = 1\n")


def _stale_in(clone: Path):
    """`attnrank stale` run with the clone's own code (its src first on the path)."""
    env = dict(os.environ, PYTHONPATH=str(clone / "src"))
    out = subprocess.run([sys.executable, "-m", "attnrank", "stale", "results/smoke", "--prefix"],
                         cwd=clone, env=env, capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_a_restored_run_is_up_to_date(reference, clone):
    config = load_config(ROOT / "config.yaml")
    done = restore_reference(reference, clone / "results" / "smoke", config)
    assert not done.left and len(done.copied) > 60
    assert json.loads((clone / "results" / "smoke" / "audit.json").read_text())["ok"]
    res = snakemake(clone, "-n")
    assert res.returncode == 0, res.stderr[-3000:]
    assert _stats(res) == {}, res.stdout[-3000:]
    assert stale_artifacts(clone / "results" / "smoke", config) == []
    with pytest.raises(FileExistsError, match="already holds"):
        restore_reference(reference, clone / "results" / "smoke", config)


def test_mtimes_follow_the_dag(reference, clone):
    config = load_config(ROOT / "config.yaml")
    run = clone / "results" / "smoke"
    restore_reference(reference, run, config)
    plan = build_plan(config, "smoke")
    for out, step in plan.by_output.items():
        for inp in step.inputs:
            assert (run / out).stat().st_mtime > (run / inp).stat().st_mtime, (out, inp)
    assert dag_depths(plan)["claims.md"] > dag_depths(plan)["tables/minip_witness.parquet"] > 0


def test_after_a_figure_edit_only_that_figure_reruns(reference, clone):
    _edit(clone, "minip/figures/minip_witness.py")
    run = clone / "results" / "smoke"
    shutil.copytree(reference, clone / "ref")
    env_restore = subprocess.run(
        [sys.executable, "-m", "attnrank", "restore", "--reference", "ref", "--run",
         "results/smoke"], cwd=clone, env=dict(os.environ, PYTHONPATH=str(clone / "src")),
        capture_output=True, text=True)
    assert env_restore.returncode == 0, env_restore.stderr
    assert "2 left for the run" in env_restore.stdout  # the figure's PDF and PNG
    assert not (run / "figures" / "minip_witness.pdf").exists()
    res = snakemake(clone, "-n", "--forcerun", *_stale_in(clone))
    assert _stats(res) == {"figure_minip_witness": 1, "audit": 1, "all": 1}, res.stdout[-2000:]


def test_after_an_edit_to_one_minip_experiment_only_its_jobs_rerun(reference, clone):
    config = load_config(ROOT / "config.yaml")
    restore_reference(reference, clone / "results" / "smoke", config)
    _edit(clone, "minip/experiments/capacity.py")
    forced = _stale_in(clone)
    assert "results/smoke/minip/capacity/scratch/metrics.parquet" in forced
    res = snakemake(clone, "-n", "--forcerun", *forced)
    stats = _stats(res)
    assert stats.get("minip_capacity_train") == 3, res.stdout[-2000:]
    assert "minip_train" not in stats and "entropic_attention_train" not in stats
    assert set(stats) <= {"minip_capacity_train", "table", "claims", "audit", "all"}
