"""The pairwise reductions of Min-IP attention (minip.pairs), eager and compiled, against direct
float64 formulas; compiled training against eager training."""

from __future__ import annotations

import pytest
import torch

from attnrank.core import compile as core_compile
from attnrank.minip.pairs import pair_inner, pair_kernels, pair_logsumexp

needs_compiler = pytest.mark.skipif(core_compile.cxx_compiler() is None,
                                    reason="no C++ compiler: torch.compile cannot run here")


def adversarial(shape: tuple[int, ...], seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Pre-activations with |a| up to 80 whose maxima over the features sit on disjoint features
    for queries and keys: a naive exp-sum-log overflows or underflows, a max-shifted one does
    not."""
    g = torch.Generator().manual_seed(seed)
    a_q = (torch.rand(shape, generator=g) * 160 - 80)
    a_k = (torch.rand(shape, generator=g) * 160 - 80)
    r = shape[-3]
    a_q[..., : r // 2, :, :] += 60  # queries peak on the first half of the features …
    a_k[..., r // 2:, :, :] += 60  # … keys on the second
    return a_q.clamp(-80, 80), a_k.clamp(-80, 80)


def direct_logsumexp(a_q: torch.Tensor, a_k: torch.Tensor) -> torch.Tensor:
    """s_ij = log Σ_f exp(a_q[f, i] + a_k[f, j]), one (i, j) at a time, float64 and max-shifted."""
    a_q, a_k = a_q.double(), a_k.double()
    n = a_q.shape[-2]
    out = torch.empty(*a_q.shape[:-3], n, n, a_q.shape[-1], dtype=torch.float64)
    for i in range(n):
        for j in range(n):
            z = a_q[..., :, i, :] + a_k[..., :, j, :]  # (..., R, B)
            top = z.amax(-2, keepdim=True)
            out[..., i, j, :] = (top + (z - top).exp().sum(-2, keepdim=True).log())[..., 0, :]
    return out


@pytest.mark.parametrize("compile_pairs", [False, pytest.param(True, marks=needs_compiler)])
@pytest.mark.parametrize("shape", [(2, 5, 3, 7), (2, 3, 1, 3, 16), (1, 2, 4, 2, 9)])
def test_pair_logsumexp_equals_the_direct_formula(compile_pairs, shape):
    """Values and gradients of both forms on adversarial pre-activations (every rank, with and
    without a group axis, N = 3 and 2)."""
    fn = pair_kernels(compile_pairs).logsumexp
    a_q, a_k = adversarial(shape, 0)
    ref = direct_logsumexp(a_q, a_k)
    q, k = a_q.clone().requires_grad_(), a_k.clone().requires_grad_()
    got = fn(q, k)
    assert got.shape == ref.shape
    assert torch.isfinite(got).all()
    torch.testing.assert_close(got.double(), ref, rtol=1e-6, atol=1e-4)
    weights = torch.randn(got.shape, generator=torch.Generator().manual_seed(1))
    (got * weights).sum().backward()
    qd, kd = a_q.double().requires_grad_(), a_k.double().requires_grad_()
    (direct_logsumexp(qd, kd) * weights.double()).sum().backward()
    torch.testing.assert_close(q.grad.double(), qd.grad, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(k.grad.double(), kd.grad, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("compile_pairs", [False, pytest.param(True, marks=needs_compiler)])
def test_pair_inner_equals_einsum_with_broadcast_groups(compile_pairs):
    """r_ij = Σ_c q_c(x_i) v_c(x_j), one query against G value heads (broadcast) and gradients."""
    fn = pair_kernels(compile_pairs).inner
    g = torch.Generator().manual_seed(2)
    q = torch.randn(2, 1, 6, 3, 11, generator=g, requires_grad=True)
    v = torch.randn(2, 4, 6, 3, 11, generator=g, requires_grad=True)
    got = fn(q, v)
    ref = torch.einsum("mgcib,mhcjb->mhijb", q.double(), v.double())
    torch.testing.assert_close(got.double(), ref, rtol=1e-5, atol=1e-5)
    got.sum().backward()
    qd, vd = q.detach().double().requires_grad_(), v.detach().double().requires_grad_()
    torch.einsum("mgcib,mhcjb->mhijb", qd, vd).sum().backward()
    torch.testing.assert_close(q.grad.double(), qd.grad, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(v.grad.double(), vd.grad, rtol=1e-5, atol=1e-5)


def test_eager_forms_are_the_plain_functions():
    assert pair_kernels(False) == (pair_logsumexp, pair_inner)


def test_no_compiler_runs_eagerly_with_a_notice(monkeypatch, caplog):
    """Without a C++ compiler ``compiled`` hands back the function itself and says so once."""
    monkeypatch.setattr(core_compile, "cxx_compiler", lambda: None)
    core_compile._configure.cache_clear()
    try:
        with caplog.at_level("WARNING", logger="attnrank.core.compile"):
            assert core_compile.compiled(pair_inner) is pair_inner
        assert "no C++ compiler" in caplog.text
    finally:
        core_compile._configure.cache_clear()


@needs_compiler
def test_compiled_training_follows_the_eager_trajectory():
    """A small job trained with compiled reductions follows the eager one to float tolerance (the
    same equations; only the order of float operations differs)."""
    from attnrank.minip.experiments.train import run_job
    from attnrank.minip.jobs import MinipTrainJob

    params = {"experiment": "t", "instance": "x", "seeds": 2, "seed_offset": 0, "lr": 0.01,
              "warmup": 0.1, "log_every": 10, "hidden": 8, "feature": "exp", "eval_sequences": 64,
              "batch": 32, "steps": 20, "ranks": [1, 4], "dense": True, "feature_map": "mlp",
              "data": {"kind": "random", "n_tokens": 3, "m": 10, "tokens": "fixed_weight"}}
    eager, w_eager = run_job(MinipTrainJob.from_dict(params | {"compile": False}),
                             torch.device("cpu"))
    fast, w_fast = run_job(MinipTrainJob.from_dict(params | {"compile": True}),
                           torch.device("cpu"))
    assert list(eager.columns) == list(fast.columns) and len(eager) == len(fast)
    torch.testing.assert_close(torch.tensor(fast["train_loss"].to_numpy()),
                               torch.tensor(eager["train_loss"].to_numpy()), rtol=1e-4, atol=1e-5)
    for key, value in w_eager.items():
        torch.testing.assert_close(torch.from_numpy(w_fast[key]), torch.from_numpy(value),
                                   rtol=1e-3, atol=1e-4)
