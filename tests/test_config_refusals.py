"""Bad configs are refused before any job, one line per problem naming the key.

Every case is refused by ``attnrank.pipeline.configcheck`` (the functions the Snakefile calls) and by
``snakemake -n`` itself for the DRY_RUN_CASES, one per refusal path of the Snakefile
(ATTNRANK_ALL_DRY_RUNS=1: all 21), each in a temporary working directory whose config.yaml is the
mutated copy (``snakemake -s <repo>/Snakefile -d <tmp>``): exit ≠ 0, no DAG built, no job, at
most 5 lines of output, the key named. One Snakemake start costs 2 s on an idle machine and
about 10 s on a loaded one.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from attnrank.cli import main
from attnrank.minip import jobs as minip_jobs
from attnrank.minip.task import MAX_VOCAB_BITS, token_vocab
from attnrank.pipeline import configcheck
from attnrank.pipeline.registry import rule_names

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
SHIPPED = (ROOT / "config.yaml").read_text()


def smoke(c: dict[str, Any]) -> dict[str, Any]:
    return c["minip"]["scales"]["smoke"]


@dataclass(frozen=True)
class Case:
    """A bad config: ``mutate`` edits the parsed config.yaml (written back as the run's
    config.yaml), or ``text`` edits its text; ``args`` are extra snakemake arguments (a
    ``{configfile}`` among them is a second file with ``configfile_text``). ``expect``: what the
    one-line message must hold (the key, and the value or the valid key)."""

    name: str
    expect: tuple[str, ...]
    mutate: Callable[[dict[str, Any]], Any] | None = None
    text: Callable[[str], str] | None = None
    args: tuple[str, ...] = ()
    configfile_text: str = ""
    needs_no_cuda: bool = False


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """A mutation setting the dotted ``path`` (``minip.scales.smoke.capacity.m``) to ``value``."""
    def mutate(c: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        for key in parents:
            c = c[key]
        c[last] = value
    return mutate


def _tab_on_line_6(text: str) -> str:
    lines = text.splitlines(keepends=True)
    assert lines[4].startswith("scale: ")  # line 5
    return "".join(lines[:5] + ["\tdevice: cpu\n"] + lines[5:])


CASES = [
    Case("top_level_typo", ("config: scal: unknown key", "did you mean 'scale'"),
         args=("--config", "scal=smoke")),
    Case("device_typo", ("config: devise: unknown key", "did you mean 'device'"),
         args=("--config", "devise=cuda")),
    Case("nested_typo", ("config: minip.lrr: unknown key", "did you mean 'lr'"),
         mutate=_set("minip.lrr", 0.01)),
    Case("device_cuda_without_cuda", ("config: device = 'cuda'", "no", "visible"),
         args=("--config", "device=cuda"), needs_no_cuda=True),
    Case("witness_bits", ("minip.scales.smoke.witness.blocks × width = 16 × 4 = 64", "at most 62"),
         mutate=lambda c: smoke(c)["witness"].update(blocks=16, width=4)),
    Case("witness_families_max_m", ("minip.scales.smoke.witness_families.max_m = 64", "at most 62"),
         mutate=_set("minip.scales.smoke.witness_families.max_m", 64)),
    Case("ood_pool_above_sequence_space",
         ("minip.scales.smoke.ood.scales[0].train_pool + test_pool = 7744 + 256 = 8000",
          "at most V^3 = 8"),
         mutate=lambda c: smoke(c)["ood"]["scales"][0].update(m=2)),
    Case("headline_tau_not_in_taus", ("config: entropic.headline_tau = 0.2", "entropic.taus"),
         mutate=_set("entropic.headline_tau", 0.2)),
    Case("saturation_tau_not_in_taus", ("config: claims.saturation_tau = 0.02", "entropic.taus"),
         mutate=_set("claims.saturation_tau", 0.02)),
    Case("one_job_scale_typo", ("config: one_job_per_rule: 'smok' is not a scale", "smoke"),
         mutate=lambda c: c.update(one_job_per_rule=["smok"])),
    Case("missing_required_key", ("config: minip is missing required key 'lr'",),
         mutate=lambda c: c["minip"].pop("lr")),
    Case("yaml_syntax_error", ("config.yaml:6:1: YAML syntax error",), text=_tab_on_line_6),
    Case("repeated_key_in_configfile", ("bad.yaml:2:1", "key 'scale' is repeated"),
         args=("--configfile", "{configfile}"), configfile_text="scale: smoke\nscale: full\n"),
    Case("wrong_type", ("config: seed_offset = 'abc': an integer",),
         args=("--config", "seed_offset=abc")),
    Case("unknown_scale", ("config: scale = 'huge': one of full, smoke",),
         args=("--config", "scale=huge")),
    Case("odd_capacity_m", ("config: minip.scales.smoke.capacity.m = 7: even m",),
         mutate=_set("minip.scales.smoke.capacity.m", 7)),
    Case("odd_construction_m", ("minip.scales.smoke.constructions.exp_ms = [2, 3]: even m",),
         mutate=_set("minip.scales.smoke.constructions.exp_ms", [2, 3])),
    Case("ood_table_features_above_16_bits",
         ("minip.scales.smoke.ood.scales[].m = [6, 18]", "at most 16"),
         mutate=lambda c: (smoke(c)["ood"].update(feature_map="table"),
                           smoke(c)["ood"]["scales"][1].update(m=18))),
    Case("tt6_targets_without_headline", ("claims.TT-6.targets = [0.8, 0.95]", "target_accuracy"),
         mutate=_set("claims.TT-6.targets", [0.8, 0.95])),
    Case("eb14_band_reversed", ("claims.EB-14.level_band = [24, 16]", "low ≤ high"),
         mutate=_set("claims.EB-14.level_band", [24, 16])),
    Case("adam_warmup_longer_than_a_run", ("entropic.adam.warmup = 250",
                                           "entropic.scales.smoke.ladder.steps = 100"),
         mutate=_set("entropic.adam.warmup", 250)),
    Case("negative_rank", ("config: minip.scales.smoke.ranks[0] = -1: at least 1",),
         mutate=lambda c: smoke(c)["ranks"].__setitem__(0, -1)),
]
BY_NAME = {c.name: c for c in CASES}
# The fewest ``snakemake -n`` starts that take every refusal path of the Snakefile once (every
# case is still refused in-process above): a YAML error in config.yaml and a repeated key in a
# --configfile (``configcheck.file_problems``, before ``configfile:``), the schema and the
# cross-key checks (``config_problems``: its schema return, then its cross-key lines) and the
# device (``device_problem``, main process only). ATTNRANK_ALL_DRY_RUNS=1 starts all 21.
DRY_RUN_CASES = ("yaml_syntax_error", "repeated_key_in_configfile", "top_level_typo",
                 "witness_bits", "device_cuda_without_cuda")
ALL_DRY_RUNS = os.environ.get("ATTNRANK_ALL_DRY_RUNS", "0") == "1"


def shipped() -> dict[str, Any]:
    return yaml.safe_load(SHIPPED)


def config_text(case: Case) -> str:
    if case.text:
        return case.text(SHIPPED)
    if case.mutate:
        config = shipped()
        case.mutate(config)
        return yaml.safe_dump(config, sort_keys=False, allow_unicode=True)
    return SHIPPED


def prepare(case: Case, work: Path) -> list[str]:
    """The case's working directory (its config.yaml, any second file): the snakemake args."""
    work.mkdir(parents=True)
    (work / "config.yaml").write_text(config_text(case))
    extra = work / "bad.yaml"
    if case.configfile_text:
        extra.write_text(case.configfile_text)
    return [a.replace("{configfile}", str(extra)) for a in case.args]


def parse_overrides(args: tuple[str, ...]) -> dict[str, Any]:
    """``--config k=v`` as Snakemake reads it (values as YAML scalars)."""
    if "--config" not in args:
        return {}
    k, v = args[args.index("--config") + 1].split("=", 1)
    return {k: yaml.safe_load(v)}


# ---- the check itself (fast): every case -------------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_check_refuses_each_bad_config_in_one_line(case, tmp_path):
    args = prepare(case, tmp_path / "run")
    files = [tmp_path / "run" / "config.yaml"]
    if "--configfile" in args:
        files.append(Path(args[args.index("--configfile") + 1]))
    problems = configcheck.file_problems(files)
    if not problems:
        config: dict[str, Any] = {}
        for f in files:
            config = configcheck.merge(config, configcheck.read_config_file(f))
        config = configcheck.merge(config, parse_overrides(case.args))
        problems = configcheck.config_problems(config, configcheck.load_schema())
        if not problems:
            problem, _ = configcheck.device_problem(config["device"], cuda=lambda: False,
                                                    where="here")
            problems = [problem] if problem else []
    assert len(problems) == 1, problems
    assert all(part in problems[0] for part in case.expect), problems[0]
    assert problems[0].startswith("config: ") and "\n" not in problems[0]


def test_the_shipped_config_passes():
    assert configcheck.config_problems(shipped(), configcheck.load_schema()) == []
    assert configcheck.file_problems([ROOT / "config.yaml"]) == []


def test_every_problem_gets_its_own_line():
    config = shipped()
    config.update(scal="smoke", devise="cuda")
    del config["minip"]["lr"]
    config["entropic"]["taus"] = "0.1"
    assert configcheck.config_problems(config, configcheck.load_schema()) == [
        "config: scal: unknown key; did you mean 'scale'?",
        "config: devise: unknown key; did you mean 'device'?",
        "config: entropic.taus = '0.1': a list",
        "config: minip is missing required key 'lr'",
    ]
    # cross-key problems of several blocks at once, after the schema passes
    config = shipped()
    config["entropic"]["headline_tau"] = 0.2
    smoke(config)["capacity"]["m"] = 7
    smoke(config)["witness"].update(blocks=21, width=3)
    problems = configcheck.config_problems(config, configcheck.load_schema())
    assert [p.split(" =")[0] for p in problems] == [
        "config: minip.scales.smoke.capacity.m",
        "config: minip.scales.smoke.witness.blocks × width",
        "config: entropic.headline_tau"]
    refusal = configcheck.refusal(["config: x"] * 25)
    assert refusal.count("\n") == configcheck.MAX_LINES and refusal.endswith("5 more problem(s)")


def test_an_unknown_key_far_from_any_lists_the_valid_ones():
    config = shipped() | {"zzz": 1}
    (line,) = configcheck.config_problems(config, configcheck.load_schema())
    assert line == ("config: zzz: unknown key; expected one of scale, device, train_threads, "
                    "checkpoint_every, one_job_per_rule, seed_offset, minip, entropic, language, "
                    "claims")


def test_every_mapping_of_the_schema_is_closed():
    """A misspelt key can be ignored nowhere: every object of the schema sets
    additionalProperties (false, or a schema for named entries such as language.corpora)."""
    open_objects = []

    def walk(node: Any, at: str) -> None:
        if isinstance(node, dict):
            if node.get("type") == "object" and node.get("additionalProperties", True) is True:
                open_objects.append(at)
            for k, v in node.items():
                walk(v, f"{at}/{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{at}[{i}]")

    walk(configcheck.load_schema(), "")
    assert open_objects == []


@pytest.mark.parametrize(("tokens", "m", "share", "pools", "fits"), [
    ("fixed_weight", 4, True, (100, 116), True),    # V = 6, 216 sequences: exactly full
    ("fixed_weight", 4, True, (100, 117), False),
    ("bernoulli", 2, True, (32, 32), True),          # V = 4, 64 sequences
    ("bernoulli", 2, True, (32, 33), False),
    ("fixed_weight", 4, False, (27, 27), True),      # split 3 + 3 tokens: 27 and 27
    ("fixed_weight", 4, False, (28, 8), True),       # 4 + 2: 64 and 8
    ("fixed_weight", 4, False, (28, 9), False),
    ("fixed_weight", 4, False, (100, 100), False),
])
def test_ood_pools_are_held_to_the_sequence_space(tokens, m, share, pools, fits):
    minip = {"tokens": tokens}
    scale = {"name": "s", "m": m, "train_pool": pools[0], "test_pool": pools[1]}
    problem = minip_jobs._pools_problem(minip, "ood.scales[0]", share, scale)
    assert (problem is None) == fits, problem
    if not fits:
        assert problem.startswith("ood.scales[0].train_pool")


@pytest.mark.parametrize("tokens", ["fixed_weight", "bernoulli"])
@pytest.mark.parametrize("m", [2, 4, 6])
def test_vocab_size_counts_the_tokens_the_generator_enumerates(tokens, m):
    assert minip_jobs.vocab_size(m, tokens)[0] == token_vocab(m, tokens).shape[0]
    assert minip_jobs.MAX_TABLE_BITS == MAX_VOCAB_BITS


def test_device_cuda_is_refused_without_cuda_only_where_the_jobs_run_here():
    def no_cuda() -> bool:
        return False

    problem, warning = configcheck.device_problem("cuda", cuda=no_cuda, where="here")
    assert problem.startswith("config: device = 'cuda'") and warning is None
    for where in ("cluster", "nowhere"):  # Slurm's login node; --list-rules, --lint, --report
        assert configcheck.device_problem("cuda", cuda=no_cuda, where=where) == (None, None)
    problem, warning = configcheck.device_problem("cuda", cuda=no_cuda, where=None)
    assert problem is None and "no CUDA device" in warning
    assert configcheck.device_problem("cuda", cuda=lambda: True, where="here") == (None, None)
    for device in ("auto", "cpu"):
        assert configcheck.device_problem(device, cuda=no_cuda, where="here") == (None, None)
    assert configcheck.where_jobs_run() is None  # not under Snakemake's command line


@pytest.mark.parametrize(("text", "where"), [
    ("scale: smoke\nminip:\n  lr: [1, 2\n  tokens: x\n", "c.yaml:4:9: YAML syntax error"),
    ("scale: smoke\n\tdevice: cpu\n", "c.yaml:2:1: YAML syntax error"),
    ('scale: "smoke\n', "c.yaml:2:1: YAML syntax error"),
    ("minip:\n  lr: 1\n  lr: 2\n", "c.yaml:3:3: YAML error: key 'lr' is repeated (first at line 2)"),
    ("- a list\n", "c.yaml: expected a mapping of keys at the top level, got list"),
])
def test_yaml_errors_name_file_line_and_column(tmp_path, text, where):
    (tmp_path / "c.yaml").write_text(text)
    (line,) = configcheck.file_problems([tmp_path / "c.yaml"])
    assert line.startswith("config: ") and where in line and "\n" not in line


def test_check_config_cli_names_the_line_of_a_broken_configfile(tmp_path, capsys):
    """Snakemake parses a --configfile before the Snakefile runs and cannot say where it breaks;
    ``python -m attnrank check-config FILE`` can."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("scale: smoke\nminip:\n  lr: [1, 2\n")
    assert main(["check-config", "--base", str(ROOT / "config.yaml"), str(bad)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"config: {bad}:4:1: YAML syntax error") and "\n" not in err
    good = tmp_path / "good.yaml"
    good.write_text("scale: smoke\nminip: {lr: 0.02}\n")
    assert main(["check-config", "--base", str(ROOT / "config.yaml"), str(good)]) == 0
    assert "config OK" in capsys.readouterr().out
    typo = tmp_path / "typo.yaml"
    typo.write_text("scal: smoke\n")
    assert main(["check-config", "--base", str(ROOT / "config.yaml"), str(typo)]) == 1
    assert capsys.readouterr().err.strip() == "config: scal: unknown key; did you mean 'scale'?"


# ---- snakemake -n (the acceptance): every case, in one batch -----------------------------------

def dry_run(case: Case, work: Path, *mode: str) -> subprocess.CompletedProcess:
    """``snakemake -n`` (or ``mode``) of the case in its own working directory ``work``."""
    args = prepare(case, work)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run([SNAKEMAKE, "-s", str(ROOT / "Snakefile"), "-d", str(work),
                           *(mode or ("-n", "--cores", "1")), *args], cwd=work, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def dry_runs(tmp_path_factory):
    """The chosen cases' ``snakemake -n``, a few at a time (each is a Snakemake start)."""
    base = tmp_path_factory.mktemp("dry")
    cases = [c for c in CASES if (ALL_DRY_RUNS or c.name in DRY_RUN_CASES)
             and not (c.needs_no_cuda and configcheck.cuda_visible())]
    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        results = pool.map(lambda c: dry_run(c, base / c.name), cases)
        out = {c.name: (r, base / c.name) for c, r in zip(cases, results, strict=True)}
    yield out
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("name", [n for n in BY_NAME if ALL_DRY_RUNS or n in DRY_RUN_CASES])
def test_snakemake_dry_run_refuses_before_any_job(dry_runs, name):
    if name not in dry_runs:
        pytest.skip("a CUDA device is visible here")
    res, work = dry_runs[name]
    out = (res.stdout + res.stderr).strip()
    lines = [line for line in out.splitlines() if line.strip()]
    assert res.returncode != 0, out
    assert "Building DAG" not in out and "rule " not in out and "Job stats" not in out, out
    assert not (work / "results").exists() and not (work / "logs").exists()
    assert len(lines) <= 5, out
    assert all(part in out for part in BY_NAME[name].expect), out


HAVE_SLURM_PLUGIN = importlib.util.find_spec("snakemake_executor_plugin_slurm") is not None
NO_SLURM_PLUGIN = ("snakemake-executor-plugin-slurm not installed (requirements-slurm.lock); "
                   "tests/slurm/test_profile.py runs this case where it is (.ci/slurm.sh)")
CUDA_CASE = Case("cuda", (), args=("--config", "device=cuda", "scale=smoke"))


def check_cuda_listing(work: Path) -> None:
    """``--list-rules`` (what the Slurm profile runs on the login node, which has no GPU) with
    device=cuda: every rule listed, no refusal."""
    res = dry_run(CUDA_CASE, work, "--list-rules")
    assert res.returncode == 0, res.stderr[-3000:]
    listed = [line.split()[0] for line in res.stdout.splitlines() if line and not line[0].isspace()]
    one_job = yaml.safe_load((ROOT / "config.yaml").read_text())["one_job_per_rule"]
    assert sorted(listed) == rule_names(one_job), res.stdout
    assert "config: device" not in res.stdout + res.stderr


def check_cuda_plans_under_slurm(work: Path) -> None:
    """``-n --executor slurm`` with device=cuda: no job runs here, so the device is not refused
    and the DAG is planned (its training jobs listed). Needs the Slurm executor plugin."""
    res = dry_run(CUDA_CASE, work, "-n", "--executor", "slurm", "--jobs", "1")
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    assert "config: device" not in out, out[-3000:]
    # at smoke its training jobs are the one-job rules (config one_job_per_rule)
    assert "Building DAG" in out and re.search(r"^rule smoke_minip_train:", out, re.M), out[-3000:]


@pytest.mark.parametrize("mode", [
    "list_rules",
    pytest.param("executor_slurm",
                 marks=pytest.mark.skipif(not HAVE_SLURM_PLUGIN, reason=NO_SLURM_PLUGIN)),
])
def test_device_cuda_is_not_refused_where_no_job_runs_here(tmp_path, mode):
    """The Slurm profile lists the rules with ``snakemake --list-rules`` on the login node, which
    has no GPU; a run sent to Slurm (``--executor slurm``) plans even under ``-n``."""
    if mode == "list_rules":
        check_cuda_listing(tmp_path / "list")
    else:
        check_cuda_plans_under_slurm(tmp_path / "slurm")
