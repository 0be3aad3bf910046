"""`audit` finds exactly the artifacts a change affects, and their downstream, in the right
category: a one-byte edit of a table, a deleted sidecar, a config value that feeds one job, the
source of one module, an artifact the DAG no longer makes. On a fresh smoke run it passes."""

import copy
import shutil
from pathlib import Path

import pytest
import yaml

from attnrank.cli import main
from attnrank.pipeline import codehash
from attnrank.pipeline.codehash import closure_hash, import_closure, step_entries
from attnrank.pipeline.plan import build_plan
from attnrank.publish.audit import audit_run, load_config

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def config():
    return load_config(ROOT / "config.yaml")


@pytest.fixture()
def run(smoke_run, tmp_path):
    """A private copy of the smoke run folder, as results/smoke/ of a scratch tree."""
    dest = tmp_path / "results" / "smoke"
    shutil.copytree(smoke_run / "results" / "smoke", dest)
    return dest


def _by_category(report):
    out: dict[str, set[str]] = {}
    for f in report.findings:
        out.setdefault(f.category, set()).add(f.path)
    return out


def test_a_fresh_smoke_run_passes(run, config):
    report = audit_run(run, config)
    assert report.ok, report.summary()
    assert report.checked > 40 and report.scale == "smoke"
    assert main(["audit", str(run), "--config", str(ROOT / "config.yaml")]) == 0


def test_one_byte_edit_of_a_table(run, config):
    table = run / "tables" / "minip_witness.parquet"
    data = bytearray(table.read_bytes())
    data[len(data) // 2] ^= 1
    table.write_bytes(bytes(data))
    plan = build_plan(config, "smoke")
    found = _by_category(audit_run(run, config))
    assert found == {"modified": {"tables/minip_witness.parquet"},
                     "broken chain": plan.downstream({"tables/minip_witness.parquet"})}
    assert main(["audit", str(run), "--config", str(ROOT / "config.yaml")]) == 1


def test_deleted_sidecar(run, config):
    (run / "tables" / "minip_ood.parquet.prov.json").unlink()
    plan = build_plan(config, "smoke")
    found = _by_category(audit_run(run, config))
    assert found == {"missing": {"tables/minip_ood.parquet"},
                     "stale": plan.downstream({"tables/minip_ood.parquet"})}


def test_deleted_artifact(run, config):
    (run / "figures" / "minip_witness.png").unlink()
    assert _by_category(audit_run(run, config)) == {"missing": {"figures/minip_witness.png"}}


def test_config_value_that_feeds_one_job(run, config):
    changed = copy.deepcopy(config)
    changed["minip"]["scales"]["smoke"]["ood"]["scales"][0]["train_pool"] -= 1
    job = {"minip/train/ood/small/metrics.parquet", "minip/train/ood/small/weights.npz"}
    plan = build_plan(changed, "smoke")
    found = _by_category(audit_run(run, changed))
    assert found == {"stale": job | plan.downstream(job)}


PACKAGE = Path(codehash.__file__).resolve().parents[1]


@pytest.fixture()
def pkg(tmp_path):
    """A private copy of the package, to edit; ``edited(pkg)`` gives the code hashes it has."""
    dest = tmp_path / "pkg" / "attnrank"
    shutil.copytree(PACKAGE, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def _hashes_of(pkg):
    def edited_hash(step, figure=None):
        return closure_hash(step_entries(step, figure), pkg)

    return edited_hash


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


@pytest.mark.parametrize("module", [
    "minip/figures/minip_witness.py",  # one figure
    "minip/models.py",  # the Min-IP model code: every step that imports it
    "core/rank.py",  # shared science
    "language/experiments/corpora.py",  # one step's body (language_corpora)
    "core/tables.py",  # the table step's body
])
def test_a_semantic_edit_of_one_module_stales_its_steps_and_their_downstream(run, config, pkg,
                                                                              module):
    _append(pkg / module, "\n_AN_EDIT = 1\n")
    plan = build_plan(config, "smoke")
    direct = {out for r in plan.runs
              if pkg / module in import_closure(step_entries(r.step, r.figure), pkg)
              for out in r.outputs}
    assert direct, f"no step imports {module}"
    found = _by_category(audit_run(run, config, code_hash=_hashes_of(pkg)))
    assert found == {"stale": direct | plan.downstream(direct)}
    if module == "language/experiments/corpora.py":
        assert {r.step for r in plan.runs if set(r.outputs) & direct} == {"language_corpora"}


def test_comments_docstrings_and_formatting_of_every_module_stale_nothing(run, config, pkg):
    for path in sorted(pkg.rglob("*.py")):
        text = path.read_text()
        if text.lstrip().startswith('"""'):
            text = text.replace('"""', '"""An edited docstring.  ', 1)
        path.write_text("# a new comment\n\n" + text.replace("\n\n\n", "\n\n\n\n") + "\n\n")
    report = audit_run(run, config, code_hash=_hashes_of(pkg))
    assert report.ok, report.summary()


@pytest.mark.parametrize("module", [
    "pipeline/progress.py", "pipeline/recovery.py", "pipeline/checkpoint.py",
    "pipeline/provenance.py", "pipeline/registry.py", "pipeline/plan.py", "pipeline/codehash.py",
    "pipeline/runner.py", "pipeline/errors.py", "publish/audit.py", "cli.py"])
def test_an_edit_to_run_control_stales_nothing(run, config, pkg, module):
    _append(pkg / module, "\n_AN_EDIT = 1\n\ndef _also_new():\n    return _AN_EDIT\n")
    report = audit_run(run, config, code_hash=_hashes_of(pkg))
    assert report.ok, report.summary()


def test_registering_a_new_step_stales_nothing(run, config, pkg):
    (pkg / "minip" / "experiments" / "new_study.py").write_text(
        "from attnrank.minip.models import KernelAttention\n\n\ndef step(job):\n"
        "    return {'out': KernelAttention}\n")
    _append(pkg / "pipeline" / "registry.py",  # its command comes from this entry, not cli.py
            '\nSTEPS["minip_new_study"] = Step("minip_new_study", "minip-new-study",'
            ' "attnrank.minip.experiments.new_study", "a new study", "compute",'
            ' "attnrank.minip.jobs.MinipConstructionsJob", outputs=(Arg("--out"),))\n')
    report = audit_run(run, config, code_hash=_hashes_of(pkg))
    assert report.ok, report.summary()
    assert closure_hash(("attnrank.minip.experiments.new_study",), pkg)  # it has a hash of its own


def test_the_compile_cache_is_not_an_artifact(run, config):
    """Inductor's kernels in the run folder's .cache/ are neither artifacts nor orphans."""
    cache = run / ".cache" / "inductor" / "ab"
    cache.mkdir(parents=True)
    (cache / "kernel.cpp").write_text("// compiled\n")
    report = audit_run(run, config)
    assert report.ok, report.summary()
    assert not any(".cache" in f.path for f in report.findings)


def test_orphaned_and_half_pairs(run, config):
    src, dst = run / "minip" / "train" / "ood" / "small", run / "minip" / "train" / "ood" / "tiny"
    shutil.copytree(src, dst)
    (run / "tables" / "stray.parquet").write_bytes(b"x")
    found = _by_category(audit_run(run, config))
    assert found == {"orphaned": {"minip/train/ood/tiny/metrics.parquet",
                                  "minip/train/ood/tiny/weights.npz"},
                     "missing": {"tables/stray.parquet"}}


def test_reference_folder_with_sidecar_only_training_jobs(run, config, tmp_path):
    from attnrank.publish.reference import publish_reference

    (run / "audit.json").unlink(missing_ok=True)
    dest = tmp_path / "reference"
    publish_reference(run, dest, max_bytes=20_000)  # the larger training outputs: sidecar-only
    assert list(dest.glob("minip/train/*/*/metrics.parquet")), "small training tables are copied"
    big = [p for p in run.rglob("*.npz") if p.stat().st_size > 20_000]
    assert big and not any((dest / p.relative_to(run)).exists() for p in big)
    assert all((dest / p.relative_to(run)).with_name(p.name + ".prov.json").exists() for p in big)
    report = audit_run(dest, config)
    assert report.ok, report.summary()
    assert report.scale == "smoke"
    data = bytearray((dest / "tables" / "minip_ood.parquet").read_bytes())
    data[-20] ^= 1
    (dest / "tables" / "minip_ood.parquet").write_bytes(bytes(data))
    assert _by_category(audit_run(dest, config))["modified"] == {"tables/minip_ood.parquet"}


def test_config_errors_name_the_key(tmp_path):
    bad = yaml.safe_load((ROOT / "config.yaml").read_text())
    bad["minip"]["lr"] = "fast"
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(bad))
    with pytest.raises(ValueError, match="minip.lr"):
        load_config(tmp_path / "c.yaml")
