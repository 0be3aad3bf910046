"""What the 45-minute goal asks of the beyond study: its matrix products against the machine's peak.

Issue 33 asks for the full DAG in 45 minutes on 2 cores, i.e. 5,400 job seconds. Everything but
the study of the families beyond the single head (``minip/beyond/``) already takes a known number
of job seconds in a run's sidecars; what is left of the 5,400 is the beyond study's allowance.
This script sets that allowance against a floor no code can go under on this machine:

* every beyond job of the full plan (``minip.beyond.jobs.beyond_jobs`` split by
  ``family_parts``, as the pipeline runs them) is built as its step builds it, eagerly;
* ``torch.utils.flop_counter.FlopCounterMode`` counts the FLOPs of its matrix products
  (mm/bmm/baddbmm, forward and backward) in one training step on the job's own first batch, and
  in one evaluation on its own evaluation sets (no gradient);
* the job's total is steps × step + evaluations × evaluation (the trainer evaluates every
  ``log_every`` steps and at the last);
* its floor is that total at the fp32 matmul rate of a large product on one thread, measured in
  the same run (``trainer.matmul_rate``): the time the matrix products alone would take at peak,
  with every element-wise operation (the pair log-sum-exp, softmax, GELU, Adam), every gather
  and every kernel launch free. No implementation can beat it on this machine; real small-shape
  code reaches a fraction of peak, so the job's achieved rate (the same FLOPs over the job's
  own ``duration_s`` in the run's sidecars) is recorded beside it.

Nothing is timed here except the matmul rate, so the script is cheap (a few seconds a job) and
can run beside other work. Results: benchmarks/results/beyond_floor.json (no machine paths).

    .venv/bin/python benchmarks/beyond_floor.py                      # sidecars of results/reference
    .venv/bin/python benchmarks/beyond_floor.py --run results/full
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch
import yaml
from torch.utils.flop_counter import FlopCounterMode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from budgets import GOAL_CORES, GOAL_WALL_S, STUDIES, job_seconds, read_sidecars  # noqa: E402
from trainer import matmul_rate  # noqa: E402

from attnrank.minip.beyond.jobs import MinipBeyondJob, beyond_jobs, family_parts  # noqa: E402
from attnrank.minip.data import JobData  # noqa: E402
from attnrank.minip.experiments.beyond import build_heads  # noqa: E402
from attnrank.minip.program import recipe  # noqa: E402

BEYOND_STUDY = next(s for s, prefixes in STUDIES.items() if prefixes == ("minip/beyond/",))
OUT = ROOT / "benchmarks" / "results" / "beyond_floor.json"


def counted(fn) -> int:
    """FLOPs of the matrix products ``fn()`` runs (FlopCounterMode)."""
    counter = FlopCounterMode(display=False)
    with counter:
        fn()
    return int(counter.get_total_flops())


def job_flops(job: MinipBeyondJob) -> dict[str, Any]:
    """Matrix-product FLOPs of one beyond job: per step, per evaluation, and in all."""
    train = replace(job.train, compile=False)  # eager: the same products, countable
    job = replace(job, train=train)
    device = torch.device("cpu")
    data = JobData(train, device)
    model = build_heads(job, data).to(device)
    cfg = recipe(train)
    batch = data.batch_fn()(0)
    step = counted(lambda: model.loss(batch).sum().backward())
    with torch.no_grad():
        evaluation = counted(lambda: model.evaluate(data.eval_sets))
    evaluations = cfg.steps // cfg.log_every + (cfg.steps % cfg.log_every != 0)
    return {"steps": cfg.steps, "evaluations": evaluations, "groups": len(model.groups),
            "gflop_step": step / 1e9, "gflop_evaluation": evaluation / 1e9,
            "tflop_job": (cfg.steps * step + evaluations * evaluation) / 1e12}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", default=str(ROOT / "results" / "reference"),
                    help="a full-scale run folder whose sidecars give each job's seconds")
    ap.add_argument("--out", default=str(OUT))
    a = ap.parse_args(argv)
    run = Path(a.run)
    if not (run / "claims.csv").is_file():
        print(f"beyond_floor: {run} holds no finished run (no claims.csv)", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    sidecars = read_sidecars(run)
    duration = {rec["artifact"]: float(rec["duration_s"]) for rec in sidecars
                if rec.get("duration_s") is not None}
    studies = job_seconds(sidecars)
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    peak = matmul_rate(torch.device("cpu"))
    rows = []
    for instance, job in beyond_jobs(config, "full").items():
        if not isinstance(job, MinipBeyondJob):
            continue  # the growth table
        for family, part in family_parts(job).items():
            artifact = f"minip/beyond/{instance}/{family}/metrics.parquet"
            if artifact not in duration:
                print(f"beyond_floor: {run / artifact} has no sidecar with duration_s",
                      file=sys.stderr)
                return 2
            f = job_flops(part)
            seconds = duration[artifact]
            rows.append({"artifact": artifact, **{k: round(v, 4) if isinstance(v, float) else v
                                                  for k, v in f.items()},
                         "job_s": round(seconds, 1),
                         "floor_s_at_peak": round(f["tflop_job"] * 1e3 / peak, 1),
                         "achieved_gflops": round(f["tflop_job"] * 1e3 / seconds, 2)})
            print(f"{artifact:50s} {f['gflop_step']:7.3f} GFLOP/step  {seconds:6.0f} s  "
                  f"floor {rows[-1]['floor_s_at_peak']:6.1f} s  "
                  f"{rows[-1]['achieved_gflops']:5.1f} GFLOP/s", flush=True)
    goal = GOAL_WALL_S * GOAL_CORES
    rest = sum(s for study, s in studies.items() if study != BEYOND_STUDY)
    beyond_s = sum(r["job_s"] for r in rows)
    floor = sum(r["floor_s_at_peak"] for r in rows)
    tflop = sum(r["tflop_job"] for r in rows)
    best = max(r["achieved_gflops"] for r in rows)
    report = {
        "what": "the beyond study's matrix-product FLOPs (forward + backward, every step and "
                "evaluation, FlopCounterMode) at the machine's fp32 matmul rate: a floor that "
                "counts no element-wise work, gather or launch; beside each job's seconds in the "
                "run's sidecars",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "run": str(run.relative_to(ROOT)) if run.is_relative_to(ROOT) else run.name,
        "torch": torch.__version__, "threads": 1,
        "matmul_gflops": round(peak, 2),
        "goal_job_s": goal,
        "rest_of_dag_job_s": round(rest, 1),
        "beyond_allowance_job_s": round(goal - rest, 1),
        "beyond_job_s": round(beyond_s, 1),
        "beyond_tflop": round(tflop, 3),
        "beyond_floor_s_at_peak": round(floor, 1),
        "beyond_achieved_gflops": round(tflop * 1e3 / beyond_s, 2),
        "beyond_s_at_best_job_rate": round(tflop * 1e3 / best, 1),
        "best_job_gflops": best,
        "speedup_needed": round(beyond_s / (goal - rest), 2) if goal > rest else math.inf,
        "jobs": rows,
    }
    Path(a.out).write_text(json.dumps(report, indent=2) + "\n")
    print(f"beyond study: {beyond_s:,.0f} job s in {report['run']}, {tflop:.2f} TFLOP of matrix "
          f"products; at the peak {peak:.1f} GFLOP/s: {floor:,.0f} s; at the best job's rate "
          f"({best:.1f} GFLOP/s): {report['beyond_s_at_best_job_rate']:,.0f} s. The goal leaves it "
          f"{goal - rest:,.0f} job s (the rest of the DAG: {rest:,.0f}) -> {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
