"""Every training job of one scale, run as the workflow's rules run them but without Snakemake (for
a machine that has the project's runtime dependencies but no snakemake, e.g. the GPU machine).

The jobs and their parameters come from the plan (``attnrank.pipeline.plan.build_plan``, the same source
the Snakefile reads); each runs as its rule's command line (``python -m attnrank minip-train …
--device cuda``), ``--parallel`` at a time, longest first (by the CPU seconds in
benchmarks/results/pipeline_<scale>.json where known). Jobs still running at ``--budget-s`` are
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

ROOT = Path(__file__).resolve().parents[1]
TRAIN_STEPS = ("minip_train", "minip_capacity_train", "entropic_surrogate_train",
               "entropic_ladder_train", "entropic_attention_train", "entropic_predict")


def job_name(run) -> str:
    return "/".join([run.step, *run.wildcards.values()]) if run.step != "minip_train" else \
        f"minip_train/{run.wildcards['experiment']}/{run.wildcards['instance']}"


def command(run, folder: Path, device: str, threads: int) -> list[str]:
    """The rule's command line for one planned training run (outputs under ``folder``)."""
    out = [str(folder / o) for o in run.outputs]
    base = [sys.executable, "-m", "attnrank"]
    common = ["--params", canonical_json(run.params), "--wildcards", json.dumps(run.wildcards),
              "--threads", str(threads)]
    if run.step == "minip_train":
        return base + ["minip-train", "--rule", run.step, *common, "--device", device,
                       "--metrics", out[0], "--weights", out[1]]
    if run.step == "minip_capacity_train":
        return base + ["minip-capacity", "--rule", run.step, *common, "--device", device,
                       "--metrics", out[0]]
    if run.step == "entropic_predict":
        return base + ["entropic-predict", "--rule", run.step, *common, "--out", out[0],
                       "--spectra", out[1]]
    return base + ["entropic-train", "--rule", run.step, *common, "--device", device,
                   "--metrics", out[0], "--weights", out[1]]


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
    cost_file = ROOT / "benchmarks" / "results" / f"pipeline_{a.scale}.json"
    cost = {j["job"]: j["cpu_s"] for j in json.loads(cost_file.read_text())["jobs"]} \
        if cost_file.exists() else {}
    runs.sort(key=lambda r: -cost.get(job_name(r), 0.0))
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
        rec = {"job": name, "cpu_s_reference": cost.get(name)}
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
