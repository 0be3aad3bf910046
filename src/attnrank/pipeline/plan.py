"""The plan: every artifact a run at one scale produces, with the step, wildcards, resolved
parameters and inputs that produce it. Built from the config alone (pure; standard library).

The workflow reads its targets, rule inputs and ``params`` from here, and ``audit`` compares
each sidecar against it (stale parameters, orphaned artifacts), so the two cannot disagree.
Paths are relative to the run folder ``results/<scale>/``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from attnrank.core.job import Job, canonical_json
from attnrank.core.table_job import TableJob
from attnrank.entropic.jobs import entropic_jobs
from attnrank.entropic.open3 import jobs as open3_spec
from attnrank.entropic.predict_grid import d32_jobs, is_d32
from attnrank.language.jobs import CORPORA as LANGUAGE_CORPORA
from attnrank.language.jobs import RUNG as LANGUAGE_RUNG
from attnrank.language.jobs import TRAIN as LANGUAGE_TRAIN
from attnrank.language.jobs import language_jobs
from attnrank.minip.beyond.families import MULTIHEAD
from attnrank.minip.beyond.jobs import (
    BEYOND,
    BEYOND_GROWTH,
    BEYOND_TABLE,
    MinipBeyondJob,
    beyond_block,
    beyond_jobs,
    family_parts,
)
from attnrank.minip.experiments.rank_growth import RankGrowthJob
from attnrank.minip.jobs import (
    CAPACITY_INSTANCES,
    MINIP_EXPERIMENTS,
    RESTARTS,
    RESTARTS_TABLE,
    WITNESS_FAMILIES_TABLE,
    MinipTrainJob,
    minip_jobs,
)
from attnrank.pipeline.registry import CLAIMS, FIGURES, TABLES, claim_tables

# Files a run folder holds that are reports about the run, not artifacts (no sidecar).
NON_ARTIFACTS = ("audit.json", "report.html", "MANIFEST.json", "MANIFEST.sha256")


@dataclass(frozen=True)
class StepRun:
    """One execution of a registered step: its outputs and inputs (relative to the run folder)."""

    step: str
    wildcards: dict[str, str]
    params: dict[str, Any]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    figure: str | None = None

    @property
    def params_json(self) -> str:
        return canonical_json(self.params)


@dataclass
class Plan:
    scale: str
    runs: list[StepRun] = field(default_factory=list)
    by_output: dict[str, StepRun] = field(default_factory=dict)
    targets: list[str] = field(default_factory=list)

    def add(self, run: StepRun) -> None:
        for out in run.outputs:
            if out in self.by_output:
                raise ValueError(f"plan: {out} is produced twice")
            self.by_output[out] = run
        self.runs.append(run)

    def run_for(self, output: str) -> StepRun:
        """The step run that produces ``output`` (a path relative to the run folder)."""
        try:
            return self.by_output[output]
        except KeyError:
            raise ValueError(f"scale {self.scale!r}: no step produces {output!r}; check the "
                             f"config grids (instances, teachers, rungs)") from None

    def downstream(self, outputs: set[str]) -> set[str]:
        """Every artifact that depends, directly or through others, on any of ``outputs``."""
        found: set[str] = set()
        frontier = set(outputs)
        while frontier:
            nxt = {o for r in self.runs if frontier & set(r.inputs) for o in r.outputs}
            frontier = nxt - found
            found |= nxt
        return found


# minip_train jobs run as two jobs, cut at a feature rank, so that none runs for long (each was
# among the longest of the full DAG): (experiment, instance) → the smallest rank of the second
# part, which also takes the dense baseline (so the parts' rows, one after the other, are the
# whole job's in table order)
TRAIN_CUTS: dict[tuple[str, str], int] = {("ood", "large"): 64, ("rank_vs_m", "m24"): 64}
# multihead jobs of the beyond study cut once more, at a budget F: (instance, H) → the smallest F
# of the second part (the m = 12 jobs of 4 and 8 heads ran 346 and 389 s on a host 1.4x slower
# than the reference's; every cut keeps the rows in table order, budgets ascending)
BEYOND_CUTS: dict[tuple[str, int], int] = {("m12", 4): 64, ("m12", 8): 64}


def train_parts(experiment: str, instance: str, job: MinipTrainJob) -> dict[str, MinipTrainJob]:
    """The pipeline's jobs of one minip_train job: the job itself under its instance name, or,
    for a job of ``TRAIN_CUTS`` with ranks on both sides of its cut, two parts named by their
    ranks (``large_r1_32``, ``large_r64_128_dense``). A part only leaves rank groups out: every
    model keeps its init (from its group tag and the job's experiment and instance, which a part
    keeps) and the job's data stream, so it follows the trajectory it follows in the whole job
    (bit for bit on the CPU: tests/test_minip_paths.py)."""
    at = TRAIN_CUTS.get((experiment, instance))
    low = tuple(r for r in job.ranks if at is not None and r < at)
    high = tuple(r for r in job.ranks if at is not None and r >= at)
    if not low or not high:
        return {instance: job}
    dense = "_dense" if job.dense else ""
    return {f"{instance}_r{low[0]}_{low[-1]}": replace(job, ranks=low, dense=False),
            f"{instance}_r{high[0]}_{high[-1]}{dense}": replace(job, ranks=high)}


WHOLE_BEYOND_JOB = "all"  # the job of a whole beyond instance (a scale's beyond.split: false)


def beyond_parts(job: MinipBeyondJob, split: bool = True) -> dict[str, MinipBeyondJob]:
    """The pipeline's jobs of one beyond instance, in table order; ``split`` false (a scale's
    ``beyond.split``): the whole instance as one job, ``WHOLE_BEYOND_JOB`` (fewer processes,
    the same rows and weights: tests/test_minip_beyond.py). Else one per family
    (``family_parts``), the multihead family cut further into one job per head count H
    (``multihead-H<H>``; an H with no budget that splits into H heads has no job). A part only
    leaves groups out: every model keeps its init (from its group tag) and the instance's data
    stream, so it follows the trajectory it follows in the whole job (bit for bit on the CPU:
    benchmarks/split_cost.py, tests/test_minip_beyond.py), and no job runs for long (the
    multihead jobs were the longest of the DAG); a (instance, H) of ``BEYOND_CUTS`` with budgets
    on both sides of its cut runs as two jobs named by their budgets (``multihead-H8-F8_32``,
    ``multihead-H8-F64_64``)."""
    if not split:
        return {WHOLE_BEYOND_JOB: job}
    out: dict[str, MinipBeyondJob] = {}
    for family, part in family_parts(job).items():
        if family != MULTIHEAD:
            out[family] = part
            continue
        for h in part.heads:
            cut = replace(part, heads=(h,))
            if not cut.groups():
                continue
            at = BEYOND_CUTS.get((job.instance, h))
            used = sorted({g.budget for g in cut.groups()})
            low = tuple(f for f in used if at is not None and f < at)
            high = tuple(f for f in used if at is not None and f >= at)
            if not low or not high:
                out[f"{family}-H{h}"] = cut
                continue
            for fs in (low, high):
                out[f"{family}-H{h}-F{fs[0]}_{fs[-1]}"] = replace(cut, budgets=fs)
    return out


def _train(step: str, prefix: str, names: tuple[str, ...], wildcards: dict[str, str],
           job: Job) -> StepRun:
    return StepRun(step, wildcards, job.to_dict(), (), tuple(f"{prefix}/{n}" for n in names))


ENTROPIC_TABLES: dict[str, tuple[str, str, bool, bool, bool]] = {
    # table → (experiment, rows kept, keep only the largest student rank, jobs under the other
    # teacher values: the extra jobs of EB-7/8/9/12, jobs of the second predictability grid
    # (``predict_d32``); neither is ever mixed into the default tables)
    "entropic_surrogate": ("surrogate", "selected", False, False, False),
    "entropic_surrogate_trace": ("surrogate", "all", True, False, False),
    "entropic_ladder": ("ladder", "final", False, False, False),
    "entropic_attention": ("attention", "final", False, False, False),
    "entropic_attention_trace": ("attention", "all", True, False, False),
    "entropic_predict": ("predict", "all", False, False, False),
    "entropic_attention_other_values": ("attention", "final", False, True, False),
    "entropic_predict_other_values": ("predict", "all", False, True, False),
    "entropic_predict_d32": ("predict", "all", False, False, True),
}
# appendix B: a training job's outputs, and the table made of each kind of them (every row): of
# the base rung's jobs only, or (True) of every rung's
LANGUAGE_OUTPUTS = ("ranks.parquet", "loss.parquet", "field.parquet", "weights.npz")
LANGUAGE_TABLES = {"language_ranks": ("ranks.parquet", False),
                   "language_loss": ("loss.parquet", False),
                   "language_field": ("field.parquet", True),
                   "language_field_loss": ("loss.parquet", True)}
ENTROPIC_WILDCARD = {"surrogate": "optimizer", "ladder": "rung", "attention": "teacher",
                     "predict": "teacher"}


def figure_params(config: dict[str, Any], scale: str, paper: str, name: str = "") -> dict[str, Any]:
    """The parameters of a figure ``name`` of ``paper``: the grid facts it labels and the claim
    thresholds it draws, from the config's ``claims`` block (never literals here or in the
    figure). Appendix B's figures (``language_*``) get EB-15's bootstrap and EB-16's threshold,
    ``language_realized_field`` the outside reference's k90 ranges of OPEN-4."""
    c = config["claims"]
    if name == "language_realized_field":  # OPEN-4: the outside reference's k90 ranges
        return {"scale": scale, **{k: c["OPEN-4"][k] for k in ("anchor_field_k90",
                                                               "anchor_static_k90")}}
    if name.startswith("language_"):
        return {"scale": scale, "bootstrap_samples": c["EB-15"]["bootstrap_samples"],
                "interval_level": c["EB-15"]["interval_level"],
                "min_abs_rho": c["EB-16"]["min_abs_rho"]}
    if paper == "B":
        w = config["minip"]["scales"][scale]["witness"]
        return {"scale": scale, "target_accuracy": c["target_accuracy"],
                "exact_accuracy": c["exact_accuracy"], "worst_case_cutoff": c["worst_case_cutoff"],
                "witness": {"blocks": w["blocks"], "width": w["width"]},
                "paper_witness_rank": c["TT-4p"]["fails_below"],
                "rank_growth": {k: c["TT-6"][k] for k in ("bootstrap_samples", "interval_level")}}
    e = config["entropic"]
    return {"scale": scale, "headline_tau": e["headline_tau"], "headline_beta": e["headline_beta"],
            "taus": e["taus"], "noise_var": e["noise_var"], "floor": c["noise_floor"],
            "rank_tolerance": c["rank_tolerance"], "saturation_tau": c["saturation_tau"],
            "d": e["d"], "n_tokens": e["n_tokens"],
            "deficiency_excess": {"linear": c["EB-7"]["deficiency_excess"],
                                  "softmax": c["EB-8"]["deficiency_excess"]}}


def claims_params(config: dict[str, Any], scale: str) -> dict[str, Any]:
    """The parameters of the claims step: every threshold (the ``claims`` block), each wing's
    shared settings and the grids of this scale the checks need to know (never another scale's
    grids: a smoke-only change leaves a full run's claims current)."""
    def shared(wing: str) -> dict[str, Any]:
        return {k: v for k, v in config[wing].items() if k != "scales"}
    return {"scale": scale, "claims": config["claims"], "minip": shared("minip"),
            "minip_grid": config["minip"]["scales"][scale], "entropic": shared("entropic"),
            "entropic_grid": config["entropic"]["scales"][scale]}


def build_plan(config: dict[str, Any], scale: str) -> Plan:
    """Every artifact of a run at ``scale``. Raises ValueError (naming the key) on a config that
    the cross-key checks refuse."""
    for block in ("minip", "entropic", "language"):
        if scale not in config[block]["scales"]:
            raise ValueError(f"{block}.scales: no grid for scale {scale!r}; "
                             f"config has {', '.join(config[block]['scales'])}")
    plan = Plan(scale)
    tables: dict[str, StepRun] = {}

    # Paper B
    mj = minip_jobs(config, scale)
    for (kind, inst), job in mj.items():
        if kind in MINIP_EXPERIMENTS:
            for name, part in train_parts(kind, inst, job).items():
                plan.add(_train("minip_train", f"minip/train/{kind}/{name}",
                                ("metrics.parquet", "weights.npz"),
                                {"experiment": kind, "instance": name}, part))
        elif kind == "capacity":
            plan.add(_train("minip_capacity_train", f"minip/capacity/{inst}", ("metrics.parquet",),
                            {"instance": inst}, job))
        elif kind == RESTARTS:
            plan.add(_train("minip_restarts_train", f"minip/restarts/{inst}", ("metrics.parquet",),
                            {"case": inst}, job))
    for exp in MINIP_EXPERIMENTS:
        if TABLES[f"minip_{exp}"].step != "table":
            continue  # a table of its own step (witness_families: below)
        inputs = tuple(r.outputs[0] for r in plan.runs
                       if r.step == "minip_train" and r.wildcards["experiment"] == exp)
        tables[f"minip_{exp}"] = StepRun("table", {"name": f"minip_{exp}"},
                                         TableJob("final", False).to_dict(), inputs, ())
    tables["minip_capacity"] = StepRun(
        "table", {"name": "minip_capacity"}, TableJob("all", False).to_dict(),
        tuple(f"minip/capacity/{i}/metrics.parquet" for i in CAPACITY_INSTANCES), ())
    families = mj[(WITNESS_FAMILIES_TABLE, "")]
    plan.add(StepRun("minip_witness_families", {}, families.to_dict(),
                     tuple(f"minip/train/{s.experiment}/{s.instance}/{name}"
                           for s in families.families for name in ("metrics.parquet", "weights.npz")),
                     ("tables/minip_witness_families.parquet",
                      "tables/minip_witness_families_summary.parquet",
                      "tables/minip_witness_families_summary.csv")))
    restarts = mj[(RESTARTS_TABLE, "")]
    plan.add(StepRun("minip_restarts_tables", {}, restarts.to_dict(),
                     tuple(f"minip/restarts/{c}/metrics.parquet" for c in restarts.cases),
                     ("tables/minip_restarts.parquet", "tables/minip_restarts_summary.parquet",
                      "tables/minip_restarts_summary.csv")))
    plan.add(StepRun("minip_constructions", {}, mj[("constructions", "")].to_dict(), (),
                     ("tables/minip_constructions.parquet",)))
    plan.add(StepRun("minip_information_bound", {}, mj[("information_bound", "")].to_dict(),
                     tuple(f"tables/minip_{e}.parquet" for e in ("length_sweep", "rank_vs_m", "witness")),
                     ("tables/minip_information_bound.parquet", "tables/minip_information_bound.csv")))

    t6 = config["claims"]["TT-6"]
    plan.add(StepRun("minip_rank_growth", {},
                     RankGrowthJob(tuple(float(t) for t in t6["targets"]),
                                   int(t6["bootstrap_samples"]),
                                   float(t6["interval_level"])).to_dict(),
                     ("tables/minip_rank_vs_m.parquet",), ("tables/minip_rank_growth.parquet",)))

    # Paper B beyond the single head (B6, TT-7): one training job per instance and family
    # (multihead: per H; or per instance, beyond.split false), the table of their final rows,
    # the growth fit against B2's table
    beyond = beyond_jobs(config, scale)
    split = bool((beyond_block(config["minip"], scale) or {}).get("split", True))
    parts = [(inst, fam, job) for inst, whole in beyond.items() if isinstance(whole, MinipBeyondJob)
             for fam, job in beyond_parts(whole, split).items()]
    for inst, fam, job in parts:
        plan.add(_train("minip_beyond_train", f"minip/{BEYOND}/{inst}/{fam}",
                        ("metrics.parquet", "weights.npz"), {"instance": inst, "family": fam}, job))
    tables[BEYOND_TABLE] = StepRun(
        "table", {"name": BEYOND_TABLE}, TableJob("final", False).to_dict(),
        tuple(f"minip/{BEYOND}/{inst}/{fam}/metrics.parquet" for inst, fam, _ in parts), ())
    if BEYOND_GROWTH in beyond:
        plan.add(StepRun("minip_beyond_growth", {}, beyond[BEYOND_GROWTH].to_dict(),
                         (f"tables/{BEYOND_TABLE}.parquet", "tables/minip_rank_vs_m.parquet"),
                         (f"tables/{BEYOND_GROWTH}.parquet",)))

    # Paper A (OPEN-3's student sweeps and predict jobs run by the same steps, into its own tables)
    open3 = open3_spec.open3_jobs(config, scale)
    for (exp, inst), job in (entropic_jobs(config, scale) | d32_jobs(config, scale)
                             | open3.runs).items():
        outs = ("estimates.parquet", "spectra.npz") if exp == "predict" else \
            ("metrics.parquet", "weights.npz")
        step = "entropic_predict" if exp == "predict" else f"entropic_{exp}_train"
        plan.add(_train(step, f"entropic/{exp}/{inst}", outs, {ENTROPIC_WILDCARD[exp]: inst}, job))
    values = config["entropic"]["teacher_values"]
    for name, (exp, select, max_rank, other, d32) in ENTROPIC_TABLES.items():
        inputs = tuple(r.outputs[0] for r in plan.runs
                       if r.outputs[0].startswith(f"entropic/{exp}/")
                       and (r.params["teacher_values"] != values) == other
                       and is_d32(r.params["instance"]) == d32
                       and (exp, r.params["instance"]) not in open3.runs)
        tables[name] = StepRun("table", {"name": name},
                               TableJob(select, max_rank).to_dict(), inputs, ())
    # OPEN-3 (docs/methods.md §2.9): its sweeps' and predict jobs' tables, the candidate on every
    # predict job it judges (one job), and the judged tables
    for name, (exp, select) in {open3_spec.ATTENTION_TABLE: ("attention", "final"),
                                open3_spec.PREDICT_TABLE: ("predict", "all")}.items():
        inputs = tuple(f"entropic/{e}/{i}/{'metrics' if e == 'attention' else 'estimates'}.parquet"
                       for e, i in open3.runs if e == exp)
        tables[name] = StepRun("table", {"name": name}, TableJob(select, False).to_dict(),
                               inputs, ())
    plan.add(StepRun("entropic_open3_candidate", {}, open3.candidate.to_dict(), (),
                     (f"tables/{open3_spec.CANDIDATE_TABLE}.parquet",)))
    plan.add(StepRun("entropic_open3", {}, open3.table.to_dict(),
                     tuple(f"tables/{t}.parquet" for t in (
                         "entropic_attention", open3_spec.ATTENTION_TABLE, "entropic_predict",
                         "entropic_predict_d32", open3_spec.PREDICT_TABLE, open3_spec.CANDIDATE_TABLE)),
                     (f"tables/{open3_spec.SMIN_TABLE}.parquet", f"tables/{open3_spec.SMIN_TABLE}.csv",
                      f"tables/{open3_spec.ERRORS_TABLE}.parquet",
                      f"tables/{open3_spec.RATTN_TABLE}.parquet")))

    # Paper A, appendix B: language models on text (the corpora table, one training job per
    # corpus and one per corpus and larger rung, the ranks, loss and field tables; language.smk)
    for (kind, key), job in language_jobs(config, scale).items():
        if kind == LANGUAGE_CORPORA:
            plan.add(StepRun("language_corpora", {}, job.to_dict(), (),
                             ("tables/language_corpora.parquet", "tables/language_corpora.csv")))
        elif kind == LANGUAGE_TRAIN:
            plan.add(_train("language_train", f"language/train/{key}", LANGUAGE_OUTPUTS,
                            {"corpus": key}, job))
        elif kind == LANGUAGE_RUNG:
            rung, corpus = key.split("/")
            plan.add(_train("language_train", f"language/rungs/{key}", LANGUAGE_OUTPUTS,
                            {"rung": rung, "corpus": corpus}, job))
    for name, (output, every_rung) in LANGUAGE_TABLES.items():
        inputs = tuple(f"{r.outputs[0].rsplit('/', 1)[0]}/{output}" for r in plan.runs
                       if r.step == "language_train" and (every_rung or "rung" not in r.wildcards))
        tables[name] = StepRun("table", {"name": name}, TableJob("all", False).to_dict(), inputs, ())

    for name, run in tables.items():
        if TABLES[name].step != "table":
            raise ValueError(f"registry: table {name} is not made by the table step")
        plan.add(StepRun(run.step, run.wildcards, run.params, run.inputs,
                         (f"tables/{name}.parquet",)))
    missing = [t for t in TABLES if f"tables/{t}.parquet" not in plan.by_output]
    if missing:
        raise ValueError(f"registry: tables {missing} have no step in the plan")

    for name, fig in FIGURES.items():
        plan.add(StepRun("figure", {"name": name}, figure_params(config, scale, fig.paper, name),
                         tuple(f"tables/{t}.parquet" for t in fig.tables),
                         (f"figures/{name}.pdf", f"figures/{name}.png"), figure=name))
    plan.add(StepRun("claims", {}, claims_params(config, scale),
                     tuple(f"tables/{t}.parquet" for t in claim_tables()),
                     ("claims.md", "claims.csv", "claims.html")))
    assert CLAIMS  # the registry is not empty
    plan.targets = ([f"figures/{n}.pdf" for n in FIGURES]
                    + ["tables/minip_information_bound.csv", "tables/language_corpora.csv",
                       "claims.md"])
    return plan


def build_plans(config: dict[str, Any]) -> dict[str, Plan]:
    """A plan for every scale the config defines (each checked)."""
    return {scale: build_plan(config, scale) for scale in config["minip"]["scales"]}
