"""Wall time of the WHOLE pipeline: one `snakemake --cores K --config scale=<scale>` command, timed
from start to exit (not a sum of sampled job times), in a fresh directory.

The working tree of ``--repo`` (tracked files and untracked files git does not ignore; never
results/, logs/ or .snakemake/) is copied into a fresh directory, and the repo's own venv runs
Snakemake there with that copy's ``src`` first on PYTHONPATH, so nothing in the repo's results/ is
read or overwritten and every job runs. The seconds are written to
benchmarks/results/pipeline_<scale>_wall.json (the record `benchmarks/summary.py` reads):

    .venv/bin/python benchmarks/pipeline_wall.py --scale smoke            # ≈ 4–8 min on 2 cores
    .venv/bin/python benchmarks/pipeline_wall.py --scale full             # the full run (≈ 1 h today)
    .venv/bin/python benchmarks/pipeline_wall.py --scale smoke --keep DIR # keep the run's folder
    .venv/bin/python benchmarks/pipeline_wall.py --scale full --here     # make reference's run
    .venv/bin/python benchmarks/pipeline_wall.py --scale full --part language  # one part only
    .venv/bin/python benchmarks/pipeline_wall.py --scale full --omit-from minip_beyond_train

``--part P`` builds only the figures whose registry name starts with ``P_`` (and what they need),
in a fresh folder, and records it as pipeline_<scale>_<P>_wall.json. ``--omit-from RULE`` runs the
whole DAG but the jobs of RULE and everything downstream of them (Snakemake's ``--omit-from``; the
claims and the audit are downstream of every study), in a fresh folder, and records it as
pipeline_<scale>_without_<RULE>_wall.json: how long the rest takes when RULE runs elsewhere.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKIP = ("results/", "logs/", ".snakemake/", ".venv/")


def tree_files(repo: Path) -> list[str]:
    """The working tree's files: tracked and untracked-not-ignored, minus run outputs."""
    out = subprocess.run(["git", "-C", str(repo), "ls-files", "-co", "--exclude-standard", "-z"],
                         capture_output=True, check=True).stdout.decode()
    return sorted(f for f in out.split("\0") if f and not f.startswith(SKIP)
                  and (repo / f).is_file())


def git_state(repo: Path) -> dict[str, object]:
    def git(*args: str) -> str:
        r = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
        return r.stdout.strip() if r.returncode == 0 else ""
    return {"commit": git("rev-parse", "HEAD") or None,
            "dirty": bool(git("status", "--porcelain", "--", "src", "workflow", "Snakefile",
                              "config.yaml"))}


def copy_tree(repo: Path, dest: Path) -> int:
    files = tree_files(repo)
    for f in files:
        target = dest / f
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(repo / f, target)
    return len(files)


def part_targets(repo: Path, scale: str, part: str) -> list[str]:
    """The figure PDFs of one part (registry names ``<part>_*``) at ``scale``."""
    sys.path.insert(0, str(repo / "src"))
    from attnrank.pipeline.registry import FIGURES

    names = [n for n in FIGURES if n.startswith(f"{part}_")]
    if not names:
        raise SystemExit(f"--part {part}: no registered figure is named {part}_*; "
                         f"figures: {', '.join(FIGURES)}")
    return [f"results/{scale}/figures/{n}.pdf" for n in names]


def stale_outputs(workdir: Path, scale: str) -> list[str]:
    """The artifacts of ``results/<scale>`` in ``workdir`` that the audit calls stale (restored
    ones have no Snakemake metadata, so Snakemake alone cannot see their step changed)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(workdir / "src"), env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep)
    out = subprocess.run([sys.executable, "-m", "attnrank", "stale", f"results/{scale}",
                          "--prefix"], cwd=workdir, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"attnrank stale failed: {out.stderr.strip()}")
    return out.stdout.split()


def job_accounting(workdir: Path, scale: str) -> dict[str, float]:
    """Where a fresh run's job seconds went: ``job_s``, the seconds of every job's process
    (Snakemake's benchmark file of each job); ``compute_s``, the seconds its step ran (the
    ``duration_s`` of its sidecars, once a job); ``startup_s_per_job``, the rest a job (starting
    Python, importing torch and pandas, writing outputs)."""
    bench = workdir / "logs" / scale / "benchmarks"
    job_s = [float(f.read_text().splitlines()[-1].split("\t")[0]) for f in bench.rglob("*.tsv")]
    steps: dict[tuple[str, str], float] = {}
    for f in (workdir / "results" / scale).rglob("*.prov.json"):
        rec = json.loads(f.read_text())
        key = (str(rec.get("rule")), json.dumps(rec.get("wildcards") or {}, sort_keys=True))
        steps[key] = float(rec.get("duration_s") or 0.0)
    if not job_s:
        return {}
    return {"job_s": round(sum(job_s), 1), "compute_s": round(sum(steps.values()), 1),
            "startup_s_per_job": round((sum(job_s) - sum(steps.values())) / len(job_s), 2)}


def run(repo: Path, scale: str, cores: int, workdir: Path, snakemake: Path,
        copy: bool = True, targets: list[str] | None = None,
        forcerun: list[str] | None = None, omit: str | None = None) -> dict[str, object]:
    fresh = not (workdir / "results" / scale).exists() or copy
    n_files = copy_tree(repo, workdir) if copy else 0
    env = dict(os.environ)
    env["PATH"] = f"{snakemake.parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join([str(workdir / "src"), env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep)
    cmd = [str(snakemake), *(targets or []), "--cores", str(cores), "--config", f"scale={scale}"]
    if forcerun:
        cmd += ["--forcerun", *forcerun]
    if omit:
        cmd += ["--omit-from", omit]
    log = (workdir / "logs" if not copy else workdir) / f"snakemake_{scale}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with log.open("w") as fh:
        rc = subprocess.run(cmd, cwd=workdir, env=env, stdout=fh, stderr=subprocess.STDOUT).returncode
    wall = time.perf_counter() - t0
    jobs = sum(1 for _ in (workdir / "logs" / scale / "benchmarks").rglob("*.tsv")) \
        if (workdir / "logs" / scale / "benchmarks").exists() else 0
    seconds = job_accounting(workdir, scale) if fresh else {}
    # no machine paths in the record: the run folder is named, never spelled out
    tail = [line.replace(str(workdir), "<run folder>")
            for line in log.read_text(errors="replace").splitlines()[-5:]]
    return {"scale": scale, "wall_s": round(wall, 1), "ok": rc == 0, "returncode": rc,
            "cores": cores, "command": " ".join(["snakemake", *cmd[1:]]),
            "where": "a fresh copy of the working tree" if copy else "the repository itself",
            "every_job_ran": fresh, "files_copied": n_files, "training_jobs_benchmarked": jobs,
            "forced_stale": len(forcerun or []), **seconds,
            "log_tail": tail}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", default="smoke", choices=["smoke", "full"])
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--repo", type=Path, default=ROOT, help="the repository whose tree is timed")
    ap.add_argument("--snakemake", type=Path, default=None,
                    help="snakemake executable (default: <repo>/.venv/bin/snakemake)")
    ap.add_argument("--here", action="store_true",
                    help="run in the repository itself (make reference: its results/<scale> is "
                         "the run); the record says whether outputs existed before")
    ap.add_argument("--keep", type=Path, default=None,
                    help="run in this (new, empty) folder and keep it; default: a temp folder")
    ap.add_argument("--part", default=None,
                    help="only the figures named <part>_* and what they need (e.g. language)")
    ap.add_argument("--omit-from", default=None, metavar="RULE",
                    help="everything but RULE's jobs and what lies downstream of them")
    ap.add_argument("--forcerun-stale", action="store_true",  # make reference after a restore
                    help="with --here: snakemake --forcerun what `attnrank stale` lists")
    ap.add_argument("--out", type=Path, default=None,
                    help="default: benchmarks/results/pipeline_<scale>[_<part>]_wall.json")
    a = ap.parse_args(argv)
    repo = a.repo.resolve()
    snakemake = (a.snakemake or repo / ".venv" / "bin" / "snakemake").absolute()
    if not snakemake.exists():
        raise SystemExit(f"no snakemake at {snakemake}")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    stem = f"pipeline_{a.scale}_{a.part}_wall" if a.part else f"pipeline_{a.scale}_wall"
    if a.omit_from:
        stem = stem.replace("_wall", f"_without_{a.omit_from}_wall")
    out = a.out or ROOT / "benchmarks" / "results" / f"{stem}.json"
    targets = part_targets(repo, a.scale, a.part) if a.part else None
    if a.here and (targets or a.omit_from):
        raise SystemExit("--here times the whole run; --part and --omit-from run in a fresh folder")
    if a.omit_from and not any(f"rule {a.omit_from}:" in p.read_text()
                               for p in (repo / "workflow" / "rules").glob("*.smk")):
        raise SystemExit(f"--omit-from {a.omit_from}: no rule of that name in workflow/rules/")
    if a.here:
        forced = stale_outputs(repo, a.scale) if a.forcerun_stale else None
        record = run(repo, a.scale, a.cores, repo, snakemake, copy=False, forcerun=forced)
    elif a.keep is not None:
        if a.keep.exists() and any(a.keep.iterdir()):
            raise SystemExit(f"{a.keep} is not empty: the run needs a fresh folder")
        a.keep.mkdir(parents=True, exist_ok=True)
        record = run(repo, a.scale, a.cores, a.keep.resolve(), snakemake, targets=targets,
                     omit=a.omit_from)
    else:
        with tempfile.TemporaryDirectory(prefix=f"attnrank-{a.scale}-") as tmp:
            record = run(repo, a.scale, a.cores, Path(tmp), snakemake, targets=targets,
                         omit=a.omit_from)
    record |= {"part": a.part, "targets": targets, "omit_from": a.omit_from,
               "git": git_state(repo),
               "date": datetime.now(UTC).isoformat(timespec="seconds"),
               "machine": {"cores": os.cpu_count(), "python": platform.python_version()},
               "load_before": load,
               "load_after": os.getloadavg()[0] if hasattr(os, "getloadavg") else None}
    if not record["ok"]:
        print(json.dumps(record, indent=2), file=sys.stderr)
        print(f"snakemake failed (rc {record['returncode']}): nothing recorded", file=sys.stderr)
        return 1
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {out}: {a.scale} pipeline {record['wall_s']} s wall on {a.cores} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
