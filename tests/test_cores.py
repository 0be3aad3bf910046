"""benchmarks/cores.py: the P-core wall of a run folder, replayed from its sidecars."""

import importlib.util
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("cores", ROOT / "benchmarks" / "cores.py")
cores = importlib.util.module_from_spec(_spec)
sys.modules["cores"] = cores  # its dataclass looks its module up
_spec.loader.exec_module(cores)

BEGIN = 1_800_000_000.0  # the recorded run's start (epoch seconds)


def _iso(t: float) -> str:
    return datetime.fromtimestamp(BEGIN + t, UTC).isoformat()


def _job(run: Path, artifact: str, rule: str, step: str, name: str, start: float, end: float,
         reads: tuple[str, ...] = ()) -> None:
    path = run / (artifact + ".prov.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({
        "artifact": artifact, "rule": rule, "step": step, "wildcards": {"name": name},
        "duration_s": end - start, "start": _iso(start), "end": _iso(end),
        "inputs": {r: "0" * 64 for r in reads}}))


@pytest.fixture
def run(tmp_path):
    """A recorded 2-core run (wall 118 s), every start-up 2 s, longest training job first:
    core 1: A 0+2..102, T 102+2..105, F 105+2..109; core 2: B 0+2..62, C 62+2..114,
    claims 114+2..117; R restored from an earlier run (5 s)."""
    folder = tmp_path / "run"
    _job(folder, "a.parquet", "minip_train", "minip_train", "a", 2, 102)
    _job(folder, "b.parquet", "minip_train", "minip_train", "b", 2, 62)
    _job(folder, "c.parquet", "minip_train", "minip_train", "c", 64, 114)
    _job(folder, "t.parquet", "table", "table", "t", 104, 105, ("a.parquet", "b.parquet"))
    _job(folder, "f.png", "figure_f", "figure", "f", 107, 109, ("t.parquet",))
    _job(folder, "claims.csv", "claims", "claims", "claims", 116, 117,
         ("t.parquet", "c.parquet", "corpus.txt"))
    _job(folder, "r.parquet", "language_corpora", "language_corpora", "r", -10_000, -9_995)
    record = {"date": _iso(118), "wall_s": 118.0, "cores": 2, "command": "snakemake --cores 2"}
    return folder, record


def test_the_recorded_run_replays_to_its_wall_and_the_rows_follow_the_dag(run):
    folder, record = run
    report = cores.cores_report(folder, record, folder)
    assert report["startup_median_s"] == 2.0
    assert report["outside_jobs_s"] == 1.0  # 118 s recorded, its jobs span 117
    check = report["check"]
    assert (check["jobs_rerun"], check["jobs_restored"]) == (6, 1)
    assert check["replayed_wall_s"] == 118.0 and check["difference"] == 0.0
    rows = {r["cores"]: r["wall_s"] for r in report["rows"]}
    assert rows[1] == 102 + 62 + 52 + 3 + 4 + 3 + 7 + 1  # every job one after the other
    assert rows[2] == 118.0  # R fits where core 1 waits on C
    assert rows[None] == rows[64] == 102 + 3 + 4 + 1  # the critical path A → T → F
    assert [j["name"] for j in report["critical_path"]["jobs"]] == [
        "minip_train/a", "table/t", "figure_f/f"]
    assert report["critical_path"]["wall_s"] == rows[None]


def test_priorities_come_from_the_reference_that_ordered_the_run(run, tmp_path):
    folder, record = run
    ref = tmp_path / "older"  # ordered by an older reference that knew only C: C first
    _job(ref, "c.parquet", "minip_train", "minip_train", "c", 0, 500)
    report = cores.cores_report(folder, record, ref)
    rows = {r["cores"]: r["wall_s"] for r in report["rows"]}
    # C 0..52 and A 0..102, then B (longest of the rest) 52..114 and R 102..109: T waits for B,
    # T 114..117, F 117..121
    assert rows[2] == 114 + 3 + 4 + 1
    assert cores.cores_report(folder, record, folder)["rows"][1]["wall_s"] == 118.0


def test_a_missing_field_or_a_foreign_record_is_named(run, tmp_path):
    folder, record = run
    with pytest.raises(ValueError, match="no job started during the recorded run"):
        cores.cores_report(folder, record | {"date": _iso(50_000)}, folder)
    bad = tmp_path / "bad"
    (bad / "x").mkdir(parents=True)
    (bad / "x" / "m.parquet.prov.json").write_text(json.dumps({"artifact": "x/m.parquet",
                                                               "rule": "table"}))
    with pytest.raises(ValueError, match=r"x/m\.parquet\.prov\.json: no step, duration_s"):
        cores.read_jobs(bad)


def test_the_rules_ordered_by_the_reference_are_those_of_the_workflow():
    rules = cores.priority_rules()
    assert {"minip_train", "minip_beyond_train", "entropic_predict", "entropic_ladder_train",
            "language_train"} <= rules
    assert not rules & {"table", "claims", "figure", "minip_beyond_growth"}


def test_the_dag_without_a_rule_drops_its_jobs_and_everything_downstream(run):
    """--omit-from table: the table, the figure and the claims go (they need the table); the
    training jobs and the restored corpus stay, replayed on 2 cores and unlimited."""
    folder, record = run
    report = cores.cores_report(folder, record, folder, ("table",))
    rest = report["without"]["table"]
    assert rest["jobs"] == 4 and rest["job_s"] == 100 + 60 + 50 + 5
    walls = {r["cores"]: r["wall_s"] for r in rest["rows"]}
    # 2 cores: A 0..102 and B 0..62, then C 62..114 and R 102..109; + 1 s outside the jobs
    assert walls == {2: 115.0, None: 103.0}
    assert cores.main(["--run", str(folder), "--record", str(folder / "nope.json")]) == 2
