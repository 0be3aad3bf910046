"""Collect the benchmarks into benchmarks/results/summary.json (the source of README's time table).

Reads benchmarks/results/trainer.json (`benchmarks/trainer.py`) and the whole-pipeline wall-time
records benchmarks/results/pipeline_{smoke,full}_wall.json and
pipeline_full_without_minip_beyond_train_wall.json (`benchmarks/pipeline_wall.py`; a missing one
is null in the summary, never estimated), and where present cores.json (`benchmarks/cores.py`),
peer_step.json (`benchmarks/peer_step.py`) and step_events.json (`benchmarks/step_events.py`).
Keys: full_wall_s, smoke_wall_s, trainer_ratio (family → loop / vectorized), trainer_gflops
(family → GFLOP/s), matmul_gflops, trainer_max_param_diff, machine (cores, cpu_model, torch,
python), date, targets, runs, and cores, peer_step, step_events.

    .venv/bin/python benchmarks/summary.py
    .venv/bin/python -m attnrank readme-times --readme docs/performance.md   # the tables from it
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path

from attnrank.publish.readme import build_summary

RESULTS = Path(__file__).resolve().parent / "results"


def _load(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.exists() else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--out", type=Path, default=None, help="default: <results>/summary.json")
    a = ap.parse_args(argv)
    trainer = _load(a.results / "trainer.json")
    if trainer is None or "families" not in trainer:
        raise SystemExit(f"{a.results / 'trainer.json'}: missing or from the old benchmark; "
                         "run benchmarks/trainer.py first")
    summary = build_summary(
        trainer, _load(a.results / "pipeline_smoke_wall.json"),
        _load(a.results / "pipeline_full_wall.json"),
        datetime.now(UTC).isoformat(timespec="seconds"),
        cores=_load(a.results / "cores.json"), peer=_load(a.results / "peer_step.json"),
        events=_load(a.results / "step_events.json"),
        without_beyond=_load(a.results / "pipeline_full_without_minip_beyond_train_wall.json"))
    out = a.out or a.results / "summary.json"
    out.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"wrote {out}: smoke {summary['smoke_wall_s']} s, full {summary['full_wall_s']} s, "
          f"trainer ratios {summary['trainer_ratio']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
