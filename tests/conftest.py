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


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory):
    """One smoke run of the whole DAG in a fresh copy of the repository (shared by the tests)."""
    work = tmp_path_factory.mktemp("repo")
    copy_repo(work)
    res = snakemake(work)
    assert res.returncode == 0, res.stderr[-5000:]
    return work
