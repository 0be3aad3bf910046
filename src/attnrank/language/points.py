"""The points of appendix B (EB-15, EB-16 and their figures), from the language tables.

``language_ranks`` is tidy: one row per (corpus, seed, step, layer, head, matrix, estimator, tau)
with the rank ``value``; ``matrix`` ∈ {static, realized} (W_Q^h (W_K^h)ᵀ, or the causal attention
matrix averaged over held-out windows), ``estimator`` ∈ {r_eff, entropy, stable, numerical}, ``tau``
NaN unless numerical. A *measure* is one (matrix, estimator, tau); the headline is static R̃_eff.
Every point averages the measure over layers and heads (mean), per (corpus, seed, step).

``language_corpora`` has one row per corpus with its headline ``complexity`` (and the measure's
name, ``headline_measure``); ``language_loss`` one row per (corpus, seed, step) with
``train_loss`` and ``val_loss`` in bits per byte. ``language_field`` (OPEN-4) has the same shape
as ``language_ranks``, with the logit field's matrices and estimators (``FIELD_MATRICES``,
``K90``, ``PRIOR_SHARE``) and a ``rung`` column: select one rung before taking its points. pandas
only.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pandas as pd

KEYS = ["corpus", "seed"]

# the ranks table's matrices (``matrix``) and estimators (``estimator``): declared here, written by
# ``experiments.train``, read by the claims and figures
STATIC = "static"  # the static kernel W_Q^h (W_K^h)ᵀ
REALIZED = "realized"  # the realized mixer: causal attention averaged over held-out windows
MATRICES = (STATIC, REALIZED)
R_EFF = "r_eff"  # energy effective rank R̃_eff
ENTROPY = "entropy"
STABLE = "stable"
NUMERICAL = "numerical"  # the numerical rank at a τ (the only estimator with a tau)
ESTIMATORS = (R_EFF, ENTROPY, STABLE, NUMERICAL)
# the field table's matrices and estimators (``language_field``, ``attnrank.language.field``):
# the row-centred causal logit field Ẽ of each window, its mean over windows (the structural
# prior) and Ẽ minus that mean, beside the static kernel (``STATIC``)
LOGIT_FIELD = "logit_field"
RESIDUAL_FIELD = "residual_field"
MEAN_FIELD = "mean_field"
FIELD_MATRICES = (LOGIT_FIELD, RESIDUAL_FIELD, MEAN_FIELD, STATIC)
K90 = "k90"  # components holding 90 % of the energy
PRIOR_SHARE = "prior_share"  # the mean field's share of Ẽ's energy (matrix MEAN_FIELD only)


class Measure(NamedTuple):
    """One rank measure of ``language_ranks``: the matrix, the estimator and τ (NaN unless
    numerical)."""

    matrix: str
    estimator: str
    tau: float = math.nan

    @property
    def label(self) -> str:
        """E.g. "static R̃_eff", "realized numerical rank τ=0.01"."""
        names = {R_EFF: "R̃_eff", ENTROPY: "entropy rank", STABLE: "stable rank",
                 NUMERICAL: "numerical rank", K90: "k90", PRIOR_SHARE: "prior share"}
        name = names.get(self.estimator, self.estimator)
        tau = f" τ={self.tau:g}" if self.estimator == NUMERICAL else ""
        return f"{self.matrix} {name}{tau}"


HEADLINE = Measure(STATIC, R_EFF)
TRAIN_LOSS, VAL_LOSS = "train_loss", "val_loss"  # language_loss's losses (bits per byte)
LOSSES = (TRAIN_LOSS, VAL_LOSS)
_MATRICES = {m: i for i, m in enumerate((*MATRICES, *FIELD_MATRICES[:-1]))}
_ESTIMATORS = {e: i for i, e in enumerate((*ESTIMATORS, K90, PRIOR_SHARE))}


def measures(ranks: pd.DataFrame) -> list[Measure]:
    """Every measure in ``ranks``, static before realized, R̃_eff, entropy, stable, then numerical
    by τ: the headline first when present."""
    combos = ranks[["matrix", "estimator", "tau"]].drop_duplicates()
    uniq: dict[str, Measure] = {}  # by label: NaN τ makes equal measures unequal tuples
    for m, e, t in combos.itertuples(index=False):
        measure = Measure(m, e, float(t) if e == NUMERICAL else math.nan)
        uniq.setdefault(measure.label, measure)
    return sorted(uniq.values(), key=lambda m: (_MATRICES.get(m.matrix, 9),
                                                _ESTIMATORS.get(m.estimator, 9),
                                                0.0 if math.isnan(m.tau) else m.tau, m.matrix,
                                                m.estimator))


def select(ranks: pd.DataFrame, measure: Measure) -> pd.DataFrame:
    """The rows of ``ranks`` of ``measure``."""
    sel = (ranks["matrix"] == measure.matrix) & (ranks["estimator"] == measure.estimator)
    if measure.estimator == NUMERICAL:
        sel &= np.isclose(ranks["tau"].astype(float), measure.tau)
    return ranks[sel]


def trace(ranks: pd.DataFrame, measure: Measure = HEADLINE) -> pd.DataFrame:
    """Per (corpus, seed, step): ``value`` = the measure's mean over layers and heads; sorted."""
    part = select(ranks, measure)
    return part.groupby(KEYS + ["step"], as_index=False)["value"].mean()


def final(ranks: pd.DataFrame, measure: Measure = HEADLINE) -> pd.DataFrame:
    """Per (corpus, seed): the measure at the run's last logged step (mean over layers and heads),
    as columns corpus, seed, step, value."""
    t = trace(ranks, measure)
    last = t.groupby(KEYS)["step"].transform("max")
    return t[t["step"] == last].reset_index(drop=True)


def complexity_points(ranks: pd.DataFrame, corpora: pd.DataFrame,
                      measure: Measure = HEADLINE) -> pd.DataFrame:
    """EB-15's points: per (corpus, seed), the corpus's headline ``complexity`` and the final
    ``value`` of the measure. A ValueError naming the corpora that ``corpora`` lacks."""
    pts = final(ranks, measure)
    missing = sorted(set(pts["corpus"]) - set(corpora["corpus"]))
    if missing:
        raise ValueError(f"language_corpora has no complexity for the corpora {missing}")
    return pts.merge(corpora[["corpus", "complexity"]], on="corpus", how="left")


def loss_points(ranks: pd.DataFrame, loss: pd.DataFrame,
                measure: Measure = HEADLINE) -> pd.DataFrame:
    """EB-16's points: per (corpus, seed, step) logged in both tables, the measure's ``value``,
    ``train_loss`` and (where the loss table has it) ``val_loss``; sorted by corpus, seed, step."""
    losses = [c for c in LOSSES if c in loss.columns]
    pts = trace(ranks, measure).merge(loss[KEYS + ["step", *losses]], on=KEYS + ["step"])
    return pts.sort_values(KEYS + ["step"]).reset_index(drop=True)
