"""Small training jobs of every trainer (the smoke plan's, cut to a few steps) for the resume tests."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from attnrank.pipeline.plan import build_plan
from attnrank.publish.audit import load_config

CPU = torch.device("cpu")
STEPS = 24

# (step, wildcards of one of its smoke-plan runs) → the experiment module's entry point
CASES = {
    "minip_random": ("minip_train", {"experiment": "rank_vs_m", "instance": "m6"}),
    "minip_pools": ("minip_train", {"experiment": "ood", "instance": "small"}),
    "minip_witness": ("minip_train", {"experiment": "witness", "instance": "table"}),
    "capacity": ("minip_capacity_train", {"instance": "scratch"}),
    "restarts": ("minip_restarts_train", {}),
    "surrogate": ("entropic_surrogate_train", {"optimizer": "adam"}),
    "surrogate_gd": ("entropic_surrogate_train", {"optimizer": "gd"}),
    "ladder": ("entropic_ladder_train", {"rung": "B1_pos"}),
    "attention": ("entropic_attention_train", {"teacher": "linear"}),
    "language": ("language_train", {}),
}


def job_params(case: str) -> tuple[str, dict[str, Any]]:
    """(step, params) of the case's smoke job with STEPS steps, logged every STEPS // 4."""
    step, wildcards = CASES[case]
    plan = build_plan(load_config(Path(__file__).resolve().parents[1] / "config.yaml"), "smoke")
    run = next(r for r in plan.runs if r.step == step
               and all(r.wildcards.get(k) == v for k, v in wildcards.items()))
    p = dict(run.params)
    if step == "minip_restarts_train":
        p["train"] = dict(p["train"], steps=STEPS)
        p["log_every"] = STEPS // 4
    else:
        p.update(steps=STEPS, log_every=STEPS // 4)
        if "long_steps" in p:
            p["long_steps"] = 2 * STEPS
    return step, p


def runner(step: str) -> Callable[..., Any]:
    """The experiment function a step's CLI command calls: (params, device, checkpoint)."""
    if step == "minip_train":
        return importlib.import_module("attnrank.minip.experiments.train").run_job
    if step == "minip_capacity_train":
        return importlib.import_module("attnrank.minip.experiments.capacity").run_capacity
    if step == "minip_restarts_train":
        return importlib.import_module("attnrank.minip.experiments.restarts").run_restarts
    if step == "language_train":
        return importlib.import_module("attnrank.language.experiments.train").run_job
    exp = step.removeprefix("entropic_").removesuffix("_train")
    return importlib.import_module(f"attnrank.entropic.experiments.{exp}").run_job
