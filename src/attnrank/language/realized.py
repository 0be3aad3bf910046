"""OPEN-4's readings of the logit-field table: per rung, the final values of every field measure,
their association with corpus complexity and with the loss, and the realized-versus-static gap.

``language_field`` is tidy like ``language_ranks`` (``attnrank.language.points``), with a ``rung``
column: one row per (corpus, rung, seed, step, layer, head, matrix, estimator), ``matrix`` ∈
{logit_field, residual_field, mean_field, static}, ``estimator`` ∈ {k90, r_eff} and, for the mean
field, prior_share. Every point averages a measure over layers and heads (``points.trace``) per
(corpus, seed, step) of one rung. Rules: docs/methods.md, "Appendix B claims", OPEN-4.
pandas and numpy only.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from attnrank.language.correlation import Correlation, spearman
from attnrank.language.points import (
    K90,
    LOGIT_FIELD,
    MEAN_FIELD,
    PRIOR_SHARE,
    R_EFF,
    RESIDUAL_FIELD,
    STATIC,
    Measure,
    final,
    trace,
)

PRIOR = Measure(MEAN_FIELD, PRIOR_SHARE)
FIELD_MEASURES = (Measure(LOGIT_FIELD, K90), Measure(LOGIT_FIELD, R_EFF),
                  Measure(RESIDUAL_FIELD, K90), Measure(RESIDUAL_FIELD, R_EFF),
                  Measure(STATIC, K90), Measure(STATIC, R_EFF),
                  Measure(MEAN_FIELD, K90), Measure(MEAN_FIELD, R_EFF), PRIOR)
SYMBOLS = {LOGIT_FIELD: "Ẽ", RESIDUAL_FIELD: "residual Ẽ − mean", MEAN_FIELD: "mean field",
           STATIC: "W_Q W_Kᵀ"}
FOLLOWS, AGAINST, UNRESOLVED = "follows complexity", "runs against complexity", "unresolved"
BELOW, ABOVE, OVERLAP = "below", "above", "overlapping"


def name(m: Measure) -> str:
    """E.g. "k90 of Ẽ", "prior share"."""
    if m == PRIOR:
        return "prior share"
    return f"{'k90' if m.estimator == K90 else 'R̃_eff'} of {SYMBOLS.get(m.matrix, m.matrix)}"


class Shape(NamedTuple):
    """A rung's model and run: width, layers, heads, head width, context, steps, seeds a corpus,
    corpora."""

    d_model: int
    n_layers: int
    n_heads: int
    d_head: int
    context: int
    steps: int
    seeds: int
    corpora: int

    @property
    def text(self) -> str:
        layers = f"{self.n_layers} layer{'s' if self.n_layers > 1 else ''}"
        heads = f"{self.n_heads} head{'s' if self.n_heads > 1 else ''}"
        return (f"d = {self.d_model}, {layers} × {heads}, d_h = {self.d_head}, T = {self.context}, "
                f"{self.steps} steps; {self.seeds} seeds × {self.corpora} corpora")


def rungs(field: pd.DataFrame) -> list[str]:
    """The rungs of the field table, the base rung first, then by model size (d · layers · T)."""
    size = field.groupby("rung")[["d_model", "n_layers", "context"]].first()
    order = (size["d_model"] * size["n_layers"] * size["context"]).sort_values(kind="stable")
    return sorted(order.index, key=lambda r: (r != "base", list(order.index).index(r)))


def shape(field: pd.DataFrame) -> Shape:
    """The shape of one rung's rows (their model columns are constant within a rung)."""
    row = field.iloc[0]
    return Shape(int(row["d_model"]), int(row["n_layers"]), int(row["n_heads"]),
                 int(row["d_model"]) // int(row["n_heads"]), int(row["context"]), int(row["steps"]),
                 int(field.groupby("corpus")["seed"].nunique().max()), field["corpus"].nunique())


def per_corpus(points: pd.DataFrame) -> pd.Series:
    """The median ``value`` of each corpus's points (corpus → median), by corpus name."""
    return points.groupby("corpus")["value"].median().sort_index()


def gap(field: pd.DataFrame) -> tuple[str, pd.Series, pd.Series]:
    """Where the final k90 of Ẽ lies against W_Q W_Kᵀ's, corpus by corpus medians: ``BELOW`` when
    every corpus's median k90 of Ẽ is below every corpus's of W_Q W_Kᵀ (the two ranges apart, Ẽ
    lower, as in the outside reference), ``ABOVE`` when the reverse, ``OVERLAPPING`` else; with
    both per-corpus series."""
    e = per_corpus(final(field, Measure(LOGIT_FIELD, K90)))
    w = per_corpus(final(field, Measure(STATIC, K90)))
    where = BELOW if e.max() < w.min() else ABOVE if e.min() > w.max() else OVERLAP
    return where, e, w


def association(c: Correlation) -> str:
    """``FOLLOWS`` when the bootstrap interval of ρ(complexity, measure) lies above 0 (its lower
    end > 0), ``AGAINST`` when below (upper end < 0), ``UNRESOLVED`` else."""
    return FOLLOWS if c.lo > 0 else AGAINST if c.hi < 0 else UNRESOLVED


def step_rhos(field: pd.DataFrame, corpora: pd.DataFrame, measure: Measure) -> pd.Series:
    """ρ(complexity, measure) over the (corpus, seed) points of every logged step (step → ρ; NaN
    where a side is constant)."""
    pts = trace(field, measure).merge(corpora[["corpus", "complexity"]], on="corpus")
    return pts.groupby("step").apply(
        lambda g: float(spearman(g["complexity"].to_numpy(float), g["value"].to_numpy(float))),
        include_groups=False).sort_index()


def loss_rhos(field: pd.DataFrame, loss: pd.DataFrame, measure: Measure,
              column: str = "train_loss") -> np.ndarray:
    """EB-16's per-run ρ: for each (corpus, seed), ρ(measure, loss ``column``) over the steps
    logged in both tables; a constant side counts as 0. (runs,)"""
    pts = trace(field, measure).merge(loss[["corpus", "seed", "step", column]],
                                      on=["corpus", "seed", "step"]).dropna(subset=[column])
    out = [float(spearman(g["value"].to_numpy(float), g[column].to_numpy(float)))
           for _, g in pts.groupby(["corpus", "seed"])]
    return np.nan_to_num(np.asarray(out, float), nan=0.0)
