"""What a newcomer types first: a bare `make` lists the targets (and installs nothing), `make help`
shows the values of its variables, a mistyped run folder or figure name is one line naming what
exists."""

import os
import subprocess
import sys
from pathlib import Path

from attnrank.pipeline.registry import FIGURES

ROOT = Path(__file__).resolve().parents[1]


def make(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    return subprocess.run(["make", "--no-print-directory", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


def test_a_bare_make_prints_the_help_and_installs_nothing(tmp_path):
    (tmp_path / "Makefile").write_text((ROOT / "Makefile").read_text())
    bare, help_ = make(cwd=tmp_path), make("help", cwd=tmp_path)
    assert bare.returncode == 0 and bare.stdout == help_.stdout
    assert "make smoke-reference" in bare.stdout and "make reproduce" in bare.stdout
    assert not (tmp_path / ".venv").exists()


def test_make_help_shows_the_values_of_its_variables():
    out = make("help", "SCALE=smoke").stdout
    assert "$(" not in out
    assert "every artifact of results/smoke against" in out
    assert "seed_offset=1000" in out


def test_stale_on_a_missing_run_folder_is_one_line_and_exit_2(tmp_path):
    missing = tmp_path / "typo"
    res = subprocess.run([sys.executable, "-m", "attnrank", "stale", str(missing)],
                         capture_output=True, text=True)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.strip().splitlines() == [
        f"python -m attnrank stale: error: run folder not found: {missing} "
        "(run with -v for the traceback)"]


def test_a_mistyped_figure_name_lists_the_figures_before_any_job(tmp_path):
    from conftest import copy_repo, snakemake

    copy_repo(tmp_path)
    res = snakemake(tmp_path, "-n", "results/smoke/figures/minip_witnes.pdf", scale=None)
    out = res.stdout + res.stderr
    assert res.returncode != 0
    hint = next(line for line in out.splitlines() if "no figure named" in line)
    assert "'minip_witnes'" in hint and all(name in hint for name in FIGURES)
    assert not (tmp_path / "results").exists()  # refused while the DAG is built
    ok = snakemake(tmp_path, "-n", "results/smoke/figures/minip_witness.png", scale=None)
    assert ok.returncode == 0, (ok.stdout + ok.stderr)[-2000:]
    # a known figure's DAG never tries the refusal (no error block in the log of a healthy run)
    assert "no figure named" not in ok.stdout + ok.stderr
    assert "InputFunctionException" not in ok.stdout + ok.stderr
