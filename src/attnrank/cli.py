"""Command-line entry points: argument parsing only; every command calls the package modules.

Each Snakemake rule runs exactly one of these commands, so every step can be rerun by hand with
the same arguments (see a sidecar's "command" field).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from typing import Any

from attnrank.provenance import Run

log = logging.getLogger("attnrank")


def _json(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise argparse.ArgumentTypeError(f"not valid JSON: {err}") from err
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("expected a JSON object")
    return value


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--params", type=_json, default={}, help="resolved parameters (JSON object)")
    p.add_argument("--rule", default="manual", help="the Snakemake rule (for provenance)")
    p.add_argument("--wildcards", type=_json, default={}, help="wildcards (JSON, provenance)")


def _threads(n: int) -> None:
    import torch

    torch.set_num_threads(max(1, n))


def cmd_minip_train(a: argparse.Namespace) -> None:
    import torch

    from attnrank.experiments.minip import run_job
    from attnrank.io import write_npz, write_table
    from attnrank.train import resolve_device

    _threads(a.threads)
    device = resolve_device(a.device)
    run = Run(a.rule, a.params, [], a.wildcards)
    log.info("minip %s/%s on %s", a.params.get("experiment"), a.params.get("instance"), device)
    metrics, weights = run_job(a.params, device)
    write_table(metrics, a.metrics)
    write_npz(weights, a.weights)
    dev = str(device) if device.type == "cpu" else torch.cuda.get_device_name(device)
    run.finish([a.metrics, a.weights], device=dev,
               seed={"scheme": "(experiment, instance, seed index, role)",
                     "experiment": a.params.get("experiment"),
                     "instance": a.params.get("instance"), "seeds": a.params.get("seeds")})


def cmd_minip_capacity(a: argparse.Namespace) -> None:
    from attnrank.experiments.minip_capacity import run_capacity
    from attnrank.io import write_table
    from attnrank.train import resolve_device

    _threads(a.threads)
    device = resolve_device(a.device)
    run = Run(a.rule, a.params, [], a.wildcards)
    write_table(run_capacity(a.params, device), a.metrics)
    run.finish([a.metrics], device=str(device),
               seed={"experiment": a.params.get("experiment"), "instance": a.params.get("instance"),
                     "seeds": a.params.get("seeds")})


def cmd_minip_constructions(a: argparse.Namespace) -> None:
    from attnrank.experiments.minip_constructions import run_constructions
    from attnrank.io import write_table

    _threads(a.threads)
    run = Run(a.rule, a.params, [], a.wildcards)
    write_table(run_constructions(a.params), a.out)
    run.finish([a.out], device="cpu", seed={"experiment": "constructions"})


def cmd_minip_table(a: argparse.Namespace) -> None:
    import pandas as pd

    from attnrank.io import read_table, write_table

    run = Run(a.rule, a.params, a.inputs, a.wildcards)
    df = pd.concat([read_table(p) for p in a.inputs], ignore_index=True)
    if not a.all_steps:
        df = df[df["final"]].reset_index(drop=True)
    write_table(df, a.out)
    run.finish([a.out])


def cmd_minip_information_bound(a: argparse.Namespace) -> None:
    import pandas as pd

    from attnrank.experiments.minip_constructions import information_bound
    from attnrank.io import read_table, write_table

    run = Run(a.rule, a.params, a.inputs, a.wildcards)
    df = information_bound(pd.concat([read_table(p) for p in a.inputs], ignore_index=True),
                           float_bits=int(a.params.get("float_bits", 32)))
    write_table(df, a.out)
    write_table(df, a.csv)
    run.finish([a.out, a.csv])


def cmd_figure(a: argparse.Namespace) -> None:
    from attnrank.figures import draw

    run = Run(a.rule, a.params, a.inputs, a.wildcards)
    outs = draw(a.name, a.inputs, a.out, a.params)
    run.finish(outs)


def cmd_claims(a: argparse.Namespace) -> None:
    from attnrank.claims import evaluate_claims, write_claims

    run = Run(a.rule, a.params, a.inputs, a.wildcards)
    table = evaluate_claims(a.inputs, a.params)
    outs = write_claims(table, a.md, a.csv, a.params.get("scale", "?"))
    run.finish(outs)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m attnrank", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("minip-train", help="train one Min-IP task instance (all ranks × seeds)")
    _common(p)
    p.add_argument("--metrics", required=True, help="output metrics table (.parquet)")
    p.add_argument("--weights", required=True, help="output final weights (.npz)")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    p.add_argument("--threads", type=int, default=1)
    p.set_defaults(func=cmd_minip_train)

    p = sub.add_parser("minip-capacity", help="capacity-or-optimization probe (one instance)")
    _common(p)
    p.add_argument("--metrics", required=True, help="output metrics table (.parquet)")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    p.add_argument("--threads", type=int, default=1)
    p.set_defaults(func=cmd_minip_capacity)

    p = sub.add_parser("minip-constructions", help="evaluate the hand-built constructions")
    _common(p)
    p.add_argument("--out", required=True)
    p.add_argument("--threads", type=int, default=1)
    p.set_defaults(func=cmd_minip_constructions)

    p = sub.add_parser("minip-table", help="final rows of several metrics tables, concatenated")
    _common(p)
    p.add_argument("--all-steps", action="store_true", help="keep every logged step, not only the final")
    p.add_argument("--inputs", nargs="+", required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_minip_table)

    p = sub.add_parser("minip-information-bound", help="B5 transcript bound table")
    _common(p)
    p.add_argument("--inputs", nargs="+", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--csv", required=True)
    p.set_defaults(func=cmd_minip_information_bound)

    p = sub.add_parser("figure", help="draw one figure (PDF + PNG) from tables")
    _common(p)
    p.add_argument("name")
    p.add_argument("--inputs", nargs="+", required=True)
    p.add_argument("--out", required=True, help="the .pdf path; the .png goes beside it")
    p.set_defaults(func=cmd_figure)

    p = sub.add_parser("claims", help="evaluate every paper claim on the result tables")
    _common(p)
    p.add_argument("--inputs", nargs="+", required=True)
    p.add_argument("--md", required=True)
    p.add_argument("--csv", required=True)
    p.set_defaults(func=cmd_claims)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s", stream=sys.stderr)
    try:
        args.func(args)
    except (ValueError, FileNotFoundError, RuntimeError, ArithmeticError) as err:
        log.error("%s", err)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


