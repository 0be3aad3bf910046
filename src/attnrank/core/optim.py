"""The trainer's optimizers, without ``torch.optim.Optimizer``: the same updates, no start-up cost.

Every ``torch.optim.Optimizer`` imports ``torch._dynamo`` the first time it adds a parameter group
or steps (1.0–1.4 s a process on the CPUs measured, about a third of a smoke training job's wall
time), compiled or not. These classes call the very functions ``torch.optim`` steps with, so a
model follows the same trajectory to the bit (tests/test_optim.py holds them against
``torch.optim`` with ``LambdaLR``):

    Adam (fused):  m ← β₁ m + (1 − β₁) g,  v ← β₂ v + (1 − β₂) g²,  t ← t + 1,
                   θ ← θ − lr · (m / (1 − β₁ᵗ)) / (√(v / (1 − β₂ᵗ)) + ε)     (``torch.optim.adam.adam``)
    GD:            θ ← θ − lr · g                                          (``Tensor.add_``)

with lr the step's learning rate, passed to ``step``. A parameter without a gradient is skipped
and its state is made at its first gradient, as in ``torch.optim``. ``step_hooks`` are called
around every step of every optimizer of this module (``hook(optimizer)``), for code that adjusts
what a step did (``minip.experiments.restarts``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.optim.adam import adam

BETAS = (0.9, 0.999)  # torch.optim.Adam's defaults
EPS = 1e-8

Hook = Callable[["Optimizer"], None]
_PRE: list[Hook] = []
_POST: list[Hook] = []


class HookHandle:
    """Removes a hook registered with ``step_hooks``."""

    def __init__(self, hooks: list[Hook], hook: Hook) -> None:
        self._hooks, self._hook = hooks, hook

    def remove(self) -> None:
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


def step_hooks(pre: Hook, post: Hook) -> tuple[HookHandle, HookHandle]:
    """Call ``pre(opt)`` before and ``post(opt)`` after every step of every optimizer here."""
    _PRE.append(pre)
    _POST.append(post)
    return HookHandle(_PRE, pre), HookHandle(_POST, post)


class Optimizer:
    """What both optimizers share: their parameters, ``zero_grad`` and the hooks around ``step``."""

    def __init__(self, params: Sequence[torch.nn.Parameter]) -> None:
        self.params = list(params)
        if not self.params:
            raise ValueError("an optimizer needs at least one parameter")

    def zero_grad(self) -> None:
        """Drop every gradient (``set_to_none``, as ``torch.optim``'s default)."""
        for p in self.params:
            p.grad = None

    def step(self, lr: float) -> None:
        """One update at learning rate ``lr`` of every parameter that has a gradient."""
        for hook in list(_PRE):
            hook(self)
        with torch.no_grad():
            self._update([p for p in self.params if p.grad is not None], float(lr))
        for hook in list(_POST):
            hook(self)

    def _update(self, params: list[torch.nn.Parameter], lr: float) -> None:
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore ``state_dict``'s values (a checkpoint of the same parameters)."""


class GD(Optimizer):
    """Plain gradient descent: θ ← θ − lr·g (``torch.optim.SGD`` without momentum or decay)."""

    def _update(self, params: list[torch.nn.Parameter], lr: float) -> None:
        for p in params:
            p.add_(p.grad, alpha=-lr)


class Adam(Optimizer):
    """Adam with torch's defaults (β = (0.9, 0.999), ε = 1e-8, no weight decay), fused kernel:
    ``torch.optim.Adam(params, lr, fused=True)`` to the bit. State per parameter: the step count t
    (a float32 scalar on the parameter's device, as torch's fused path keeps it), m and v."""

    def __init__(self, params: Sequence[torch.nn.Parameter]) -> None:
        super().__init__(params)
        self.state: dict[int, dict[str, torch.Tensor]] = {}

    def _state(self, i: int, p: torch.nn.Parameter) -> dict[str, torch.Tensor]:
        if i not in self.state:
            self.state[i] = {"step": torch.zeros((), dtype=torch.float32, device=p.device),
                             "exp_avg": torch.zeros_like(p, memory_format=torch.preserve_format),
                             "exp_avg_sq": torch.zeros_like(p,
                                                            memory_format=torch.preserve_format)}
        return self.state[i]

    def _update(self, params: list[torch.nn.Parameter], lr: float) -> None:
        index = {id(p): i for i, p in enumerate(self.params)}
        states = [self._state(index[id(p)], p) for p in params]
        if not params:
            return
        adam(params, [p.grad for p in params], [s["exp_avg"] for s in states],
             [s["exp_avg_sq"] for s in states], [], [s["step"] for s in states],
             amsgrad=False, has_complex=any(torch.is_complex(p) for p in params),
             beta1=BETAS[0], beta2=BETAS[1], lr=lr, weight_decay=0.0, eps=EPS, maximize=False,
             foreach=None, capturable=False, differentiable=False, fused=True,
             grad_scale=None, found_inf=None, decoupled_weight_decay=False)

    def state_dict(self) -> dict[str, Any]:
        """The state of each parameter that has one, by its index in ``params``."""
        return {"state": {i: dict(s) for i, s in self.state.items()}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        saved = state["state"]
        bad = [i for i in saved if not 0 <= int(i) < len(self.params)
               or saved[i]["exp_avg"].shape != self.params[int(i)].shape]
        if bad:
            raise ValueError(f"optimizer state does not fit these parameters (indices {bad})")
        self.state = {int(i): {k: v.to(self.params[int(i)].device).clone() for k, v in s.items()}
                      for i, s in saved.items()}


def make(kind: str, params: Sequence[torch.nn.Parameter]) -> Optimizer:
    """``adam`` or ``gd`` over ``params``."""
    if kind == "adam":
        return Adam(params)
    if kind == "gd":
        return GD(params)
    raise ValueError(f"optimizer must be 'adam' or 'gd', got {kind!r}")
