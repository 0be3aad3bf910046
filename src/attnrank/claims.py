"""Every paper claim as a check over the result tables: a verdict of pass, fail or not run.

A failed claim is a scientific result, not a crash. Each check is a pure function
``check(tables, params) -> Verdict`` registered with ``@claim``; ``tables`` maps a table's file
stem (e.g. "minip_witness") to its DataFrame. A check whose tables or grid points are missing
returns "not run" with the reason.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

PASS, FAIL, NOT_RUN = "pass", "fail", "not run"


@dataclass
class Verdict:
    id: str
    paper: str
    statement: str
    measured: str
    threshold: str
    verdict: str
    note: str = ""


class NotRun(Exception):
    """Raised by a check when its inputs are not in this run (e.g. the smoke grid)."""


Check = Callable[[dict[str, pd.DataFrame], dict[str, Any]], tuple[bool, str, str, str]]
REGISTRY: list[tuple[str, str, str, Check]] = []


def claim(cid: str, paper: str, statement: str) -> Callable[[Check], Check]:
    """Register a check returning (passed, measured, threshold, note)."""

    def deco(fn: Check) -> Check:
        REGISTRY.append((cid, paper, statement, fn))
        return fn

    return deco


def need(tables: dict[str, pd.DataFrame], name: str) -> pd.DataFrame:
    if name not in tables:
        raise NotRun(f"table {name} is not in this run")
    return tables[name]


def _fmt(x: float) -> str:
    return "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.4g}"


# ---------------------------------------------------------------------------------------------
# Paper B (Opazo): TT-1 … TT-6


def _kernel(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["model"] == "kernel"]


@claim("TT-1", "B", "N = 1 and N = 2 are solved exactly (sequence accuracy ≥ 0.999) by rank-1 "
       "kernel attention, trained, on all seeds; and by the hand-built rank-1 construction")
def tt1(tables: dict[str, pd.DataFrame], p: dict[str, Any]) -> tuple[bool, str, str, str]:
    df, cons = need(tables, "minip_length_sweep"), need(tables, "minip_constructions")
    exact = float(p["minip"]["exact_accuracy"])
    ok, parts = True, []
    for n in (1, 2):
        trained = _kernel(df)[(df["n_tokens"] == n) & (df["rank"] == 1)]
        built = cons[(cons["construction"] == "rank1") & (cons["n_tokens"] == n)
                     & (cons["eval_set"] == "random")]
        if trained.empty or built.empty:
            raise NotRun(f"rank 1 at N = {n} was not run")
        lo, b = trained["test_sequence_accuracy"].min(), built["sequence_accuracy"].min()
        ok &= bool(lo >= exact and b >= exact)
        parts.append(f"N={n}: trained min {_fmt(lo)} over {len(trained)} seeds, "
                     f"construction {_fmt(b)}")
    return ok, "; ".join(parts), f"≥ {exact}", ""


@claim("TT-2", "B", "At N = 3, rank-1 accuracy is clearly below 1 (≤ 0.9) and accuracy rises "
       "with r")
def tt2(tables: dict[str, pd.DataFrame], p: dict[str, Any]) -> tuple[bool, str, str, str]:
    df = _kernel(need(tables, "minip_length_sweep"))
    df = df[df["n_tokens"] == 3]
    if df.empty or 1 not in set(df["rank"]) or df["rank"].nunique() < 2:
        raise NotRun("N = 3 with rank 1 and at least one larger rank was not run")
    med = df.groupby("rank")["test_sequence_accuracy"].median().sort_index()
    r1_max = df[df["rank"] == 1]["test_sequence_accuracy"].max()
    steps = np.diff(med.to_numpy())
    rises = bool(med.iloc[-1] > med.iloc[0] and np.all(steps >= -0.01))
    ok = bool(r1_max <= 0.9 and rises)
    measured = (f"rank-1 max accuracy {_fmt(r1_max)}; median accuracy by r: "
                + ", ".join(f"{r}:{_fmt(v)}" for r, v in med.items()))
    return ok, measured, "rank-1 ≤ 0.9; medians non-decreasing (−0.01 slack), last > first", ""


@claim("TT-3", "B", "Dense softmax is exact on N = 3 (sequence accuracy ≥ 0.999) for every m and "
       "seed in the grid")
def tt3(tables: dict[str, pd.DataFrame], p: dict[str, Any]) -> tuple[bool, str, str, str]:
    df = need(tables, "minip_rank_vs_m")
    dense = df[(df["model"] == "dense") & (df["n_tokens"] == 3)]
    if dense.empty:
        raise NotRun("no dense model at N = 3")
    exact = float(p["minip"]["exact_accuracy"])
    worst = dense.groupby("m")["test_sequence_accuracy"].min()
    ok = bool((worst >= exact).all())
    measured = "min over seeds by m: " + ", ".join(f"m={m}:{_fmt(v)}" for m, v in worst.items())
    note = "" if ok else "dense below exact at some m: see the caution on dense steps in SPEC"
    return ok, measured, f"≥ {exact}", note


@claim("TT-4", "B", "Witness suite: every r < 8 has worst-case error > 1/2 on every seed, and "
       "r = 32 reaches sequence error 0 on every seed, for both feature maps")
def tt4(tables: dict[str, pd.DataFrame], p: dict[str, Any]) -> tuple[bool, str, str, str]:
    df = _kernel(need(tables, "minip_witness"))
    wc = p["minip"]["witness_claim"]
    below, solve = int(wc["fails_below"]), int(wc["solves_at"])
    ranks = set(df["rank"])
    if solve not in ranks or not any(r < below for r in ranks):
        raise NotRun(f"the witness grid lacks r = {solve} or any r < {below}")
    grid = p["minip_grid"]["witness"]
    r_lb = min(int(grid["blocks"]), int(grid["width"]))
    ok, parts, readings = True, [], []
    for fm, part in sorted(df.groupby("feature_map")):
        low = part[part["rank"] < below]
        top = part[part["rank"] == solve]
        fails = bool((low["test_worst_case_error"] > 0.5).all())
        solved = bool((top["test_sequence_accuracy"] >= 1.0).all())
        ok &= fails and solved
        per_rank = part.groupby("rank")["test_sequence_accuracy"].min()
        exact_ranks = per_rank[per_rank >= 1.0].index
        transition = int(exact_ranks.min()) if len(exact_ranks) else None
        parts.append(f"{fm}: r<{below} min worst-case {_fmt(low['test_worst_case_error'].min())}"
                     f" (fail on all seeds: {fails}); r={solve} exact on all seeds: {solved}; "
                     f"smallest r exact on all seeds: {transition}")
        seq_err = 1 - low["test_sequence_accuracy"]
        readings.append(f"{fm}: r<{below} median sequence error {_fmt(seq_err.median())}, "
                        f"median worst-case error {_fmt(low['test_worst_case_error'].median())}")
    note = (f"proven r_lb = min(K, w) = {r_lb} for this family; paper's 'error > 0.80' read as "
            "sequence error or as worst-case error: " + "; ".join(readings))
    return ok, "; ".join(parts), f"worst-case > 0.5 for r < {below}; sequence error 0 at r = " \
        f"{solve}", note


def crossing_rank(df: pd.DataFrame, target: float, by: str) -> pd.Series:
    """Per group: the smallest r whose median kernel sequence accuracy ≥ target (inf if none)."""
    med = _kernel(df).groupby([by, "rank"])["test_sequence_accuracy"].median().reset_index()
    out = {}
    for key, part in med.groupby(by):
        ok = part[part["test_sequence_accuracy"] >= target]["rank"]
        out[key] = float(ok.min()) if len(ok) else math.inf
    return pd.Series(out).sort_index()


@claim("TT-5", "B", "OOD pools: the rank at which exact-sequence accuracy crosses 0.9 moves up as "
       "the scale grows, and dense is exact on every seed")
def tt5(tables: dict[str, pd.DataFrame], p: dict[str, Any]) -> tuple[bool, str, str, str]:
    df = need(tables, "minip_ood")
    target = float(p["minip"]["target_accuracy"])
    exact = float(p["minip"]["exact_accuracy"])
    order = df.groupby("instance")["m"].first().sort_values().index.tolist()
    if len(order) < 2:
        raise NotRun("fewer than two OOD scales")
    cross = crossing_rank(df, target, "instance").reindex(order)
    values = cross.to_numpy()
    moves_up = bool(np.all(np.diff(values) >= 0) and values[-1] > values[0])
    dense = df[df["model"] == "dense"]
    dense_min = dense.groupby("instance")["test_sequence_accuracy"].min().reindex(order)
    dense_ok = bool((dense_min >= exact).all())
    measured = ("crossing r by scale: " + ", ".join(f"{k}:{_fmt(v)}" for k, v in cross.items())
                + "; dense min accuracy: "
                + ", ".join(f"{k}:{_fmt(v)}" for k, v in dense_min.items()))
    return moves_up and dense_ok, measured, \
        f"crossing of {target} non-decreasing and rising; dense ≥ {exact}", \
        "inf = no rank in the grid crossed"


@claim("TT-6", "B", "The smallest r reaching a fixed accuracy grows at least exponentially in m "
       "(positive slope of log r on m), and the 2^m construction is exact where it is built")
def tt6(tables: dict[str, pd.DataFrame], p: dict[str, Any]) -> tuple[bool, str, str, str]:
    df, cons = need(tables, "minip_rank_vs_m"), need(tables, "minip_constructions")
    target = float(p["minip"]["target_accuracy"])
    cross = crossing_rank(df, target, "m")
    finite = cross[np.isfinite(cross.to_numpy())]
    exp = cons[(cons["construction"] == "exp_features") & (cons["eval_set"] == "all_triples")]
    built_ok = bool(len(exp) and (exp[exp["beta"] >= 2]["worst_case_error"] < 0.5).all())
    if len(finite) < 2:
        slope = math.nan
        ok = False
        note = ("fewer than two m reached the target in the grid; a growth that outruns the rank "
                "grid is consistent with the claim but not a measurement of it")
    else:
        slope = float(np.polyfit(finite.index.to_numpy(float), np.log2(finite.to_numpy()), 1)[0])
        ok = slope > 0
        unreached = [int(m) for m in cross.index if not np.isfinite(cross[m])]
        note = f"m never reaching the target (excluded from the fit): {unreached}" if unreached \
            else ""
    measured = ("smallest r by m: " + ", ".join(f"{int(m)}:{_fmt(v)}" for m, v in cross.items())
                + f"; slope of log2 r on m {_fmt(slope)}; construction exact at "
                + ", ".join(f"m={int(r.m)},β={r.beta:g}: worst {_fmt(r.worst_case_error)}"
                            for r in exp.itertuples()))
    return ok and built_ok, measured, "slope > 0; construction worst-case < 0.5 for β ≥ 2", note


@claim("TT-gap", "B (SPEC caution)", "Random tokens, N = 3: trained kernel heads that are not exact at "
       "large r fall short by optimization, not capacity: at r = V (number of tokens) an exact head "
       "exists and stays exact under the training recipe, yet training from scratch at that r is "
       "not exact")
def tt_gap(tables: dict[str, pd.DataFrame], p: dict[str, Any]) -> tuple[bool, str, str, str]:
    df = need(tables, "minip_capacity")
    exact = float(p["minip"]["exact_accuracy"])
    fin = df[df["final"]]
    cons = df[df["instance"] == "construction"]
    if fin.empty or cons.empty:
        raise NotRun("the capacity probe did not run")
    start = cons[cons["step"] == 0]["test_sequence_accuracy"].min()
    kept = fin[fin["instance"] == "construction"]["test_sequence_accuracy"].min()
    acc = fin.groupby("instance")["test_sequence_accuracy"].agg(["min", "median", "max"])
    scratch = acc.loc[["scratch", "scratch_long"], "max"]
    capacity_there = bool(start >= exact and kept >= exact)
    gap = bool((scratch < exact).all())
    rank = int(df["rank"].iloc[0])
    measured = (f"r = V = {rank}, m = {int(df['m'].iloc[0])}: construction {_fmt(start)} at step 0, "
                f"{_fmt(kept)} after training (min over seeds); from scratch: "
                + ", ".join(f"{i} median {_fmt(acc.loc[i, 'median'])} (max {_fmt(acc.loc[i, 'max'])}, "
                            f"{int(fin[fin['instance'] == i]['steps_total'].iloc[0])} steps)"
                            for i in ("scratch", "scratch_long")))
    if not capacity_there:
        note = "the exact construction did not stay exact under the recipe: capacity not shown"
    elif not gap:
        note = "training from scratch at r = V is exact here: no optimization gap at this r"
    else:
        longer = acc.loc["scratch_long", "median"] - acc.loc["scratch", "median"]
        note = (f"capacity is there but gradient training does not find it; longer training changes "
                f"the median accuracy by {longer:+.4f}")
    return capacity_there and gap, measured, f"construction ≥ {exact} before and after training; " \
        f"scratch < {exact}", note


# ---------------------------------------------------------------------------------------------


def evaluate_claims(inputs: Sequence[str | Path], params: dict[str, Any]) -> pd.DataFrame:
    """Run every registered check on the tables ``inputs`` (Parquet files)."""
    from attnrank.io import read_table

    tables = {Path(p).stem: read_table(p) for p in inputs}
    rows = []
    for cid, paper, statement, fn in REGISTRY:
        try:
            passed, measured, threshold, note = fn(tables, params)
            verdict = PASS if passed else FAIL
        except NotRun as why:
            measured, threshold, note, verdict = "", "", str(why), NOT_RUN
        rows.append(asdict(Verdict(cid, paper, statement, measured, threshold, verdict, note)))
    return pd.DataFrame(rows)


def write_claims(table: pd.DataFrame, md_path: str | Path, csv_path: str | Path,
                 scale: str) -> list[Path]:
    from attnrank.io import write_table, write_text

    counts = table["verdict"].value_counts().to_dict()
    lines = [f"# Claims — scale `{scale}`", "",
             "Each paper claim checked on this run's tables. "
             + ", ".join(f"{counts.get(v, 0)} {v}" for v in (PASS, FAIL, NOT_RUN)) + ".", "",
             "| id | verdict | statement | measured | threshold | note |",
             "|---|---|---|---|---|---|"]
    for r in table.itertuples():
        cells = [r.id, f"**{r.verdict}**", r.statement, r.measured, r.threshold, r.note]
        lines.append("| " + " | ".join(str(c).replace("|", "/") for c in cells) + " |")
    write_text("\n".join(lines) + "\n", md_path)
    write_table(table, Path(csv_path))
    return [Path(md_path), Path(csv_path)]
