"""What cutting the longest jobs into parts costs, and that it changes no number.

The pipeline runs the multihead family of every beyond instance as one job per head count H
(``pipeline.plan.beyond_parts``) and ``minip_train`` ood/large as two jobs cut at a feature rank
(``pipeline.plan.train_parts``), instead of one job each, so that no job runs for long. A part
pays what a job pays once (a process, the data and evaluation sets, the compile, its own batches
drawn from the job's stream, a training loop's per-step overhead) and shares nothing with the
other parts. This script measures that, on the real jobs of the full plan:

* for each cut job (``beyond/m<m>``, ``beyond/witness``, ``ood/large``) the whole job and its parts
  run as the pipeline runs them (``python -m attnrank minip-beyond|minip-train ...``, one thread,
  a fresh process each,
  CPU seconds from the child's rusage), cut to K₁ and K₂ steps with the logged steps scaled so
  that every run evaluates as often as the full job (``levers.cut``); the difference gives the
  seconds per step and the rest the fixed seconds, so each job's full length is predicted as
  fixed + steps · per-step (the whole first runs K₂ with an empty inductor cache, as the first job
  of a run would; every other run finds the kernels in it, as in the pipeline, whose run folder
  keeps one cache for every job);
* the runs alternate (whole, part, part, …; K₁ then K₂) ``--repeats`` times and the fastest of each
  is kept;
* ``added_s`` = Σ parts − whole, per cut job, per study and in all, against each study's job
  seconds in the sidecars of ``--run`` (the reference): what the cuts add to the DAG's job seconds;
* the parts' K₂ outputs, one after the other, are compared with the whole's (every row and every
  weight): ``identical`` says whether they are the same bits, ``max_difference`` the largest |Δ|.

Each part's share of its whole (predicted seconds) times the whole's seconds in the reference gives
the part's expected seconds on the reference's host (``expected_reference_s``).

    .venv/bin/python benchmarks/split_cost.py                        # every cut job (≈ 45 min)
    .venv/bin/python benchmarks/split_cost.py --jobs beyond/m12 --k 40 120 --repeats 1   # a check

Results: benchmarks/results/split_cost.json (no machine paths). A quiet machine gives the numbers;
a shared one only the identity check.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from budgets import job_seconds, read_sidecars, study_of  # noqa: E402
from levers import command, cut, full_steps, run  # noqa: E402
from trainer import machine  # noqa: E402

from attnrank.core.job import Job  # noqa: E402
from attnrank.minip.beyond.families import MULTIHEAD  # noqa: E402
from attnrank.minip.beyond.jobs import MinipBeyondJob, beyond_jobs, family_parts  # noqa: E402
from attnrank.minip.jobs import minip_jobs  # noqa: E402
from attnrank.pipeline.plan import TRAIN_CUTS, beyond_parts, train_parts  # noqa: E402
from attnrank.publish.audit import load_config  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "split_cost.json"
# the commands the pipeline runs (their params and outputs are replaced per run)
TEMPLATE = ("python -m attnrank {command} --rule {rule} --params {{}} --wildcards {wildcards} "
            "--device cpu --threads 1 "
            "--metrics results/full/metrics.parquet --weights results/full/weights.npz")


@dataclass(frozen=True)
class Cut:
    """One job the plan cuts: its name, the artifact its whole run wrote in the reference, the
    step's command and rule, the whole job and its parts (in table order)."""

    name: str
    artifact: str
    command: str
    rule: str
    whole: Job
    parts: dict[str, Job]

    @property
    def template(self) -> str:
        wildcards = shlex.quote(json.dumps({"job": self.name}, separators=(",", ":")))
        return TEMPLATE.format(command=self.command, rule=self.rule, wildcards=wildcards)


def reference_expectations(result: dict[str, Any], c: Cut, seconds: dict[str, float]
                           ) -> dict[str, Any]:
    """Each part's expected seconds on the reference's host (``expected_reference_s``): its own
    seconds when the reference ran the parts, else its predicted share of the whole's."""
    whole_ref = seconds.get(f"{c.artifact}/metrics.parquet")
    if whole_ref is not None:
        result["reference_whole_s"] = whole_ref
    parent = c.artifact.rpartition("/")[0]
    for part in c.parts:
        job = result["jobs"][part]
        own = seconds.get(f"{parent}/{part}/metrics.parquet")
        if own is not None:
            job["expected_reference_s"] = own
        elif whole_ref is not None:
            job["expected_reference_s"] = round(
                whole_ref * job["predicted_s"] / result["jobs"]["whole"]["predicted_s"], 1)
    return result


def cuts(config: dict[str, Any]) -> dict[str, Cut]:
    """Every job of the full plan that runs as parts: beyond/<instance> (multihead per H) and the
    minip_train jobs of ``TRAIN_CUTS``."""
    out: dict[str, Cut] = {}
    for inst, whole in beyond_jobs(config, "full").items():
        if isinstance(whole, MinipBeyondJob):
            parts = {k: v for k, v in beyond_parts(whole).items() if k.startswith(f"{MULTIHEAD}-")}
            out[f"beyond/{inst}"] = Cut(f"beyond/{inst}", f"minip/beyond/{inst}/{MULTIHEAD}",
                                        "minip-beyond", "minip_beyond_train",
                                        family_parts(whole)[MULTIHEAD], parts)
    jobs = minip_jobs(config, "full")
    for exp, inst in TRAIN_CUTS:
        if (exp, inst) in jobs:
            whole = jobs[(exp, inst)]
            out[f"{exp}/{inst}"] = Cut(f"{exp}/{inst}", f"minip/train/{exp}/{inst}", "minip-train",
                                       "minip_train", whole, train_parts(exp, inst, whole))
    return out


def compare(whole: Path, parts: list[Path]) -> dict[str, Any]:
    """The parts' K₂ outputs, one after the other, against the whole's: every row and weight."""
    a = pd.read_parquet(whole / "metrics.parquet")
    b = pd.concat([pd.read_parquet(p / "metrics.parquet") for p in parts], ignore_index=True)
    num = [c for c in b.columns if b[c].dtype.kind == "f"]
    same = a.shape == b.shape and a.equals(b)
    diff = max((float(np.nanmax(np.abs(a[c].to_numpy() - b[c].to_numpy()))) for c in num),
               default=0.0) if a.shape == b.shape else float("inf")
    with np.load(whole / "weights.npz") as wa:
        kept: set[str] = set()
        for p in parts:
            with np.load(p / "weights.npz") as wb:
                for k in wb.files:
                    kept.add(k)
                    same &= k in wa.files and np.array_equal(wa[k], wb[k])
                    if k in wa.files and wa[k].shape == wb[k].shape:
                        diff = max(diff, float(np.max(np.abs(wa[k] - wb[k]), initial=0.0)))
        same &= kept == set(wa.files)
    return {"identical": bool(same), "max_difference": diff}


def measure(c: Cut, ks: tuple[int, int], repeats: int, tmp: Path) -> dict[str, Any]:
    """The whole job and its parts, each cut to K₁ and K₂ steps (module docstring)."""
    jobs = {"whole": c.whole, **c.parts}
    where = tmp / c.name.replace("/", "-")
    cache = where / "cache"
    shutil.rmtree(where, ignore_errors=True)
    steps = full_steps(c.whole.to_dict())

    def once(name: str, k: int, label: str) -> dict[str, float]:
        out = where / name / label
        out.mkdir(parents=True, exist_ok=True)
        return run(command(c.template, cut(jobs[name].to_dict(), k), out), ROOT / "src", cache,
                   out / "run.log")

    runs: dict[str, dict[str, Any]] = {name: {} for name in jobs}
    runs["whole"]["first"] = once("whole", ks[1], "k2_cold")["cpu_s"]  # compiles into the cache
    for name in c.parts:  # each part's first run: its compile from the whole's cache
        runs[name]["first"] = once(name, ks[1], "k2_first")["cpu_s"]
    for _ in range(repeats):
        for name in jobs:
            for label, k in (("k1", ks[0]), ("k2", ks[1])):
                cpu = once(name, k, label)["cpu_s"]
                runs[name][label] = min(runs[name].get(label, cpu), cpu)
    out: dict[str, Any] = {"steps": steps, "jobs": {}}
    for name in jobs:
        r = runs[name]
        per_step = (r["k2"] - r["k1"]) / (ks[1] - ks[0])
        fixed = r["k2"] - ks[1] * per_step
        out["jobs"][name] = {"per_step_ms": round(1000 * per_step, 2), "fixed_s": round(fixed, 2),
                             "predicted_s": round(fixed + steps * per_step, 1),
                             "first_run_extra_s": round(r["first"] - r["k2"], 2)}
    whole = out["jobs"]["whole"]["predicted_s"]
    out["added_s"] = round(sum(out["jobs"][p]["predicted_s"] for p in c.parts) - whole, 1)
    out |= compare(where / "whole" / "k2", [where / p / "k2" for p in c.parts])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", nargs="+", default=None,
                    help="default: every cut job (beyond/m6 … beyond/witness, ood/large)")
    ap.add_argument("--k", nargs=2, type=int, default=(100, 300), metavar=("K1", "K2"))
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--run", type=Path, default=ROOT / "results" / "reference",
                    help="the run whose sidecars give each study's and each whole job's seconds")
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args(argv)
    if not 1 < a.k[0] < a.k[1]:
        raise SystemExit(f"--k {a.k[0]} {a.k[1]}: 1 < K1 < K2")
    every = cuts(load_config(ROOT / "config.yaml"))
    names = a.jobs or list(every)
    unknown = [n for n in names if n not in every]
    if unknown:
        raise SystemExit(f"--jobs {unknown}: the full plan's cut jobs are {list(every)}")
    sidecars = read_sidecars(a.run)
    studies = job_seconds(sidecars)
    seconds = {r["artifact"]: float(r["duration_s"]) for r in sidecars}
    report: dict[str, Any] = {
        "k": list(a.k), "repeats": a.repeats, "threads": 1,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(torch.device("cpu"), 1), "jobs": {}, "studies": {}}
    with tempfile.TemporaryDirectory(prefix="attnrank-split-") as tmp:
        for name in names:
            c = every[name]
            result = {"study": study_of(c.artifact + "/metrics.parquet"), **measure(
                c, tuple(a.k), a.repeats, Path(tmp))}
            report["jobs"][name] = reference_expectations(result, c, seconds)
            print(f"{name}: {json.dumps(result)}", flush=True)
    for study in dict.fromkeys(r["study"] for r in report["jobs"].values()):
        rows = [r for r in report["jobs"].values() if r["study"] == study]
        added = sum(r["added_s"] for r in rows)
        complete = a.jobs is None  # the study's share only when every cut job was measured
        report["studies"][study] = {
            "cut_jobs": len(rows), "added_s": round(added, 1),
            "wholes_predicted_s": round(sum(r["jobs"]["whole"]["predicted_s"] for r in rows), 1),
            "reference_job_s": round(studies[study], 1),
            "added_share_of_study": round(added / studies[study], 4) if complete else None}
    report["added_s"] = round(sum(r["added_s"] for r in report["jobs"].values()), 1)
    report["identical"] = all(r["identical"] for r in report["jobs"].values())
    report["expected_longest_part_s"] = max(
        (j.get("expected_reference_s", 0.0) for r in report["jobs"].values()
         for k, j in r["jobs"].items() if k != "whole"), default=None)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(report, indent=1) + "\n")
    for study, row in report["studies"].items():
        share = row["added_share_of_study"]
        print(f"{study}: the cuts add {row['added_s']:.0f} job s"
              + (f" ({100 * share:.1f} % of its {row['reference_job_s']:.0f})" if share is not None
                 else ""))
    print(f"identical: {report['identical']}; longest part ≈ {report['expected_longest_part_s']} s "
          f"on the reference's host; wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
