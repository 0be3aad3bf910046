"""The fast paths of the attention students (``AttentionStudents.sse``: chunked mixer path with
the gradient computed per chunk, and the statistics path of the linear kind) against the direct
computation: the squared errors of ``mix_forward`` and autograd's gradient of them."""

import numpy as np
import pytest
import torch

from attnrank.entropic.experiments.common import chunked_errors, chunked_mse
from attnrank.entropic.models.attention import AttentionStudents, _linear_stats_sse

N, D, E = 10, 4, 3


def _model(kind, ranks, positions=0, n_inst=3, seed=0):
    gens = [torch.Generator().manual_seed(seed + k) for k in range(n_inst * len(ranks))]
    m = AttentionStudents(n_inst, ranks, N, D, E, kind, 0.5, gens, scale=0.7,
                          positions=positions).double()
    if positions:  # learned positions start at init scale: make them matter
        with torch.no_grad():
            m.pos.normal_(0, 1.0, generator=torch.Generator().manual_seed(seed))
    return m


def _direct(m, x, y, w):
    """SSE per student through the explicit mixer and autograd's gradient of Σ w ⊙ SSE."""
    m.zero_grad()
    sse = ((m.mix_forward(x) - y[:, None]) ** 2).sum(dim=(2, 3, 4))
    (sse * w).sum().backward()
    return sse.detach(), [p.grad.clone() for p in m.parameters()]


@pytest.mark.parametrize("kind,positions,ranks", [("softmax", 0, [1, 2, D]), ("linear", 0, [1, 3, D]),
                                                  ("softmax", 3, [D + 3]), ("linear", 3, [5])])
@pytest.mark.parametrize("chunk", [0, 1, 3])
def test_sse_and_its_gradient_equal_the_direct_computation(kind, positions, ranks, chunk):
    g = torch.Generator().manual_seed(1)
    m = _model(kind, ranks, positions)
    x = torch.randn(3, 7, N, D, dtype=torch.float64, generator=g)
    y, y2 = (torch.randn(3, 7, N, E, dtype=torch.float64, generator=g) for _ in range(2))
    w = torch.rand(3, len(ranks), dtype=torch.float64, generator=g)  # per-student loss weights
    ref, ref_grads = _direct(m, x, y, w)
    m.zero_grad()
    sse = m.sse(x, [y], chunk)[0]
    (sse * w).sum().backward()
    assert torch.allclose(sse, ref, rtol=1e-10)
    for p, r in zip(m.parameters(), ref_grads, strict=True):
        assert torch.allclose(p.grad, r, rtol=1e-9, atol=1e-12)
    with torch.no_grad():  # evaluation: several targets, no gradient
        ev = m.sse(x, [y, y2], chunk)
        ref2 = ((m.mix_forward(x) - y2[:, None]) ** 2).sum(dim=(2, 3, 4))
    assert torch.allclose(ev[0], ref, rtol=1e-10) and torch.allclose(ev[1], ref2, rtol=1e-10)


@pytest.mark.parametrize("chunk", [1, 2, 7])
def test_linear_statistics_path_in_chunks(chunk):
    g = torch.Generator().manual_seed(2)
    m = _model("linear", [1, 2, D])
    x = torch.randn(3, 7, N, D, dtype=torch.float64, generator=g)
    y = torch.randn(3, 7, N, E, dtype=torch.float64, generator=g)
    k = (m.scale * m.kernel()).detach()
    v = m.v.detach()
    (sse,), (dk, dv) = _linear_stats_sse(k, v, x, [y], True, chunk)
    kk, vv = k.clone().requires_grad_(), v.clone().requires_grad_()
    pred = x[:, None] @ kk[:, :, None] @ (x.transpose(-1, -2) @ x)[:, None] @ vv[:, :, None]  # XKGV
    ref = ((pred - y[:, None]) ** 2).sum(dim=(2, 3, 4))
    ref.sum().backward()
    assert torch.allclose(sse, ref.detach(), rtol=1e-10)
    assert torch.allclose(dk, kk.grad, rtol=1e-9) and torch.allclose(dv, vv.grad, rtol=1e-9)
    (ev,), _ = _linear_stats_sse(k, v, x, [y], False, chunk)
    assert torch.allclose(ev, ref.detach(), rtol=1e-10)


@pytest.mark.parametrize("kind", ["softmax", "linear"])
def test_float32_fast_path_matches_the_float64_reference(kind):
    """The training loss in float32 (the recipe's precision) against the float64 direct one."""
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((3, 16, N, D)), rng.standard_normal((3, 16, N, E))
    m = _model(kind, [1, 2, D])
    with torch.no_grad():
        ref = ((m.mix_forward(torch.tensor(x)) - torch.tensor(y)[:, None]) ** 2).mean(dim=(2, 3, 4))
    m32 = m.float()
    x32, y32 = torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)
    loss = chunked_mse(m32, x32, y32, 0)
    exc, mse = chunked_errors(m32, x32, y32, y32)
    assert torch.allclose(loss.double(), ref.reshape(-1), rtol=1e-5)
    assert torch.allclose(exc.double(), ref.reshape(-1), rtol=1e-5) and torch.equal(exc, mse)


def test_positions_gradient_needs_one_student_per_instance():
    m = _model("softmax", [1, 2])
    x = torch.randn(3, 2, N, D, dtype=torch.float64, requires_grad=True)
    kcat = (m.kernel()).permute(0, 2, 1, 3).reshape(3, D, 2 * D)
    from attnrank.entropic.models.attention import _mixer_sse

    with pytest.raises(ValueError, match="one student per instance"):
        _mixer_sse(kcat, m.v, x, [torch.zeros(3, 2, N, E, dtype=torch.float64)], 1, True, True)
