"""The restart (trap) study's tables and the sentence its claims add (pure pandas).

Input: the tidy rows of ``experiments.minip_restarts`` (one per case, variant, logged step, seed;
the case's criterion in columns ``claim``, ``criterion_metric``, ``criterion_rule`` ("at_least":
metric ≥ threshold; "below": metric < threshold) and ``criterion_threshold``, from the config).

A seed *fails under the recipe* when its final row of the ``original`` variant misses the
criterion; a variant *recovers* it when the same seed's final row under that variant meets it
(same init, same data stream). A case whose failing seeds some variant recovers is an
*optimization trap* (the recipe, not the init, is at fault); one where no variant recovers any
is *persistent* from those inits.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from attnrank.minip.jobs import RestartsTableJob

ORIGINAL = "original"  # = attnrank.minip.jobs.ORIGINAL (this module stays free of the jobs layer)
CASE_COLUMNS = ("case", "experiment", "instance", "model", "claim", "criterion_metric",
                "criterion_rule", "criterion_threshold")


def passes(final: pd.DataFrame) -> pd.Series:
    """Per final row: does the row's criterion metric meet its threshold (boolean Series)."""
    metric = pd.Series([final.at[i, c] for i, c in final["criterion_metric"].items()],
                       index=final.index, dtype=float)
    at_least = final["criterion_rule"] == "at_least"
    below = final["criterion_rule"] == "below"
    if not (at_least | below).all():
        raise ValueError(f"criterion_rule must be at_least or below, got "
                         f"{sorted(set(final['criterion_rule']))}")
    thr = final["criterion_threshold"].astype(float)
    return (at_least & (metric >= thr)) | (below & (metric < thr))


def _seeds(values: Sequence[int]) -> str:
    return ",".join(str(int(s)) for s in sorted(values))


def restart_summary(table: pd.DataFrame) -> pd.DataFrame:
    """One row per case × variant (variants in table order): ``seeds`` run, ``passing`` (seeds
    meeting the criterion at the final step), ``failing_original`` (seeds failing under the
    recipe, comma-separated), ``recovered`` (those of them this variant brings over the
    criterion) with counts ``n_failing_original`` and ``n_recovered``, and ``failing_metric``:
    the criterion metric of each originally failing seed under this variant ("seed:value")."""
    fin = table[table["final"]].copy()
    fin["passes"] = passes(fin)
    rows = []
    for case, part in fin.groupby("case", sort=False):
        orig = part[part["variant"] == ORIGINAL]
        if orig.empty:
            raise ValueError(f"restart case {case}: no {ORIGINAL!r} variant")
        failing = sorted(orig.loc[~orig["passes"], "seed"].astype(int))
        head = {c: part[c].iloc[0] for c in CASE_COLUMNS}
        for variant, v in part.groupby("variant", sort=False):
            by_seed = v.set_index(v["seed"].astype(int))
            rec = [s for s in failing if s in by_seed.index and bool(by_seed.at[s, "passes"])]
            metric = head["criterion_metric"]
            rows.append(head | {
                "variant": variant, "lr_factor": float(v["lr_factor"].iloc[0]),
                "step_factor": int(v["step_factor"].iloc[0]), "steps": int(v["step"].max()),
                "seeds": int(v["seed"].nunique()), "passing": int(v["passes"].sum()),
                "failing_original": _seeds(failing), "n_failing_original": len(failing),
                "recovered": "" if variant == ORIGINAL else _seeds(rec),
                "n_recovered": 0 if variant == ORIGINAL else len(rec),
                "failing_metric": ",".join(f"{s}:{by_seed.at[s, metric]:.4g}" for s in failing
                                           if s in by_seed.index)})
    return pd.DataFrame(rows)


def variant_label(lr_factor: float, step_factor: int) -> str:
    """'lr×0.5', '2× steps', 'lr×0.5, 2× steps'; 'recipe' for (1, 1)."""
    parts = ([f"lr×{lr_factor:g}"] if lr_factor != 1 else []) + \
        ([f"{step_factor:g}× steps"] if step_factor != 1 else [])
    return ", ".join(parts) or "recipe"


def restart_sentence(summary: pd.DataFrame) -> str:
    """The sentence a claim's note adds for one case (its rows of ``restart_summary``):
    "<n>-seed restarts of <model> (<experiment> <instance>): fails on k/n seeds under the recipe
    (seeds …); from the same init lr×0.5 recovers a/k, 2× steps recovers b/k → <verdict>", the
    verdict being "optimization trap" (some variant recovers every failing seed), "persistent"
    (none recovers any), "partly a trap" (between), or "no failing seed"."""
    if summary["case"].nunique() != 1:
        raise ValueError(f"restart_sentence: one case expected, got {sorted(set(summary['case']))}")
    orig = summary[summary["variant"] == ORIGINAL]
    if orig.empty:
        raise ValueError(f"restart case {summary['case'].iloc[0]}: no {ORIGINAL!r} row")
    o = orig.iloc[0]
    n, k = int(o["seeds"]), int(o["n_failing_original"])
    head = f"{n}-seed restarts of {o['model']} ({o['experiment']} {o['instance']})"
    if k == 0:
        return f"{head}: fails on 0/{n} seeds under the recipe → no failing seed"
    others = summary[summary["variant"] != ORIGINAL]
    recs = [f"{variant_label(r.lr_factor, r.step_factor)} recovers {r.n_recovered}/{k}"
            for r in others.itertuples()]
    recovered = set().union(*[set(r.recovered.split(",")) - {""} for r in others.itertuples()])
    verdict = ("optimization trap" if len(recovered) == k
               else "persistent" if not recovered else "partly a trap")
    values = "; ".join(f"{variant_label(r.lr_factor, r.step_factor)} {r.failing_metric}"
                       for r in summary.itertuples())
    return (f"{head}: fails on {k}/{n} seeds under the recipe (seeds {o['failing_original']}); "
            f"from the same init {', '.join(recs) or 'no variant ran'} → {verdict} "
            f"({o['criterion_metric']} of the failing seeds, seed:value — {values})")


def claim_sentences(summary: pd.DataFrame, experiment: str, model: str | None = None) -> str:
    """The restart sentences of every case of ``experiment`` (and ``model``, when given), joined
    by "; "; empty when the scale ran no such case."""
    sel = summary[summary["experiment"] == experiment]
    if model is not None:
        sel = sel[sel["model"] == model]
    return "; ".join(restart_sentence(part) for _, part in sel.groupby("case", sort=False))


def restarts_tables(inputs: Sequence[str | Path]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The restart step: every case's rows (``minip_restarts``) and their summary
    (``minip_restarts_summary``)."""
    from attnrank.core.io import read_table

    table = pd.concat([read_table(p) for p in inputs], ignore_index=True)
    if not np.issubdtype(table["final"].dtype, np.bool_):
        raise ValueError("minip_restarts: column 'final' must be boolean")
    return table, restart_summary(table)


def step(job: RestartsTableJob, inputs: Sequence[str | Path]) -> dict[str, Any]:
    """The minip_restarts_tables step: every logged row (``out``) and the per case × variant
    ``summary`` (also as ``csv``)."""
    table, summary = restarts_tables(inputs)
    return {"out": table, "summary": summary, "csv": summary}
