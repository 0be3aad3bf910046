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


MINIP_JOB_KEYS = ("experiment", "instance", "seeds", "ranks", "lr", "warmup", "log_every", "batch",
                  "steps", "eval_sequences", "feature_map", "data")
DATA_KEYS = {"random": ("n_tokens", "m", "tokens"), "witness": ("blocks", "width"),
             "pools": ("n_tokens", "m", "tokens", "train_pool", "test_pool")}


def require(params: dict[str, Any], keys: Sequence[str], where: str) -> None:
    """Refuse a job whose parameters lack a key, before any work (names the missing keys)."""
    missing = [k for k in keys if k not in params]
    if missing:
        raise ValueError(f"{where}: missing parameter(s) {', '.join(missing)} in --params")


def check_minip_job(params: dict[str, Any]) -> None:
    require(params, MINIP_JOB_KEYS, "minip job")
    kind = params["data"].get("kind")
    if kind not in DATA_KEYS:
        raise ValueError(f"minip job: data.kind must be one of {sorted(DATA_KEYS)}, got {kind!r}")
    require(params["data"], DATA_KEYS[kind], f"minip job data ({kind})")
    bad = [r for r in params["ranks"] if not isinstance(r, int) or r < 1]
    if bad:
        raise ValueError(f"minip job: ranks must be integers ≥ 1, got {bad}")


def _threads(n: int) -> None:
    import torch

    torch.set_num_threads(max(1, n))


def cmd_minip_train(a: argparse.Namespace) -> None:
    import torch

    from attnrank.experiments.minip import run_job
    from attnrank.io import write_npz, write_table
    from attnrank.train import resolve_device

    check_minip_job(a.params)
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

    require(a.params, ("experiment", "instance", "seeds", "data", "lr", "warmup", "log_every", "batch",
                       "steps", "long_steps", "beta", "eval_sequences"), "capacity job")
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


ENTROPIC_RUNNERS = {"surrogate": "entropic_surrogate", "ladder": "entropic_ladder",
                    "attention": "entropic_attention"}


def cmd_entropic_train(a: argparse.Namespace) -> None:
    import importlib

    import torch

    from attnrank.io import write_npz, write_table
    from attnrank.train import resolve_device

    _threads(a.threads)
    device = resolve_device(a.device)
    exp = a.params.get("experiment")
    if exp not in ENTROPIC_RUNNERS:
        raise ValueError(f"params.experiment must be one of {sorted(ENTROPIC_RUNNERS)}, got {exp!r}")
    run = Run(a.rule, a.params, [], a.wildcards)
    log.info("entropic %s/%s on %s", exp, a.params.get("instance"), device)
    module = importlib.import_module(f"attnrank.experiments.{ENTROPIC_RUNNERS[exp]}")
    metrics, weights = module.run_job(a.params, device)
    write_table(metrics, a.metrics)
    write_npz(weights, a.weights)
    dev = str(device) if device.type == "cpu" else torch.cuda.get_device_name(device)
    run.finish([a.metrics, a.weights], device=dev,
               seed={"scheme": "(experiment, task instance, seed index, role)", "experiment": exp,
                     "instance": a.params.get("instance"), "seeds": a.params.get("seeds")})


def cmd_entropic_predict(a: argparse.Namespace) -> None:
    from attnrank.experiments.entropic_predict import run_job
    from attnrank.io import write_npz, write_table

    _threads(a.threads)
    run = Run(a.rule, a.params, [], a.wildcards)
    table, spectra = run_job(a.params)
    write_table(table, a.out)
    write_npz(spectra, a.spectra)
    run.finish([a.out, a.spectra], device="cpu",
               seed={"scheme": "(experiment, task instance, seed index, role)",
                     "experiment": a.params.get("experiment"), "instance": a.params.get("instance"),
                     "seeds": a.params.get("seeds")})


def cmd_entropic_table(a: argparse.Namespace) -> None:
    import pandas as pd

    from attnrank.io import read_table, write_table

    run = Run(a.rule, a.params, a.inputs, a.wildcards)
    df = pd.concat([read_table(p) for p in a.inputs], ignore_index=True)
    if a.select != "all":
        df = df[df[a.select]]
    if a.max_rank_only:
        df = df[df["rank"] == df["rank"].max()]
    write_table(df.reset_index(drop=True), a.out)
    run.finish([a.out])


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


def cmd_reference(a: argparse.Namespace) -> None:
    from attnrank.reference import publish_reference

    copied = publish_reference(a.run, a.dest)
    log.info("copied %d files (with sidecars) from %s to %s", len(copied), a.run, a.dest)


def _training(p: argparse.ArgumentParser, weights: bool = True) -> None:
    """Outputs and device options shared by the training commands."""
    p.add_argument("--metrics", required=True, help="output metrics table (.parquet)")
    if weights:
        p.add_argument("--weights", required=True, help="output final weights (.npz)")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    p.add_argument("--threads", type=int, default=1)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m attnrank", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("minip-train", help="train one Min-IP task instance (all ranks × seeds)")
    _common(p)
    _training(p)
    p.set_defaults(func=cmd_minip_train)

    p = sub.add_parser("minip-capacity", help="capacity-or-optimization probe (one instance)")
    _common(p)
    _training(p, weights=False)
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

    p = sub.add_parser("entropic-train", help="Paper A: train one job (surrogate, ladder rung or "
                       "attention teacher; all ranks × seeds × r*)")
    _common(p)
    _training(p)
    p.set_defaults(func=cmd_entropic_train)

    p = sub.add_parser("entropic-predict", help="Paper A (A4): data-only rank estimators of one teacher")
    _common(p)
    p.add_argument("--out", required=True, help="output estimates table (.parquet)")
    p.add_argument("--spectra", required=True, help="output singular values (.npz)")
    p.add_argument("--threads", type=int, default=1)
    p.set_defaults(func=cmd_entropic_predict)

    p = sub.add_parser("entropic-table", help="Paper A: concatenate metrics tables, keeping some rows")
    _common(p)
    p.add_argument("--inputs", nargs="+", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--select", default="all", choices=["all", "final", "selected"],
                   help="keep every logged row, the last step, or each student's reported row")
    p.add_argument("--max-rank-only", action="store_true", help="keep only the largest student rank")
    p.set_defaults(func=cmd_entropic_table)

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
    p = sub.add_parser("reference", help="copy a finished run's tables, PNGs and claims to "
                       "results/reference/")
    p.add_argument("--run", default="results/full")
    p.add_argument("--dest", default="results/reference")
    p.set_defaults(func=cmd_reference)
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


