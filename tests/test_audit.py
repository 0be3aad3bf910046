"""`audit` finds exactly the artifacts a change affects, and their downstream, in the right
category: a one-byte edit of a table, a deleted sidecar, a config value that feeds one job, the
source of one module, an artifact the DAG no longer makes. On a fresh smoke run it passes."""

import copy
import shutil
from pathlib import Path

import pytest
import yaml

from attnrank import codehash
from attnrank.audit import audit_run, load_config
from attnrank.cli import main
from attnrank.codehash import closure_hash, import_closure, step_entries
from attnrank.plan import build_plan

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
    changed["minip"]["scales"]["smoke"]["ood"]["scales"][0]["train_pool"] += 1
    job = {"minip/train/ood/small/metrics.parquet", "minip/train/ood/small/weights.npz"}
    plan = build_plan(changed, "smoke")
    found = _by_category(audit_run(run, changed))
    assert found == {"stale": job | plan.downstream(job)}


@pytest.mark.parametrize("module", ["figures/minip_witness.py", "tasks/minip.py", "rank.py"])
def test_source_of_one_module(run, config, tmp_path, module):
    pkg = tmp_path / "pkg" / "attnrank"
    shutil.copytree(Path(codehash.__file__).parent, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (pkg / module).write_text((pkg / module).read_text() + "\n# an edit\n")

    def edited_hash(step, figure=None):
        return closure_hash(step_entries(step, figure), pkg)

    plan = build_plan(config, "smoke")
    direct = {out for r in plan.runs
              if pkg / module in import_closure(step_entries(r.step, r.figure), pkg)
              for out in r.outputs}
    assert direct, f"no step imports {module}"
    found = _by_category(audit_run(run, config, code_hash=edited_hash))
    assert found == {"stale": direct | plan.downstream(direct)}


def test_orphaned_and_half_pairs(run, config):
    src, dst = run / "minip" / "train" / "ood" / "small", run / "minip" / "train" / "ood" / "tiny"
    shutil.copytree(src, dst)
    (run / "tables" / "stray.parquet").write_bytes(b"x")
    found = _by_category(audit_run(run, config))
    assert found == {"orphaned": {"minip/train/ood/tiny/metrics.parquet",
                                  "minip/train/ood/tiny/weights.npz"},
                     "missing": {"tables/stray.parquet"}}


def test_reference_folder_with_sidecar_only_training_jobs(run, config, tmp_path):
    from attnrank.reference import publish_reference

    (run / "audit.json").unlink(missing_ok=True)
    dest = tmp_path / "reference"
    publish_reference(run, dest)
    assert not list(dest.glob("minip/train/*/*/metrics.parquet")), "training tables are not copied"
    assert list(dest.glob("minip/train/*/*/metrics.parquet.prov.json"))
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
