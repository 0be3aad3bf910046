# Target lists, wildcard constraints and helpers shared by every rule file (no science here).
import hashlib
import json
from pathlib import Path

SCALE = config["scale"]
RESULTS = f"results/{SCALE}"  # artifacts only: every file here has a .prov.json sidecar
LOGS = f"logs/{SCALE}"  # rule logs and benchmark timings (not artifacts)
SRC = Path(workflow.basedir) / "src" / "attnrank"
CONDA_ENV = "../../envs/attnrank.yaml"
MINIP = config["minip"]
MINIP_GRID = MINIP["scales"][SCALE]


wildcard_constraints:
    experiment="length_sweep|rank_vs_m|witness|ood",
    instance="[A-Za-z0-9_]+",
    name="[a-z0-9_]+",


def code_hash(*modules):
    """sha256 of the package modules a rule runs (paths relative to src/attnrank); as a params
    entry it makes the rule rerun when that code changes."""
    h = hashlib.sha256()
    for rel in sorted(set(modules) | {"io.py"}):
        path = SRC / rel
        if not path.exists():
            raise WorkflowError(f"code_hash: module {path} does not exist")
        h.update(rel.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def as_json(obj):
    return json.dumps(obj, sort_keys=True)


def check_config():
    """Cross-key checks the JSON schema cannot express; fail before any job runs."""
    g = MINIP_GRID
    where = f"minip.scales.{SCALE}"
    if g["length_sweep"]["feature_map"] == "table" and g["length_sweep"]["m"] > 16:
        raise WorkflowError(f"{where}.length_sweep: feature_map 'table' needs m <= 16")
    if g["rank_vs_m"]["feature_map"] == "table" and max(g["rank_vs_m"]["ms"]) > 16:
        raise WorkflowError(f"{where}.rank_vs_m: feature_map 'table' needs every m <= 16")
    for key, ms in (("rank_vs_m.ms", g["rank_vs_m"]["ms"]),
                    ("length_sweep.m", [g["length_sweep"]["m"]]),
                    ("ood.scales[].m", [s["m"] for s in g["ood"]["scales"]])):
        if MINIP["tokens"] == "fixed_weight" and any(m % 2 for m in ms):
            raise WorkflowError(f"{where}.{key}: fixed-weight tokens need even m, got {ms}")
    names = [s["name"] for s in g["ood"]["scales"]]
    if len(set(names)) != len(names):
        raise WorkflowError(f"{where}.ood.scales: names must be unique, got {names}")


check_config()


# ---- Paper B (Min-IP): job parameters and targets -------------------------------------------

def minip_instances(experiment):
    g = MINIP_GRID
    if experiment == "length_sweep":
        return [f"N{n}" for n in g["length_sweep"]["lengths"]]
    if experiment == "rank_vs_m":
        return [f"m{m}" for m in g["rank_vs_m"]["ms"]]
    if experiment == "witness":
        return list(g["witness"]["feature_maps"])
    if experiment == "ood":
        return [s["name"] for s in g["ood"]["scales"]]
    raise WorkflowError(f"unknown Min-IP experiment {experiment!r}")


def minip_job(experiment, instance):
    """The resolved parameters of one training job (a JSON object; see experiments/minip.py)."""
    g = MINIP_GRID
    if instance not in minip_instances(experiment):
        raise WorkflowError(f"{experiment}: unknown instance {instance!r}; "
                            f"config has {minip_instances(experiment)}")
    job = {"experiment": experiment, "instance": instance, "seeds": g["seeds"],
           "ranks": g["ranks"], "dense": True, "lr": MINIP["lr"], "warmup": MINIP["warmup"],
           "log_every": MINIP["log_every"], "hidden": MINIP["hidden"],
           "feature": MINIP["feature"], "eval_sequences": MINIP["eval_sequences"],
           "batch": g["random"]["batch"], "steps": g["random"]["steps"]}
    tokens = MINIP["tokens"]
    if experiment == "length_sweep":
        n = int(instance[1:])
        job["data"] = {"kind": "random", "n_tokens": n, "m": g["length_sweep"]["m"],
                       "tokens": tokens}
        job["feature_map"] = g["length_sweep"]["feature_map"]
    elif experiment == "rank_vs_m":
        job["data"] = {"kind": "random", "n_tokens": 3, "m": int(instance[1:]), "tokens": tokens}
        job["feature_map"] = g["rank_vs_m"]["feature_map"]
    elif experiment == "witness":
        w = g["witness"]
        job["data"] = {"kind": "witness", "blocks": w["blocks"], "width": w["width"]}
        job.update(feature_map=instance, ranks=w["ranks"], batch=0, steps=w["steps"])
    else:
        o = g["ood"]
        s = next(s for s in o["scales"] if s["name"] == instance)
        job["data"] = {"kind": "pools", "n_tokens": 3, "m": s["m"], "tokens": tokens,
                       "train_pool": s["train_pool"], "test_pool": s["test_pool"],
                       "share_tokens": o["share_tokens"]}
        job.update(feature_map=o["feature_map"], batch=o["batch"], steps=o["steps"])
    return as_json(job)


def minip_constructions_params():
    g = MINIP_GRID
    c = MINIP["constructions"]
    dense_ms = sorted(set(g["rank_vs_m"]["ms"]) | {g["length_sweep"]["m"]})
    return as_json({"tokens": MINIP["tokens"], "eval_sequences": MINIP["eval_sequences"],
                    "rank1_m": g["length_sweep"]["m"], "lengths": g["length_sweep"]["lengths"],
                    "exp_ms": g["constructions"]["exp_ms"], "exp_betas": c["exp_betas"],
                    "dense_ms": dense_ms, "dense_beta": c["dense_beta"],
                    "witness": {"blocks": g["witness"]["blocks"],
                                "width": g["witness"]["width"]}})


def minip_figure_params():
    g = MINIP_GRID
    return as_json({"scale": SCALE, "target_accuracy": MINIP["target_accuracy"],
                    "exact_accuracy": MINIP["exact_accuracy"],
                    "witness": {"blocks": g["witness"]["blocks"], "width": g["witness"]["width"]}})


def minip_targets():
    return ([f"{RESULTS}/figures/{name}.pdf" for name in MINIP_FIGURE_TABLES]
            + [f"{RESULTS}/tables/minip_information_bound.csv"])


def minip_capacity_job(instance):
    c, g = MINIP_GRID["capacity"], MINIP_GRID
    return as_json({"experiment": "capacity", "instance": instance, "seeds": g["seeds"],
                    "data": {"kind": "random", "n_tokens": 3, "m": c["m"], "tokens": MINIP["tokens"]},
                    "lr": MINIP["lr"], "warmup": MINIP["warmup"], "log_every": MINIP["log_every"],
                    "hidden": MINIP["hidden"], "feature": MINIP["feature"],
                    "eval_sequences": MINIP["eval_sequences"], "batch": g["random"]["batch"],
                    "steps": c["steps"], "long_steps": c["long_steps"], "beta": c["beta"]})


def all_targets():
    return minip_targets() + entropic_targets() + [f"{RESULTS}/claims.md"]
