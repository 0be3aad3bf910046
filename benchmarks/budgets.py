"""Per-study CPU budgets of the full run, checked against a run's own sidecars.

Every study of the full DAG declares here the job seconds it may take at full scale (``BUDGETS``;
a job runs on one thread, so its wall time is its CPU time). The check reads the sidecars of a
run folder (one job per step run: rule and wildcards), adds up each job's ``duration_s`` by the
study its artifacts belong to (``STUDIES``: the first prefix of the artifact path that matches),
and reports measured against budget; a study over its budget, or a job no study claims, fails
(exit 1), so a grid that grows a study is seen when it lands. Two limits hold for the whole run:
its job seconds in all (``MAX_DAG_JOB_S``: what a 2-core host must get through) and the seconds of
its longest job (``MAX_JOB_S``: the wall on many cores or a cluster is the longest chain of jobs,
so no job may run for long; the plan cuts the long ones into parts, ``pipeline.plan``); a run over
either fails too.

    .venv/bin/python benchmarks/budgets.py                          # results/full, else results/reference
    .venv/bin/python benchmarks/budgets.py --run results/reference --out /tmp/budgets.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIDECAR = ".prov.json"
MAX_DAG_JOB_S = 14_000  # the whole full DAG's job seconds
MAX_JOB_S = 360  # the longest job's seconds
OCCUPANCY_CORES = 2  # the host the run's occupancy is reported for

# study → artifact path prefixes (relative to the run folder), first match wins
STUDIES: dict[str, tuple[str, ...]] = {
    "minip rank_vs_m (B2, TT-6)": ("minip/train/rank_vs_m/",),
    "minip witness families (TT-4 sweep)": ("minip/train/witness_families/",),
    "minip ood pools (TT-5)": ("minip/train/ood/",),
    "minip ood memorised pools (TT-5, reported)": ("minip/train/ood_memorising/",),
    "minip ood pool sweep (TT-5, reported)": ("minip/train/ood_pool_sweep/",),
    "minip witness suite (TT-4, TT-4p)": ("minip/train/witness/",),
    "minip length sweep (TT-1, TT-2)": ("minip/train/length_sweep/",),
    "minip restarts (trap study)": ("minip/restarts/",),
    "minip capacity probe": ("minip/capacity/",),
    "minip beyond the single head (OPEN-1, OPEN-2, TT-7)": ("minip/beyond/",),
    # OPEN-3's jobs under the decaying spectrum run by the A3/A4 steps (listed before their rows,
    # which would match them first) and its candidate job
    "entropic OPEN-3 (decaying-spectrum students and estimators, the candidate)": (
        *(f"entropic/attention/{t}_decaying/" for t in ("linear", "softmax_b1", "softmax_b2",
                                                       "softmax_b4")),
        *(f"entropic/predict/{t}_decaying/" for t in ("linear", "softmax_b1", "softmax_b2",
                                                     "softmax_b4", "linear_d32", "softmax_b2_d32",
                                                     "softmax_b4_d32")),
        "tables/entropic_open3_candidate."),
    "entropic attention (EB-8 ... EB-14)": ("entropic/attention/",),
    "entropic predict (EB-13)": ("entropic/predict/",),
    "entropic ladder (EB-5 ... EB-7)": ("entropic/ladder/",),
    "entropic surrogate (EB-1 ... EB-4)": ("entropic/surrogate/",),
    "language, larger rung (OPEN-4)": ("language/rungs/",),
    "language, appendix B (EB-15, EB-16)": ("language/",),
    "tables, figures, claims": ("tables/", "figures/", "claims."),
}

# study → job seconds it may take at full scale (declared: 1.15x each study's sidecar durations in
# the reference of 919f9d4, the regeneration after the speed work, rounded up to 10 s: 6,654 s
# wall, 12,953 job s, two jobs side by side throughout on a 2-core host about 1.5x slower than the
# one that made the reference of 46553b6); so a new grid that grows a study fails the check until
# its budget is raised on purpose. Cutting a job into parts (pipeline.plan) keeps its study.
BUDGETS: dict[str, float] = {
    "minip rank_vs_m (B2, TT-6)": 1600,
    "minip witness families (TT-4 sweep)": 810,
    "minip ood pools (TT-5)": 860,
    "minip ood memorised pools (TT-5, reported)": 450,
    "minip ood pool sweep (TT-5, reported)": 250,
    "minip witness suite (TT-4, TT-4p)": 320,
    "minip length sweep (TT-1, TT-2)": 230,
    "minip restarts (trap study)": 420,
    "minip capacity probe": 100,
    "minip beyond the single head (OPEN-1, OPEN-2, TT-7)": 8310,
    # OPEN-3, declared before its first full run from single-job timings (one thread, 2026-12-05,
    # a machine shared with other work): students 3 x 46 s (softmax) + 14 s (linear), predict
    # jobs 4 x ~20 s (d = 16) + 3 x 7.4 s (d = 32), the candidate job 201 CPU-s (345 s wall while
    # shared; the d = 32 streams of 16,384 sequences drawn again are most of it); ~480 s, x 1.15
    "entropic OPEN-3 (decaying-spectrum students and estimators, the candidate)": 560,
    "entropic attention (EB-8 ... EB-14)": 560,
    "entropic predict (EB-13)": 370,
    "entropic ladder (EB-5 ... EB-7)": 180,
    "entropic surrogate (EB-1 ... EB-4)": 110,
    # appendix B at 10 seeds a corpus with the logit field (OPEN-4), and OPEN-4's larger rung:
    # declared before their run from a timing pilot of one full-scale job each (prose, one
    # thread, on a 2-core host shared with other work and about 1.3x slower than the reference's
    # for this job: 3 seeds took 67 CPU s there against 52 s in the reference): base 228 s wall
    # (223 CPU s), rung 156 s (155 CPU s); 5 jobs each, + 20 % and + 25 %, rounded
    "language, larger rung (OPEN-4)": 1000,
    "language, appendix B (EB-15, EB-16)": 1400,
    "tables, figures, claims": 80,  # 60, + 20 for OPEN-3's tables, its table step and figure
}


def study_of(artifact: str) -> str | None:
    """The study an artifact (path relative to the run folder) belongs to."""
    for study, prefixes in STUDIES.items():
        if any(artifact.startswith(p) for p in prefixes):
            return study
    return None


def job_seconds(sidecars: Iterable[dict]) -> dict[str, float]:
    """Job seconds per study: each step run (rule, wildcards) counted once, by its artifacts'
    study. ValueError on a job without a study or without ``duration_s``."""
    jobs: dict[tuple[str, str], dict] = {}
    for rec in sidecars:
        jobs.setdefault((rec["rule"], json.dumps(rec["wildcards"], sort_keys=True)), rec)
    out = dict.fromkeys(STUDIES, 0.0)
    for rec in jobs.values():
        study = study_of(rec["artifact"])
        if study is None:
            raise ValueError(f"{rec['artifact']}: no study of benchmarks/budgets.py claims it")
        if rec.get("duration_s") is None:
            raise ValueError(f"{rec['artifact']}: its sidecar records no duration_s")
        out[study] += float(rec["duration_s"])
    return out


def core_idle_seconds(sidecars: Iterable[dict], cores: int = OCCUPANCY_CORES) -> dict:
    """How well the jobs filled ``cores``: seconds (between the first start and the last end of
    the step runs, each counted once) in which at least one job ran but fewer than ``cores`` did,
    from the sidecars' ``start`` and ``end``. A run restored from a reference holds jobs of
    several runs; stretches where no job ran are left out, so their gaps do not count."""
    from datetime import datetime

    spans = {}
    for rec in sidecars:
        if rec.get("start") and rec.get("end"):
            spans[(rec["rule"], json.dumps(rec["wildcards"], sort_keys=True))] = (
                datetime.fromisoformat(rec["start"]).timestamp(),
                datetime.fromisoformat(rec["end"]).timestamp())
    events = sorted([(a, 1) for a, _ in spans.values()] + [(b, -1) for _, b in spans.values()])
    below, running, last = 0.0, 0, None
    for t, step in events:
        if last is not None and 0 < running < cores:
            below += t - last
        running, last = running + step, t
    return {"cores": cores, "jobs": len(spans), "seconds_below_cores": round(below, 1)}


def longest_jobs(sidecars: Iterable[dict], above: float = MAX_JOB_S) -> list[dict]:
    """The jobs (each step run once) longer than ``above`` seconds, longest first: rule,
    wildcards and seconds."""
    jobs: dict[tuple[str, str], dict] = {}
    for rec in sidecars:
        jobs.setdefault((rec["rule"], json.dumps(rec["wildcards"], sort_keys=True)), rec)
    over = [{"rule": r["rule"], "wildcards": {k: v for k, v in r["wildcards"].items()
                                              if k != "scale"},
             "duration_s": float(r["duration_s"])} for r in jobs.values()
            if r.get("duration_s") is not None and float(r["duration_s"]) > above]
    return sorted(over, key=lambda r: -r["duration_s"])


def check(measured: dict[str, float], budgets: dict[str, float], longest_s: float = 0.0,
          too_long: list[dict] | None = None) -> dict:
    """Measured against budget per study, the sum against ``MAX_DAG_JOB_S`` and the longest job
    (``longest_s``; ``too_long``: the jobs over ``MAX_JOB_S``) against ``MAX_JOB_S``."""
    rows = {s: {"measured_s": round(measured.get(s, 0.0), 1), "budget_s": budgets[s],
                "ok": measured.get(s, 0.0) <= budgets[s]} for s in budgets}
    total = sum(measured.values())
    too_long = too_long or []
    return {"studies": rows, "total_s": round(total, 1), "budget_total_s": sum(budgets.values()),
            "max_dag_job_s": MAX_DAG_JOB_S, "dag_ok": total <= MAX_DAG_JOB_S,
            "longest_job_s": round(longest_s, 1), "max_job_s": MAX_JOB_S,
            "jobs_over_max": too_long, "jobs_ok": longest_s <= MAX_JOB_S and not too_long,
            "ok": (all(r["ok"] for r in rows.values()) and total <= MAX_DAG_JOB_S
                   and longest_s <= MAX_JOB_S and not too_long)}


def read_sidecars(run: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(run.rglob("*" + SIDECAR))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", help="the run folder (default results/full, else results/reference)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "budgets.json"))
    a = ap.parse_args(argv)
    run = Path(a.run) if a.run else next(
        (p for p in (ROOT / "results" / "full", ROOT / "results" / "reference")
         if (p / "claims.csv").exists()), ROOT / "results" / "full")
    if not run.is_dir():
        print(f"budgets: no run folder at {run}", file=sys.stderr)
        return 2
    sidecars = read_sidecars(run)
    if {r.get("params", {}).get("scale", "full") for r in sidecars if r["rule"] == "claims"} != {"full"}:
        print(f"budgets: {run} is not a full-scale run (budgets are for scale full)", file=sys.stderr)
        return 2
    too_long = longest_jobs(sidecars)
    longest = max((float(r["duration_s"]) for r in sidecars if r.get("duration_s") is not None),
                  default=0.0)
    report = check(job_seconds(sidecars), BUDGETS, longest, too_long)
    report["occupancy"] = core_idle_seconds(sidecars)
    report["run"] = str(run.relative_to(ROOT)) if run.is_relative_to(ROOT) else str(run)
    Path(a.out).write_text(json.dumps(report, indent=2) + "\n")
    for study, row in report["studies"].items():
        flag = "ok  " if row["ok"] else "OVER"
        print(f"{flag} {study:40s} {row['measured_s']:8.1f} s of {row['budget_s']:6.0f} s")
    print(f"{'ok  ' if report['dag_ok'] else 'OVER'} total {report['total_s']:.0f} job s "
          f"(budgets {report['budget_total_s']:.0f}; the run may take {MAX_DAG_JOB_S:,})")
    print(f"{'ok  ' if report['jobs_ok'] else 'OVER'} longest job {report['longest_job_s']:.0f} s "
          f"(no job may take more than {MAX_JOB_S})")
    for job in report["jobs_over_max"]:
        print(f"     {job['rule']} {json.dumps(job['wildcards'], sort_keys=True)}: "
              f"{job['duration_s']:.0f} s")
    occ = report["occupancy"]
    print(f"while jobs ran, fewer than {occ['cores']} did for {occ['seconds_below_cores']:.0f} s "
          f"({occ['jobs']} jobs): the most a better schedule could give back is about half that")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
