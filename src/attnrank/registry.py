"""The one registry of the pipeline's names: steps, tables, figures and claims.

Every other layer reads its names from here: the ``.smk`` files (rules, targets, inputs), the CLI,
the figures (which tables a figure reads), the claims (which tables a claim needs) and the audit
(which module a step runs, so its code hash can be derived from the imports).

Standard library only: the workflow imports this module while it parses the Snakefile.
"""

from __future__ import annotations

from dataclasses import dataclass


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
    Step("minip_train", "minip-train", "attnrank.experiments.minip"),
    Step("minip_capacity_train", "minip-capacity", "attnrank.experiments.minip_capacity"),
    Step("minip_constructions", "minip-constructions", "attnrank.experiments.minip_constructions"),
    Step("table", "table", "attnrank.tables"),
    Step("minip_information_bound", "minip-information-bound",
         "attnrank.experiments.minip_constructions"),
    Step("minip_witness_families", "minip-witness-families",
         "attnrank.experiments.minip_witness_families"),
    # the restart (trap) study: one job per case, then its two tables
    Step("minip_restarts_train", "minip-restarts", "attnrank.experiments.minip_restarts"),
    Step("minip_restarts_tables", "minip-restarts-tables", "attnrank.restarts"),
    Step("entropic_surrogate_train", "entropic-train", "attnrank.experiments.entropic_surrogate"),
    Step("entropic_ladder_train", "entropic-train", "attnrank.experiments.entropic_ladder"),
    Step("entropic_attention_train", "entropic-train", "attnrank.experiments.entropic_attention"),
    Step("entropic_predict", "entropic-predict", "attnrank.experiments.entropic_predict"),
    # appendix B: the corpora and their complexity (one table per scale)
    Step("language_corpora", "language-corpora", "attnrank.experiments.language_corpora"),
    # appendix B: one training job per corpus (every seed as the model axis)
    Step("language_train", "language-train", "attnrank.experiments.language"),
    Step("figure", "figure", "attnrank.figures"),  # plus the figure's own module, see codehash
    Step("claims", "claims", "attnrank.claims"),
])

TABLES: dict[str, Table] = _index([
    Table("minip_length_sweep", "table", "B"),
    Table("minip_rank_vs_m", "table", "B"),
    Table("minip_witness", "table", "B"),
    Table("minip_ood", "table", "B"),
    Table("minip_capacity", "table", "B"),
    Table("minip_constructions", "minip_constructions", "B"),
    Table("minip_information_bound", "minip_information_bound", "B"),
    # the (K, w) sweep of the witness suite: per family × rank × seed, and per family
    Table("minip_witness_families", "minip_witness_families", "B"),
    Table("minip_witness_families_summary", "minip_witness_families", "B"),
    # the restart (trap) study: every logged row of every case, and per case × variant
    Table("minip_restarts", "minip_restarts_tables", "B"),
    Table("minip_restarts_summary", "minip_restarts_tables", "B"),
    Table("entropic_surrogate", "table", "A"),
    Table("entropic_surrogate_trace", "table", "A"),
    Table("entropic_ladder", "table", "A"),
    Table("entropic_attention", "table", "A"),
    Table("entropic_attention_trace", "table", "A"),
    Table("entropic_predict", "table", "A"),
    # the same, for the extra jobs under the other teacher values V* (EB-7, EB-8, EB-9, EB-12)
    Table("entropic_attention_other_values", "table", "A"),
    Table("entropic_predict_other_values", "table", "A"),
    # appendix B: one row per corpus (source, sha256, complexity measures, the headline)
    Table("language_corpora", "language_corpora", "A"),
    # appendix B: ranks of every head's static kernel and realized mixer at every logged step,
    # and the train / validation loss (bits per byte) of every (corpus, seed, logged step)
    Table("language_ranks", "table", "A"),
    Table("language_loss", "table", "A"),
])

FIGURES: dict[str, Figure] = _index([
    Figure("minip_length_sweep", "B", ("minip_length_sweep", "minip_constructions")),
    Figure("minip_rank_vs_m", "B", ("minip_rank_vs_m", "minip_constructions")),
    Figure("minip_witness", "B", ("minip_witness", "minip_constructions")),
    Figure("minip_witness_families", "B", ("minip_witness_families",)),
    Figure("minip_ood_pools", "B", ("minip_ood",)),
    Figure("minip_restarts", "B", ("minip_restarts",)),
    Figure("entropic_surrogate_phase", "A", ("entropic_surrogate",)),
    Figure("entropic_surrogate_recovery", "A", ("entropic_surrogate_trace",)),
    Figure("entropic_ladder", "A", ("entropic_ladder",)),
    Figure("entropic_attention_native", "A", ("entropic_attention",)),
    Figure("entropic_attention_recovery", "A", ("entropic_attention", "entropic_attention_trace")),
    Figure("entropic_predictability", "A", ("entropic_predict",)),
    # appendix B: language models on real text
    Figure("language_rank_vs_complexity", "A", ("language_ranks", "language_corpora")),
    Figure("language_rank_vs_loss", "A", ("language_ranks", "language_loss")),
])

CLAIMS: dict[str, ClaimSpec] = _index([
    ClaimSpec("TT-1", "B", ("minip_length_sweep", "minip_constructions")),
    ClaimSpec("TT-2", "B", ("minip_length_sweep",)),
    ClaimSpec("TT-3", "B", ("minip_rank_vs_m", "minip_restarts_summary")),  # + restarts note
    # TT-4: against the configured family's r_lb; every family's transition reported beside it
    ClaimSpec("TT-4", "B", ("minip_witness", "minip_witness_families", "minip_restarts_summary")),
    ClaimSpec("TT-4p", "B", ("minip_witness",)),  # the paper's numbers, on its K = 8, w = 3 family
    ClaimSpec("TT-5", "B", ("minip_ood", "minip_restarts_summary")),
    ClaimSpec("TT-6", "B", ("minip_rank_vs_m", "minip_constructions", "minip_information_bound")),
    ClaimSpec("TT-gap", "B", ("minip_capacity",)),
    *(ClaimSpec(f"EB-{i}", "A", ("entropic_surrogate",)) for i in (1, 2, 3, 4)),
    *(ClaimSpec(f"EB-{i}", "A", ("entropic_ladder",)) for i in (5, 6)),
    # EB-7, 8, 9 and 12: verdict on the config's V*, the other V* reported beside it
    *(ClaimSpec(f"EB-{i}", "A", ("entropic_attention", "entropic_attention_other_values"))
      for i in (7, 8, 9)),
    ClaimSpec("EB-10", "A", ("entropic_attention",)),
    ClaimSpec("EB-11", "A", ("entropic_predict",)),
    ClaimSpec("EB-12", "A", ("entropic_predict", "entropic_predict_other_values")),
    *(ClaimSpec(f"EB-{i}", "A", ("entropic_predict",)) for i in (13, "13b", 14)),
    # appendix B: EB-16 compares with EB-15's ρ (rank against complexity), so it reads its tables
    ClaimSpec("EB-15", "A", ("language_ranks", "language_corpora")),
    ClaimSpec("EB-16", "A", ("language_ranks", "language_loss", "language_corpora")),
])


def claim_tables() -> list[str]:
    """Every table some claim needs, in registry order (the claims step's inputs)."""
    return [t for t in TABLES if any(t in c.tables for c in CLAIMS.values())]
