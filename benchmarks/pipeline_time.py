"""Per-job timings of a finished run, from Snakemake's `benchmark:` files under logs/<scale>/.

Writes benchmarks/results/pipeline_<scale>.json with, per rule, the jobs' wall and CPU seconds,
and an estimate of the run's wall time on K uncontended cores: the jobs' CPU times scheduled
longest-first onto K workers (a run that shared its cores with other work has inflated wall
times, but its CPU times still measure the work).

    .venv/bin/python benchmarks/pipeline_time.py --scale full --cores 2
"""

from __future__ import annotations

import argparse
import heapq
import json
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


def load(scale: str) -> pd.DataFrame:
    files = sorted((ROOT / "logs" / scale / "benchmarks").rglob("*.tsv"))
    if not files:
        raise SystemExit(f"no benchmark files under logs/{scale}/benchmarks: run the pipeline first")
    rows = []
    for f in files:
        t = pd.read_csv(f, sep="\t").iloc[-1]
        rel = f.relative_to(ROOT / "logs" / scale / "benchmarks")
        rows.append({"rule": rel.parts[0], "job": str(rel.with_suffix("")), "wall_s": float(t["s"]),
                     "cpu_s": float(t["cpu_time"])})
    return pd.DataFrame(rows)


def lpt_makespan(durations: list[float], workers: int) -> float:
    """Longest-processing-time-first list schedule on ``workers`` identical workers."""
    heap = [0.0] * workers
    for d in sorted(durations, reverse=True):
        heapq.heappush(heap, heapq.heappop(heap) + d)
    return max(heap)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", default="full")
    ap.add_argument("--cores", type=int, default=2)
    a = ap.parse_args()
    df = load(a.scale)
    per_rule = df.groupby("rule").agg(jobs=("job", "count"), wall_s=("wall_s", "sum"),
                                      cpu_s=("cpu_s", "sum")).round(1)
    # jobs without a benchmark file (tables, figures, claims) take seconds each
    out = {"scale": a.scale, "cores": a.cores, "training_jobs": int(len(df)),
           "total_cpu_s": round(float(df["cpu_s"].sum()), 1),
           "estimated_wall_s_on_cores": round(lpt_makespan(df["cpu_s"].tolist(), a.cores), 1),
           "longest_job": df.loc[df["cpu_s"].idxmax()].to_dict(),
           "per_rule": per_rule.reset_index().to_dict(orient="records"),
           "jobs": df.round(1).to_dict(orient="records")}
    dest = ROOT / "benchmarks" / "results" / f"pipeline_{a.scale}.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(out, indent=2) + "\n")
    print(per_rule.to_string())
    print(f"total CPU {out['total_cpu_s']:.0f} s; estimated wall on {a.cores} cores "
          f"{out['estimated_wall_s_on_cores']:.0f} s; wrote {dest.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
