"""Appendix B models: the causal mask holds, M vectorized models are M models trained alone,
shapes and rank bounds, determinism of the tables, and the training job's config checks."""

import copy
import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from attnrank.core.io import write_table
from attnrank.language.experiments.train import (
    CONFIG_KEYS,
    LOSS_COLUMNS,
    RANK_COLUMNS,
    config_columns,
    run_job,
    tidy_ranks,
)
from attnrank.language.jobs import TRAIN, LanguageTrainJob, language_jobs, log_steps
from attnrank.language.models import VOCAB, ByteTransformers, bits_per_byte
from attnrank.pipeline.plan import build_plan

CPU = torch.device("cpu")
TAUS = (0.01, 0.05, 0.1)


def _gens(n, offset=0):
    return [torch.Generator().manual_seed(offset + k) for k in range(n)]


def _model(m=2, d=16, layers=2, heads=4, context=12):
    return ByteTransformers(d, layers, heads, context, _gens(m))


def _job(**over):
    """A tiny training job on the templated builtin corpus (fast to build)."""
    p = {"corpora": [{"name": "templated", "source": "builtin", "ref": "templated"}],
         "max_bytes": 6000, "val_fraction": 0.2, "corpus": "templated", "seed_offset": 0,
         "seeds": 2, "d_model": 16, "n_layers": 1, "n_heads": 2, "context": 16, "batch": 8,
         "steps": 24, "lr": 0.01, "warmup": 0.1, "log_every": 8, "early_log_every": 1,
         "early_log_until": 0, "mixer_inputs": 8, "field_windows": 4, "rung": "base",
         "taus": list(TAUS)}
    p.update(over)
    return LanguageTrainJob.from_dict(p)


@pytest.mark.parametrize("mixers", [False, True])
def test_a_later_byte_never_changes_an_earlier_prediction(mixers):
    model = _model()
    x = torch.randint(0, VOCAB, (2, 3, 12), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        base = model(x, mixers=mixers)
        base = base[0] if mixers else base
        for t in (3, 7, 11):
            y = x.clone()
            y[:, :, t] = (y[:, :, t] + 1 + torch.arange(3)) % VOCAB
            out = model(y, mixers=mixers)
            out = out[0] if mixers else out
            assert torch.equal(out[:, :, :t], base[:, :, :t])  # earlier positions: bit for bit
            assert not torch.allclose(out[:, :, t], base[:, :, t])  # position t sees its byte


def test_fused_and_explicit_attention_agree_and_mixers_are_causal_row_stochastic():
    model = _model()
    x = torch.randint(0, VOCAB, (2, 5, 12), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        fused = model(x)
        explicit, mats = model(x, mixers=True)
    assert fused.shape == (2, 5, 12, VOCAB)
    torch.testing.assert_close(fused, explicit, rtol=1e-5, atol=1e-5)
    assert len(mats) == 2 and mats[0].shape == (2, 5, 4, 12, 12)
    for a in mats:
        torch.testing.assert_close(a.sum(-1), torch.ones(2, 5, 4, 12))
        assert float(a.triu(diagonal=1).abs().max()) == 0.0


def test_static_kernels_are_per_head_products_of_rank_at_most_the_head_width():
    model = _model(d=16, heads=4)
    k = model.static_kernels()
    assert k.shape == (2, 2, 4, 16, 16) and k.dtype == torch.float64
    wq, wk = model.w_q[1][1].double(), model.w_k[1][1].double()  # layer 1, model 1
    torch.testing.assert_close(k[1, 1, 2], wq[:, 8:12] @ wk[:, 8:12].T)
    ranks = torch.linalg.matrix_rank(k.reshape(-1, 16, 16))
    assert int(ranks.max()) == 4  # d_h = 16 / 4


def test_the_loss_is_bits_per_byte_and_a_model_depends_only_on_its_own_generator():
    """Uniform logits give exactly 8 bits per byte; model k built beside others is model k alone."""
    logits = torch.zeros(2, 3, 5, VOCAB)
    targets = torch.randint(0, VOCAB, (2, 3, 5))
    torch.testing.assert_close(bits_per_byte(logits, targets), torch.full((2,), 8.0))
    both = ByteTransformers(8, 1, 2, 6, _gens(2, 10))
    alone = ByteTransformers(8, 1, 2, 6, _gens(1, 11))
    for (name, a), b in zip(both.named_parameters(), alone.parameters(), strict=True):
        assert torch.equal(a[1], b[0]), name


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="multiple of n_heads"):
        ByteTransformers(10, 1, 3, 8, _gens(1))
    with pytest.raises(ValueError, match="T ≤ 8"):
        ByteTransformers(8, 1, 2, 8, _gens(1))(torch.zeros(1, 2, 9, dtype=torch.int64))


@pytest.fixture(scope="module")
def pair():
    """Seeds 0 and 1 trained as one program."""
    return run_job(_job(), CPU)


def test_the_tables_have_their_columns_rows_and_steps(pair):
    ranks, loss, _, weights = pair
    assert list(ranks.columns) == list(RANK_COLUMNS) and list(loss.columns) == list(LOSS_COLUMNS)
    steps = [0, 8, 16, 24]
    assert sorted(loss["step"].unique()) == steps and len(loss) == 2 * len(steps)
    # per (seed, step, layer, head, matrix): r_eff, entropy, stable and one numerical rank per τ
    assert len(ranks) == 2 * len(steps) * 1 * 2 * 2 * (3 + len(TAUS))
    num = ranks[ranks["estimator"] == "numerical"]
    assert sorted(num["tau"].unique()) == list(TAUS) and ranks.loc[
        ranks["estimator"] != "numerical", "tau"].isna().all()
    static = ranks[ranks["matrix"] == "static"]
    assert static["value"].between(0, 16 / 2 + 1e-9).all()  # rank ≤ d_h = 8
    assert (ranks[ranks["matrix"] == "realized"]["value"] <= 16 + 1e-9).all()  # T = 16
    assert tuple(config_columns(_job())) == CONFIG_KEYS
    assert (ranks[["d_model", "n_layers", "n_heads", "context", "steps"]].iloc[0].tolist()
            == [16, 1, 2, 16, 24])
    # at initialization the predictions are near uniform: ≈ 8 bits per byte; training lowers it
    first = loss[loss["step"] == 0]
    assert np.allclose(first[["train_loss", "val_loss"]], 8.0, atol=0.1)
    last = loss[loss["step"] == 24]
    assert (last["val_loss"].to_numpy() < first["val_loss"].to_numpy() - 2).all()
    assert weights["static_kernel"].shape == (2, 1, 2, 16, 16)
    assert weights["realized_mixer"].shape == (2, 1, 2, 16, 16)
    assert weights["embed"].dtype == np.float64 and weights["embed"].shape == (2, VOCAB, 16)
    assert weights["model_seed"].tolist() == [0, 1]


def test_vectorized_models_match_each_trained_alone(pair):
    ranks, loss, _, weights = pair
    for seed in (0, 1):
        r1, l1, _, w1 = run_job(_job(seeds=1, seed_offset=seed), CPU)
        assert l1["seed"].unique().tolist() == [seed]
        mine = loss[loss["seed"] == seed].reset_index(drop=True)
        np.testing.assert_allclose(l1[["train_loss", "val_loss"]], mine[["train_loss", "val_loss"]],
                                   rtol=1e-4, atol=1e-4)
        for name in ("embed", "w_q_0", "w_k_0", "w_u", "static_kernel", "realized_mixer"):
            np.testing.assert_allclose(w1[name][0], weights[name][seed], rtol=1e-3, atol=1e-5)
        mine = ranks[(ranks["seed"] == seed) & (ranks["estimator"] == "r_eff")]
        np.testing.assert_allclose(r1.loc[r1["estimator"] == "r_eff", "value"], mine["value"],
                                   rtol=1e-3)


def test_the_same_job_gives_the_same_bytes_and_other_seeds_differ(pair, tmp_path):
    ranks, loss, _, _ = pair
    again, again_loss, _, _ = run_job(_job(), CPU)
    for name, a, b in (("ranks", ranks, again), ("loss", loss, again_loss)):
        pa = write_table(a, tmp_path / f"{name}_a.parquet")
        pb = write_table(b, tmp_path / f"{name}_b.parquet")
        assert pa.read_bytes() == pb.read_bytes()
    other, _, _, _ = run_job(_job(seed_offset=5), CPU)
    assert not np.allclose(other["value"], ranks["value"])


def test_tidy_ranks_labels_every_estimator():
    static = np.zeros((1, 1, 1, 3, 3))
    static[..., 0, 0], static[..., 1, 1] = 1.0, 1.0  # two equal singular values
    realized = np.eye(3)[None, None, None]
    df = tidy_ranks(7, [4], static, realized, TAUS)
    st = df[df["matrix"] == "static"].set_index("estimator")
    assert st.loc["r_eff", "value"] == pytest.approx(2.0)
    assert st.loc["stable", "value"] == pytest.approx(2.0)
    assert (st.loc["numerical", "value"] == 2.0).all()
    re = df[df["matrix"] == "realized"].set_index("estimator")
    assert re.loc["entropy", "value"] == pytest.approx(3.0)
    assert set(df["seed"]) == {4} and set(df["step"]) == {7}


def _config():
    with open(Path(__file__).resolve().parents[1] / "config.yaml") as f:
        return yaml.safe_load(f)


def test_one_training_job_per_corpus_and_the_tables_read_every_one():
    config = _config()
    for scale in ("smoke", "full"):
        g = config["language"]["scales"][scale]
        jobs = {c: j for (kind, c), j in language_jobs(config, scale).items() if kind == TRAIN}
        assert list(jobs) == g["corpora"]
        job = jobs[g["corpora"][0]]
        assert LanguageTrainJob.from_json(job.to_json()) == job
        assert job.taus == tuple(config["entropic"]["taus"]) and job.seeds == g["seeds"]
        plan = build_plan(config, scale)
        for table, out in (("language_ranks", "ranks.parquet"), ("language_loss", "loss.parquet")):
            run = plan.run_for(f"tables/{table}.parquet")
            assert run.inputs == tuple(f"language/train/{c}/{out}" for c in g["corpora"])
            assert run.params["select"] == "all"


def test_heads_that_do_not_divide_the_width_are_refused_naming_the_key():
    config = copy.deepcopy(_config())
    config["language"]["scales"]["smoke"]["n_heads"] = 5
    with pytest.raises(ValueError, match=r"language\.scales\.smoke\.d_model"):
        language_jobs(config, "smoke")


def test_a_training_job_holds_exactly_its_corpus():
    job = _job()
    with pytest.raises(ValueError, match="exactly the corpus"):
        dataclasses.replace(job, corpus="prose")


def test_seed_offset_shifts_the_seeds_of_the_tables():
    ranks, loss, _, _ = run_job(_job(seeds=1, seed_offset=3, steps=2, log_every=2), CPU)
    assert set(ranks["seed"]) == {3} and set(loss["seed"]) == {3}
    assert isinstance(loss, pd.DataFrame)


def test_the_command_writes_the_tables_and_float64_weights_with_sidecars(tmp_path):
    import json

    from attnrank.cli import main

    out = {k: tmp_path / f"{k}.{ext}" for k, ext in (("ranks", "parquet"), ("loss", "parquet"),
                                                      ("field", "parquet"), ("weights", "npz"))}
    args = ["language-train", "--params", _job(steps=4, log_every=2).to_json(), "--device", "cpu"]
    args += [a for k, p in out.items() for a in (f"--{k}", str(p))]
    assert main(args) == 0
    assert list(pd.read_parquet(out["loss"])["step"].unique()) == [0, 2, 4]
    with np.load(out["weights"]) as w:
        assert w["w_q_0"].dtype == np.float64 and w["w_q_0"].shape == (2, 16, 16)
    for p in out.values():
        assert p.with_name(p.name + ".prov.json").exists()
    bad = _job().to_dict()
    del bad["mixer_inputs"]
    assert main(["language-train", "--params", json.dumps(bad), "--device", "cpu"]
                + [a for k, p in out.items() for a in (f"--{k}", str(p))]) == 2


# ---- the log schedule (logged where the static rank collapses) ---------------------------------

def test_the_log_schedule_is_early_steps_then_every_log_every_then_the_last():
    full = log_steps(1500, 150, 10, 300)
    assert full == (*range(0, 301, 10), *range(450, 1501, 150))
    assert len(full) == 31 + 8
    assert log_steps(60, 20, 5, 20) == (0, 5, 10, 15, 20, 40, 60)  # the smoke scale
    assert log_steps(1500, 150, 10, 0) == tuple(range(0, 1501, 150))  # no early logging: as before
    assert log_steps(25, 10, 4, 9) == (0, 4, 8, 10, 20, 25)  # until off the grid; the last step
    assert log_steps(6, 10, 4, 100) == (0, 4, 6)  # until past the end is cut at the last step
    with pytest.raises(ValueError, match="early_log_every must be ≥ 1"):
        log_steps(10, 5, 0, 5)
    with pytest.raises(ValueError, match=r"LanguageTrainJob\.early_log_until: must be ≥ 0"):
        _job(early_log_until=-1)


def test_early_logging_leaves_training_bit_identical_and_logs_both_losses_at_its_steps(pair):
    """The same job with early logging (every 3 steps up to 12): every weight the same bytes, the
    rows of the old steps the same bytes, and both losses at every logged step."""
    ranks, loss, _, weights = pair
    job = _job(early_log_every=3, early_log_until=12)
    steps = [0, 3, 6, 8, 9, 12, 16, 24]
    assert list(job.logged_steps()) == steps
    e_ranks, e_loss, _, e_weights = run_job(job, CPU)
    assert sorted(e_weights) == sorted(weights)
    for name, w in weights.items():
        assert e_weights[name].tobytes() == w.tobytes(), name
    assert sorted(e_loss["step"].unique()) == steps and len(e_loss) == 2 * len(steps)
    assert e_loss[["train_loss", "val_loss"]].notna().all().all()
    assert sorted(e_ranks["step"].unique()) == steps
    old = e_loss[e_loss["step"].isin([0, 8, 16, 24])].reset_index(drop=True)
    pd.testing.assert_frame_equal(old, loss, check_exact=True)
    old = e_ranks[e_ranks["step"].isin([0, 8, 16, 24])].reset_index(drop=True)
    pd.testing.assert_frame_equal(old, ranks, check_exact=True)


def test_the_config_scales_log_early():
    config = _config()
    for scale, early in (("full", 31), ("smoke", 5)):
        job = next(j for (kind, _), j in language_jobs(config, scale).items() if kind == TRAIN)
        g = config["language"]["scales"][scale]
        assert (job.early_log_every, job.early_log_until) == (g["early_log_every"],
                                                              g["early_log_until"])
        assert sum(t <= job.early_log_until for t in job.logged_steps()) == early
