"""Recovery after a killed Snakemake: stale locks go, a live run's stay, and the jobs a dead run
left behind are stopped (and only those)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from attnrank.pipeline import recovery
from attnrank.pipeline.recovery import (
    RUN_ENV,
    OrphanedJob,
    Proc,
    recover,
    run_alive,
    run_id,
    start_time,
    stop_if_orphaned,
)

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")


def _workdir(tmp_path: Path, locks: bool = True) -> Path:
    work = tmp_path / "repo"
    (work / ".snakemake" / "locks").mkdir(parents=True)
    if locks:
        (work / ".snakemake" / "locks" / "0.input.lock").write_text("results/x\n")
        (work / ".snakemake" / "locks" / "0.output.lock").write_text("results/y\n")
    return work


def _fake_proc(root: Path, pid: int, argv: list[str], cwd: Path, env: dict[str, str],
               start: str = "4242") -> None:
    d = root / str(pid)
    d.mkdir(parents=True)
    fields = ["S"] + ["0"] * 18 + [start] + ["0"] * 10
    (d / "stat").write_text(f"{pid} (some (odd) name) " + " ".join(fields) + "\n")
    (d / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
    (d / "environ").write_bytes(b"\0".join(f"{k}={v}".encode() for k, v in env.items()) + b"\0")
    os.symlink(cwd, d / "cwd")


def _dead_run() -> str:
    """The run mark of a process that has ended."""
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.2)"])
    mark = run_id(p.pid)
    p.wait()
    return mark


def test_start_time_names_a_process_for_good(tmp_path):
    _fake_proc(tmp_path, 7, ["x"], tmp_path, {}, start="99")
    assert start_time(7, tmp_path) == "99"  # parsed after the last ")" of an odd name
    assert start_time(8, tmp_path) is None
    me = run_id()
    assert run_alive(me) and me.startswith(socket.gethostname() + ":")
    assert not run_alive(_dead_run())
    assert run_alive("some-other-host:1:1")  # another host's run: assumed alive


def test_nothing_happens_without_locks(tmp_path):
    work = _workdir(tmp_path, locks=False)
    assert recover(work) == []


def test_a_dead_runs_locks_are_removed(tmp_path):
    work = _workdir(tmp_path)
    done = recover(work, proc=tmp_path / "no-proc")
    assert len(done) == 1 and "removed the stale lock" in done[0]
    assert not list((work / ".snakemake" / "locks").iterdir())


@pytest.mark.parametrize("argv", [["/venv/bin/python", "/venv/bin/snakemake", "--cores", "2"],
                                  ["python3", "-m", "snakemake", "-n"], ["snakemake"]])
def test_a_live_snakemake_in_the_folder_keeps_its_locks(tmp_path, argv):
    work = _workdir(tmp_path)
    proc = tmp_path / "proc"
    _fake_proc(proc, 12345, argv, work, {"HOME": "/root"})
    assert recover(work, proc=proc) == []
    assert len(list((work / ".snakemake" / "locks").iterdir())) == 2


def test_a_snakemake_elsewhere_or_of_a_dead_run_does_not_hold_the_lock(tmp_path, monkeypatch):
    """A Snakemake in another folder is not this run; a (subprocess-mode) Snakemake carrying a
    dead run's mark is an orphan: it is stopped (recorded here, fake pids are never signalled)."""
    work = _workdir(tmp_path)
    proc = tmp_path / "proc"
    _fake_proc(proc, 12345, ["snakemake"], tmp_path, {})
    _fake_proc(proc, 12346, ["python", "-m", "snakemake", "--mode", "subprocess"], work,
               {RUN_ENV: f"{socket.gethostname()}:999999:1"})
    assert Proc(12346, work, ("python", "-m", "snakemake"), None).is_snakemake
    stopped: list[list[int]] = []
    monkeypatch.setattr(recovery, "_terminate", lambda pids, timeout, proc: stopped.append(pids))
    done = recover(work, proc=proc)
    assert stopped == [[12346]] and len(done) == 2
    assert not list((work / ".snakemake" / "locks").iterdir())


def test_a_lock_owned_on_another_host_is_left_alone(tmp_path):
    work = _workdir(tmp_path)
    (work / ".snakemake" / recovery.OWNER_FILE).write_text(json.dumps({"host": "elsewhere"}))
    assert recover(work, proc=tmp_path / "no-proc") == []
    recovery.record_owner(work)  # this host's record: recovery proceeds
    assert json.loads((work / ".snakemake" / recovery.OWNER_FILE).read_text())["pid"] == os.getpid()
    assert recover(work, proc=tmp_path / "no-proc")


def test_the_jobs_of_a_dead_run_are_stopped_and_no_others(tmp_path):
    """Real processes: one marked with a dead run (stopped), one with this live run (kept)."""
    work = _workdir(tmp_path)
    sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
    orphan = subprocess.Popen(sleep, cwd=work, env=dict(os.environ, **{RUN_ENV: _dead_run()}))
    live = subprocess.Popen(sleep, cwd=work, env=dict(os.environ, **{RUN_ENV: run_id()}))
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not all(
                (Path("/proc") / str(p.pid) / "environ").read_bytes().count(RUN_ENV.encode())
                for p in (orphan, live)):
            time.sleep(0.05)  # until both have exec'd python with their environment
        done = recover(work, timeout=10)
        assert orphan.wait(timeout=10) == -15  # SIGTERM
        assert live.poll() is None
        assert any(f"pids {orphan.pid}" in line for line in done)
        assert not list((work / ".snakemake" / "locks").iterdir())
    finally:
        for p in (orphan, live):
            if p.poll() is None:
                p.kill()
                p.wait()


def test_a_job_stops_once_its_snakemake_is_gone(monkeypatch):
    monkeypatch.delenv(RUN_ENV, raising=False)
    stop_if_orphaned("nothing")  # not started by Snakemake: never stops
    monkeypatch.setenv(RUN_ENV, run_id())
    stop_if_orphaned("nothing")  # its Snakemake runs
    dead = _dead_run()
    monkeypatch.setenv(RUN_ENV, dead)
    with pytest.raises(OrphanedJob, match=f"{dead}.*the checkpoint x is kept, run the same command"):
        stop_if_orphaned("the checkpoint x")
