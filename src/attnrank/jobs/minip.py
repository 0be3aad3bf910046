"""Typed jobs of Paper B (Min-IP) and the one function that builds them from the config.

``minip_jobs(config, scale)`` holds every cross-key check of the ``minip`` block that the JSON
schema cannot express; it raises ValueError naming the key. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
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


MINIP_EXPERIMENTS = ("length_sweep", "rank_vs_m", "witness", "ood")
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
    raise ValueError(f"unknown Min-IP experiment {experiment!r}; known: {', '.join(MINIP_EXPERIMENTS)}")


def _train_job(minip: dict[str, Any], scale: str, experiment: str, instance: str) -> MinipTrainJob:
    g = minip["scales"][scale]
    tokens = minip["tokens"]
    common = dict(experiment=experiment, instance=instance, seeds=g["seeds"],
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
    o = g["ood"]
    s = next(s for s in o["scales"] if s["name"] == instance)
    common.update(batch=o["batch"], steps=o["steps"])
    data = PoolsData("pools", 3, s["m"], tokens, s["train_pool"], s["test_pool"], o["share_tokens"])
    return MinipTrainJob(**common, feature_map=o["feature_map"], data=data)


def _capacity_job(minip: dict[str, Any], scale: str, instance: str) -> MinipCapacityJob:
    g = minip["scales"][scale]
    c = g["capacity"]
    return MinipCapacityJob(
        experiment="capacity", instance=instance, seeds=g["seeds"],
        data=RandomData("random", 3, c["m"], minip["tokens"]), lr=minip["lr"],
        warmup=minip["warmup"], log_every=minip["log_every"], hidden=minip["hidden"],
        feature=minip["feature"], eval_sequences=minip["eval_sequences"],
        batch=g["random"]["batch"], steps=c["steps"], long_steps=c["long_steps"], beta=c["beta"])


def _constructions_job(minip: dict[str, Any], scale: str) -> MinipConstructionsJob:
    g = minip["scales"][scale]
    c = minip["constructions"]
    dense_ms = sorted(set(g["rank_vs_m"]["ms"]) | {g["length_sweep"]["m"]})
    return MinipConstructionsJob(
        tokens=minip["tokens"], eval_sequences=minip["eval_sequences"],
        rank1_m=g["length_sweep"]["m"], lengths=tuple(g["length_sweep"]["lengths"]),
        exp_ms=tuple(g["constructions"]["exp_ms"]), exp_betas=tuple(c["exp_betas"]),
        dense_ms=tuple(dense_ms), dense_beta=c["dense_beta"],
        witness=WitnessFamily(g["witness"]["blocks"], g["witness"]["width"]))


def minip_jobs(config: dict[str, Any], scale: str) -> dict[tuple[str, str], Job]:
    """Every Paper B job at ``scale``: (kind, instance) → job, where kind is an experiment,
    ``capacity``, ``constructions`` or ``information_bound``. Checks the config first."""
    minip = config["minip"]
    check_minip_config(minip, scale)
    jobs: dict[tuple[str, str], Job] = {}
    for exp in MINIP_EXPERIMENTS:
        for inst in minip_instances(minip, scale, exp):
            jobs[(exp, inst)] = _train_job(minip, scale, exp, inst)
    for inst in CAPACITY_INSTANCES:
        jobs[("capacity", inst)] = _capacity_job(minip, scale, inst)
    jobs[("constructions", "")] = _constructions_job(minip, scale)
    jobs[("information_bound", "")] = InformationBoundJob(float_bits=32)
    return jobs
