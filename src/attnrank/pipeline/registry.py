"""The one registry of the pipeline's names: steps, tables, figures and claims.

Every other layer reads its names from here: the ``.smk`` files (rules, targets, inputs), the CLI,
the figures (which tables a figure reads), the claims (which tables a claim needs) and the audit
(which module a step runs, so its code hash can be derived from the imports).

Standard library only: the workflow imports this module while it parses the Snakefile.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnrank.core import WINGS


@dataclass(frozen=True)
class Step:
    """One kind of pipeline step (one Snakemake rule, or one family of figure rules).

    ``entry`` is the module (inside ``attnrank``) that holds the step's logic: its code hash is
    the sha256 of the import closure of that module (see ``codehash.py``).
    """

    name: str
    command: str
    entry: str


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


STEPS: dict[str, Step] = _index([
    Step("minip_train", "minip-train", "attnrank.minip.experiments.train"),
    Step("minip_capacity_train", "minip-capacity", "attnrank.minip.experiments.capacity"),
    Step("minip_constructions", "minip-constructions", "attnrank.minip.experiments.constructions"),
    Step("table", "table", "attnrank.core.tables"),
    Step("minip_information_bound", "minip-information-bound",
         "attnrank.minip.experiments.constructions"),
    Step("minip_witness_families", "minip-witness-families",
         "attnrank.minip.experiments.witness_families"),
    # the restart (trap) study: one job per case, then its two tables
    Step("minip_restarts_train", "minip-restarts", "attnrank.minip.experiments.restarts"),
    Step("minip_restarts_tables", "minip-restarts-tables", "attnrank.minip.restarts"),
    # the families beyond the single head (B6, TT-7): one job per instance, then the growth fit
    Step("minip_beyond_train", "minip-beyond", "attnrank.minip.experiments.beyond"),
    Step("minip_beyond_growth", "minip-beyond-growth", "attnrank.minip.beyond.growth"),
    Step("entropic_surrogate_train", "entropic-train", "attnrank.entropic.experiments.surrogate"),
    Step("entropic_ladder_train", "entropic-train", "attnrank.entropic.experiments.ladder"),
    Step("entropic_attention_train", "entropic-train", "attnrank.entropic.experiments.attention"),
    Step("entropic_predict", "entropic-predict", "attnrank.entropic.experiments.predict"),
    # appendix B: the corpora and their complexity (one table per scale)
    Step("language_corpora", "language-corpora", "attnrank.language.experiments.corpora"),
    # appendix B: one training job per corpus (every seed as the model axis)
    Step("language_train", "language-train", "attnrank.language.experiments.train"),
    Step("figure", "figure", "attnrank.core.figures"),  # plus the figure's own module, see codehash
    Step("claims", "claims", "attnrank.claims"),
])

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
    Table("entropic_surrogate", "table", "A"),
    Table("entropic_surrogate_trace", "table", "A"),
    Table("entropic_ladder", "table", "A"),
    Table("entropic_attention", "table", "A"),
    Table("entropic_attention_trace", "table", "A"),
    Table("entropic_predict", "table", "A"),
    # the same, for the extra jobs under the other teacher values V* (EB-7, EB-8, EB-9, EB-12)
    Table("entropic_attention_other_values", "table", "A"),
    Table("entropic_predict_other_values", "table", "A"),
    # the second predictability grid (d = 32, issue 24; EB-13 and EB-13b report it)
    Table("entropic_predict_d32", "table", "A"),
    # appendix B: one row per corpus (source, sha256, complexity measures, the headline)
    Table("language_corpora", "language_corpora", "A"),
    # appendix B: ranks of every head's static kernel and realized mixer at every logged step,
    # and the train / validation loss (bits per byte) of every (corpus, seed, logged step)
    Table("language_ranks", "table", "A"),
    Table("language_loss", "table", "A"),
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


def rule_names() -> list[str]:
    """Every rule of the workflow, as ``snakemake --list-rules`` names them: one per step (one
    ``figure_<name>`` per figure instead of ``figure``), the audit and ``all``. The Slurm profile
    reads them here rather than starting a nested Snakemake on every parse."""
    steps = [s for s in STEPS if s != "figure"]
    return sorted([*steps, *(f"figure_{name}" for name in FIGURES), "audit", "all"])
