"""attnrank.core.optim: torch.optim's updates to the bit, without importing torch._dynamo."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from attnrank.core import optim
from attnrank.core.train import TrainConfig


def _params(seed: int = 0) -> list[torch.nn.Parameter]:
    g = torch.Generator().manual_seed(seed)
    return [torch.nn.Parameter(torch.randn(3, 4, 5, generator=g)),
            torch.nn.Parameter(torch.randn(7, generator=g)),
            torch.nn.Parameter(torch.randn(2, 2, generator=g))]  # no gradient in even steps


def _loss(params: list[torch.nn.Parameter], step: int) -> torch.Tensor:
    a, b, c = params
    # large and small curvature, so bias corrections and ε both matter
    loss = (a ** 3).sum() * 1e-3 + torch.exp(b).sum() + (a.sum() * b.sum()) ** 2
    return loss + (c ** 2).sum() if step % 2 else loss


def _torch_run(kind: str, cfg: TrainConfig, steps: int) -> list[torch.Tensor]:
    params = _params()
    opt = (torch.optim.Adam(params, lr=cfg.lr, fused=True) if kind == "adam"
           else torch.optim.SGD(params, lr=cfg.lr))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, cfg.lr_factor)
    for step in range(steps):
        opt.zero_grad(set_to_none=True)
        _loss(params, step).backward()
        opt.step()
        sched.step()
    return [p.detach().clone() for p in params]


def _our_run(kind: str, cfg: TrainConfig, steps: int, split: int | None = None
             ) -> list[torch.Tensor]:
    params = _params()
    opt = optim.make(kind, params)
    saved: dict = {}
    for step in range(steps):
        if step == split:  # a checkpoint: a new optimizer from the saved state
            opt = optim.make(kind, params)
            opt.load_state_dict(saved)
        opt.zero_grad()
        _loss(params, step).backward()
        opt.step(cfg.lr * cfg.lr_factor(step))
        if split is not None and step == split - 1:
            saved = opt.state_dict()
    return [p.detach().clone() for p in params]


@pytest.mark.parametrize("kind", ["adam", "gd"])
def test_updates_are_torch_optims_to_the_bit(kind: str) -> None:
    cfg = TrainConfig(steps=40, lr=0.05 if kind == "adam" else 1e-3, warmup=0.1)
    theirs = _torch_run(kind, cfg, cfg.steps)
    ours = _our_run(kind, cfg, cfg.steps)
    assert all(torch.equal(a, b) for a, b in zip(theirs, ours, strict=True))
    assert not torch.equal(ours[0], _params()[0])  # they moved


def test_a_resumed_state_continues_the_same_trajectory() -> None:
    cfg = TrainConfig(steps=30, lr=0.05)
    straight = _our_run("adam", cfg, cfg.steps)
    resumed = _our_run("adam", cfg, cfg.steps, split=13)
    assert all(torch.equal(a, b) for a, b in zip(straight, resumed, strict=True))


def test_a_state_of_other_parameters_is_refused() -> None:
    opt = optim.Adam(_params())
    _loss(opt.params, 1).backward()
    opt.step(0.1)
    other = optim.Adam([torch.nn.Parameter(torch.zeros(5))])
    with pytest.raises(ValueError, match="does not fit"):
        other.load_state_dict(opt.state_dict())


def test_step_hooks_run_around_every_step_until_removed() -> None:
    calls: list[tuple[str, int]] = []
    opt = optim.GD(_params())
    handles = optim.step_hooks(lambda o: calls.append(("pre", id(o))),
                               lambda o: calls.append(("post", id(o))))
    _loss(opt.params, 0).backward()
    opt.step(0.1)
    for h in handles:
        h.remove()
    opt.step(0.1)
    assert calls == [("pre", id(opt)), ("post", id(opt))]


def test_no_parameters_is_an_error() -> None:
    with pytest.raises(ValueError, match="at least one parameter"):
        optim.Adam([])
    with pytest.raises(ValueError, match="'adam' or 'gd'"):
        optim.make("sgd", _params())


def test_stepping_never_imports_dynamo() -> None:
    """The point of the module: torch.optim's optimizers import torch._dynamo (≈ 1 s) on their
    first step; these do not (a fresh interpreter, so nothing else imported it first)."""
    code = ("import sys, torch\n"
            "from attnrank.core import optim\n"
            "p = torch.nn.Parameter(torch.ones(3))\n"
            "for kind in ('adam', 'gd'):\n"
            "    o = optim.make(kind, [p]); (p ** 2).sum().backward(); o.step(0.1); o.zero_grad()\n"
            "    o.load_state_dict(o.state_dict())\n"
            "print('torch._dynamo' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
