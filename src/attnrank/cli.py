"""Command-line entry points: argument parsing only; every command calls the package modules.

Each Snakemake rule runs exactly one of these commands, so every step can be rerun by hand with
the same arguments (a sidecar's "command" field holds them). A step's ``--params`` is its typed
job as JSON (the dataclasses of ``attnrank.<wing>.jobs``): unknown or missing keys are refused
before any work. A step command builds the job and hands it, with the wing's ``step`` function, to
the step runner (``attnrank.pipeline.runner``), which writes the outputs and their sidecars.

A failure caused by the input (bad --params JSON or a missing key, a missing or corrupt Parquet
table or npz archive, a table without a column the step needs, an output path that is a folder)
exits with status 2 and one line on stderr naming the path or key; -v (before the command) adds
the traceback. Any other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from attnrank.pipeline.errors import check_inputs, check_outputs, json_object, user_error
from attnrank.pipeline.runner import (
    CHECKPOINT_ENV,
    cpu_step,
    seed_record,
    set_threads,
    table_step,
    train_step,
)

log = logging.getLogger("attnrank")

PROG = "python -m attnrank"
JSON_ARGS = ("params", "wildcards")  # parsed in main(), so that -v shows where a bad one failed
OUTPUT_ARGS = ("out", "csv", "md", "html", "metrics", "weights", "summary", "spectra", "ranks",
               "loss", "json")  # every file a command writes (checked before any work)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (the usage itself is one ``--help`` away)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--params", default="{}", help="the step's resolved parameters "
                   "(its typed job as a JSON object)")
    p.add_argument("--rule", default=None, help="the Snakemake rule (provenance; default: the step)")
    p.add_argument("--wildcards", default="{}", help="wildcards (JSON object, provenance)")




def _checkpoint_every(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer ≥ 0 (0 disables), got {text!r}")
    return value


def cmd_minip_train(a: argparse.Namespace) -> None:
    from attnrank.minip.experiments.train import step
    from attnrank.minip.jobs import MinipTrainJob

    job = MinipTrainJob.from_dict(a.params)
    train_step(a, "minip_train", job, step, a.metrics,
              f"minip {job.experiment}/{job.instance}", seed_record(job))


def cmd_minip_capacity(a: argparse.Namespace) -> None:
    from attnrank.minip.experiments.capacity import step
    from attnrank.minip.jobs import MinipCapacityJob

    job = MinipCapacityJob.from_dict(a.params)
    train_step(a, "minip_capacity_train", job, step, a.metrics,
              f"minip capacity {job.instance}", seed_record(job))


def cmd_minip_constructions(a: argparse.Namespace) -> None:
    from attnrank.minip.experiments.constructions import step
    from attnrank.minip.jobs import MinipConstructionsJob

    cpu_step(a, "minip_constructions", MinipConstructionsJob.from_dict(a.params), step,
              {"experiment": "constructions"})


def cmd_minip_information_bound(a: argparse.Namespace) -> None:
    from attnrank.minip.experiments.constructions import information_bound_step
    from attnrank.minip.jobs import InformationBoundJob

    table_step(a, "minip_information_bound", InformationBoundJob.from_dict(a.params),
                information_bound_step, a.inputs)


def cmd_minip_witness_families(a: argparse.Namespace) -> None:
    from attnrank.minip.experiments.witness_families import step
    from attnrank.minip.jobs import WitnessFamiliesTableJob

    set_threads(a.threads)
    table_step(a, "minip_witness_families", WitnessFamiliesTableJob.from_dict(a.params), step,
                a.inputs)


def cmd_minip_restarts(a: argparse.Namespace) -> None:
    from attnrank.minip.experiments.restarts import step
    from attnrank.minip.jobs import MinipRestartsJob

    job = MinipRestartsJob.from_dict(a.params)
    train_step(a, "minip_restarts_train", job, step, a.metrics,
              f"minip restarts {job.case} ({job.train.experiment}/{job.train.instance} "
              f"{job.model})",
              seed_record(job.train) | {"seeds": job.seeds,
                                  "role": "the training job's init and data stream"})


def cmd_minip_beyond(a: argparse.Namespace) -> None:
    from attnrank.minip.beyond.jobs import MinipBeyondJob
    from attnrank.minip.experiments.beyond import step

    job = MinipBeyondJob.from_dict(a.params)
    train_step(a, "minip_beyond_train", job, step, a.metrics,
              f"minip {job.experiment}/{job.instance}/{'+'.join(job.families)}",
              seed_record(job.train) | {
                  "experiment": job.experiment, "instance": job.instance,
                  "role": f"init from ({job.experiment}, {job.instance}, seed, group tag); data "
                          f"from {job.train.experiment}/{job.train.instance}'s stream"})


def cmd_minip_beyond_growth(a: argparse.Namespace) -> None:
    from attnrank.minip.beyond.growth import step
    from attnrank.minip.beyond.jobs import BeyondGrowthJob

    table_step(a, "minip_beyond_growth", BeyondGrowthJob.from_dict(a.params), step, a.inputs)


def cmd_minip_restarts_tables(a: argparse.Namespace) -> None:
    from attnrank.minip.jobs import RestartsTableJob
    from attnrank.minip.restarts import step

    table_step(a, "minip_restarts_tables", RestartsTableJob.from_dict(a.params), step, a.inputs)


def cmd_entropic_train(a: argparse.Namespace) -> None:
    import importlib

    from attnrank.entropic.jobs import TRAIN_JOBS

    exp = a.params.get("experiment")
    if exp not in TRAIN_JOBS:
        raise ValueError(f"params.experiment must be one of {', '.join(TRAIN_JOBS)}, got {exp!r}")
    job = TRAIN_JOBS[exp].from_dict(a.params)
    step = importlib.import_module(f"attnrank.entropic.experiments.{exp}").step
    train_step(a, f"entropic_{exp}_train", job, step, a.metrics,
              f"entropic {exp}/{job.instance}", seed_record(job))


def cmd_entropic_predict(a: argparse.Namespace) -> None:
    from attnrank.entropic.experiments.predict import step
    from attnrank.entropic.jobs import PredictJob

    job = PredictJob.from_dict(a.params)
    cpu_step(a, "entropic_predict", job, step, seed_record(job))


def cmd_language_corpora(a: argparse.Namespace) -> None:
    from attnrank.language.experiments.corpora import step
    from attnrank.language.jobs import LanguageCorporaJob

    cpu_step(a, "language_corpora", LanguageCorporaJob.from_dict(a.params), step,
              {"scheme": "(language, corpus, builtin)"})


def cmd_language_train(a: argparse.Namespace) -> None:
    from attnrank.language.experiments.train import step
    from attnrank.language.jobs import LanguageTrainJob

    job = LanguageTrainJob.from_dict(a.params)
    train_step(a, "language_train", job, step, a.ranks, f"language {job.corpus}",
              {"scheme": "init (language, init, seed index); batches (language, corpus, "
               "seed index, batches)", "corpus": job.corpus, "seeds": job.seeds,
               "seed_offset": job.seed_offset})


def cmd_table(a: argparse.Namespace) -> None:
    from attnrank.core.table_job import TableJob
    from attnrank.core.tables import step

    table_step(a, "table", TableJob.from_dict(a.params), step, a.inputs)


def cmd_figure(a: argparse.Namespace) -> None:
    from attnrank.core.figures import draw
    from attnrank.pipeline.provenance import Run
    from attnrank.pipeline.registry import FIGURES

    if a.name not in FIGURES:
        raise ValueError(f"unknown figure {a.name!r}; registered: {', '.join(FIGURES)}")
    run = Run("figure", a.params, a.inputs, a.wildcards, rule=a.rule, figure=a.name)
    outs = draw(a.name, a.inputs, a.out, a.params)
    run.finish(outs)


def cmd_claims(a: argparse.Namespace) -> None:
    from attnrank.claims import step
    from attnrank.pipeline.provenance import Run

    run = Run("claims", a.params, a.inputs, a.wildcards, rule=a.rule)
    run.finish(step(a.inputs, a.params, a.md, a.csv, a.html))


def cmd_audit(a: argparse.Namespace) -> int:
    from attnrank.publish.audit import audit_run, load_config

    report = audit_run(Path(a.run), load_config(a.config), scale=a.scale)
    text = report.summary()
    print(text)
    if a.json:
        from attnrank.core.io import write_text

        write_text(report.to_json(), a.json)
    return 0 if report.ok else 1


def cmd_check_config(a: argparse.Namespace) -> int:
    from attnrank.pipeline import configcheck

    files = ([a.base] if a.base else []) + list(a.configfiles)
    problems = configcheck.file_problems(files)
    if not problems:
        config: dict[str, Any] = {}
        for path in files:
            config = configcheck.merge(config, configcheck.read_config_file(path))
        problems = configcheck.config_problems(config, configcheck.load_schema())
    if not problems:
        problem, warning = configcheck.device_problem(config["device"], where=None)
        problems += [problem] if problem else []
        if warning:
            print(warning, file=sys.stderr)
    if problems:
        print(configcheck.refusal(problems), file=sys.stderr)
        return 1
    print(f"config OK: {' + '.join(files)} (scale {config['scale']})")
    return 0


def cmd_compare(a: argparse.Namespace) -> int:
    from attnrank.publish.compare import compare_runs

    report = compare_runs(Path(a.run), Path(a.ref), abs_tol=a.abs_tol, rtol=a.rtol, k=a.k,
                          allow_missing=a.allow_missing)
    print(report.summary())
    if a.json:
        from attnrank.core.io import write_text

        write_text(report.to_json(), a.json)
    return 0 if report.ok else 1


def cmd_reference(a: argparse.Namespace) -> None:
    from attnrank.publish.reference import git_is_clean, publish_reference

    if not a.allow_dirty:
        clean, status = git_is_clean(Path.cwd())
        if not clean:
            raise RuntimeError("refusing to publish a reference from a dirty tree (commit first, or "
                               f"--allow-dirty for a trial):\n{status}")
    copied = publish_reference(a.run, a.dest)
    log.info("published %d files (with sidecars) from %s to %s", len(copied), a.run, a.dest)


def cmd_restore(a: argparse.Namespace) -> int:
    from attnrank.publish.audit import load_config
    from attnrank.publish.restore import record_for_snakemake, restore_reference

    done = restore_reference(Path(a.reference), Path(a.run), load_config(a.config),
                             replace=a.replace)
    print(done.summary())
    if done.copied:
        print(record_for_snakemake(a.run, a.config))
    if a.verbose_list:
        for rel, why in sorted(done.left.items()):
            print(f"  left {rel}: {why}")
    return 0


def cmd_stale(a: argparse.Namespace) -> int:
    from attnrank.publish.audit import load_config
    from attnrank.publish.restore import stale_artifacts

    for rel in stale_artifacts(Path(a.run), load_config(a.config)):
        print(f"{a.run.rstrip('/')}/{rel}" if a.prefix else rel)
    return 0


def _report_section(a: argparse.Namespace, changed: bool, section: str, source: str,
                    target: str) -> int:
    """Log a README section update; with --check a stale section is exit 1."""
    if a.check and changed:
        log.error("%s: the %s differs from what %s gives (run `%s`)", a.readme, section, source,
                  target)
        return 1
    log.info("%s: %s %s", a.readme, section, "rewritten" if changed else "unchanged")
    return 0


HELDOUT_CLAIMS = "benchmarks/results/heldout_claims.csv"
HELDOUT_RECORD = "benchmarks/results/heldout_run.json"


def cmd_readme(a: argparse.Namespace) -> int:
    from attnrank.publish.readme import update_heldout, update_readme

    changed = update_readme(Path(a.readme), Path(a.reference), check=a.check)
    rc = _report_section(a, changed, "results section", a.reference, "make readme")
    if Path(HELDOUT_RECORD).exists():  # the reference's verdicts stand beside the held-out ones
        changed = update_heldout(Path(a.readme), Path(HELDOUT_CLAIMS), Path(HELDOUT_RECORD),
                                 Path(a.reference), check=a.check)
        rc = max(rc, _report_section(a, changed, "held-out section", HELDOUT_RECORD, "make readme"))
    return rc


def cmd_heldout(a: argparse.Namespace) -> int:
    """Record a finished held-out run (claims and what it is) and put its verdicts in README."""
    import shutil

    from attnrank.core.io import write_text
    from attnrank.publish.readme import heldout_record, update_heldout

    run = Path(a.run)
    record = heldout_record(run)
    shutil.copyfile(run / "claims.csv", HELDOUT_CLAIMS)
    write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", HELDOUT_RECORD)
    update_heldout(Path(a.readme), Path(HELDOUT_CLAIMS), Path(HELDOUT_RECORD), Path(a.reference))
    log.info("held-out run (seed_offset %d, %d of %d pass) recorded in %s and %s; README updated",
             record["seed_offset"], record["pass"], record["claims"], HELDOUT_CLAIMS, HELDOUT_RECORD)
    return 0


def cmd_readme_times(a: argparse.Namespace) -> int:
    from attnrank.publish.readme import update_times

    changed = update_times(Path(a.readme), Path(a.summary), check=a.check)
    return _report_section(a, changed, "time table", a.summary, "make bench")


def _output(p: argparse.ArgumentParser, flag: str, required: bool = True, help: str | None = None,
            companions: tuple[str, ...] = ()) -> None:
    """An output path of a step. Before the step runs, what an interrupted run left for it is
    cleared (``provenance.clear_interrupted``), also for each companion file (the same path with
    another suffix, e.g. a figure's .png beside its .pdf)."""
    action = p.add_argument(flag, required=required, default=None, help=help)
    p.set_defaults(outputs_=[*(p.get_default("outputs_") or []), (action.dest, companions)])


def _output_paths(args: argparse.Namespace) -> list[Path]:
    """Every output path (with its companions) of the parsed step command."""
    paths = []
    for dest, companions in getattr(args, "outputs_", None) or []:
        value = getattr(args, dest)
        if value:
            paths += [Path(value), *(Path(value).with_suffix(s) for s in companions)]
    return paths


def _training(p: argparse.ArgumentParser, weights: bool = True) -> None:
    """Outputs and device options shared by the training commands."""
    _output(p, "--metrics", help="output metrics table (.parquet)")
    if weights:
        _output(p, "--weights", help="output final weights (.npz)")
    _device_options(p)


def _device_options(p: argparse.ArgumentParser) -> None:
    """Device, threads and checkpoint interval of a training command."""
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--checkpoint-every", type=_checkpoint_every,
                   default=os.environ.get(CHECKPOINT_ENV, "0"),
                   help="save a checkpoint beside the first output every N steps and resume from "
                   f"it when rerun (0: never; default: ${CHECKPOINT_ENV}, which the workflow sets "
                   "from config checkpoint_every, else 0)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="debug logging; a failure shows its traceback")
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
    _output(p, "--out")
    p.add_argument("--threads", type=int, default=1)
    p.set_defaults(func=cmd_minip_constructions)

    p = sub.add_parser("minip-information-bound", help="B5 transcript bound table")
    _common(p)
    p.add_argument("--inputs", nargs="+", required=True)
    _output(p, "--out")
    _output(p, "--csv")
    p.set_defaults(func=cmd_minip_information_bound)

    p = sub.add_parser("minip-witness-families", help="the witness-families table: every "
                       "family's heads rebuilt from their weights, which inputs fail, a summary")
    _common(p)
    p.add_argument("--inputs", nargs="+", required=True,
                   help="metrics (.parquet) then weights (.npz) of every family, in the job's order")
    _output(p, "--out", help="the per (family, rank, seed) table (.parquet)")
    _output(p, "--summary", help="the per-family summary (.parquet)")
    _output(p, "--csv", help="the summary again as CSV (the report)")
    p.add_argument("--threads", type=int, default=1)
    p.set_defaults(func=cmd_minip_witness_families)

    p = sub.add_parser("minip-restarts", help="the restart (trap) study: one case's model on "
                       "every seed, recipe and variants, from the training job's init and data")
    _common(p)
    _training(p, weights=False)
    p.set_defaults(func=cmd_minip_restarts)

    p = sub.add_parser("minip-beyond", help="the families beyond the single head (B6, TT-7): "
                       "every (family, budget) group × seed of one instance")
    _common(p)
    _training(p)
    p.set_defaults(func=cmd_minip_beyond)

    p = sub.add_parser("minip-beyond-growth", help="the smallest budget F reaching each target "
                       "per m and the slope of log2 F on m, per family line")
    _common(p)
    p.add_argument("--inputs", nargs=2, required=True,
                   help="the minip_beyond and minip_rank_vs_m tables (.parquet)")
    _output(p, "--out")
    p.set_defaults(func=cmd_minip_beyond_growth)

    p = sub.add_parser("minip-restarts-tables", help="the restart study's tables: every row, and "
                       "per case × variant which seeds pass and which failing seeds recover")
    _common(p)
    p.add_argument("--inputs", nargs="+", required=True, help="every case's metrics (.parquet)")
    _output(p, "--out", help="every logged row (.parquet)")
    _output(p, "--summary", help="the per case × variant summary (.parquet)")
    _output(p, "--csv", help="the summary again as CSV (the report)")
    p.set_defaults(func=cmd_minip_restarts_tables)

    p = sub.add_parser("entropic-train", help="Paper A: train one job (surrogate, ladder rung or "
                       "attention teacher; all ranks × seeds × r*)")
    _common(p)
    _training(p)
    p.set_defaults(func=cmd_entropic_train)

    p = sub.add_parser("entropic-predict", help="Paper A (A4): data-only rank estimators of one teacher")
    _common(p)
    _output(p, "--out", help="output estimates table (.parquet)")
    _output(p, "--spectra", help="output singular values (.npz)")
    p.add_argument("--threads", type=int, default=1)
    p.set_defaults(func=cmd_entropic_predict)

    p = sub.add_parser("language-corpora", help="Paper A (appendix B): the corpora table (every "
                       "corpus of the scale: source, size, sha256, complexity measures)")
    _common(p)
    _output(p, "--out", help="output table (.parquet)")
    _output(p, "--csv", help="the table again as CSV (the report)")
    p.set_defaults(func=cmd_language_corpora)

    p = sub.add_parser("language-train", help="Paper A (appendix B): train byte-level "
                       "Transformers on one corpus (every seed as one program); ranks and loss")
    _common(p)
    _output(p, "--ranks", help="output ranks table (.parquet)")
    _output(p, "--loss", help="output loss table (.parquet)")
    _output(p, "--weights", help="output final weights (.npz, float64)")
    _device_options(p)
    p.set_defaults(func=cmd_language_train)

    p = sub.add_parser("table", help="concatenate metrics tables into one, keeping some rows "
                       '(--params {"select": all|final|selected, "max_rank_only": bool})')
    _common(p)
    p.add_argument("--inputs", nargs="+", required=True)
    _output(p, "--out")
    p.set_defaults(func=cmd_table)

    p = sub.add_parser("figure", help="draw one figure (PDF + PNG) from tables")
    _common(p)
    p.add_argument("name")
    p.add_argument("--inputs", nargs="+", required=True)
    _output(p, "--out", help="the .pdf path; the .png goes beside it", companions=(".png",))
    p.set_defaults(func=cmd_figure)

    p = sub.add_parser("claims", help="evaluate every paper claim on the result tables")
    _common(p)
    p.add_argument("--inputs", nargs="+", required=True)
    _output(p, "--md")
    _output(p, "--csv")
    _output(p, "--html", required=False, help="also write the verdicts as an HTML page")
    p.set_defaults(func=cmd_claims)

    p = sub.add_parser("audit", help="check every artifact of a run against its sidecar, the "
                       "chain of inputs, and what the current checkout and config would produce")
    p.add_argument("run", nargs="?", default="results/full", help="a run folder (results/<scale>)")
    p.add_argument("--config", default="config.yaml")
    p.add_argument("--scale", default=None,
                   help="the config scale to check against (default: the one the sidecars record)")
    p.add_argument("--json", default=None, help="also write the report as JSON here")
    p.set_defaults(func=cmd_audit)

    p = sub.add_parser("check-config", help="check a config as the workflow does before any job "
                       "(YAML syntax with line and column, schema, cross-key checks, plans, "
                       "device): one line per problem, exit 1 on any")
    p.add_argument("configfiles", nargs="*", help="files merged over --base, in order, as "
                   "snakemake --configfile merges them")
    p.add_argument("--base", default="config.yaml", help="the workflow's config.yaml ('' for none)")
    p.set_defaults(func=cmd_check_config)

    p = sub.add_parser("compare", help="does a run match a reference within the seed-to-seed "
                       "spread, and which claim verdicts differ")
    p.add_argument("run", help="the run folder to check (results/<scale>)")
    p.add_argument("ref", nargs="?", default="results/reference", help="the reference folder")
    p.add_argument("--k", type=float, default=3.0,
                   help="tolerance in seed-to-seed standard deviations of the reference (default 3)")
    p.add_argument("--abs-tol", type=float, default=1e-9, help="absolute tolerance floor")
    p.add_argument("--rtol", type=float, default=1e-6, help="relative tolerance floor")
    p.add_argument("--allow-missing", action="store_true",
                   help="tables, groups or claims on one side only are not a difference")
    p.add_argument("--json", default=None, help="also write the report as JSON here")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("reference", help="publish a finished run's tables, PNGs, claims and every "
                       "sidecar to results/reference/ (atomically; refuses a dirty tree)")
    p.add_argument("--run", default="results/full")
    p.add_argument("--dest", default="results/reference")
    p.add_argument("--allow-dirty", action="store_true", help="publish from a dirty tree (trials)")
    p.set_defaults(func=cmd_reference)

    p = sub.add_parser("restore", help="rebuild a run folder from the committed reference: "
                       "what the audit finds current is copied (mtimes in DAG order), what changed "
                       "is left for the next run")
    p.add_argument("--reference", default="results/reference")
    p.add_argument("--run", default="results/full")
    p.add_argument("--config", default="config.yaml")
    p.add_argument("--replace", action="store_true",
                   help="empty a run folder that already holds artifacts first")
    p.add_argument("--list", dest="verbose_list", action="store_true",
                   help="also list every artifact left for the run, with why")
    p.set_defaults(func=cmd_restore)

    p = sub.add_parser("stale", help="list the artifacts of a run folder a rerun must make "
                       "again (the audit's stale, modified and broken-chain findings), one a line")
    p.add_argument("run", nargs="?", default="results/full")
    p.add_argument("--config", default="config.yaml")
    p.add_argument("--prefix", action="store_true", help="print paths with the run folder")
    p.set_defaults(func=cmd_stale)

    p = sub.add_parser("readme", help="rewrite README's results section (claims, figure "
                       "thumbnails) from the committed reference run")
    p.add_argument("--readme", default="README.md")
    p.add_argument("--reference", default="results/reference")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 when it differs")
    p.set_defaults(func=cmd_readme)

    p = sub.add_parser("heldout", help="record a finished held-out run (make heldout): its claims "
                       f"into {HELDOUT_CLAIMS}, what it is into {HELDOUT_RECORD}, its verdicts "
                       "beside the reference's in README")
    p.add_argument("--run", required=True, help="the held-out run's results folder")
    p.add_argument("--readme", default="README.md")
    p.add_argument("--reference", default="results/reference")
    p.set_defaults(func=cmd_heldout)

    p = sub.add_parser("readme-times", help="rewrite the run-time table of docs/performance.md "
                       "from benchmarks/results/summary.json (make bench)")
    p.add_argument("--readme", default="docs/performance.md",
                   help="the file holding the table between its markers")
    p.add_argument("--summary", default="benchmarks/results/summary.json")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 when it differs")
    p.set_defaults(func=cmd_readme_times)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. A failure caused by the input (a bad path, table, archive or --params)
    is one line on stderr naming it and what was expected, and exit 2; with -v its traceback
    comes first. Any other exception is a bug and propagates with its traceback."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s", stream=sys.stderr)
    try:
        for dest in JSON_ARGS:
            if hasattr(args, dest):
                setattr(args, dest, json_object("--" + dest, getattr(args, dest)))
        check_outputs(args, OUTPUT_ARGS)
        check_inputs(args)
        outputs = _output_paths(args)
        if outputs:  # a step: clear what an interrupted run left for its outputs
            from attnrank.pipeline.provenance import clear_interrupted

            for path in outputs:
                clear_interrupted(path)
        rc = args.func(args)
    except Exception as err:
        message = user_error(err, args)
        if message is None:
            raise
        if args.verbose:
            traceback.print_exception(err, file=sys.stderr)
        print(f"{PROG} {args.command}: error: {message}", file=sys.stderr)
        return 2
    return int(rc or 0)


if __name__ == "__main__":
    raise SystemExit(main())
