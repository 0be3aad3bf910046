"""Recovery after a killed Snakemake: the same command, run again, resumes the run.

Snakemake's locks (``.snakemake/locks/``) record no process, so a Snakemake killed with SIGKILL
leaves them behind and the next run stops with a LockException until ``--unlock``; the jobs it
had started keep running as orphans. The Snakefile calls ``recover`` in the main Snakemake
process, before Snakemake takes its locks, and ``mark_run`` so that every job it starts carries
``ATTNRANK_SNAKEMAKE_RUN=<host>:<pid>:<start time>`` in its environment. ``recover`` acts only
when the locks are stale: locks exist, no other Snakemake runs in this folder on this host
(a Snakemake process whose environment carries no run mark, or the mark of a live run), and the
last owner the onstart hook recorded (``.snakemake/attnrank-owner.json``) is not on another
host. It then stops the orphaned jobs of dead runs that run in this folder (SIGTERM, then SIGKILL
after ``timeout`` s; a training job keeps its checkpoint and the rerun resumes it) and removes
the locks. Incomplete outputs are then rerun by ``rerun-incomplete`` (profiles/default).

A training job also stops by itself once the Snakemake that started it is gone
(``stop_if_orphaned``, called after each checkpoint save): it keeps its checkpoint, so the rerun
resumes it, rather than finishing work whose outputs the rerun would discard as incomplete.

Linux only (``/proc``); elsewhere nothing is found and Snakemake's own message stands.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from dataclasses import dataclass
from pathlib import Path

RUN_ENV = "ATTNRANK_SNAKEMAKE_RUN"
OWNER_FILE = "attnrank-owner.json"
PROC = Path("/proc")


def start_time(pid: int, proc: Path = PROC) -> str | None:
    """Process ``pid``'s start time (clock ticks after boot, field 22 of /proc/<pid>/stat), or
    None when there is no such process. With the pid it names one process for good."""
    try:
        stat = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2:].split()[19]


def run_id(pid: int | None = None, proc: Path = PROC) -> str:
    """``<host>:<pid>:<start time>`` of process ``pid`` (default: this one)."""
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()}:{pid}:{start_time(pid, proc)}"


def run_alive(run: str, proc: Path = PROC) -> bool:
    """Does the process a run mark names still run (on this host; another host's: assumed)?"""
    host, pid, start = run.rsplit(":", 2)
    if host != socket.gethostname():
        return True
    return pid.isdigit() and start_time(int(pid), proc) == start


@dataclass(frozen=True)
class Proc:
    """What recovery needs to know of one process of this host."""

    pid: int
    cwd: Path | None
    argv: tuple[str, ...]
    run: str | None  # its RUN_ENV mark, if any

    @property
    def is_snakemake(self) -> bool:
        return any(Path(a).name in ("snakemake", "snakemake.exe") or a == "snakemake"
                   for a in self.argv[:3])


def processes(proc: Path = PROC) -> list[Proc]:
    """Every process whose cwd, command line and environment can be read (this user's)."""
    out = []
    for d in proc.iterdir() if proc.is_dir() else ():
        if not d.name.isdigit():
            continue
        try:
            argv = tuple(a.decode(errors="replace") for a in
                         (d / "cmdline").read_bytes().split(b"\0") if a)
            env = (d / "environ").read_bytes().split(b"\0")
            cwd = Path(os.readlink(d / "cwd"))
        except OSError:
            continue
        prefix = f"{RUN_ENV}=".encode()
        run = next((e[len(prefix):].decode(errors="replace") for e in env if e.startswith(prefix)),
                   None)
        out.append(Proc(int(d.name), cwd, argv, run))
    return out


class OrphanedJob(RuntimeError):
    """The Snakemake run that started this job is gone."""


def stop_if_orphaned(where: str, proc: Path = PROC) -> None:
    """Raise OrphanedJob when this process carries the mark of a run that is no longer alive
    (a job of a killed Snakemake); ``where`` says what is kept (e.g. the checkpoint and step)."""
    run = os.environ.get(RUN_ENV)
    if run and not run_alive(run, proc):
        raise OrphanedJob(f"the Snakemake that started this job ({run}) is gone: stopping; "
                          f"{where} is kept, run the same command again to resume")


def mark_run() -> str:
    """Mark this (main Snakemake) process's jobs: they inherit RUN_ENV = this run's id."""
    os.environ[RUN_ENV] = run_id()
    return os.environ[RUN_ENV]


def record_owner(workdir: Path) -> None:
    """Record this process as the owner of the folder's locks (the onstart hook)."""
    path = workdir / ".snakemake" / OWNER_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"host": socket.gethostname(), "pid": os.getpid(),
                               "run": run_id()}) + "\n")
    os.replace(tmp, path)


def _owner_host(workdir: Path) -> str | None:
    try:
        return str(json.loads((workdir / ".snakemake" / OWNER_FILE).read_text())["host"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _terminate(pids: list[int], timeout: float, proc: Path) -> None:
    """SIGTERM, then SIGKILL whatever still runs after ``timeout`` s."""
    starts = {p: start_time(p, proc) for p in pids}
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        left = [p for p in pids if starts[p] is not None and start_time(p, proc) == starts[p]]
        for p in left:
            try:
                os.kill(p, sig)
            except OSError:
                pass
        deadline = time.monotonic() + wait
        while left and time.monotonic() < deadline:
            time.sleep(0.1)
            left = [p for p in left if start_time(p, proc) == starts[p]]
        if not left:
            return


def recover(workdir: Path | None = None, timeout: float = 30.0, proc: Path = PROC) -> list[str]:
    """Remove the stale locks of a killed Snakemake in ``workdir`` and stop its orphaned jobs
    (see the module docstring). Returns what was done, one line each (empty: nothing)."""
    workdir = Path.cwd() if workdir is None else workdir
    locks = sorted((workdir / ".snakemake" / "locks").glob("*.lock"))
    if not locks:
        return []
    host = _owner_host(workdir)
    if host is not None and host != socket.gethostname():
        return []  # the lock may be a live run's on another host: Snakemake's message stands
    here = os.path.realpath(workdir)
    procs = [p for p in processes(proc)
             if p.pid != os.getpid() and p.cwd is not None and os.path.realpath(p.cwd) == here]
    live = [p for p in procs if p.is_snakemake and (p.run is None or run_alive(p.run, proc))]
    if live:
        return []  # a running Snakemake holds them: Snakemake's LockException stands
    orphans = [p for p in procs if p.run is not None and p.run != os.environ.get(RUN_ENV)
               and not run_alive(p.run, proc)]
    done = []
    if orphans:
        _terminate([p.pid for p in orphans], timeout, proc)
        done.append(f"stopped {len(orphans)} process(es) left running by a killed Snakemake "
                    f"(pids {', '.join(str(p.pid) for p in orphans)}); their jobs are rerun, "
                    "training resumes from its checkpoint")
    for lock in locks:
        lock.unlink(missing_ok=True)
    done.append(f"removed the stale lock of a killed Snakemake in {here} (no Snakemake runs "
                "there); incomplete jobs are rerun")
    return done
