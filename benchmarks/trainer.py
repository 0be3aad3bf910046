"""Benchmark: the vectorized trainer against a Python loop of separate models, same work.

Both sides train the same M Min-IP models (same seeds, same data streams, same steps) with the
project's trainer: once as one program with a leading model axis of size M, once as M programs of
one model each. Timings are measured side by side in one run, alternating the two sides, and the
ratio (loop time / vectorized time) is written to benchmarks/results/trainer.json.

    .venv/bin/python benchmarks/trainer.py [--steps 200] [--models 8] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch

from attnrank.experiments.minip import _mse
from attnrank.models.kernel import DenseAttention, KernelAttention
from attnrank.tasks.minip import minip_targets, token_vocab
from attnrank.train import TrainConfig, train

OUT = Path(__file__).resolve().parent / "results" / "trainer.json"
VOCAB = token_vocab(8, "fixed_weight")


def make(kind: str, rank: int, seeds: list[int]) -> torch.nn.Module:
    gens = [torch.Generator().manual_seed(s) for s in seeds]
    if kind == "dense":
        return DenseAttention(8, gens)
    return KernelAttention(8, rank, gens, feature_map=kind, vocab=VOCAB)


def fit(kind: str, rank: int, seeds: list[int], steps: int, batch: int) -> torch.nn.Module:
    model = make(kind, rank, seeds)
    data = [torch.Generator().manual_seed(10_000 + s) for s in seeds]

    def batch_fn(step: int):
        ids = torch.stack([torch.randint(0, VOCAB.shape[0], (batch, 3), generator=g) for g in data])
        bits = VOCAB[ids]
        return bits, minip_targets(bits)

    train(model, batch_fn, _mse, TrainConfig(steps=steps, lr=1e-2, log_every=steps))
    return model


def bench(kind: str, rank: int, n_models: int, steps: int, batch: int, repeats: int) -> dict:
    seeds = list(range(n_models))
    vec_times, loop_times = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        together = fit(kind, rank, seeds, steps, batch)
        vec_times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        alone = [fit(kind, rank, [s], steps, batch) for s in seeds]
        loop_times.append(time.perf_counter() - t0)
    diff = max(float((pa[k] - pb[0]).detach().abs().max())
               for k, single in enumerate(alone)
               for pa, pb in zip(together.parameters(), single.parameters(), strict=True))
    vec, loop = min(vec_times), min(loop_times)
    return {"model": kind, "rank": rank, "n_models": n_models, "steps": steps, "batch": batch,
            "vectorized_s": round(vec, 3), "loop_s": round(loop, 3),
            "speedup": round(loop / vec, 2), "max_param_diff": diff}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--models", type=int, default=8)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args()
    rows = []
    for threads in a.threads:
        torch.set_num_threads(threads)
        for kind, rank, batch in (("table", 8, 64), ("table", 8, a.batch), ("mlp", 16, a.batch),
                                  ("table", 64, a.batch), ("dense", 0, a.batch)):
            row = bench(kind, rank, a.models, a.steps, batch, a.repeats) | {"threads": threads}
            print(json.dumps(row), flush=True)
            rows.append(row)
    summary = {
        "what": "vectorized trainer vs a loop of separate models on the same work (min of repeats)",
        "machine": {"processor": platform.processor() or platform.machine(),
                    "torch": torch.__version__, "cpu_count": torch.get_num_threads()},
        "min_speedup": min(r["speedup"] for r in rows),
        "median_speedup": sorted(r["speedup"] for r in rows)[len(rows) // 2],
        "goal": ">= 3x on 2 CPU cores",
        "rows": rows,
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"wrote {a.out}: min speedup {summary['min_speedup']}x, "
          f"median {summary['median_speedup']}x")


if __name__ == "__main__":
    main()
