"""How long the full run takes on P cores: a replay of a run folder's DAG from its sidecars.

Every artifact's sidecar records its job (rule and wildcards), the job's ``duration_s``, its
``start`` and ``end``, and the artifacts it read (``inputs``), so a finished run folder holds its
whole DAG with the seconds of every job. This script replays it on P cores by list scheduling, as
Snakemake runs it:

* each job holds one core (every training job runs on one thread) for its start-up plus its
  ``duration_s``; a job is ready when every job it reads from has ended;
* whenever a core is free, the ready job of the highest priority starts, then the longest: the
  priority of a rule with ``priority: longest_job_first(...)`` (every training rule and
  entropic_predict) is the job's seconds in the reference the run was ordered by
  (``pipeline.schedule``: ``--priorities-from``, default the run folder itself, as a run ordered by
  it), every other rule's 0;
* a job's start-up (launching the process, importing the step: the time between a core falling
  free, or the job's inputs appearing, and the job's recorded ``start``) is read from the
  timeline of the recorded run (``--record``, benchmarks/results/pipeline_full_wall.json): the
  recorded jobs are replayed in the order they started on the record's cores; a job whose
  start-up the timeline does not show (the first on each core, one restored from an earlier run)
  gets the median;
* the wall is the replay's makespan plus what the recorded run spent outside its jobs (its wall
  less the span of its sidecars: the DAG's build, the audit at the end).

The check: the recorded run replayed as it ran (the jobs it did not rerun done at the start, on
the record's cores) against its recorded wall. The rows: every job of the folder (a fresh run) on
P = 1, 2, 4, 8, 16, 32, 64 cores and unlimited, whose wall is the critical path (the longest chain
of jobs, each after what it reads, listed); and the same replay on 2 cores and unlimited without
the jobs of ``--omit-from`` rules and what needs them (Snakemake's ``--omit-from``: the run a
user makes when the beyond study goes to a GPU partition). A host's speed scales every row
(hosts differ by up to 3× in how fast the same job runs); with more cores than two, jobs side by
side also share memory bandwidth, which the replay does not model.

    .venv/bin/python benchmarks/cores.py                    # results/reference → results/cores.json
    .venv/bin/python benchmarks/cores.py --run results/full --out /tmp/cores.json

Writes benchmarks/results/cores.json (no machine paths); its rows are the time tables of
docs/running.md, docs/performance.md and README (``python -m attnrank readme-times``).
"""

from __future__ import annotations

import argparse
import heapq
import json
import re
import statistics
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
from attnrank.pipeline.registry import STEPS  # noqa: E402
from attnrank.pipeline.schedule import reference_seconds, seconds_of  # noqa: E402

SIDECAR = ".prov.json"
CORES = (1, 2, 4, 8, 16, 32, 64, None)  # None: unlimited
RECORD = ROOT / "benchmarks" / "results" / "pipeline_full_wall.json"
OUT = ROOT / "benchmarks" / "results" / "cores.json"
SLACK_S = 60.0  # a job that started this long before the recorded run began belongs to an earlier one


def _time(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


@dataclass
class Job:
    """One job of a run folder: its rule and wildcards, seconds, timeline and dependencies."""

    rule: str
    step: str
    wildcards: dict[str, str]
    duration: float
    start: float
    end: float
    artifacts: set[str] = field(default_factory=set)
    reads: set[str] = field(default_factory=set)  # the artifacts it read
    after: set[int] = field(default_factory=set)  # the jobs it reads from (indices)
    startup: float | None = None
    priority: float = 0.0

    @property
    def name(self) -> str:
        rest = "/".join(str(v) for k, v in sorted(self.wildcards.items()) if k != "scale")
        return f"{self.rule}{'/' + rest if rest else ''}"


def read_jobs(run: Path) -> list[Job]:
    """Every job of a run folder (one per rule and wildcards) with the jobs it reads from.
    ValueError naming the sidecar that lacks a field the replay needs."""
    jobs: dict[tuple[str, str], Job] = {}
    for path in sorted(run.rglob("*" + SIDECAR)):
        rec = json.loads(path.read_text())
        missing = [k for k in ("rule", "step", "duration_s", "start", "end", "artifact")
                   if rec.get(k) is None]
        if missing:
            raise ValueError(f"{path.relative_to(run)}: no {', '.join(missing)} to replay")
        wildcards = {k: str(v) for k, v in (rec.get("wildcards") or {}).items()}
        key = (rec["rule"], json.dumps(wildcards, sort_keys=True))
        job = jobs.setdefault(key, Job(rec["rule"], rec["step"], wildcards,
                                       float(rec["duration_s"]), _time(rec["start"]),
                                       _time(rec["end"])))
        job.artifacts.add(rec["artifact"])
        job.reads |= set(rec.get("inputs") or {})
    out = list(jobs.values())
    producer = {a: i for i, j in enumerate(out) for a in j.artifacts}
    for i, j in enumerate(out):
        j.after = {producer[a] for a in j.reads if a in producer} - {i}
    return out


def priority_rules(rules: Path = ROOT / "workflow" / "rules") -> set[str]:
    """The rules with ``priority: longest_job_first(...)``: those named in it, and the training
    rules (the loop of entropic.smk names its rules through a variable)."""
    named = {m for p in rules.glob("*.smk")
             for m in re.findall(r'longest_job_first\("(\w+)"\)', p.read_text())}
    return named | {n for n, s in STEPS.items() if s.kind == "train"}


def set_priorities(jobs: list[Job], reference: Path) -> None:
    """The priority Snakemake gives each job: a priority rule's (``priority_rules``) the job's
    seconds in ``reference`` (``pipeline.schedule.seconds_of``), every other rule's 0."""
    seconds = reference_seconds(reference)
    rules = priority_rules()
    for j in jobs:
        j.priority = seconds_of(seconds, j.rule, j.wildcards) if j.rule in rules else 0.0


def recorded_run(jobs: list[Job], record: dict[str, Any]) -> tuple[list[int], float, float]:
    """The jobs the recorded run ran (indices, in order of start), when it began and ended."""
    end = _time(record["date"])
    begin = end - float(record["wall_s"])
    ran = sorted((i for i, j in enumerate(jobs) if j.start >= begin - SLACK_S),
                 key=lambda i: jobs[i].start)
    return ran, begin, end


def read_startups(jobs: list[Job], ran: list[int], cores: int) -> float:
    """Each recorded job's start-up from the timeline (module docstring); the median, which the
    jobs without one get."""
    free: list[float] = []  # when each busy core falls free
    ended = {i: jobs[i].end for i in range(len(jobs)) if i not in set(ran)}  # restored: done
    for i in ran:
        j = jobs[i]
        ready = max((ended.get(d, j.start) for d in j.after), default=None)
        if len(free) < cores:  # a core nobody used yet: the start-up is not visible
            free.append(j.end)
        else:
            k = min(range(cores), key=free.__getitem__)
            since = free[k] if ready is None else max(free[k], ready)
            j.startup = max(0.0, j.start - since)
            free[k] = j.end
        ended[i] = j.end
    seen = [jobs[i].startup for i in ran if jobs[i].startup is not None]
    median = statistics.median(seen) if seen else 0.0
    for j in jobs:
        if j.startup is None:
            j.startup = median
    return median


def replay(jobs: list[Job], cores: int | None, done: set[int] = frozenset()) -> dict[str, Any]:
    """List scheduling on ``cores`` cores (None: as many as ready jobs): the makespan, and each
    job's end. ``done``: jobs finished before the start."""
    waiting = {i: len(j.after - done) for i, j in enumerate(jobs) if i not in done}
    readers: dict[int, list[int]] = {}
    for i, j in enumerate(jobs):
        for d in j.after:
            readers.setdefault(d, []).append(i)
    ready = [(-jobs[i].priority, -jobs[i].duration, i) for i, n in waiting.items() if n == 0]
    heapq.heapify(ready)
    running: list[tuple[float, int]] = []  # (end, job)
    ends: dict[int, float] = {}
    now = 0.0
    while ready or running:
        while ready and (cores is None or len(running) < cores):
            _, _, i = heapq.heappop(ready)
            heapq.heappush(running, (now + jobs[i].startup + jobs[i].duration, i))
        now, i = heapq.heappop(running)
        ends[i] = now
        for r in readers.get(i, []):
            if r in waiting:
                waiting[r] -= 1
                if waiting[r] == 0:
                    heapq.heappush(ready, (-jobs[r].priority, -jobs[r].duration, r))
    if len(ends) != len(waiting):
        raise ValueError("the sidecars' dependencies hold a cycle")
    return {"makespan_s": max(ends.values(), default=0.0), "ends": ends}


def critical_path(jobs: list[Job]) -> list[int]:
    """The longest chain of jobs (start-up plus seconds), each reading from the one before."""
    ends = replay(jobs, None)["ends"]  # with unlimited cores a job ends after all it reads
    order = sorted(range(len(jobs)), key=ends.__getitem__)
    best: dict[int, tuple[float, int | None]] = {}
    for i in order:
        j = jobs[i]
        prev = max(j.after, key=lambda d: best[d][0], default=None)
        best[i] = ((best[prev][0] if prev is not None else 0.0) + j.startup + j.duration, prev)
    last = max(best, key=lambda i: best[i][0])
    chain = [last]
    while best[chain[-1]][1] is not None:
        chain.append(best[chain[-1]][1])
    return chain[::-1]


def without(jobs: list[Job], rule: str) -> list[Job]:
    """The jobs left when every job of ``rule`` and every job downstream of one is taken out
    (Snakemake's ``--omit-from``), their dependencies renumbered."""
    out: set[int] = {i for i, j in enumerate(jobs) if j.rule == rule}
    grew = True
    while grew:
        more = {i for i, j in enumerate(jobs) if i not in out and j.after & out}
        grew, out = bool(more), out | more
    keep = [i for i in range(len(jobs)) if i not in out]
    index = {old: new for new, old in enumerate(keep)}
    return [Job(**{**jobs[i].__dict__, "after": {index[d] for d in jobs[i].after}}) for i in keep]


def cores_report(run: Path, record: dict[str, Any], priorities: Path,
                 omit_from: tuple[str, ...] = ()) -> dict[str, Any]:
    """The check against the recorded run and the P-core rows (module docstring)."""
    jobs = read_jobs(run)
    set_priorities(jobs, priorities)
    ran, begin, end = recorded_run(jobs, record)
    if not ran:
        raise ValueError(f"{run}: no job started during the recorded run ({record['date']}, "
                         f"{record['wall_s']} s): is the record this folder's?")
    rec_cores = int(record["cores"])
    median = read_startups(jobs, ran, rec_cores)
    first = jobs[ran[0]]
    span = max(jobs[i].end for i in ran) - (first.start - first.startup)
    outside = float(record["wall_s"]) - span
    done = set(range(len(jobs))) - set(ran)
    replayed = replay(jobs, rec_cores, done)["makespan_s"] + outside
    rows = []
    for p in CORES:
        wall = replay(jobs, p)["makespan_s"] + outside
        rows.append({"cores": p, "wall_s": round(wall, 1), "wall_min": round(wall / 60, 1)})
    chain = critical_path(jobs)
    total = sum(j.duration for j in jobs)
    omitted = {}
    for rule in omit_from:
        rest = without(jobs, rule)
        omitted[rule] = {"jobs": len(rest), "job_s": round(sum(j.duration for j in rest), 1),
                         "rows": [{"cores": p, "wall_s": round(replay(rest, p)["makespan_s"]
                                                               + outside, 1)}
                                  for p in (2, None)]}
    return {
        "run": str(run.relative_to(ROOT)) if run.is_relative_to(ROOT) else run.name,
        "priorities_from": (str(priorities.relative_to(ROOT)) if priorities.is_relative_to(ROOT)
                            else priorities.name),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "jobs": len(jobs), "job_s": round(total, 1),
        "longest_job": {"name": max(jobs, key=lambda j: j.duration).name,
                        "duration_s": round(max(j.duration for j in jobs), 1)},
        "startup_median_s": round(median, 2),
        "startup_s": round(sum(j.startup for j in jobs), 1),
        "outside_jobs_s": round(outside, 1),
        "check": {"cores": rec_cores, "recorded_wall_s": float(record["wall_s"]),
                  "replayed_wall_s": round(replayed, 1),
                  "difference": round(replayed / float(record["wall_s"]) - 1, 4),
                  "jobs_rerun": len(ran), "jobs_restored": len(done),
                  "record": {k: record.get(k) for k in ("date", "command", "where", "git")}},
        "rows": rows,
        "critical_path": {"wall_s": round(sum(jobs[i].startup + jobs[i].duration for i in chain)
                                          + outside, 1),
                          "jobs": [{"name": jobs[i].name, "duration_s": round(jobs[i].duration, 1),
                                    "startup_s": round(jobs[i].startup, 2)} for i in chain]},
        "without": omitted,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, default=ROOT / "results" / "reference")
    ap.add_argument("--record", type=Path, default=RECORD,
                    help="the run's wall-time record (benchmarks/pipeline_wall.py)")
    ap.add_argument("--priorities-from", type=Path, default=None, metavar="DIR",
                    help="the reference whose seconds ordered the run (default: --run)")
    ap.add_argument("--omit-from", nargs="*", default=["minip_beyond_train"], metavar="RULE",
                    help="also replay the DAG without RULE's jobs and what needs them "
                         "(default: the beyond study, which a Slurm user sends to GPUs)")
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args(argv)
    unknown = [r for r in a.omit_from if r not in STEPS and r not in priority_rules()]
    if unknown:
        print(f"cores: --omit-from {' '.join(unknown)}: not a rule of the workflow", file=sys.stderr)
        return 2
    for path in (a.run, a.record):
        if not path.exists():
            print(f"cores: {path} not found", file=sys.stderr)
            return 2
    report = cores_report(a.run.resolve(), json.loads(a.record.read_text()),
                          (a.priorities_from or a.run).resolve(), tuple(a.omit_from))
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(report, indent=1) + "\n")
    c = report["check"]
    print(f"check: the recorded {c['cores']}-core run replayed in {c['replayed_wall_s']:.0f} s "
          f"against {c['recorded_wall_s']:.0f} s recorded ({100 * c['difference']:+.2f} %)")
    for r in report["rows"]:
        print(f"{r['cores'] or 'unlimited':>9} cores: {r['wall_s']:8.0f} s ({r['wall_min']} min)")
    cp = report["critical_path"]
    print(f"critical path {cp['wall_s']:.0f} s: " + " → ".join(j["name"] for j in cp["jobs"]))
    for rule, w in report["without"].items():
        print(f"without {rule} and what needs it: {w['jobs']} jobs, {w['job_s']:.0f} job s, "
              + ", ".join(f"{r['wall_s']:.0f} s on {r['cores'] or 'unlimited'} cores"
                          for r in w["rows"]))
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
