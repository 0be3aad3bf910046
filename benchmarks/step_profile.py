"""Profile of what remains: CPU per training step of every Paper B training job, and where it goes.

For every ``minip_train`` job of a scale (its parameters exactly as the plan gives them to the
workflow), build the job's grouped program (``GroupedHeads``: every rank group and the dense
baseline, one shared data stream) and time ``--steps`` optimizer steps with the job's real batches
and fused Adam, plus one evaluation pass; the job's CPU estimate is

    ms_per_step · steps + eval_s · (number of logged steps),

process time on one thread (the pipeline runs one thread per job, two jobs at a time on 2 cores).
Each group's own forward + backward (on the same batch) splits the step by group, and the
profiler's operator table of the most expensive job says where the time goes.

    .venv/bin/python benchmarks/step_profile.py                      # full scale, 20 steps per job
    .venv/bin/python benchmarks/step_profile.py --scale smoke --steps 5

Writes benchmarks/results/step_profile.json (no machine paths).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch
from torch.profiler import profile

from attnrank.core import optim
from attnrank.minip.data import JobData, MinIPBatch
from attnrank.minip.evaluate import predict
from attnrank.minip.families import job_groups
from attnrank.minip.jobs import MinipTrainJob
from attnrank.minip.program import GroupedHeads, build_model
from attnrank.pipeline.plan import build_plan
from attnrank.publish.audit import load_config

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from trainer import machine  # noqa: E402  (the same machine record as the trainer benchmark)


def job_program(params: dict[str, Any]) -> tuple[JobData, GroupedHeads]:
    """The job's data and its grouped program, built as ``experiments.minip.run_job`` builds them."""
    job = MinipTrainJob.from_dict(params)
    data = JobData(job, torch.device("cpu"))
    heads = {g.tag: build_model(g, data, job, job.feature_map)
             for g in job_groups(job.ranks, job.dense)}
    return data, GroupedHeads(heads)


def time_job(params: dict[str, Any], steps: int) -> dict[str, Any]:
    """ms per step (data, forward, backward, Adam), per-group forward + backward, one evaluation."""
    data, model = job_program(params)
    opt = optim.make("adam", list(model.parameters()))  # the trainer's Adam (core.optim)
    lr = float(params["lr"])
    batch_fn = data.batch_fn()

    def step(i: int) -> None:
        loss = model.loss(batch_fn(i)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step(lr)

    for i in range(3):  # warm-up
        step(i)
    t = time.process_time()
    for i in range(steps):
        step(i)
    ms = (time.process_time() - t) / steps * 1000
    t = time.process_time()
    for i in range(steps):
        batch_fn(i)
    data_ms = (time.process_time() - t) / steps * 1000
    batch: MinIPBatch = batch_fn(0)
    groups = {}
    for tag, head in zip(model.tags, model.heads, strict=True):
        t = time.process_time()
        for _ in range(steps):
            ((predict(head, batch) - batch.targets) ** 2).mean().backward()
        groups[tag] = round((time.process_time() - t) / steps * 1000, 3)
    t = time.process_time()
    with torch.no_grad():
        model.evaluate(data.eval_sets)
    eval_s = time.process_time() - t
    n_evals = int(params["steps"]) // int(params["log_every"]) + 1
    return {"ms_per_step": round(ms, 3), "data_ms_per_step": round(data_ms, 3),
            "group_fwd_bwd_ms": groups, "eval_s": round(eval_s, 3), "steps": int(params["steps"]),
            "layout": data.layout or "bits",
            "estimated_cpu_s": round(ms * int(params["steps"]) / 1000 + eval_s * n_evals, 1)}


def op_table(params: dict[str, Any], steps: int, rows: int = 15) -> list[dict[str, Any]]:
    """The profiler's top operators (self CPU) over ``steps`` steps of one job."""
    data, model = job_program(params)
    opt = optim.make("adam", list(model.parameters()))
    batch_fn = data.batch_fn()
    with profile() as prof:
        for i in range(steps):
            loss = model.loss(batch_fn(i)).sum()
            opt.zero_grad()
            loss.backward()
            opt.step(float(params["lr"]))
    events = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)
    total = sum(e.self_cpu_time_total for e in events)
    return [{"op": e.key, "self_ms_per_step": round(e.self_cpu_time_total / 1000 / steps, 3),
             "share": round(e.self_cpu_time_total / total, 3), "calls_per_step": e.count // steps}
            for e in events[:rows]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", default="full")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/step_profile.json")
    args = ap.parse_args()
    torch.set_num_threads(1)
    plan = build_plan(load_config(ROOT / "config.yaml"), args.scale)
    jobs = {f"{r.wildcards['experiment']}/{r.wildcards['instance']}": r.params
            for r in plan.runs if r.step == "minip_train"}
    out: dict[str, Any] = {"scale": args.scale, "steps_timed": args.steps, "threads": 1,
                           "date": datetime.now(UTC).isoformat(timespec="seconds"),
                           "machine": machine(torch.device("cpu"), 1), "jobs": {}}
    for name, params in jobs.items():
        out["jobs"][name] = time_job(params, args.steps)
        print(f"{name:24s} {json.dumps(out['jobs'][name])}", flush=True)
    out["total_estimated_cpu_s"] = round(sum(j["estimated_cpu_s"] for j in out["jobs"].values()), 1)
    top = max(out["jobs"], key=lambda n: out["jobs"][n]["estimated_cpu_s"])
    out["top_job"] = top
    out["top_job_ops"] = op_table(jobs[top], args.steps)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(f"total ≈ {out['total_estimated_cpu_s']} CPU-s; wrote {args.out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
