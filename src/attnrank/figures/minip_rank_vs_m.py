"""B2: smallest r reaching the target accuracy against m (log r), with the 2^m line."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from attnrank.figures.style import PALETTE, seed_points_and_median


def smallest_rank(df: pd.DataFrame, target: float) -> pd.DataFrame:
    """Per m: the smallest kernel rank whose median (over seeds) sequence accuracy ≥ target
    (NaN when none does)."""
    med = (df[df["model"] == "kernel"].groupby(["m", "rank"], as_index=False)
           ["test_sequence_accuracy"].median())
    rows = []
    for m, part in med.groupby("m"):
        ok = part[part["test_sequence_accuracy"] >= target]
        rows.append({"m": m, "smallest_rank": ok["rank"].min() if len(ok) else np.nan,
                     "largest_rank_tried": part["rank"].max()})
    return pd.DataFrame(rows)


def plot(tables: dict[str, pd.DataFrame], params: dict[str, Any]) -> plt.Figure:
    df, cons = tables["minip_rank_vs_m"], tables["minip_constructions"]
    target = float(params["target_accuracy"])
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(9, 3.6))
    for i, (m, part) in enumerate(sorted(df[df["model"] == "kernel"].groupby("m"))):
        color = PALETTE[i % len(PALETTE)]
        seed_points_and_median(ax0, part, "rank", "test_sequence_accuracy", color, f"m = {m}")
        dense = df[(df["model"] == "dense") & (df["m"] == m)]["test_sequence_accuracy"]
        ax0.axhline(dense.median(), color=color, ls="--", lw=1, alpha=0.8)
    ax0.axhline(target, color="grey", ls=":", lw=1)
    ax0.set_xscale("log", base=2)
    ax0.set_xlabel("feature rank r")
    ax0.set_ylabel("sequence accuracy (N = 3)")
    ax0.set_title("accuracy vs r (dashed: dense)")
    ax0.legend(fontsize=8, loc="lower right")

    sr = smallest_rank(df, target)
    ms = np.array(sorted(df["m"].unique()))
    ax1.plot(ms, 2.0**ms, color="black", ls="--", lw=1, label="$2^m$ (exact construction)")
    found = sr.dropna(subset=["smallest_rank"])
    ax1.plot(found["m"], found["smallest_rank"], "o-", color=PALETTE[0],
             label=f"smallest trained r with accuracy ≥ {target:g}")
    missing = sr[sr["smallest_rank"].isna()]
    if len(missing):
        ax1.scatter(missing["m"], missing["largest_rank_tried"], marker="^", color=PALETTE[3],
                    label="not reached (largest r tried)")
    exp = cons[(cons["construction"] == "exp_features") & (cons["eval_set"] == "all_triples")]
    exact = exp[exp["worst_case_error"] < 0.5]
    ax1.scatter(exact["m"], exact["rank"], marker="*", s=80, color="black", zorder=5,
                label="construction exact (all triples)")
    ax1.set_yscale("log", base=2)
    ax1.set_xlabel("token width m")
    ax1.set_ylabel("feature rank r")
    ax1.set_title("rank needed vs m")
    ax1.legend(fontsize=7, loc="upper left")
    return fig
