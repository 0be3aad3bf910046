"""The witness-families sweep: the family grid from the config and its refusals,
the jobs and the table step in the plan, the transition and r_lb on synthetic tables, the failure
diagnostic on a trained job, TT-4's per-family sweep both ways, and the figure."""

from __future__ import annotations

import copy
import dataclasses
import math
import re
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from claims_world import restarts_summary
from matplotlib.collections import LineCollection, PathCollection
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from attnrank.claims import CHECKS, PASS
from attnrank.core.columns import TEST_SEQUENCE_ACCURACY, TEST_WORST_CASE_ERROR
from attnrank.core.figures import draw
from attnrank.core.io import write_npz, write_table
from attnrank.minip.experiments.train import run_job
from attnrank.minip.experiments.witness_families import (
    PATTERNS,
    failure_rows,
    pattern_of,
    witness_families_tables,
    witness_labels,
)
from attnrank.minip.jobs import (
    WITNESS_FAMILIES,
    WITNESS_FAMILIES_TABLE,
    MinipTrainJob,
    WitnessFamiliesTableJob,
    WitnessFamilySource,
    family_sources,
    minip_jobs,
    witness_family_grid,
)
from attnrank.minip.task import minip_targets, witness_family
from attnrank.minip.witness_sweep import (
    family_summary,
    rank_below,
    seed_transitions,
    tracking,
    tracking_text,
    transition,
)
from attnrank.pipeline.plan import build_plan, claims_params

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = str(ROOT / "workflow" / "schemas" / "config.schema.yaml")
CUT = 0.5
RANKS = [1, 2, 4, 6, 8, 12, 16, 32]


@pytest.fixture()
def config():
    return yaml.safe_load((ROOT / "config.yaml").read_text())


# ---- the family grid ---------------------------------------------------------------------------


def test_full_grid_is_every_k_w_with_m_at_most_62(config):
    grid = witness_family_grid(config["minip"], "full")
    pairs = [(f.blocks, f.width) for f in grid]
    g = config["minip"]["scales"]["full"]["witness_families"]
    expected = [(k, w) for k in g["blocks"] for w in g["widths"] if k * w <= g["max_m"]]
    assert pairs == sorted(expected)
    assert all(k * w <= 62 for k, w in pairs)
    assert (8, 10) not in pairs  # m = 80: left out
    assert len(pairs) == 11
    assert len(witness_family_grid(config["minip"], "smoke")) == 2


def test_max_m_filters_the_grid(config):
    config["minip"]["scales"]["full"]["witness_families"]["max_m"] = 24
    pairs = [(f.blocks, f.width) for f in witness_family_grid(config["minip"], "full")]
    assert pairs and all(k * w <= 24 for k, w in pairs)
    assert (6, 6) not in pairs and (6, 4) in pairs


@pytest.mark.parametrize(("key", "value"), [("blocks", [1, 4]), ("widths", [0]), ("blocks", []),
                                            ("max_m", 64), ("max_m", 1), ("blocks", [4.5])])
def test_bad_values_are_refused_naming_the_key(config, key, value):
    config["minip"]["scales"]["full"]["witness_families"][key] = value
    with pytest.raises(ValueError, match=rf"minip\.scales\.full\.witness_families\.{key}"):
        minip_jobs(config, "full")
    with pytest.raises(WorkflowError, match=key):
        validate(copy.deepcopy(config), SCHEMA)


def test_an_empty_grid_is_refused_naming_the_key(config):
    config["minip"]["scales"]["full"]["witness_families"].update(blocks=[8], widths=[10], max_m=62)
    with pytest.raises(ValueError, match=r"minip\.scales\.full\.witness_families: no family"):
        minip_jobs(config, "full")


def test_jobs_use_the_witness_recipe_on_table_features(config):
    config["minip"]["scales"]["full"]["witness"].pop("seeds", None)  # the scale's seed count
    jobs = minip_jobs(config, "full")
    w = config["minip"]["scales"]["full"]["witness"]
    fam = {k[1]: j for k, j in jobs.items() if k[0] == WITNESS_FAMILIES}
    assert len(fam) == 10  # the configured family (8, 3) is the witness/table job itself
    witness_table = jobs[("witness", "table")]
    for inst, job in fam.items():
        assert job.feature_map == "table" and job.dense is False and job.batch == 0
        assert job.ranks == tuple(w["ranks"]) and job.steps == w["steps"]
        assert job.seeds == witness_table.seeds and job.lr == witness_table.lr
        assert inst == f"K{job.data.blocks}w{job.data.width}"
    table_job = jobs[(WITNESS_FAMILIES_TABLE, "")]
    assert WitnessFamiliesTableJob.from_dict(table_job.to_dict()) == table_job
    assert table_job.worst_case_cutoff == config["claims"]["worst_case_cutoff"]
    shared = [s for s in table_job.families if s.experiment == "witness"]
    assert [(s.blocks, s.width, s.instance) for s in shared] == [(8, 3, "table")]


def test_a_witness_grid_on_its_own_seeds_shares_no_job_with_the_families(config):
    g = config["minip"]["scales"]["full"]
    g["witness"]["seeds"] = g["seeds"] + 2
    jobs = minip_jobs(config, "full")
    fam = {k[1]: j for k, j in jobs.items() if k[0] == WITNESS_FAMILIES}
    assert len(fam) == 11 and "K8w3" in fam  # the configured family trains on its own job too
    assert {j.seeds for j in fam.values()} == {g["seeds"]}
    assert jobs[("witness", "table")].seeds == g["seeds"] + 2
    table_job = jobs[(WITNESS_FAMILIES_TABLE, "")]
    assert all(s.experiment == WITNESS_FAMILIES for s in table_job.families)


def test_without_table_features_in_witness_every_family_has_its_own_job(config):
    config["minip"]["scales"]["full"]["witness"]["feature_maps"] = ["mlp"]
    sources = family_sources(config["minip"], "full")
    assert all(s.experiment == WITNESS_FAMILIES for s in sources) and len(sources) == 11


def test_plan_pairs_metrics_and_weights_per_family(config):
    plan = build_plan(config, "full")
    run = plan.run_for("tables/minip_witness_families.parquet")
    fams = run.params["families"]
    assert run.inputs[::2] == tuple(f"minip/train/{f['experiment']}/{f['instance']}/metrics.parquet"
                                    for f in fams)
    assert run.inputs[1::2] == tuple(f"minip/train/{f['experiment']}/{f['instance']}/weights.npz"
                                     for f in fams)
    assert all(i in plan.by_output for i in run.inputs)
    assert plan.run_for("tables/minip_witness_families_summary.csv") is run
    fig = plan.run_for("figures/minip_witness_families.pdf")
    assert fig.inputs == ("tables/minip_witness_families.parquet",)


# ---- transitions on synthetic tables -----------------------------------------------------------


def synthetic(families: dict[tuple[int, int], list[float]], ranks=RANKS) -> pd.DataFrame:
    """A witness-families table whose seed s of family (K, w) is exact exactly at r ≥ ts[s]."""
    rows = []
    for (k, w), ts in families.items():
        for r in ranks:
            for s, t in enumerate(ts):
                exact = r >= t
                rows.append({"blocks": k, "width": w, "m": k * w, "r_lb": min(k, w), "rank": r,
                             "seed": s, "feature_map": "table",
                             TEST_WORST_CASE_ERROR: 0.1 if exact else 1.2,
                             TEST_SEQUENCE_ACCURACY: 1.0 if exact else 0.9})
    return pd.DataFrame(rows)


def test_transition_needs_every_seed_and_one_failing_seed_moves_it_up():
    assert transition(synthetic({(4, 3): [4, 4, 4]}), CUT) == 4
    assert transition(synthetic({(4, 3): [4, 6, 4]}), CUT) == 6
    assert transition(synthetic({(4, 3): [4, 4, math.inf]}), CUT) == math.inf
    assert list(seed_transitions(synthetic({(4, 3): [4, 6, 4]}), CUT)) == [4, 6, 4]


def test_transition_is_judged_at_the_cutoff():
    df = synthetic({(4, 3): [4, 4, 4]})
    df.loc[(df["rank"] == 4) & (df["seed"] == 1), TEST_WORST_CASE_ERROR] = CUT  # not below it
    assert transition(df, CUT) == 6
    assert transition(df, CUT + 0.01) == 4


def test_transition_is_the_smallest_exact_rank_even_when_a_larger_one_fails():
    df = synthetic({(8, 3): [8, 8, 8]})
    df.loc[(df["rank"] == 32) & (df["seed"] == 2), TEST_WORST_CASE_ERROR] = 2.5
    s = family_summary(df, CUT).iloc[0]
    assert s["transition"] == 8 and not s["monotone"] and s["seeds_exact_at_top"] == 2


def test_summary_has_r_lb_min_k_w_and_the_rank_below():
    s = family_summary(synthetic({(4, 10): [4] * 3, (6, 4): [12] * 3, (8, 3): [1] * 3,
                                  (4, 3): [math.inf] * 3}), CUT).set_index(["blocks", "width"])
    assert s["r_lb"].to_dict() == {(4, 3): 3, (4, 10): 4, (6, 4): 4, (8, 3): 3}
    assert s["m"].to_dict() == {(4, 3): 12, (4, 10): 40, (6, 4): 24, (8, 3): 24}
    assert s.loc[(6, 4), "rank_below"] == 8
    assert math.isnan(s.loc[(8, 3), "rank_below"])  # exact at the smallest rank
    assert s.loc[(4, 3), "rank_below"] == 32  # none exact: the largest rank is below it
    assert rank_below(np.array(RANKS), 12) == 8


def test_tracking_says_k_when_transitions_follow_k_and_min_k_w_when_they_follow_it():
    fams = [(4, 3), (4, 6), (6, 3), (6, 10), (8, 3), (8, 6)]
    by_k = synthetic({(k, w): [k] * 3 for k, w in fams})
    by_lb = synthetic({(k, w): [min(k, w)] * 3 for k, w in fams})
    grid = np.array(RANKS)
    tk = tracking(family_summary(by_k, CUT), grid)
    assert tk["K"]["matches"] == 6 and tk["min(K, w)"]["matches"] < 6
    assert tk["K"]["rank_corr"] == pytest.approx(1) and tk["K"]["ratio_max"] == 1
    assert tk["min(K, w)"]["at_least"] == 6 and tk["min(K, w)"]["ratio_max"] == 8 / 3
    assert "track K better" in tracking_text(family_summary(by_k, CUT), grid)
    tl = tracking(family_summary(by_lb, CUT), grid)
    assert tl["min(K, w)"]["matches"] == 6 and tl["K"]["matches"] < 6
    assert "track min(K, w) better" in tracking_text(family_summary(by_lb, CUT), grid)


# ---- the witness structure and the failure diagnostic ------------------------------------------


@pytest.mark.parametrize(("k", "w"), [(3, 2), (4, 3)])
def test_labels_follow_the_witness_family(k, w):
    bits = witness_family(k, w)
    labels = witness_labels(k)
    assert len(labels) == bits.shape[0]
    q = torch.zeros(k, k * w)
    for a in range(k):
        q[a, a * w:(a + 1) * w] = 1
    t = minip_targets(bits)
    for i, row in labels.iterrows():
        pos = row["query_position"]
        assert torch.equal(bits[i, pos], q[row["query_block"]])
        keys = [j for j in range(3) if j != pos]
        assert torch.equal(bits[i, keys[0]], 1 - q[row["key_block_1"]])
        assert torch.equal(bits[i, keys[1]], 1 - q[row["key_block_2"]])
        present = row["pattern"].startswith("present")
        assert t[i, pos] == (0 if present else w)  # the query's target: is k_a among the keys?
    assert set(labels["pattern"]) == set(PATTERNS)


def test_patterns():
    assert pattern_of(0, 1, 2) == "absent_distinct" and pattern_of(0, 1, 1) == "absent_repeated"
    assert pattern_of(0, 0, 1) == pattern_of(0, 1, 0) == "present_once"
    assert pattern_of(2, 2, 2) == "present_twice"


def test_failure_rows_count_what_fails():
    labels = witness_labels(3)  # 81 inputs
    err = torch.zeros(2, len(labels), 3)
    once = np.flatnonzero(((labels["pattern"] == "present_once") & (labels["query_block"] == 1))
                          .to_numpy())
    pos = labels["query_position"].to_numpy()
    err[1, once, pos[once]] = 0.7  # model 1 fails at the query of block 1's present_once inputs
    rows = failure_rows(err, labels, CUT)
    assert rows.loc[0, "failing_inputs"] == 0 and rows.loc[0, "solved_query_blocks"] == 3
    r = rows.loc[1]
    assert r["failing_inputs"] == len(once) and r["failing_query_blocks"] == 1
    assert r["solved_query_blocks"] == 2
    n_once = (labels["pattern"] == "present_once").sum()
    assert r["fail_present_once"] == pytest.approx(len(once) / n_once)
    assert r["fail_absent_distinct"] == 0 and r["fail_present_twice"] == 0
    assert r["fail_query_token"] == pytest.approx(len(once) / len(labels))
    assert r["fail_key_token"] == 0


def _train_tiny(tmp_path: Path, blocks: int, width: int) -> tuple[Path, Path]:
    params = {"experiment": WITNESS_FAMILIES, "instance": f"K{blocks}w{width}", "seeds": 2,
              "seed_offset": 0, "lr": 0.05, "warmup": 0.05, "log_every": 10, "hidden": 8,
              "feature": "exp", "eval_sequences": 16, "batch": 0, "steps": 20, "compile": False,
              "ranks": [1, 3],
              "dense": True, "feature_map": "table",
              "data": {"kind": "witness", "blocks": blocks, "width": width}}
    metrics, weights = run_job(MinipTrainJob.from_dict(params), torch.device("cpu"))
    d = tmp_path / f"K{blocks}w{width}"
    return write_table(metrics, d / "metrics.parquet"), write_npz(weights, d / "weights.npz")


def test_table_step_rebuilds_the_heads_of_a_trained_job(tmp_path):
    paths = [p for kw in ((3, 2), (4, 2)) for p in _train_tiny(tmp_path, *kw)]
    job = WitnessFamiliesTableJob(
        families=(WitnessFamilySource(3, 2, WITNESS_FAMILIES, "K3w2"),
                  WitnessFamilySource(4, 2, WITNESS_FAMILIES, "K4w2")),
        feature="exp", worst_case_cutoff=CUT)
    table, summary = witness_families_tables([str(p) for p in paths], job)
    assert len(table) == 2 * 2 * 2  # families × kernel ranks × seeds: the dense head left out
    assert set(table["rank"]) == {1, 3} and (table["r_lb"] == 2).all()
    assert list(summary[["blocks", "width"]].itertuples(index=False, name=None)) == [(3, 2), (4, 2)]
    assert (table["exact"] == (table[TEST_WORST_CASE_ERROR] < CUT)).all()
    fails = table["failing_inputs"] > 0
    assert (fails == ~table["exact"]).all()  # an input fails iff the worst case is reached on it
    assert (table["n_inputs"] == 3 * table["blocks"] ** 3).all()
    # the weights of another family are refused: they do not answer the job's metrics
    swapped = [paths[0], paths[3]]
    with pytest.raises(ValueError, match="K=3, w=2"):
        witness_families_tables([str(p) for p in swapped],
                                dataclasses.replace(job, families=job.families[:1]))


# ---- TT-4 with the sweep -----------------------------------------------------------------------


def _tt4_tables(families: dict[tuple[int, int], list[float]]) -> dict[str, pd.DataFrame]:
    """The configured family (8, 3) in minip_witness, failing below r_lb and exact at the top,
    and the sweep's families."""
    witness = synthetic({(8, 3): [8, 8, 8]})
    witness["model"] = "kernel"
    return {"minip_witness": witness, "minip_witness_families": synthetic(families),
            "minip_restarts_summary": restarts_summary()}


def _tt4(config, tables):
    return CHECKS["TT-4"].check(tables, claims_params(config, "full"))


def test_tt4_reports_every_family_and_keeps_its_headline(config):
    fams = {(4, 3): [4] * 3, (6, 4): [6] * 3, (8, 3): [8] * 3, (6, 10): [6, 6, math.inf]}
    out = _tt4(config, _tt4_tables(fams))
    assert out.passed
    assert "K=8, w=3: transition 8 vs r_lb 3, K 8 (headline): pass" in out.sweep
    assert "K=6, w=4: transition 6 vs r_lb 4, K 6: pass" in out.sweep
    assert "K=6, w=10: transition none ≤ 32 vs r_lb 6, K 6: fail" in out.sweep  # top not exact
    assert "witness families (table features" in out.note and "against K: rank correlation" in out.note


def test_tt4_family_fails_when_a_rank_below_r_lb_is_exact(config):
    fams = {(4, 6): [2, 4, 4], (6, 6): [6] * 3, (8, 3): [8] * 3}
    out = _tt4(config, _tt4_tables(fams))
    assert "K=4, w=6: transition 4 vs r_lb 4, K 4: fail" in out.sweep  # seed 0 exact at r = 2
    assert "K=6, w=6: transition 6 vs r_lb 6, K 6: pass" in out.sweep


def test_tt4_headline_is_unchanged_by_the_sweep(config):
    tables = _tt4_tables({(4, 3): [math.inf] * 3, (8, 3): [8] * 3})
    witness = tables["minip_witness"]
    witness.loc[witness["rank"] == 4, TEST_WORST_CASE_ERROR] = 0.1  # r = 4 ≥ r_lb = 3 may be exact
    out = _tt4(config, tables)
    assert out.passed and "K=4, w=3: transition none ≤ 32 vs r_lb 3, K 4: fail" in out.sweep
    tables["minip_witness"].loc[tables["minip_witness"]["rank"] == 2, TEST_WORST_CASE_ERROR] = 0.1
    assert not _tt4(config, tables).passed  # r = 2 < r_lb exact on every seed: fail
    tables["minip_witness_families"] = synthetic({(4, 3): [4] * 3, (8, 3): [4] * 3})
    assert not _tt4(config, tables).passed  # the sweep's own verdicts do not move the headline


def test_tt4_note_says_min_k_w_when_the_data_follow_it(config):
    fams = {(4, 3): [3] * 3, (6, 3): [3] * 3, (6, 4): [4] * 3, (8, 4): [4] * 3, (8, 6): [6] * 3}
    out = _tt4(config, _tt4_tables(fams))
    assert "track min(K, w) better than K" in out.note
    assert {v.rsplit(": ", 1)[-1] for v in out.sweep.split("; ")} == {PASS}


# ---- the figure --------------------------------------------------------------------------------


def test_figure_renders_from_a_synthetic_table(tmp_path, monkeypatch):
    """draw() writes a one-page PDF and a PNG of the figure's size, and the Figure it saved holds
    one point, one seed bar and (left) one "K,w" label per family of the table, at the family's
    transition (the family without one as an open triangle above the grid)."""
    import attnrank.core.style as style
    from attnrank.minip.figures.minip_witness_families import ABOVE

    saved = []
    real_save = style.save
    monkeypatch.setattr(style, "save", lambda fig, out: saved.append(fig) or real_save(fig, out))
    fams = {(4, 3): [4, 4, 6], (4, 10): [4] * 3, (6, 4): [12, 8, 12], (8, 3): [16, 8, 16],
            (8, 6): [math.inf, 16, 32]}
    path = write_table(synthetic(fams), tmp_path / "minip_witness_families.parquet")
    outs = draw("minip_witness_families", [path], tmp_path / "fig.pdf", {"worst_case_cutoff": CUT})
    assert outs == [tmp_path / "fig.pdf", tmp_path / "fig.png"] and len(saved) == 1
    fig = saved[0]
    width, height = fig.get_size_inches()
    assert (width, height) == pytest.approx((8.4, 4.6))  # the size plot() asks for
    pdf = outs[0].read_bytes()
    assert pdf.startswith(b"%PDF-") and pdf.rstrip().endswith(b"%%EOF")
    assert len(re.findall(rb"/Type\s*/Page\b", pdf)) == 1  # one page (not /Pages)
    box = [float(v) for v in re.search(rb"/MediaBox\s*\[([^\]]*)\]", pdf).group(1).split()]
    assert box == pytest.approx([0, 0, 72 * width, 72 * height])
    assert plt.imread(outs[1]).shape[:2] == (round(150 * height), round(150 * width))

    top = max(RANKS) * ABOVE  # where a family without transition is drawn
    transitions = {(4, 3): 6, (4, 10): 4, (6, 4): 12, (8, 3): 16, (8, 6): top}
    bars = {(4, 3): (4, 6), (4, 10): (4, 4), (6, 4): (8, 12), (8, 3): (8, 16), (8, 6): (16, top)}
    left, right = fig.axes[:2]
    for ax in (left, right):
        scatters = [c for c in ax.collections if isinstance(c, PathCollection)]
        ys = sorted(y for c in scatters for _, y in c.get_offsets())
        assert ys == pytest.approx(sorted(transitions.values()))
        hollow = [y for c in scatters if np.all(c.get_facecolors()[:, 3] == 0)  # no face
                  for _, y in c.get_offsets()]
        assert hollow == pytest.approx([top])  # only (8, 6), above the grid
        segs = [seg for c in ax.collections if isinstance(c, LineCollection)
                for seg in c.get_segments()]
        np.testing.assert_allclose(sorted((seg[0][1], seg[1][1]) for seg in segs),
                                   sorted(bars.values()))  # one seed bar per family
    assert sorted(t.get_text() for t in left.texts) == sorted(f"{k},{w}" for k, w in fams)
    assert len(right.texts) == 0
    legend_texts = {t.get_text() for ax in fig.axes[2:] for lg in [ax.get_legend()] if lg
                    for t in lg.get_texts()}
    assert {"K = 4", "K = 6", "K = 8", "w = 3", "w = 4", "w = 6", "w = 10", "y = x"} <= legend_texts
    plt.close("all")


def test_figure_draws_every_family_and_y_equals_x():
    from attnrank.minip.figures.minip_witness_families import plot

    fams = {(4, 3): [4] * 3, (4, 10): [4] * 3, (6, 4): [12] * 3, (8, 6): [math.inf] * 3}
    fig = plot({"minip_witness_families": synthetic(fams)}, {"worst_case_cutoff": CUT})
    left, right = fig.axes[:2]

    def points(ax: plt.Axes) -> np.ndarray:
        return np.concatenate([c.get_offsets() for c in ax.collections
                               if isinstance(c, PathCollection) and len(c.get_offsets())])

    for ax in (left, right):
        assert len(points(ax)) == len(fams)  # one point per family (the open triangle included)
        diag = next(line for line in ax.get_lines() if line.get_label() == "y = x")
        assert np.allclose(diag.get_xdata(), diag.get_ydata())
        assert ax.get_yscale() == "log"
        lo, hi = ax.get_ylim()
        fmt = ax.yaxis.get_major_formatter()
        labels = {fmt(v, i) for i, v in enumerate(ax.yaxis.get_majorticklocs()) if lo <= v <= hi}
        assert {"4", "8", "16", "32"} <= labels  # integer ranks of the grid on a log2 axis
    xs = sorted(round(x) for x, _ in points(left))
    assert xs == [3, 4, 4, 6]  # r_lb of (4, 3), (4, 10), (6, 4), (8, 6), spread around its value
    assert max(y for _, y in points(left)) > 32  # (8, 6): no transition, drawn above the grid
    plt.close(fig)
