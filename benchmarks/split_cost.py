"""What cutting the beyond study's multihead jobs into one job per H costs, and that it changes no number.

The pipeline runs the multihead family of every beyond instance as one job per head count H
(``pipeline.plan.beyond_parts``) instead of one job of every H, so that no job runs for long. A
part pays what a job pays once (a process, the data and evaluation sets, the compile, its own
batches drawn from the instance's stream, a training loop's per-step overhead) and shares nothing
with the other parts. This script measures that, on the real jobs of the full plan:

* for each instance (``m<m>``, ``witness``) the whole multihead job and its parts run as the
  pipeline runs them (``python -m attnrank minip-beyond ...``, one thread, a fresh process each,
  CPU seconds from the child's rusage), cut to K₁ and K₂ steps with the logged steps scaled so
  that every run evaluates as often as the full job (``levers.cut``); the difference gives the
  seconds per step and the rest the fixed seconds, so each job's full length is predicted as
  fixed + steps · per-step (the whole first runs K₂ with an empty inductor cache, as the first job
  of a run would; every other run finds the kernels in it, as in the pipeline, whose run folder
  keeps one cache for every job);
* the runs alternate (whole, part, part, …; K₁ then K₂) ``--repeats`` times and the fastest of each
  is kept;
* ``added_s`` = Σ parts − whole, per instance and in all, against the study's job seconds in the
  sidecars of ``--run`` (the reference): what the cut adds to the DAG's job seconds;
* the parts' K₂ outputs are compared with the whole's (the rows of that H and every weight):
  ``identical`` says whether they are the same bits, ``max_difference`` the largest |Δ|.

Each part's share of its whole (predicted seconds) times the whole's seconds in the reference gives
the part's expected seconds on the reference's host (``expected_reference_s``).

    .venv/bin/python benchmarks/split_cost.py                            # every instance (≈ 40 min)
    .venv/bin/python benchmarks/split_cost.py --instances m12 --k 40 120 --repeats 1   # a check

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
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from budgets import STUDIES, job_seconds, read_sidecars  # noqa: E402
from levers import command, cut, run  # noqa: E402
from trainer import machine  # noqa: E402

from attnrank.minip.beyond.families import MULTIHEAD  # noqa: E402
from attnrank.minip.beyond.jobs import MinipBeyondJob, beyond_jobs, family_parts  # noqa: E402
from attnrank.pipeline.plan import beyond_parts  # noqa: E402
from attnrank.publish.audit import load_config  # noqa: E402

BEYOND_STUDY = next(s for s, prefixes in STUDIES.items() if prefixes == ("minip/beyond/",))
OUT = ROOT / "benchmarks" / "results" / "split_cost.json"
# the command the pipeline runs for a beyond job (its params and outputs are replaced per run)
TEMPLATE = ("python -m attnrank minip-beyond --rule minip_beyond_train --params {{}} "
            "--wildcards {wildcards} --device cpu --threads 1 "
            "--metrics results/full/metrics.parquet --weights results/full/weights.npz")


def jobs_of(whole: MinipBeyondJob) -> dict[str, MinipBeyondJob]:
    """The whole multihead job of an instance and its parts (``beyond_parts``), whole first."""
    parts = {k: v for k, v in beyond_parts(whole).items() if k.startswith(f"{MULTIHEAD}-")}
    return {"whole": family_parts(whole)[MULTIHEAD], **parts}


def compare(whole: Path, part: Path, heads: int) -> dict[str, Any]:
    """The part's K₂ outputs against the whole's: rows of its H and every weight it wrote."""
    a = pd.read_parquet(whole / "metrics.parquet")
    a = a[a["heads"] == heads].reset_index(drop=True)
    b = pd.read_parquet(part / "metrics.parquet")
    num = [c for c in b.columns if b[c].dtype.kind == "f"]
    same = a.shape == b.shape and a.equals(b)
    diff = max((float(np.nanmax(np.abs(a[c].to_numpy() - b[c].to_numpy()))) for c in num),
               default=0.0) if a.shape == b.shape else float("inf")
    with np.load(whole / "weights.npz") as wa, np.load(part / "weights.npz") as wb:
        for k in wb.files:
            same &= k in wa.files and np.array_equal(wa[k], wb[k])
            if k in wa.files and wa[k].shape == wb[k].shape:
                diff = max(diff, float(np.max(np.abs(wa[k] - wb[k]), initial=0.0)))
    return {"identical": bool(same), "max_difference": diff}


def measure(instance: str, whole: MinipBeyondJob, ks: tuple[int, int], repeats: int,
            tmp: Path) -> dict[str, Any]:
    """Every job of one instance (module docstring)."""
    jobs = jobs_of(whole)
    cache = tmp / f"cache-{instance}"
    shutil.rmtree(cache, ignore_errors=True)
    steps = jobs["whole"].train.steps
    template = TEMPLATE.format(wildcards=shlex.quote(json.dumps(
        {"family": MULTIHEAD, "instance": instance, "scale": "full"}, separators=(",", ":"))))

    def once(name: str, k: int, label: str) -> dict[str, float]:
        out = tmp / instance / name / label
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        params = cut(jobs[name].to_dict(), k)
        argv = command(template, params, out)
        return run(argv, ROOT / "src", cache, out / "run.log")

    runs: dict[str, dict[str, Any]] = {name: {} for name in jobs}
    runs["whole"]["k2_cold"] = once("whole", ks[1], "k2_cold")
    for name in jobs:  # each part's first run (its compile from the whole's cache)
        if name != "whole":
            runs[name]["k2_first"] = once(name, ks[1], "k2_first")
    for r in range(repeats):
        for name in jobs:
            for label, k in (("k1", ks[0]), ("k2", ks[1])):
                cpu = once(name, k, label)["cpu_s"]
                runs[name][label] = min(runs[name].get(label, cpu), cpu)
    out: dict[str, Any] = {"steps": steps, "jobs": {}}
    for name, job in jobs.items():
        r = runs[name]
        per_step = (r["k2"] - r["k1"]) / (ks[1] - ks[0])
        fixed = r["k2"] - ks[1] * per_step
        first = r.get("k2_cold") or r.get("k2_first")
        out["jobs"][name] = {"groups": len(job.groups()), "per_step_ms": round(1000 * per_step, 2),
                             "fixed_s": round(fixed, 2),
                             "predicted_s": round(fixed + steps * per_step, 1),
                             "first_run_extra_s": round(first["cpu_s"] - r["k2"], 2)}
        if name != "whole":
            out["jobs"][name] |= compare(tmp / instance / "whole" / "k2",
                                         tmp / instance / name / "k2", job.heads[0])
    parts = [v for k, v in out["jobs"].items() if k != "whole"]
    out["added_s"] = round(sum(p["predicted_s"] for p in parts)
                           - out["jobs"]["whole"]["predicted_s"], 1)
    out["identical"] = all(p["identical"] for p in parts)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", nargs="+", default=None, help="default: every beyond instance")
    ap.add_argument("--k", nargs=2, type=int, default=(100, 300), metavar=("K1", "K2"))
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--run", type=Path, default=ROOT / "results" / "reference",
                    help="the run whose sidecars give the study's and each whole job's seconds")
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args(argv)
    if not a.k[0] < a.k[1]:
        raise SystemExit(f"--k {a.k[0]} {a.k[1]}: K1 < K2")
    wholes = {k: v for k, v in beyond_jobs(load_config(ROOT / "config.yaml"), "full").items()
              if isinstance(v, MinipBeyondJob)}
    instances = a.instances or list(wholes)
    unknown = [i for i in instances if i not in wholes]
    if unknown:
        raise SystemExit(f"--instances {unknown}: the full plan's instances are {list(wholes)}")
    sidecars = read_sidecars(a.run)
    study_s = job_seconds(sidecars)[BEYOND_STUDY]
    seconds = {r["artifact"]: float(r["duration_s"]) for r in sidecars}
    report: dict[str, Any] = {
        "k": list(a.k), "repeats": a.repeats, "threads": 1,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(torch.device("cpu"), 1), "study": BEYOND_STUDY,
        "study_job_s": round(study_s, 1), "instances": {}}
    with tempfile.TemporaryDirectory(prefix="attnrank-split-") as tmp:
        for inst in instances:
            result = measure(inst, wholes[inst], tuple(a.k), a.repeats, Path(tmp))
            ref = seconds.get(f"minip/beyond/{inst}/{MULTIHEAD}/metrics.parquet")
            if ref is not None:
                whole = result["jobs"]["whole"]["predicted_s"]
                result["reference_whole_s"] = ref
                for name, job in result["jobs"].items():
                    if name != "whole":
                        job["expected_reference_s"] = round(ref * job["predicted_s"] / whole, 1)
            report["instances"][inst] = result
            print(f"{inst}: {json.dumps(result)}", flush=True)
    added = sum(r["added_s"] for r in report["instances"].values())
    whole = sum(r["jobs"]["whole"]["predicted_s"] for r in report["instances"].values())
    report |= {"added_s": round(added, 1), "wholes_predicted_s": round(whole, 1),
               "added_share_of_wholes": round(added / whole, 4),
               "identical": all(r["identical"] for r in report["instances"].values())}
    if a.instances is None:  # the share of the study only when every instance was measured
        report["added_share_of_study"] = round(added / study_s, 4)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"added {added:.0f} job s to {whole:.0f} (the wholes, predicted) "
          f"({100 * added / whole:.1f} %); identical: {report['identical']}; wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
