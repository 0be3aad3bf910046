"""Every training job of one scale, run as the workflow's rules run them but without Snakemake (for
a machine that has the project's runtime dependencies but no snakemake, e.g. the GPU machine).

The jobs and their parameters come from the plan (``attnrank.pipeline.plan.build_plan``, the same source
the Snakefile reads); each runs as its rule's command line (``python -m attnrank minip-train …
--device cuda``), ``--parallel`` at a time, longest first (by their seconds in the sidecars of
results/reference, ``pipeline.schedule``). Jobs still running at ``--budget-s`` are
stopped and recorded as such (never counted as done). Tables, figures, claims and the audit are not
run. Writes one JSON record: per job its wall seconds and status, and the whole wall time.

    python3 benchmarks/gpu_train.py --scale full --device cuda --parallel 6 --budget-s 300 \\
        --out $OUT/gpu_full.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import yaml

from attnrank.core.job import canonical_json
from attnrank.pipeline.plan import build_plan
from attnrank.pipeline.registry import STEPS
from attnrank.pipeline.schedule import reference_seconds, seconds_of

ROOT = Path(__file__).resolve().parents[1]
# every step that trains (and the data-only estimators of entropic_predict)
TRAIN_STEPS = (*(n for n, s in STEPS.items() if s.kind == "train"), "entropic_predict")


def job_name(run) -> str:
    return "/".join([run.step, *(v for k, v in sorted(run.wildcards.items()))])


def command(run, folder: Path, device: str, threads: int) -> list[str]:
    """The rule's command line for one planned training run (outputs under ``folder``), from
    the step's registry entry as the CLI builds it."""
    step = STEPS[run.step]
    base = [sys.executable, "-m", "attnrank", step.command, "--rule", run.step,
            "--params", canonical_json(run.params), "--wildcards", json.dumps(run.wildcards),
            "--threads", str(threads)]
    if step.kind == "train":
        base += ["--device", device]
    for arg, out in zip(step.outputs, run.outputs, strict=True):
        base += [arg.flag, str(folder / out)]
    return base


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", default="full")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu", "auto"])
    ap.add_argument("--parallel", type=int, default=6)
    ap.add_argument("--threads", type=int, default=1, help="torch threads per job")
    ap.add_argument("--budget-s", type=float, default=300.0)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/attnrank-gpu-run"))
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    plan = build_plan(config, a.scale)
    runs = [r for r in plan.runs if r.step in TRAIN_STEPS]
    # each job's seconds in the reference (a part of a job the reference ran whole: the whole's)
    seconds = reference_seconds(ROOT / "results" / "reference")
    cost = {job_name(r): seconds_of(seconds, r.step, r.wildcards) for r in runs}
    runs.sort(key=lambda r: -cost[job_name(r)])
    folder = a.workdir / "results" / a.scale
    logs = a.workdir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH", "")) if p),
        OMP_NUM_THREADS=str(a.threads), MKL_NUM_THREADS=str(a.threads))
    t0 = time.perf_counter()
    deadline = t0 + a.budget_s
    records: list[dict] = []
    lock = threading.Lock()

    def one(run) -> None:
        name = job_name(run)
        rec = {"job": name, "cpu_s_reference": cost.get(name) or None}
        left = deadline - time.perf_counter()
        if left <= 1:
            rec |= {"status": "not started (budget)", "wall_s": None}
        else:
            for o in run.outputs:
                (folder / o).parent.mkdir(parents=True, exist_ok=True)
            log = logs / (name.replace("/", "_") + ".log")
            start = time.perf_counter()
            with log.open("w") as fh:
                try:
                    rc = subprocess.run(command(run, folder, a.device, a.threads), cwd=ROOT, env=env,
                                        stdout=fh, stderr=subprocess.STDOUT, timeout=left).returncode
                    status = "done" if rc == 0 else f"failed (rc {rc})"
                except subprocess.TimeoutExpired:
                    status = "stopped at the budget"
            rec |= {"status": status, "wall_s": round(time.perf_counter() - start, 2),
                    "started_s": round(start - t0, 2)}
            if status.startswith("failed"):
                rec["log_tail"] = log.read_text(errors="replace").splitlines()[-8:]
        with lock:
            records.append(rec)
            print(json.dumps(rec), flush=True)

    with ThreadPoolExecutor(max_workers=a.parallel) as pool:
        list(pool.map(one, runs))
    wall = time.perf_counter() - t0
    done = [r for r in records if r["status"] == "done"]
    gpu = None
    try:
        import torch

        gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except Exception:  # noqa: BLE001 - the record is still useful without the name
        pass
    out = {"what": "every training job of the plan, run as its rule's command (no Snakemake), "
                   f"{a.parallel} at a time, longest first",
           "scale": a.scale, "device": a.device, "gpu": gpu, "parallel": a.parallel,
           "threads_per_job": a.threads, "budget_s": a.budget_s,
           "date": datetime.now(UTC).isoformat(timespec="seconds"),
           "jobs_total": len(runs), "jobs_done": len(done),
           "all_done": len(done) == len(runs), "wall_s": round(wall, 1),
           "jobs": sorted(records, key=lambda r: r["job"])}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {a.out}: {len(done)}/{len(runs)} jobs done in {wall:.1f} s "
          f"({a.parallel} at a time on {a.device})")
    return 0 if out["all_done"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
