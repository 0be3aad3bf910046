"""The second predictability grid (``entropic.scales.<scale>.predict_d32``).

Predict jobs at their own N, d, e (d = 32 at full scale) named ``<teacher>_d32``, and the
headline-β softmax teacher under each variant spectrum, ``<teacher>_d32_<spectrum>`` (reported);
their rows make the table ``entropic_predict_d32``, never mixed into ``entropic_predict``.

Kept apart from ``entropic/jobs.py`` on purpose: every Paper A training step imports that module,
and a step's code hash is its import closure, so adding the grid there would have rerun every
Paper A job; here it changes only what it adds. Standard library only.
"""

from __future__ import annotations

from typing import Any

from attnrank.entropic.jobs import (
    LINEAR,
    SOFTMAX,
    PredictJob,
    Teacher,
    entropic_teachers,
    task_params,
    teacher_name,
)

# The second predictability grid's config key and the tag of its jobs' instance names.
PREDICT_D32, D32 = "predict_d32", "d32"
# The keys of the task the second grid sets itself (the others are the entropic block's).
D32_TASK_KEYS = ("n_tokens", "d", "e", "calibration_sequences")


def is_d32(instance: str) -> bool:
    """Whether a predict job of this instance name belongs to the second grid (``<teacher>_d32``,
    ``<teacher>_d32_<spectrum>``)."""
    return D32 in instance.split("_")


def _d32_problems(ent: dict[str, Any], g: dict[str, Any], where: str) -> list[str]:
    """The cross-key problems of one scale's second predictability grid (its own N, d, e)."""
    n, d, e = int(g["n_tokens"]), int(g["d"]), int(g["e"])
    out: list[str] = []
    if e > d:
        out.append(f"{where}.e: orthonormal teacher values V* ∈ R^(d×e) need e ≤ d, got e={e}, "
                   f"d={d}")
    if not n > d:
        out.append(f"{where}.n_tokens: the debiased E2 estimator needs N > d, got N={n}, d={d}")
    bad = [r for r in g["r_star"] if r > min(n, d)]
    if bad:
        out.append(f"{where}.r_star: r* = {bad} exceeds min(N, d) = min({n}, {d}) = {min(n, d)}")
    bad = [b for b in g["betas"] if not b > 0]
    if bad:
        out.append(f"{where}.betas: β must be > 0, got {bad}")
    if not any(float(b) == float(ent["headline_beta"]) for b in g["betas"]):
        out.append(f"{where}.betas: the headline β = {ent['headline_beta']:g} "
                   f"(entropic.headline_beta) must be in the grid, got {g['betas']}")
    min_s = -(-d * d // (n * e))
    for key in ("S", "other_S"):
        bad = [s for s in g[key] if s < min_s]
        if bad:
            out.append(f"{where}.{key}: S = {bad} is smaller than the number of sequences E1 "
                       f"needs for its d² = {d * d} unknowns (S·N·e ≥ d², so S ≥ {min_s})")
    if ent["spectrum"] in g["variant_spectra"]:
        out.append(f"{where}.variant_spectra: {ent['spectrum']!r} is the grid's own spectrum "
                   "(entropic.spectrum); a variant must differ from it")
    return out


def d32_config_problems(ent: dict[str, Any]) -> list[str]:
    """Every cross-key problem of the second grid at every scale, one line each naming the key."""
    return [p for scale, g in ent["scales"].items()
            for p in _d32_problems(ent, g[PREDICT_D32], f"entropic.scales.{scale}.{PREDICT_D32}")]


def d32_jobs(config: dict[str, Any], scale: str) -> dict[tuple[str, str], PredictJob]:
    """The second predictability grid (``predict_d32``, module docstring): ("predict", instance) →
    job. The linear and the headline-β softmax teacher run at every S of ``S``; the other β and the
    headline-β teacher under each variant spectrum at ``other_S``. Checks the grid first
    (ValueError naming the key, one line per problem)."""
    problems = d32_config_problems(config["entropic"])
    if problems:
        raise ValueError("\n".join(problems))
    ent = config["entropic"] | {"seed_offset": config["seed_offset"]}
    s = ent["scales"][scale][PREDICT_D32]
    task = ent | {k: s[k] for k in D32_TASK_KEYS}
    head = float(ent["headline_beta"])
    runs = [(t, ent["spectrum"]) for t in entropic_teachers(ent, scale, PREDICT_D32).values()]
    runs += [(Teacher(SOFTMAX, head), spec) for spec in s["variant_spectra"]]
    jobs: dict[tuple[str, str], PredictJob] = {}
    for teacher, spec in runs:
        variant = spec != ent["spectrum"]
        inst = f"{teacher_name(teacher)}_{D32}" + (f"_{spec}" if variant else "")
        full = not variant and (teacher.kind == LINEAR or teacher.beta == head)
        jobs[("predict", inst)] = PredictJob(
            **task_params(task | {"spectrum": spec}, "predict", inst), teacher=teacher,
            r_star=tuple(s["r_star"]), S=tuple(s["S"] if full else s["other_S"]),
            seeds=s["seeds"], mixer_inputs=s["mixer_inputs"], chunk=256)
    return jobs
