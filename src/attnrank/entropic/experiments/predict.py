"""A4 data-only predictability: estimate r* of attention teachers from (X, Y), without training.

One job = one teacher kind (linear, or softmax at one β). For every task instance (r*, seed index)
one stream of S_max sequences is drawn; E1, E2 and the debiased E2 are read off at every S of the
grid as nested prefixes of that stream, and the realized mixer is averaged over its own inputs.
Parameters: a ``PredictJob``.
A job named ``<teacher>_<teacher_values>`` (the other V*) shares its draws with ``<teacher>``.
Rows: one per (r*, seed, S, estimator) with every rank estimator of the estimator's matrix; for
the mixer, S is the number of inputs it is averaged over. E2 (tensor unfolding) runs only where its
regression has at most ``E2_MAX_FEATURES`` features (d = 16: 2,176; d = 32: 16,896, not run, see
``entropic.predict``); the other estimators run at every d.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from attnrank.core.seeding import numpy_rng, seed_indices
from attnrank.entropic.experiments.common import config_columns, seed_instance
from attnrank.entropic.jobs import E1, E2, E2_DEBIASED, MIXER, PredictJob
from attnrank.entropic.predict import (
    chunk_stats,
    e1_solve,
    e2_debiased_spectrum,
    e2_runs,
    e2_unfolding,
    estimates,
    mixer_estimates,
    prefix_stats,
)
from attnrank.entropic.tasks.teachers import AttentionTeacher, attention_teacher

log = logging.getLogger("attnrank.entropic")


def job_teacher(job: PredictJob, r_star: int, seed: int) -> AttentionTeacher:
    """The teacher of task instance (r*, seed index) of ``job``, from its seeded roles."""
    tag = f"{seed_instance(job)}-rstar{r_star}"
    return attention_teacher(numpy_rng(job.experiment, tag, seed, "teacher"),
                             numpy_rng(job.experiment, tag, seed, "calibration"), job.teacher.kind,
                             job.n_tokens, job.d, job.e, r_star, float(job.teacher.beta),
                             job.noise_var, job.calibration_sequences, job.spectrum, job.decay,
                             job.teacher_values)


def run_job(job: PredictJob) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    exp, inst = job.experiment, job.instance
    n, d = job.n_tokens, job.d
    sizes = sorted(job.S)
    taus, chunk = job.taus, job.chunk
    kind, beta = job.teacher.kind, float(job.teacher.beta)
    with_e2 = e2_runs(d)  # E2's regression is too large beyond E2_MAX_FEATURES (d = 32: skipped)
    rows, spectra = [], {}
    # one stream of S_max sequences per instance, drawn into the same buffers every time
    x, y = np.empty((sizes[-1], n, d)), np.empty((sizes[-1], n, job.e))
    for r_star in job.r_star:
        for seed in seed_indices(job.seeds, job.seed_offset):
            tag = f"{seed_instance(job)}-rstar{r_star}"
            t = job_teacher(job, r_star, seed)
            t.sample_into(numpy_rng(exp, tag, seed, "data"), x, y)
            # every estimator's statistics in one pass over the stream, at every prefix S
            per_s = prefix_stats(partial(chunk_stats, v=t.v_star, with_e2=with_e2), (x, y), sizes,
                                 chunk)
            for s_ in sizes:
                st = per_s[s_]
                spec = {E1: np.linalg.svd(e1_solve(*st[E1]), compute_uv=False)}
                if with_e2:
                    spec[E2] = np.linalg.svd(e2_unfolding(*st[E2], d), compute_uv=False)
                spec[E2_DEBIASED] = e2_debiased_spectrum(st[E2_DEBIASED])
                for name, sv in spec.items():
                    spectra[f"{name}/rstar{r_star}/seed{seed}/S{s_}"] = sv
                    rows.append({"estimator": name, "r_star": r_star, "seed": seed, "S": s_,
                                 **{k: float(v) for k, v in estimates(sv, taus).items()}})
            xm = numpy_rng(exp, tag, seed, "mixer").standard_normal((job.mixer_inputs, n, d))
            rows.append({"estimator": MIXER, "r_star": r_star, "seed": seed, "S": job.mixer_inputs,
                         **mixer_estimates(t.mixer(xm), taus)})
            log.info("%s/%s r*=%d seed %d done", exp, inst, r_star, seed)
    df = pd.DataFrame(rows)
    df.insert(0, "experiment", exp)
    df.insert(1, "teacher", kind)
    df.insert(2, "beta", beta)
    df.insert(3, "instance", inst)
    for k, v in config_columns(job).items():
        df[k] = v
    return df, spectra


def step(job: PredictJob) -> dict[str, Any]:
    """The entropic_predict step: the estimates table (``out``) and the ``spectra`` arrays."""
    table, spectra = run_job(job)
    return {"out": table, "spectra": spectra}
