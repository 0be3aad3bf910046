"""What checkpoints cost a full-scale training job: the same job run twice side by side, once with
``--checkpoint-every 0`` (never) and once with the config's interval (``checkpoint_every``, 500),
each on one thread in its own folder, so both see the same machine load. Records each run's CPU
seconds (user + system of the job process), wall seconds, peak memory, the ratio with/without,
and whether the outputs are byte-identical, to
benchmarks/results/checkpoint_cost.json:

    .venv/bin/python benchmarks/checkpoint_cost.py                          # two default jobs
    .venv/bin/python benchmarks/checkpoint_cost.py --job minip/train/rank_vs_m/m8/metrics.parquet
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import yaml

from attnrank.pipeline.plan import build_plans
from attnrank.pipeline.registry import STEPS

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "checkpoint_cost.json"
DEFAULT_JOBS = ("minip/train/length_sweep/N1/metrics.parquet",
                "language/train/code/ranks.parquet")
TRAINING_STEPS = ("minip_train", "language_train")  # their CLI flag of an output: --<file stem>


def job_command(run, scale: str, every: int, folder: Path) -> list[str]:
    """The rule's command line for ``run`` (a planned step run), outputs under ``folder``."""
    cmd = [sys.executable, "-m", "attnrank", STEPS[run.step].command, "--rule", run.step,
           "--params", run.params_json, "--wildcards", json.dumps({"scale": scale, **run.wildcards}),
           "--device", "cpu", "--threads", "1", "--checkpoint-every", str(every)]
    for out in run.outputs:
        cmd += ["--" + Path(out).stem, str(folder / Path(out).name)]
    return cmd


def run_pair(run, scale: str, every: int, base: Path) -> dict:
    """Both settings of one job, started together; CPU from each child's rusage."""
    procs = {}
    for label, n in (("without", 0), ("with", every)):
        folder = base / f"{run.step}-{label}"
        folder.mkdir(parents=True)
        log = open(folder / "job.log", "w")  # noqa: SIM115 (closed below)
        procs[label] = (subprocess.Popen(job_command(run, scale, n, folder), stdout=log,
                                         stderr=subprocess.STDOUT, env=dict(os.environ)),
                        time.perf_counter(), folder, log)
    out = {"job": run.outputs[0], "step": run.step, "checkpoint_every": every}
    for label, (proc, t0, folder, log) in procs.items():
        _, status, usage = os.wait4(proc.pid, 0)
        log.close()
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"{label} run failed; see {folder / 'job.log'}")
        out[label] = {"cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
                      "wall_s": round(time.perf_counter() - t0, 2),
                      "max_rss_mib": round(usage.ru_maxrss / 1024, 1)}
    files = sorted(p.name for p in (base / f"{run.step}-without").iterdir()
                   if p.suffix in (".parquet", ".npz"))
    out["identical_outputs"] = all(
        (base / f"{run.step}-without" / f).read_bytes() == (base / f"{run.step}-with" / f).read_bytes()
        for f in files)
    out["cpu_ratio_with_over_without"] = round(out["with"]["cpu_s"] / out["without"]["cpu_s"], 4)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", default="full")
    ap.add_argument("--job", action="append", help="a planned training output (repeatable)")
    ap.add_argument("--out", default=str(OUT))
    a = ap.parse_args(argv)
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    plan = build_plans(config)[a.scale]
    every = int(config["checkpoint_every"])
    records = []
    with tempfile.TemporaryDirectory(prefix="ckptcost-") as tmp:
        for i, job in enumerate(a.job or DEFAULT_JOBS):
            run = plan.run_for(job)
            if run.step not in TRAINING_STEPS:
                raise SystemExit(f"{job}: step {run.step} is not one of {', '.join(TRAINING_STEPS)}")
            rec = run_pair(run, a.scale, every, Path(tmp) / str(i))
            print(json.dumps(rec), flush=True)
            records.append(rec)
    result = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "scale": a.scale,
              "cores": os.cpu_count(), "load_after": os.getloadavg()[0], "jobs": records,
              "note": "both settings of a job run at the same time, one thread each"}
    Path(a.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
