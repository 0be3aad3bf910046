"""Paper A (Yoon), the Entropic Bound: claims EB-1 … EB-14 and EB-13b, and the open question
OPEN-3 (measured, never pass/fail).

Every threshold is a value of the config's ``claims`` block (``v``, see ``core.claim_values``);
the statements are rendered from the same values. A claim judged at a free parameter fixed before
the run (τ of EB-13 and EB-14, β of EB-13b) also reports its verdict at every value of the
config's grid (the ``sweep`` of its outcome); "on every seed" comes with the fraction of seeds.
EB-7, EB-8, EB-9 and EB-12 are judged on the config's teacher values V* (``entropic.teacher_values``)
and reported under the other V* too (the ``*_other_values`` tables; ``_both_values``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from attnrank.core.claims import (
    FAIL,
    NOT_RUN,
    PASS,
    NotRun,
    Outcome,
    Values,
    claim,
    fmt,
    need,
    seeds_of,
    share,
    sweep_text,
)
from attnrank.core.columns import (
    BOUND,
    ENERGY_EFFECTIVE_RANK,
    ENTROPY_EFFECTIVE_RANK,
    EXCESS,
    EXCESS_POPULATION,
    numerical_rank,
)
from attnrank.core.quantities import (
    deviation_from_r_star,
    median_over_seeds,
    recovery_frontier,
    transition_ratios,
)
from attnrank.entropic.jobs import (
    ADAM,
    B0,
    B1,
    B1_POS,
    B2,
    B2_POS,
    B3,
    E1,
    E2,
    E2_DEBIASED,
    LINEAR,
    MIXER,
    OPTIMIZERS,
    SOFTMAX,
    other_values,
)

Tables = Mapping[str, pd.DataFrame]


def _adam(tables: Tables) -> pd.DataFrame:
    df = need(tables, "entropic_surrogate")
    return df[df["optimizer"] == ADAM]


@claim("EB-1", "A", ('entropic_surrogate',),
       "Linear surrogate, deficiency: for every r < r*, the trained excess risk (Adam) "
       "lies on the Eckart–Young bound, within {bound_tolerance:g} of it (relative to the bound)")
def eb1(tables: Tables, p: dict[str, Any], v: Values) -> Outcome:
    tol = float(v["bound_tolerance"])
    df = _adam(tables)
    low = df[df["rank"] < df["r_star"]]
    if low.empty:
        raise NotRun("no student with r < r* in the grid")
    rel = (low[EXCESS] - low[BOUND]) / low[BOUND]
    worst = low.loc[rel.abs().idxmax()]
    below = float((low[EXCESS_POPULATION] - low[BOUND]).min())
    ok = bool((rel.abs() <= tol).all())
    measured = (f"max abs(excess − bound) / bound {fmt(float(rel.abs().max()))} (r*={int(worst.r_star)}, "
                f"r={int(worst['rank'])}, seed {int(worst.seed)}); relative deviation from "
                f"{fmt(float(rel.min()))} to {fmt(float(rel.max()))}; "
                f"{share(rel.abs() <= tol, 'students (r, seed) within')}")
    note = (f"held-out excess can sit below the bound by sampling noise only; the exact population "
            f"excess minus the bound is ≥ {fmt(below)} (never below it)")
    return ok, measured, f"abs(excess − bound) ≤ {tol:g} · bound for every r < r*", note


@claim("EB-2", "A", ('entropic_surrogate',),
       "Linear surrogate, attainability: for every r ≥ r*, the trained excess risk "
       "(Adam) is at most {noise_floor:g} (the noise floor; signal variance 1)")
def eb2(tables: Tables, p: dict[str, Any], v: Values) -> Outcome:
    floor = float(v["noise_floor"])
    df = _adam(tables)
    high = df[df["rank"] >= df["r_star"]]
    if high.empty:
        raise NotRun("no student with r ≥ r* in the grid")
    worst = high.loc[high[EXCESS].idxmax()]
    measured = (f"max excess {fmt(float(worst[EXCESS]))} (r*={int(worst.r_star)}, r={int(worst['rank'])}); "
                f"median {fmt(float(high[EXCESS].median()))}; "
                f"{share(high[EXCESS] <= floor, 'students (r, seed) at the floor')}")
    return bool(high[EXCESS].max() <= floor), measured, f"≤ {floor:g}", ""


@claim("EB-3", "A", ('entropic_surrogate',),
       "Linear surrogate, sharp transition: excess(r* − 1) / excess(r*) ≥ {min_ratio:g}")
def eb3(tables: Tables, p: dict[str, Any], v: Values) -> Outcome:
    least = float(v["min_ratio"])
    jumps = transition_ratios(_adam(tables))
    if not jumps:
        raise NotRun("the grid lacks r* − 1 and r* for every r* ≥ 2")
    lo = min(jumps, key=lambda j: j[2])
    by_r = {}
    for r_star, _, ratio in jumps:
        by_r.setdefault(r_star, []).append(ratio)
    measured = (f"min ratio {fmt(lo[2])} (r*={lo[0]}, seed {lo[1]}); median by r*: "
                + ", ".join(f"{r}:{fmt(float(np.median(v)))} ("
                            f"{seeds_of(pd.Series(v) >= least, f'≥ {least:g}')})"
                            for r, v in sorted(by_r.items())))
    return bool(lo[2] >= least), measured, f"≥ {least:g} for every r* and seed", ""


@claim("EB-4", "A", ('entropic_surrogate',),
       "Linear surrogate, recovery on both optimizers: for the over-parameterized student "
       "(r = N), R̃_eff of the learned A is within ±{rank_tolerance:g} of r* (median over seeds), "
       "for Adam and for plain GD from small init (early-stopped on validation MSE)")
def eb4(tables: Tables, p: dict[str, Any], v: Values) -> Outcome:
    tol = float(v["rank_tolerance"])
    df = need(tables, "entropic_surrogate")
    n = int(p["entropic"]["n_tokens"])
    top = df[df["rank"] == n]
    for opt in OPTIMIZERS:
        if top[top["optimizer"] == opt].empty:
            raise NotRun(f"no {opt} student with r = N = {n}")
    taus = [float(t) for t in p["entropic"]["taus"]]
    ok, parts, notes, verdicts = True, [], [], {}
    for opt in OPTIMIZERS:
        part = top[top["optimizer"] == opt]
        good = True
        for r_star, g in sorted(part.groupby("r_star")):
            reff = float(g[ENERGY_EFFECTIVE_RANK].median())
            good &= abs(reff - r_star) <= tol
            nums = {t: float(g[numerical_rank(t)].median()) for t in taus}
            parts.append(f"{opt} r*={r_star}: R̃_eff {fmt(reff)}, numerical rank "
                         + "/".join(f"{fmt(v)}" for v in nums.values()))
            exact = [f"τ={t:g}" for t, v in nums.items() if v == r_star]
            notes.append(f"{opt} r*={r_star}: numerical rank = r* at "
                         + (", ".join(exact) if exact else "no τ"))
        verdicts[opt] = bool(good)
        ok &= good
    measured = (f"medians over seeds (numerical rank at τ = {'/'.join(f'{t:g}' for t in taus)}); "
                + "; ".join(parts))
    note = ("recovers r* at every r*: " + ", ".join(f"{o}: {verdicts[o]}" for o in OPTIMIZERS)
            + ". GD = plain gradient descent from small init, early-stopped on validation MSE "
            "(in the verdict). " + "; ".join(notes))
    return ok, measured, f"abs(median R̃_eff − r*) ≤ {tol:g}, Adam and GD each", note


def _ladder(tables: Tables) -> pd.DataFrame:
    return need(tables, "entropic_ladder").pivot_table(index="seed", columns="model", values=EXCESS)


@claim("EB-5", "A", ('entropic_ladder',),
       "Ladder: B0 reaches the floor (excess ≤ {noise_floor:g}) while B1, B2 and B3 "
       "(full-rank kernels, no positions) each have ≥ {min_ratio:g}× B0's excess: the bound breaks "
       "at B1 and stays broken")
def eb5(tables: Tables, p: dict[str, Any], v: Values) -> Outcome:
    floor, least = float(v["noise_floor"]), float(v["min_ratio"])
    piv = _ladder(tables)
    missing = [m for m in (B0, B1, B2, B3) if m not in piv.columns]
    if missing:
        raise NotRun(f"ladder rungs {missing} were not run")
    b0_ok = bool((piv[B0] <= floor).all())
    ratios = {m: piv[m] / piv[B0] for m in (B1, B2, B3)}
    ok = b0_ok and all(bool((r >= least).all()) for r in ratios.values())
    med = piv.median()
    measured = ("median excess " + ", ".join(f"{m}:{fmt(float(med[m]))}" for m in (B0, B1, B2, B3))
                + f" (B0: {seeds_of(piv[B0] <= floor, 'at the floor')}); min over seeds of "
                "excess / B0's: " + ", ".join(f"{m}:{fmt(float(r.min()))} "
                                              f"({seeds_of(r >= least, f'≥ {least:g}')})"
                                              for m, r in ratios.items()))
    return ok, measured, (f"B0 ≤ {floor:g} on every seed; B1, B2, B3 ≥ {least:g} × B0 on every "
                          "seed"), ""


@claim("EB-6", "A", ('entropic_ladder',),
       "Ladder ablation: B1 with learned positional features returns to the floor "
       "(excess ≤ {noise_floor:g}): the cause is input-conditioned mixing, not softmax or rank")
def eb6(tables: Tables, p: dict[str, Any], v: Values) -> Outcome:
    floor = float(v["noise_floor"])
    piv = _ladder(tables)
    if B1_POS not in piv.columns:
        raise NotRun("B1 with positions was not run")
    worst = float(piv[B1_POS].max())
    other = (f"; B2 with positions: median {fmt(float(piv[B2_POS].median()))}"
             if B2_POS in piv.columns else "")
    at_floor = seeds_of(piv[B1_POS] <= floor, "at the floor")
    return (worst <= floor, f"B1 with positions: max excess over seeds {fmt(worst)} ({at_floor})"
            + other,
            f"≤ {floor:g} on every seed", "softmax with positions can only realize row-stochastic "
            "fixed mixers, so B2 with positions is not expected to reach the floor")


def _teacher(df: pd.DataFrame, kind: str, beta: float | None) -> pd.DataFrame:
    out = df[df["teacher"] == kind]
    return out if beta is None else out[np.isclose(out["beta"], beta)]


def _both_values(tables: Tables, p: dict[str, Any], table: str,
                 judge: Callable[[pd.DataFrame], Outcome]) -> Outcome:
    """A claim judged on ``table`` (the config's teacher values V*) and reported on
    ``<table>_other_values`` (the other V*): the verdict, threshold and measured text are the
    config's V*'s; the note adds the other V*'s verdict and measured text (its note too, where it
    differs), the sweep both verdicts, the config's marked headline. ``NotRun`` when either table
    is missing or the config's V* lacks the grid; the other V* lacking it is reported, not raised."""
    values = p["entropic"]["teacher_values"]
    other = other_values(values)
    alt_table = need(tables, f"{table}_other_values")
    head = Outcome(*judge(need(tables, table)))
    try:
        alt = Outcome(*judge(alt_table))
        alt_verdict, alt_text = (PASS if alt.passed else FAIL), alt.measured
        if alt.note and alt.note != head.note:
            alt_text += f"; {alt.note}"
    except NotRun as why:
        alt_verdict, alt_text = NOT_RUN, str(why)
    note = "; ".join(t for t in (head.note, f"V*={other} (reported, not in the verdict): "
                                 f"{alt_verdict}: {alt_text}") if t)
    sweep = (f"V*={values} (headline): {PASS if head.passed else FAIL}; "
             f"V*={other}: {alt_verdict}")
    return Outcome(head.passed, f"V*={values}: {head.measured}", head.threshold, note, sweep)


def _attention_bound(table: pd.DataFrame, kind: str, beta: float | None, v: Values) -> Outcome:
    """Deficiency, attainability and transition of the ``kind`` teacher (at ``beta``) in one
    attention table."""
    least, floor, jump_min = (float(v["deficiency_excess"]), float(v["noise_floor"]),
                              float(v["min_ratio"]))
    df = _teacher(table, kind, beta)
    low, high = df[df["rank"] < df["r_star"]], df[df["rank"] >= df["r_star"]]
    jumps = transition_ratios(df)
    if low.empty or high.empty or not jumps:
        raise NotRun(f"the {kind} grid lacks ranks on both sides of r*")
    lo_min, hi_max = float(low[EXCESS].min()), float(high[EXCESS].max())
    jump = min(j[2] for j in jumps)
    ok = lo_min >= least and hi_max <= floor and jump >= jump_min
    ratios = pd.Series([j[2] for j in jumps])
    measured = (f"min excess r < r*: {fmt(lo_min)} ({share(low[EXCESS] >= least, 'students')} "
                f"≥ {least:g}); max excess r ≥ r*: {fmt(hi_max)} "
                f"({share(high[EXCESS] <= floor, 'students')} ≤ {floor:g}); min "
                f"excess(r*−1)/excess(r*): {fmt(jump)} ({share(ratios >= jump_min, '(r*, seed)')} "
                f"≥ {jump_min:g})")
    return Outcome(ok, measured, f"r < r*: ≥ {least:g}; r ≥ r*: ≤ {floor:g}; jump ≥ {jump_min:g}",
                   "")


BOTH_VALUES = "; verdict on the configured teacher values V*, the other V* reported"


@claim("EB-7", "A", ('entropic_attention', 'entropic_attention_other_values'),
       "Attention-native rank, linear teacher: deficiency (r < r*: excess ≥ "
       "{deficiency_excess:g}), attainability (r ≥ r*: excess ≤ {noise_floor:g}), transition "
       "excess(r*−1)/excess(r*) ≥ {min_ratio:g}" + BOTH_VALUES)
def eb7(tables: Tables, p: dict[str, Any], v: Values) -> Outcome:
    return _both_values(tables, p, "entropic_attention",
                        lambda df: _attention_bound(df, LINEAR, None, v))


def _eb8(df: pd.DataFrame, v: Values) -> Outcome:
    beta = float(v["headline_beta"])
    passed, measured, threshold, note, *_ = _attention_bound(df, SOFTMAX, beta, v)
    return Outcome(passed, f"β = {beta:g}: " + measured, threshold, note)


@claim("EB-8", "A", ('entropic_attention', 'entropic_attention_other_values'),
       "Attention-native rank, softmax teacher (headline β): deficiency (r < r*: "
       "excess ≥ {deficiency_excess:g}), attainability (r ≥ r*: excess ≤ {noise_floor:g}), "
       "transition ratio ≥ {min_ratio:g}" + BOTH_VALUES)
def eb8(tables: Tables, p: dict[str, Any], v: Values) -> Outcome:
    return _both_values(tables, p, "entropic_attention", lambda df: _eb8(df, v))


def _eb9(df: pd.DataFrame, v: Values) -> Outcome:
    """EB-9 on one attention table."""
    beta = float(v["headline_beta"])
    lin = median_over_seeds(_teacher(df, LINEAR, None), ["r_star", "rank"], EXCESS)
    soft = _teacher(df, SOFTMAX, None)
    head = median_over_seeds(soft[np.isclose(soft["beta"], beta)], ["r_star", "rank"], EXCESS)
    keys = [k for k in head.index if k[1] < k[0] and k in lin.index]
    if not keys:
        raise NotRun("no r < r* with both a linear and a headline-β softmax teacher")
    worst = max(keys, key=lambda k: head[k] / lin[k])
    ok = all(head[k] < lin[k] for k in keys)
    r_top = max(k[0] for k in keys)
    sweep = []
    for b, part in sorted(soft.groupby("beta")):
        med = median_over_seeds(part, ["r_star", "rank"], EXCESS)
        if (r_top, r_top - 1) in med.index:
            sweep.append(f"β={b:g}:{fmt(float(med[(r_top, r_top - 1)]))}")
    if (r_top, r_top - 1) in lin.index:
        sweep.append(f"linear:{fmt(float(lin[(r_top, r_top - 1)]))}")
    above = [f"({int(k[0])}, {int(k[1])})" for k in keys if not head[k] < lin[k]]
    measured = (f"softmax below linear at {len(keys) - len(above)} of {len(keys)} (r*, r) pairs with "
                f"r < r*; not below at {', '.join(above) or 'none'}; largest softmax/linear ratio "
                f"{fmt(float(head[worst] / lin[worst]))} (r*={worst[0]}, r={worst[1]}); β sweep, excess at "
                f"r*={r_top}, r={r_top - 1}: " + ", ".join(sweep))
    return Outcome(ok, measured, "softmax < linear for every r < r*",
                   "the β sweep shows whether the gap to linear shrinks (the jump grows again) at "
                   "larger β")


@claim("EB-9", "A", ('entropic_attention', 'entropic_attention_other_values'),
       "Softmax compresses the jump at β = {headline_beta:g}: for every r < r*, "
       "excess_softmax(r) < excess_linear(r) (medians over seeds); the β sweep is reported"
       + BOTH_VALUES)
def eb9(tables: Tables, p: dict[str, Any], v: Values) -> Outcome:
    return _both_values(tables, p, "entropic_attention", lambda df: _eb9(df, v))


@claim("EB-10", "A", ('entropic_attention',),
       "Attention-native recovery: for r = d, the numerical rank (τ = {headline_tau:g}) of "
       "the learned K = W_Q W_Kᵀ equals r* and R̃_eff is within ±{rank_tolerance:g} of r*, for both "
       "teachers")
def eb10(tables: Tables, p: dict[str, Any], v: Values) -> Outcome:
    df = need(tables, "entropic_attention")
    d = int(p["entropic"]["d"])
    top = df[df["rank"] == d]
    beta, tau, tol = float(v["headline_beta"]), float(v["headline_tau"]), float(v["rank_tolerance"])
    if top.empty:
        raise NotRun(f"no student with r = d = {d}")
    col = numerical_rank(tau)
    ok, parts, others = True, [], []
    for (kind, b), part in sorted(top.groupby(["teacher", "beta"])):
        headline = kind == LINEAR or np.isclose(b, beta)
        for r_star, g in sorted(part.groupby("r_star")):
            num, reff = float(g[col].median()), float(g[ENERGY_EFFECTIVE_RANK].median())
            good = num == r_star and abs(reff - r_star) <= tol
            text = (f"{kind}{'' if kind == LINEAR else f' β={b:g}'} r*={r_star}: numerical "
                    f"{fmt(num)}, R̃_eff {fmt(reff)}")
            if headline:
                ok &= good
                parts.append(text)
            else:
                others.append(text)
    if not parts:
        raise NotRun("no linear or headline-β softmax teacher at r = d")
    return ok, "medians over seeds: " + "; ".join(parts), \
        f"numerical rank (τ={tau:g}) = r*, abs(R̃_eff − r*) ≤ {tol:g}", \
        ("other β (not in the verdict): " + "; ".join(others)) if others else ""


def _predict(tables: Tables | pd.DataFrame, kind: str, estimator: str, v: Values) -> pd.DataFrame:
    """The rows of ``estimator`` for the ``kind`` teacher (softmax: at the headline β) of the
    predict table (``tables`` is the run's tables, or one predict table itself)."""
    df = tables if isinstance(tables, pd.DataFrame) else need(tables, "entropic_predict")
    df = df[(df["estimator"] == estimator) & (df["teacher"] == kind)]
    if kind == SOFTMAX:
        df = df[np.isclose(df["beta"], float(v["headline_beta"]))]
    if df.empty:
        raise NotRun(f"no {estimator} rows for a {kind} teacher")
    return df


@claim("EB-11", "A", ('entropic_predict',),
       "Predictability, linear teacher, V known (E1): the numerical rank and R̃_eff of "
       "K̂ equal r* (R̃_eff within ±{rank_tolerance:g}) for every r* at every S ≥ {min_sequences}")
def eb11(tables: Tables, p: dict[str, Any], v: Values) -> Outcome:
    tol, tau = float(v["rank_tolerance"]), float(v["headline_tau"])
    df = _predict(tables, LINEAR, E1, v)
    df = df[df["S"] >= int(v["min_sequences"])]
    col = numerical_rank(tau)
    num = median_over_seeds(df, ["S", "r_star"], col)
    reff = median_over_seeds(df, ["S", "r_star"], ENERGY_EFFECTIVE_RANK)
    bad = [k for k in num.index if num[k] != k[1] or abs(reff[k] - k[1]) > tol]
    dev = deviation_from_r_star(reff)
    measured = (f"max abs(median R̃_eff − r*) {fmt(float(dev.max()))}; numerical rank (τ = "
                f"{tau:g}) ≠ r* at (S, r*) = {[tuple(map(int, k)) for k in bad]}"
                f" of {len(num)}")
    return not bad, measured, (f"numerical rank = r*, abs(R̃_eff − r*) ≤ {tol:g}, medians over "
                               "seeds"), ""


def _eb12(table: pd.DataFrame, v: Values) -> Outcome:
    """EB-12 on one predict table; the debiased E2 at the largest S as the note."""
    tol = float(v["rank_tolerance"])
    df = _predict(table, LINEAR, E2, v)
    sizes = sorted(df["S"].unique())
    if len(sizes) < 2:
        raise NotRun("fewer than two S in the grid")
    dev = recovery_frontier(df)
    top_ok, low_ok = bool(dev[sizes[-1]] <= tol), bool(dev[sizes[0]] <= tol)
    num = median_over_seeds(df[df["S"] == sizes[-1]], ["r_star"], numerical_rank(v["headline_tau"]))
    measured = ("max abs(median R̃_eff − r*) by S: "
                + ", ".join(f"{int(s)}:{fmt(float(v))}" for s, v in dev.items())
                + f"; numerical rank at S={int(sizes[-1])}: "
                + ", ".join(f"r*={int(r)}:{fmt(float(v))}" for r, v in num.items()))
    deb = _predict(table, LINEAR, E2_DEBIASED, v)
    deb_reff = median_over_seeds(deb[deb["S"] == deb["S"].max()], ["r_star"], ENERGY_EFFECTIVE_RANK)
    note = ("debiased E2 (per-sequence OLS, noise Gram removed) at the largest S, median R̃_eff: "
            + ", ".join(f"r*={int(r)}:{fmt(float(v))}" for r, v in deb_reff.items()))
    return Outcome(top_ok and not low_ok, measured,
                   f"≤ {tol:g} at the largest S; > {tol:g} at the smallest", note)


@claim("EB-12", "A", ('entropic_predict', 'entropic_predict_other_values'),
       "Predictability, linear teacher, V unknown (E2, tensor unfolding): exact at the "
       "largest S (R̃_eff within ±{rank_tolerance:g}) and not at the smallest (the sufficient-scale "
       "frontier); the debiased E2 reported" + BOTH_VALUES)
def eb12(tables: Tables, p: dict[str, Any], v: Values) -> Outcome:
    return _both_values(tables, p, "entropic_predict", lambda df: _eb12(df, v))


def _taus(p: dict[str, Any], headline: float) -> list[float]:
    """Every τ of the config's grid, the headline included, in order."""
    return sorted({float(t) for t in p["entropic"]["taus"]} | {headline})


def _saturates(df: pd.DataFrame, tau: float, div: float) -> tuple[bool, pd.Series, float, float]:
    """EB-13's saturation at ``tau``: (spread of the median numerical rank over r* < the spread
    of r* / ``div``, the medians by r*, their spread, the spread of r*)."""
    num = median_over_seeds(df, ["r_star"], numerical_rank(tau))
    r = num.index.to_numpy(float)
    spread, r_spread = float(num.max() - num.min()), float(r.max() - r.min())
    return spread < r_spread / div, num, spread, r_spread


def _d32_grid(tables: Tables, p: dict[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The second predictability grid (d = 32): its rows under the grid's own spectrum
    (``entropic.spectrum``) and those of its variant spectra (reported)."""
    df = need(tables, "entropic_predict_d32")
    own = df["spectrum"] == p["entropic"]["spectrum"]
    return df[own], df[~own]


def _eb13_rule(df: pd.DataFrame, tau: float, div: float) -> tuple[bool, pd.Series, pd.Series]:
    """EB-13's rule on one teacher's E1 rows at their largest S: (saturated and R̃_eff strictly
    increasing, the numerical rank at ``tau`` by r*, R̃_eff by r*)."""
    df = df[df["S"] == df["S"].max()]
    reff = median_over_seeds(df, ["r_star"], ENERGY_EFFECTIVE_RANK)
    if len(reff) < 2:
        raise NotRun("fewer than two r* in the grid")
    mono = bool(np.all(np.diff(reff.to_numpy()) > 0))
    saturated, num, _, _ = _saturates(df, tau, div)
    return saturated and mono, num, reff


def _paper_level(df: pd.DataFrame, tau: float, div: float, band: tuple[float, float]) -> str:
    """EB-13's reported condition on one grid (softmax, headline β, E1 at the largest S): the
    saturated level, the median over the r* grid of the medians over seeds of the numerical rank
    at ``tau``, lies in the paper's ``band``; EB-13's own rule beside it."""
    ok, num, reff = _eb13_rule(df, tau, div)
    level = float(np.median(num.to_numpy()))
    inside = bool(band[0] <= level <= band[1])
    return (f"S={int(df['S'].max())}: numerical rank (τ={tau:g}) by r*: "
            + ", ".join(f"{int(k)}:{fmt(float(x))}" for k, x in num.items())
            + f"; saturated level (median over r*) {fmt(level)} in the paper's "
            f"[{band[0]:g}, {band[1]:g}]: {inside}; R̃_eff by r*: "
            + ", ".join(f"{int(k)}:{fmt(float(x))}" for k, x in reff.items())
            + f"; EB-13's rule: {PASS if ok else FAIL}")


def _reported(fn: Callable[[], str]) -> str:
    """A reported reading, or why it could not be made (never raises ``NotRun``)."""
    try:
        return fn()
    except NotRun as why:
        return f"not run: {why}"


@claim("EB-13", "A", ('entropic_predict', 'entropic_predict_d32'),
       "Predictability, softmax teacher (E1 at the largest S): the numerical rank at "
       "τ = {saturation_tau:g} saturates (spread over the r* grid < the spread of r* / "
       "{spread_divisor:g}) while R̃_eff stays monotone in r*; at d = 32 (reported) whether the "
       "saturated level lies in the paper's [{paper_level[0]:g}, {paper_level[1]:g}]")
def eb13(tables: Tables, p: dict[str, Any], v: Values) -> Outcome:
    tau, div = float(v["saturation_tau"]), float(v["spread_divisor"])
    band = tuple(float(b) for b in v["paper_level"])
    df = _predict(tables, SOFTMAX, E1, v)
    d32, variants = _d32_grid(tables, p)
    df = df[df["S"] == df["S"].max()]
    ok, num, reff = _eb13_rule(df, tau, div)
    _, _, spread, r_spread = _saturates(df, tau, div)
    measured = (f"S = {int(df['S'].max())}: numerical rank (τ={tau:g}) by r*: "
                + ", ".join(f"{int(k)}:{fmt(float(v))}" for k, v in num.items())
                + f" (spread {fmt(spread)} vs r* spread {fmt(r_spread)}); R̃_eff by r*: "
                + ", ".join(f"{int(k)}:{fmt(float(v))}" for k, v in reff.items()))
    mono = bool(np.all(np.diff(reff.to_numpy()) > 0))
    sweep = sweep_text({f"τ={t:g}": _saturates(df, t, div)[0] and mono for t in _taus(p, tau)},
                       f"τ={tau:g}")
    e2 = _predict(tables, SOFTMAX, E2, v)
    e2 = e2[e2["S"] == e2["S"].max()]
    e2_num = median_over_seeds(e2, ["r_star"], numerical_rank(tau))
    note = (f"E2 (V unknown) at the largest S, numerical rank (τ={tau:g}) / R̃_eff by r*: "
            + ", ".join(f"{int(k)}:{fmt(float(a))}/{fmt(float(b))}" for k, a, b in zip(
                e2_num.index, e2_num,
                median_over_seeds(e2, ["r_star"], ENERGY_EFFECTIVE_RANK), strict=True)))
    note += ("; d = 32 (reported, not in the verdict): "
             + _reported(lambda: _paper_level(_predict(d32, SOFTMAX, E1, v), tau, div, band)))
    for spec, part in sorted(variants.groupby("spectrum")):
        note += (f"; d = 32, {spec} spectrum (reported): "
                 + _reported(lambda part=part: _paper_level(_predict(part, SOFTMAX, E1, v), tau,
                                                            div, band)))
    return ok, measured, f"spread < r* spread / {div:g}; R̃_eff strictly increasing in r*", \
        note, sweep


def _energy_bias(df: pd.DataFrame, tol: float, s: int | None = None) -> tuple[bool, str, str]:
    """EB-13b on one softmax teacher's estimates at S = ``s`` (default: its largest S): (R̃_eff
    over-estimates the smallest r* and compresses the largest, both by more than ``tol``; the
    medians as text; the two medians, short)."""
    s = int(df["S"].max()) if s is None else int(s)
    part = df[df["S"] == s]
    reff = median_over_seeds(part, ["r_star"], ENERGY_EFFECTIVE_RANK)
    if len(reff) < 2:
        raise NotRun("fewer than two r* in the grid")
    (lo, r_lo), (hi, r_hi) = (reff.index[0], reff.iloc[0]), (reff.index[-1], reff.iloc[-1])
    over, compressed = bool(r_lo > lo + tol), bool(r_hi < hi - tol)
    return over and compressed, (f"S={s}: R̃_eff {fmt(float(r_lo))} at r*={int(lo)} "
                                 f"(over-estimates: {over}), {fmt(float(r_hi))} at r*={int(hi)} "
                                 f"(compressed: {compressed})"), \
        f"{fmt(float(r_lo))}/{fmt(float(r_hi))}" + ("*" if over and compressed else "")


def _bias_grid(df: pd.DataFrame, tol: float) -> str:
    """EB-13b at every (estimator, β, S) of one predict table's softmax rows (reported)."""
    parts = []
    for est in (E1, E2, E2_DEBIASED):
        rows = df[(df["teacher"] == SOFTMAX) & (df["estimator"] == est)]
        if rows.empty:
            parts.append(f"{est}: not computed")
            continue
        by_beta = []
        for b, part in sorted(rows.groupby("beta")):
            cells = [f"S={int(s_)} " + _reported(lambda s_=s_, part=part: _energy_bias(
                part, tol, s_)[2]) for s_ in sorted(part["S"].unique())]
            by_beta.append(f"β={b:g}: " + ", ".join(cells))
        parts.append(f"{est}: " + "; ".join(by_beta))
    return " | ".join(parts)


@claim("EB-13b", "A", ('entropic_predict', 'entropic_predict_d32'),
       "Predictability, softmax teacher (E1 at the largest S; paper: the energy rank "
       "over-estimates small r* and compresses large r*): median R̃_eff > r* + {rank_tolerance:g} "
       "at the smallest r* and < r* − {rank_tolerance:g} at the largest; verdict at β = "
       "{headline_beta:g}, every β of the grid reported; E1, E2 and the debiased E2 at every S and "
       "β, at d = 16 and d = 32, reported")
def eb13b(tables: Tables, p: dict[str, Any], v: Values) -> Outcome:
    tol, beta = float(v["rank_tolerance"]), float(v["headline_beta"])
    table = need(tables, "entropic_predict")
    d32, _ = _d32_grid(tables, p)
    df = table[(table["teacher"] == SOFTMAX) & (table["estimator"] == E1)]
    by_beta = {float(b): _energy_bias(part, tol)[:2] for b, part in sorted(df.groupby("beta"))}
    head = [b for b in by_beta if np.isclose(b, beta)]
    if not head:
        raise NotRun(f"no E1 estimate for a softmax teacher at the headline β = {beta:g}")
    appears = [f"{b:g}" for b, (ok, _) in by_beta.items() if ok]
    measured = "; ".join(f"β={b:g}: {text}" for b, (_, text) in by_beta.items())
    note = ("the effect (both conditions) appears at β = " + ", ".join(appears) if appears
            else "the effect appears at no β of the grid: R̃_eff is within the tolerance at one "
            "end or both")
    d_32 = int(d32["d"].iloc[0]) if "d" in d32.columns and len(d32) else "?"
    note += (". Reported, every estimator, β and S (median R̃_eff at the smallest / largest r*; "
             f"* = both conditions): d = {int(p['entropic']['d'])}: {_bias_grid(table, tol)}; "
             f"d = {d_32}: {_bias_grid(d32, tol)}")
    sweep = sweep_text({f"β={b:g}": ok for b, (ok, _) in by_beta.items()}, f"β={head[0]:g}")
    return by_beta[head[0]][0], measured, (f"R̃_eff > r* + {tol:g} at the smallest r*, < r* − "
                                           f"{tol:g} at the largest"), note, sweep


def _eb14_statement(v: Values) -> str:
    return ("Realized mixer, its energy rank R̃_eff averaged over inputs (paper: informative for "
            "large r* but saturates for linear teachers): over the top interval of the r* grid (its "
            "two largest r*) the softmax teacher's R̃_eff (β = "
            f"{v['headline_beta']:g}) grows per unit r* by more than the linear teacher's, and the "
            "linear teacher's saturates: its growth per unit r* over the top interval is below "
            f"{v['saturation_ratio']:g} times its growth over the bottom interval (the two smallest "
            "r*); medians over seeds, every β reported, the earlier numerical-rank rule beside it")


def _growth(reff: pd.Series) -> tuple[float, float]:
    """Growth per unit r* of medians by r* over the bottom (the first two r*) and the top (the
    last two r*) interval."""
    r, y = reff.index.to_numpy(float), reff.to_numpy(float)
    return float((y[1] - y[0]) / (r[1] - r[0])), float((y[-1] - y[-2]) / (r[-1] - r[-2]))


def _mixer_level(soft: pd.DataFrame, tau: float, div: float,
                 band: tuple[float, float]) -> tuple[dict[str, bool], pd.Series]:
    """The earlier EB-14 rule's three conditions on the softmax mixer's numerical rank at ``tau``
    (rises, levels off, level in ``band``) and the medians by r*."""
    num = median_over_seeds(soft, ["r_star"], numerical_rank(tau))
    r, level = num.index.to_numpy(float), num.to_numpy()
    return {"rises": bool(np.all(np.diff(level) >= 0) and level[-1] > level[0]),
            "levels": bool(level[-1] - level[-2] < (r[-1] - r[-2]) / div),
            "band": bool(band[0] <= level[-1] <= band[1])}, num


def _eb14_earlier(soft: pd.DataFrame, lin: pd.DataFrame, p: dict[str, Any], v: Values) -> str:
    """The rule EB-14 was registered with first (numerical and entropy ranks of the
    mixer; the band from the paper's data-only statement), reported only."""
    tau, div = float(v["saturation_tau"]), float(v["growth_divisor"])
    band = tuple(float(b) for b in v["level_band"])
    ent = median_over_seeds(soft, ["r_star"], ENTROPY_EFFECTIVE_RANK)
    lin_ent = median_over_seeds(lin, ["r_star"], ENTROPY_EFFECTIVE_RANK)
    over = bool(ent.iloc[0] > ent.index[0])
    lin_below = bool(lin_ent.iloc[-1] < lin_ent.index[-1])
    cond, num = _mixer_level(soft, tau, div, band)
    at = {t: all(_mixer_level(soft, t, div, band)[0].values()) and over and lin_below
          for t in _taus(p, tau)}
    return (f"earlier rule (numerical rank, registered first): "
            f"{PASS if at[tau] else FAIL} (softmax numerical rank (τ={tau:g}) by r*: "
            + ", ".join(f"{int(a)}:{fmt(float(b))}" for a, b in num.items())
            + f"; rises: {cond['rises']}; levels off (last growth < Δr*/{div:g}): "
            f"{cond['levels']}; level in [{band[0]:g}, {band[1]:g}]: {cond['band']}; softmax "
            f"entropy rank {fmt(float(ent.iloc[0]))} at r*={int(ent.index[0])} over-estimates it: "
            f"{over}; linear entropy rank {fmt(float(lin_ent.iloc[-1]))} below r*="
            f"{int(lin_ent.index[-1])}: {lin_below}; at every τ: "
            + sweep_text({f"τ={t:g}": ok for t, ok in at.items()}, f"τ={tau:g}") + ")")


@claim("EB-14", "A", ('entropic_predict',),
       _eb14_statement)
def eb14(tables: Tables, p: dict[str, Any], v: Values) -> Outcome:
    ratio, beta = float(v["saturation_ratio"]), float(v["headline_beta"])
    df = need(tables, "entropic_predict")
    soft_all = df[(df["estimator"] == MIXER) & (df["teacher"] == SOFTMAX)]
    lin = _predict(tables, LINEAR, MIXER, v)
    lin_r = median_over_seeds(lin, ["r_star"], ENERGY_EFFECTIVE_RANK)
    if len(lin_r) < 3:
        raise NotRun("fewer than three r* in the grid")
    lin_lo, lin_hi = _growth(lin_r)
    saturates = bool(lin_hi < ratio * lin_lo)
    r = lin_r.index.to_numpy()
    by_beta: dict[float, tuple[bool, pd.Series, float]] = {}
    for b, part in sorted(soft_all.groupby("beta")):
        reff = median_over_seeds(part, ["r_star"], ENERGY_EFFECTIVE_RANK)
        if list(reff.index) != list(lin_r.index):
            raise NotRun(f"the softmax (β = {b:g}) and linear mixers have different r* grids")
        top = _growth(reff)[1]
        by_beta[float(b)] = (bool(top > lin_hi) and saturates, reff, top)
    head = [b for b in by_beta if np.isclose(b, beta)]
    if not head:
        raise NotRun(f"no realized mixer for a softmax teacher at the headline β = {beta:g}")
    ok, soft_r, soft_hi = by_beta[head[0]]
    top_txt, bottom_txt = f"r* {int(r[-2])}→{int(r[-1])}", f"r* {int(r[0])}→{int(r[1])}"
    measured = ("mixer R̃_eff (medians over seeds) by r*: linear "
                + ", ".join(f"{int(a)}:{fmt(float(x))}" for a, x in lin_r.items())
                + f"; softmax β={head[0]:g} "
                + ", ".join(f"{int(a)}:{fmt(float(x))}" for a, x in soft_r.items())
                + f"; growth per unit r* over the top interval ({top_txt}): softmax "
                f"{fmt(soft_hi)}, linear {fmt(lin_hi)}; linear over the bottom interval "
                f"({bottom_txt}): {fmt(lin_lo)} (top / bottom "
                f"{fmt(lin_hi / lin_lo) if lin_lo else 'n/a'} vs {ratio:g})")
    note = (f"softmax grows faster over the top interval: {bool(soft_hi > lin_hi)}; linear "
            f"saturates: {saturates}. Every β, softmax growth per unit r* over the top interval: "
            + ", ".join(f"β={b:g}: {fmt(t)} ({PASS if good else FAIL})"
                        for b, (good, _, t) in by_beta.items())
            + ". Mixer = per-input N×N mixer, estimators averaged over inputs. "
            + _eb14_earlier(soft_all[np.isclose(soft_all["beta"], head[0])], lin, p, v))
    sweep = sweep_text({f"β={b:g}": good for b, (good, _, _) in by_beta.items()}, f"β={head[0]:g}")
    return ok, measured, (f"softmax top-interval growth > linear's; linear top < {ratio:g} × "
                          "bottom"), note, sweep


OPEN3_CAVEAT = "open question, not a paper claim"  # the verdict's paper column of OPEN-3


class Standing(NamedTuple):
    """A reading at one d (OPEN-3): whether it holds, the S it needs (the largest S_min), the
    cells where it does not hold, and the sum of its uncensored S_min (ties of the closest)."""

    holds: bool
    need: float
    fails: list[str]
    total: float


def open3_standing(smin: pd.DataFrame, spectra: list[str], d: int, kind: str = SOFTMAX
                   ) -> dict[str, Standing]:
    """At ``d``, per reading (``label``) of the S_min table, its ``Standing``. The cells are the
    (β, spectrum) of the ``kind`` teacher that some reading is judged on at ``d``; a reading holds
    when each has an uncensored S_min for it and every spectrum of ``spectra`` has at least one
    such cell."""
    part = smin[(smin["d"] == d) & (smin["teacher"] == kind)]
    cells = sorted({(float(b), str(s)) for b, s in zip(part["beta"], part["spectrum"], strict=True)})
    covered = {s for _, s in cells}
    out: dict[str, Standing] = {}
    for label, g in part.groupby("label", sort=True):
        rows = {(float(r.beta), str(r.spectrum)): r for r in g.itertuples()}
        fails = [f"{s} β={b:g}: " + ("censored" if (b, s) in rows else "not computed")
                 for b, s in cells if (b, s) not in rows or rows[(b, s)].status != "S_min"]
        fails += [f"{s}: no cell with a target" for s in spectra if s not in covered]
        found = [float(r.S_min) for r in rows.values() if r.status == "S_min"]
        out[str(label)] = Standing(not fails, max(found, default=np.nan), fails, float(sum(found)))
    return out


def _open3_sentence(at: dict[int, dict[str, Standing]], d16: int, d32: int | None, tol: float,
                    spectra: list[str]) -> str:
    """The generated sentence of OPEN-3 (docs/methods.md §5)."""
    head = f"within ±{tol:g} of r_attn at every softmax β and both spectra ({' and '.join(spectra)})"
    hold16 = {k: v for k, v in at[d16].items() if v.holds}
    there = at.get(d32, {}) if d32 is not None else {}
    named = sorted((k for k in hold16 if k in there and there[k].holds),
                   key=lambda k: (hold16[k].need, there[k].need, k))
    if named:
        return ("; ".join(f"{k} stays {head}, from S = {int(hold16[k].need)} at d = {d16} and "
                          f"S = {int(there[k].need)} at d = {d32}" for k in named)
                + f" (r_attn at d = {d32} assumed from d = {d16})")
    if hold16:
        where = (lambda k: ", ".join(there[k].fails) if k in there else "no rows") if there \
            else (lambda k: "no second grid")
        return "; ".join(f"{k} stays {head} at d = {d16} from S = {int(hold16[k].need)}, but not "
                         f"at d = {d32} ({where(k)})" for k in sorted(hold16, key=lambda k: (
                             hold16[k].need, k)))
    best = min(at[d16], key=lambda k: (len(at[d16][k].fails), at[d16][k].total, k))
    return (f"no data-only reading stays {head} at d = {d16}; closest: {best} (does not hold at "
            + ", ".join(at[d16][best].fails) + ")")


@claim("OPEN-3", "A", ('entropic_open3', 'entropic_open3_rattn'),
       "A pre-training estimator robust to softmax: which data-only reading (E1, E2, the debiased "
       "E2, the realized mixer, the candidate E2_centred; every rank estimator, and the "
       "candidate's floor rank) stays within ±{rank_tolerance:g} of the attention-native rank "
       "r_attn (the smallest student rank at the noise floor {noise_floor:g} on ⌈{seed_quorum:g}·n⌉ "
       "seeds) at every softmax β and under both spectra, and from which S at the d of each "
       "predictability grid? "
       "Measured: S_min per reading", caveat=OPEN3_CAVEAT, measured=True)
def open3(tables: Tables, p: dict[str, Any], v: Values) -> Outcome:
    smin = need(tables, "entropic_open3")
    rattn = need(tables, "entropic_open3_rattn")
    tol = float(v["rank_tolerance"])
    own = str(p["entropic"]["spectrum"])
    # the sweeps' spectra (the grid's open3.spectra; without it, those of the table)
    grid = p.get("entropic_grid", {}).get("open3", {})
    spectra = [own] + [str(s) for s in grid.get("spectra", sorted(set(smin["spectrum"]) - {own}))]
    d16 = int(p["entropic"]["d"])
    if smin.empty or smin[(smin["d"] == d16) & (smin["teacher"] == SOFTMAX)].empty:
        raise NotRun(f"entropic_open3 has no softmax cell at d = {d16}")
    others = sorted(int(d) for d in smin["d"].unique() if int(d) != d16)
    d32 = others[-1] if others else None
    at = {d: open3_standing(smin, spectra, d) for d in [d16, *others]}
    sentence = _open3_sentence(at, d16, d32, tol, spectra)
    measured = []
    for d, standing in at.items():
        held = [f"{k}: S = {int(st.need)}" for k, st in sorted(standing.items(),
                                                              key=lambda kv: (kv[1].need, kv[0]))
                if st.holds]
        measured.append(f"d = {d}: " + ("; ".join(held) if held else "no reading holds"))
    lin = {d: open3_standing(smin, spectra, d, LINEAR) for d in at}
    named = [k for k, st in at[d16].items() if st.holds]
    lin_text = ", ".join(f"{k}: " + "/".join(
        f"d = {d} {'holds' if k in lin[d] and lin[d][k].holds else 'does not hold'}" for d in lin)
        for k in named)
    by_cell = []
    for spec in spectra[1:]:
        part = rattn[(rattn["d"] == d16) & (rattn["spectrum"] == spec)
                     & (rattn["source"].isin(["measured", "censored"]))]
        for (kind, b), g in part.groupby(["teacher", "beta"], sort=True):
            who = LINEAR if kind == LINEAR else f"softmax β={float(b):g}"
            by_cell.append(f"{spec} {who}: " + ", ".join(
                f"r*={int(r.r_star)}→" + (fmt(float(r.r_attn)) if np.isfinite(r.r_attn)
                                          else "censored")
                for r in g.sort_values("r_star").itertuples()))
    counts = rattn["source"].value_counts()
    note = (f"{sentence}. Linear teacher (reported, not in the condition): "
            + (lin_text or "no reading holds for softmax at d = 16")
            + f". r_attn measured at d = {d16}: " + ("; ".join(by_cell) or "none")
            + ". Targets by source: " + ", ".join(f"{k}: {int(n)}" for k, n in counts.items())
            + "; per-cell errors in entropic_open3_errors")
    threshold = (f"measured: a reading holds at d when every softmax (β, spectrum) cell with a "
                 f"target has an uncensored S_min (abs(error) ≤ {tol:g} on ⌈"
                 f"{float(v['seed_quorum']):g}·n⌉ seeds at that S and every larger S of the grid, "
                 "for every r*); no pass/fail")
    return None, "; ".join(measured), threshold, note
