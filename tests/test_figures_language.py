"""Appendix B's figures on the synthetic language tables of ``claims_world``: every seed is a
point (or a line), the title's ρ and interval are the claim's, both are written as PDF + PNG from
the plan's params, byte-identical on a rerun."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from claims_world import CONFIG, LANGUAGE_SEEDS, language_corpora, language_loss, language_ranks
from test_figures import points

from attnrank.claims import CHECKS
from attnrank.core.figures import draw
from attnrank.core.io import write_table
from attnrank.language.figures.language_rank_vs_complexity import plot as plot_complexity
from attnrank.language.figures.language_rank_vs_loss import plot as plot_loss
from attnrank.pipeline.plan import figure_params

PARAMS = figure_params(CONFIG, "smoke", "A", "language_rank_vs_complexity")
TABLES = {"language_ranks": language_ranks(), "language_corpora": language_corpora(),
          "language_loss": language_loss()}


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_figure_params_carry_the_claims_bootstrap_and_threshold():
    c = CONFIG["claims"]
    assert PARAMS == {"scale": "smoke", "bootstrap_samples": c["EB-15"]["bootstrap_samples"],
                      "interval_level": c["EB-15"]["interval_level"],
                      "min_abs_rho": c["EB-16"]["min_abs_rho"]}
    assert "headline_tau" in figure_params(CONFIG, "smoke", "A", "entropic_ladder")


def test_rank_vs_complexity_shows_every_seed_and_the_claims_interval():
    fig = plot_complexity(TABLES, PARAMS)
    static, realized = fig.axes[:2]
    pts = points(static)
    assert len(pts) == 4 * LANGUAGE_SEEDS  # every (corpus, seed), none merged
    assert len(np.unique(pts[:, 0])) == len(pts)  # seeds side by side, none hidden
    final = TABLES["language_ranks"].query("matrix == 'static' and estimator == 'r_eff' "
                                           "and step == 500")
    assert sorted(pts[:, 1]) == pytest.approx(
        sorted(final.groupby(["corpus", "seed"])["value"].mean()))
    claim = CHECKS["EB-15"].check(TABLES, {"claims": CONFIG["claims"]})
    rho = claim.measured.split(",")[0].split("= ")[1]
    assert f"ρ = {float(rho):.2f}" in static.get_title()
    assert "90% interval" in static.get_title() and "realized" in realized.get_title()
    assert len(points(realized)) == 4 * LANGUAGE_SEEDS
    # the corpus medians joined in order of complexity (a ρ near 0 can hide a rise and a fall)
    joined = next(ln for ln in static.get_lines() if len(ln.get_xdata()) == 4)
    medians = (final.groupby(["corpus", "seed"])["value"].mean().groupby("corpus").median()
               .reindex(TABLES["language_corpora"].sort_values("complexity")["corpus"]))
    assert list(joined.get_xdata()) == sorted(TABLES["language_corpora"]["complexity"])
    assert list(joined.get_ydata()) == pytest.approx(medians.to_numpy())


def test_rank_vs_loss_draws_every_seed_and_the_direction_of_training():
    fig = plot_loss(TABLES, PARAMS)
    static = fig.axes[0]
    thin = [ln for ln in static.get_lines() if ln.get_linewidth() < 1 and len(ln.get_xdata())]
    assert len(thin) == 4 * LANGUAGE_SEEDS  # one thin line per (corpus, seed)
    arrows = [a for a in static.texts if a.arrow_patch is not None]
    assert len(arrows) == 4 * (6 - 1)  # one per segment of each corpus's median path
    assert "median |Spearman ρ(rank, loss)| over 12 runs = 1.00 (EB-16: ≥ 0.6)" in \
        static.get_title()


def test_both_figures_write_pdf_and_png_byte_identically(tmp_path):
    paths = {}
    for name, df in TABLES.items():
        paths[name] = tmp_path / f"{name}.parquet"
        write_table(df, paths[name])
    for fig, tables in (("language_rank_vs_complexity", ("language_ranks", "language_corpora")),
                        ("language_rank_vs_loss", ("language_ranks", "language_loss"))):
        params = figure_params(CONFIG, "smoke", "A", fig)
        outs = draw(fig, [paths[t] for t in tables], tmp_path / f"{fig}.pdf", params)
        first = [p.read_bytes() for p in outs]
        assert [p.suffix for p in outs] == [".pdf", ".png"] and all(first)
        outs = draw(fig, [paths[t] for t in tables], tmp_path / f"{fig}.pdf", params)
        assert [p.read_bytes() for p in outs] == first


def test_rank_vs_loss_stays_legible_with_dense_early_steps():
    """39 logged steps a run (the full scale's schedule): at most MAX_ARROWS arrows a median line,
    spread from the first segment to the last; the validation reading in the title."""
    from attnrank.language.figures.language_rank_vs_loss import MAX_ARROWS, arrow_segments
    from attnrank.language.jobs import log_steps

    assert arrow_segments(6) == [0, 1, 2, 3, 4] and arrow_segments(1) == []
    assert arrow_segments(39) == [0, 9, 18, 28, 37]
    steps = log_steps(1500, 150, 10, 300)
    ranks, loss = language_ranks(), language_loss()
    share = dict(zip(sorted(ranks["step"].unique()), range(6), strict=True))

    def dense(df, col_fn):  # every step of the schedule, values interpolated along the old path
        out = []
        for i, s in enumerate(steps):
            frac = 5 * i / (len(steps) - 1)
            lo = min(int(frac), 4)
            a, b = (df[df["step"] == sorted(share)[k]].reset_index(drop=True) for k in (lo, lo + 1))
            row = a.copy()
            for c in col_fn:
                row[c] = a[c] + (b[c] - a[c]) * (frac - lo)
            out.append(row.assign(step=s))
        return pd.concat(out, ignore_index=True)

    fig = plot_loss({"language_ranks": dense(ranks, ["value"]),
                     "language_loss": dense(loss, ["train_loss", "val_loss"])}, PARAMS)
    static = fig.axes[0]
    arrows = [a for a in static.texts if a.arrow_patch is not None]
    assert len(arrows) == 4 * MAX_ARROWS
    assert "against the validation loss (reported): 1.00" in static.get_title()
