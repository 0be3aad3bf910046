"""The config check the workflow runs before any job: every problem as one line naming the key.

``config_problems(config, schema)`` is the whole check of a merged config (config.yaml, any
``--configfile`` and ``--config``): the JSON schema (each violation condensed to
``config: <dotted.key> = <value>: <expectation>``, a missing key to ``config: <parent> is missing
required key '<k>'``, an unknown key with the nearest valid one), then the cross-key checks of
every block (``attnrank.jobs``, the claims thresholds here) and the plan of every scale.
``read_config_file`` reads YAML and refuses a syntax error or a repeated key with file, line and
column. ``device_problem`` refuses ``device: cuda`` for a run whose jobs run on this machine
when it sees no CUDA device; a run sent to a cluster executor (Slurm) is not refused, its login
node need not have a GPU.
Pure except for ``read_config_file`` (reads a file) and the default CUDA probe.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

PREFIX = "config: "
MAX_LINES = 20  # problems shown; the rest are counted
_TYPES = {"integer": "an integer", "number": "a number", "string": "a string",
          "boolean": "true or false", "array": "a list", "object": "a mapping (key: value)",
          "null": "null"}


# ---- YAML ------------------------------------------------------------------------------------

def _strict_loader() -> type:
    """A safe YAML loader that refuses a key repeated in one mapping (YAML keeps the last one,
    so a repeated key silently drops the first value)."""
    import yaml

    class StrictLoader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            if not any(k.tag == "tag:yaml.org,2002:merge" for k, _ in node.value):
                seen: dict[Any, int] = {}
                for key_node, _ in node.value:
                    key = self.construct_object(key_node, deep=True)
                    try:
                        first = seen.setdefault(key, key_node.start_mark.line)
                    except TypeError:  # an unhashable key: the constructor reports it
                        continue
                    if first != key_node.start_mark.line:
                        raise yaml.constructor.ConstructorError(
                            None, None, f"key {key!r} is repeated (first at line {first + 1})",
                            key_node.start_mark)
            return super().construct_mapping(node, deep=deep)

    return StrictLoader


def parse_yaml(text: str, name: str) -> Any:
    """YAML ``text`` (from the file ``name``) as Python objects; ValueError
    ``<name>:<line>:<column>: <problem>`` on a syntax error or a repeated key."""
    import yaml

    try:
        return yaml.load(text, Loader=_strict_loader())  # a SafeLoader subclass
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"{name}:{mark.line + 1}:{mark.column + 1}" if mark else name
        kind = "YAML error" if isinstance(err, yaml.constructor.ConstructorError) else \
            "YAML syntax error"
        what = str(err.problem or err.context)
        ctx = err.context_mark
        if err.problem and err.context and ctx is not None and ctx is not mark:
            what += f" ({err.context} that starts at {ctx.line + 1}:{ctx.column + 1})"
        raise ValueError(f"{where}: {kind}: {what}") from None
    except yaml.YAMLError as err:
        raise ValueError(f"{name}: YAML syntax error: {err}") from None


def read_config_file(path: str | Path) -> dict[str, Any]:
    """A config file (YAML or JSON) as a mapping; ValueError with file, line and column on a
    syntax error or a repeated key, and naming the file when it holds no mapping."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"{path}: no such config file") from None
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    data = parse_yaml(text, str(path))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of keys at the top level, got "
                         f"{type(data).__name__}")
    return data


def merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """``update`` merged into a copy of ``base`` the way Snakemake merges config files: mappings
    key by key, anything else replaced."""
    out = dict(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


# ---- the schema, condensed -------------------------------------------------------------------

def dotted(path: Iterable[Any]) -> str:
    """A JSON path as the config's dotted key: ``minip.scales.full.ood.scales[0].m``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def show(value: Any, width: int = 60) -> str:
    """A config value as the user wrote it, shortened to ``width`` characters."""
    text = repr(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def _nearest(key: str, valid: list[str]) -> str:
    by_lower = {v.lower(): v for v in valid}
    close = difflib.get_close_matches(key.lower(), list(by_lower), n=1, cutoff=0.6)
    if close:
        return f"did you mean '{by_lower[close[0]]}'?"
    return f"expected one of {', '.join(valid)}"


def _expectation(error: Any) -> str:
    """What the schema expected, in words, for one jsonschema error."""
    v, want = error.validator, error.validator_value
    if v == "type":
        kinds = want if isinstance(want, list) else [want]
        return " or ".join(_TYPES.get(k, k) for k in kinds)
    words = {"enum": lambda: "one of " + ", ".join(str(x) for x in want),
             "const": lambda: f"exactly {want!r}",
             "minimum": lambda: f"at least {want}",
             "maximum": lambda: f"at most {want}",
             "exclusiveMinimum": lambda: f"greater than {want}",
             "exclusiveMaximum": lambda: f"less than {want}",
             "minItems": lambda: f"a list of at least {want} item(s)",
             "maxItems": lambda: f"a list of at most {want} item(s)",
             "uniqueItems": lambda: "a list without repeated items",
             "minLength": lambda: f"a string of at least {want} character(s)",
             "pattern": lambda: f"a string matching {want}",
             "minProperties": lambda: f"a mapping with at least {want} key(s)",
             "maxProperties": lambda: f"a mapping with at most {want} key(s)"}
    return words[v]() if v in words else error.message


def _schema_lines(error: Any) -> list[str]:
    """One line per problem of one jsonschema error (a ``required`` or ``additionalProperties``
    error can hold several keys)."""
    at = dotted(error.absolute_path)
    inst = error.instance
    if error.validator == "required" and isinstance(inst, dict):
        where = f"config: {at}" if at else "config"
        return [f"{where} is missing required key '{k}'" for k in error.validator_value
                if k not in inst]
    if error.validator == "additionalProperties" and isinstance(inst, dict):
        known = list(error.schema.get("properties", {}))
        extra = [k for k in inst if k not in known]
        return [f"{PREFIX}{at + '.' if at else ''}{k}: unknown key; {_nearest(str(k), known)}"
                for k in extra]
    if error.validator == "propertyNames":
        return [f"{PREFIX}{at}: key {show(inst)}: {error.message}"]
    if error.validator == "pattern" and error.relative_schema_path and \
            "propertyNames" in error.relative_schema_path:
        return [f"{PREFIX}{at}: key {show(inst)}: {_expectation(error)}"]
    return [f"{PREFIX}{at or '(top level)'} = {show(inst)}: {_expectation(error)}"]


def schema_problems(config: Any, schema: dict[str, Any]) -> list[str]:
    """Every violation of the JSON ``schema`` (draft 2020-12) by ``config``, one line each, in
    key order."""
    from jsonschema import Draft202012Validator

    errors = sorted(Draft202012Validator(schema).iter_errors(config),
                    key=lambda e: ([str(p) for p in e.absolute_path], e.validator))
    lines: list[str] = []
    for error in errors:
        lines += [line for line in _schema_lines(error) if line not in lines]
    return lines


SCHEMA_PATH = Path(__file__).resolve().parents[3] / "workflow" / "schemas" / "config.schema.yaml"


def load_schema(path: str | Path = SCHEMA_PATH) -> dict[str, Any]:
    """The config schema (YAML), by default the checkout's workflow/schemas/config.schema.yaml."""
    import yaml

    return yaml.safe_load(Path(path).read_text(encoding="utf-8"))


# ---- cross-key checks of the claims thresholds -------------------------------------------------

def _g(x: float) -> str:
    return f"{float(x):g}"


def claims_problems(config: dict[str, Any]) -> list[str]:
    """The thresholds of ``claims`` that must agree with the grids: τs the runs report, TT-6's
    headline target among its targets, EB-14's band in order."""
    c, ent = config["claims"], config["entropic"]
    taus = [float(t) for t in ent["taus"]]
    shown = "[" + ", ".join(_g(t) for t in taus) + "]"
    out = []
    for key, value in (("entropic.headline_tau", ent["headline_tau"]),
                       ("claims.saturation_tau", c["saturation_tau"])):
        if _g(value) not in {_g(t) for t in taus}:
            out.append(f"{PREFIX}{key} = {show(value)}: one of entropic.taus = {shown} (the "
                       "numerical ranks are computed at those τ only)")
    targets = [float(t) for t in c["TT-6"]["targets"]]
    if not any(math.isclose(t, float(c["target_accuracy"])) for t in targets):
        out.append(f"{PREFIX}claims.TT-6.targets = {show(c['TT-6']['targets'])}: a list that "
                   f"holds claims.target_accuracy = {_g(c['target_accuracy'])} (the headline "
                   "target)")
    low, high = c["EB-14"]["level_band"]
    if not low <= high:
        out.append(f"{PREFIX}claims.EB-14.level_band = {show(c['EB-14']['level_band'])}: "
                   "[low, high] with low ≤ high")
    return out


# ---- the whole check ---------------------------------------------------------------------------

def _as_lines(err: ValueError) -> list[str]:
    return [line if line.startswith(PREFIX) else PREFIX + line
            for line in str(err).splitlines() if line.strip()]


def config_problems(config: Any, schema: dict[str, Any]) -> list[str]:
    """Every problem of the merged ``config``, one line each (empty: the config is fine). The
    cross-key checks and the plans run only on a config the schema accepts."""
    from attnrank.entropic.jobs import entropic_config_problems
    from attnrank.entropic.open3.jobs import open3_config_problems
    from attnrank.entropic.predict_grid import d32_config_problems
    from attnrank.minip.beyond.jobs import beyond_config_problems
    from attnrank.minip.jobs import minip_config_problems
    from attnrank.pipeline.plan import build_plans

    problems = schema_problems(config, schema)
    if problems:
        return problems
    for scale in config["minip"]["scales"]:
        problems += [PREFIX + p for p in minip_config_problems(config["minip"], scale)]
        problems += [PREFIX + p for p in beyond_config_problems(config, scale)]
    problems += [PREFIX + p for p in entropic_config_problems(config["entropic"])]
    problems += [PREFIX + p for p in d32_config_problems(config["entropic"])]
    problems += [PREFIX + p for p in open3_config_problems(config["entropic"])]
    problems += claims_problems(config)
    problems += [f"{PREFIX}one_job_per_rule: {s!r} is not a scale; the scales are "
                 f"{', '.join(config['minip']['scales'])}"
                 for s in config.get("one_job_per_rule") or [] if s not in config["minip"]["scales"]]
    if problems:
        return problems
    try:
        build_plans(config)
    except ValueError as err:
        return _as_lines(err)
    return []


def file_problems(paths: Iterable[str | Path]) -> list[str]:
    """A line for each config file in ``paths`` that is not valid YAML (file, line, column), has
    a repeated key or holds no mapping."""
    out = []
    for path in paths:
        try:
            read_config_file(path)
        except ValueError as err:
            out.append(f"{PREFIX}{err}")
    return out


def refusal(problems: list[str], limit: int = MAX_LINES) -> str:
    """The message that refuses a config: its problems, one a line, at most ``limit`` of them."""
    shown = problems[:limit]
    if len(problems) > limit:
        shown.append(f"config: … and {len(problems) - limit} more problem(s)")
    return "\n".join(shown)


# ---- the device --------------------------------------------------------------------------------

def cuda_visible() -> bool:
    """Whether torch sees a CUDA device on this machine (imports torch: about a second)."""
    import torch

    return bool(torch.cuda.is_available())


# Snakemake command-line flags that do not run (or dry-run) the jobs: the DAG is only listed,
# drawn, summarized, reported, cleaned or unlocked (the branches of snakemake.cli.args_to_api
# before execute_workflow). With any of them the device is not checked.
NO_RUN_FLAGS = ("lint", "list_target_rules", "list_rules", "print_compilation", "containerize",
                "generate_unit_tests", "dag", "rulegraph", "filegraph", "d3dag", "unlock",
                "cleanup_metadata", "conda_cleanup_envs", "conda_create_envs_only",
                "list_conda_envs", "cleanup_shadow", "container_cleanup_images", "list_changes",
                "list_input_changes", "list_params_changes", "list_code_changes",
                "list_untracked", "summary", "detailed_summary", "archive", "delete_all_output",
                "delete_temp_output", "deploy_sources")


def _runs_jobs(args: Any) -> bool:
    """Whether Snakemake's parsed command line ``args`` runs (or dry-runs) the jobs."""
    if args is None:
        return True
    if getattr(args, "report", None) and not getattr(args, "report_after_run", False):
        return False
    return not any(getattr(args, flag, None) for flag in NO_RUN_FLAGS)


def where_jobs_run() -> str | None:
    """Where the Snakemake command parsing this workflow runs its jobs: ``here`` (the local
    executor, also under ``-n``), ``cluster`` (a cluster executor such as Slurm: a login node
    need not see a GPU), ``nowhere`` (``--list-rules``, ``--lint``, ``--report``, … see
    NO_RUN_FLAGS), or None when it cannot be told (Snakemake driven through its API, or another
    version). Read from the executor plugin that Snakemake 9's command line
    (``snakemake.cli.args_to_api``) resolves from ``--executor`` and the profiles before it
    parses the Snakefile: local variables of a frame up the stack."""
    import inspect

    frame = inspect.currentframe()
    while frame is not None:
        if str(frame.f_globals.get("__name__", "")).startswith("snakemake."):
            settings = getattr(frame.f_locals.get("executor_plugin"), "common_settings", None)
            local = getattr(settings, "local_exec", None)
            if isinstance(local, bool):
                if not _runs_jobs(frame.f_locals.get("args")):
                    return "nowhere"
                return "here" if local else "cluster"
        frame = frame.f_back
    return None


def device_problem(device: str, cuda: Callable[[], bool] = cuda_visible,
                   where: str | None = None) -> tuple[str | None, str | None]:
    """(problem, warning) for the ``device`` key of a run whose jobs run ``where`` (see
    ``where_jobs_run``): ``cuda`` with no CUDA device visible on this machine is a problem when
    they run here, a warning when nobody knows where, and fine on a cluster (the training jobs
    see their node's GPU) or when no job runs. ``auto`` and ``cpu`` are always fine."""
    if device != "cuda" or where in ("cluster", "nowhere") or cuda():
        return None, None
    if where is None:
        return None, (f"{PREFIX}device = 'cuda': no CUDA device is visible on this machine; jobs "
                      "run here will fail (fine where they go to GPU nodes)")
    return (f"{PREFIX}device = 'cuda': a CUDA device, and none is visible on this machine "
            "(use device: auto for CUDA when visible, else CPU; on a cluster, run with its "
            "executor, e.g. --workflow-profile workflow/profiles/slurm)"), None
