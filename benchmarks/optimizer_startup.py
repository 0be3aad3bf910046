"""Benchmark: what a training process pays to start its optimizer, torch.optim against core.optim.

Every ``torch.optim`` optimizer imports ``torch._dynamo`` on its first parameter group and step
(compiled or not); ``attnrank.core.optim`` calls the same update functions without it. Each side
is a fresh Python process that imports torch, builds the parameters of a small model, makes the
optimizer (torch's with ``LambdaLR``, as the trainer does) and takes a few steps; the two sides
alternate ``--repeats`` times. Per side: the wall time of every process (start to exit), its
median and minimum, and whether ``torch._dynamo`` was imported; and the final parameters'
sha256, which must agree (the same updates).

    .venv/bin/python benchmarks/optimizer_startup.py    # -> benchmarks/results/optimizer_startup.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

COMMON = """
import hashlib, sys, torch
g = torch.Generator().manual_seed(0)
params = [torch.nn.Parameter(torch.randn(15, 64, 32, generator=g)),
          torch.nn.Parameter(torch.randn(15, 32, generator=g))]
factor = lambda s: min(1.0, (s + 1) / 3)
"""
SIDES = {
    "torch.optim": COMMON + """
opt = torch.optim.Adam(params, lr=0.01, fused=True)
sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
for step in range(5):
    opt.zero_grad(set_to_none=True)
    sum((p ** 2).sum() for p in params).backward()
    opt.step()
    sched.step()
""",
    "core.optim": COMMON + """
from attnrank.core import optim
opt = optim.Adam(params)
for step in range(5):
    opt.zero_grad()
    sum((p ** 2).sum() for p in params).backward()
    opt.step(0.01 * factor(step))
""",
}
REPORT = """
digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in params)).hexdigest()
print("torch._dynamo" in sys.modules, digest)
"""


def run_side(code: str) -> tuple[float, bool, str]:
    """Wall seconds of one fresh process running ``code``, whether it imported dynamo, and the
    digest of its final parameters."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OMP_NUM_THREADS": "1"}
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code + REPORT], capture_output=True, text=True,
                         check=True, env=env)
    wall = time.perf_counter() - t0
    dynamo, digest = out.stdout.split()
    return wall, dynamo == "True", digest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/optimizer_startup.json")
    a = ap.parse_args(argv)
    if a.repeats < 1:
        ap.error(f"--repeats must be ≥ 1, got {a.repeats}")
    walls: dict[str, list[float]] = {name: [] for name in SIDES}
    seen: dict[str, set[tuple[bool, str]]] = {name: set() for name in SIDES}
    run_side(SIDES["core.optim"])  # warm the file cache once, unrecorded
    for i in range(a.repeats):
        for name, code in SIDES.items():
            wall, dynamo, digest = run_side(code)
            walls[name].append(round(wall, 3))
            seen[name].add((dynamo, digest))
        print(f"repeat {i + 1}/{a.repeats}: "
              + ", ".join(f"{n} {w[-1]:.2f} s" for n, w in walls.items()), flush=True)
    sides = {name: {"wall_s": w, "median_s": round(statistics.median(w), 3),
                    "min_s": min(w), "imports_dynamo": sorted({d for d, _ in seen[name]})}
             for name, w in walls.items()}
    digests = {d for s in seen.values() for _, d in s}
    record = {
        "generated": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cores": os.cpu_count(), "python": platform.python_version(),
                    "torch": __import__("torch").__version__},
        "repeats": a.repeats,
        "sides": sides,
        "saved_per_process_s": round(sides["torch.optim"]["median_s"]
                                     - sides["core.optim"]["median_s"], 3),
        "same_parameters": len(digests) == 1,
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {a.out}: {record['saved_per_process_s']} s a process saved "
          f"(median {sides['torch.optim']['median_s']} → {sides['core.optim']['median_s']} s), "
          f"same parameters: {record['same_parameters']}")
    return 0 if record["same_parameters"] else 1


if __name__ == "__main__":
    sys.exit(main())
