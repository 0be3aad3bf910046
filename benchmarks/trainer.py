"""Benchmark: the vectorized trainer against a Python loop of separate models, same work.

For every model family of the two papers (Paper A: the linear surrogate and the attention
student; Paper B: kernel attention with the ``table`` and the ``mlp`` feature map, and dense
softmax attention) both sides train the same set of models (same seeds, same initializations,
same data, same steps, the family's real loss and the project's trainer ``attnrank.core.train.train``):

* vectorized: the models grouped into programs as a real job groups them (Paper A: one program for
  all I instances x R ranks of a job; Paper B: one program per rank group, M = seeds models each);
* loop: one program per model (M = 1), one after the other.

The two sides run side by side in one process, alternating, ``--repeats`` times; the minimum of
each side is kept. Per family the result holds ratio = loop_s / vectorized_s, the largest
parameter difference between a model trained in its vectorized program and alone, and the largest
difference of their outputs on a fixed batch (equivalence: parameters the loss does not determine,
e.g. a_Q at feature rank 1, which the row normalization cancels, carry Adam-amplified rounding
noise, so the output difference is the one to read),
and the achieved GFLOP/s of both sides (FLOPs of one training step counted with
``torch.utils.flop_counter.FlopCounterMode``, times the steps; it counts matrix products
(mm/bmm/baddbmm, forward and backward) only, not element-wise work such as logsumexp, softmax or
Adam) beside the fp32 matmul rate of the same machine measured in the same run (a 2048^3 product,
same thread count). Training batches are made before the clock starts (identical tensors on both
sides), so the timing is the trainer's and the model's, not the data generator's.

Shapes come from ``config.yaml`` (``scales.full``); the model-specific part of each family is one
small ``make_*`` function returning the programs for a list of models.

    .venv/bin/python benchmarks/trainer.py                       # all families, 1 thread, CPU
    .venv/bin/python benchmarks/trainer.py --families table dense --repeats 2
    .venv/bin/python benchmarks/trainer.py --device cuda --out $OUT/trainer_cuda.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml
from torch.utils.flop_counter import FlopCounterMode

from attnrank.core.train import TrainConfig, train
from attnrank.entropic.experiments.common import chunked_mse
from attnrank.entropic.models.attention import AttentionStudents
from attnrank.entropic.models.surrogate import QuadStats, SurrogateStudents, quad_stats
from attnrank.minip.data import batch_layout, id_batch
from attnrank.minip.models import DenseAttention, KernelAttention
from attnrank.minip.program import GroupedHeads
from attnrank.minip.task import token_vocab

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "trainer.json"
FAMILIES = ("surrogate", "attention", "table", "mlp", "dense")
GOAL = 3.0


# ---------------------------------------------------------------------------------------------
# Programs and families


@dataclass
class Program:
    """One call of the trainer: a module holding len(units) models, its data and loss."""

    model: torch.nn.Module
    batch_fn: Callable[[int], Any]
    loss_fn: Callable[[torch.nn.Module, Any], torch.Tensor]
    cfg: TrainConfig
    units: list[Any]  # the models it holds, in its model-axis order
    params: Callable[[torch.nn.Module, int], list[torch.Tensor]]  # model k's own parameters
    predict: Callable[[torch.nn.Module], torch.Tensor]  # outputs on a fixed batch, (models, ...)


@dataclass
class Family:
    name: str
    units: list[Any]  # every model of one real job (or a representative part of it)
    make: Callable[[list[Any], int], list[Program]]  # (models, steps) → programs as a job groups them
    shapes: dict[str, Any]
    steps: int
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _gens(keys: Sequence[int]) -> list[torch.Generator]:
    return [torch.Generator().manual_seed(1000 + int(k)) for k in keys]


def _config() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "config.yaml").read_text())


def paper_b(name: str, device: torch.device, steps: int) -> Family:
    """Kernel attention (table at m = 8, the length-sweep job; mlp at m = 16, a rank-vs-m job) and
    dense softmax attention (m = 16): random fixed-weight tokens, N = 3, batch and seeds of the
    full scale, each batch in the layout the real job takes (``batch_layout``). Kernel units are
    (rank, seed) over the job's rank grid; dense units are seeds. The vectorized side is what
    run_job trains: every group of the job as one program (``GroupedHeads``)."""
    cfg = _config()["minip"]
    full = cfg["scales"]["full"]
    seeds, batch, n_tok = int(full["seeds"]), int(full["random"]["batch"]), 3
    ranks = [int(r) for r in full["ranks"]]
    m = 8 if name == "table" else 16
    vocab = token_vocab(m, cfg["tokens"]).to(device)
    layout = batch_layout(vocab.shape[0], batch, n_tok)
    # the token ids of every seed for every step, made once: (steps, seeds, B, N)
    gens = [torch.Generator().manual_seed(10_000 + s) for s in range(seeds)]
    ids = torch.stack([torch.stack([torch.randint(0, vocab.shape[0], (batch, n_tok), generator=g)
                                    for g in gens]) for _ in range(steps)]).to(device)
    whole = [id_batch(ids[t], vocab, layout) for t in range(steps)]
    alone = [[id_batch(ids[t, s:s + 1], vocab, layout) for t in range(steps)]
             for s in range(seeds)]
    tcfg = TrainConfig(steps=steps, lr=float(cfg["lr"]), warmup=float(cfg["warmup"]), log_every=steps)
    hidden = int(cfg["hidden"])

    def make(units: list[Any], n_steps: int) -> list[Program]:
        by_rank: dict[Any, list[int]] = {}
        for u in units:
            rank, seed = u if name != "dense" else (None, u)
            by_rank.setdefault(rank, []).append(seed)
        group_seeds = list(by_rank.values())
        if any(g != group_seeds[0] for g in group_seeds):
            raise ValueError("every group of a program holds the same seeds")
        sel = group_seeds[0]
        heads = {}
        for rank in by_rank:
            g = _gens([s + 100 * (rank or 0) for s in sel])
            heads[str(rank)] = (DenseAttention(m, g) if name == "dense" else
                                KernelAttention(m, rank, g, feature_map=name, vocab=vocab.cpu(),
                                                hidden=hidden, feature=cfg["feature"]))
        model = GroupedHeads(heads).to(device)
        stream = whole if len(sel) == seeds else alone[sel[0]]
        if len(sel) not in (1, seeds):
            raise ValueError("a program holds one seed or all of them")
        n_seeds = len(sel)

        def params(mdl: torch.nn.Module, k: int) -> list[torch.Tensor]:
            return [p[k % n_seeds] for p in mdl.heads[k // n_seeds].parameters()]

        order = [(rank, s) if name != "dense" else s for rank in by_rank for s in sel]
        return [Program(model, lambda step: stream[step], lambda mdl, b: mdl.loss(b),
                        TrainConfig(**{**tcfg.__dict__, "steps": n_steps, "log_every": n_steps}),
                        order, params, lambda mdl: mdl.predict(stream[0]))]

    units: list[Any] = list(range(seeds)) if name == "dense" else \
        [(r, s) for r in ranks for s in range(seeds)]
    shapes = {"m": m, "n_tokens": n_tok, "batch": batch, "seeds": seeds, "tokens": cfg["tokens"],
              "vocab": int(vocab.shape[0]), "layout": layout or "bits"}
    if name != "dense":
        shapes |= {"ranks": ranks, "feature": cfg["feature"]}
        shapes |= {"hidden": hidden} if name == "mlp" else {}
    notes = ("every rank group of the job as one program (G·M models), as run_job trains them"
             if name != "dense" else "one program of M = seeds dense models")
    return Family(name, units, make, shapes, steps, notes)


def paper_a(name: str, device: torch.device, steps: int, instances: int | None) -> Family:
    """The surrogate (B0) Adam job and one attention-native job (softmax teacher, β = 1): I
    instances (r* × seeds) × R ranks, full batch, shapes of the full scale."""
    cfg = _config()["entropic"]
    full = cfg["scales"]["full"]
    sub = full["surrogate" if name == "surrogate" else "attention"]
    n, d, e = int(cfg["n_tokens"]), int(cfg["d"]), int(cfg["e"])
    ranks = [int(r) for r in sub["ranks"]]
    n_inst = instances or len(sub["r_star"]) * int(full["seeds"])
    n_train = int(sub["n_train"])
    adam = cfg["adam"]
    init_std = float(adam["init_std"])
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n_inst, n_train, n, d))
    y = rng.standard_normal((n_inst, n_train, n, e))
    chunk = int(cfg.get("attention_chunk", 0))
    tcfg = dict(lr=float(adam["lr"]), warmup=float(adam["warmup"]),
                schedule=str(adam.get("schedule", "cosine")))
    if name == "surrogate":
        stats = quad_stats(x, y).to(device)
        stats_x = torch.as_tensor(x[:, :8], dtype=torch.float32, device=device)
    else:
        xt = torch.as_tensor(x, dtype=torch.float32, device=device)
        yt = torch.as_tensor(y, dtype=torch.float32, device=device)

    def make(units: list[Any], n_steps: int) -> list[Program]:
        insts = sorted({i for i, _ in units})
        rks = sorted({r for _, r in units}, key=ranks.index)
        if [(i, r) for i in insts for r in rks] != list(units):
            raise ValueError("a Paper A program holds a full instance × rank grid")
        gens = _gens([i * 1000 + r for i in insts for r in rks])
        if insts != list(range(insts[0], insts[-1] + 1)):
            raise ValueError("a Paper A program holds a contiguous range of instances")
        sl = slice(insts[0], insts[-1] + 1)  # views, no copies of the statistics or data
        if name == "surrogate":
            model = SurrogateStudents(len(insts), rks, n, d, e, init_std, gens)
            st = QuadStats(stats.g[sl], stats.h[sl], stats.yy[sl], stats.count)

            def loss_fn(mdl, batch, st=st):
                return mdl.mse(st).reshape(-1)
        else:
            model = AttentionStudents(len(insts), rks, n, d, e, "softmax", init_std, gens)
            xs, ys = xt[sl], yt[sl]

            def loss_fn(mdl, batch, xs=xs, ys=ys):
                return chunked_mse(mdl, xs, ys, chunk)

        def params(mdl: torch.nn.Module, k: int, rks=rks) -> list[torch.Tensor]:
            i, j = divmod(k, len(rks))
            r = rks[j]
            return [mdl.p[i, j, :, :r], mdl.q[i, j, :, :r], mdl.v[i, j]] if name == "surrogate" \
                else [mdl.w_q[i, j, :, :r], mdl.w_k[i, j, :, :r], mdl.v[i, j]]

        def predict(mdl: torch.nn.Module, sl=sl) -> torch.Tensor:  # on 8 training sequences
            x8 = (stats_x if name == "surrogate" else xt)[sl, :8]
            return mdl(x8).flatten(0, 1)

        cfg_ = TrainConfig(steps=n_steps, log_every=n_steps, **tcfg)
        return [Program(model.to(device), lambda step: None, loss_fn, cfg_,
                        [(i, r) for i in insts for r in rks], params, predict)]

    units = [(i, r) for i in range(n_inst) for r in ranks]
    shapes = {"instances": n_inst, "ranks": ranks, "n_tokens": n, "d": d, "e": e,
              "n_train": n_train, "models": len(units)}
    if name == "attention":
        shapes |= {"kind": "softmax", "chunk": chunk}
    notes = ("one program of I instances × R ranks, full batch through the sufficient statistics"
             if name == "surrogate" else
             "one program of I instances × R ranks, full batch in chunks of sequences")
    return Family(name, units, make, shapes, steps, notes)


# ---------------------------------------------------------------------------------------------
# Measurement


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def run_programs(progs: list[Program], device: torch.device) -> float:
    """Train each program with the project's trainer; wall seconds (programs built beforehand)."""
    _sync(device)
    t0 = time.perf_counter()
    for p in progs:
        train(p.model, p.batch_fn, p.loss_fn, p.cfg)
    _sync(device)
    return time.perf_counter() - t0


def step_flops(fam: Family) -> int:
    """Counted FLOPs (matrix products, forward + backward) of one step of every vectorized
    program of ``fam``."""
    total = 0
    for p in fam.make(fam.units, 1):
        counter = FlopCounterMode(display=False)
        with counter:
            p.loss_fn(p.model, p.batch_fn(0)).sum().backward()
        total += counter.get_total_flops()
    return int(total)


def matmul_rate(device: torch.device, n: int = 2048, repeats: int = 5) -> float:
    """fp32 GFLOP/s of an n×n×n matrix product (best of ``repeats``)."""
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    a @ b
    best = float("inf")
    for _ in range(repeats):
        _sync(device)
        t0 = time.perf_counter()
        a @ b
        _sync(device)
        best = min(best, time.perf_counter() - t0)
    return 2 * n**3 / best / 1e9


def bench(fam: Family, repeats: int, device: torch.device) -> dict[str, Any]:
    vec_times, loop_times = [], []
    vec_progs = loop_progs = None
    for rep in range(repeats):
        order = ("vec", "loop") if rep % 2 == 0 else ("loop", "vec")  # alternate who goes first
        for side in order:
            if side == "vec":
                vec_progs = fam.make(fam.units, fam.steps)
                vec_times.append(run_programs(vec_progs, device))
            else:
                loop_progs = [p for u in fam.units for p in fam.make([u], fam.steps)]
                loop_times.append(run_programs(loop_progs, device))
    # equivalence: each model trained in its vectorized program against the same model alone
    alone = {p.units[0]: p for p in loop_progs}
    diff = out_diff = 0.0
    with torch.no_grad():
        for p in vec_progs:
            outs = p.predict(p.model)
            for k, u in enumerate(p.units):
                single = alone[u]
                for a, b in zip(p.params(p.model, k), single.params(single.model, 0), strict=True):
                    diff = max(diff, float((a - b).abs().max()))
                out_diff = max(out_diff, float((outs[k] - single.predict(single.model)[0]).abs().max()))
    flops = step_flops(fam) * fam.steps
    vec, loop = min(vec_times), min(loop_times)
    return {"family": fam.name, "models": len(fam.units), "vectorized_programs": len(vec_progs),
            "loop_programs": len(loop_progs), "steps": fam.steps, "shapes": fam.shapes,
            "grouping": fam.notes,
            "vectorized_s": round(vec, 4), "loop_s": round(loop, 4),
            "vectorized_s_all": [round(t, 4) for t in vec_times],
            "loop_s_all": [round(t, 4) for t in loop_times],
            "ratio": round(loop / vec, 3), "max_param_diff": diff, "max_output_diff": out_diff,
            "counted_gflop": round(flops / 1e9, 4),
            "vectorized_gflops": round(flops / vec / 1e9, 3),
            "loop_gflops": round(flops / loop / 1e9, 3),
            "meets_goal": loop / vec >= GOAL}


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine(device: torch.device, threads: int) -> dict[str, Any]:
    info = {"cores": os.cpu_count(), "cpu_model": cpu_model(), "torch": torch.__version__,
            "python": platform.python_version(), "threads": threads, "device": str(device)}
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
    return info


def build(name: str, device: torch.device, steps: dict[str, int], instances: int | None) -> Family:
    if name in ("surrogate", "attention"):
        return paper_a(name, device, steps[name], instances)
    return paper_b(name, device, steps[name])


DEFAULT_STEPS = {"surrogate": 6, "attention": 4, "table": 30, "mlp": 30, "dense": 100}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    ap.add_argument("--steps", type=int, default=None,
                    help="steps per family (default: per family, a few seconds each)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--instances", type=int, default=None,
                    help="Paper A task instances per job (default: the full scale's r* × seeds)")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    device = torch.device(a.device)
    steps = {k: (a.steps or v) for k, v in DEFAULT_STEPS.items()}
    mm = matmul_rate(device, 8192 if device.type == "cuda" else 2048)
    print(f"fp32 matmul: {mm:.1f} GFLOP/s ({a.threads} thread(s), {device})", flush=True)
    rows = []
    for name in a.families:
        fam = build(name, device, steps, a.instances)
        # warm-up (allocator, first-call costs) on a couple of steps, not timed
        run_programs(fam.make(fam.units[:1], 2), device)
        run_programs(fam.make(fam.units, 2), device)
        row = bench(fam, a.repeats, device)
        print(json.dumps({k: v for k, v in row.items() if k not in ("shapes",)}), flush=True)
        rows.append(row)
    mm_after = matmul_rate(device, 8192 if device.type == "cuda" else 2048)
    out = {
        "what": "vectorized trainer vs a Python loop of separate single models, same work "
                "(same seeds, data, steps), alternating sides, min of repeats",
        "goal": f">= {GOAL:g}x for every family",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(device, a.threads),
        "matmul_gflops": round(max(mm, mm_after), 2),
        "matmul_gflops_before_after": [round(mm, 2), round(mm_after, 2)],
        "matmul_shape": 8192 if device.type == "cuda" else 2048,
        "flops_counted": "FlopCounterMode: matrix products forward + backward; element-wise work "
                         "(logsumexp, softmax, Adam) not counted",
        "repeats": a.repeats,
        "argv": sys.argv[1:],
        "ratio": {r["family"]: r["ratio"] for r in rows},
        "gflops": {r["family"]: r["vectorized_gflops"] for r in rows},
        "families": rows,
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {a.out}: ratio " + ", ".join(f"{k} {v}x" for k, v in out["ratio"].items())
          + f"; matmul {out['matmul_gflops']} GFLOP/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
