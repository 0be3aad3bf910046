"""Old code against new, side by side on one machine: each study's real jobs cut to K steps.

Hosts differ by 1.6–3× in how fast the same job runs, so a speed-up is measured here as a ratio
of the old code (``--old``, default 46553b6, the reference before the speed work) and the working
tree's code running the same real jobs on the same machine, one after the other:

* every study of ``benchmarks/budgets.py`` is represented by its largest real job(s) of the full
  plan (``JOBS``; the old code's parameters and command come from the old commit's reference
  sidecar of the same artifact, the new code's parameters from the plan of this tree and its
  command from this tree's reference sidecar);
* a training job runs twice per side, cut to K₁ and K₂ optimizer steps with the logged steps
  scaled so that both runs evaluate as often as the full job does; the difference gives the
  seconds per step and the rest the fixed seconds (start-up, data, evaluations, compile), so the
  full job is predicted as fixed + steps · per-step on each side (both runs warm: each side
  first runs K₂ once with an empty inductor cache, and the K₁, K₂ pair reuses it), which gives its
  compile time cold (the cold run's seconds over the warm one's; the old code compiles nothing,
  so its difference is noise);
* a job without steps (entropic_predict) runs whole once per side;
* each run is a fresh process (``python -m attnrank <step> ...``, one thread), its CPU seconds
  from the child's own rusage (``os.wait4``); ``--jobs 2`` runs two probes at once (one per core,
  as the pipeline runs two jobs) and halves the time, but a neighbour at another phase of its
  job moves a memory-bound probe's seconds by ±20 % (measured: Paper A's surrogate and ladder,
  whose code did not change, came out at 0.81-0.91x), so the recorded run uses ``--jobs 1`` on
  an otherwise idle machine;
* after K₂ steps the largest difference of the final train loss and of every parameter the two
  sides share is recorded (the new code may reorder float operations; it never changes the task).

Each study's ratio is the sum of its jobs' predicted old seconds over their new seconds; the
whole-DAG figure ``dag_weighted_ratio`` weighs the studies by the old commit's reference job seconds
(sidecar ``duration_s``): Σ ref_s / Σ (ref_s / ratio), i.e. how many times fewer job seconds the
whole DAG takes. Results: benchmarks/results/levers.json (no machine paths).

    .venv/bin/python benchmarks/levers.py                       # every study (≈ 45 min, one core)
    .venv/bin/python benchmarks/levers.py --study beyond --k 40 80
    .venv/bin/python benchmarks/levers.py --table-only --run results/reference   # the docs table
    .venv/bin/python benchmarks/levers.py --whole --artifacts minip/capacity/scratch_long/metrics.parquet \
        --out benchmarks/results/levers_whole.json      # full jobs, no prediction (calibration)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
NOTES = ROOT / "benchmarks" / "NOTES.md"  # the history page holding the generated study tables
sys.path.insert(0, str(ROOT / "benchmarks"))
from budgets import SIDECAR, job_seconds, read_sidecars  # noqa: E402

OLD = "46553b6"  # the reference before the speed work
REFERENCE = ROOT / "results" / "reference"


@dataclass(frozen=True)
class Probe:
    """One real job of a study: the artifact its step writes first (relative to the run folder)."""

    study: str
    artifact: str


JOBS: tuple[Probe, ...] = (
    Probe("minip rank_vs_m (B2, TT-6)", "minip/train/rank_vs_m/m12/metrics.parquet"),
    Probe("minip rank_vs_m (B2, TT-6)", "minip/train/rank_vs_m/m16/metrics.parquet"),
    Probe("minip witness families (TT-4 sweep)", "minip/train/witness_families/K8w6/metrics.parquet"),
    Probe("minip ood pools (TT-5)", "minip/train/ood/medium/metrics.parquet"),
    Probe("minip ood memorised pools (TT-5, reported)",
          "minip/train/ood_memorising/medium/metrics.parquet"),
    Probe("minip ood pool sweep (TT-5, reported)",
          "minip/train/ood_pool_sweep/pool338904/metrics.parquet"),
    Probe("minip witness suite (TT-4, TT-4p)", "minip/train/witness/table/metrics.parquet"),
    Probe("minip length sweep (TT-1, TT-2)", "minip/train/length_sweep/N1/metrics.parquet"),
    Probe("minip restarts (trap study)", "minip/restarts/tt3_dense_m16/metrics.parquet"),
    Probe("minip capacity probe", "minip/capacity/scratch_long/metrics.parquet"),
    Probe("minip beyond the single head (OPEN-1, OPEN-2, TT-7)",
          "minip/beyond/m12/multihead/metrics.parquet"),
    Probe("minip beyond the single head (OPEN-1, OPEN-2, TT-7)",
          "minip/beyond/m10/kernel/metrics.parquet"),
    Probe("minip beyond the single head (OPEN-1, OPEN-2, TT-7)",
          "minip/beyond/m12/positional/metrics.parquet"),
    Probe("entropic attention (EB-8 ... EB-14)",
          "entropic/attention/softmax_b1_gaussian/metrics.parquet"),
    Probe("entropic predict (EB-13)", "entropic/predict/softmax_b2/estimates.parquet"),
    Probe("entropic ladder (EB-5 ... EB-7)", "entropic/ladder/B3/metrics.parquet"),
    Probe("entropic surrogate (EB-1 ... EB-4)", "entropic/surrogate/adam/metrics.parquet"),
    Probe("language, appendix B (EB-15, EB-16)", "language/train/prose/loss.parquet"),
)


def steps_keys(params: dict[str, Any]) -> list[tuple[dict[str, Any], str]]:
    """Where a job's optimizer steps live: (dict, key) pairs (a beyond job's are in its ``train``
    part; a capacity job also has ``long_steps``)."""
    out = []
    for d in (params, params.get("train") or {}):
        out += [(d, k) for k in ("steps", "long_steps") if isinstance(d.get(k), int)]
    return out


def cut(params: dict[str, Any], k: int) -> dict[str, Any]:
    """The job cut to ``k`` steps, evaluating as many times as the full job (log_every scaled)."""
    p = json.loads(json.dumps(params))
    keys = steps_keys(p)
    full = max(d[key] for d, key in keys)
    for d, key in keys:
        d[key] = max(2, round(d[key] * k / full))
    for d in (p, p.get("train") or {}):
        if isinstance(d.get("log_every"), int):
            d["log_every"] = max(1, round(d["log_every"] * k / full))
        for key in ("early_log_every", "early_log_until"):
            if isinstance(d.get(key), int):
                d[key] = max(1, round(d[key] * k / full))
    return p


def full_steps(params: dict[str, Any]) -> int | None:
    keys = steps_keys(params)
    return max(d[k] for d, k in keys) if keys else None


def command(template: str, params: dict[str, Any], out: Path) -> list[str]:
    """The sidecar's command with other params and every output under ``out``."""
    argv = shlex.split(template)
    argv[argv.index("--params") + 1] = json.dumps(params, sort_keys=True)
    return [a if not a.startswith("results/") else str(out / Path(a).name) for a in argv]


def run(argv: list[str], src: Path, cache: Path, log: Path) -> dict[str, float]:
    """One fresh process on one thread: wall and CPU seconds (this child's own rusage, so probes
    measured at once do not count each other); its output goes to ``log``."""
    env = {**os.environ, "PYTHONPATH": str(src), "TORCHINDUCTOR_CACHE_DIR": str(cache),
           "OMP_NUM_THREADS": "1", "ATTNRANK_CHECKPOINT_EVERY": "0"}
    argv = [sys.executable if argv[0] == "python" else argv[0], *argv[1:]]
    t = time.perf_counter()
    with log.open("w") as out:
        child = subprocess.Popen(argv, env=env, cwd=src.parent, stdout=out,
                                 stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status):
        raise RuntimeError(f"{' '.join(argv[:4])} failed:\n{log.read_text()[-3000:]}")
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime}


def differences(old: Path, new: Path) -> dict[str, float | None]:
    """Largest |Δ| of the final train loss and of the parameters both sides wrote."""
    out: dict[str, float | None] = {"loss": None, "params": None}
    tables = sorted(old.glob("*.parquet"))
    if tables and (new / tables[0].name).exists():
        a, b = pd.read_parquet(tables[0]), pd.read_parquet(new / tables[0].name)
        if "train_loss" in a and "train_loss" in b and len(a) == len(b):
            out["loss"] = float(np.nanmax(np.abs(a["train_loss"].to_numpy()
                                                 - b["train_loss"].to_numpy())))
    weights = sorted(old.glob("*.npz"))
    if weights and (new / weights[0].name).exists():
        with np.load(weights[0]) as wa, np.load(new / weights[0].name) as wb:
            common = [k for k in wa.files if k in wb.files and wa[k].shape == wb[k].shape
                      and wa[k].dtype.kind == "f" and wa[k].size]
            if common:
                out["params"] = max(float(np.max(np.abs(wa[k] - wb[k]))) for k in common)
    return out


def measure(probe: Probe, old_root: Path, plan: Any, ks: tuple[int, int], tmp: Path,
            whole: bool = False) -> dict[str, Any]:
    """Both sides of one probe job (module docstring); ``old_root``: the old commit's worktree."""
    sidecar = json.loads((old_root / "results" / "reference" / (probe.artifact + SIDECAR))
                         .read_text())
    new_sidecar = json.loads((REFERENCE / (probe.artifact + SIDECAR)).read_text())
    new_params = plan.run_for(probe.artifact).params
    steps = full_steps(new_params)
    sides: dict[str, Any] = {}
    for side, src, params, template in (
            ("old", old_root / "src", sidecar["params"], sidecar["command"]),
            ("new", ROOT / "src", new_params, new_sidecar["command"])):
        cache = tmp / f"cache-{side}"
        shutil.rmtree(cache, ignore_errors=True)
        runs = {}
        if steps is None or whole:
            out = tmp / side
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir(parents=True)
            runs["whole"] = run(command(template, params, out), src, cache,
                                out / "run.log")
            sides[side] = {"runs": runs, "predicted_s": runs["whole"]["cpu_s"]}
            continue
        # K₂ with an empty cache first (its outputs are compared), then K₁ and K₂ again warm
        for label, k in (("k2_cold", ks[1]), ("k1", ks[0]), ("k2", ks[1])):
            out = tmp / (side if label == "k2_cold" else f"{side}-{label}")
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir(parents=True)
            runs[label] = run(command(template, cut(params, k), out), src, cache,
                              out / "run.log")
        per_step = (runs["k2"]["cpu_s"] - runs["k1"]["cpu_s"]) / (ks[1] - ks[0])
        fixed = runs["k2"]["cpu_s"] - ks[1] * per_step
        sides[side] = {"runs": runs, "per_step_ms": round(1000 * per_step, 2),
                       "fixed_s": round(fixed, 2), "predicted_s": round(fixed + steps * per_step, 1),
                       "compile_cold_s": round(runs["k2_cold"]["cpu_s"] - runs["k2"]["cpu_s"], 2)}
    result = {"study": probe.study, "artifact": probe.artifact, "steps": steps,
              "reference_s": sidecar.get("duration_s"), **sides,
              "ratio": round(sides["old"]["predicted_s"] / sides["new"]["predicted_s"], 3)}
    if steps is not None and not whole:
        result["step_ratio"] = round(sides["old"]["per_step_ms"] / sides["new"]["per_step_ms"], 3)
        result["max_difference_after_k2"] = differences(tmp / "old", tmp / "new")
    return result


def summarize(results: list[dict[str, Any]], reference_s: dict[str, float]) -> dict[str, Any]:
    """Per study: Σ predicted old / Σ predicted new over its probes; the DAG: the studies weighted
    by the reference's job seconds (studies without a probe count at ratio 1)."""
    studies: dict[str, Any] = {}
    for study, ref in reference_s.items():
        probes = [r for r in results if r["study"] == study and "error" not in r]
        ratio = (sum(r["old"]["predicted_s"] for r in probes)
                 / sum(r["new"]["predicted_s"] for r in probes)) if probes else 1.0
        studies[study] = {"reference_job_s": round(ref, 1), "ratio": round(ratio, 3),
                          "probes": len(probes), "new_job_s_estimate": round(ref / ratio, 1)}
    total = sum(s["reference_job_s"] for s in studies.values())
    new = sum(s["new_job_s_estimate"] for s in studies.values())
    return {"studies": studies, "reference_job_s": round(total, 1),
            "new_job_s_estimate": round(new, 1), "dag_weighted_ratio": round(total / new, 3)}


MARKERS = ("<!-- levers:start -->", "<!-- levers:end -->")


def study_table(report: dict[str, Any], old_run: dict[str, float],
                new_run: dict[str, float] | None) -> str:
    """Markdown: per study, the old reference's job seconds, the new run's (when given), and the
    side-by-side ratio of this report (old code over new on the same machine)."""
    lines = ["| study | job s, reference of " + report["old_commit"] + " | job s, new run | "
             "old ÷ new, side by side (probes) |", "| --- | ---: | ---: | ---: |"]
    for study, row in report["studies"].items():
        new = "—" if new_run is None else f"{new_run.get(study, 0.0):,.0f}"
        ratio = f"{row['ratio']:.2f}× ({row['probes']})" if row["probes"] else "1.00× (none)"
        lines.append(f"| {study} | {old_run.get(study, 0.0):,.0f} | {new} | {ratio} |")
    total_new = "—" if new_run is None else f"**{sum(new_run.values()):,.0f}**"
    lines.append(f"| **whole DAG** | **{sum(old_run.values()):,.0f}** | {total_new} | "
                 f"**{report['dag_weighted_ratio']:.2f}×** (weighted by the reference's job s) |")
    return "\n".join(lines)


WHOLE_MARKERS = ("<!-- whole:start -->", "<!-- whole:end -->")


def whole_table(report: dict[str, Any]) -> str:
    """Markdown: each probe run whole, old code then new, alone (``--whole``)."""
    lines = ["| probe (full job) | old, CPU s | new, CPU s (compile cold) | old ÷ new |",
             "| --- | ---: | ---: | ---: |"]
    for r in report["jobs"]:
        if "error" in r:
            lines.append(f"| {r['artifact']} | failed | failed | — |")
            continue
        lines.append(f"| {r['artifact']} | {r['old']['predicted_s']:,.1f} | "
                     f"{r['new']['predicted_s']:,.1f} | {r['ratio']:.2f}× |")
    return "\n".join(lines)


def write_table(doc: Path, table: str, note: str, markers: tuple[str, str] = MARKERS) -> None:
    """Replace the text between ``markers`` of ``doc``."""
    text = doc.read_text()
    start, end = (text.index(m) for m in markers)
    doc.write_text(text[:start + len(markers[0])] + "\n" + note + "\n\n" + table + "\n"
                   + text[end:])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", default=OLD, help=f"the old commit (default {OLD})")
    ap.add_argument("--k", type=int, nargs=2, default=(100, 300), metavar=("K1", "K2"))
    ap.add_argument("--study", help="only the probes whose study contains this text")
    ap.add_argument("--artifacts", nargs="+", help="only these probes (their artifacts)")
    ap.add_argument("--whole", action="store_true", help="run each probe's full job once per "
                    "side instead of cutting it (a calibration of the prediction; the new side "
                    "starts with an empty inductor cache, so its compile is cold)")
    ap.add_argument("--jobs", type=int, default=1, help="probes measured at once (each probe's "
                    "old and new runs stay one after the other, so both sides share the load)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "levers.json"))
    ap.add_argument("--table-only", action="store_true",
                    help="only rewrite benchmarks/NOTES.md's study table from --out and --run")
    ap.add_argument("--run", help="a run folder of the new code whose sidecars give each study's "
                    "job seconds for the table (e.g. results/reference after regenerating it)")
    a = ap.parse_args(argv)
    if a.table_only:
        report = json.loads(Path(a.out).read_text())
        old_run = {k: v["reference_job_s"] for k, v in report["studies"].items()}
        new_run = job_seconds(read_sidecars(Path(a.run))) if a.run else None
        write_table(NOTES, study_table(report, old_run, new_run),
                    f"Generated by `benchmarks/levers.py --table-only` from "
                    f"`benchmarks/results/levers.json` ({report['generated'][:10]})"
                    + (f" and the sidecars of `{a.run}`" if a.run else "") + ".")
        whole = Path(a.out).with_name("levers_whole.json")
        if whole.exists():
            report = json.loads(whole.read_text())
            write_table(NOTES, whole_table(report),
                        f"Generated by `benchmarks/levers.py --table-only` from "
                        f"`benchmarks/results/{whole.name}` ({report['generated'][:10]}).",
                        WHOLE_MARKERS)
        return 0
    sys.path.insert(0, str(ROOT / "src"))
    from attnrank.pipeline.plan import build_plan
    from attnrank.publish.audit import load_config

    plan = build_plan(load_config(ROOT / "config.yaml"), "full")
    probes = [p for p in JOBS if (a.study is None or a.study in p.study)
              and (a.artifacts is None or p.artifact in a.artifacts)]
    with tempfile.TemporaryDirectory(prefix="attnrank-levers-") as tmp_name:
        tmp = Path(tmp_name)
        old_src = tmp / "old"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-f", str(old_src),
                        a.old], check=True, capture_output=True)
        try:
            reference_s = job_seconds(read_sidecars(old_src / "results" / "reference"))

            def one(p: Probe) -> dict[str, Any]:
                slug = re.sub("[^a-z0-9]", "_", p.artifact)
                try:
                    r = measure(p, old_src, plan, tuple(a.k), tmp / "runs" / slug, a.whole)
                except RuntimeError as err:  # one failed probe is reported, the others kept
                    print(f"{p.artifact}: FAILED\n{err}", flush=True)
                    return {"study": p.study, "artifact": p.artifact, "error": str(err)[-2000:]}
                print(f"{p.artifact:55s} old {r['old']['predicted_s']:8.1f} s  new "
                      f"{r['new']['predicted_s']:8.1f} s  ×{r['ratio']:.2f}", flush=True)
                return r

            with ThreadPoolExecutor(a.jobs) as pool:
                results = list(pool.map(one, probes))
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old_src)],
                           capture_output=True)
    report = {"generated": datetime.now(UTC).isoformat(timespec="seconds"),
              "old_commit": a.old, "k": list(a.k), "threads": 1,
              "machine": {"cores": os.cpu_count(), "processor": platform.processor() or None,
                          "python": platform.python_version()},
              "note": __doc__.split("\n\n")[0], "jobs": results}
    report["whole"] = a.whole
    if a.study is None and a.artifacts is None and not a.whole:
        report |= summarize(results, reference_s)
    Path(a.out).write_text(json.dumps(report, indent=2) + "\n")
    print(f"levers: {a.out}" + (f"  dag_weighted_ratio ×{report['dag_weighted_ratio']:.2f}"
                                if "dag_weighted_ratio" in report else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
