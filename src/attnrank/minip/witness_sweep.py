"""The witness-families sweep read off its table: each family's measured transition, its proven
bound r_lb = min(K, w), and whether the transitions follow K or r_lb.

Pure functions of DataFrames (pandas and numpy only), shared by the table step (its summary), the
TT-4 claim and the figure, so the three cannot disagree. The table (``minip_witness_families``)
holds one row per (family, rank, seed): ``blocks`` (K), ``width`` (w), ``rank``, ``seed`` and the
final held-out ``test_worst_case_error`` max |ŷ − t| over the whole suite.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from attnrank.core.columns import TEST_WORST_CASE_ERROR
from attnrank.minip.quantities import witness_lower_bound

FAMILY = ["blocks", "width"]
PREDICTORS = {"K": "blocks", "min(K, w)": "r_lb"}  # what a transition may follow → summary column


def exact_runs(df: pd.DataFrame, cutoff: float) -> pd.Series:
    """Per row: exact in the theorem's sense, worst-case error < ``cutoff`` on every input."""
    return df[TEST_WORST_CASE_ERROR] < cutoff


def transition(df: pd.DataFrame, cutoff: float) -> float:
    """The smallest rank of the grid that is exact on every seed; inf when none is.

    ``df``: one family, one row per (rank, seed). A single seed that is not exact at a rank
    disqualifies that rank (the transition moves up to the next rank exact on all of them)."""
    every = exact_runs(df, cutoff).groupby(df["rank"]).all()
    ranks = every[every].index
    return float(ranks.min()) if len(ranks) else math.inf


def seed_transitions(df: pd.DataFrame, cutoff: float) -> pd.Series:
    """Per seed: the smallest rank exact on that seed (inf when none), indexed by seed."""
    exact = df[exact_runs(df, cutoff)]
    out = exact.groupby("seed")["rank"].min().astype(float)
    return out.reindex(sorted(df["seed"].unique()), fill_value=math.inf)


def rank_below(ranks: pd.Series | np.ndarray, at: float) -> float:
    """The largest rank of the grid below ``at`` (the transition): where the suite still fails;
    NaN when ``at`` is the smallest rank. With no transition (inf) it is the largest rank."""
    below = [float(r) for r in np.unique(np.asarray(ranks)) if r < at]
    return max(below) if below else math.nan


def family_summary(df: pd.DataFrame, cutoff: float) -> pd.DataFrame:
    """One row per family (sorted by K, w): K, w, m, r_lb, the transition (inf: none in the grid),
    the per-seed transitions' range, the largest rank and how many seeds it solves, whether
    every rank from the transition up is exact on every seed (``monotone``), and the rank just
    below the transition (the diagnostic's rank)."""
    rows = []
    for (k, w), part in df.groupby(FAMILY, sort=True):
        t = transition(part, cutoff)
        per_seed = seed_transitions(part, cutoff)
        top = part["rank"].max()
        every = exact_runs(part, cutoff).groupby(part["rank"]).all()
        rows.append({
            "blocks": int(k), "width": int(w), "m": int(k * w),
            "r_lb": witness_lower_bound(k, w), "transition": t,
            "seed_transition_min": float(per_seed.min()),
            "seed_transition_max": float(per_seed.max()),
            "seeds": int(part["seed"].nunique()), "top_rank": int(top),
            "seeds_exact_at_top": int(exact_runs(part[part["rank"] == top], cutoff).sum()),
            "monotone": bool(math.isfinite(t) and every[every.index >= t].all()),
            "rank_below": rank_below(part["rank"], t),
        })
    return pd.DataFrame(rows)


def smallest_grid_rank_at_least(ranks: np.ndarray, value: float) -> float:
    """What a coarse rank grid can show of a true threshold ``value``: the smallest grid rank
    ≥ it (inf when the grid stops below it)."""
    above = [float(r) for r in np.unique(ranks) if r >= value]
    return min(above) if above else math.inf


def tracking(summary: pd.DataFrame, ranks: np.ndarray) -> dict[str, dict[str, float]]:
    """How well each predictor (K and r_lb = min(K, w)) accounts for the transitions.

    Per predictor: ``rank_corr`` = Spearman correlation over families of transition and predictor
    (ranks with ties averaged; a family without transition ranks above every other; NaN when
    either side is constant); ``matches`` = families whose transition equals the smallest grid
    rank ≥ the predictor (what the grid would show were the predictor the exact threshold);
    ``at_least`` = families whose transition is ≥ the predictor (a lower bound the data respect);
    ``seed_at_least`` = families where no seed is exact at any rank below the predictor;
    ``ratio_min``, ``ratio_max``: transition / predictor over the families with a transition; and
    ``families``."""
    t = summary["transition"].replace(math.inf, np.nan)
    t_rank = t.rank().fillna(len(t) + 1)  # no transition in the grid: above every other family
    out = {}
    for name, col in PREDICTORS.items():
        pred = summary[col].astype(float)
        shown = pred.map(lambda v: smallest_grid_rank_at_least(ranks, v))
        p_rank = pred.rank()
        corr = (math.nan if t_rank.nunique() < 2 or p_rank.nunique() < 2
                else float(np.corrcoef(t_rank, p_rank)[0, 1]))
        ratio = (t / pred).dropna()
        out[name] = {"rank_corr": corr, "matches": int((shown == summary["transition"]).sum()),
                     "at_least": int((summary["transition"] >= pred).sum()),
                     "seed_at_least": int((summary["seed_transition_min"] >= pred).sum()),
                     "ratio_min": float(ratio.min()) if len(ratio) else math.nan,
                     "ratio_max": float(ratio.max()) if len(ratio) else math.nan,
                     "families": len(summary)}
    return out


def tracking_text(summary: pd.DataFrame, ranks: np.ndarray) -> str:
    """The transitions against K and r_lb in words, and which of the two they track better: the
    higher rank correlation, then more families matched; "neither" on a tie."""
    tr = tracking(summary, ranks)
    parts = [f"against {name}: rank correlation {v['rank_corr']:.2f}, transition / {name} "
             f"{v['ratio_min']:.3g}–{v['ratio_max']:.3g}, transition ≥ {name} in "
             f"{v['at_least']}/{v['families']} families, at the smallest grid rank ≥ {name} in "
             f"{v['matches']}/{v['families']}, no seed exact below {name} in "
             f"{v['seed_at_least']}/{v['families']}" for name, v in tr.items()]
    key = {name: (-math.inf if math.isnan(v["rank_corr"]) else v["rank_corr"], v["matches"])
           for name, v in tr.items()}
    best = sorted(key, key=key.get, reverse=True)
    verdict = ("neither K nor min(K, w) better" if key[best[0]] == key[best[1]]
               else f"the transitions track {best[0]} better than {best[1]}")
    return "; ".join(parts) + f": {verdict}"
