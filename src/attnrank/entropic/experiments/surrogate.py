"""A1 linear surrogate (B0): rank-r students Ŷ = A X V of fixed-operator teachers Y = A* X V* + E.

One job = one optimizer ("adam", or "gd": plain gradient descent from small init, early-stopped on a
held-out validation set). Its task instances are (r*, seed index); every instance trains students
of every rank r as ONE vectorized program (``SurrogateStudents``), full batch, through the exact
sufficient statistics of the training set. Teachers, data and initializations derive from
(experiment, "rstar<r*>", seed index, role), the same for both optimizers.

Parameters: a ``SurrogateJob`` (``instance`` = ``optimizer``).
Rows at every logged step: train loss; excess (held-out MSE against the clean target); test MSE
(against the noisy target); val MSE (a second held-out set, for early stopping); the exact
population excess; the Eckart–Young bound (float64, closed form); every rank estimator of the
learned A. ``selected`` marks each student's reported row: the last step for Adam, the step of
least validation MSE for GD.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pandas as pd
import torch

from attnrank.core.control import Control, phase_of
from attnrank.core.seeding import seed_indices, torch_generator
from attnrank.core.train import train
from attnrank.entropic.experiments.common import (
    config_columns,
    instances,
    make_operator_teacher,
    model_labels,
    rank_metrics,
    sample_sets,
    train_config,
)
from attnrank.entropic.jobs import GD, SurrogateJob
from attnrank.entropic.models.surrogate import SurrogateStudents, quad_stats
from attnrank.entropic.tasks.operators import eckart_young_bound

log = logging.getLogger("attnrank.entropic")


def run_job(job: SurrogateJob, device: torch.device, checkpoint: Control | None = None
            ) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """Train the job's students; ``checkpoint``: the job's checkpoint (resumed and saved)."""
    exp, optimizer = job.experiment, job.optimizer
    insts = instances(job.r_star, seed_indices(job.seeds, job.seed_offset))
    ranks = list(job.ranks)
    n, d, e = job.n_tokens, job.d, job.e
    teachers = [make_operator_teacher(job, r_star, seed) for r_star, seed in insts]
    sets = sample_sets(exp, insts, teachers, {"train": job.n_train, "test": job.eval_sequences,
                                              "val": job.eval_sequences})
    train_stats = quad_stats(sets["train"][0], sets["train"][2]).to(device)
    test_clean = quad_stats(sets["test"][0], sets["test"][1]).to(device)
    test_noisy = quad_stats(sets["test"][0], sets["test"][2]).to(device)
    val_noisy = quad_stats(sets["val"][0], sets["val"][2]).to(device)
    del sets
    gens = [torch_generator(exp, f"rstar{r_star}", seed, f"student-r{r}")
            for r_star, seed in insts for r in ranks]
    model = SurrogateStudents(len(insts), ranks, n, d, e, job.init_std, gens).to(device)
    a_star = torch.tensor(np.stack([t.a_star for t in teachers]), dtype=torch.float64, device=device)
    v_star = torch.tensor(np.stack([t.v_star for t in teachers]), dtype=torch.float64, device=device)
    taus = job.taus

    def loss_fn(mdl: SurrogateStudents, batch: None) -> torch.Tensor:
        return mdl.mse(train_stats).reshape(-1)

    def evaluate(mdl: SurrogateStudents, step: int) -> dict[str, torch.Tensor]:
        quad = mdl.quad_term(test_clean)
        excess = (quad - 2 * mdl.cross_term(test_clean) + test_clean.yy[:, None]) / test_clean.count
        test_mse = (quad - 2 * mdl.cross_term(test_noisy) + test_noisy.yy[:, None]) / test_noisy.count
        val_mse = mdl.mse(val_noisy)
        a = mdl.operator().double()
        v = mdl.v.double()
        pop = ((a**2).sum((-1, -2)) * (v**2).sum((-1, -2))
               - 2 * (a * a_star[:, None]).sum((-1, -2)) * (v * v_star[:, None]).sum((-1, -2))
               + (a_star**2).sum((-1, -2))[:, None] * (v_star**2).sum((-1, -2))[:, None]) / (n * e)
        return {"excess": excess.reshape(-1), "test_mse": test_mse.reshape(-1),
                "val_mse": val_mse.reshape(-1),
                "excess_population": pop.reshape(-1), **rank_metrics(a.reshape(-1, n, n), taus)}

    cfg = train_config(job, optimizer)
    rows = train(model, lambda step: None, loss_fn, cfg, evaluate, desc=f"{exp}/{optimizer}",
                 checkpoint=phase_of(checkpoint, "train"))
    labels = model_labels(insts, ranks)
    df = pd.DataFrame(rows)
    lab = pd.DataFrame(labels).iloc[df["model_index"].to_numpy()].reset_index(drop=True)
    df = pd.concat([lab, df], axis=1)
    bounds = {(r_star, seed, r): eckart_young_bound(t.s, t.v_star, n, r)
              for (r_star, seed), t in zip(insts, teachers, strict=True) for r in ranks}
    df["bound"] = [bounds[k] for k in zip(df["r_star"], df["seed"], df["rank"], strict=True)]
    df["final"] = df["step"] == cfg.steps
    if optimizer == GD:
        best = df.loc[df.groupby("model_index")["val_mse"].idxmin()]
        df["selected"] = df.index.isin(best.index)
        stop = best.set_index("model_index")["step"]
        df["early_stopped_step"] = df["model_index"].map(stop).to_numpy()
    else:
        df["selected"] = df["final"]
        df["early_stopped_step"] = cfg.steps
    df = df.drop(columns="model_index")
    df.insert(0, "experiment", exp)
    df.insert(1, "optimizer", optimizer)
    for k, v in config_columns(job).items():
        df[k] = v
    a_final = model.operator().detach().double().cpu().numpy().reshape(len(labels), n, n)
    weights = {"operator": a_final, "operator_singular_values": np.linalg.svd(a_final, compute_uv=False),
               "v": model.v.detach().double().cpu().numpy().reshape(len(labels), d, e),
               "teacher_operator": a_star.cpu().numpy(), "teacher_v": v_star.cpu().numpy(),
               "model_r_star": np.array([lab["r_star"] for lab in labels]),
               "model_seed": np.array([lab["seed"] for lab in labels]),
               "model_rank": np.array([lab["rank"] for lab in labels])}
    return df, weights


def step(job: SurrogateJob, device: torch.device, control: Control | None = None
         ) -> dict[str, Any]:
    """The entropic_surrogate_train step: the ``metrics`` table and the ``weights`` arrays."""
    metrics, weights = run_job(job, device, control)
    return {"metrics": metrics, "weights": weights}
