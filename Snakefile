# attnrank: reproduce "The Entropic Bound for Transformers" and "Three Tokens Force Exponential
# Feature Rank in Nonnegative Kernel Attention" from nothing.
#   snakemake --cores all                        full reproduction (paper scale)
#   snakemake --cores all --config scale=smoke   the same DAG on small grids
#   snakemake results/smoke/figures/minip_witness.pdf   one figure: the scale follows from the path
import sys
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")
sys.path.insert(0, str(Path(workflow.basedir) / "src"))
from attnrank.pipeline import configcheck  # noqa: E402
from attnrank.pipeline.runner import interpreter_first_on_path  # noqa: E402

# every job's `python` is the interpreter that runs this workflow (.venv/bin/snakemake, the venv
# not activated, runs the venv's python)
interpreter_first_on_path()

SCHEMA = Path(workflow.basedir) / "workflow" / "schemas" / "config.schema.yaml"

# The config is checked whole before the DAG, every problem on one line naming the key: YAML
# syntax (file, line, column) and repeated keys, the schema (key, value, expectation; an unknown
# key with the nearest valid one), the cross-key checks and the plans, and the device. A
# --configfile with a YAML syntax error stops Snakemake before this file runs ("Config file is
# not valid JSON or YAML"): `python -m attnrank check-config FILE` shows the line and column.
own_files = ["config.yaml"] if Path("config.yaml").exists() else []
# --configfile: parsed by Snakemake already
cli_files = list(getattr(workflow.config_settings, "configfiles", []))
problems = configcheck.file_problems(own_files + cli_files)
if problems:
    raise WorkflowError(configcheck.refusal(problems))


configfile: "config.yaml"


problems = configcheck.config_problems(config, configcheck.load_schema(SCHEMA))
# the device where the jobs run: not checked again inside a job (on a Slurm node)
if not problems and workflow.is_main_process:
    problem, warning = configcheck.device_problem(
        config["device"], where=configcheck.where_jobs_run()
    )
    problems += [problem] if problem else []
    if warning:
        print(warning, file=sys.stderr)
if problems:
    raise WorkflowError(configcheck.refusal(problems))


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/minip.smk"
include: "workflow/rules/entropic.smk"
include: "workflow/rules/language.smk"
include: "workflow/rules/onejob.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        all_targets(),
