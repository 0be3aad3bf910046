"""One job per rule: at the scales of the config's ``one_job_per_rule``, every job of a training
(or data-only compute) rule runs in one process, as one Snakemake job, instead of one process each.

A job of such a rule starts Python and imports torch (≈ 1.5–2 s) for a step that, at the smoke
scale, often computes for less than a second: most of the smoke run's job seconds were start-up.
Here the rule's jobs of one scale become one rule, ``<scale>_<step>`` (``smoke_minip_train``),
whose outputs are every job's outputs and whose command, ``python -m attnrank run-jobs``, runs
each job's own command line (``member_argv``: the command its per-job rule would run) one after
the other in one process. Each job computes what it computes alone: its typed job, seeds and
generators come from its parameters, never from the process (tests/test_one_job.py checks the
bytes), and its sidecars are the ones it writes alone (its rule, wildcards and command).

Standard library only: the workflow imports this module while it parses the Snakefile.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from attnrank.pipeline.registry import MORE_RULES, ONE_JOB_STEPS, STEPS

# A second rule of a step (registry.MORE_RULES) → the wildcard that only its jobs have.
SECOND_RULE_WILDCARD = {"language_rung_train": "rung"}
NO_SCALE = "(?!)"  # a wildcard constraint no value matches


class PlannedRun(Protocol):
    """What this module reads of ``plan.StepRun``."""

    step: str
    wildcards: dict[str, str]
    outputs: tuple[str, ...]

    @property
    def params_json(self) -> str: ...


@dataclass(frozen=True)
class OneJob:
    """Every job of ``step`` at ``scale``, run as one Snakemake job named ``name``."""

    name: str
    scale: str
    step: str
    runs: tuple[PlannedRun, ...]

    def outputs(self) -> list[str]:
        """Every output of every job, under ``results/<scale>/``."""
        return [f"results/{self.scale}/{o}" for r in self.runs for o in r.outputs]

    def argvs(self, device: str, threads: int) -> list[list[str]]:
        """Each job's command line (``member_argv``), in plan order."""
        return [member_argv(r, self.scale, device, threads) for r in self.runs]


def one_job_scales(config: Mapping[str, Any]) -> list[str]:
    """The scales whose training and compute rules run as one job each (``one_job_per_rule``)."""
    return list(config.get("one_job_per_rule") or [])


def rule_of(run: PlannedRun) -> str:
    """The Snakemake rule that runs ``run`` as a job of its own: its step's rule, or the second
    rule of ``registry.MORE_RULES`` whose wildcards it has (``language_rung_train``: a rung)."""
    for rule, wildcard in SECOND_RULE_WILDCARD.items():
        if run.step == MORE_RULES[rule] and wildcard in run.wildcards:
            return rule
    return run.step


def member_argv(run: PlannedRun, scale: str, device: str, threads: int) -> list[str]:
    """The command line (after ``python -m attnrank``) that runs ``run`` alone, as its rule's
    shell does: ``--rule``, ``--params`` (canonical JSON), ``--wildcards`` (with the scale),
    ``--device`` and ``--threads`` of a training step (``--threads 1`` of a threaded compute
    step), then each output's flag and path (the step's outputs in the registry's order are the
    run's)."""
    step = STEPS[run.step]
    if len(step.outputs) != len(run.outputs):
        raise ValueError(f"step {run.step}: {len(run.outputs)} planned outputs for "
                         f"{len(step.outputs)} output flags")
    wildcards = json.dumps({**run.wildcards, "scale": scale}, sort_keys=True)
    argv = [step.command, "--rule", rule_of(run), "--params", run.params_json,
            "--wildcards", wildcards]
    if step.kind == "train":
        argv += ["--device", device, "--threads", str(threads)]
    elif step.threads:
        argv += ["--threads", "1"]
    for flag, out in zip(step.outputs, run.outputs, strict=True):
        argv += [flag.flag, f"results/{scale}/{out}"]
    return argv


def one_jobs(runs: Iterable[PlannedRun], scale: str) -> dict[str, OneJob]:
    """The one-job rules of a scale's plan: per step of ``ONE_JOB_STEPS`` with jobs at the
    scale, one ``OneJob`` named ``<scale>_<step>`` (its runs in plan order)."""
    by_step: dict[str, list[PlannedRun]] = {}
    for run in runs:
        if run.step in ONE_JOB_STEPS:
            by_step.setdefault(run.step, []).append(run)
    return {f"{scale}_{step}": OneJob(f"{scale}_{step}", scale, step, tuple(rs))
            for step, rs in by_step.items()}


def separate_scales(all_scales: Iterable[str], one_job: Sequence[str]) -> str:
    """A per-job rule's ``scale`` constraint: the scales whose jobs run one process each."""
    rest = [s for s in all_scales if s not in one_job]
    return "|".join(rest) if rest else NO_SCALE



def parse_jobs(text: str) -> list[list[str]]:
    """The ``--jobs`` of ``run-jobs``: a JSON list of command lines, each a non-empty list of
    strings whose first is the command of a step of ``ONE_JOB_STEPS``; ValueError naming what is
    wrong otherwise."""
    try:
        jobs = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"--jobs: not JSON ({err.msg} at character {err.pos})") from None
    commands = sorted({STEPS[s].command for s in ONE_JOB_STEPS})
    if not isinstance(jobs, list) or not jobs:
        raise ValueError("--jobs: expected a non-empty JSON list of command lines")
    for k, argv in enumerate(jobs, 1):
        if not (isinstance(argv, list) and argv and all(isinstance(x, str) for x in argv)):
            raise ValueError(f"--jobs: job {k} is not a non-empty list of strings")
        if argv[0] not in commands:
            raise ValueError(f"--jobs: job {k} runs {argv[0]!r}; expected one of "
                             f"{', '.join(commands)}")
    return jobs


def remove_outputs(paths: Iterable[Path]) -> None:
    """Remove written outputs and their sidecars (a ``run-jobs`` whose later job failed)."""
    from attnrank.pipeline.provenance import sidecar_path

    for path in paths:
        Path(path).unlink(missing_ok=True)
        sidecar_path(path).unlink(missing_ok=True)


def rerun_outputs(jobs: Mapping[str, OneJob], artifacts: Iterable[str]) -> set[str]:
    """The outputs a rerun makes again beside ``artifacts`` (paths relative to the run folder) at
    a scale of ``jobs`` (``one_jobs``): every output of a one-job rule that holds any of them
    (its jobs run together; the others' bytes come out the same). Their downstream artifacts
    rerun too (``plan.Plan.downstream``)."""
    wanted = set(artifacts)
    out: set[str] = set()
    for job in jobs.values():
        outputs = {o for r in job.runs for o in r.outputs}
        if outputs & wanted:
            out |= outputs
    return out
