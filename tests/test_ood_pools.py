"""The B4 pools of every scale (TT-5's judged pools, the memorised pools, the pool sweep): as the
config says, within the sequence space, and disjoint where the training job draws them."""

from __future__ import annotations

from math import comb
from pathlib import Path

import pytest
import torch
import yaml

from attnrank.minip.data import JobData
from attnrank.minip.jobs import OOD, OOD_MEMORISING, OOD_POOL_SWEEP, minip_jobs

ROOT = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())
POOLED = (OOD, OOD_MEMORISING, OOD_POOL_SWEEP)


@pytest.mark.parametrize("scale", ["full", "smoke"])
def test_every_pool_is_the_configs_and_fits_the_sequence_space(scale):
    g = CONFIG["minip"]["scales"][scale]
    jobs = {k: j for k, j in minip_jobs(CONFIG, scale).items() if k[0] in POOLED}
    sweep = g[OOD_POOL_SWEEP]
    assert sorted(j.data.train_pool for (k, _), j in jobs.items() if k == OOD_POOL_SWEEP) == \
        sorted(sweep["train_pools"])
    for exp in (OOD, OOD_MEMORISING):
        for s in g[exp]["scales"]:
            job = jobs[(exp, s["name"])]
            assert (job.data.m, job.data.train_pool, job.data.test_pool) == \
                (s["m"], s["train_pool"], s["test_pool"])
            assert job.ranks == tuple(s.get("ranks", g["ranks"]))
    for job in jobs.values():
        space = comb(job.data.m, job.data.m // 2) ** 3
        assert job.data.train_pool + job.data.test_pool <= space
    if scale == "full":  # the judged pools: the largest useful one (methods.md 3.5)
        for job in (j for (k, _), j in jobs.items() if k == OOD):
            space = comb(job.data.m, job.data.m // 2) ** 3
            assert job.data.train_pool == min(space - job.data.test_pool, job.steps * job.batch)
        assert jobs[(OOD, "small")].seeds == 5 and jobs[(OOD_MEMORISING, "small")].seeds == 3


def test_the_training_job_draws_disjoint_pools_that_fill_the_space():
    """Smoke's sweep pool of 7744 at m = 6 with a test pool of 256: the whole 20^3 space, every
    sequence once, per seed; the train split evaluated is the pool's first sequences."""
    job = minip_jobs(CONFIG, "smoke")[(OOD_POOL_SWEEP, "pool7744")]
    data = JobData(job, torch.device("cpu"))
    n_vocab = data.vocab.shape[0]
    assert n_vocab == 20 and data.pool.shape == (job.seeds, 7744, 3)
    test = data.eval_sets["test"].tokens.ids

    def codes(ids):
        return set(((ids[:, 0] * n_vocab + ids[:, 1]) * n_vocab + ids[:, 2]).tolist())

    for k in range(job.seeds):
        train_codes, test_codes = codes(data.pool[k]), codes(test[k])
        assert len(train_codes) == 7744 and len(test_codes) == 256
        assert not train_codes & test_codes and len(train_codes | test_codes) == 20**3
    assert not torch.equal(data.pool[0], data.pool[1])  # each seed its own draw
