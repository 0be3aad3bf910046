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

from attnrank.pipeline.errors import (
    UsageError,
    check_inputs,
    check_outputs,
    json_object,
    user_error,
)
from attnrank.pipeline.registry import STEPS, Step, command_steps
from attnrank.pipeline.runner import CHECKPOINT_ENV, output_paths, run_step

log = logging.getLogger("attnrank")

PROG = "python -m attnrank"
JSON_ARGS = ("params", "wildcards")  # parsed in main(), so that -v shows where a bad one failed
# every file a command writes (checked before any work): the steps' outputs, audit's and compare's
OUTPUT_ARGS = tuple(dict.fromkeys([*(o.dest for s in STEPS.values() for o in s.outputs), "json"]))


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (the usage itself is one ``--help`` away)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def _checkpoint_every(text: str) -> int:
    """The --checkpoint-every value: an integer ≥ 0; a usage error otherwise."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer ≥ 0 (0 disables), got {text!r}")
    return value


# The publishing and maintenance commands: each calls one function of ``publish/`` or
# ``pipeline/configcheck.py`` (their arguments are in build_parser).


def cmd_audit(a: argparse.Namespace) -> int:
    """Audit a run folder (print the report, --json writes it); exit 1 on any finding."""
    from attnrank.publish.audit import audit_run, load_config

    report = audit_run(Path(a.run), load_config(a.config), scale=a.scale)
    text = report.summary()
    print(text)
    if a.json:
        from attnrank.core.io import write_text

        write_text(report.to_json(), a.json)
    return 0 if report.ok else 1


def cmd_check_config(a: argparse.Namespace) -> int:
    """Check the merged config files as the workflow does; exit 1 with one line per problem."""
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
    """Compare a run with a reference (print the report, --json writes it); exit 1 on a difference."""
    from attnrank.publish.compare import compare_runs

    report = compare_runs(Path(a.run), Path(a.ref), abs_tol=a.abs_tol, rtol=a.rtol, k=a.k,
                          allow_missing=a.allow_missing)
    print(report.summary(brief=a.brief))
    if a.json:
        from attnrank.core.io import write_text

        write_text(report.to_json(), a.json)
    return 0 if report.ok else 1


def cmd_reference(a: argparse.Namespace) -> None:
    """Publish a finished run as the reference; refuses a dirty tree unless --allow-dirty."""
    from attnrank.publish.reference import PATTERNS, git_is_clean, publish_reference, run_patterns

    if not a.allow_dirty:
        clean, status = git_is_clean(Path.cwd())
        if not clean:
            raise RuntimeError("refusing to publish a reference from a dirty tree (commit first, or "
                               f"--allow-dirty for a trial):\n{status}")
    run = Path(a.run)  # a smoke run publishes what compare reads (publish.reference.run_patterns)
    patterns = run_patterns(run) if (run / "claims.md.prov.json").is_file() else PATTERNS
    copied = publish_reference(run, a.dest, patterns=patterns)
    log.info("published %d files (with sidecars) from %s to %s", len(copied), a.run, a.dest)


def cmd_restore(a: argparse.Namespace) -> int:
    """Restore a run folder from the reference and record it for Snakemake."""
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
    """Print the artifacts of a run folder that a rerun must make again, one a line."""
    from attnrank.publish.audit import load_config
    from attnrank.publish.restore import stale_artifacts

    if not Path(a.run).is_dir():
        raise FileNotFoundError(f"run folder not found: {a.run}")
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


def _quorum_values() -> dict[str, float]:
    """The seed quorum and the interval level of its pooled rate, from config.yaml's claims."""
    import yaml

    claims = yaml.safe_load(Path("config.yaml").read_text())["claims"]
    return {"level": float(claims["quorum_interval_level"]), "quorum": float(claims["seed_quorum"])}


def cmd_readme(a: argparse.Namespace) -> int:
    """Rewrite (--check: compare) README's results and held-out sections."""
    from attnrank.publish.readme import update_heldout, update_readme

    changed = update_readme(Path(a.readme), Path(a.reference), check=a.check)
    rc = _report_section(a, changed, "results section", a.reference, "make readme")
    if Path(HELDOUT_RECORD).exists():  # the reference's verdicts stand beside the held-out ones
        changed = update_heldout(Path(a.readme), Path(HELDOUT_CLAIMS), Path(HELDOUT_RECORD),
                                 Path(a.reference), check=a.check, **_quorum_values())
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
    update_heldout(Path(a.readme), Path(HELDOUT_CLAIMS), Path(HELDOUT_RECORD), Path(a.reference),
                   **_quorum_values())
    log.info("held-out run (seed_offset %d, %d of %d pass) recorded in %s and %s; README updated",
             record["seed_offset"], record["pass"], record["claims"], HELDOUT_CLAIMS, HELDOUT_RECORD)
    return 0


def cmd_readme_times(a: argparse.Namespace) -> int:
    """Rewrite (--check: compare) the run-time table of docs/performance.md, the P-core tables
    (--cores-docs) and README's run times (--front)."""
    from attnrank.publish.readme import update_times

    changed = update_times(Path(a.readme), Path(a.summary), check=a.check,
                           cores_docs=tuple(Path(p) for p in a.cores_docs),
                           front=Path(a.front) if a.front else None)
    return _report_section(a, changed, "time table", a.summary, "make bench")


def cmd_estimate_rank(a: argparse.Namespace) -> int:
    """Every data-only rank reading of a user's (X, Y[, V]) and whether S suffices at that d."""
    from attnrank.entropic.open3.tool import report
    from attnrank.pipeline.configcheck import read_config_file

    config = read_config_file(a.config)
    print(report(a.x, a.y, a.values, config, a.reference))
    return 0


def add_step_command(sub: Any, step: Step) -> None:
    """The subcommand of a registered step, from its registry entry: --params, --rule and
    --wildcards, the figure's name, --inputs, the outputs, then --threads or the device options
    of a training step; it runs ``runner.run_step``."""
    p = sub.add_parser(step.command, help=step.help)
    p.add_argument("--params", default="{}", help="the step's resolved parameters "
                   "(its typed job as a JSON object)")
    p.add_argument("--rule", default=None, help="the Snakemake rule (provenance; default: the step)")
    p.add_argument("--wildcards", default="{}", help="wildcards (JSON object, provenance)")
    if step.kind == "figure":
        p.add_argument("name")
    if step.inputs is not None:
        p.add_argument(step.inputs.flag, nargs=step.inputs.nargs, required=True,
                       help=step.inputs.help)
    for out in step.outputs:
        p.add_argument(out.flag, required=out.required, default=None, help=out.help)
    if step.kind == "train":
        p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
        p.add_argument("--threads", type=int, default=1)
        p.add_argument("--checkpoint-every", type=_checkpoint_every,
                       default=os.environ.get(CHECKPOINT_ENV, "0"),
                       help="save a checkpoint beside the first output every N steps and resume "
                       f"from it when rerun (0: never; default: ${CHECKPOINT_ENV}, which the "
                       "workflow sets from config checkpoint_every, else 0)")
    elif step.threads:
        p.add_argument("--threads", type=int, default=1)
    p.set_defaults(func=run_step)


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command: one per registered step command (in registry order; steps
    sharing a command share its flags), then the publishing and maintenance commands."""
    parser = _Parser(prog=PROG, description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="debug logging; a failure shows its traceback")
    sub = parser.add_subparsers(dest="command", required=True)
    commands: dict[str, Step] = {}
    for step in STEPS.values():
        commands.setdefault(step.command, step)
    for step in commands.values():
        add_step_command(sub, step)

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
    p.add_argument("--k", type=float, default=3.0, help="tolerance in seed-to-seed standard "
                   "deviations, the larger of the two runs' (default 3)")
    p.add_argument("--abs-tol", type=float, default=1e-9, help="absolute tolerance floor")
    p.add_argument("--rtol", type=float, default=1e-3, help="relative tolerance floor (default "
                   "1e-3: above a platform's float rounding)")
    p.add_argument("--allow-missing", action="store_true",
                   help="tables, groups or claims on one side only are not a difference")
    p.add_argument("--brief", action="store_true",
                   help="name only what differs (the verdict and tolerance lines always)")
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

    p = sub.add_parser("readme-times", help="rewrite the run-time table of docs/performance.md, "
                       "the P-core tables and README's run times from "
                       "benchmarks/results/summary.json (make bench)")
    p.add_argument("--readme", default="docs/performance.md",
                   help="the file holding the table between its markers")
    p.add_argument("--cores-docs", nargs="*", default=["docs/performance.md", "docs/running.md"],
                   help="the files holding the P-core table between <!-- cores:start/end -->")
    p.add_argument("--front", default="README.md",
                   help="the file holding the run times between <!-- runtimes:start/end --> "
                        "('' for none)")
    p.add_argument("--summary", default="benchmarks/results/summary.json")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 when it differs")
    p.set_defaults(func=cmd_readme_times)

    p = sub.add_parser("run-jobs", help="run several training or compute step command lines "
                       "one after the other in one process (the one-job rules of a scale in "
                       "config one_job_per_rule)")
    p.add_argument("--jobs", required=True, help="a JSON list of command lines, each a list of "
                   "strings: a step command and its flags, as `python -m attnrank` takes them")
    p.set_defaults(func=cmd_run_jobs)

    p = sub.add_parser("estimate-rank", help="every data-only rank reading of your sequences "
                       "(E1 with --values, E2, the debiased E2, the candidate E2_centred and its "
                       "floor rank) and whether S suffices at that d (OPEN-3's reference table)")
    p.add_argument("x", help="X.npy: inputs of shape (S, N, d)")
    p.add_argument("y", help="Y.npy: outputs of shape (S, N, e)")
    p.add_argument("--values", default=None, help="V.npy of shape (d, e), when known (adds E1)")
    p.add_argument("--reference", default="results/reference",
                   help="the reference folder holding tables/entropic_open3.parquet")
    p.add_argument("--config", default="config.yaml",
                   help="the config whose claims.noise_floor and entropic.taus the readings use")
    p.set_defaults(func=cmd_estimate_rank)
    return parser


def prepare(args: argparse.Namespace) -> None:
    """Parse a command's JSON arguments and check its outputs and inputs (before any work)."""
    for dest in JSON_ARGS:
        if hasattr(args, dest):
            setattr(args, dest, json_object("--" + dest, getattr(args, dest)))
    check_outputs(args, OUTPUT_ARGS)
    check_inputs(args)


def cmd_run_jobs(a: argparse.Namespace) -> int:
    """Run several step command lines one after the other in this process (``pipeline.onejob``):
    each is parsed and checked before the first runs, and each runs as it runs alone (its sidecars
    record its own command line). A failing job stops the rest, and the outputs written before it
    are removed with their sidecars, so no part of the rule's outputs stays behind."""
    from attnrank.pipeline.onejob import parse_jobs, remove_outputs

    parser = build_parser()
    argvs = parse_jobs(a.jobs)
    jobs: list[tuple[str, argparse.Namespace]] = []
    for k, argv in enumerate(argvs, 1):
        what = f"--jobs: job {k} of {len(argvs)} ({argv[0]})"
        try:
            member = parser.parse_args(argv)
        except SystemExit as err:  # argparse printed the usage error
            raise UsageError(f"{what}: a bad command line (above)") from err
        try:
            prepare(member)
        except Exception as err:
            message = user_error(err, member)
            if message is None:
                raise
            raise UsageError(f"{what}: {message}") from err
        jobs.append((f"job {k} of {len(argvs)} ({member.rule} "
                     f"{json.dumps(member.wildcards, sort_keys=True)})", member))
    written: list[Path] = []
    saved = sys.argv
    try:
        for argv, (what, member) in zip(argvs, jobs, strict=True):
            log.info("%s", what)
            sys.argv = [saved[0], *argv]  # its sidecars record the command that runs it alone
            try:
                member.func(member)
            except Exception as err:
                remove_outputs(written)
                message = user_error(err, member)
                if message is None:
                    raise
                raise UsageError(f"{what}: {message}") from err
            written += output_paths(member, command_steps(member.command)[0])
    finally:
        sys.argv = saved
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. A failure caused by the input (a bad path, table, archive or --params)
    is one line on stderr naming it and what was expected, and exit 2; with -v its traceback
    comes first. Any other exception is a bug and propagates with its traceback."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s", stream=sys.stderr)
    try:
        prepare(args)
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
