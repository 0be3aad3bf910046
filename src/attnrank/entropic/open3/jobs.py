"""OPEN-3's jobs (docs/methods.md §2.9), built from ``entropic.scales.<scale>.open3``.

- student sweeps under each spectrum of ``open3.spectra`` (the A3 recipe, one evaluation at the
  last step): ``AttentionJob`` ``<teacher>_<spectrum>`` for the linear teacher and every β of
  ``open3.betas``, r* ``open3.r_star``, ranks ``open3.ranks``;
- the estimators there: ``PredictJob`` ``<teacher>_<spectrum>`` at d = ``entropic.d`` (the predict
  grid's S, seeds, mixer inputs) and ``<teacher>_d32_<spectrum>`` at the second grid's task
  (``predict_d32``: its N, d, e, seeds, mixer inputs and calibration, S = ``other_S``), the latter
  for every teacher the second grid does not already run under that spectrum;
- one candidate job over every predict job OPEN-3 judges (``Open3CandidateJob``: the E2_centred
  estimator on each job's own stream) and the table job that judges them (``Open3TableJob``).

Kept apart from ``entropic/jobs.py`` (every Paper A step imports it: a change there reruns them
all). Standard library only: the workflow imports this module while it parses the Snakefile.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from attnrank.core.job import Job
from attnrank.entropic.jobs import (
    LINEAR,
    SOFTMAX,
    AttentionJob,
    PredictJob,
    Teacher,
    _trained,
    entropic_jobs,
    task_params,
    teacher_name,
)
from attnrank.entropic.predict_grid import D32, D32_TASK_KEYS, PREDICT_D32, d32_jobs

OPEN3 = "open3"  # the config block entropic.scales.<scale>.open3
# The candidate's name in the tables' ``estimator`` column, and the columns only it has.
E2_CENTRED = "E2_centred"
FLOOR_RANK = "floor_rank"  # its floor-rank reading
FIT_ENERGY = "centred_fit_energy"  # Ê, the energy per entry of the centred fits (noise removed)
SIGNAL_VARIANCE = "signal_variance"  # V̂, the signal variance per entry (noise removed)
# The tables of OPEN-3: its jobs' rows (the table step), the candidate's rows, and the judged ones.
ATTENTION_TABLE = "entropic_open3_attention"
PREDICT_TABLE = "entropic_open3_predict"
CANDIDATE_TABLE = "entropic_open3_candidate"
SMIN_TABLE, ERRORS_TABLE, RATTN_TABLE = "entropic_open3", "entropic_open3_errors", "entropic_open3_rattn"


def _predict_jobs(value: Any, where: str) -> tuple[PredictJob, ...]:
    if not isinstance(value, list | tuple):
        raise ValueError(f"{where}: expected a list of predict jobs, got {value!r:.60}")
    return tuple(PredictJob.from_dict(v, f"{where}[{i}]") for i, v in enumerate(value))


@dataclass(frozen=True)
class Open3CandidateJob(Job):
    """The candidate E2_centred (and its floor rank at ``noise_floor``) on the stream of every
    predict job in ``predict``, drawn again from the job's own seeds."""

    predict: tuple[PredictJob, ...]
    noise_floor: float

    _nested: ClassVar[dict[str, Any]] = {"predict": _predict_jobs}


@dataclass(frozen=True)
class Open3TableJob(Job):
    """The judged tables: r_attn per cell, every reading's error per (cell, S), S_min."""

    d: int  # the d of the student sweeps (entropic.d), where r_attn is measured
    spectrum: str  # the flat sweep's spectrum (entropic.spectrum): A3's table
    spectra: tuple[str, ...]  # the spectra of OPEN-3's own sweeps
    noise_floor: float
    rank_tolerance: float
    seed_quorum: float


@dataclass(frozen=True)
class Open3Jobs:
    """Every OPEN-3 job of one scale: the student sweeps and predict jobs ((experiment, instance)
    → job, run by the A3 and A4 steps), the candidate job and the table job."""

    runs: dict[tuple[str, str], Job]
    candidate: Open3CandidateJob
    table: Open3TableJob


def open3_config_problems(ent: dict[str, Any]) -> list[str]:
    """Every cross-key problem of ``entropic.scales.<scale>.open3`` at every scale, one line each
    naming the key (empty: fine)."""
    out: list[str] = []
    n, d = int(ent["n_tokens"]), int(ent["d"])
    for scale, g in ent["scales"].items():
        where = f"entropic.scales.{scale}.{OPEN3}"
        o, d32 = g[OPEN3], g[PREDICT_D32]
        if ent["spectrum"] in o["spectra"]:
            out.append(f"{where}.spectra: {ent['spectrum']!r} is entropic.spectrum, whose r_attn "
                       "the attention grid measures; list other spectra only")
        cap = min(n, d, int(d32["n_tokens"]), int(d32["d"]))
        bad = [r for r in o["r_star"] if r > cap]
        if bad:
            out.append(f"{where}.r_star: r* = {bad} exceeds min(N, d) of both predict grids = {cap}")
        bad = [r for r in o["ranks"] if r > d]
        if bad:
            out.append(f"{where}.ranks: ranks {bad} exceed d = {d}")
        bad = [b for b in o["betas"] if not b > 0]
        if bad:
            out.append(f"{where}.betas: β must be > 0, got {bad}")
        for key, task in (("entropic.n_tokens", ent), (f"entropic.scales.{scale}.{PREDICT_D32}"
                                                       ".n_tokens", d32)):
            if not int(task["n_tokens"]) - 1 > int(task["d"]):
                out.append(f"{key}: the candidate E2_centred needs N − 1 > d, got "
                           f"N={task['n_tokens']}, d={task['d']}")
    return out


def _teachers(betas: list[float]) -> list[Teacher]:
    return [Teacher(LINEAR, 1.0)] + [Teacher(SOFTMAX, float(b)) for b in betas]


def open3_jobs(config: dict[str, Any], scale: str) -> Open3Jobs:
    """OPEN-3's jobs at ``scale`` (module docstring). Checks the block first (ValueError naming
    the key, one line per problem)."""
    problems = open3_config_problems(config["entropic"])
    if problems:
        raise ValueError("\n".join(problems))
    ent = config["entropic"] | {"seed_offset": config["seed_offset"]}
    g = ent["scales"][scale]
    o, att, pred, d32 = g[OPEN3], g["attention"], g["predict"], g[PREDICT_D32]
    head = float(ent["headline_beta"])
    runs: dict[tuple[str, str], Job] = {}
    for spec in o["spectra"]:
        ent_s = ent | {"spectrum": spec}
        for teacher in _teachers(o["betas"]):
            inst = f"{teacher_name(teacher)}_{spec}"
            # the final rows only: one evaluation, at the last step (as the other-V* jobs)
            runs[("attention", inst)] = AttentionJob(
                **(_trained(ent_s, scale, "attention", inst) | {"log_every": att["steps"]}),
                teacher=teacher, r_star=tuple(o["r_star"]), ranks=tuple(o["ranks"]),
                chunk=ent["attention_chunk"])
            runs[("predict", inst)] = PredictJob(
                **task_params(ent_s, "predict", inst), teacher=teacher, r_star=tuple(o["r_star"]),
                S=tuple(pred["S"]), seeds=pred["seeds"], mixer_inputs=pred["mixer_inputs"],
                chunk=256)
        task = ent_s | {k: d32[k] for k in D32_TASK_KEYS}
        for teacher in _teachers(o["betas"]):
            if spec in d32["variant_spectra"] and teacher == Teacher(SOFTMAX, head):
                continue  # the second grid runs it already (softmax_b<head>_d32_<spectrum>)
            inst = f"{teacher_name(teacher)}_{D32}_{spec}"
            runs[("predict", inst)] = PredictJob(
                **task_params(task, "predict", inst), teacher=teacher, r_star=tuple(o["r_star"]),
                S=tuple(d32["other_S"]), seeds=d32["seeds"], mixer_inputs=d32["mixer_inputs"],
                chunk=256)
    values = ent["teacher_values"]
    judged = [job for (exp, _), job in (entropic_jobs(config, scale) | d32_jobs(config, scale)
                                        | runs).items()
              if exp == "predict" and isinstance(job, PredictJob) and job.teacher_values == values]
    judged.sort(key=lambda job: job.instance)
    c = config["claims"]
    candidate = Open3CandidateJob(tuple(judged), float(c["noise_floor"]))
    table = Open3TableJob(int(ent["d"]), str(ent["spectrum"]), tuple(o["spectra"]),
                          float(c["noise_floor"]), float(c["rank_tolerance"]),
                          float(c["seed_quorum"]))
    return Open3Jobs(runs, candidate, table)
