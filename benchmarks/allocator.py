"""Benchmark: glibc allocator settings for the training jobs, measured side by side.

Every case is a real training job of the full plan (its typed job from ``config.yaml``, cut to a
few hundred steps), run in a fresh Python process once with the environment as it is and once
with the settings of ``attnrank.pipeline.runner.ALLOCATOR_ENV`` (what the workflow gives every job),
alternating, ``--repeats`` times. Per case: the minimum wall time of each side, their ratio,
the minor page faults and system CPU time of the child, and whether both sides produced the same
bytes (sha256 of every output table and array: the settings must change speed only).

    .venv/bin/python benchmarks/allocator.py                 # -> benchmarks/results/allocator.json
    .venv/bin/python benchmarks/allocator.py --repeats 1 --steps-scale 0.5
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from attnrank.pipeline.runner import ALLOCATOR_ENV  # noqa: E402

# (step, wildcards of one of its full-plan runs, steps): the longest Min-IP jobs (direct and
# vocabulary path), Paper A's attention students and appendix B
CASES = {
    "minip rank_vs_m m12 (direct path)": ("minip_train", {"experiment": "rank_vs_m",
                                                          "instance": "m12"}, 150),
    "minip witness_families K8w4 (vocabulary path)": ("minip_train", {"experiment": "witness_families",
                                                                       "instance": "K8w4"}, 400),
    "entropic attention softmax β=2": ("entropic_attention_train", {"teacher": "softmax_b2"}, 40),
    "language prose": ("language_train", {"corpus": "prose"}, 150),
}

CHILD = r"""
import hashlib, importlib, inspect, io, json, sys
import numpy as np, torch
torch.set_num_threads(1)
from attnrank.pipeline.plan import build_plan
from attnrank.pipeline.registry import STEPS
from attnrank.publish.audit import load_config
step_name, wildcards, steps = json.loads(sys.argv[1])
plan = build_plan(load_config(sys.argv[2]), "full")
run = next(r for r in plan.runs if r.step == step_name
           and all(r.wildcards.get(k) == v for k, v in wildcards.items()))
module = importlib.import_module(STEPS[step_name].entry)
wing = STEPS[step_name].entry.split(".")[1]
name = inspect.signature(module.step).parameters["job"].annotation
name = name if isinstance(name, str) else name.__name__
job_class = getattr(importlib.import_module(f"attnrank.{wing}.jobs"), name)
job = job_class.from_dict(dict(run.params, steps=steps, log_every=steps))
out = module.step(job, torch.device("cpu"))
digest = hashlib.sha256()
for name in sorted(out):
    value = out[name]
    if hasattr(value, "to_parquet"):
        buf = io.BytesIO(); value.to_parquet(buf, index=False); digest.update(buf.getvalue())
    else:
        for key in sorted(value):
            digest.update(key.encode()); digest.update(np.ascontiguousarray(value[key]).tobytes())
print(digest.hexdigest())
"""


def run_case(spec: tuple[str, dict, int], env: dict[str, str]) -> dict[str, float | str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    res = subprocess.run([sys.executable, "-c", CHILD, json.dumps(spec), str(ROOT / "config.yaml")],
                         env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"wall_s": wall, "minor_faults": after.ru_minflt - before.ru_minflt,
            "system_s": after.ru_stime - before.ru_stime, "digest": res.stdout.strip()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps-scale", type=float, default=1.0)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "allocator.json"))
    a = ap.parse_args()
    base = {k: v for k, v in os.environ.items() if k not in ALLOCATOR_ENV}
    base |= {"PYTHONPATH": str(ROOT / "src"), "OMP_NUM_THREADS": "1"}
    sides = {"plain": base, "allocator": base | ALLOCATOR_ENV}
    out: dict = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "settings": ALLOCATOR_ENV,
                 "repeats": a.repeats,
                 "machine": {"cores": os.cpu_count(), "python": platform.python_version()},
                 "load_before": os.getloadavg()[0], "cases": {}}
    for name, (step, wildcards, steps) in CASES.items():
        spec = (step, wildcards, max(2, int(steps * a.steps_scale)))
        runs = {side: [] for side in sides}
        for _ in range(a.repeats):
            for side, env in sides.items():  # alternating, so drift hits both sides alike
                runs[side].append(run_case(spec, env))
        best = {side: min(r, key=lambda x: x["wall_s"]) for side, r in runs.items()}
        digests = {r["digest"] for rs in runs.values() for r in rs}
        out["cases"][name] = {
            "steps": spec[2],
            "plain_s": round(best["plain"]["wall_s"], 2),
            "allocator_s": round(best["allocator"]["wall_s"], 2),
            "speedup": round(best["plain"]["wall_s"] / best["allocator"]["wall_s"], 3),
            "minor_faults": {s: best[s]["minor_faults"] for s in sides},
            "system_s": {s: round(best[s]["system_s"], 2) for s in sides},
            "bit_identical": len(digests) == 1,
        }
        print(name, out["cases"][name], flush=True)
    out["load_after"] = os.getloadavg()[0]
    Path(a.out).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
