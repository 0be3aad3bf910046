"""A4: data-only rank estimates against the true r*, per estimator × teacher, one line per S
(identity dashed), and the sufficient-scale frontier of E2 over S."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from attnrank.columns import ENERGY_EFFECTIVE_RANK, ENTROPY_EFFECTIVE_RANK, numerical_rank
from attnrank.quantities import median_over_seeds, recovery_frontier

ESTIMATORS = ("E1", "E2", "E2_debiased", "mixer")
TITLES = {"E1": "E1 (V known)", "E2": "E2 (V unknown, unfolding)", "E2_debiased": "E2 debiased",
          "mixer": "realized mixer"}


def plot(tables: dict[str, pd.DataFrame], params: dict[str, Any]) -> plt.Figure:
    df = tables["entropic_predict"]
    tau, mixer_tau = float(params["headline_tau"]), float(params["saturation_tau"])
    tol = float(params["rank_tolerance"])
    num_col = numerical_rank(tau)
    teachers = sorted({(t, float(b)) for t, b in zip(df["teacher"], df["beta"], strict=True)})
    fig, axes = plt.subplots(len(teachers), len(ESTIMATORS) + 1,
                             figsize=(3.2 * (len(ESTIMATORS) + 1), 3.0 * len(teachers)), squeeze=False)
    sizes = sorted(df[df["estimator"] != "mixer"]["S"].unique())
    cmap = plt.get_cmap("viridis")
    color = {s: cmap(i / max(1, len(sizes) - 1)) for i, s in enumerate(sizes)}
    lim = float(df["r_star"].max()) + 1
    for row, (t, b) in enumerate(teachers):
        part = df[(df["teacher"] == t) & (df["beta"] == b)]
        name = "linear" if t == "linear" else f"softmax β={b:g}"
        for col, est in enumerate(ESTIMATORS):
            ax = axes[row][col]
            g = part[part["estimator"] == est]
            for s_, gs in sorted(g.groupby("S")):
                ncol = numerical_rank(mixer_tau) if est == "mixer" else num_col
                med = median_over_seeds(gs, "r_star", [ENERGY_EFFECTIVE_RANK, ncol]).reset_index()
                c = color.get(s_, "black")
                lab = f"S = {s_}" if est != "mixer" else f"{s_} inputs (x: τ = {mixer_tau:g})"
                ax.plot(med["r_star"], med[ENERGY_EFFECTIVE_RANK], marker="o", ms=3, color=c, label=lab)
                ax.plot(med["r_star"], med[ncol], marker="x", ms=4, ls=":", color=c, lw=0.8)
                if est == "mixer":
                    ent = median_over_seeds(gs, "r_star", ENTROPY_EFFECTIVE_RANK).reset_index()
                    ax.plot(ent["r_star"], ent[ENTROPY_EFFECTIVE_RANK], marker="s", ms=3, ls="--",
                            color="C3", label="entropy rank")
            ax.plot([0, lim], [0, lim], color="black", ls="--", lw=0.7)
            ax.set_title(f"{TITLES[est]} — {name}", fontsize=8)
            if row == len(teachers) - 1:
                ax.set_xlabel("true r*")
            if col == 0:
                ax.set_ylabel(f"estimate (o R̃_eff, x numerical τ={tau:g})")
            ax.legend(fontsize=6)
        ax = axes[row][-1]
        for est, c in (("E1", "C0"), ("E2", "C1"), ("E2_debiased", "C2")):
            g = part[part["estimator"] == est]
            if g.empty:
                continue
            worst = recovery_frontier(g)
            ax.plot(worst.index, np.maximum(worst.to_numpy(), 1e-4), marker="o", color=c, label=est)
        ax.axhline(tol, color="gray", ls=":", lw=1)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(f"S-frontier — {name}", fontsize=8)
        ax.set_xlabel("S (sequences)")
        ax.set_ylabel("max over r* of |R̃_eff − r*|")
        ax.legend(fontsize=6)
    return fig
