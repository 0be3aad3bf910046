"""The one registry of the pipeline's names: steps, tables, figures and claims.

Every other layer reads its names from here: the ``.smk`` files (rules, targets, inputs), the CLI
(every step's command, its flags and help, and what the step runner calls), the figures (which
tables a figure reads), the claims (which tables a claim needs) and the audit (which module a
step runs, so its code hash can be derived from the imports).

Standard library only: the workflow imports this module while it parses the Snakefile.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnrank.core import WINGS

# How the step runner calls a step's function (``Step.kind``).
KINDS = ("train", "compute", "table", "figure", "claims")


@dataclass(frozen=True)
class Arg:
    """A file argument of a step's command: its ``--inputs`` or one of its outputs. An output's
    flag without the dashes (``--out`` → ``out``) is the key under which the step returns what
    goes there."""

    flag: str
    help: str | None = None
    nargs: str | int | None = None  # --inputs: "+" (one or more) or how many
    required: bool = True
    companions: tuple[str, ...] = ()  # an output's siblings: its path with these suffixes

    @property
    def dest(self) -> str:
        """The attribute of the parsed arguments (and an output's key in the step's result)."""
        return self.flag.lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class Step:
    """One kind of pipeline step (one Snakemake rule, or one family of figure rules; a second rule
    running it is named in ``MORE_RULES``) and its
    command, ``python -m attnrank <command>``, which the CLI builds from these fields.

    ``entry`` is the module (inside ``attnrank``) that holds the step's logic: its code hash is
    the sha256 of the import closure of that module (see ``codehash.py``). The step runner
    (``runner.run_step``) builds ``job`` (``module.Class``, a typed job) from ``--params`` and
    calls ``fn`` of ``entry`` as ``kind`` says:

    - ``train``: ``fn(job, device, control)``; flags ``--device``, ``--threads`` and
      ``--checkpoint-every``; the checkpoint lies beside the first output;
    - ``compute``: ``fn(job)``, from the parameters alone, on the CPU;
    - ``table``: ``fn(job, inputs)``;
    - ``figure``, ``claims``: the report steps, whose function takes the raw parameters.

    The command's flags are ``--params``, ``--rule``, ``--wildcards``, then ``inputs``, the
    ``outputs`` and ``--threads`` (when ``threads``). ``seed`` (job → the seed record of the
    sidecars) and ``what`` (job → the log line naming the job) are functions of the typed job.
    Steps sharing a command (``entropic-train``) differ in ``when``: (key, value) of the
    ``--params`` that pick each.
    """

    name: str
    command: str
    entry: str
    help: str = ""
    kind: str = "table"
    job: str = ""
    fn: str = "step"
    inputs: Arg | None = None
    outputs: tuple[Arg, ...] = ()
    threads: bool = False
    seed: Callable[[Any], dict[str, Any]] | None = None
    what: Callable[[Any], str] | None = None
    when: tuple[str, str] | None = None


@dataclass(frozen=True)
class Table:
    name: str
    step: str
    paper: str


@dataclass(frozen=True)
class Figure:
    name: str
    paper: str
    tables: tuple[str, ...]


@dataclass(frozen=True)
class ClaimSpec:
    id: str
    paper: str
    tables: tuple[str, ...]


def _index(items):
    return {item.name if hasattr(item, "name") else item.id: item for item in items}


INPUTS = Arg("--inputs", nargs="+")
METRICS = Arg("--metrics", "output metrics table (.parquet)")
WEIGHTS = Arg("--weights", "output final weights (.npz)")
CSV_REPORT = Arg("--csv", "the summary again as CSV (the report)")


def _seed(of: Callable[[Any], Any] = lambda job: job,
          **more: Callable[[Any], Any]) -> Callable[[Any], dict[str, Any]]:
    """The seed record of a job seeded by (experiment, task instance, seed index, role): that of
    ``of(job)`` (the job, or the training job it embeds), ``more`` (key → function of the job)
    written over it."""
    def record(job: Any) -> dict[str, Any]:
        seeded = of(job)
        return {"scheme": "(experiment, task instance, seed index, role)",
                "experiment": seeded.experiment, "instance": seeded.instance,
                "seeds": seeded.seeds} | {key: value(job) for key, value in more.items()}
    return record


def _record(**fixed: str) -> Callable[[Any], dict[str, Any]]:
    """A seed record that does not depend on the job."""
    return lambda job: dict(fixed)


_ENTROPIC_TRAIN: dict[str, Any] = dict(
    kind="train", outputs=(METRICS, WEIGHTS), seed=_seed(),
    what=lambda job: f"entropic {job.experiment}/{job.instance}",
    help="Paper A: train one job (surrogate, ladder rung or attention teacher; all ranks × seeds "
    "× r*)")

# In the order of `python -m attnrank --help`: the wings', then the report steps.
STEPS: dict[str, Step] = _index([
    Step("minip_train", "minip-train", "attnrank.minip.experiments.train",
         "train one Min-IP task instance (all ranks × seeds)", "train",
         "attnrank.minip.jobs.MinipTrainJob", outputs=(METRICS, WEIGHTS), seed=_seed(),
         what=lambda job: f"minip {job.experiment}/{job.instance}"),
    Step("minip_capacity_train", "minip-capacity", "attnrank.minip.experiments.capacity",
         "capacity-or-optimization probe (one instance)", "train",
         "attnrank.minip.jobs.MinipCapacityJob", outputs=(METRICS,), seed=_seed(),
         what=lambda job: f"minip capacity {job.instance}"),
    Step("minip_constructions", "minip-constructions", "attnrank.minip.experiments.constructions",
         "evaluate the hand-built constructions", "compute",
         "attnrank.minip.jobs.MinipConstructionsJob", outputs=(Arg("--out"),), threads=True,
         seed=_record(experiment="constructions")),
    Step("minip_information_bound", "minip-information-bound",
         "attnrank.minip.experiments.constructions", "B5 transcript bound table", "table",
         "attnrank.minip.jobs.InformationBoundJob", fn="information_bound_step", inputs=INPUTS,
         outputs=(Arg("--out"), Arg("--csv"))),
    Step("minip_witness_families", "minip-witness-families",
         "attnrank.minip.experiments.witness_families", "the witness-families table: every "
         "family's heads rebuilt from their weights, which inputs fail, a summary", "table",
         "attnrank.minip.jobs.WitnessFamiliesTableJob",
         inputs=Arg("--inputs", "metrics (.parquet) then weights (.npz) of every family, in the "
                    "job's order", "+"),
         outputs=(Arg("--out", "the per (family, rank, seed) table (.parquet)"),
                  Arg("--summary", "the per-family summary (.parquet)"), CSV_REPORT),
         threads=True),
    # the restart (trap) study: one job per case, then its two tables (below)
    Step("minip_restarts_train", "minip-restarts", "attnrank.minip.experiments.restarts",
         "the restart (trap) study: one case's model on every seed, recipe and variants, from "
         "the training job's init and data", "train", "attnrank.minip.jobs.MinipRestartsJob",
         outputs=(METRICS,),
         seed=_seed(lambda job: job.train, seeds=lambda job: job.seeds,
                    role=lambda job: "the training job's init and data stream"),
         what=lambda job: (f"minip restarts {job.case} ({job.train.experiment}/"
                           f"{job.train.instance} {job.model})")),
    # the families beyond the single head (B6, TT-7): one job per instance and family (multihead:
    # per H, plan.beyond_parts), then the growth fit
    Step("minip_beyond_train", "minip-beyond", "attnrank.minip.experiments.beyond",
         "the families beyond the single head (B6, TT-7): every (family, budget) group × seed "
         "of one instance", "train", "attnrank.minip.beyond.jobs.MinipBeyondJob",
         outputs=(METRICS, WEIGHTS),
         seed=_seed(lambda job: job.train, experiment=lambda job: job.experiment,
                    instance=lambda job: job.instance,
                    role=lambda job: (f"init from ({job.experiment}, {job.instance}, seed, group "
                                      f"tag); data from {job.train.experiment}/"
                                      f"{job.train.instance}'s stream")),
         what=lambda job: (f"minip {job.experiment}/{job.instance}/{'+'.join(job.families)}"
                           + (f" H={job.heads[0]}" if job.families == ("multihead",)
                              and len(job.heads) == 1 else ""))),
    Step("minip_beyond_growth", "minip-beyond-growth", "attnrank.minip.beyond.growth",
         "the smallest budget F reaching each target per m and the slope of log2 F on m, per "
         "family line", "table", "attnrank.minip.beyond.jobs.BeyondGrowthJob",
         inputs=Arg("--inputs", "the minip_beyond and minip_rank_vs_m tables (.parquet)", 2),
         outputs=(Arg("--out"),)),
    Step("minip_rank_growth", "minip-rank-growth", "attnrank.minip.experiments.rank_growth",
         "TT-6's fit as a table: per target and m the smallest rank reaching it, read on the grid "
         "and between grid points, and both slopes of log2 r on m", "table",
         "attnrank.minip.experiments.rank_growth.RankGrowthJob",
         inputs=Arg("--inputs", "the minip_rank_vs_m table (.parquet)", 1),
         outputs=(Arg("--out"),)),
    Step("minip_restarts_tables", "minip-restarts-tables", "attnrank.minip.restarts",
         "the restart study's tables: every row, and per case × variant which seeds pass and "
         "which failing seeds recover", "table", "attnrank.minip.jobs.RestartsTableJob",
         inputs=Arg("--inputs", "every case's metrics (.parquet)", "+"),
         outputs=(Arg("--out", "every logged row (.parquet)"),
                  Arg("--summary", "the per case × variant summary (.parquet)"), CSV_REPORT)),
    Step("entropic_surrogate_train", "entropic-train", "attnrank.entropic.experiments.surrogate",
         job="attnrank.entropic.jobs.SurrogateJob", when=("experiment", "surrogate"),
         **_ENTROPIC_TRAIN),
    Step("entropic_ladder_train", "entropic-train", "attnrank.entropic.experiments.ladder",
         job="attnrank.entropic.jobs.LadderJob", when=("experiment", "ladder"),
         **_ENTROPIC_TRAIN),
    Step("entropic_attention_train", "entropic-train", "attnrank.entropic.experiments.attention",
         job="attnrank.entropic.jobs.AttentionJob", when=("experiment", "attention"),
         **_ENTROPIC_TRAIN),
    Step("entropic_predict", "entropic-predict", "attnrank.entropic.experiments.predict",
         "Paper A (A4): data-only rank estimators of one teacher", "compute",
         "attnrank.entropic.jobs.PredictJob",
         outputs=(Arg("--out", "output estimates table (.parquet)"),
                  Arg("--spectra", "output singular values (.npz)")), threads=True, seed=_seed()),
    # OPEN-3 (docs/methods.md §2.9): the candidate on every predict job it judges, then the judged
    # tables (r_attn per cell, every reading's error, S_min)
    Step("entropic_open3_candidate", "entropic-open3-candidate",
         "attnrank.entropic.experiments.open3_candidate",
         "Paper A (OPEN-3): the candidate E2_centred and its floor rank on the stream of every "
         "predict job OPEN-3 judges", "compute", "attnrank.entropic.open3.jobs.Open3CandidateJob",
         outputs=(Arg("--out", "output candidate table (.parquet)"),), threads=True,
         seed=lambda job: {"scheme": "(experiment, task instance, seed index, role): each predict "
                                     "job's own draws, drawn again",
                           "jobs": [p.instance for p in job.predict]}),
    Step("entropic_open3", "entropic-open3", "attnrank.entropic.open3.table",
         "Paper A (OPEN-3): r_attn per cell, every data-only reading's error against it, and "
         "S_min per (reading, teacher, d, spectrum)", "table",
         "attnrank.entropic.open3.jobs.Open3TableJob",
         inputs=Arg("--inputs", "the entropic_attention, entropic_open3_attention, "
                    "entropic_predict, entropic_predict_d32, entropic_open3_predict and "
                    "entropic_open3_candidate tables (.parquet)", 6),
         outputs=(Arg("--out", "the S_min table (.parquet)"), CSV_REPORT,
                  Arg("--errors", "every reading's error per (cell, S) (.parquet)"),
                  Arg("--rattn", "r_attn and its source per cell (.parquet)"))),
    # appendix B: the corpora and their complexity (one table per scale)
    Step("language_corpora", "language-corpora", "attnrank.language.experiments.corpora",
         "Paper A (appendix B): the corpora table (every corpus of the scale: source, size, "
         "sha256, complexity measures)", "compute", "attnrank.language.jobs.LanguageCorporaJob",
         outputs=(Arg("--out", "output table (.parquet)"),
                  Arg("--csv", "the table again as CSV (the report)")),
         seed=_record(scheme="(language, corpus, builtin)")),
    # appendix B: one training job per corpus (every seed as the model axis), and one per corpus
    # and larger rung (rule language_rung_train)
    Step("language_train", "language-train", "attnrank.language.experiments.train",
         "Paper A (appendix B): train byte-level Transformers on one corpus (every seed as one "
         "program); ranks, loss and logit field", "train", "attnrank.language.jobs.LanguageTrainJob",
         outputs=(Arg("--ranks", "output ranks table (.parquet)"),
                  Arg("--loss", "output loss table (.parquet)"),
                  Arg("--field", "output logit-field table (.parquet)"),
                  Arg("--weights", "output final weights (.npz, float64)")),
         seed=lambda job: {"scheme": "init (language, init[, rung], seed index); batches "
                                     "(language[, rung], corpus, seed index, batches); the rung "
                                     "only for a larger rung", "corpus": job.corpus,
                           "rung": job.rung, "seeds": job.seeds, "seed_offset": job.seed_offset},
         what=lambda job: f"language {job.corpus} (rung {job.rung})"),
    Step("table", "table", "attnrank.core.tables", "concatenate metrics tables into one, keeping "
         'some rows (--params {"select": all|final|selected, "max_rank_only": bool})', "table",
         "attnrank.core.table_job.TableJob", inputs=INPUTS, outputs=(Arg("--out"),)),
    # plus the figure's own module, see codehash; the command takes the figure's name first
    Step("figure", "figure", "attnrank.core.figures", "draw one figure (PDF + PNG) from tables",
         "figure", fn="draw", inputs=INPUTS,
         outputs=(Arg("--out", "the .pdf path; the .png goes beside it", companions=(".png",)),)),
    Step("claims", "claims", "attnrank.claims", "evaluate every paper claim on the result tables",
         "claims", inputs=INPUTS,
         outputs=(Arg("--md"), Arg("--csv"),
                  Arg("--html", "also write the verdicts as an HTML page", required=False))),
])


def command_steps(command: str) -> list[Step]:
    """The registered steps a command runs (one, or several told apart by ``when``)."""
    return [s for s in STEPS.values() if s.command == command]


TABLES: dict[str, Table] = _index([
    Table("minip_length_sweep", "table", "B"),
    Table("minip_rank_vs_m", "table", "B"),
    Table("minip_witness", "table", "B"),
    Table("minip_ood", "table", "B"),
    # B4 on the earlier pools the heads memorise (reported), and the pool-size sweep at one m
    Table("minip_ood_memorising", "table", "B"),
    Table("minip_ood_pool_sweep", "table", "B"),
    Table("minip_capacity", "table", "B"),
    Table("minip_constructions", "minip_constructions", "B"),
    Table("minip_information_bound", "minip_information_bound", "B"),
    # the (K, w) sweep of the witness suite: per family × rank × seed, and per family
    Table("minip_witness_families", "minip_witness_families", "B"),
    Table("minip_witness_families_summary", "minip_witness_families", "B"),
    # the restart (trap) study: every logged row of every case, and per case × variant
    Table("minip_restarts", "minip_restarts_tables", "B"),
    Table("minip_restarts_summary", "minip_restarts_tables", "B"),
    # the families beyond the single head: final rows of every (instance, family, F, seed), and
    # per family line the smallest F reaching each target per m with the slope of log2 F on m
    Table("minip_beyond", "table", "B"),
    Table("minip_beyond_growth", "minip_beyond_growth", "B"),
    Table("minip_rank_growth", "minip_rank_growth", "B"),
    Table("entropic_surrogate", "table", "A"),
    Table("entropic_surrogate_trace", "table", "A"),
    Table("entropic_ladder", "table", "A"),
    Table("entropic_attention", "table", "A"),
    Table("entropic_attention_trace", "table", "A"),
    Table("entropic_predict", "table", "A"),
    # the same, for the extra jobs under the other teacher values V* (EB-7, EB-8, EB-9, EB-12)
    Table("entropic_attention_other_values", "table", "A"),
    Table("entropic_predict_other_values", "table", "A"),
    # the second predictability grid (d = 32; EB-13 and EB-13b report it)
    Table("entropic_predict_d32", "table", "A"),
    # OPEN-3 (docs/methods.md §2.9): the student sweeps and predict jobs under the other spectra,
    # the candidate on every judged predict job, S_min, the errors per (cell, S) and r_attn
    Table("entropic_open3_attention", "table", "A"),
    Table("entropic_open3_predict", "table", "A"),
    Table("entropic_open3_candidate", "entropic_open3_candidate", "A"),
    Table("entropic_open3", "entropic_open3", "A"),
    Table("entropic_open3_errors", "entropic_open3", "A"),
    Table("entropic_open3_rattn", "entropic_open3", "A"),
    # appendix B: one row per corpus (source, sha256, complexity measures, the headline)
    Table("language_corpora", "language_corpora", "A"),
    # appendix B: ranks of every head's static kernel and realized mixer at every logged step,
    # and the train / validation loss (bits per byte) of every (corpus, seed, logged step)
    Table("language_ranks", "table", "A"),
    Table("language_loss", "table", "A"),
    # appendix B, OPEN-4: the logit field's ranks and prior share per (rung, corpus, seed, logged
    # step, layer, head), and the loss of every rung's runs (the base rung's again)
    Table("language_field", "table", "A"),
    Table("language_field_loss", "table", "A"),
])

# Figures and claims are declared once, where their code lives: a figure module's ``PAPER`` and
# ``TABLES``, a check's ``@claim(id, paper, tables, ...)``. They are read here from the source (no
# import: the workflow parses this while it reads the Snakefile), in wing order.
PACKAGE_DIR = Path(__file__).resolve().parents[1]


def _module_constants(path: Path, names: tuple[str, ...]) -> dict[str, Any]:
    """The literal values of the module-level assignments ``names`` in the file ``path``."""
    found: dict[str, Any] = {}
    for node in ast.parse(path.read_bytes(), filename=str(path)).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id in names:
                found[target.id] = ast.literal_eval(node.value)
    missing = [n for n in names if n not in found]
    if missing:
        raise ValueError(f"{path}: a figure module must declare {', '.join(missing)} "
                         "(module-level literals)")
    return found


def collect_figures(package_dir: Path = PACKAGE_DIR) -> dict[str, Figure]:
    """Every figure module ``<wing>/figures/<name>.py``, wing by wing, names sorted."""
    figures = []
    for wing in WINGS:
        for path in sorted((package_dir / wing / "figures").glob("*.py")):
            if path.name == "__init__.py":
                continue
            decl = _module_constants(path, ("PAPER", "TABLES"))
            figures.append(Figure(path.stem, decl["PAPER"], tuple(decl["TABLES"])))
    return _index(figures)


def collect_claims(package_dir: Path = PACKAGE_DIR) -> dict[str, ClaimSpec]:
    """Every ``@claim(id, paper, tables, ...)`` of the wings' ``claims.py``, in source order
    (the order the claims step registers and reports them)."""
    claims = []
    for wing in WINGS:
        path = package_dir / wing / "claims.py"
        for node in ast.parse(path.read_bytes(), filename=str(path)).body:
            if not isinstance(node, ast.FunctionDef):
                continue
            for deco in node.decorator_list:
                if (isinstance(deco, ast.Call) and isinstance(deco.func, ast.Name)
                        and deco.func.id == "claim"):
                    try:
                        cid, paper, tables = (ast.literal_eval(a) for a in deco.args[:3])
                    except ValueError as err:
                        raise ValueError(f"{path}:{deco.lineno}: @claim's id, paper and tables "
                                         "must be literals") from err
                    claims.append(ClaimSpec(cid, paper, tuple(tables)))
    return _index(claims)


FIGURES: dict[str, Figure] = collect_figures()
CLAIMS: dict[str, ClaimSpec] = collect_claims()


def claim_tables() -> list[str]:
    """Every table some claim needs, in registry order (the claims step's inputs)."""
    return [t for t in TABLES if any(t in c.tables for c in CLAIMS.values())]


# rules that run a registered step under a name of their own (rule → step): the larger rungs'
# language jobs (their own paths and wildcards, the same step and code)
MORE_RULES = {"language_rung_train": "language_train"}
# The steps whose jobs of a scale of config ``one_job_per_rule`` run in one process, as one rule
# ``<scale>_<step>`` (attnrank.pipeline.onejob): every step with many jobs a scale, each computed
# from its parameters alone.
ONE_JOB_STEPS = ("minip_train", "minip_capacity_train", "minip_restarts_train",
                 "minip_beyond_train", "entropic_surrogate_train", "entropic_ladder_train",
                 "entropic_attention_train", "entropic_predict", "language_train")


def rule_names(one_job_scales: Sequence[str] = ()) -> list[str]:
    """Every rule of the workflow, as ``snakemake --list-rules`` names them: one per step (one
    ``figure_<name>`` per figure instead of ``figure``), those of ``MORE_RULES``, the one-job
    rules of ``one_job_scales`` (config ``one_job_per_rule``; a step with no job at a scale has
    none), the audit, ``all`` and ``unknown_figure`` (which refuses a mistyped figure name while
    the DAG is built). The Slurm profile reads them here rather than starting a nested Snakemake
    on every parse."""
    steps = [s for s in STEPS if s != "figure"]
    one_job = [f"{scale}_{step}" for scale in one_job_scales for step in ONE_JOB_STEPS]
    return sorted([*steps, *MORE_RULES, *one_job, *(f"figure_{name}" for name in FIGURES),
                   "audit", "all", "unknown_figure"])
