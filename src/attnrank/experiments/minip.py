"""Paper B jobs: train every kernel-attention rank group (and dense) of one Min-IP task instance.

A job's parameters (one JSON object, resolved by the workflow from config.yaml) are:
    experiment, instance          names used in the seed scheme and the tables
    data: {"kind": "random", "n_tokens", "m", "tokens"} |
          {"kind": "witness", "blocks", "width"} |
          {"kind": "pools", "n_tokens", "m", "tokens", "train_pool", "test_pool", "share_tokens"}
    feature_map, feature, hidden  the kernel heads' feature map
    ranks, seeds, dense           the models: kernel rank groups, seed count, dense baseline on/off
    batch (0 = full batch), steps, lr, warmup, log_every, eval_sequences
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import torch

from attnrank.models.kernel import DenseAttention, KernelAttention, MinIPHead
from attnrank.seeding import torch_generator
from attnrank.tasks.minip import (
    MAX_VOCAB_BITS,
    disjoint_pools,
    minip_targets,
    sample_sequences,
    token_vocab,
    witness_family,
)
from attnrank.train import TrainConfig, train

log = logging.getLogger("attnrank.minip")


def sequence_metrics(pred: torch.Tensor, target: torch.Tensor) -> dict[str, torch.Tensor]:
    """Per-model metrics of predictions (M, B, N) against integer targets (M, B, N).

    position_error: fraction of positions with round(ŷ) ≠ t; sequence_accuracy: fraction of
    sequences with every position right; worst_case_error: max |ŷ − t|; mse: mean (ŷ − t)².
    """
    wrong = torch.round(pred) != target
    err = (pred - target).abs()
    return {
        "mse": (err**2).mean(dim=(1, 2)),
        "position_error": wrong.float().mean(dim=(1, 2)),
        "sequence_accuracy": (~wrong.any(dim=2)).float().mean(dim=1),
        "worst_case_error": err.amax(dim=(1, 2)),
    }


def evaluate_in_chunks(model: MinIPHead, bits: torch.Tensor, chunk: int = 4096
                       ) -> dict[str, torch.Tensor]:
    """sequence_metrics over a large evaluation set (M, E, N, m), in chunks of sequences."""
    preds = [model(bits[:, i:i + chunk]) for i in range(0, bits.shape[1], chunk)]
    return sequence_metrics(torch.cat(preds, dim=1), minip_targets(bits))


class JobData:
    """The training stream and the evaluation sets of one job, for every seed index.

    Everything derives from (experiment, instance, seed index, role) and so is identical for every
    rank group and for the dense baseline of the same seed.
    """

    def __init__(self, params: dict[str, Any], device: torch.device) -> None:
        self.params, self.device = params, device
        self.seeds = list(range(int(params["seeds"])))
        data = params["data"]
        self.kind = data["kind"]
        exp, inst = params["experiment"], params["instance"]
        self.eval_sets: dict[str, torch.Tensor] = {}
        if self.kind == "random":
            self.n_tokens, self.m, self.tokens = data["n_tokens"], data["m"], data["tokens"]
            self.vocab = token_vocab(self.m, self.tokens) if self.m <= MAX_VOCAB_BITS else None
            gens = [torch_generator(exp, inst, s, "eval") for s in self.seeds]
            self.eval_sets["test"] = self._random(gens, int(params["eval_sequences"]))
        elif self.kind == "witness":
            fam = witness_family(data["blocks"], data["width"])
            self.n_tokens, self.m = 3, fam.shape[-1]
            self.family = fam
            self.vocab = torch.unique(fam.reshape(-1, self.m), dim=0)
            self.eval_sets["test"] = fam.expand(len(self.seeds), *fam.shape)
        elif self.kind == "pools":
            self.n_tokens, self.m, self.tokens = data["n_tokens"], data["m"], data["tokens"]
            self.vocab = token_vocab(self.m, self.tokens) if self.m <= MAX_VOCAB_BITS else None
            pools = [disjoint_pools(torch_generator(exp, inst, s, "pools"), data["train_pool"],
                                    data["test_pool"], self.n_tokens, self.m, self.tokens,
                                    share_tokens=data.get("share_tokens", True))
                     for s in self.seeds]
            self.train_pool = torch.stack([p[0] for p in pools])
            n_eval = min(int(params["eval_sequences"]), data["train_pool"])
            self.eval_sets["train"] = self.train_pool[:, :n_eval]
            self.eval_sets["test"] = torch.stack([p[1] for p in pools])
        else:
            raise ValueError(f"data.kind must be random, witness or pools, got {self.kind!r}")
        self.eval_sets = {k: v.to(device) for k, v in self.eval_sets.items()}

    def _random(self, gens: list[torch.Generator], batch: int) -> torch.Tensor:
        if self.vocab is not None:
            ids = torch.stack([torch.randint(0, self.vocab.shape[0], (batch, self.n_tokens),
                                             generator=g) for g in gens])
            return self.vocab[ids]
        return sample_sequences(gens, batch, self.n_tokens, self.m, self.tokens)

    def batch_fn(self) -> Callable[[int], tuple[torch.Tensor, torch.Tensor]]:
        """A fresh stream (same for every group): step → (bits (M, B, N, m), targets (M, B, N))."""
        p, exp, inst = self.params, self.params["experiment"], self.params["instance"]
        batch = int(p["batch"])
        dev = self.device
        if self.kind == "witness" or (self.kind == "pools" and batch == 0):
            full = (self.family.expand(len(self.seeds), *self.family.shape)
                    if self.kind == "witness" else self.train_pool).to(dev)
            fixed = (full, minip_targets(full))
            return lambda step: fixed
        if batch < 1:
            raise ValueError("batch must be ≥ 1 for random tokens (0 means full batch for "
                             "finite families)")
        gens = [torch_generator(exp, inst, s, "train") for s in self.seeds]
        if self.kind == "pools":
            pool = self.train_pool

            def pool_batch(step: int) -> tuple[torch.Tensor, torch.Tensor]:
                idx = torch.stack([torch.randint(0, pool.shape[1], (batch,), generator=g)
                                   for g in gens])
                bits = torch.gather(pool, 1, idx[:, :, None, None].expand(-1, -1, *pool.shape[2:]))
                bits = bits.to(dev)
                return bits, minip_targets(bits)
            return pool_batch

        def random_batch(step: int) -> tuple[torch.Tensor, torch.Tensor]:
            bits = self._random(gens, batch).to(dev)
            return bits, minip_targets(bits)
        return random_batch


def _mse(model: MinIPHead, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    bits, target = batch
    return ((model(bits) - target) ** 2).mean(dim=(1, 2))


def build_model(kind: str, rank: int | None, data: JobData, params: dict[str, Any],
                tag: str) -> MinIPHead:
    gens = [torch_generator(params["experiment"], params["instance"], s, tag) for s in data.seeds]
    if kind == "dense":
        return DenseAttention(data.m, gens)
    return KernelAttention(data.m, int(rank), gens, feature_map=params["feature_map"],
                           vocab=data.vocab, hidden=int(params.get("hidden", 32)),
                           feature=params.get("feature", "exp"))


def run_job(params: dict[str, Any], device: torch.device
            ) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """Train every group of the job; return (metrics rows, final weights by 'tag/param')."""
    data = JobData(params, device)
    if params["feature_map"] == "table" and data.vocab is None:
        raise ValueError(f"feature_map 'table' needs m ≤ {MAX_VOCAB_BITS}, got m={data.m}")
    cfg = TrainConfig(steps=int(params["steps"]), lr=float(params["lr"]),
                      warmup=float(params["warmup"]), log_every=int(params["log_every"]))
    groups: list[tuple[str, int | None]] = [("kernel", int(r)) for r in params["ranks"]]
    if params.get("dense", True):
        groups.append(("dense", None))
    frames, weights = [], {}
    for kind, rank in groups:
        tag = "dense" if kind == "dense" else f"kernel-r{rank}"
        model = build_model(kind, rank, data, params, tag).to(device)

        def evaluate(mdl: MinIPHead, step: int) -> dict[str, torch.Tensor]:
            out: dict[str, torch.Tensor] = {}
            for split, bits in data.eval_sets.items():
                for name, val in evaluate_in_chunks(mdl, bits).items():
                    out[f"{split}_{name}"] = val
            return out

        rows = train(model, data.batch_fn(), _mse, cfg, evaluate,
                     desc=f"{params['experiment']}/{params['instance']}/{tag}")
        df = pd.DataFrame(rows).rename(columns={"model_index": "seed"})
        df.insert(0, "model", kind)
        df.insert(1, "rank", rank if rank is not None else -1)
        frames.append(df)
        for name, val in model.state_dict().items():
            weights[f"{tag}/{name}"] = val.detach().cpu().numpy()
    out = pd.concat(frames, ignore_index=True)
    data_cfg = params["data"]
    out.insert(0, "experiment", params["experiment"])
    out.insert(1, "instance", params["instance"])
    out["n_tokens"] = data.n_tokens
    out["m"] = data.m
    out["data_kind"] = data_cfg["kind"]
    out["feature_map"] = np.where(out["model"] == "dense", "none", params["feature_map"])
    out["steps_total"] = cfg.steps
    out["batch"] = int(params["batch"])
    out["final"] = out["step"] == cfg.steps
    return out, weights
