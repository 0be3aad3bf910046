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
