# Helpers shared by every rule file (no science here). Every name, job and input comes from the
# package: attnrank.pipeline.registry (steps, tables, figures, claims) and attnrank.pipeline.plan (per scale: what
# each artifact is made from, with which parameters). The scale follows from the target path
# (results/<scale>/...); `scale:` in the config only picks what `rule all` builds.
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "src"))
from attnrank.language.jobs import corpus_files  # noqa: E402
from attnrank.minip.jobs import MINIP_EXPERIMENTS  # noqa: E402
from attnrank.pipeline.codehash import CODE_HASHES_ENV, shared_code_hashes  # noqa: E402
from attnrank.pipeline.codehash import step_code_hash  # noqa: E402
from attnrank.pipeline.onejob import one_job_scales, one_jobs, rule_of  # noqa: E402
from attnrank.pipeline.onejob import separate_scales  # noqa: E402
from attnrank.pipeline.plan import ENTROPIC_WILDCARD, build_plans  # noqa: E402
from attnrank.pipeline.progress import FD_ENV, PROGRESS_FD  # noqa: E402
from attnrank.pipeline.recovery import mark_run, record_owner, recover  # noqa: E402
from attnrank.pipeline.registry import FIGURES, STEPS, TABLES  # noqa: E402
from attnrank.pipeline.runner import ALLOCATOR_ENV, CHECKPOINT_ENV  # noqa: E402
from attnrank.pipeline.schedule import longest_first, reference_seconds  # noqa: E402
from attnrank.pipeline.schedule import seconds_of  # noqa: E402

CONDA_ENV = "../../envs/attnrank.yaml"
RESULTS = "results/{scale}"  # artifacts only: every file here has a .prov.json sidecar
LOGS = "logs/{scale}"  # rule logs and benchmark timings (not artifacts)

try:
    PLANS = build_plans(config)
except ValueError as err:
    raise WorkflowError(f"config: {err}") from None
# At the scales of one_job_per_rule every training and compute rule runs all its jobs in one
# process (workflow/rules/onejob.smk); its per-job rule takes `scale=SEPARATE`, the other scales.
ONE_JOBS = {
    name: job
    for scale in one_job_scales(config)
    if scale in PLANS
    for name, job in one_jobs(PLANS[scale].runs, scale).items()
}
SEPARATE = separate_scales(PLANS, one_job_scales(config))

# Training jobs read the checkpoint interval from the environment, not from their command line
# or params: changing checkpoint_every reruns nothing (the results do not depend on it).
os.environ[CHECKPOINT_ENV] = str(config["checkpoint_every"])
# glibc malloc settings for every job (speed only, same bytes: benchmarks/allocator.py); a value
# already in the environment wins.
for key, value in ALLOCATOR_ENV.items():
    os.environ.setdefault(key, value)
# Training rules keep Snakemake's stderr open as descriptor 3 (`3>&2 > {log} 2>&1`): a job writes
# one progress line there every $ATTNRANK_PROGRESS_SECONDS (default 30 s), its log gets the rest.
os.environ[FD_ENV] = str(PROGRESS_FD)
# Every step's code hash, computed once here for the rules' params, goes to the jobs too: a job
# whose package is this one records it instead of parsing its closure again (codehash.step_code).
os.environ[CODE_HASHES_ENV] = shared_code_hashes(
    [(name, None) for name, step in STEPS.items() if step.kind != "figure"]
    + [("figure", name) for name in FIGURES]
)
if workflow.is_main_process:
    # A Snakemake killed in this folder left its locks (and maybe jobs) behind: remove them so
    # the same command resumes the run (attnrank.pipeline.recovery; a live run is never touched). Every job
    # started from here carries this run's mark in its environment.
    for line in recover():
        print(f"attnrank: {line}", file=sys.stderr)
    mark_run()


onstart:
    record_owner(Path.cwd())


def planned_values(step, wildcard):
    """A wildcard constraint: the values the plans of every scale give ``wildcard`` of ``step``
    (in the runs that have it)."""
    values = {
        r.wildcards[wildcard]
        for p in PLANS.values()
        for r in p.runs
        if r.step == step and wildcard in r.wildcards
    }
    return "|".join(sorted(values, key=lambda v: (-len(v), v)))


wildcard_constraints:
    scale="|".join(PLANS),
    experiment="|".join(MINIP_EXPERIMENTS),
    instance="[A-Za-z0-9_]+",


def _step_run(w, output):
    """The planned step run producing ``output`` (a pattern relative to results/<scale>/)."""
    return PLANS[w.scale].run_for(output.format(**dict(w.items())))


def job_params(output):
    """params: the resolved parameters (canonical JSON) of the step run that produces output."""
    return lambda w: _step_run(w, output).params_json


def step_inputs(output):
    """input: the planned inputs of the step run that produces output."""
    return lambda w: [f"results/{w.scale}/{p}" for p in _step_run(w, output).inputs]


def corpus_inputs(output):
    """input: the user corpus files (config language.corpora.<name>.file) the step run producing
    ``output`` reads, so an edited file reruns it (builtins are covered by the code hash)."""
    return lambda w: corpus_files(_step_run(w, output).params)


def longest_job_first(rule):
    """priority: the job's seconds in the committed reference (attnrank.pipeline.schedule), so
    the longest jobs start first and a run does not end on one long job alone."""
    return longest_first(Path(workflow.basedir) / "results" / "reference", rule)


def one_job_priority(job):
    """priority of a one-job rule: the sum of its jobs' seconds in the committed reference."""
    seconds = reference_seconds(Path(workflow.basedir) / "results" / "reference")
    return int(sum(seconds_of(seconds, rule_of(r), r.wildcards) for r in job.runs))


def wildcards_json(w):
    import json

    return json.dumps(dict(w.items()), sort_keys=True)


def all_targets():
    scale = config["scale"]
    return [f"results/{scale}/{t}" for t in PLANS[scale].targets] + [f"results/{scale}/audit.json"]


def unknown_figure(w):
    """input of unknown_figure: a one-line refusal naming the figures (before any job runs)."""
    raise WorkflowError(
        f"no figure named {w.name!r}: results/<scale>/figures/<name>.pdf or .png, where <name> "
        f"is one of: {', '.join(FIGURES)}"
    )
