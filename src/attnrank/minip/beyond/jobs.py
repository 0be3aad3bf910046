"""Typed jobs of the families beyond the single head (docs/methods.md §3.9, TT-7), their config.

``minip.scales.<scale>.beyond`` (docs/configuration.md): the families, the head counts H, the
feature budgets F, the m of B2's grid, the random-token steps and the witness-suite block. One
job per instance (``m<m>`` on B2's random tokens, ``witness`` on B3's family) trains every
(family, F) group and seed as one vectorized program, on the data, evaluation sets, seeds and
optimizer of the B2/B3 job it embeds (``train``; only its step count is the block's), with the
single nonnegative head (``kernel``) beside them under the same recipe as the reference.

Kept out of ``minip.jobs`` so that adding these jobs changes no other step's code hash.
Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from attnrank.core.job import Job
from attnrank.minip.beyond.families import BEYOND_FAMILIES, PLAIN, BeyondGroup, family_groups
from attnrank.minip.jobs import MAX_TABLE_BITS, MinipTrainJob, minip_jobs

BEYOND = "beyond"  # the experiment name of these jobs (init seeds, paths, tables)
WITNESS_INSTANCE = "witness"
BEYOND_TABLE = "minip_beyond"
BEYOND_GROWTH = "minip_beyond_growth"


@dataclass(frozen=True)
class MinipBeyondJob(Job):
    """Every (family, budget) group × seed of one instance: ``train`` is the B2/B3 job whose
    data, evaluation, seeds and recipe it uses (steps: this block's); ``families`` (with the
    plain head first), ``heads`` (H of multihead), ``budgets`` (F), ``eps`` (signed-linear ε)."""

    experiment: str
    instance: str
    families: tuple[str, ...]
    heads: tuple[int, ...]
    budgets: tuple[int, ...]
    eps: float
    train: MinipTrainJob

    _nested: ClassVar[dict[str, Any]] = {"train": MinipTrainJob.from_dict}

    def groups(self) -> list[BeyondGroup]:
        """The job's groups in table order (``beyond.families.family_groups``)."""
        return family_groups(self.families, self.heads, self.budgets)


@dataclass(frozen=True)
class BeyondGrowthJob(Job):
    """The growth table: per family line the smallest F reaching each target per m (median over
    seeds), the slope b of log2 F = a + b·m and its seed-bootstrap interval (TT-6's code)."""

    targets: tuple[float, ...]
    bootstrap_samples: int
    interval_level: float


def family_parts(job: MinipBeyondJob) -> dict[str, MinipBeyondJob]:
    """One job per family of an instance's job (the pipeline's jobs: small, resumable, a failure
    confined to one family); each trains on the same batches and inits as the whole would."""
    return {f: replace(job, families=(f,)) for f in job.families}


def beyond_block(minip: dict[str, Any], scale: str) -> dict[str, Any] | None:
    """The scale's ``beyond`` block, or None when the scale has none (no jobs)."""
    return minip["scales"][scale].get(BEYOND)


def beyond_config_problems(config: dict[str, Any], scale: str) -> list[str]:
    """Every cross-key problem of ``minip.scales.<scale>.beyond``, one line each naming the key
    (the schema checks the types)."""
    minip = config["minip"]
    b = beyond_block(minip, scale)
    if b is None:
        return []
    where = f"minip.scales.{scale}.{BEYOND}"
    g = minip["scales"][scale]
    out: list[str] = []
    unknown = [f for f in b["families"] if f not in BEYOND_FAMILIES]
    if unknown:
        out.append(f"{where}.families = {b['families']}: each one of {', '.join(BEYOND_FAMILIES)}")
    missing = [m for m in b["ms"] if m not in g["rank_vs_m"]["ms"]]
    if missing:
        out.append(f"{where}.ms = {b['ms']}: every m in rank_vs_m.ms = {g['rank_vs_m']['ms']} "
                   "(B2's job at that m gives the data and the 6000-step reference)")
    if len(set(b["ms"])) < 2:
        out.append(f"{where}.ms = {b['ms']}: at least two m (a slope of log2 F on m)")
    w = b["witness"]
    if w["feature_map"] not in g["witness"]["feature_maps"]:
        out.append(f"{where}.witness.feature_map = {w['feature_map']!r}: one of witness."
                   f"feature_maps = {g['witness']['feature_maps']} (B3's job gives the family)")
    if (g["rank_vs_m"]["feature_map"] == "table"
            and max(b["ms"], default=0) > MAX_TABLE_BITS):
        out.append(f"{where}.ms = {b['ms']}: at most {MAX_TABLE_BITS} with table features")
    for key, budgets in (("budgets", b["budgets"]), ("witness.budgets", w["budgets"])):
        if "multihead" in b["families"] and not any(f % h == 0 and f >= h for f in budgets
                                                     for h in b["heads"]):
            out.append(f"{where}.{key} = {budgets}: some F must split into H = {b['heads']} heads")
    if not config["minip"]["signed_linear_eps"] > 0:
        out.append(f"minip.signed_linear_eps = {config['minip']['signed_linear_eps']}: > 0")
    return out


def beyond_jobs(config: dict[str, Any], scale: str) -> dict[str, MinipBeyondJob | BeyondGrowthJob]:
    """The jobs at ``scale``: instance → MinipBeyondJob (``m<m>``…, ``witness``) and
    ``BEYOND_GROWTH`` → the growth table's job; empty when the scale has no ``beyond`` block.
    ValueError naming the key on a config ``beyond_config_problems`` refuses."""
    minip = config["minip"]
    b = beyond_block(minip, scale)
    if b is None:
        return {}
    problems = beyond_config_problems(config, scale)
    if problems:
        raise ValueError("\n".join(problems))
    base = minip_jobs(config, scale)
    families = (PLAIN, *b["families"])
    common = dict(experiment=BEYOND, families=families, heads=tuple(b["heads"]),
                  eps=float(minip["signed_linear_eps"]))
    out: dict[str, MinipBeyondJob | BeyondGrowthJob] = {}
    for m in b["ms"]:
        train = base[("rank_vs_m", f"m{m}")]
        assert isinstance(train, MinipTrainJob)
        out[f"m{m}"] = MinipBeyondJob(
            instance=f"m{m}", budgets=tuple(b["budgets"]),
            train=replace(train, ranks=(), dense=False, steps=int(b["steps"])), **common)
    w = b["witness"]
    train = base[("witness", w["feature_map"])]
    assert isinstance(train, MinipTrainJob)
    out[WITNESS_INSTANCE] = MinipBeyondJob(
        instance=WITNESS_INSTANCE, budgets=tuple(w["budgets"]),
        train=replace(train, ranks=(), dense=False, steps=int(w["steps"])), **common)
    t6 = config["claims"]["TT-6"]
    out[BEYOND_GROWTH] = BeyondGrowthJob(targets=tuple(float(t) for t in t6["targets"]),
                                         bootstrap_samples=int(t6["bootstrap_samples"]),
                                         interval_level=float(t6["interval_level"]))
    return out
