"""The vectorized multi-model trainer.

Many small models with a leading model axis M train as ONE program: a single module whose
parameters have shape (M, ...), a per-model loss vector L (M,), and one optimizer on the sum
Σ_k L_k. Because the models share no parameters, ∂(Σ_k L_k)/∂θ_k = ∂L_k/∂θ_k, and Adam (and plain
GD) act element-wise, so each model follows exactly the trajectory it would follow alone (up to
float rounding of batched kernels). Models of different shapes (e.g. feature rank) are separate
groups, each its own program: nothing is padded to the largest rank.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from attnrank.core import optim
from attnrank.core.control import NoProgress, Phase

log = logging.getLogger("attnrank.core.train")

OPTIMIZERS = ("adam", "gd")


@dataclass(frozen=True)
class TrainConfig:
    """steps: optimizer steps; lr: peak learning rate; warmup: steps (int ≥ 1) or fraction (< 1)
    of steps with a linear ramp from 0; then cosine decay to 0 (``schedule="cosine"``) or constant
    (``schedule="constant"``). ``log_every``: steps between logged rows (the last step is always
    logged)."""

    steps: int
    lr: float
    warmup: float = 0.05
    schedule: str = "cosine"
    optimizer: str = "adam"
    log_every: int = 500

    def __post_init__(self) -> None:
        if self.steps < 1:
            raise ValueError(f"steps must be ≥ 1, got {self.steps}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}")
        if self.schedule not in ("cosine", "constant"):
            raise ValueError(f"schedule must be 'cosine' or 'constant', got {self.schedule!r}")

    @property
    def warmup_steps(self) -> int:
        return int(round(self.warmup * self.steps)) if self.warmup < 1 else int(self.warmup)

    def lr_factor(self, step: int) -> float:
        """Multiplier of the peak lr at optimizer step ``step`` (0-based)."""
        w = self.warmup_steps
        if step < w:
            return (step + 1) / w
        if self.schedule == "constant":
            return 1.0
        progress = (step - w) / max(1, self.steps - w)
        return 0.5 * (1.0 + math.cos(math.pi * progress))


def log_cadence(logged: tuple[int, ...], steps: int) -> int:
    """The ``TrainConfig.log_every`` that reaches every step of ``logged`` in a run of ``steps``
    steps (the trainer logs every multiple of log_every and the last step, so the last needs no
    cadence):

        log_every = gcd{t ∈ logged : t ≠ steps}   (gcd(0, a) = a),   or ``steps`` when that gcd
        is 0 (no logged step but 0 and the last).

    The caller drops the rows of cadence steps it does not log."""
    return math.gcd(*(t for t in logged if t != steps)) or steps


@dataclass(frozen=True)
class Stream:
    """A training stream: ``stream(step)`` → the batch of that step, drawn from ``generators``
    (their states are what a checkpoint keeps of the stream; none for a fixed batch)."""

    fn: Callable[[int], Any]
    generators: tuple[torch.Generator, ...] = ()

    def __call__(self, step: int) -> Any:
        return self.fn(step)


def resolve_device(device: str) -> torch.device:
    """'auto' → CUDA when visible, else CPU; 'cuda' without a GPU is an error."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("--device cuda was asked for, but no CUDA device is visible")
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be auto, cpu or cuda, got {device!r}")
    return torch.device(device)


def train(model: nn.Module, batch_fn: Callable[[int], Any],
          loss_fn: Callable[[nn.Module, Any], torch.Tensor], cfg: TrainConfig,
          evaluate: Callable[[nn.Module, int], dict[str, torch.Tensor]] | None = None,
          desc: str = "", checkpoint: Phase | None = None) -> list[dict[str, Any]]:
    """Train all M models of ``model`` together.

    batch_fn(step) → the batch for that step (its leading axis is the model axis);
    loss_fn(model, batch) → per-model losses, shape (M,);
    evaluate(model, step) → dict of per-model metrics, each shape (M,), called at logged steps;
    checkpoint: this call's phase of the job's checkpoint (``attnrank.core.control.Phase``, passed
    in by the pipeline): a saved state is resumed (model, optimizer, logged rows, the
    stream's generators, extra state), the state is saved when ``checkpoint.due``, and progress
    lines go to ``checkpoint.progress``; the rows and weights are the same bytes as without it.
    Returns tidy rows: one per (logged step, model index) with ``train_loss`` and the metrics.
    """
    params = [p for p in model.parameters() if p.requires_grad]
    # fused Adam is element-wise like the reference loop and the fastest on CPU and CUDA
    opt = optim.make(cfg.optimizer, params)
    rows: list[dict[str, Any]] = []
    start = 0
    saved = checkpoint.saved() if checkpoint is not None else None
    if saved is not None:
        model.load_state_dict(saved["model"])
        opt.load_state_dict(saved["optimizer"])
        rows, start = list(saved["rows"]), int(saved["step"])
        log.info("%s resumed at step %d/%d from its checkpoint", desc, start, cfg.steps)
    t0 = time.perf_counter()
    last_report = t0
    progress = NoProgress() if checkpoint is None else checkpoint.progress(desc, cfg.steps, start)
    for step in range(start, cfg.steps):
        batch = batch_fn(step)
        losses = loss_fn(model, batch)
        if losses.ndim != 1:
            raise ValueError(f"loss_fn must return per-model losses (M,), got {tuple(losses.shape)}")
        opt.zero_grad()
        losses.sum().backward()
        opt.step(cfg.lr * cfg.lr_factor(step))
        done = step + 1
        progress.update(done, lambda losses=losses: float(losses.detach().mean()))
        if done % cfg.log_every == 0 or done == cfg.steps:
            metrics = {"train_loss": losses.detach()}
            if evaluate is not None:
                model.eval()
                with torch.no_grad():
                    metrics.update(evaluate(model, done))
                model.train()
            cpu = {k: v.detach().double().cpu().numpy() for k, v in metrics.items()}
            for k in range(losses.shape[0]):
                rows.append({"step": done, "model_index": k,
                             **{name: float(val[k]) for name, val in cpu.items()}})
            if not all(bool(torch.isfinite(v).all()) for v in metrics.values()):
                raise FloatingPointError(f"{desc}: non-finite loss or metric at step {done}")
            now = time.perf_counter()
            if now - last_report > 5 or done == cfg.steps:
                rate = (done - start) / (now - t0)
                log.info("%s step %d/%d  mean loss %.4g  %.0f steps/s", desc, done, cfg.steps,
                         float(losses.detach().mean()), rate)
                last_report = now
        if checkpoint is not None and checkpoint.due(done, cfg.steps):
            checkpoint.record(done, model.state_dict(), opt.state_dict(), rows)
    return rows
