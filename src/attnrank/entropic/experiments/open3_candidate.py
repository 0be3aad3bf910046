"""OPEN-3's candidate (docs/methods.md §2.9) on every predict job it judges: the centred debiased
E2 (``E2_centred``) and its floor rank, at every S of each job's grid.

One job per scale (``Open3CandidateJob``). For each predict job and task instance (r*, seed index)
the job's own stream is drawn again, from the same seeded roles as ``experiments.predict`` (the
teacher from (predict, ``<instance tag>-rstar<r*>``, seed, teacher / calibration), the sequences
from its ``data`` role): so each row reads the very sequences the other estimators of that job
read. Rows: one per (job, r*, seed, S), estimator ``E2_centred``, every rank estimator of its
singular values, its floor rank, Ê and V̂, and the job's config values.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pandas as pd

from attnrank.core.seeding import numpy_rng, seed_indices
from attnrank.entropic.jobs import PredictJob
from attnrank.entropic.open3.candidate import (
    centred_eigenvalues,
    centred_stats,
    energies,
    floor_rank,
)
from attnrank.entropic.open3.jobs import (
    E2_CENTRED,
    FIT_ENERGY,
    FLOOR_RANK,
    SIGNAL_VARIANCE,
    Open3CandidateJob,
)
from attnrank.entropic.predict import estimates, prefix_stats
from attnrank.entropic.tasks.teachers import AttentionTeacher, attention_teacher

log = logging.getLogger("attnrank.entropic")


def instance_tag(job: PredictJob, r_star: int) -> str:
    """The tag a predict job's draws of instance r* are keyed by: its instance name without the
    suffix ``_<teacher_values>`` (an extra job under the other V* shares its twin's draws), then
    ``-rstar<r*>`` (as ``experiments.predict``)."""
    return f"{job.instance.removesuffix(f'_{job.teacher_values}')}-rstar{r_star}"


def predict_teacher(job: PredictJob, r_star: int, seed: int) -> AttentionTeacher:
    """The teacher of task instance (r*, seed index) of a predict job: the same object
    ``experiments.predict`` draws."""
    tag = instance_tag(job, r_star)
    return attention_teacher(numpy_rng(job.experiment, tag, seed, "teacher"),
                             numpy_rng(job.experiment, tag, seed, "calibration"), job.teacher.kind,
                             job.n_tokens, job.d, job.e, r_star, float(job.teacher.beta),
                             job.noise_var, job.calibration_sequences, job.spectrum, job.decay,
                             job.teacher_values)


def candidate_rows(job: PredictJob, noise_floor: float) -> list[dict[str, Any]]:
    """The candidate's rows of one predict job: every (r*, seed, S) of its grid."""
    sizes = sorted(job.S)
    x, y = np.empty((sizes[-1], job.n_tokens, job.d)), np.empty((sizes[-1], job.n_tokens, job.e))
    rows = []
    for r_star in job.r_star:
        for seed in seed_indices(job.seeds, job.seed_offset):
            t = predict_teacher(job, r_star, seed)
            t.sample_into(numpy_rng(job.experiment, instance_tag(job, r_star), seed, "data"), x, y)
            for s_, st in prefix_stats(centred_stats, (x, y), sizes, job.chunk).items():
                lam = centred_eigenvalues(st)
                fit, var = energies(st)
                sv = np.sqrt(lam)
                rows.append({"estimator": E2_CENTRED, "r_star": r_star, "seed": seed, "S": s_,
                             **{k: float(v) for k, v in estimates(sv, job.taus).items()},
                             FLOOR_RANK: float(floor_rank(lam, fit, var, noise_floor)),
                             FIT_ENERGY: fit, SIGNAL_VARIANCE: var})
        log.info("open3 candidate %s r*=%d done", job.instance, r_star)
    return rows


def run_job(job: Open3CandidateJob) -> pd.DataFrame:
    """Every predict job's candidate rows, in the job's order, with the predict job's columns."""
    frames = []
    for p in job.predict:
        df = pd.DataFrame(candidate_rows(p, job.noise_floor))
        df.insert(0, "experiment", p.experiment)
        df.insert(1, "teacher", p.teacher.kind)
        df.insert(2, "beta", float(p.teacher.beta))
        df.insert(3, "instance", p.instance)
        for k in ("n_tokens", "d", "e", "noise_var", "spectrum", "teacher_values"):
            df[k] = getattr(p, k)
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def step(job: Open3CandidateJob) -> dict[str, Any]:
    """The entropic_open3_candidate step: the candidate's table (``out``)."""
    return {"out": run_job(job)}
