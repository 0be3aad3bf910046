"""Paper A students: exact sufficient statistics, masked ranks that behave like unpadded ones,
the reassociated linear attention, and permutation equivariance of the ladder rungs."""

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from attnrank.core.train import TrainConfig, train
from attnrank.entropic.experiments.ladder import build_rung
from attnrank.entropic.jobs import B0, B1, B1_POS, B2, B2_POS, B3, RUNGS, entropic_jobs
from attnrank.entropic.models.attention import AttentionStudents, TransformerBlockStudents
from attnrank.entropic.models.surrogate import SurrogateStudents, quad_stats

N, D, E = 10, 4, 3
CONFIG = Path(__file__).resolve().parents[1] / "config.yaml"


def _gens(n, offset=0):
    return [torch.Generator().manual_seed(offset + k) for k in range(n)]


def test_surrogate_statistics_give_the_exact_full_batch_mse():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 7, N, D)), rng.standard_normal((2, 7, N, E))
    model = SurrogateStudents(2, [1, 3, N], N, D, E, 0.5, _gens(6)).double()
    stats = quad_stats(x, y, dtype=torch.float64)
    pred = model(torch.tensor(x))  # (I, R, S, N, e)
    direct = ((pred - torch.tensor(y)[:, None]) ** 2).mean(dim=(2, 3, 4))
    assert torch.allclose(model.mse(stats), direct, rtol=1e-9)


def test_surrogate_operator_has_at_most_its_rank():
    model = SurrogateStudents(1, [1, 2, 5], N, D, E, 1.0, _gens(3))
    s = torch.linalg.svdvals(model.operator()[0].double())
    for j, r in enumerate([1, 2, 5]):
        assert int((s[j] > 1e-6 * s[j, 0]).sum()) == r


def _train_surrogate(ranks, gens, stats, steps=40):
    model = SurrogateStudents(1, ranks, N, D, E, 0.1, gens)
    train(model, lambda step: None, lambda m, b: m.mse(stats).reshape(-1),
          TrainConfig(steps=steps, lr=1e-2, warmup=5, log_every=steps))
    return model


@pytest.mark.parametrize("cls", ["surrogate", "attention"])
def test_masked_ranks_follow_their_unpadded_trajectories(cls):
    """A rank-2 student trained beside a rank-5 one (padded to 5 columns, masked) ends exactly
    where it ends alone; the masked columns never move."""
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((1, 16, N, D)), rng.standard_normal((1, 16, N, E))
    if cls == "surrogate":
        stats = quad_stats(x, y)
        both = _train_surrogate([2, 5], _gens(2, 10), stats)
        alone = _train_surrogate([2], _gens(1, 10), stats)
        pairs = [(both.p[0, 0, :, :2], alone.p[0, 0]), (both.q[0, 0, :, :2], alone.q[0, 0]),
                 (both.v[0, 0], alone.v[0, 0])]
        masked = both.p[0, 0, :, 2:]
    else:
        xt, yt = torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)

        def fit(ranks, gens):
            m = AttentionStudents(1, ranks, N, D, E, "softmax", 0.3, gens)
            train(m, lambda step: None,
                  lambda mm, b: ((mm(xt) - yt[:, None]) ** 2).mean((2, 3, 4)).reshape(-1),
                  TrainConfig(steps=40, lr=1e-2, warmup=5, log_every=40))
            return m
        both, alone = fit([2, 4], _gens(2, 20)), fit([2], _gens(1, 20))
        pairs = [(both.w_q[0, 0, :, :2], alone.w_q[0, 0]), (both.w_k[0, 0, :, :2], alone.w_k[0, 0]),
                 (both.v[0, 0], alone.v[0, 0])]
        masked = both.w_q[0, 0, :, 2:]
    for a, b in pairs:
        assert torch.allclose(a, b, atol=1e-6)
    assert torch.count_nonzero(masked) == 0


def test_linear_attention_reassociation_matches_the_explicit_mixer():
    x = torch.randn(2, 5, N, D, dtype=torch.float64)
    model = AttentionStudents(2, [1, 3, D], N, D, E, "linear", 0.4, _gens(6), scale=0.7).double()
    assert torch.allclose(model(x), model.mix_forward(x), rtol=1e-10, atol=1e-12)
    pos = AttentionStudents(2, [D + 2], N, D, E, "linear", 0.4, _gens(2), positions=2).double()
    assert torch.allclose(pos(x), pos.mix_forward(x), rtol=1e-10, atol=1e-12)


def test_attention_kernel_has_at_most_its_rank():
    model = AttentionStudents(1, [1, 2, 3], N, D, E, "softmax", 1.0, _gens(3))
    s = torch.linalg.svdvals(model.kernel()[0].double())
    assert [int((row > 1e-6 * row[0]).sum()) for row in s] == [1, 2, 3]


def _rung(name, seed=0):
    smoke = entropic_jobs(yaml.safe_load(CONFIG.read_text()), "smoke")[("ladder", name)]
    job = replace(smoke, experiment="t", r_star=2, n_tokens=N, d=D, e=E, init_std=0.5, positions=3)
    model = build_rung(name, job, [seed]).double()
    if name in (B1_POS, B2_POS):  # learned positions start at init scale: make them clearly distinct
        with torch.no_grad():
            model.pos.normal_(0, 1.0, generator=torch.Generator().manual_seed(seed))
    return model


@pytest.mark.parametrize("name", [B1, B2, B3, B1_POS, B2_POS])
def test_ladder_equivariance_without_positions_only(name):
    x = torch.randn(1, 3, N, D, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    perm = torch.randperm(N, generator=torch.Generator().manual_seed(6))
    model = _rung(name)
    out, out_perm = model(x), model(x[:, :, perm])
    equivariant = torch.allclose(out_perm, out[:, :, :, perm], rtol=1e-9, atol=1e-10)
    assert equivariant == (name not in (B1_POS, B2_POS))


P = 3  # the positional features _rung gives its jobs
# rung → (class, kind, ranks, scale, positions, parameter count in closed form)
RUNG_SPECS = {
    B0: (SurrogateStudents, None, [N], None, 0, 2 * N * N + D * E),  # P, Q (N × N), V (d × e)
    B1: (AttentionStudents, "linear", [D], 1.0, 0, 2 * D * D + D * E),  # W_Q, W_K, V
    B2: (AttentionStudents, "softmax", [D], 1 / math.sqrt(D), 0, 2 * D * D + D * E),
    # W_QKV, W_1, W_2, W_out, b_1, b_2, two LayerNorms (ffn 4d)
    B3: (TransformerBlockStudents, None, None, None, 0,
         3 * D * D + 2 * 4 * D * D + D * E + 4 * D + D + 4 * D),
    B1_POS: (AttentionStudents, "linear", [D + P], 1.0, P, 2 * (D + P) ** 2 + (D + P) * E + N * P),
    B2_POS: (AttentionStudents, "softmax", [D + P], 1 / math.sqrt(D), P,
             2 * (D + P) ** 2 + (D + P) * E + N * P),
}


@pytest.mark.parametrize("name", RUNGS)
def test_every_rung_builds_its_student(name):
    cls, kind, ranks, scale, positions, n_params = RUNG_SPECS[name]
    model = _rung(name)
    assert type(model) is cls
    assert sum(p.numel() for p in model.parameters()) == n_params
    if cls is AttentionStudents:
        assert (model.kind, model.ranks, model.positions) == (kind, ranks, positions)
        assert model.scale == pytest.approx(scale)
    elif cls is SurrogateStudents:
        assert model.ranks == ranks
    x = torch.randn(1, 3, N, D, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        out = model(x)
    assert out.shape == (1, 1, 3, N, E) and torch.isfinite(out).all()
    assert (out != 0).any()  # a drawn student, not a zero one


def test_b0_is_not_equivariant():
    model = _rung(B0)
    x = torch.randn(1, 3, N, D, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    perm = torch.randperm(N, generator=torch.Generator().manual_seed(3))
    assert not torch.equal(perm, torch.arange(N))
    assert not torch.allclose(model(x[:, :, perm]), model(x)[:, :, :, perm])


def test_b3_block_shapes_and_softmax_scaling():
    model = TransformerBlockStudents(2, N, D, E, 0.3, _gens(2))
    assert model(torch.randn(2, 4, N, D)).shape == (2, 1, 4, N, E)
    b2 = _rung(B2)
    assert b2.scale == pytest.approx(1 / math.sqrt(D))
