"""Typed jobs of Paper A (the Entropic Bound) and the one function that builds them from the config.

``entropic_jobs(config, scale)`` holds every cross-key check of the ``entropic`` block that the
JSON schema cannot express (r* ≤ min(N, d), ranks within their matrices, β > 0, S·N·e ≥ d² for E1,
N > d for the debiased E2, e ≤ d for orthonormal V*, a known ``teacher_values``, Adam's warm-up
shorter than every Adam run); it raises ValueError naming the key, one line per problem.
Standard library only.

Teacher values V* (``entropic.teacher_values``): every job runs with the config's choice; a few
extra jobs run with the other one, only what the claims reporting both need (EB-7, EB-8, EB-9,
EB-12): the attention students of the linear and the headline-β softmax teacher and the linear
predict job, each named ``<teacher>_<other values>`` (e.g. ``linear_gaussian``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from attnrank.core.job import Job, part

# The wing's identities, each spelled once here (standard library only, so the workflow, the claims
# and the figures import them without torch); the models, tasks, experiments, claims and figures
# use them by name.
# Attention teachers and students (A3, A4, ladder rungs B1, B2): the mixer X K Xᵀ or its softmax.
LINEAR, SOFTMAX = "linear", "softmax"
KINDS = (LINEAR, SOFTMAX)
# A1's optimizers (core.train's names): Adam, and plain GD early-stopped on validation MSE.
ADAM, GD = "adam", "gd"
OPTIMIZERS = (ADAM, GD)
# A2's ladder rungs (module docstring of experiments.ladder); ``_pos``: learned positional features.
B0, B1, B2, B3 = "B0", "B1", "B2", "B3"
POSITIONS_SUFFIX = "_pos"
B1_POS, B2_POS = B1 + POSITIONS_SUFFIX, B2 + POSITIONS_SUFFIX
RUNGS = (B0, B1, B2, B3, B1_POS, B2_POS)
# A4's data-only estimators of r* (entropic.predict).
E1, E2, E2_DEBIASED, MIXER = "E1", "E2", "E2_debiased", "mixer"
ESTIMATORS = (E1, E2, E2_DEBIASED, MIXER)
# V*'s shape, config entropic.teacher_values (tasks.operators.value_map): Haar orthonormal columns
# (the default) or iid N(0, 1/d) entries.
ORTHONORMAL, GAUSSIAN = "orthonormal", "gaussian"
TEACHER_VALUES = (ORTHONORMAL, GAUSSIAN)


@dataclass(frozen=True)
class Teacher:
    kind: str  # LINEAR | SOFTMAX
    beta: float  # ‖K*‖_F, the logit scale (1 for the linear teacher)


@dataclass(frozen=True)
class _Task(Job):
    """Keys every Paper A job shares: the task (N, d, e, noise, teacher spectrum), rank τs and the
    seed offset (seed indices are seed_offset … seed_offset + seeds − 1)."""

    experiment: str
    instance: str
    seed_offset: int
    n_tokens: int
    d: int
    e: int
    noise_var: float
    spectrum: str
    decay: float
    taus: tuple[float, ...]
    calibration_sequences: int
    teacher_values: str  # V*: ORTHONORMAL | GAUSSIAN


@dataclass(frozen=True)
class _Trained(_Task):
    """A trained job: optimizer, schedule and held-out set."""

    eval_sequences: int
    lr: float
    init_std: float
    seeds: int
    warmup: float  # steps (≥ 1) or a fraction of the steps (< 1); 0 for GD
    schedule: str
    n_train: int
    steps: int
    log_every: int


@dataclass(frozen=True)
class SurrogateJob(_Trained):
    """A1: every rank × r* × seed of the linear surrogate with one optimizer."""

    optimizer: str  # ADAM | GD
    r_star: tuple[int, ...]
    ranks: tuple[int, ...]


@dataclass(frozen=True)
class LadderJob(_Trained):
    """A2: one rung of the interpolation ladder (``instance``, one of RUNGS), every seed."""

    r_star: int
    positions: int
    chunk: int


@dataclass(frozen=True)
class AttentionJob(_Trained):
    """A3: rank-r attention students of one teacher, every rank × r* × seed."""

    teacher: Teacher
    r_star: tuple[int, ...]
    ranks: tuple[int, ...]
    chunk: int

    _nested: ClassVar[dict[str, Any]] = {"teacher": part(Teacher)}


@dataclass(frozen=True)
class PredictJob(_Task):
    """A4: data-only rank estimators of one teacher, every r* × S × seed."""

    teacher: Teacher
    r_star: tuple[int, ...]
    S: tuple[int, ...]
    seeds: int
    mixer_inputs: int
    chunk: int

    _nested: ClassVar[dict[str, Any]] = {"teacher": part(Teacher)}


TRAIN_JOBS: dict[str, type[_Trained]] = {"surrogate": SurrogateJob, "ladder": LadderJob,
                                         "attention": AttentionJob}


def entropic_config_problems(ent: dict[str, Any]) -> list[str]:
    """Every cross-key problem of the ``entropic`` block (every scale), one line each naming the
    key (empty: fine)."""
    n, d, e = int(ent["n_tokens"]), int(ent["d"]), int(ent["e"])
    out: list[str] = []
    if ent["teacher_values"] not in TEACHER_VALUES:
        out.append(f"entropic.teacher_values must be one of {', '.join(TEACHER_VALUES)}, "
                   f"got {ent['teacher_values']!r}")
    # both choices run (the other one for the claims that report both): orthonormal needs e ≤ d
    if e > d:
        out.append(f"entropic.e: orthonormal teacher values V* ∈ R^(d×e) need e ≤ d, got "
                   f"e={e}, d={d}")
    if not n > d:
        out.append(f"entropic.n_tokens: the debiased E2 estimator needs N > d, got N={n}, d={d}")
    cap = min(n, d)
    adam_steps: dict[str, int] = {}  # every Adam run's steps, by its key
    for scale, g in ent["scales"].items():
        where = f"entropic.scales.{scale}"
        for exp in ("surrogate", "ladder", "attention", "predict"):
            r_stars = g[exp]["r_star"]
            r_stars = r_stars if isinstance(r_stars, list) else [r_stars]
            bad = [r for r in r_stars if r > cap]
            if bad:
                out.append(f"{where}.{exp}.r_star: r* = {bad} exceeds min(N, d) = "
                           f"min({n}, {d}) = {cap}")
        for key in ("ranks", "gd_ranks"):
            bad = [r for r in g["surrogate"][key] if r > n]
            if bad:
                out.append(f"{where}.surrogate.{key}: ranks {bad} exceed N = {n}")
        bad = [r for r in g["attention"]["ranks"] if r > d]
        if bad:
            out.append(f"{where}.attention.ranks: ranks {bad} exceed d = {d}")
        for exp in ("attention", "predict"):
            bad = [b for b in g[exp]["betas"] if not b > 0]
            if bad:
                out.append(f"{where}.{exp}.betas: β must be > 0, got {bad}")
        # E1 solves for the d² entries of K from S·N·e equations: S must give at least d² of them.
        min_s = -(-d * d // (n * e))
        bad = [s for s in g["predict"]["S"] if s < min_s]
        if bad:
            out.append(f"{where}.predict.S: S = {bad} is smaller than the number of sequences "
                       f"E1 needs for its d² = {d * d} unknowns (S·N·e ≥ d², so S ≥ {min_s})")
        adam_steps |= {f"{where}.{exp}.steps": int(g[exp]["steps"])
                       for exp in ("surrogate", "ladder", "attention")}
    # Adam's warm-up in steps (≥ 1) must end before the shortest Adam run does
    warmup = ent[ADAM]["warmup"]
    if adam_steps and warmup >= 1:
        key = min(adam_steps, key=adam_steps.__getitem__)
        if warmup >= adam_steps[key]:
            out.append(f"entropic.adam.warmup = {warmup}: a warm-up below {key} = "
                       f"{adam_steps[key]} steps (the shortest Adam run), or a fraction < 1")
    return out


def check_entropic_config(ent: dict[str, Any]) -> None:
    """Cross-key checks of the ``entropic`` block (every scale); ValueError naming the key (one
    line per problem)."""
    problems = entropic_config_problems(ent)
    if problems:
        raise ValueError("\n".join(problems))


def beta_tag(beta: float) -> str:
    return f"{beta:g}".replace(".", "p")


def teacher_name(teacher: Teacher) -> str:
    """A teacher's instance name: ``linear``, or ``softmax_b<β>`` (e.g. softmax_b1, softmax_b0p5)."""
    return LINEAR if teacher.kind == LINEAR else f"{SOFTMAX}_b{beta_tag(teacher.beta)}"


LINEAR_TEACHER = Teacher(LINEAR, 1.0)


def entropic_teachers(ent: dict[str, Any], scale: str, experiment: str) -> dict[str, Teacher]:
    """Teacher instances of A3 ("attention") or A4 ("predict"): name → teacher."""
    g = ent["scales"][scale][experiment]
    teachers = [LINEAR_TEACHER] + [Teacher(SOFTMAX, float(b)) for b in g["betas"]]
    return {teacher_name(t): t for t in teachers}


def other_values(values: str) -> str:
    """The teacher values that are not ``values`` (the extra jobs' V*)."""
    if values not in TEACHER_VALUES:
        raise ValueError(f"entropic.teacher_values must be one of {', '.join(TEACHER_VALUES)}, "
                         f"got {values!r}")
    return next(v for v in TEACHER_VALUES if v != values)


def headline_teachers(ent: dict[str, Any]) -> dict[str, Teacher]:
    """The teachers EB-7 … EB-9 judge: linear, and softmax at the headline β (name → teacher)."""
    teachers = [LINEAR_TEACHER, Teacher(SOFTMAX, float(ent["headline_beta"]))]
    return {teacher_name(t): t for t in teachers}


def task_params(ent: dict[str, Any], experiment: str, instance: str) -> dict[str, Any]:
    """The fields every Paper A job shares (``_Task``), as keyword arguments of a job: experiment,
    instance, seed_offset, the rank τs (a tuple), and N, d, e, σ², the teacher spectrum and its
    decay, the calibration sequences and V*'s shape, read from ``ent`` (the ``entropic`` config
    block with ``seed_offset`` merged in, or a grid's block built like it)."""
    keys = ("n_tokens", "d", "e", "noise_var", "spectrum", "decay", "calibration_sequences",
            "teacher_values")
    return dict(experiment=experiment, instance=instance, seed_offset=ent["seed_offset"],
                taus=tuple(ent["taus"]),
                **{k: ent[k] for k in keys})


def _trained(ent: dict[str, Any], scale: str, experiment: str, instance: str,
             optimizer: str = ADAM) -> dict[str, Any]:
    g = ent["scales"][scale]
    s = g[experiment]
    opt = ent[optimizer]  # the config blocks entropic.adam and entropic.gd
    adam = optimizer == ADAM
    # plain GD: constant step size, no warm-up
    warmup, schedule = (opt["warmup"], opt["schedule"]) if adam else (0, "constant")
    return dict(task_params(ent, experiment, instance), eval_sequences=ent["eval_sequences"],
                lr=opt["lr"], init_std=opt["init_std"], seeds=g["seeds"], warmup=warmup,
                schedule=schedule, n_train=s["n_train"], log_every=s["log_every"],
                steps=s["steps"] if adam else s["gd_steps"])


def entropic_jobs(config: dict[str, Any], scale: str) -> dict[tuple[str, str], Job]:
    """Every Paper A job at ``scale``: (experiment, instance) → job. Checks the config first."""
    check_entropic_config(config["entropic"])
    ent = config["entropic"] | {"seed_offset": config["seed_offset"]}
    g = ent["scales"][scale]
    jobs: dict[tuple[str, str], Job] = {}
    for opt in OPTIMIZERS:
        s = g["surrogate"]
        jobs[("surrogate", opt)] = SurrogateJob(
            **_trained(ent, scale, "surrogate", opt, opt), optimizer=opt,
            r_star=tuple(s["r_star"]), ranks=tuple(s["ranks"] if opt == ADAM else s["gd_ranks"]))
    for rung in g["ladder"]["rungs"]:
        jobs[("ladder", rung)] = LadderJob(
            **_trained(ent, scale, "ladder", rung), r_star=g["ladder"]["r_star"],
            positions=g["ladder"]["positions"], chunk=ent["attention_chunk"])
    for name, teacher in entropic_teachers(ent, scale, "attention").items():
        s = g["attention"]
        jobs[("attention", name)] = AttentionJob(
            **_trained(ent, scale, "attention", name), teacher=teacher,
            r_star=tuple(s["r_star"]), ranks=tuple(s["ranks"]), chunk=ent["attention_chunk"])
    for name, teacher in entropic_teachers(ent, scale, "predict").items():
        s = g["predict"]
        jobs[("predict", name)] = PredictJob(
            **task_params(ent, "predict", name), teacher=teacher, r_star=tuple(s["r_star"]),
            S=tuple(s["S"]), seeds=s["seeds"], mixer_inputs=s["mixer_inputs"], chunk=256)
    # the other teacher values, only for the claims that report both (module docstring)
    other = other_values(ent["teacher_values"])
    alt = ent | {"teacher_values": other}
    for name, teacher in headline_teachers(ent).items():
        s, inst = g["attention"], f"{name}_{other}"
        # their table keeps the final rows only: one evaluation (at the last step), not one every
        # log_every steps (evaluation draws nothing, so the final rows are the same)
        jobs[("attention", inst)] = AttentionJob(
            **(_trained(alt, scale, "attention", inst) | {"log_every": s["steps"]}), teacher=teacher,
            r_star=tuple(s["r_star"]), ranks=tuple(s["ranks"]), chunk=ent["attention_chunk"])
    s, inst = g["predict"], f"{teacher_name(LINEAR_TEACHER)}_{other}"
    jobs[("predict", inst)] = PredictJob(
        **task_params(alt, "predict", inst), teacher=LINEAR_TEACHER, r_star=tuple(s["r_star"]),
        S=tuple(s["S"]), seeds=s["seeds"], mixer_inputs=s["mixer_inputs"], chunk=256)
    return jobs
