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

from attnrank.pipeline.onejob import one_jobs, rerun_outputs
from attnrank.pipeline.plan import NON_ARTIFACTS, build_plan
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
    # at smoke, the capacity study's 3 jobs are one (config one_job_per_rule)
    assert stats.get("smoke_minip_capacity_train") == 1, res.stdout[-2000:]
    assert set(stats) <= {"smoke_minip_capacity_train", "table", "claims", "audit", "all"}


def _planned_outputs(res) -> set[str]:
    """Every output `snakemake -n` plans (results/<scale>/..., the audit's own file aside)."""
    assert res.returncode == 0, res.stderr[-3000:]
    out = set()
    for line in res.stdout.splitlines():
        if line.strip().startswith("output:"):
            out |= {p.strip() for p in line.split(":", 1)[1].split(",")}
    return {p for p in out if p.startswith("results/") and not p.endswith("/audit.json")}


WITNESS_STEP = "    table, summary = witness_families_tables(inputs, job)\n"
SMOKE_WITNESS = "witness: {blocks: 4, width: 2, steps: 150, feature_maps: [table, mlp], ranks: [1, 2, 4]}"


def _with_their_jobs(repo: Path, stale: set[str]) -> set[str]:
    """What plain `snakemake` reruns for the audit's ``stale`` artifacts at smoke: those, every
    other output of a one-job rule holding one of them (config one_job_per_rule: its jobs run
    together) and what lies downstream of those."""
    plan = build_plan(load_config(repo / "config.yaml"), "smoke")
    more = rerun_outputs(one_jobs(plan.runs, "smoke"),
                         {p.removeprefix("results/smoke/") for p in stale})
    return stale | {f"results/smoke/{p}" for p in more | plan.downstream(more)
                    if p not in NON_ARTIFACTS}


def _plain_snakemake_sees_what_the_audit_sees(repo: Path) -> None:
    """Plain `snakemake -n` in ``repo`` (a smoke run, current): a comment or docstring edit plans
    nothing; a step-body edit plans exactly the audit's stale set (the step's artifacts and
    everything below them); a config value of one study plans only that study (at smoke, with
    the other jobs of its one-job rules)."""
    module = repo / "src" / "attnrank" / "minip" / "experiments" / "witness_families.py"
    original = module.read_text()
    assert WITNESS_STEP in original
    module.write_text(original.replace(WITNESS_STEP, "    # a comment\n" + WITNESS_STEP)
                      .replace("the per-(family, rank, seed)", "the per-(family, rank and seed)"))
    assert _planned_outputs(snakemake(repo, "-n")) == set() == set(_stale_in(repo))

    module.write_text(original.replace(WITNESS_STEP, "    inputs = list(inputs)\n" + WITNESS_STEP))
    stale = set(_stale_in(repo))
    assert {"results/smoke/tables/minip_witness_families.parquet",
            "results/smoke/figures/minip_witness_families.pdf",
            "results/smoke/claims.md"} <= stale
    assert _planned_outputs(snakemake(repo, "-n")) == stale
    module.write_text(original)

    config = repo / "config.yaml"
    text = config.read_text()
    assert text.count(SMOKE_WITNESS) == 1
    config.write_text(text.replace(SMOKE_WITNESS, SMOKE_WITNESS.replace("150", "120")))
    stale = set(_stale_in(repo))
    assert "results/smoke/minip/train/witness/table/metrics.parquet" in stale
    # the witness suite's training jobs (and the witness-families job of K = 4, w = 3, which
    # shares its steps); no other study's
    assert not {p for p in stale if "/train/" in p and "/train/witness" not in p}
    assert not {p for p in stale if "/beyond/" in p or "/entropic/" in p or "/language/" in p}
    planned = _planned_outputs(snakemake(repo, "-n"))
    assert planned == _with_their_jobs(repo, stale)
    assert not {p for p in planned if "/beyond/" in p or "/entropic/" in p or "/language/" in p}
    config.write_text(text)


def test_plain_snakemake_after_restore_reruns_what_changed(reference, clone):
    """`attnrank restore` records Snakemake's metadata, so plain `snakemake` (no --forcerun)
    reruns exactly what the audit calls stale after a restore."""
    shutil.copytree(reference, clone / "ref")
    done = subprocess.run(
        [sys.executable, "-m", "attnrank", "restore", "--reference", "ref", "--run",
         "results/smoke"], cwd=clone, env=dict(os.environ, PYTHONPATH=str(clone / "src")),
        capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "metadata of every smoke job recorded" in done.stdout
    _plain_snakemake_sees_what_the_audit_sees(clone)


def test_plain_snakemake_after_a_normal_run_reruns_what_changed(smoke_copy):
    _plain_snakemake_sees_what_the_audit_sees(smoke_copy)
