"""The conda route (envs/attnrank.yaml + attnrank.post-deploy.sh) without conda: conda channels are
not reachable in CI, so what is tested is the env file's pip part (exactly requirements.lock, no
path that would resolve against Snakemake's copy of the file) and the post-deploy script run from
where Snakemake puts it (.snakemake/conda/<hash>.post-deploy.sh, or a --conda-prefix), with a fake
``pip`` on PATH that records what it was asked to install."""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
ENV = ROOT / "envs" / "attnrank.yaml"
DEPLOY = ROOT / "envs" / "attnrank.post-deploy.sh"
LOCK = ROOT / "requirements.lock"
PIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.+!_-]+$")


def lock_pins() -> list[str]:
    return [line.strip() for line in LOCK.read_text().splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def env_pip_pins(path: Path = ENV) -> list[str]:
    deps = yaml.safe_load(path.read_text())["dependencies"]
    pips = [d["pip"] for d in deps if isinstance(d, dict) and "pip" in d]
    assert len(pips) == 1, "one pip section"
    return [str(p) for p in pips[0]]


def test_the_env_pins_exactly_requirements_lock():
    env, lock = env_pip_pins(), lock_pins()
    assert len(lock) >= 80
    assert env == lock, (sorted(set(env) ^ set(lock)))


def test_the_env_pip_part_has_only_exact_pins_and_no_paths():
    """Every pip entry is name==version: nothing (`-e ..`, `-r file`, a path) that would resolve
    against .snakemake/conda/ instead of the repository."""
    for entry in env_pip_pins():
        assert PIN.match(entry), entry
    env = yaml.safe_load(ENV.read_text())
    assert "pip" in env["dependencies"]


def test_the_env_python_is_the_one_the_project_targets():
    """The conda Python (one `python=X.Y` entry) satisfies pyproject's requires-python and is the
    version ruff targets."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pythons = [d for d in yaml.safe_load(ENV.read_text())["dependencies"]
               if isinstance(d, str) and re.match(r"python\b", d)]
    assert len(pythons) == 1 and re.fullmatch(r"python=\d+\.\d+", pythons[0]), pythons
    version = pythons[0].split("=")[1]
    assert Version(version) in SpecifierSet(project["project"]["requires-python"])
    assert project["tool"]["ruff"]["target-version"] == "py" + version.replace(".", "")


def test_pyproject_pins_are_the_env_pins():
    """Every exact pin of pyproject.toml (dependencies and the test extra) is the env's pin of
    that package, and every name==version a comment of the env file mentions (the note on the
    torch wheel) is the pin the file installs."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    env = {_normalized(e.split("==")[0]): e for e in env_pip_pins()}
    declared = project["dependencies"] + project["optional-dependencies"]["test"]
    assert declared and all(PIN.match(d) for d in declared), declared  # exact pins only
    assert [env.get(_normalized(d.split("==")[0])) for d in declared] == declared
    noted = [m for line in ENV.read_text().splitlines() if line.lstrip().startswith("#")
             for m in re.findall(r"[A-Za-z0-9][A-Za-z0-9._-]*==[0-9][A-Za-z0-9.+!_-]*[0-9]", line)]
    assert noted and all(env.get(_normalized(n.split("==")[0])) == n for n in noted), noted


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_this_environment_runs_the_versions_the_env_pins():
    """The tests run under exactly what the conda env would install (a local version label such
    as torch's +cpu aside)."""
    wrong = []
    for entry in env_pip_pins():
        name, version = entry.split("==")
        try:
            have = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            wrong.append(f"{name}: not installed")
            continue
        if have.split("+")[0] != version:
            wrong.append(f"{name}: {have} (pinned {version})")
    assert not wrong, wrong


# ---- the post-deploy script, from Snakemake's copy ----------------------------------------


@pytest.fixture()
def fake_pip(tmp_path):
    """A folder with a `pip` that records its arguments (one per line) in pip_args.txt."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "pip_args.txt"
    pip = bin_dir / "pip"
    pip.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{record}"\n')
    pip.chmod(0o755)
    return bin_dir, record


@pytest.fixture()
def workdir(tmp_path):
    """A scratch repository root (its pyproject.toml) with Snakemake's copies of the env file and
    the script under .snakemake/conda/, as `conda env create` and create() leave them."""
    repo = tmp_path / "checkout"
    conda = repo / ".snakemake" / "conda"
    conda.mkdir(parents=True)
    shutil.copy(ROOT / "pyproject.toml", repo / "pyproject.toml")
    (repo / "src" / "attnrank").mkdir(parents=True)
    shutil.copy(ENV, conda / "0123abcd.yaml")
    shutil.copy(DEPLOY, conda / "0123abcd.post-deploy.sh")
    (conda / "0123abcd").mkdir()  # the environment's prefix
    return repo


def deploy(script: Path, cwd: Path, bin_dir: Path, *args: str, **env: str
           ) -> subprocess.CompletedProcess[str]:
    """Run the script as Snakemake does (`sh <copy>`, from its working directory)."""
    environ = {k: v for k, v in os.environ.items() if k != "ATTNRANK_ROOT"}
    environ |= {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", **env}
    return subprocess.run(["sh", str(script), *args], cwd=cwd, env=environ, capture_output=True,
                          text=True, timeout=60)


def test_snakemakes_copy_installs_the_repository_it_runs_from(workdir, fake_pip):
    bin_dir, record = fake_pip
    script = workdir / ".snakemake" / "conda" / "0123abcd.post-deploy.sh"
    res = deploy(script, workdir, bin_dir)
    assert res.returncode == 0, res.stderr
    assert record.read_text().splitlines() == ["install", "--no-deps", "--no-build-isolation",
                                               "-e", str(workdir.resolve())]


def test_the_root_is_found_from_the_working_directory_not_the_script(workdir, fake_pip, tmp_path):
    """Under --conda-prefix the copy lies outside the repository; from a subfolder the search
    walks up; the script's own folder is never taken for the root."""
    bin_dir, _ = fake_pip
    prefix = tmp_path / "shared-envs"
    prefix.mkdir()
    elsewhere = shutil.copy(DEPLOY, prefix / "0123abcd.post-deploy.sh")
    for script, cwd in ((Path(elsewhere), workdir), (Path(elsewhere), workdir / "src" / "attnrank"),
                        (workdir / ".snakemake" / "conda" / "0123abcd.post-deploy.sh",
                         workdir / ".snakemake" / "conda")):
        res = deploy(script, cwd, bin_dir, "--print-root")
        assert res.returncode == 0, res.stderr
        assert res.stdout.strip() == str(workdir.resolve())


def test_the_shipped_script_resolves_this_checkout(fake_pip):
    res = deploy(DEPLOY, ROOT, fake_pip[0], "--print-root")
    assert res.returncode == 0 and res.stdout.strip() == str(ROOT.resolve())


def test_no_repository_is_one_line_and_installs_nothing(tmp_path, fake_pip):
    bin_dir, record = fake_pip
    other = tmp_path / "other"
    other.mkdir()
    (other / "pyproject.toml").write_text('[project]\nname = "attnrank-fork"\n')  # not this one
    res = deploy(DEPLOY, other, bin_dir)
    assert res.returncode != 0 and not record.exists()
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and str(other.resolve()) in lines[0] and "ATTNRANK_ROOT" in lines[0]


def test_attnrank_root_overrides_the_search(workdir, tmp_path, fake_pip):
    bin_dir, record = fake_pip
    res = deploy(DEPLOY, tmp_path, bin_dir, ATTNRANK_ROOT=str(workdir))
    assert res.returncode == 0, res.stderr
    assert record.read_text().splitlines()[-1] == str(workdir.resolve())
    res = deploy(DEPLOY, workdir, bin_dir, ATTNRANK_ROOT=str(tmp_path))  # not a checkout: refused
    assert res.returncode != 0 and "ATTNRANK_ROOT" in res.stderr


def test_snakemake_looks_for_the_script_beside_the_env_file():
    """Snakemake (deployment/conda.py) runs `<env file without .yaml>.post-deploy.sh`, and every
    rule's conda env is this file."""
    assert DEPLOY == ENV.with_suffix(".post-deploy.sh") and DEPLOY.read_text().startswith("#!/bin/sh")
    common = (ROOT / "workflow" / "rules" / "common.smk").read_text()
    assert 'CONDA_ENV = "../../envs/attnrank.yaml"' in common
