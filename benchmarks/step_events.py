"""Operator events in one training step of every training rule: what a GPU would launch.

On a GPU every operator the profiler records in a step is at least one kernel launch (a few µs
each whatever the kernel does), so the events of one step bound how fast it can run there however
fast the GPU is. For every training rule of the pipeline this script takes its longest job of the
full plan (its seconds in ``--reference``; ``--all`` takes every job) and runs the job as its step
runs it (``<entry>.step(job, cpu)``, the job's own data, models, optimizer and compile) up to the
trainer: there ``core.train.train`` is replaced by a loop of the same step (batch, per-model loss,
backward, the job's optimizer at the step's learning rate), which runs ``--warmup`` steps (the
compile happens there) and then profiles one (``torch.profiler``, CPU) and stops the job. Counted:

* ``events``: every operator event of the step (nested ones included: an aten operator and the
  operators it calls, forward, autograd and the optimizer);
* ``top_level``: the events no other event encloses (what the Python code calls, plus the backward
  and compiled graphs as one each).

One thread; the inductor cache of ``results/full`` is used when present (warm compiles). A few
minutes for every rule; nothing is timed, so it may run beside other work.

    .venv/bin/python benchmarks/step_events.py                 # → benchmarks/results/step_events.json
    .venv/bin/python benchmarks/step_events.py --rules minip_beyond_train --all
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from trainer import machine  # noqa: E402

from attnrank.core import optim  # noqa: E402
from attnrank.pipeline.plan import build_plan  # noqa: E402
from attnrank.pipeline.registry import STEPS  # noqa: E402
from attnrank.pipeline.runner import COMPILE_CACHE_ENV, compile_cache  # noqa: E402
from attnrank.pipeline.schedule import reference_seconds, seconds_of  # noqa: E402
from attnrank.publish.audit import load_config  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "step_events.json"
TRAIN_RULES = tuple(n for n, s in STEPS.items() if s.kind == "train")


class Profiled(Exception):
    """Raised by the replaced trainer once its step is profiled: the job stops there."""

    def __init__(self, counts: dict[str, Any]) -> None:
        super().__init__("profiled")
        self.counts = counts


def count_events(step: Callable[[], Any], cuda: bool = False) -> dict[str, int]:
    """Operator events of one call of ``step`` under the CPU profiler: every event, and the
    top-level ones (no enclosing event); with ``cuda``, also the CUDA kernels it launched."""
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        step()
        if cuda:
            torch.cuda.synchronize()
    events = [e for e in prof.events() if not e.name.startswith("ProfilerStep")]
    cpu = [e for e in events if e.device_type == torch.autograd.DeviceType.CPU]
    out = {"events": len(cpu), "top_level": sum(e.cpu_parent is None for e in cpu)}
    if cuda:
        out["cuda_kernels"] = sum(e.device_type == torch.autograd.DeviceType.CUDA for e in events)
    return out


def profiling_trainer(warmup: int) -> Callable[..., Any]:
    """A stand-in for ``core.train.train``: ``warmup`` steps, then one profiled, then
    ``Profiled``; the same step as the trainer's (batch, per-model loss, backward, the job's
    optimizer at the step's learning rate)."""

    def train(model, batch_fn, loss_fn, cfg, evaluate=None, desc="", checkpoint=None):
        opt = optim.make(cfg.optimizer, [p for p in model.parameters() if p.requires_grad])

        def step(i: int) -> torch.Tensor:
            losses = loss_fn(model, batch_fn(i))
            opt.zero_grad()
            losses.sum().backward()
            opt.step(cfg.lr * cfg.lr_factor(i))
            return losses

        t = time.perf_counter()
        for i in range(warmup):
            losses = step(i)
        warm = time.perf_counter() - t
        counts = count_events(lambda: step(warmup))
        raise Profiled(counts | {"models": int(losses.shape[0]), "warmup_steps": warmup,
                                 "warmup_s": round(warm, 2)})

    return train


def job_events(rule: str, params: dict[str, Any], warmup: int) -> dict[str, Any]:
    """The events of one training step of the job ``params`` of ``rule`` (module docstring)."""
    spec = STEPS[rule]
    module = importlib.import_module(spec.entry)
    cls_module, _, cls = spec.job.rpartition(".")
    job = getattr(importlib.import_module(cls_module), cls).from_dict(params)
    original = module.train
    module.train = profiling_trainer(warmup)
    try:
        getattr(module, spec.fn)(job, torch.device("cpu"), None)
    except Profiled as done:
        return done.counts
    finally:
        module.train = original
    raise RuntimeError(f"{rule}: the step ended without reaching the trainer")


def picked(plan: Any, rules: tuple[str, ...], every: bool, reference: Path
           ) -> list[tuple[str, dict[str, str], dict[str, Any], float]]:
    """(rule, wildcards, params, reference seconds) of each rule's longest job, or of every job."""
    seconds = reference_seconds(reference)
    out = []
    for rule in rules:
        runs = [(r, seconds_of(seconds, rule, r.wildcards)) for r in plan.runs if r.step == rule]
        if not runs:
            continue
        chosen = runs if every else [max(runs, key=lambda x: x[1])]
        out += [(rule, r.wildcards, r.params, s) for r, s in chosen]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rules", nargs="+", default=list(TRAIN_RULES), choices=TRAIN_RULES)
    ap.add_argument("--all", action="store_true", help="every job of the rules, not the longest")
    ap.add_argument("--scale", default="full")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--reference", type=Path, default=ROOT / "results" / "reference")
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    os.environ.setdefault(COMPILE_CACHE_ENV, str(compile_cache(
        str(ROOT / "results" / a.scale / "metrics.parquet"))))
    plan = build_plan(load_config(ROOT / "config.yaml"), a.scale)
    report: dict[str, Any] = {"scale": a.scale, "threads": 1, "warmup_steps": a.warmup,
                              "date": datetime.now(UTC).isoformat(timespec="seconds"),
                              "machine": machine(torch.device("cpu"), 1), "jobs": []}
    for rule, wildcards, params, ref_s in picked(plan, tuple(a.rules), a.all, a.reference):
        counts = job_events(rule, params, a.warmup)
        name = "/".join(v for k, v in sorted(wildcards.items()) if k != "scale")
        row = {"rule": rule, "job": name, "reference_s": round(ref_s, 1), **counts}
        report["jobs"].append(row)
        print(json.dumps(row), flush=True)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
