"""Checks of the real-Slurm test (tests/slurm/run.sh); each subcommand exits non-zero on failure.

  check.py count LOG                    job counts of a dry-run with the Slurm profile
  check.py slurm-run LOG [N]            every job of a finished run went through sbatch and
                                        completed (N of them, when given); training jobs got a GPU
  check.py failures LOG                 failed and cancelled jobs were reported, within 60 s, and
                                        the retry asked for more memory and time
  check.py settings-error LOG K=V       a wrong account or GPU type stopped the run, clearly
  check.py tables DIR_A DIR_B           the Parquet tables of two runs are equal
  check.py provenance RESULTS_DIR       training recorded the device it ran on (cpu in CI)
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path

SUBMITTED = re.compile(r"has been submitted with SLURM jobid (\d+)")
STAMP = re.compile(r"^\s*\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
FAILED_MSG = re.compile(r"message: SLURM-job '(\d+)' failed, SLURM status is: '(\w+)'")


def fail(msg: str) -> None:
    print(f"FAIL: {msg}")
    sys.exit(1)


def ok(msg: str) -> None:
    print(f"ok: {msg}")


def sacct(job_ids: list[str], fields: str) -> list[dict[str, str]]:
    if not job_ids:
        return []
    out = subprocess.run(
        ["sacct", "-X", "-P", "-n", "-a", "-j", ",".join(job_ids), "-o", fields],
        capture_output=True, text=True, timeout=60, check=True).stdout
    names = fields.split(",")
    return [dict(zip(names, line.split("|"), strict=True))
            for line in out.splitlines() if line.strip()]


def submitted(log: str) -> list[str]:
    return SUBMITTED.findall(log)


def count(log_path: str) -> None:
    """Snakemake's job total and the Slurm submissions it turns into (groups bundled)."""
    log = Path(log_path).read_text()
    m = re.search(r"^total\s+(\d+)$", log, re.M)
    if not m:
        fail("no job stats in the dry-run output")
    total = int(m.group(1))
    bundles = re.findall(r"^\[[^\]]+\] Group job (\S+)", log, re.M)
    single = re.findall(r"^rule (\w+):", log, re.M)   # top-level jobs; grouped ones are indented
    train = [r for r in single if r.endswith("_train")]
    other = [r for r in single if not r.endswith("_train") and r != "all"]
    if other:
        fail(f"CPU jobs outside any bundle: {sorted(set(other))}")
    n_slurm = len(train) + len(bundles)
    print(f"snakemake jobs: {total}; Slurm jobs: {n_slurm} "
          f"({len(train)} training with a GPU + {len(bundles)} CPU bundles: "
          f"{', '.join(sorted(bundles))})")
    if n_slurm > 300:
        fail(f"{n_slurm} Slurm jobs: more than a few hundred")


def slurm_run(log_path: str, expected: str = "") -> None:
    log = Path(log_path).read_text()
    ids = submitted(log)
    if not ids:
        fail("no job was submitted")
    if expected and len(ids) != int(expected):
        fail(f"{len(ids)} Slurm jobs submitted, the dry run planned {expected}")
    if len(set(ids)) != len(ids):
        fail("a Slurm job id was reported twice")
    local = [r for r in re.findall(r"^localrule (\w+):", log, re.M) if r != "all"]
    if local:
        fail(f"jobs ran on the submit host instead of Slurm: {local}")
    rows = sacct(ids, "JobID,State,Comment,AllocTRES,NodeList,Submit,Start,End,AllocCPUS")
    seen = {r["JobID"]: r for r in rows}
    missing = sorted(set(ids) - set(seen), key=int)
    if missing:
        fail(f"sacct does not know the submitted jobs {missing}")
    bad = {j: r["State"] for j, r in seen.items() if r["State"] != "COMPLETED"}
    if bad:
        fail(f"jobs not COMPLETED: {bad}")
    # the comment: rule_<rule>_wildcards_<...>, or rule_<rule> for a rule without wildcards (at
    # smoke a training rule's jobs are one job, smoke_<step>: config one_job_per_rule)
    train = [r for r in rows if re.fullmatch(r"rule_\w+_train(_wildcards_.*)?", r["Comment"])]
    if not train:
        fail("no training job among the Slurm jobs")
    no_gpu = [r["JobID"] for r in train if "gres/gpu=1" not in r["AllocTRES"]]
    if no_gpu:
        fail(f"training jobs without a GPU allocation: {no_gpu}")
    cpu_gpu = [r["JobID"] for r in rows if r not in train and "gres/gpu" in r["AllocTRES"]]
    if cpu_gpu:
        fail(f"CPU jobs holding a GPU: {cpu_gpu}")
    m = re.search(r"(\d+) of (\d+) steps \(100%\) done", log)
    if not m:
        fail("the run did not report 100% of its steps done")
    ok(f"{m.group(2)} Snakemake jobs ran as {len(ids)} Slurm jobs, all COMPLETED in sacct; "
       f"{len(train)} training jobs each held gres/gpu=1 on {sorted({r['NodeList'] for r in train})}")
    t = datetime.fromisoformat
    span = (max(t(r["End"]) for r in rows) - min(t(r["Submit"]) for r in rows)).total_seconds()
    used = sum((t(r["End"]) - t(r["Start"])).total_seconds() * int(r["AllocCPUS"]) for r in rows)
    wait = [(t(r["Start"]) - t(r["Submit"])).total_seconds() for r in rows]
    print(f"    first submission to last end {span:.0f} s; {used:.0f} CPU-seconds allocated; "
          f"queue wait mean {sum(wait) / len(wait):.0f} s, max {max(wait):.0f} s")


def _stamp_before(lines: list[str], i: int) -> datetime:
    for j in range(i, -1, -1):
        m = STAMP.match(lines[j])
        if m:
            return datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y")
    fail(f"no timestamp before line {i + 1}")
    raise AssertionError


def failures(log_path: str) -> None:
    lines = Path(log_path).read_text().splitlines()
    reported = {}
    for i, line in enumerate(lines):
        m = FAILED_MSG.search(line)
        if m:
            reported[m.group(1)] = (m.group(2), _stamp_before(lines, i))
    ids = submitted("\n".join(lines))
    rows = {r["JobID"]: r for r in
            sacct(ids, "JobID,State,End,ReqMem,Timelimit,Comment,AllocTRES")}
    ended_bad = [j for j, r in rows.items() if not r["State"].startswith("COMPLETED")]
    if not ended_bad:
        fail("no job failed: the failure test did not fail anything")
    states = set()
    for j in ended_bad:
        if j not in reported:
            fail(f"Slurm job {j} ended {rows[j]['State']} but Snakemake never reported it")
        state, when = reported[j]
        states.add(state)
        lag = (when - datetime.fromisoformat(rows[j]["End"])).total_seconds()
        if lag > 60:
            fail(f"Slurm job {j} ({state}) was reported {lag:.0f} s after it ended")
        if "gres/gpu=1" not in rows[j]["AllocTRES"]:
            fail(f"training job {j} got no GPU: {rows[j]['AllocTRES']}")
        ok(f"Slurm job {j} {rows[j]['State']:<10} reported as failed {max(lag, 0):.0f} s after "
           f"it ended (asked for {rows[j]['ReqMem']}, {rows[j]['Timelimit']}, got a GPU)")
    if not {"FAILED", "CANCELLED"} <= states:
        fail(f"expected a killed (FAILED) and a cancelled (CANCELLED) job, saw {states}")
    by_rule: dict[str, list[dict[str, str]]] = {}
    for j in ended_bad:
        by_rule.setdefault(rows[j]["Comment"], []).append(rows[j])
    for comment, attempts in by_rule.items():
        mems = [int(re.sub(r"\D", "", a["ReqMem"])) for a in attempts]
        if len(attempts) < 2 or not mems == sorted(mems) or mems[0] == mems[-1]:
            fail(f"{comment}: retries did not ask for more memory: {mems}")
    ok("each retry asked for more memory and time than the attempt before")


def settings_error(log_path: str, setting: str) -> None:
    """A wrong account / GPU type stopped the run before any submission, saying what is valid."""
    log = Path(log_path).read_text()
    if submitted(log):
        fail(f"jobs were submitted with {setting}")
    m = re.search(re.escape(setting) + r" is not a .*?; (valid )?\w+: .*", log)
    if not m:
        fail(f"no clear message about {setting}")
    ok(f"{setting} stops the run before any submission: {m.group(0)[:150]}")


def _sorted(df):
    df = df.reindex(sorted(df.columns), axis=1)
    return df.sort_values(list(df.columns), ignore_index=True)


def tables(dir_a: str, dir_b: str) -> None:
    import pandas as pd

    a = {p.relative_to(dir_a) for p in Path(dir_a).rglob("*.parquet")}
    b = {p.relative_to(dir_b) for p in Path(dir_b).rglob("*.parquet")}
    if not a:
        fail(f"no Parquet tables under {dir_a}")
    if a != b:
        fail(f"different tables: only in {dir_a}: {sorted(map(str, a - b))}; "
             f"only in {dir_b}: {sorted(map(str, b - a))}")
    for rel in sorted(a):
        x = _sorted(pd.read_parquet(Path(dir_a, rel)))
        y = _sorted(pd.read_parquet(Path(dir_b, rel)))
        if not x.equals(y):
            cols = [c for c in x.columns if c in y.columns and not x[c].equals(y[c])]
            fail(f"{rel}: tables differ (shapes {x.shape} vs {y.shape}; columns {cols})")
    ok(f"{len(a)} Parquet tables equal: {', '.join(sorted(p.stem for p in a))}")


def provenance(results: str) -> None:
    sidecars = [p for p in Path(results).rglob("*.prov.json")
                if re.search(r"_train$", json.loads(p.read_text()).get("rule", "") or "")]
    if not sidecars:
        fail(f"no provenance of a training job under {results}")
    devices = {json.loads(p.read_text()).get("environment", {}).get("device") for p in sidecars}
    if devices != {"cpu"}:
        fail(f"training recorded devices {devices}, expected cpu (fake GPU, no CUDA)")
    ok(f"{len(sidecars)} training artifacts record device=cpu in their provenance")


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    {"count": count, "slurm-run": slurm_run, "failures": failures,
     "settings-error": settings_error, "tables": tables, "provenance": provenance}[cmd](*args)
