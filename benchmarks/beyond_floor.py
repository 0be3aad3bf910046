"""What the 45-minute goal asks of the beyond study: its matrix products against the machine's peak.

The performance goal asks for the full DAG in 45 minutes on 2 cores, i.e. 5,400 job seconds. Everything but
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

``--profile K`` adds a second bound, from the other side: each job, built as its step builds it
(compiled where the job compiles), takes K training steps (Adam included) under the torch profiler
after three warm-up steps, and every operator's self CPU time is split into *pair operations*
(those that read or write a per-sequence pair tensor, shapes (..., N, N, B) or (..., N²·B): the
gathers from pair tables, the mixing weights, readouts and their sums, forward and backward, and
the compiled pair kernels with their call overhead) and the rest. ``seconds_if_pairs_free`` = the
job's seconds × the rest's share: what the job would take if a perfect kernel made every pair
operation cost nothing. It is an estimate (profiler overhead weighs on small operators); the
whole run then needs a quiet machine (≈ 5 min).

    .venv/bin/python benchmarks/beyond_floor.py                      # sidecars of results/reference
    .venv/bin/python benchmarks/beyond_floor.py --run results/full
    .venv/bin/python benchmarks/beyond_floor.py --profile 10         # + the pair operations' share
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
from torch.profiler import profile
from torch.utils.flop_counter import FlopCounterMode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from budgets import GOAL_CORES, GOAL_WALL_S, STUDIES, job_seconds, read_sidecars  # noqa: E402
from trainer import matmul_rate  # noqa: E402

from attnrank.core import optim  # noqa: E402
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


def _pair_shaped(shape: list[int], n: int, bsz: int) -> bool:
    """Whether an operator input of this shape is a per-sequence pair tensor: (..., N, N, B), or
    flat (..., N²·B) as the pair-table gathers index it."""
    return len(shape) >= 1 and (shape[-1] == n * n * bsz
                                or (len(shape) >= 3 and shape[-3:] == [n, n, bsz]))


def pair_share(job: MinipBeyondJob, steps: int) -> dict[str, Any]:
    """The share of one training step's self CPU time spent in pair operations (module
    docstring), over ``steps`` profiled steps of the job as its step runs it."""
    device = torch.device("cpu")
    data = JobData(job.train, device)
    model = build_heads(job, data).to(device)
    stream = data.batch_fn()
    opt = optim.make(recipe(job.train).optimizer, list(model.parameters()))
    bsz, n = stream(0).targets.shape[1:3]

    def step(i: int) -> None:
        opt.zero_grad()
        model.loss(stream(i)).sum().backward()
        opt.step(job.train.lr)

    for i in range(3):
        step(i)
    with profile(record_shapes=True) as prof:
        for i in range(3, 3 + steps):
            step(i)
    pairs = total = 0.0
    for event in prof.key_averages(group_by_input_shape=True):
        t = event.self_cpu_time_total
        total += t
        compiled_kernel = any(k in event.key for k in ("Compiled", "Dynamo"))
        if compiled_kernel or any(_pair_shaped(list(s), n, bsz) for s in event.input_shapes
                                  if isinstance(s, list)):
            pairs += t
    return {"batch": int(bsz), "profiled_ms_per_step": round(total / 1e3 / steps, 2),
            "pair_share": round(pairs / total, 3)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", default=str(ROOT / "results" / "reference"),
                    help="a full-scale run folder whose sidecars give each job's seconds")
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--profile", type=int, default=0, metavar="K",
                    help="also profile K training steps of every job: the pair operations' share")
    a = ap.parse_args(argv)
    if a.profile < 0:
        print(f"beyond_floor: --profile must be ≥ 0 steps, got {a.profile}", file=sys.stderr)
        return 2
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
            extra = ""
            if a.profile:
                share = pair_share(part, a.profile)
                rows[-1] |= share | {"seconds_if_pairs_free":
                                     round(seconds * (1 - share["pair_share"]), 1)}
                extra = (f"  pairs {share['pair_share']:.0%} of "
                         f"{share['profiled_ms_per_step']:.1f} ms/step")
            print(f"{artifact:50s} {f['gflop_step']:7.3f} GFLOP/step  {seconds:6.0f} s  "
                  f"floor {rows[-1]['floor_s_at_peak']:6.1f} s  "
                  f"{rows[-1]['achieved_gflops']:5.1f} GFLOP/s{extra}", flush=True)
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
                "run's sidecars" + ("; with --profile: each job's share of self CPU time in "
                                    "pair operations over the profiled steps, and its seconds "
                                    "if they cost nothing" if a.profile else ""),
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
        "profiled_steps": a.profile or None,
        "beyond_s_if_pairs_free": (round(sum(r["seconds_if_pairs_free"] for r in rows), 1)
                                   if a.profile else None),
        "jobs": rows,
    }
    Path(a.out).write_text(json.dumps(report, indent=2) + "\n")
    print(f"beyond study: {beyond_s:,.0f} job s in {report['run']}, {tflop:.2f} TFLOP of matrix "
          f"products; at the peak {peak:.1f} GFLOP/s: {floor:,.0f} s; at the best job's rate "
          f"({best:.1f} GFLOP/s): {report['beyond_s_at_best_job_rate']:,.0f} s. The goal leaves it "
          f"{goal - rest:,.0f} job s (the rest of the DAG: {rest:,.0f})"
          + (f"; with every pair operation free: {report['beyond_s_if_pairs_free']:,.0f} s"
             if a.profile else "") + f" -> {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
