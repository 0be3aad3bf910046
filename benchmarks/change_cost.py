"""What a change costs from a fresh clone: `make reference` after a one-line edit, timed.

In a fresh clone of HEAD (under a temp folder, the repository's own .venv linked in, its src first
on PYTHONPATH) this measures, side by side:

1. ``restore``: `python -m attnrank restore` (results/full from results/reference), then
   `snakemake -n` — the jobs it plans (0 when the reference is current);
2. for each edit (default: one line appended to a figure module, and one to a Min-IP
   experiment): the edit committed in the clone, the jobs `snakemake -n --forcerun <stale>` plans
   by rule; for the figure edit, `make reference` itself, timed (restore, the rerun, publish,
   audit).

Numbers go to benchmarks/results/change_cost.json (paths in the record are relative).

    .venv/bin/python benchmarks/change_cost.py
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

ROOT = Path(__file__).resolve().parents[1]
# the Min-IP edit is only planned (dry run); the figure edit is then run through make reference
EDITS = {"minip_experiment": "src/attnrank/minip/experiments/capacity.py",
         "figure": "src/attnrank/minip/figures/minip_witness.py"}


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[subprocess.CompletedProcess, float]:
    t0 = time.perf_counter()
    res = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    return res, time.perf_counter() - t0


def planned_jobs(text: str) -> dict[str, int]:
    """The job counts by rule of a `snakemake -n` output ({} for nothing to be done)."""
    if "Job stats:" not in text:
        return {}
    rows = text.split("Job stats:")[1].split("total")[0].splitlines()[3:]
    return {r.split()[0]: int(r.split()[1]) for r in rows if r.strip()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "change_cost.json")
    ap.add_argument("--cores", type=int, default=2)
    a = ap.parse_args(argv)
    venv = ROOT / ".venv"
    record: dict[str, object] = {"date": datetime.now(UTC).isoformat(timespec="seconds"),
                                 "cores": a.cores, "edits": {}}
    with tempfile.TemporaryDirectory(prefix="attnrank-change-") as tmp:
        clone = Path(tmp) / "clone"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        (clone / ".venv").symlink_to(venv)
        with (clone / ".git" / "info" / "exclude").open("a") as f:
            f.write(".venv\n")
        for name in ("pyproject.toml", "requirements.lock"):  # older than the venv's stamp: make
            os.utime(clone / name, (0, 0))                      # must not reinstall it here
        env = dict(os.environ, PYTHONPATH=str(clone / "src"),
                   PATH=f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}")
        record["commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=clone,
                                          capture_output=True, text=True).stdout.strip()
        res, secs = _run([str(venv / "bin" / "python"), "-m", "attnrank", "restore"], clone, env)
        if res.returncode != 0:
            raise SystemExit(f"restore failed: {res.stderr[-2000:]}")
        dry, _ = _run([str(venv / "bin" / "snakemake"), "-n", "--cores", str(a.cores)], clone, env)
        record["restore"] = {"seconds": round(secs, 1), "summary": res.stdout.strip().splitlines(),
                             "planned_after_restore": planned_jobs(dry.stdout + dry.stderr)}
        for name, rel in EDITS.items():
            path = clone / rel
            original = path.read_text()
            path.write_text(original + "\n_CHANGE_COST_EDIT = 1\n")
            subprocess.run(["git", "commit", "-qam", f"change cost: {name}"], cwd=clone, check=True)
            stale = subprocess.run([str(venv / "bin" / "python"), "-m", "attnrank", "stale",
                                    "--prefix"], cwd=clone, env=env, capture_output=True,
                                   text=True, check=True).stdout.split()
            dry, _ = _run([str(venv / "bin" / "snakemake"), "-n", "--cores", str(a.cores),
                           *(["--forcerun", *stale] if stale else [])], clone, env)
            entry: dict[str, object] = {"edited": rel, "stale": len(stale),
                                        "planned": planned_jobs(dry.stdout + dry.stderr)}
            if name == "figure":
                res, secs = _run(["make", "reference", f"CORES={a.cores}"], clone, env)
                entry["make_reference"] = {"seconds": round(secs, 1), "ok": res.returncode == 0,
                                           "tail": res.stdout.strip().splitlines()[-3:]}
                if res.returncode != 0:
                    print(res.stdout[-3000:], res.stderr[-3000:], file=sys.stderr)
            record["edits"][name] = entry
            path.write_text(original)
            subprocess.run(["git", "commit", "-qam", f"change cost: {name} reverted"], cwd=clone,
                           check=True)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(record, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
