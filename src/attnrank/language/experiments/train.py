"""Appendix B: byte-level language models on one corpus, every seed as the model axis.

One job = one corpus (of one rung); its seeds (``seed_indices``) are the M models of ONE
vectorized program (``ByteTransformers``, trained by ``attnrank.core.train``). The job is a
``LanguageTrainJob``:
    corpora (one ``CorpusSource``, the corpus alone), max_bytes, val_fraction, corpus, rung,
    seed_offset, seeds, d_model, n_layers, n_heads, context, batch, steps, lr, warmup, log_every,
    early_log_every, early_log_until, mixer_inputs, field_windows, taus

Data: the corpus (``attnrank.language.corpora.load_source``) split into train / validation
(``split_corpus``). Seed k's batches are its own seeded stream of windows of the train split:
step t draws ``batch`` window starts uniformly from the train split (numpy rng
("language", corpus, k, "batches"); a larger rung r: ("language", r, corpus, k, "batches")); a
window of context + 1 bytes gives inputs x_1..x_T and next-byte targets x_2..x_{T+1}.
Initializations are paired across corpora: seed k starts from the same weights (torch generator
("language", "init", k); a larger rung r: ("language", "init", r, k)) on every corpus of a rung.

Validation: ``mixer_inputs`` fixed windows of the validation split, starting at evenly spaced
offsets (no randomness; the same windows for every seed and every logged step). At the logged
steps (``LanguageTrainJob.logged_steps``: step 0, every ``early_log_every`` steps up to
``early_log_until``, every ``log_every`` steps and the final step) it records (and logs a progress
line)
  * loss: train loss (the minibatch of that step, before its update; step 0: the first batch at
    initialization) and validation loss over the fixed windows, both in bits per byte;
  * ranks, per layer and head: the static kernel W_Q^h (W_K^h)ᵀ (d × d) and the realized mixer
    (causal attention T × T, averaged over the fixed windows), each through float64 singular
    values with R̃_eff (energy), entropy rank, stable rank and the numerical rank at every τ;
  * the logit field, per layer and head (``attnrank.language.field``; when ``field_windows`` > 0):
    the row-centred causal logits Ẽ of every fixed window, in the same pass; the mean field and
    the prior share over all of them; k90 and R̃_eff of Ẽ and of the residual Ẽ − mean field
    (median over ``field_windows`` evenly spaced ones), of the mean field and of the static kernel.
Outputs: the ranks table (tidy; see ``RANK_COLUMNS``), the loss table, the field table
(``FIELD_COLUMNS``; empty without field windows) and the final weights (float64, with the final
static kernels and realized mixers).

Logging draws nothing: the batches are drawn up front (``batch_starts``), the validation windows
are fixed and the model has no dropout, so the parameters at every step are the same bytes
whatever the logged steps and whether the field is measured (``tests/test_language_model.py``).
The trainer runs at the greatest common divisor of the logged steps
(``attnrank.core.train.log_cadence``) and rows of steps not logged are dropped.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any

import numpy as np
import pandas as pd
import torch

from attnrank.core.control import Control, phase_of
from attnrank.core.rank import energy_effective_rank, entropy_effective_rank, numerical_rank, stable_rank
from attnrank.core.seeding import numpy_rng, seed_indices, torch_generator
from attnrank.core.train import TrainConfig, log_cadence, train
from attnrank.language.corpora import load_source, split_corpus
from attnrank.language.field import FieldAccumulator, field_measures, field_subset
from attnrank.language.jobs import BASE_RUNG, LanguageTrainJob
from attnrank.language.models import ByteTransformers, bits_per_byte
from attnrank.language.points import ENTROPY, MATRICES, NUMERICAL, R_EFF, REALIZED, STABLE, STATIC

log = logging.getLogger("attnrank.language")

CONFIG_KEYS = ("d_model", "n_layers", "n_heads", "context", "steps")
RANK_COLUMNS = ("corpus", "rung", "seed", "step", "layer", "head", "matrix", "estimator", "tau",
                "value", *CONFIG_KEYS)
LOSS_COLUMNS = ("corpus", "rung", "seed", "step", "train_loss", "val_loss")
FIELD_COLUMNS = (*RANK_COLUMNS, "field_windows", "mixer_inputs")


def config_columns(job: LanguageTrainJob) -> dict[str, int]:
    """The ranks table's model-shape columns (``CONFIG_KEYS``, in that order) of the job."""
    return {"d_model": job.d_model, "n_layers": job.n_layers, "n_heads": job.n_heads,
            "context": job.context, "steps": job.steps}


def corpus_splits(job: LanguageTrainJob) -> tuple[np.ndarray, np.ndarray]:
    """(train, validation) bytes of the job's corpus as uint8 arrays."""
    (source,) = job.corpora
    tr, va = split_corpus(load_source(source, job.max_bytes), job.val_fraction)
    return np.frombuffer(tr, dtype=np.uint8), np.frombuffer(va, dtype=np.uint8)


def window_starts(n_bytes: int, context: int, count: int) -> np.ndarray:
    """``count`` evenly spaced starts of windows of context + 1 bytes in n_bytes bytes."""
    last = n_bytes - context - 1
    if last < 0:
        raise ValueError(f"a split of {n_bytes} bytes holds no window of context + 1 = "
                         f"{context + 1} bytes")
    return np.round(np.linspace(0, last, count)).astype(np.int64)


def windows(data: np.ndarray, starts: np.ndarray, context: int) -> np.ndarray:
    """Windows data[s : s + context + 1] for every start: starts (...,) → (..., context + 1)."""
    return data[starts[..., None] + np.arange(context + 1)]


def rung_parts(job: LanguageTrainJob) -> tuple[str, ...]:
    """The rung's part of the job's seed names: none for the appendix-B model, (rung,) else."""
    return () if job.rung == BASE_RUNG else (job.rung,)


def batch_starts(job: LanguageTrainJob, seed: int, n_train: int) -> np.ndarray:
    """Seed ``seed``'s window starts of every step: (steps, batch), uniform on the train split."""
    high = n_train - job.context  # starts 0 … n_train − context − 1
    if high < 1:
        raise ValueError(f"corpus {job.corpus!r}: its train split ({n_train} bytes) holds no "
                         f"window of context + 1 = {job.context + 1} bytes")
    rng = numpy_rng("language", *rung_parts(job), job.corpus, seed, "batches")
    return rng.integers(0, high, size=(job.steps, job.batch), dtype=np.int64)


def rank_rows(matrices: np.ndarray, taus: tuple[float, ...]) -> dict[str, np.ndarray]:
    """Every estimator of each matrix of a stack (..., n, k) from float64 singular values:
    estimator label → values (...,). Labels: r_eff, entropy, stable, numerical@τ (``points.ESTIMATORS``)."""
    s = np.linalg.svd(np.asarray(matrices, dtype=np.float64), compute_uv=False)
    out: dict[str, np.ndarray] = {R_EFF: np.asarray(energy_effective_rank(s), np.float64),
                                  ENTROPY: np.asarray(entropy_effective_rank(s), np.float64),
                                  STABLE: np.asarray(stable_rank(s), np.float64)}
    for t in taus:
        out[f"{NUMERICAL}@{t!r}"] = np.asarray(numerical_rank(s, t), np.float64)
    return out


def _tidy(step: int, seeds: list[int], values: dict[tuple[str, str, float], np.ndarray]
          ) -> pd.DataFrame:
    """Rows (seed, step, layer, head, matrix, estimator, tau, value) of one logged step from
    (matrix, estimator, tau) → values (M, L, H)."""
    frames = []
    for (matrix, estimator, tau), v in values.items():
        seed_ix, layer_ix, head_ix = np.meshgrid(np.asarray(seeds), np.arange(v.shape[1]),
                                                 np.arange(v.shape[2]), indexing="ij")
        frames.append(pd.DataFrame({
            "seed": seed_ix.ravel(), "step": step, "layer": layer_ix.ravel(),
            "head": head_ix.ravel(), "matrix": matrix, "estimator": estimator, "tau": tau,
            "value": v.ravel()}))
    return pd.concat(frames, ignore_index=True)


def tidy_ranks(step: int, seeds: list[int], static: np.ndarray, realized: np.ndarray,
               taus: tuple[float, ...]) -> pd.DataFrame:
    """Rows (seed, step, layer, head, matrix, estimator, tau, value) of one logged step; static
    (M, L, H, d, d) and realized (M, L, H, T, T)."""
    values = {}
    for matrix, mats in zip(MATRICES, (static, realized), strict=True):
        for label, v in rank_rows(mats, taus).items():
            estimator, _, tau = label.partition("@")
            values[(matrix, estimator, float(tau) if tau else math.nan)] = v
    return _tidy(step, seeds, values)


def tidy_fields(step: int, seeds: list[int], acc: FieldAccumulator, static: np.ndarray
                ) -> pd.DataFrame:
    """The field rows (seed, step, layer, head, matrix, estimator, tau (NaN), value) of one logged
    step from the windows' logit fields ``acc`` and the static kernels (M, L, H, d, d)
    (``attnrank.language.field.field_measures``)."""
    return _tidy(step, seeds, {(m, e, math.nan): v
                               for (m, e), v in field_measures(*acc.fields(), static).items()})


def run_job(job: LanguageTrainJob, device: torch.device, checkpoint: Control | None = None
            ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, dict[str, np.ndarray]]:
    """Train every seed of one corpus; returns (ranks table, loss table, field table, final
    weights). ``checkpoint``: the job's checkpoint (resumed and saved, with the rank and field
    rows logged so far)."""
    corpus, context, taus = job.corpus, job.context, job.taus
    seeds = seed_indices(job.seeds, job.seed_offset)
    train_bytes, val_bytes = corpus_splits(job)
    starts = np.stack([batch_starts(job, s, len(train_bytes)) for s in seeds])  # (M, steps, B)
    val = torch.as_tensor(windows(val_bytes, window_starts(len(val_bytes), context,
                                                           job.mixer_inputs), context),
                          dtype=torch.int64, device=device)
    val = val[None].expand(len(seeds), -1, -1)  # (M, S, T + 1): the same windows for every seed
    gens = [torch_generator("language", "init", *rung_parts(job), s) for s in seeds]
    model = ByteTransformers(job.d_model, job.n_layers, job.n_heads, context, gens).to(device)
    log.info("language/%s: %d train, %d validation bytes; %d seeds; %d parameters per model",
             corpus, len(train_bytes), len(val_bytes), len(seeds),
             sum(q[0].numel() for q in model.parameters()))

    def batch_fn(step: int) -> torch.Tensor:
        return torch.as_tensor(windows(train_bytes, starts[:, step], context), dtype=torch.int64,
                               device=device)

    last: dict[str, torch.Tensor] = {}  # the latest minibatch losses (for the progress line)

    def loss_fn(mdl: ByteTransformers, batch: torch.Tensor) -> torch.Tensor:
        last["train"] = bits_per_byte(mdl(batch[..., :-1]), batch[..., 1:])
        return last["train"]

    rank_frames: list[pd.DataFrame] = []
    field_frames: list[pd.DataFrame] = []
    subset = field_subset(job.mixer_inputs, job.field_windows) if job.field_windows else None
    t0 = time.perf_counter()

    def evaluate(mdl: ByteTransformers, step: int) -> dict[str, torch.Tensor]:
        acc = None if subset is None else FieldAccumulator(job.mixer_inputs, subset)
        val_loss, mixers = mdl.evaluate_windows(val, on_logits=None if acc is None else acc.add)
        static = mdl.static_kernels().cpu().numpy()
        realized = mixers.cpu().numpy()
        frame = tidy_ranks(step, seeds, static, realized, taus)
        rank_frames.append(frame)
        if acc is not None:
            field_frames.append(tidy_fields(step, seeds, acc, static))
        heads = frame[frame["estimator"] == R_EFF].groupby("matrix")["value"].mean()
        log.info("language/%s step %d/%d  mean train %.4f val %.4f bits/byte  mean R̃_eff static "
                 "%.3f realized %.3f  %.1f s", corpus, step, job.steps,
                 float(last["train"].mean()), float(val_loss.mean()), heads[STATIC],
                 heads[REALIZED], time.perf_counter() - t0)
        return {"val_loss": val_loss}

    with torch.no_grad():  # step 0: the initialization
        model.eval()
        train0 = loss_fn(model, batch_fn(0)).double().cpu().numpy()
        first = {"step": 0, "train_loss": train0,
                 **{k: v.cpu().numpy() for k, v in evaluate(model, 0).items()}}
        model.train()
    logged = frozenset(job.logged_steps())
    cfg = TrainConfig(steps=job.steps, lr=job.lr, warmup=job.warmup,
                      log_every=log_cadence(job.logged_steps(), job.steps))

    def evaluate_logged(mdl: ByteTransformers, step: int) -> dict[str, torch.Tensor]:
        return evaluate(mdl, step) if step in logged else {}  # a step of the cadence, not logged

    def get_frames() -> tuple[list[pd.DataFrame], list[pd.DataFrame]]:
        return list(rank_frames), list(field_frames)

    def set_frames(frames: tuple[list[pd.DataFrame], list[pd.DataFrame]]) -> None:
        rank_frames[:], field_frames[:] = frames

    rows = train(model, batch_fn, loss_fn, cfg, evaluate_logged, desc=f"language/{corpus}",
                 checkpoint=phase_of(checkpoint, "train", extra=(get_frames, set_frames)))
    rows = [r for r in rows if r["step"] in logged]
    loss = pd.DataFrame(
        [{"step": 0, "model_index": k, "train_loss": float(first["train_loss"][k]),
          "val_loss": float(first["val_loss"][k])} for k in range(len(seeds))] + rows)
    loss.insert(0, "seed", np.asarray(seeds)[loss.pop("model_index").to_numpy()])
    loss.insert(0, "rung", job.rung)
    loss.insert(0, "corpus", corpus)
    loss = loss.sort_values(["seed", "step"], kind="stable").reset_index(drop=True)

    def labelled(frames: list[pd.DataFrame], columns: tuple[str, ...]) -> pd.DataFrame:
        if not frames:
            return pd.DataFrame({c: pd.Series(dtype=float) for c in columns})
        out = pd.concat(frames, ignore_index=True)
        out.insert(0, "rung", job.rung)
        out.insert(0, "corpus", corpus)
        for k, value in {**config_columns(job), "field_windows": job.field_windows,
                         "mixer_inputs": job.mixer_inputs}.items():
            out[k] = value
        return out.sort_values(["seed", "step"], kind="stable").reset_index(drop=True)[
            list(columns)]

    weights = {name.replace(".", "_"): q.detach().double().cpu().numpy()
               for name, q in model.named_parameters()}
    weights["static_kernel"] = model.static_kernels().cpu().numpy()
    weights["realized_mixer"] = model.evaluate_windows(val)[1].cpu().numpy()
    weights["model_seed"] = np.asarray(seeds, dtype=np.int64)
    return (labelled(rank_frames, RANK_COLUMNS), loss[list(LOSS_COLUMNS)],
            labelled(field_frames, FIELD_COLUMNS), weights)


def step(job: LanguageTrainJob, device: torch.device, control: Control | None = None
         ) -> dict[str, Any]:
    """The language_train step: the ``ranks``, ``loss`` and ``field`` tables and the ``weights``
    arrays."""
    ranks, loss, field, weights = run_job(job, device, control)
    return {"ranks": ranks, "loss": loss, "field": field, "weights": weights}
