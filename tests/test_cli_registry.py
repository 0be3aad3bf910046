"""The step commands come from the registry: every registered step has its subcommand with the
flags its entry declares, every ``.smk`` shell line parses with them, every entry names a job
class and a function that exist, and a bad invocation of any step (bad ``--params``, an unknown
key, a missing or unreadable input) gives the one-line error it always gave."""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import json
import re
import shlex
from pathlib import Path

import pytest

from attnrank import cli
from attnrank.pipeline.plan import build_plan
from attnrank.pipeline.registry import KINDS, STEPS, Step, command_steps
from attnrank.pipeline.runner import pick_step
from attnrank.publish.audit import load_config

ROOT = Path(__file__).resolve().parents[1]
PROG = "python -m attnrank"
JUNK = "Parquet magic bytes not found in footer. Either the file is corrupted or this is not a " \
       "parquet file."
SIGNATURES = {"train": ["job", "device", "control"], "compute": ["job"], "table": ["job", "inputs"],
              "figure": ["name", "inputs", "out_pdf", "params"],
              "claims": ["inputs", "params", "md", "csv", "html"]}


def subcommands() -> dict[str, argparse.ArgumentParser]:
    return cli.build_parser()._subparsers._group_actions[0].choices


def options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.dest != "help"]


@pytest.fixture(scope="module")
def plan():
    return build_plan(load_config(ROOT / "config.yaml"), "smoke")


@pytest.mark.parametrize("name", STEPS)
def test_every_registered_step_has_its_subcommand(name):
    step = STEPS[name]
    parser = subcommands()[step.command]
    found = {a.dest: a for a in options(parser)}
    flags = [a.option_strings[0] if a.option_strings else a.dest for a in options(parser)]
    expected = ["--params", "--rule", "--wildcards", *(["name"] if step.kind == "figure" else []),
                *([step.inputs.flag] if step.inputs else []), *(o.flag for o in step.outputs),
                *(["--device", "--threads", "--checkpoint-every"] if step.kind == "train" else
                  ["--threads"] if step.threads else [])]
    assert flags == expected
    if step.inputs:
        assert found["inputs"].required and found["inputs"].nargs == step.inputs.nargs
        assert found["inputs"].help == step.inputs.help
    for out in step.outputs:
        assert (found[out.dest].required, found[out.dest].help) == (out.required, out.help)
    assert parser.get_default("func").__name__ == "run_step"


def test_every_step_has_a_known_kind_and_its_outputs():
    assert {s.kind for s in STEPS.values()} == set(KINDS)
    assert all(s.outputs and s.outputs[0].required for s in STEPS.values())


def test_steps_sharing_a_command_share_its_flags_and_differ_in_when():
    for command in {s.command for s in STEPS.values()}:
        steps = command_steps(command)
        if len(steps) == 1:
            continue
        cli_fields = {(s.help, s.kind, s.inputs, s.outputs, s.threads) for s in steps}
        assert len(cli_fields) == 1, command
        whens = [s.when for s in steps]
        assert all(whens) and len({w[0] for w in whens}) == 1 and len(set(whens)) == len(steps)
        for s in steps:
            assert pick_step(command, {s.when[0]: s.when[1]}) is s


@pytest.mark.parametrize("name", STEPS)
def test_every_entry_names_a_job_and_a_function_called_as_its_kind(name):
    step = STEPS[name]
    fn = getattr(importlib.import_module(step.entry), step.fn)
    assert list(inspect.signature(fn).parameters)[:len(SIGNATURES[step.kind])] == \
        SIGNATURES[step.kind]
    if step.kind in ("train", "compute", "table"):
        module, _, cls = step.job.rpartition(".")
        assert hasattr(getattr(importlib.import_module(module), cls), "from_dict")
    else:
        assert not step.job
    if step.when:  # the old dispatch of entropic-train: TRAIN_JOBS by params.experiment
        from attnrank.entropic.jobs import TRAIN_JOBS

        assert step.job.endswith("." + TRAIN_JOBS[step.when[1]].__name__)
        assert step.entry.endswith("." + step.when[1])


def _shell_lines() -> list[str]:
    """Every shell command of the workflow's rules that runs ``python -m attnrank``."""
    commands = []
    for path in sorted((ROOT / "workflow" / "rules").glob("*.smk")):
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            if line.strip() != "shell:":
                continue
            parts = []
            for nxt in lines[i + 1:]:
                if not nxt.strip().startswith('"'):
                    break
                parts.append(ast.literal_eval(nxt.strip()))
            text = "".join(parts)
            if "python -m attnrank" in text:
                commands.append(text)
    return commands


def test_every_smk_shell_line_parses_with_the_generated_parser():
    lines = _shell_lines()
    ran = set()
    for text in lines:
        argv = text.split("python -m attnrank ", 1)[1].split(" > ")[0].split(" 3>&2")[0]
        steps = command_steps(argv.split()[0])  # none for audit
        inputs = steps[0].inputs if steps else None
        count = inputs.nargs if inputs and isinstance(inputs.nargs, int) else 2  # 2 for "+"
        argv = argv.replace("{input}", " ".join(f"in{i}.parquet" for i in range(count)))
        argv = argv.replace("{params.device}", "auto").replace("{threads}", "1")
        argv = re.sub(r"\{[^}]*\}", "x", argv)
        args = cli.build_parser().parse_args(shlex.split(argv))
        ran.add(args.command)
    assert {s.command for s in STEPS.values()} <= ran  # every step command is called by a rule


def _suffix(flag: str) -> str:
    return {"--weights": ".npz", "--spectra": ".npz", "--csv": ".csv", "--md": ".md",
            "--html": ".html"}.get(flag, ".parquet")


def _argv(step: Step, tmp: Path, params: str, inputs: list[Path] | None = None) -> list[str]:
    """A command line of ``step`` writing into ``tmp`` (its figure name first for a figure)."""
    argv = [step.command, "--params", params]
    if step.kind == "figure":
        argv.insert(1, "minip_witness")
    if step.inputs:
        count = step.inputs.nargs if isinstance(step.inputs.nargs, int) else 1
        argv += ["--inputs", *map(str, inputs or [tmp / f"in{i}.parquet" for i in range(count)])]
    for out in step.outputs:
        suffix = ".pdf" if step.kind == "figure" else _suffix(out.flag)
        argv += [out.flag, str(tmp / "out" / f"{out.dest}{suffix}")]
    return argv


def _valid_params(step: Step, plan) -> str:
    run = next(r for r in plan.runs if r.step == step.name)
    return run.params_json


def _error(argv: list[str], capsys) -> str:
    assert cli.main(argv) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize("name", STEPS)
def test_bad_params_are_one_line(name, tmp_path, capsys):
    step = STEPS[name]
    head = f"{PROG} {step.command}: error: "
    assert _error(_argv(step, tmp_path, '{"select": all}'), capsys) == \
        head + "--params: not valid JSON (Expecting value at line 1 column 12); expected a JSON object"
    assert _error(_argv(step, tmp_path, "[1, 2]"), capsys) == \
        head + "--params: expected a JSON object, got list '[1, 2]'"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", [s for s in STEPS if STEPS[s].job])
def test_an_unknown_key_is_one_line(name, tmp_path, capsys, plan):
    step = STEPS[name]
    params = json.loads(_valid_params(step, plan)) | {"no_such_key": 1}
    module, _, cls = step.job.rpartition(".")
    with pytest.raises(ValueError) as job_error:
        getattr(importlib.import_module(module), cls).from_dict(params)
    assert "unknown key(s) no_such_key" in str(job_error.value)
    assert _error(_argv(step, tmp_path, json.dumps(params)), capsys) == \
        f"{PROG} {step.command}: error: {job_error.value}"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", [s for s in STEPS if STEPS[s].inputs])
def test_a_missing_or_unreadable_input_is_one_line(name, tmp_path, capsys, plan):
    step = STEPS[name]
    head = f"{PROG} {step.command}: error: "
    params = _valid_params(step, plan)
    missing = tmp_path / "nope.parquet"
    count = step.inputs.nargs if isinstance(step.inputs.nargs, int) else 1
    assert _error(_argv(step, tmp_path, params, [missing] * count), capsys) == \
        head + f"input not found: {missing}"
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"this is not the file you expected")
    assert _error(_argv(step, tmp_path, params, [junk] * count), capsys) == \
        head + f"input {junk} is not a readable Parquet table ({JUNK})"
    assert not (tmp_path / "out").exists()


def test_seed_records_and_log_lines_render_from_the_job(plan):
    """The sidecars' seed records are what the hand-written commands wrote."""
    from attnrank.minip.beyond.jobs import MinipBeyondJob
    from attnrank.minip.jobs import MinipRestartsJob

    run = next(r for r in plan.runs if r.step == "minip_beyond_train")
    job = MinipBeyondJob.from_dict(run.params)
    seed = STEPS["minip_beyond_train"].seed(job)
    assert seed == {
        "scheme": "(experiment, task instance, seed index, role)",
        "experiment": job.experiment, "instance": job.instance, "seeds": job.train.seeds,
        "role": f"init from ({job.experiment}, {job.instance}, seed, group tag); data from "
                f"{job.train.experiment}/{job.train.instance}'s stream"}
    assert STEPS["minip_beyond_train"].what(job) == \
        f"minip {job.experiment}/{job.instance}/{'+'.join(job.families)}"
    run = next(r for r in plan.runs if r.step == "minip_restarts_train")
    job = MinipRestartsJob.from_dict(run.params)
    seed = STEPS["minip_restarts_train"].seed(job)
    assert seed == {"scheme": "(experiment, task instance, seed index, role)",
                    "experiment": job.train.experiment, "instance": job.train.instance,
                    "seeds": job.seeds, "role": "the training job's init and data stream"}
    assert seed["seeds"] == job.seeds and not isinstance(job.seeds, str)  # the value, not text
