"""Typed jobs of Paper B (Min-IP) and the one function that builds them from the config.

``minip_jobs(config, scale)`` holds every cross-key check of the ``minip`` block that the JSON
schema cannot express; it raises ValueError naming the key. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from attnrank.jobs.base import Job, part


@dataclass(frozen=True)
class RandomData:
    kind: str  # "random"
    n_tokens: int
    m: int
    tokens: str


@dataclass(frozen=True)
class WitnessData:
    kind: str  # "witness"
    blocks: int
    width: int


@dataclass(frozen=True)
class PoolsData:
    kind: str  # "pools"
    n_tokens: int
    m: int
    tokens: str
    train_pool: int
    test_pool: int
    share_tokens: bool


DATA_KINDS: dict[str, type] = {"random": RandomData, "witness": WitnessData, "pools": PoolsData}


def parse_data(value: Any, where: str) -> Any:
    kind = value.get("kind") if isinstance(value, dict) else None
    if kind not in DATA_KINDS:
        raise ValueError(f"{where}.kind: must be one of {', '.join(DATA_KINDS)}, got {kind!r}")
    return part(DATA_KINDS[kind])(value, where)


@dataclass(frozen=True)
class WitnessFamily:
    blocks: int
    width: int


@dataclass(frozen=True)
class _MinipTrained(Job):
    """Keys every trained Min-IP job shares: the recipe, the model family and the seeds."""

    experiment: str
    instance: str
    seeds: int
    seed_offset: int
    lr: float
    warmup: float
    log_every: int
    hidden: int
    feature: str
    eval_sequences: int
    batch: int
    steps: int


@dataclass(frozen=True)
class MinipTrainJob(_MinipTrained):
    """All kernel rank groups (and the dense baseline) × seeds of one Min-IP task instance."""

    ranks: tuple[int, ...]
    dense: bool
    feature_map: str
    data: RandomData | WitnessData | PoolsData

    _nested: ClassVar[dict[str, Any]] = {"data": parse_data}

    def __post_init__(self) -> None:
        bad = [r for r in self.ranks if not isinstance(r, int) or r < 1]
        if bad:
            raise ValueError(f"{type(self).__name__}.ranks: ranks must be integers ≥ 1, got {bad}")


@dataclass(frozen=True)
class MinipCapacityJob(_MinipTrained):
    """Capacity or optimization: r = V trained from scratch and from the exact construction."""

    data: RandomData
    long_steps: int
    beta: float

    _nested: ClassVar[dict[str, Any]] = {"data": part(RandomData)}


@dataclass(frozen=True)
class MinipConstructionsJob(Job):
    """The hand-built constructions: rank 1, 2^m features, dense softmax."""

    seed_offset: int
    tokens: str
    eval_sequences: int
    rank1_m: int
    lengths: tuple[int, ...]
    exp_ms: tuple[int, ...]
    exp_betas: tuple[float, ...]
    dense_ms: tuple[int, ...]
    dense_beta: float
    witness: WitnessFamily

    _nested: ClassVar[dict[str, Any]] = {"witness": part(WitnessFamily)}


@dataclass(frozen=True)
class InformationBoundJob(Job):
    float_bits: int


WITNESS_FAMILIES = "witness_families"  # the (K, w) sweep of the witness suite, table features
MINIP_EXPERIMENTS = ("length_sweep", "rank_vs_m", "witness", "ood", WITNESS_FAMILIES)
WITNESS_FAMILIES_TABLE = "witness_families_table"  # minip_jobs' key of the table job
MAX_WITNESS_BITS = 62  # a witness token's bit code must fit an int64 (tasks.minip.bit_codes)


@dataclass(frozen=True)
class WitnessFamilySource:
    """One family of the sweep and the training job that holds its heads: its own
    (``witness_families``, ``K<K>w<w>``) job, or the configured witness family's table job."""

    blocks: int
    width: int
    experiment: str
    instance: str


def _family_sources(value: Any, where: str) -> tuple[WitnessFamilySource, ...]:
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{where}: expected a list, got {value!r}")
    return tuple(part(WitnessFamilySource)(v, f"{where}[{i}]") for i, v in enumerate(value))


@dataclass(frozen=True)
class WitnessFamiliesTableJob(Job):
    """The witness-families table: every family's final heads, re-evaluated input by input from
    their weights (the failure diagnostic), judged exact at worst-case error < the cut-off."""

    families: tuple[WitnessFamilySource, ...]
    feature: str
    worst_case_cutoff: float

    _nested: ClassVar[dict[str, Any]] = {"families": _family_sources}


def witness_family_grid(minip: dict[str, Any], scale: str) -> list[WitnessFamily]:
    """The families (K, w) of the sweep at ``scale``: every K of ``blocks`` with every w of
    ``widths`` whose m = K·w ≤ ``max_m``, sorted by (K, w). ValueError naming the key on K < 2,
    w < 1, max_m above the bit-code limit (62) or an empty grid."""
    where = f"minip.scales.{scale}.witness_families"
    g = minip["scales"][scale].get("witness_families")
    if not isinstance(g, dict):
        raise ValueError(f"{where}: missing (blocks, widths, max_m)")
    blocks, widths, max_m = g.get("blocks"), g.get("widths"), g.get("max_m")
    for key, values, low in (("blocks", blocks, 2), ("widths", widths, 1)):
        if (not isinstance(values, (list, tuple)) or not values
                or any(not isinstance(x, int) or isinstance(x, bool) or x < low for x in values)):
            raise ValueError(f"{where}.{key}: a non-empty list of integers ≥ {low}, got {values!r}")
    if not isinstance(max_m, int) or isinstance(max_m, bool) or not 2 <= max_m <= MAX_WITNESS_BITS:
        raise ValueError(f"{where}.max_m: an integer in [2, {MAX_WITNESS_BITS}] (witness tokens "
                         f"are int64 bit codes), got {max_m!r}")
    grid = [WitnessFamily(k, w) for k in sorted(set(blocks)) for w in sorted(set(widths))
            if k * w <= max_m]
    if not grid:
        raise ValueError(f"{where}: no family has m = K·w ≤ max_m = {max_m}")
    return grid


def family_instance(family: WitnessFamily) -> str:
    """The instance name of a family's own training job: ``K<K>w<w>``."""
    return f"K{family.blocks}w{family.width}"


def family_sources(minip: dict[str, Any], scale: str) -> list[WitnessFamilySource]:
    """Where each family's heads are trained: the configured witness family, when its table
    features are trained anyway (``witness.feature_maps``), is that job (same recipe, same
    ranks); every other family is a ``witness_families`` job of its own."""
    w = minip["scales"][scale]["witness"]
    shared = (w["blocks"], w["width"]) if "table" in w["feature_maps"] else None
    return [WitnessFamilySource(f.blocks, f.width, "witness", "table")
            if (f.blocks, f.width) == shared
            else WitnessFamilySource(f.blocks, f.width, WITNESS_FAMILIES, family_instance(f))
            for f in witness_family_grid(minip, scale)]
CAPACITY_INSTANCES = ("scratch", "scratch_long", "construction")


def check_minip_config(minip: dict[str, Any], scale: str) -> None:
    """Cross-key checks of ``minip`` at one scale; ValueError naming the key."""
    g = minip["scales"][scale]
    where = f"minip.scales.{scale}"
    if g["length_sweep"]["feature_map"] == "table" and g["length_sweep"]["m"] > 16:
        raise ValueError(f"{where}.length_sweep: feature_map 'table' needs m <= 16")
    if g["rank_vs_m"]["feature_map"] == "table" and max(g["rank_vs_m"]["ms"]) > 16:
        raise ValueError(f"{where}.rank_vs_m: feature_map 'table' needs every m <= 16")
    for key, ms in (("rank_vs_m.ms", g["rank_vs_m"]["ms"]),
                    ("length_sweep.m", [g["length_sweep"]["m"]]),
                    ("ood.scales[].m", [s["m"] for s in g["ood"]["scales"]])):
        if minip["tokens"] == "fixed_weight" and any(m % 2 for m in ms):
            raise ValueError(f"{where}.{key}: fixed-weight tokens need even m, got {ms}")
    names = [s["name"] for s in g["ood"]["scales"]]
    if len(set(names)) != len(names):
        raise ValueError(f"{where}.ood.scales: names must be unique, got {names}")
    witness_family_grid(minip, scale)


def minip_instances(minip: dict[str, Any], scale: str, experiment: str) -> list[str]:
    g = minip["scales"][scale]
    if experiment == "length_sweep":
        return [f"N{n}" for n in g["length_sweep"]["lengths"]]
    if experiment == "rank_vs_m":
        return [f"m{m}" for m in g["rank_vs_m"]["ms"]]
    if experiment == "witness":
        return list(g["witness"]["feature_maps"])
    if experiment == "ood":
        return [s["name"] for s in g["ood"]["scales"]]
    if experiment == WITNESS_FAMILIES:
        return [s.instance for s in family_sources(minip, scale) if s.experiment == WITNESS_FAMILIES]
    raise ValueError(f"unknown Min-IP experiment {experiment!r}; known: {', '.join(MINIP_EXPERIMENTS)}")


def _train_job(minip: dict[str, Any], scale: str, experiment: str, instance: str) -> MinipTrainJob:
    g = minip["scales"][scale]
    tokens = minip["tokens"]
    common = dict(experiment=experiment, instance=instance, seeds=g["seeds"],
                  seed_offset=minip["seed_offset"],
                  ranks=tuple(g["ranks"]), dense=True, lr=minip["lr"], warmup=minip["warmup"],
                  log_every=minip["log_every"], hidden=minip["hidden"], feature=minip["feature"],
                  eval_sequences=minip["eval_sequences"], batch=g["random"]["batch"],
                  steps=g["random"]["steps"])
    if experiment == "length_sweep":
        data = RandomData("random", int(instance[1:]), g["length_sweep"]["m"], tokens)
        return MinipTrainJob(**common, feature_map=g["length_sweep"]["feature_map"], data=data)
    if experiment == "rank_vs_m":
        data = RandomData("random", 3, int(instance[1:]), tokens)
        return MinipTrainJob(**common, feature_map=g["rank_vs_m"]["feature_map"], data=data)
    if experiment == "witness":
        w = g["witness"]
        common.update(ranks=tuple(w["ranks"]), batch=0, steps=w["steps"])
        return MinipTrainJob(**common, feature_map=instance,
                             data=WitnessData("witness", w["blocks"], w["width"]))
    if experiment == WITNESS_FAMILIES:  # the witness recipe on another family: table, no dense
        src = next(s for s in family_sources(minip, scale) if s.instance == instance)
        return replace(_train_job(minip, scale, "witness", "table"), experiment=experiment,
                       instance=instance, dense=False,
                       data=WitnessData("witness", src.blocks, src.width))
    o = g["ood"]
    s = next(s for s in o["scales"] if s["name"] == instance)
    common.update(batch=o["batch"], steps=o["steps"])
    data = PoolsData("pools", 3, s["m"], tokens, s["train_pool"], s["test_pool"], o["share_tokens"])
    return MinipTrainJob(**common, feature_map=o["feature_map"], data=data)


def _capacity_job(minip: dict[str, Any], scale: str, instance: str) -> MinipCapacityJob:
    g = minip["scales"][scale]
    c = g["capacity"]
    return MinipCapacityJob(
        experiment="capacity", instance=instance, seeds=g["seeds"], seed_offset=minip["seed_offset"],
        data=RandomData("random", 3, c["m"], minip["tokens"]), lr=minip["lr"],
        warmup=minip["warmup"], log_every=minip["log_every"], hidden=minip["hidden"],
        feature=minip["feature"], eval_sequences=minip["eval_sequences"],
        batch=g["random"]["batch"], steps=c["steps"], long_steps=c["long_steps"], beta=c["beta"])


def _constructions_job(minip: dict[str, Any], scale: str) -> MinipConstructionsJob:
    g = minip["scales"][scale]
    c = minip["constructions"]
    dense_ms = sorted(set(g["rank_vs_m"]["ms"]) | {g["length_sweep"]["m"]})
    return MinipConstructionsJob(
        seed_offset=minip["seed_offset"], tokens=minip["tokens"], eval_sequences=minip["eval_sequences"],
        rank1_m=g["length_sweep"]["m"], lengths=tuple(g["length_sweep"]["lengths"]),
        exp_ms=tuple(g["constructions"]["exp_ms"]), exp_betas=tuple(c["exp_betas"]),
        dense_ms=tuple(dense_ms), dense_beta=c["dense_beta"],
        witness=WitnessFamily(g["witness"]["blocks"], g["witness"]["width"]))


def minip_jobs(config: dict[str, Any], scale: str) -> dict[tuple[str, str], Job]:
    """Every Paper B job at ``scale``: (kind, instance) → job, where kind is an experiment,
    ``capacity``, ``constructions``, ``information_bound`` or ``witness_families_table``. Checks
    the config first."""
    check_minip_config(config["minip"], scale)
    minip = config["minip"] | {"seed_offset": config["seed_offset"]}
    jobs: dict[tuple[str, str], Job] = {}
    for exp in MINIP_EXPERIMENTS:
        for inst in minip_instances(minip, scale, exp):
            jobs[(exp, inst)] = _train_job(minip, scale, exp, inst)
    for inst in CAPACITY_INSTANCES:
        jobs[("capacity", inst)] = _capacity_job(minip, scale, inst)
    jobs[("constructions", "")] = _constructions_job(minip, scale)
    jobs[("information_bound", "")] = InformationBoundJob(float_bits=32)
    jobs[(WITNESS_FAMILIES_TABLE, "")] = WitnessFamiliesTableJob(
        families=tuple(family_sources(minip, scale)), feature=minip["feature"],
        worst_case_cutoff=float(config["claims"]["worst_case_cutoff"]))
    return jobs
