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
    minip = {"minip_train": ("train", "run_job", "MinipTrainJob"),
             "minip_capacity_train": ("capacity", "run_capacity", "MinipCapacityJob"),
             "minip_restarts_train": ("restarts", "run_restarts", "MinipRestartsJob")}
    if step in minip:  # typed: the job from its params
        module, fn, job = minip[step]
        run = getattr(importlib.import_module(f"attnrank.minip.experiments.{module}"), fn)
        job_cls = getattr(importlib.import_module("attnrank.minip.jobs"), job)
        return lambda params, *rest: run(job_cls.from_dict(params), *rest)
    if step == "language_train":  # typed: the job from its params
        from attnrank.language.jobs import LanguageTrainJob

        run_job = importlib.import_module("attnrank.language.experiments.train").run_job
        return lambda params, *rest: run_job(LanguageTrainJob.from_dict(params), *rest)
    exp = step.removeprefix("entropic_").removesuffix("_train")  # typed: the job from its params
    run_entropic = importlib.import_module(f"attnrank.entropic.experiments.{exp}").run_job
    entropic_job = importlib.import_module("attnrank.entropic.jobs").TRAIN_JOBS[exp]
    return lambda params, *rest: run_entropic(entropic_job.from_dict(params), *rest)
