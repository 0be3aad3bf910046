"""Typed jobs of Paper B (Min-IP) and the one function that builds them from the config.

``minip_jobs(config, scale)`` holds every cross-key check of the ``minip`` block that the JSON
schema cannot express (``minip_config_problems``: one line per problem naming the key, the value
and what was expected); it raises ValueError. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import comb
from typing import Any, ClassVar

from attnrank.core.job import Job, part
from attnrank.minip.families import job_groups


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
    compile: bool  # the pairwise reductions compiled (minip.pairs; the scale's ``compile`` key)


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
OOD = "ood"  # B4 on pools that teach the rule (TT-5 judges it)
OOD_MEMORISING = "ood_memorising"  # B4 on the earlier small pools the heads memorise (reported)
OOD_POOL_SWEEP = "ood_pool_sweep"  # one m, train pools of growing size: the train–test gap closing
OOD_POOLS = (OOD, OOD_MEMORISING)  # the experiments of named pool scales (`scales` lists)
MINIP_EXPERIMENTS = ("length_sweep", "rank_vs_m", "witness", OOD, OOD_MEMORISING, OOD_POOL_SWEEP,
                     WITNESS_FAMILIES)
# the grids judged per seed (TT-3, TT-4/TT-4p, TT-5's dense half) may run more seeds than the
# scale's `seeds`: their block's own `seeds` key (docs/methods.md, "Seeds and the seed quorum")
OWN_SEEDS = ("rank_vs_m", "witness", OOD)
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


def experiment_seeds(minip: dict[str, Any], scale: str, experiment: str) -> int:
    """Seeds of ``experiment`` at ``scale``: its block's own ``seeds`` where it may have one
    (``OWN_SEEDS``), else the scale's ``seeds``."""
    g = minip["scales"][scale]
    own = g[experiment].get("seeds") if experiment in OWN_SEEDS else None
    return int(g["seeds"] if own is None else own)


def family_sources(minip: dict[str, Any], scale: str) -> list[WitnessFamilySource]:
    """Where each family's heads are trained: the configured witness family, when its table
    features are trained anyway (``witness.feature_maps``) on the families' seed count, is that
    job (same recipe, same ranks, same seeds); every other family is a ``witness_families`` job
    of its own."""
    w = minip["scales"][scale]["witness"]
    same_seeds = experiment_seeds(minip, scale, "witness") == minip["scales"][scale]["seeds"]
    shared = (w["blocks"], w["width"]) if "table" in w["feature_maps"] and same_seeds else None
    return [WitnessFamilySource(f.blocks, f.width, "witness", "table")
            if (f.blocks, f.width) == shared
            else WitnessFamilySource(f.blocks, f.width, WITNESS_FAMILIES, family_instance(f))
            for f in witness_family_grid(minip, scale)]
CAPACITY_INSTANCES = ("scratch", "scratch_long", "construction")
MAX_TABLE_BITS = 16  # table features need an enumerated vocabulary (tasks.minip.MAX_VOCAB_BITS)
POOL_TOKENS = 3  # tokens per sequence of the OOD pools (N = 3)


def vocab_size(m: int, tokens: str) -> tuple[int, str]:
    """(V, how it is counted): the C(m, m/2) fixed-weight tokens or the 2^m Bernoulli tokens of
    width ``m``."""
    return (comb(m, m // 2), f"C({m}, {m // 2})") if tokens == "fixed_weight" else (2**m, f"2^{m}")


def _pools_problem(minip: dict[str, Any], where: str, share: bool, s: dict[str, Any]) -> str | None:
    """The OOD scale ``s`` asks for more distinct sequences than its tokens make: train_pool +
    test_pool ≤ V^N when the pools share tokens; with disjoint tokens the V tokens are split in
    two sides (a seeded hash), so the pools must fit a^N and b^N under some split a + b = V."""
    m, n_train, n_test, n = s["m"], s["train_pool"], s["test_pool"], POOL_TOKENS
    vocab, count = vocab_size(m, minip["tokens"])
    if share:
        if n_train + n_test <= vocab**n:
            return None
        return (f"{where}.train_pool + test_pool = {n_train} + {n_test} = {n_train + n_test}: at "
                f"most V^{n} = {vocab**n}, the distinct sequences of {n} tokens from the "
                f"V = {count} = {vocab} {minip['tokens']} tokens of m = {m}; lower the pools or "
                "raise m")
    a = 0
    while a <= vocab and a**n < n_train:  # the fewest tokens that hold the train pool
        a += 1
    if a <= vocab and (vocab - a) ** n >= n_test:
        return None
    return (f"{where}.train_pool, test_pool = {n_train}, {n_test}: pools that fit a^{n} and b^{n} "
            f"sequences for some split a + b = {vocab} of the tokens (m = {m}, {minip['tokens']}, "
            "ood.share_tokens false); lower the pools, raise m or share tokens")


def minip_config_problems(minip: dict[str, Any], scale: str) -> list[str]:
    """Every cross-key problem of ``minip`` at one scale, one line each naming the key, the value
    and what was expected (empty: fine)."""
    g = minip["scales"][scale]
    where = f"minip.scales.{scale}"
    out: list[str] = []
    if g["length_sweep"]["feature_map"] == "table" and g["length_sweep"]["m"] > MAX_TABLE_BITS:
        out.append(f"{where}.length_sweep.m = {g['length_sweep']['m']}: at most {MAX_TABLE_BITS} "
                   "with feature_map 'table' (an enumerated vocabulary)")
    if g["rank_vs_m"]["feature_map"] == "table" and max(g["rank_vs_m"]["ms"]) > MAX_TABLE_BITS:
        out.append(f"{where}.rank_vs_m.ms = {g['rank_vs_m']['ms']}: every m at most "
                   f"{MAX_TABLE_BITS} with feature_map 'table' (an enumerated vocabulary)")
    ood_ms = [s["m"] for exp in OOD_POOLS for s in g[exp]["scales"]] + [g[OOD_POOL_SWEEP]["m"]]
    # every pool block with table features (the pool sweep trains with ood's feature map)
    for exp, ms in [(exp, [s["m"] for s in g[exp]["scales"]]) for exp in OOD_POOLS] + [
            (OOD_POOL_SWEEP, [g[OOD_POOL_SWEEP]["m"]])]:
        feature_map = g[OOD if exp == OOD_POOL_SWEEP else exp]["feature_map"]
        if feature_map == "table" and max(ms) > MAX_TABLE_BITS:
            source = "ood.feature_map" if exp == OOD_POOL_SWEEP else f"{exp}.feature_map"
            key = f"{exp}.m" if exp == OOD_POOL_SWEEP else f"{exp}.scales[].m"
            out.append(f"{where}.{key} = {ms if len(ms) > 1 else ms[0]}: every m at most "
                       f"{MAX_TABLE_BITS} with {source} 'table' (an enumerated vocabulary)")
    if minip["tokens"] == "fixed_weight":
        for key, value in (("rank_vs_m.ms", g["rank_vs_m"]["ms"]),
                           ("length_sweep.m", g["length_sweep"]["m"]),
                           ("ood.scales[].m", ood_ms),
                           ("capacity.m", g["capacity"]["m"]),
                           ("constructions.exp_ms", g["constructions"]["exp_ms"])):
            if any(m % 2 for m in (value if isinstance(value, list) else [value])):
                out.append(f"{where}.{key} = {value}: even m only (fixed-weight tokens have m/2 "
                           "ones; or minip.tokens: bernoulli)")
    w = g["witness"]
    if w["blocks"] * w["width"] > MAX_WITNESS_BITS:
        out.append(f"{where}.witness.blocks × width = {w['blocks']} × {w['width']} = "
                   f"{w['blocks'] * w['width']}: at most {MAX_WITNESS_BITS} bits (a witness token "
                   "is an int64 bit code)")
    for exp in OOD_POOLS:
        names = [s["name"] for s in g[exp]["scales"]]
        if len(set(names)) != len(names):
            out.append(f"{where}.{exp}.scales[].name = {names}: unique names")
        for i, s in enumerate(g[exp]["scales"]):
            problem = _pools_problem(minip, f"{where}.{exp}.scales[{i}]", g[exp]["share_tokens"], s)
            if problem:
                out.append(problem)
    sweep = g[OOD_POOL_SWEEP]
    for i, n in enumerate(sweep["train_pools"]):
        problem = _pools_problem(minip, f"{where}.{OOD_POOL_SWEEP}.train_pools[{i}]",
                                 g[OOD]["share_tokens"],
                                 {"m": sweep["m"], "train_pool": n, "test_pool": sweep["test_pool"]})
        if problem:
            out.append(problem)
    try:
        witness_family_grid(minip, scale)
    except ValueError as err:
        out.append(str(err))
    return out


def check_minip_config(minip: dict[str, Any], scale: str) -> None:
    """Cross-key checks of ``minip`` at one scale; ValueError naming the key (one line per
    problem)."""
    problems = minip_config_problems(minip, scale)
    if problems:
        raise ValueError("\n".join(problems))


def minip_instances(minip: dict[str, Any], scale: str, experiment: str) -> list[str]:
    g = minip["scales"][scale]
    if experiment == "length_sweep":
        return [f"N{n}" for n in g["length_sweep"]["lengths"]]
    if experiment == "rank_vs_m":
        return [f"m{m}" for m in g["rank_vs_m"]["ms"]]
    if experiment == "witness":
        return list(g["witness"]["feature_maps"])
    if experiment in OOD_POOLS:
        return [s["name"] for s in g[experiment]["scales"]]
    if experiment == OOD_POOL_SWEEP:
        return [pool_instance(n) for n in g[OOD_POOL_SWEEP]["train_pools"]]
    if experiment == WITNESS_FAMILIES:
        return [s.instance for s in family_sources(minip, scale) if s.experiment == WITNESS_FAMILIES]
    raise ValueError(f"unknown Min-IP experiment {experiment!r}; known: {', '.join(MINIP_EXPERIMENTS)}")


def pool_instance(train_pool: int) -> str:
    """The instance name of one train-pool size of the pool sweep: ``pool<n>``."""
    return f"pool{train_pool}"


def _train_job(minip: dict[str, Any], scale: str, experiment: str, instance: str) -> MinipTrainJob:
    g = minip["scales"][scale]
    tokens = minip["tokens"]
    common = dict(experiment=experiment, instance=instance,
                  seeds=experiment_seeds(minip, scale, experiment),
                  seed_offset=minip["seed_offset"],
                  ranks=tuple(g["ranks"]), dense=True, lr=minip["lr"], warmup=minip["warmup"],
                  log_every=minip["log_every"], hidden=minip["hidden"], feature=minip["feature"],
                  eval_sequences=minip["eval_sequences"], batch=g["random"]["batch"],
                  steps=g["random"]["steps"], compile=bool(g["compile"]))
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
                       instance=instance, dense=False, seeds=g["seeds"],
                       data=WitnessData("witness", src.blocks, src.width))
    if experiment == OOD_POOL_SWEEP:  # the B4 recipe of `ood` at one m, growing train pools
        o, sweep = g[OOD], g[OOD_POOL_SWEEP]
        n = next(n for n in sweep["train_pools"] if pool_instance(n) == instance)
        common.update(ranks=tuple(sweep["ranks"]), dense=bool(sweep["dense"]), batch=o["batch"],
                      steps=o["steps"])
        data = PoolsData("pools", POOL_TOKENS, sweep["m"], tokens, n, sweep["test_pool"],
                         o["share_tokens"])
        return MinipTrainJob(**common, feature_map=o["feature_map"], data=data)
    o = g[experiment]
    s = next(s for s in o["scales"] if s["name"] == instance)
    common.update(batch=o["batch"], steps=o["steps"], ranks=tuple(s.get("ranks", g["ranks"])))
    data = PoolsData("pools", POOL_TOKENS, s["m"], tokens, s["train_pool"], s["test_pool"], o["share_tokens"])
    return MinipTrainJob(**common, feature_map=o["feature_map"], data=data)


def _capacity_job(minip: dict[str, Any], scale: str, instance: str) -> MinipCapacityJob:
    g = minip["scales"][scale]
    c = g["capacity"]
    return MinipCapacityJob(
        experiment="capacity", instance=instance, seeds=g["seeds"], seed_offset=minip["seed_offset"],
        data=RandomData("random", 3, c["m"], minip["tokens"]), lr=minip["lr"],
        warmup=minip["warmup"], log_every=minip["log_every"], hidden=minip["hidden"],
        feature=minip["feature"], eval_sequences=minip["eval_sequences"],
        batch=g["random"]["batch"], steps=c["steps"], long_steps=c["long_steps"], beta=c["beta"],
        compile=bool(g["compile"]))


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
    restarts = restart_jobs(config, scale, jobs)
    jobs |= {(RESTARTS, case): job for case, job in restarts.items()}
    jobs[(RESTARTS_TABLE, "")] = RestartsTableJob(cases=tuple(restarts))
    return jobs


# ---- the restart (trap) study: one job per case (docs/methods.md, "Restarts (trap study)") ----

RESTARTS = "restarts"  # minip_jobs' kind of a restart case's job
RESTARTS_TABLE = "restarts_table"  # minip_jobs' key of the job that writes both restart tables
ORIGINAL = "original"  # the variant that is the job's own recipe (factors 1, 1), always run
# experiment → (claim, metric column, rule, claims key of the threshold): each claim's own
# criterion for "this seed is fine" (claims/minip.py): TT-3 and TT-5 dense exact (sequence
# accuracy ≥ exact_accuracy), TT-4 the largest rank exact (worst-case error < the cut-off)
RESTART_CRITERIA: dict[str, tuple[str, str, str, str]] = {
    "rank_vs_m": ("TT-3", "test_sequence_accuracy", "at_least", "exact_accuracy"),
    OOD: ("TT-5", "test_sequence_accuracy", "at_least", "exact_accuracy"),
    "witness": ("TT-4", "test_worst_case_error", "below", "worst_case_cutoff"),
}


@dataclass(frozen=True)
class RestartVariant:
    """One way of retraining a case's model from the same init: peak lr × ``lr_factor``,
    steps × ``step_factor`` (warm-up fraction and cosine decay stretched over the longer run)."""

    name: str
    lr_factor: float
    step_factor: int


@dataclass(frozen=True)
class RestartCriterion:
    """When a seed counts as fine for the case's claim: ``metric`` ≥ threshold (``at_least``)
    or < threshold (``below``), the threshold being ``claims.<key>`` of the config."""

    claim: str
    metric: str
    rule: str
    key: str
    threshold: float


def _variants(value: Any, where: str) -> tuple[RestartVariant, ...]:
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{where}: expected a list, got {value!r}")
    return tuple(part(RestartVariant)(v, f"{where}[{i}]") for i, v in enumerate(value))


@dataclass(frozen=True)
class MinipRestartsJob(Job):
    """One case of the restart study: the model ``model`` (``dense`` or ``r<rank>``) of the
    training job ``train``, retrained alone on ``seeds`` seed indices (from ``train.seed_offset``)
    under every variant (the first is the original recipe), each from the init and the data
    stream the training job gives that seed."""

    case: str
    model: str
    seeds: int
    log_every: int
    variants: tuple[RestartVariant, ...]
    criterion: RestartCriterion
    train: MinipTrainJob

    _nested: ClassVar[dict[str, Any]] = {"variants": _variants, "criterion": part(RestartCriterion),
                                         "train": MinipTrainJob.from_dict}


@dataclass(frozen=True)
class RestartsTableJob(Job):
    """The two restart tables (every logged row; the per case × variant summary)."""

    cases: tuple[str, ...]


def restart_jobs(config: dict[str, Any], scale: str, jobs: dict[tuple[str, str], Job]
                 ) -> dict[str, MinipRestartsJob]:
    """The restart study's jobs at ``scale`` (case name → job), built on the training jobs
    ``jobs`` of ``minip_jobs``. ValueError naming the key when a case names an experiment without
    a claim criterion, an instance or a model that the scale does not train, a case or variant
    name twice, or a variant that is the original recipe (factors 1, 1; it always runs)."""
    where = f"minip.scales.{scale}.restarts"
    r = config["minip"]["scales"][scale].get("restarts")
    if not isinstance(r, dict):
        raise ValueError(f"{where}: missing (seeds, log_every, cases, variants)")
    variants = _variants(r["variants"], f"{where}.variants")
    names = [v.name for v in variants]
    if ORIGINAL in names or len(set(names)) != len(names):
        raise ValueError(f"{where}.variants: names must be unique and not {ORIGINAL!r} (the "
                         f"recipe itself always runs), got {names}")
    for i, v in enumerate(variants):
        if v.lr_factor == 1 and v.step_factor == 1:
            raise ValueError(f"{where}.variants[{i}]: factors (1, 1) are the original recipe, "
                             "which always runs")
        if not v.lr_factor > 0 or not isinstance(v.step_factor, int) or v.step_factor < 1:
            raise ValueError(f"{where}.variants[{i}]: lr_factor > 0 and an integer step_factor "
                             f"≥ 1 expected, got {v}")
    variants = (RestartVariant(ORIGINAL, 1.0, 1), *variants)
    cases = r["cases"]
    case_names = [c.get("name") for c in cases]
    if len(set(case_names)) != len(case_names):
        raise ValueError(f"{where}.cases: names must be unique, got {case_names}")
    out: dict[str, MinipRestartsJob] = {}
    for i, c in enumerate(cases):
        at = f"{where}.cases[{i}]"
        exp, inst, model = c.get("experiment"), c.get("instance"), c.get("model")
        if exp not in RESTART_CRITERIA:
            raise ValueError(f"{at}.experiment: one of {', '.join(RESTART_CRITERIA)} (an "
                             f"experiment with a claim criterion), got {exp!r}")
        train = jobs.get((exp, inst))
        if not isinstance(train, MinipTrainJob):
            known = sorted(i for k, i in jobs if k == exp)
            raise ValueError(f"{at}.instance: {exp} at scale {scale} trains {known}, not {inst!r}")
        trained = [g.name for g in job_groups(train.ranks, train.dense)]
        if model not in trained:
            raise ValueError(f"{at}.model: {exp}/{inst} trains {trained}, not {model!r}")
        claim, metric, rule, key = RESTART_CRITERIA[exp]
        crit = RestartCriterion(claim, metric, rule, key, float(config["claims"][key]))
        out[c["name"]] = MinipRestartsJob(
            case=c["name"], model=model, seeds=int(r["seeds"]), log_every=int(r["log_every"]),
            variants=variants, criterion=crit, train=train)
    return out
