"""The vectorized trainer: M models in one program follow their single-model trajectories."""

import numpy as np
import pandas as pd
import pytest
import torch

from attnrank.core.train import TrainConfig, log_cadence, resolve_device, train
from attnrank.language.jobs import log_steps
from attnrank.minip.data import JobData, bits_batch
from attnrank.minip.evaluate import mse, predict
from attnrank.minip.experiments.train import run_job
from attnrank.minip.families import job_groups
from attnrank.minip.jobs import MinipTrainJob
from attnrank.minip.models import DenseAttention, KernelAttention, TokenIds
from attnrank.minip.program import build_model
from attnrank.minip.task import sample_sequences, token_vocab


def _fit(model_factory, seeds, steps=60):
    gens = [torch.Generator().manual_seed(s) for s in seeds]
    model = model_factory(gens)
    data_gens = [torch.Generator().manual_seed(1000 + s) for s in seeds]

    def batch(step):
        bits = sample_sequences(data_gens, 64, 3, 8, "fixed_weight")
        return bits_batch(bits)

    train(model, batch, mse, TrainConfig(steps=steps, lr=1e-2, warmup=0.1, log_every=20))
    return model


@pytest.mark.parametrize("kind", ["table", "mlp", "dense"])
def test_vectorized_matches_single_model_training(kind):
    vocab = token_vocab(8, "fixed_weight")

    def factory(gens):
        if kind == "dense":
            return DenseAttention(8, gens)
        return KernelAttention(8, 4, gens, feature_map=kind, vocab=vocab)

    seeds = [3, 4, 5]
    together = _fit(factory, seeds)
    for k, s in enumerate(seeds):
        alone = _fit(factory, [s])
        for (name, pa), (_, pb) in zip(together.named_parameters(), alone.named_parameters(),
                                       strict=True):
            assert torch.allclose(pa[k], pb[0], atol=1e-5, rtol=1e-4), (kind, name)
    # the models really moved away from their init and differ from each other
    fresh = factory([torch.Generator().manual_seed(s) for s in seeds])
    moved = [float((a - b).abs().max()) for a, b in zip(together.parameters(), fresh.parameters(),
                                                         strict=True)]
    assert max(moved) > 1e-2


def test_schedule_warmup_then_cosine_to_zero():
    cfg = TrainConfig(steps=100, lr=1.0, warmup=0.1)
    f = [cfg.lr_factor(s) for s in range(100)]
    assert f[0] == pytest.approx(0.1) and f[9] == pytest.approx(1.0)
    assert all(b <= a + 1e-12 for a, b in zip(f[10:], f[11:], strict=False))
    assert f[-1] < 0.01
    assert TrainConfig(steps=1000, lr=1.0, warmup=50).warmup_steps == 50


@pytest.mark.parametrize("bad,match", [(dict(steps=0), "steps"), (dict(lr=0.0), "lr"),
                                       (dict(optimizer="sgdx"), "optimizer")])
def test_train_config_rejects_bad_values(bad, match):
    kw = dict(steps=10, lr=1e-2) | bad
    with pytest.raises(ValueError, match=match):
        TrainConfig(**kw)


def test_device_resolution():
    assert resolve_device("cpu").type == "cpu"
    assert resolve_device("auto") == torch.device("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ValueError, match="device"):
        resolve_device("tpu")


def _job(kind="random"):
    data = {"kind": "random", "n_tokens": 3, "m": 6, "tokens": "fixed_weight"}
    if kind == "witness":
        data = {"kind": "witness", "blocks": 3, "width": 2}
    return MinipTrainJob.from_dict({
        "experiment": "t", "instance": "x", "seeds": 2, "seed_offset": 0, "ranks": [1, 2],
        "dense": True, "lr": 1e-2, "warmup": 0.05, "log_every": 10, "hidden": 8, "feature": "exp",
        "eval_sequences": 256, "batch": 0 if kind == "witness" else 64, "steps": 20, "compile": False,
        "feature_map": "table", "data": data})


@pytest.mark.parametrize("kind", ["random", "witness"])
def test_job_is_deterministic_and_tidy(kind):
    a, wa = run_job(_job(kind), torch.device("cpu"))
    b, wb = run_job(_job(kind), torch.device("cpu"))
    pd.testing.assert_frame_equal(a, b)
    assert wa.keys() == wb.keys()
    final = a[a["final"]]
    assert len(final) == 2 * 3  # (ranks 1, 2 + dense) × 2 seeds
    assert set(final["model"]) == {"kernel", "dense"}
    _check_metric_definitions(final, n_tokens=3)
    _check_metrics_recomputed(_job(kind), final, wa)


def _check_metric_definitions(final, n_tokens):
    """What the definitions in ``sequence_metrics`` imply between the columns of every row."""
    acc, pos = final["test_sequence_accuracy"], final["test_position_error"]
    worst, mse = final["test_worst_case_error"], final["test_mse"]
    assert acc.between(0, 1).all() and pos.between(0, 1).all()
    # a wrong sequence has 1..N wrong positions: pos ≤ 1 − acc ≤ N·pos
    assert (pos <= 1 - acc + 1e-12).all() and (1 - acc <= n_tokens * pos + 1e-12).all()
    assert ((acc == 1) == (pos == 0)).all()
    # integer targets: |ŷ − t| < ½ rounds to t, so an error ≥ ½ is needed for a wrong position,
    # and each wrong position adds ≥ ¼ to the squared error
    assert (pos[worst < 0.5] == 0).all() and (worst[pos > 0] >= 0.5).all()
    assert (mse >= 0.25 * pos - 1e-7).all() and (mse <= worst**2 + 1e-6).all()


def _check_metrics_recomputed(job, final, weights):
    """Each final row equals the metrics computed here by hand (numpy, brute-force targets) from
    the predictions of a head rebuilt from the returned weights alone."""
    data = JobData(job, torch.device("cpu"))
    batch = data.eval_sets["test"]
    tok = batch.tokens
    bits = (tok.vocab[tok.ids] if isinstance(tok, TokenIds) else tok).numpy().astype(np.int64)
    t = np.einsum("mbik,mbjk->mbij", bits, bits).min(axis=-1)  # t_i = min_j <x_i, x_j>
    groups = job_groups(job.ranks, job.dense)
    assert len(final) == len(groups) * len(data.seeds)
    for g in groups:
        head = build_model(g, data, job, job.feature_map)
        prefix = f"{g.tag}/"
        head.load_state_dict({k[len(prefix):]: torch.from_numpy(v) for k, v in weights.items()
                              if k.startswith(prefix)})
        with torch.no_grad():
            pred = predict(head, batch).numpy().astype(np.float64)
        wrong = np.rint(pred) != t
        err = np.abs(pred - t)
        for k, s in enumerate(data.seeds):
            row = final[(final["model"] == g.family) & (final["rank"] == g.rank_column)
                        & (final["seed"] == s)]
            assert len(row) == 1, (g.tag, s)
            row = row.iloc[0]
            # the table holds float32 fractions: compare the counts of wrong positions and of
            # sequences right at every position
            n_seq, n_pos = wrong[k].shape
            assert round(row["test_position_error"] * n_seq * n_pos) == wrong[k].sum()
            assert round(row["test_sequence_accuracy"] * n_seq) == (~wrong[k].any(-1)).sum()
            assert row["test_worst_case_error"] == pytest.approx(err[k].max(), rel=1e-5)
            assert row["test_mse"] == pytest.approx((err[k] ** 2).mean(), rel=1e-5)


def test_the_log_cadence_reaches_every_logged_step():
    """log_cadence(logged, steps): every logged step is a multiple of it or the last step, and it
    is the largest such cadence (appendix B's schedules of ``log_steps``)."""
    for args in ((1500, 150, 10, 300), (60, 20, 5, 20), (25, 10, 4, 9), (1500, 150, 10, 0),
                 (7, 10, 1, 0), (24, 8, 6, 12)):
        logged = log_steps(*args)
        every = log_cadence(logged, args[0])
        reached = {t for t in range(args[0] + 1) if t % every == 0} | {args[0]}
        assert set(logged) <= reached, args
        assert not any(all(t % c == 0 for t in logged if t != args[0])
                       for c in range(every + 1, args[0] + 1)), args  # the greatest such cadence
    assert log_cadence(log_steps(1500, 150, 10, 300), 1500) == 10
    assert log_cadence(log_steps(1500, 150, 10, 0), 1500) == 150  # the old cadence
    assert log_cadence((0, 7), 7) == 7  # only the initialization and the last step
    assert log_cadence((), 5) == 5
    assert log_cadence((0, 6, 9, 10), 10) == 3
