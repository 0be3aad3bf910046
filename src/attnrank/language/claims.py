"""Paper A (Yoon), appendix B, language models on real text: claims EB-15 and EB-16, and the open
problem OPEN-4 (the realized logit field, ``attnrank.language.realized``).

Both are judged on the headline measure, the static kernel W_Q W_Kᵀ's R̃_eff (mean over layers
and heads, ``attnrank.language.points``), and report, as ``sweep``, the verdict under every other
measure of ``language_ranks`` (entropy, stable and numerical rank at every τ, and the realized
mixer's). Spearman ρ and its seed bootstrap are ``attnrank.language.correlation``'s; the thresholds are the
config's ``claims`` block (``v``). Rules: docs/methods.md, "Appendix B claims".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from attnrank.core.claims import NotRun, Outcome, Values, claim, claim_values, fmt, need, sweep_text
from attnrank.language.correlation import Correlation, correlation, spearman
from attnrank.language.points import (
    HEADLINE,
    R_EFF,
    REALIZED,
    RESIDUAL_FIELD,
    TRAIN_LOSS,
    VAL_LOSS,
    Measure,
    complexity_points,
    final,
    loss_points,
    measures,
)
from attnrank.language.realized import (
    FIELD_MEASURES,
    FOLLOWS,
    OVERLAP,
    PRIOR,
    association,
    gap,
    loss_rhos,
    name,
    per_corpus,
    rungs,
    shape,
    step_rhos,
)

Tables = Mapping[str, pd.DataFrame]


def _corpus_count(tables: Tables) -> tuple[int, list[str]]:
    corpora = sorted(need(tables, "language_ranks")["corpus"].unique())
    return len(corpora), corpora


def _complexity_rho(tables: Tables, measure: Measure, v: Values) -> tuple[Correlation, pd.DataFrame]:
    """EB-15's ρ(complexity, final measure) over (corpus, seed) points with its bootstrap
    interval (seeds resampled within corpora), and the points."""
    ranks, corpora = need(tables, "language_ranks"), need(tables, "language_corpora")
    try:
        pts = complexity_points(ranks, corpora, measure)
    except ValueError as why:
        raise NotRun(str(why)) from None
    if pts.empty:
        raise NotRun(f"no {measure.label} rows in language_ranks")
    c = correlation(pts["complexity"].to_numpy(), pts["value"].to_numpy(), pts["corpus"].to_numpy(),
                    int(v["bootstrap_samples"]), float(v["interval_level"]))
    return c, pts


def _interval(c: Correlation) -> str:
    return f"ρ = {fmt(c.rho)}, {c.level:.0%} interval [{fmt(c.lo)}, {fmt(c.hi)}]"


def first_seeds(tables: Tables, n: int, names: tuple[str, ...]) -> dict[str, pd.DataFrame] | None:
    """The tables ``names`` with the rows of each corpus's first ``n`` seeds (its smallest seed
    indices in ``language_ranks``) only, the corpora table whole; None when no corpus has more
    than ``n`` seeds (the reading would be the headline's)."""
    ranks = need(tables, "language_ranks")
    seeds = ranks[["corpus", "seed"]].drop_duplicates()
    if int(seeds.groupby("corpus")["seed"].nunique().max()) <= n:
        return None
    keep = seeds.sort_values("seed").groupby("corpus").head(n)
    return {t: need(tables, t) if t == "language_corpora" else
            need(tables, t).merge(keep, on=["corpus", "seed"]) for t in names}


def _earlier(n: int) -> str:
    return f"; first {n} seeds a corpus (the earlier design; reported, not judged): "
def _in_complexity_order(pts: pd.DataFrame) -> str:
    """The corpus medians of ``pts`` in order of complexity, each step marked < (rise), > (fall)
    or = : a rank correlation near 0 can hide a rise over most corpora and a fall on one."""
    per = pts.groupby("corpus").agg(complexity=("complexity", "first"), final=("value", "median"))
    per = per.sort_values("complexity")
    text, last = "", None
    for corpus, value in per["final"].items():
        if last is not None:
            text += " < " if value > last else " > " if value < last else " = "
        text += f"{corpus} {fmt(float(value))}"
        last = value
    return text


def _eb15_statement(v: Values) -> str:
    return ("Appendix B: the static kernel rank is not positively correlated with corpus "
            "complexity. Over (corpus, seed) points, Spearman ρ between the corpus's headline "
            "complexity and the final-step R̃_eff of W_Q W_Kᵀ (mean over layers and heads): the "
            f"lower end of its {v['interval_level']:.0%} bootstrap interval "
            f"({v['bootstrap_samples']} resamples of the seeds within each corpus) is ≤ 0, on at "
            f"least {v['min_corpora']} corpora; every other rank measure and the realized mixer "
            "reported")


@claim("EB-15", "A", ('language_ranks', 'language_corpora'),
       _eb15_statement)
def eb15(tables: Tables, p: dict[str, Any], v: Values) -> Outcome:
    least = int(v["min_corpora"])
    n, names = _corpus_count(tables)
    head, pts = _complexity_rho(tables, HEADLINE, v)
    corpora = need(tables, "language_corpora")
    measure_name = ", ".join(sorted(corpora["headline_measure"].astype(str).unique())) \
        if "headline_measure" in corpora else "complexity"
    if n < least:
        raise NotRun(f"{n} corpora ({', '.join(names)}), fewer than min_corpora = {least}; for "
                     f"information: {_interval(head)}")
    per = pts.groupby("corpus").agg(complexity=("complexity", "first"), final=("value", "median"))
    per = per.sort_values("complexity")
    measured = (f"{_interval(head)} ({len(pts)} points, {n} corpora; x = {measure_name}); "
                "complexity / median final static R̃_eff by corpus: "
                + ", ".join(f"{c}: {fmt(float(r.complexity))} / {fmt(float(r.final))}"
                            for c, r in per.iterrows()))
    earlier = first_seeds(tables, int(v["earlier_seeds"]), ("language_ranks", "language_corpora"))
    if earlier is not None:
        c3 = _complexity_rho(earlier, HEADLINE, v)[0]
        measured += (_earlier(int(v["earlier_seeds"])) + f"{_interval(c3)}, that reading: "
                     f"{'pass' if c3.lo <= 0 else 'fail'}")
    verdicts = {HEADLINE.label: head.lo <= 0}
    for m in measures(need(tables, "language_ranks")):
        if m.label != HEADLINE.label:
            verdicts[m.label] = _complexity_rho(tables, m, v)[0].lo <= 0
    note = ("pass = no evidence of a positive correlation (the interval may still include 0 or "
            f"positive values above its low end); resamples: {head.samples}, seeds within each "
            "corpus, corpora kept")
    realized = Measure(REALIZED, R_EFF)
    if (need(tables, "language_ranks")["matrix"] == REALIZED).any():
        c, rpts = _complexity_rho(tables, realized, v)
        note += (f"; {realized.label} ({_interval(c)}), corpus medians in order of complexity: "
                 + _in_complexity_order(rpts))
    return (head.lo <= 0, measured, f"≥ {least} corpora and the interval's lower end ≤ 0", note,
            sweep_text(verdicts, HEADLINE.label))


LOSS_NAMES = {TRAIN_LOSS: "train loss", VAL_LOSS: "val loss"}
VAL_READING = "reported, registered in docs/methods.md"  # EB-16 against the validation loss
VAL_LABEL = f"{HEADLINE.label} against the validation loss ({VAL_READING})"  # its sweep entry


def _run_rhos(tables: Tables, measure: Measure, loss: str = TRAIN_LOSS) -> pd.DataFrame:
    """EB-16: per (corpus, seed), ρ(measure, loss) over the logged steps (``loss``: the train or
    the validation loss column; NaN ρ, a constant side, counts as 0) and whether the run has too
    few steps for it: over two steps ρ is ±1 by construction, not evidence, so a run needs three."""
    pts = loss_points(need(tables, "language_ranks"), need(tables, "language_loss"), measure)
    if loss not in pts.columns:
        raise NotRun(f"language_loss has no {loss} column")
    pts = pts.dropna(subset=[loss])
    rows = []
    for (corpus, seed), g in pts.groupby(["corpus", "seed"]):
        rho = float(spearman(g["value"].to_numpy(), g[loss].to_numpy()))
        rows.append({"corpus": corpus, "seed": seed, "short": len(g) < 3,
                     "rho": 0.0 if np.isnan(rho) else rho})
    return pd.DataFrame(rows, columns=["corpus", "seed", "short", "rho"])


def _tracks(tables: Tables, measure: Measure, v: Values, v15: Values, loss: str = TRAIN_LOSS
            ) -> tuple[bool, pd.DataFrame, float, Correlation]:
    """EB-16 under ``measure`` against ``loss``: (median |ρ| ≥ min_abs_rho and > |ρ| of EB-15, the
    runs' ρ, their median |ρ|, EB-15's correlation)."""
    runs = _run_rhos(tables, measure, loss)
    if runs.empty:
        raise NotRun(f"no (corpus, seed) with both {measure.label} and {LOSS_NAMES[loss]}")
    if runs["short"].any():
        raise NotRun(f"{int(runs['short'].sum())} runs have fewer than three logged steps")
    med = float(runs["rho"].abs().median())
    c15 = _complexity_rho(tables, measure, v15)[0]
    rho15 = 0.0 if np.isnan(c15.rho) else abs(c15.rho)
    return med >= float(v["min_abs_rho"]) and med > rho15, runs, med, c15


def _reading(runs: pd.DataFrame, med: float, loss: str, versus: str = "") -> str:
    """The median |ρ| (then ``versus``), its sign and the median ρ per corpus of one reading of
    EB-16."""
    neg = int((runs["rho"] < 0).sum())
    per = runs.groupby("corpus")["rho"].median()
    return (f"median |ρ(static R̃_eff, {LOSS_NAMES[loss]})| {fmt(med)} over {len(runs)} runs"
            f"{versus}; "
            f"sign: ρ < 0 (rank rises as loss falls) on {neg}/{len(runs)} runs, median ρ "
            f"{fmt(float(runs['rho'].median()))}; median ρ by corpus: "
            + ", ".join(f"{c}: {fmt(float(r))}" for c, r in per.items()))


@claim("EB-16", "A", ('language_ranks', 'language_loss', 'language_corpora'),
       "Appendix B: the static kernel rank tracks training loss rather than "
       "complexity. Per (corpus, seed), Spearman ρ between the R̃_eff of W_Q W_Kᵀ (mean over "
       "layers and heads) and the train loss over the logged steps: the median of |ρ| over runs is "
       "≥ {min_abs_rho:g} and exceeds |ρ| of EB-15 (rank against complexity); judged on as many "
       "corpora as EB-15; the sign, per-corpus medians, every other rank measure, the realized "
       "mixer and the same rule against the validation loss at the same steps reported")
def eb16(tables: Tables, p: dict[str, Any], v: Values) -> Outcome:
    least = float(v["min_abs_rho"])
    v15 = claim_values("EB-15", p)
    n, names = _corpus_count(tables)
    ok, runs, med, c15 = _tracks(tables, HEADLINE, v, v15)
    measured = _reading(runs, med, TRAIN_LOSS, f" vs |ρ| of EB-15 {fmt(abs(c15.rho))}")
    earlier = first_seeds(tables, int(v15["earlier_seeds"]),
                          ("language_ranks", "language_loss", "language_corpora"))
    if earlier is not None:
        ok3, runs3, med3, c3 = _tracks(earlier, HEADLINE, v, v15)
        measured += (_earlier(int(v15["earlier_seeds"])) + f"median |ρ| {fmt(med3)} over "
                     f"{len(runs3)} runs vs |ρ| of EB-15 {fmt(abs(c3.rho))}, that reading: "
                     f"{'pass' if ok3 else 'fail'}")
    try:  # the same rule against the validation loss at the same steps: reported, not judged
        ok_val, runs_val, med_val, _ = _tracks(tables, HEADLINE, v, v15, VAL_LOSS)
        val = (f"against the validation loss at the same steps ({VAL_READING}): "
               f"{_reading(runs_val, med_val, VAL_LOSS)}; that reading: "
               f"{'pass' if ok_val else 'fail'}")
    except NotRun as why:
        ok_val, val = None, f"against the validation loss ({VAL_READING}): not run ({why})"
    if n < int(v15["min_corpora"]):
        raise NotRun(f"{n} corpora ({', '.join(names)}), fewer than EB-15's min_corpora = "
                     f"{v15['min_corpora']}; for information: {measured}; {val}")
    verdicts = {HEADLINE.label: ok}
    if ok_val is not None:
        verdicts[VAL_LABEL] = ok_val
    for m in measures(need(tables, "language_ranks")):
        if m.label != HEADLINE.label:
            verdicts[m.label] = _tracks(tables, m, v, v15)[0]
    note = ("a run's ρ is over its logged steps (step 0 included; at least three); a constant "
            f"rank counts as ρ = 0; {val}; the verdict is the train loss's")
    return (ok, measured, f"median |ρ| ≥ {least:g} and > |ρ| of EB-15", note,
            sweep_text(verdicts, HEADLINE.label))


# ---- OPEN-4: the realized operator over training, its structural prior removed --------------------

OPEN = "open question, not a paper claim"  # the verdict's paper column of OPEN-4


def _range(s: pd.Series) -> str:
    return fmt(float(s.min())) if s.min() == s.max() else f"{fmt(float(s.min()))}–{fmt(float(s.max()))}"


def _association(field: pd.DataFrame, corpora: pd.DataFrame, m: Measure, v15: Values
                 ) -> tuple[Correlation, str]:
    """EB-15's ρ(complexity, final measure) of one rung with its interval, and its reading
    (``realized.association``)."""
    pts = complexity_points(field, corpora, m)
    c = correlation(pts["complexity"].to_numpy(), pts["value"].to_numpy(), pts["corpus"].to_numpy(),
                    int(v15["bootstrap_samples"]), float(v15["interval_level"]))
    return c, association(c)


def _rung_text(field: pd.DataFrame, loss: pd.DataFrame, corpora: pd.DataFrame, v15: Values,
               v16: Values) -> tuple[str, str]:
    """OPEN-4's sentence of one rung (measured) and every measure's reading (note)."""
    sh = shape(field)
    judged = sh.corpora >= int(v15["min_corpora"])
    where, e, w = gap(field)
    med = {m: f"{fmt(float(p['value'].median()))} (corpus medians {_range(per_corpus(p))})"
           for m in FIELD_MEASURES for p in [final(field, m)]}
    assoc = {m: _association(field, corpora, m, v15) for m in FIELD_MEASURES}

    def rho(m: Measure, label: str = "ρ") -> str:
        c, reading = assoc[m]
        return (f"{label} = {fmt(c.rho)} [{fmt(c.lo)}, {fmt(c.hi)}]"
                + (f", {reading}" if judged else ""))

    def est(m: Measure) -> str:
        return name(m).split(" of ")[0]

    residual = [m for m in FIELD_MEASURES if m.matrix == RESIDUAL_FIELD]
    follows = [est(m) for m in residual if judged and assoc[m][1] == FOLLOWS]
    removed = (f"not judged ({sh.corpora} corpora, fewer than EB-15's min_corpora = "
               f"{v15['min_corpora']})" if not judged else
               f"its {' and '.join(follows)} follow{'s' if len(follows) == 1 else ''} complexity"
               if follows else "no rank follows complexity")
    level = f"{float(v15['interval_level']):.0%}"
    logit, resid, static = FIELD_MEASURES[0], FIELD_MEASURES[2], FIELD_MEASURES[4]
    lie = "overlap" if where == OVERLAP else f"lie {where}"
    measured = (f"{sh.text}: prior share {med[PRIOR]}; final k90 of Ẽ {med[logit]}, of the "
                f"residual {med[resid]}, of W_Q W_Kᵀ {med[static]} of d_h = {sh.d_head}: Ẽ's "
                f"corpus medians {_range(e)} {lie} W_Q W_Kᵀ's {_range(w)}; with the prior "
                f"removed, {removed} (ρ with complexity, {level} interval: residual "
                + ", ".join(f"{est(m)} {rho(m)}" for m in residual) + "; Ẽ "
                + ", ".join(f"{est(m)} {rho(m)}" for m in FIELD_MEASURES[:2]) + ")")
    parts = []
    for m in FIELD_MEASURES:
        over = step_rhos(field, corpora, m).dropna()
        runs = loss_rhos(field, loss, m)
        c = assoc[m][0]
        steps = (f"over the {len(over)} logged steps {fmt(float(over.min()))} … "
                 f"{fmt(float(over.max()))} (step {int(over.index[0])}: {fmt(float(over.iloc[0]))})"
                 if len(over) else "undefined at every logged step")
        text = f"{name(m)}: final {med[m]}; {rho(m, 'ρ(complexity)')}, {steps}"
        if len(runs):
            mid = float(np.median(np.abs(runs)))
            ok = mid >= float(v16["min_abs_rho"]) and mid > (0.0 if np.isnan(c.rho) else abs(c.rho))
            text += (f"; median |ρ(train loss)| {fmt(mid)} over {len(runs)} runs: "
                     f"{'tracks' if ok else 'does not track'} the loss")
        parts.append(text)
    return measured, "; ".join(parts)


def _open4_statement(v: Values) -> str:
    lo, hi = v["anchor_field_k90"]
    slo, shi = v["anchor_static_k90"]
    dlo, dhi = v["anchor_head_dims"]
    return ("Appendix B's open problem: what operator do the trained language models realize? At "
            "every logged step, per layer and head, the row-centred causal logit field Ẽ (median "
            "over fixed validation windows), its mean over windows (the structural prior) and the "
            "residual Ẽ − mean, beside W_Q W_Kᵀ: their k90 (components for 90 % of the energy) "
            "and R̃_eff, the prior's share of the energy, and each one's association with corpus "
            "complexity and with the loss, at the appendix-B model and a larger rung; set beside "
            f"pretrained LMs, whose Ẽ reaches 90 % in {lo}–{hi} components while W_Q W_Kᵀ needs "
            f"{slo}–{shi} of d_h = {dlo}/{dhi}")


@claim("OPEN-4", "A", ('language_field', 'language_field_loss', 'language_corpora'),
       _open4_statement, caveat=OPEN, measured=True)
def open4(tables: Tables, p: dict[str, Any], v: Values) -> Outcome:
    field, loss = need(tables, "language_field"), need(tables, "language_field_loss")
    corpora = need(tables, "language_corpora")
    if field.empty:
        raise NotRun("language_field has no rows (field_windows = 0: the logit field was not "
                     "measured)")
    missing = sorted(set(field["corpus"]) - set(corpora["corpus"]))
    if missing:
        raise NotRun(f"language_corpora has no complexity for the corpora {missing}")
    v15, v16 = claim_values("EB-15", p), claim_values("EB-16", p)
    measured, notes = [], []
    for rung in rungs(field):
        m, n = _rung_text(field[field["rung"] == rung], loss[loss["rung"] == rung], corpora, v15,
                          v16)
        measured.append(f"{rung} rung ({m})")
        notes.append(f"{rung} rung: {n}")
    lo, hi = v["anchor_field_k90"]
    slo, shi = v["anchor_static_k90"]
    dlo, dhi = v["anchor_head_dims"]
    anchor = (f"the outside reference (arXiv 2604.04384, five pretrained LMs): Ẽ {lo}–{hi} below "
              f"W_Q W_Kᵀ {slo}–{shi} of d_h = {dlo}/{dhi}")
    threshold = ("measured, no pass/fail: values at the last logged step, mean over layers and "
                 "heads per (corpus, seed); Ẽ lies below / above W_Q W_Kᵀ when every corpus's "
                 "median k90 is below / above every corpus's of the other, else overlapping; a "
                 "measure follows (runs against) complexity when EB-15's bootstrap interval of "
                 f"ρ lies above (below) 0, on ≥ {v15['min_corpora']} corpora; it tracks the loss "
                 f"by EB-16's rule (median |ρ| ≥ {v16['min_abs_rho']:g} and > its |ρ| with "
                 "complexity)")
    return (None, " | ".join(measured) + f" | beside {anchor}", threshold, " | ".join(notes))
