import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import settings

# Tests run single-threaded and deterministic regardless of the machine.
torch.set_num_threads(1)
os.environ.setdefault("PYTHONHASHSEED", "0")

# Hypothesis draws the same examples on every run (no flaky CI); HYPOTHESIS_PROFILE=explore
# searches afresh.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True)
def _seeded_torch():
    """Torch's global generator starts from the same seed in every test (tests that need
    randomness should still pass their own generator)."""
    torch.manual_seed(0)

# tests/slurm need the Slurm executor plugin (requirements-slurm.lock); `.ci/slurm.sh` installs it
# and runs them with ATTNRANK_SLURM_TESTS=1. `make test` leaves them out.
collect_ignore = [] if os.environ.get("ATTNRANK_SLURM_TESTS") == "1" else ["slurm"]

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


def copy_repo(dest: Path) -> None:
    """The tracked and untracked (not ignored) files of the checkout, without results/ and tests/."""
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for rel in filter(None, files.split("\0")):
        src = ROOT / rel
        if src.is_file() and not rel.startswith(("results/", "tests/")):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def snakemake(cwd: Path, *args: str, scale: str | None = "smoke") -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    config = ["--config", f"scale={scale}"] if scale else []
    return subprocess.run([SNAKEMAKE, *args, "--cores", "2", *config], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=1200)


# The one smoke run of the whole DAG that every DAG test shares. It starts in the background as
# soon as collection finds a test that needs it, while the in-process tests run; the tests that
# need it run last. It may use two cores but runs at a lower priority (nice 10, its jobs too), so
# the in-process tests keep a core and the run takes the second one, and both once they are done
# (on one core alone, the in-process tests finished about 2 minutes before it and a core idled).
# ATTNRANK_SMOKE_RUN names its folder (CI sets it, so that tests/slurm/run.sh compares the Slurm
# run's tables with this very run); unset, a temporary folder. A test that changes the run works
# on a copy (``smoke_copy``).
SMOKE_RUN_ENV = "ATTNRANK_SMOKE_RUN"
SMOKE_CORES = os.environ.get("ATTNRANK_SMOKE_CORES", "2")
SMOKE_NICE = 10
_SMOKE: dict[str, object] = {}


def _uses_smoke_run(item: pytest.Item) -> bool:
    return any(f in getattr(item, "fixturenames", ()) for f in ("smoke_run", "smoke_copy"))


@pytest.hookimpl(trylast=True)  # after -k / -m deselection
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    """The DAG tests run after every in-process test (stable order otherwise), and the shared
    smoke run starts now, in the background, when any of them was collected."""
    items.sort(key=_uses_smoke_run)
    if any(_uses_smoke_run(i) for i in items) and not config.option.collectonly:
        _start_smoke_run()


def _start_smoke_run() -> None:
    import tempfile

    if not os.environ.get(SMOKE_RUN_ENV):  # keep the two newest earlier runs, like pytest's tmp
        old = sorted(Path(tempfile.gettempdir()).glob("attnrank-smoke-*"),
                     key=lambda p: p.stat().st_mtime)
        for stale in old[:-2]:
            shutil.rmtree(stale, ignore_errors=True)
    work = Path(os.environ.get(SMOKE_RUN_ENV) or tempfile.mkdtemp(prefix="attnrank-smoke-"))
    if work.exists() and any(work.iterdir()):
        raise pytest.UsageError(f"{SMOKE_RUN_ENV}={work}: the folder must be new or empty (the "
                                "shared smoke run is made there from this checkout)")
    work.mkdir(parents=True, exist_ok=True)
    copy_repo(work)
    log = open(work / "smoke_run.log", "w")  # noqa: SIM115 (closed when the run is waited for)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    _SMOKE.update(work=work, log=log, proc=subprocess.Popen(
        [SNAKEMAKE, "--cores", SMOKE_CORES, "--config", "scale=smoke"], cwd=work, env=env,
        stdout=log, stderr=subprocess.STDOUT, preexec_fn=lambda: os.nice(SMOKE_NICE)))


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A session that ends before it needed the run (-x, Ctrl-C) stops it."""
    proc = _SMOKE.get("proc")
    if proc is not None and proc.poll() is None:
        proc.terminate()
        proc.wait(timeout=60)


@pytest.fixture(scope="session")
def smoke_run() -> Path:
    """The shared smoke run of the whole DAG in a fresh copy of the repository (read only: a
    test that changes it takes ``smoke_copy``)."""
    if "proc" not in _SMOKE:
        _start_smoke_run()
    proc, work = _SMOKE["proc"], _SMOKE["work"]
    rc = proc.wait(timeout=1800)
    _SMOKE["log"].close()
    assert rc == 0, (work / "smoke_run.log").read_text()[-5000:]
    return work


@pytest.fixture
def smoke_copy(smoke_run: Path, tmp_path: Path) -> Path:
    """A copy of the shared smoke run (code, results, logs and Snakemake's metadata, mtimes kept)
    that a test may change."""
    dest = tmp_path / "repo"
    shutil.copytree(smoke_run, dest, symlinks=True)
    return dest
