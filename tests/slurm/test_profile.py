"""The Slurm profile without a cluster: what it asks for, and the job counts it leads to.

The real-Slurm test is tests/slurm/run.sh (run by .ci/slurm.sh). The dry-runs here need the
executor plugin (requirements-slurm.lock) and are skipped without it.
"""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROFILE = ROOT / "workflow" / "profiles" / "slurm" / "profile.yaml"
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
HAVE_PLUGIN = importlib.util.find_spec("snakemake_executor_plugin_slurm") is not None
ENV_KEYS = ("SBATCH_ACCOUNT", "SBATCH_PARTITION", "ATTNRANK_SLURM_GPU_PARTITION",
            "ATTNRANK_SLURM_GPU_MODEL", "ATTNRANK_SLURM_GRES", "ATTNRANK_SLURM_NO_GPU")


@pytest.fixture(scope="module")
def listing():
    """`snakemake --list-rules`, once: the profile runs it on every parse."""
    return subprocess.run([SNAKEMAKE, "--list-rules", "--workflow-profile", "none"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=True)


@pytest.fixture(scope="module")
def rules(listing):
    return [line.split()[0] for line in listing.stdout.splitlines()
            if line and not line[0].isspace()]


@pytest.fixture
def _parse(monkeypatch, listing):
    return lambda **env: _parse_profile(monkeypatch, listing, **env)


def _parse_profile(monkeypatch, listing, **env):
    from snakemake.profiles import ProfileConfigFileParser

    real_run = subprocess.run

    def run(cmd, *args, **kwargs):
        return listing if "--list-rules" in cmd else real_run(cmd, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", run)
    for key in ENV_KEYS:
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(ROOT)
    with open(PROFILE) as f:
        return dict(ProfileConfigFileParser().parse(f))


def _resources(parsed, rule):
    return dict(e.split(":", 1)[1].split("=", 1) for e in parsed.get("set-resources", [])
                if e.split(":", 1)[0] == rule)


def test_every_training_rule_asks_for_one_gpu_and_nothing_else_does(_parse, rules):
    parsed = _parse()
    assert parsed["executor"] == "slurm"
    train = [r for r in rules if r.endswith("_train")]
    assert train, "the workflow has no *_train rule"
    for rule in train:
        res = _resources(parsed, rule)
        assert res["gpu"] == "1", rule
        assert "120 * attempt" == res["runtime"] and "8000 * attempt" == res["mem_mb"]
    gpu_rules = {e.split(":")[0] for e in parsed["set-resources"] if ":gpu=" in e}
    assert gpu_rules == set(train)


def test_cpu_rules_are_bundled(_parse, rules):
    parsed = _parse()
    groups = dict(e.split("=", 1) for e in parsed["groups"])
    cpu = [r for r in rules if not r.endswith("_train") and r != "all"]
    assert sorted(groups) == sorted(cpu)
    assert all(groups[r] == "figures" for r in cpu if r.startswith("figure_"))
    components = dict(e.split("=", 1) for e in parsed["group-components"])
    assert set(components) == set(groups.values())


def test_retries_grow_runtime_and_memory(_parse):
    parsed = _parse()
    assert int(parsed["retries"]) >= 1
    defaults = dict(e.split("=", 1) for e in parsed["default-resources"])
    assert "attempt" in defaults["runtime"] and "attempt" in defaults["mem_mb"]
    assert parsed["slurm-status-command"] == "squeue"
    assert not any(e.startswith("slurm_account=") for e in parsed["default-resources"])


@pytest.mark.parametrize("env, expect", [
    ({"ATTNRANK_SLURM_GPU_MODEL": "a100"}, {"gpu": "1", "gpu_model": "'a100'"}),
    ({"ATTNRANK_SLURM_GRES": "gpu:h100:1"}, {"gres": "'gpu:h100:1'"}),
    ({"ATTNRANK_SLURM_NO_GPU": "1"}, {}),
])
def test_gpu_type_is_selectable(_parse, rules, env, expect):
    parsed = _parse(**env)
    rule = next(r for r in rules if r.endswith("_train"))
    res = _resources(parsed, rule)
    got = {k: v for k, v in res.items() if k in ("gpu", "gpu_model", "gres")}
    assert got == expect


def test_partitions_come_from_the_environment(_parse, monkeypatch, rules):
    monkeypatch.setenv("PATH", "/nonexistent")   # no sinfo: no partition check
    parsed = _parse(SBATCH_PARTITION="cpu", ATTNRANK_SLURM_GPU_PARTITION="gpu")
    assert "slurm_partition='cpu'" in parsed["default-resources"]
    rule = next(r for r in rules if r.endswith("_train"))
    assert _resources(parsed, rule)["slurm_partition"] == "'gpu'"


def test_the_profile_reads_the_rules_snakemake_lists(rules):
    """The profile takes the rule names from the registry (no nested Snakemake per parse); they
    are exactly what `snakemake --list-rules` prints."""
    from attnrank.pipeline.onejob import one_job_scales
    from attnrank.pipeline.registry import rule_names
    from attnrank.publish.audit import load_config

    assert sorted(rules) == rule_names(one_job_scales(load_config(ROOT / "config.yaml")))


def expected_counts(parsed: dict, scale: str) -> tuple[int, int, int, set[str]]:
    """(Snakemake jobs, Slurm jobs, training jobs, CPU bundles) of a forced run at ``scale``,
    from the plan and the parsed profile: one Slurm job per training job, one per CPU bundle
    (every job of a group is one submission: ``group-components``)."""
    from attnrank.pipeline.onejob import one_job_scales
    from attnrank.pipeline.plan import build_plan
    from attnrank.pipeline.registry import ONE_JOB_STEPS
    from attnrank.publish.audit import load_config

    config = load_config(ROOT / "config.yaml")
    plan = build_plan(config, scale)
    one_job = scale in one_job_scales(config)  # every job of such a step: one rule <scale>_<step>
    rules = list(dict.fromkeys(f"{scale}_{r.step}" for r in plan.runs
                               if one_job and r.step in ONE_JOB_STEPS))
    rules += [f"figure_{r.figure}" if r.step == "figure" else r.step for r in plan.runs
              if not (one_job and r.step in ONE_JOB_STEPS)]
    rules.append("audit")  # the DAG's last step: in the workflow, not a step run of the plan
    groups = dict(e.split("=", 1) for e in parsed["groups"])
    train = [r for r in rules if r not in groups]
    bundles = {groups[r] for r in rules if r in groups}
    return len(rules) + 1, len(train) + len(bundles), len(train), bundles  # + rule all


@pytest.mark.skipif(not HAVE_PLUGIN, reason="snakemake-executor-plugin-slurm not installed")
@pytest.mark.parametrize("scale", ["full", "smoke"])
def test_dry_run_job_count(scale, _parse):
    """Slurm jobs = training jobs + CPU bundles, exactly, as the plan and the profile predict."""
    total, n_slurm, n_train, bundles = expected_counts(_parse(), scale)
    env = {k: v for k, v in os.environ.items() if k not in ENV_KEYS + ("SNAKEMAKE_PROFILE",)}
    dry = subprocess.run([SNAKEMAKE, "-n", "-F", "--workflow-profile", "workflow/profiles/slurm",
                          "--config", f"scale={scale}"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=600)
    assert dry.returncode == 0, dry.stderr[-3000:]
    out = dry.stdout + dry.stderr
    check = subprocess.run([sys.executable, str(ROOT / "tests/slurm/check.py"), "count", "/dev/stdin"],
                           input=out, capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout
    m = re.search(r"snakemake jobs: (\d+); Slurm jobs: (\d+) \((\d+) training with a GPU \+ "
                  r"(\d+) CPU bundles: ([^)]*)\)", check.stdout)
    assert m, check.stdout
    assert (int(m.group(1)), int(m.group(2)), int(m.group(3))) == (total, n_slurm, n_train)
    assert set(m.group(5).split(", ")) == bundles
    print(f"{scale}: {check.stdout.strip()}")


@pytest.mark.skipif(not HAVE_PLUGIN, reason="snakemake-executor-plugin-slurm not installed")
def test_device_cuda_plans_under_the_slurm_executor(tmp_path):
    """tests/test_config_refusals.py's ``executor_slurm`` case (skipped by `make test`, which has
    no plugin): device=cuda is not refused where no job runs here, `-n --executor slurm` plans."""
    from test_config_refusals import check_cuda_plans_under_slurm

    check_cuda_plans_under_slurm(tmp_path / "slurm")
