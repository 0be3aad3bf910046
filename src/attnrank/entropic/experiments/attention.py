"""A3 attention-native rank: rank-r attention students of a linear or softmax attention teacher.

One job = one teacher kind (linear, or softmax at one β); its task instances are (r*, seed index)
and every instance trains students of every rank r as ONE vectorized program
(``AttentionStudents``, I instances × R ranks). Parameters: an ``AttentionJob``.
A job named ``<teacher>_<teacher_values>`` (the other V*) shares its draws with ``<teacher>``.
Outputs: metrics rows at every logged step (excess risk on held-out data against the clean target,
test MSE against the noisy one, and every rank estimator of the learned kernel K = W_Q W_Kᵀ) and
the final kernels (float64) beside the teachers'.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pandas as pd
import torch

from attnrank.core.control import Control, phase_of
from attnrank.core.seeding import numpy_rng, seed_indices, torch_generator
from attnrank.core.train import train
from attnrank.entropic.experiments.common import (
    chunked_errors,
    chunked_mse,
    config_columns,
    instances,
    model_labels,
    rank_metrics,
    seed_instance,
    to_tensor,
    train_config,
)
from attnrank.entropic.jobs import AttentionJob
from attnrank.entropic.models.attention import AttentionStudents
from attnrank.entropic.tasks.teachers import AttentionTeacher, attention_teacher

log = logging.getLogger("attnrank.entropic")


def make_teacher(job: AttentionJob, r_star: int, seed: int) -> AttentionTeacher:
    """The attention teacher of instance (r*, seed index) of an A3 job."""
    exp, tag = job.experiment, f"{seed_instance(job)}-rstar{r_star}"
    return attention_teacher(numpy_rng(exp, tag, seed, "teacher"), numpy_rng(exp, tag, seed, "calibration"),
                             job.teacher.kind, job.n_tokens, job.d, job.e, r_star, job.teacher.beta,
                             job.noise_var, job.calibration_sequences, job.spectrum, job.decay,
                             job.teacher_values)


def run_job(job: AttentionJob, device: torch.device, checkpoint: Control | None = None
            ) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """Train the job's students; ``checkpoint``: the job's checkpoint (resumed and saved)."""
    exp, inst_name, kind = job.experiment, job.instance, job.teacher.kind
    insts = instances(job.r_star, seed_indices(job.seeds, job.seed_offset))
    ranks = list(job.ranks)
    n = job.n_tokens
    teachers = [make_teacher(job, r_star, seed) for r_star, seed in insts]
    data = {"train": [], "test": []}
    for (r_star, seed), t in zip(insts, teachers, strict=True):
        tag = f"{seed_instance(job)}-rstar{r_star}"
        data["train"].append(t.sample(numpy_rng(exp, tag, seed, "train"), job.n_train, n))
        data["test"].append(t.sample(numpy_rng(exp, tag, seed, "test"), job.eval_sequences, n))
    x_tr = to_tensor(np.stack([d[0] for d in data["train"]]), device)
    y_tr = to_tensor(np.stack([d[2] for d in data["train"]]), device)
    x_te = to_tensor(np.stack([d[0] for d in data["test"]]), device)
    clean_te = to_tensor(np.stack([d[1] for d in data["test"]]), device)
    noisy_te = to_tensor(np.stack([d[2] for d in data["test"]]), device)
    gens = [torch_generator(exp, f"{seed_instance(job)}-rstar{r_star}", seed, f"student-r{r}")
            for r_star, seed in insts for r in ranks]
    model = AttentionStudents(len(insts), ranks, n, job.d, job.e, kind, job.init_std,
                              gens).to(device)
    taus = job.taus

    def loss_fn(mdl: AttentionStudents, batch: None) -> torch.Tensor:
        return chunked_mse(mdl, x_tr, y_tr, job.chunk)

    def evaluate(mdl: AttentionStudents, step: int) -> dict[str, torch.Tensor]:
        exc, mse = chunked_errors(mdl, x_te, clean_te, noisy_te)
        k = mdl.kernel().reshape(-1, mdl.d_in, mdl.d_in)
        return {"excess": exc, "test_mse": mse, **rank_metrics(k, taus)}

    cfg = train_config(job)
    rows = train(model, lambda step: None, loss_fn, cfg, evaluate, desc=f"{exp}/{inst_name}",
                 checkpoint=phase_of(checkpoint, "train"))
    labels = model_labels(insts, ranks)
    df = pd.DataFrame(rows)
    lab = pd.DataFrame(labels).iloc[df["model_index"].to_numpy()].reset_index(drop=True)
    df = pd.concat([lab, df.drop(columns="model_index")], axis=1)
    df.insert(0, "experiment", exp)
    df.insert(1, "teacher", kind)
    df.insert(2, "beta", float(job.teacher.beta))
    df.insert(3, "instance", inst_name)
    for k, v in config_columns(job).items():
        df[k] = v
    df["final"] = df["step"] == cfg.steps
    k_final = model.kernel().detach().double().cpu().numpy().reshape(len(labels), model.d_in, model.d_in)
    weights = {"kernel": k_final, "kernel_singular_values": np.linalg.svd(k_final, compute_uv=False),
               "teacher_kernel": np.stack([t.k_star for t in teachers]),
               "teacher_v": np.stack([t.v_star for t in teachers]),
               "teacher_c": np.array([t.c for t in teachers]),
               "model_r_star": np.array([lab["r_star"] for lab in labels]),
               "model_seed": np.array([lab["seed"] for lab in labels]),
               "model_rank": np.array([lab["rank"] for lab in labels])}
    return df, weights


def step(job: AttentionJob, device: torch.device, control: Control | None = None
         ) -> dict[str, Any]:
    """The entropic_attention_train step: the ``metrics`` table and the ``weights`` arrays."""
    metrics, weights = run_job(job, device, control)
    return {"metrics": metrics, "weights": weights}
