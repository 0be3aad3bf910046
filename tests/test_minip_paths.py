"""The Min-IP speed paths compute the same function as the equations: the feature-major direct
path and the vocabulary path against a per-sequence reference written from the model docstring,
grouped training against each group trained alone, and id batches against bit batches."""

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from torch.nn import functional as F

from attnrank.core.train import TrainConfig, train
from attnrank.minip.data import JobData, batch_layout, bits_batch, id_batch
from attnrank.minip.evaluate import mse
from attnrank.minip.experiments.train import run_job
from attnrank.minip.jobs import MinipTrainJob, WitnessData, minip_jobs
from attnrank.minip.models import (
    GATHERED,
    PAIR_TABLES,
    DenseAttention,
    KernelAttention,
    TokenIds,
    forward_bits,
)
from attnrank.minip.program import GroupedHeads
from attnrank.minip.task import minip_targets, token_ids, token_vocab, witness_family
from attnrank.pipeline import plan as plan_module
from attnrank.publish.audit import load_config

VOCAB = token_vocab(8, "fixed_weight")


def reference_forward(model, bits):
    """ŷ_i = ⟨W_A x_i + b_A, Σ_j π_ij (W_V x_j + b_V)⟩ + w_c·x_i + c₀ per sequence, (M, B, N)."""
    m = model.m
    lin_map = lambda w, b: torch.einsum("koi,kbni->kbno", w, bits) + b[:, None, None]  # noqa: E731
    if isinstance(model, KernelAttention):
        if model.feature_map == "mlp":
            h = F.gelu(lin_map(model.w1, model.b1))
            a = torch.einsum("koi,kbni->kbno", model.w2, h) + model.b2[:, None, None]
        else:
            rows = model.token_rows(bits)
            a = torch.stack([model.table[k][rows[k]] for k in range(bits.shape[0])])
        phi_q, phi_k = a[..., :model.rank], a[..., model.rank:]
        if model.feature == "exp":
            phi_q, phi_k = phi_q.double().exp(), phi_k.double().exp()
        else:
            phi_q, phi_k = F.softplus(phi_q.double()), F.softplus(phi_k.double())
        alpha = phi_q @ phi_k.transpose(-1, -2)
        pi = (alpha / alpha.sum(-1, keepdim=True)).float()
    else:
        q = lin_map(model.w_q, model.b_q)
        k = torch.einsum("koi,kbni->kbno", model.w_k, bits)
        pi = torch.softmax(q @ k.transpose(-1, -2), dim=-1)
    p = lin_map(model.w_out, model.b_out)
    v, q_read, lin = p[..., :m], p[..., m:2 * m], p[..., 2 * m]
    return (q_read * (pi @ v)).sum(-1) + lin


FAMILIES = [("table", "exp"), ("mlp", "exp"), ("table", "softplus"), ("mlp", "softplus"),
            ("dense", None)]


def make(kind, feature, seeds=(0, 1, 2), rank=4, vocab=VOCAB):
    gens = [torch.Generator().manual_seed(s) for s in seeds]
    if kind == "dense":
        return DenseAttention(vocab.shape[1], gens)
    return KernelAttention(vocab.shape[1], rank, gens, feature_map=kind, vocab=vocab,
                           feature=feature)


@pytest.mark.parametrize("kind,feature", FAMILIES)
def test_both_paths_equal_the_equations(kind, feature):
    model = make(kind, feature)
    with torch.no_grad():  # move the table/biases off their init so every term matters
        for p in model.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=torch.Generator().manual_seed(7)))
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, VOCAB.shape[0], (3, 40, 3), generator=g)
    bits = VOCAB[ids]
    with torch.no_grad():
        ref = reference_forward(model, bits)
        direct = model(bits)
        pair_tables = model.forward_tokens(TokenIds(ids, VOCAB, PAIR_TABLES))
        gathered = model.forward_tokens(TokenIds(ids, VOCAB, GATHERED))
    assert direct.shape == pair_tables.shape == gathered.shape == (3, 40, 3)
    assert torch.allclose(direct, ref, atol=1e-5)
    assert torch.allclose(pair_tables, ref, atol=1e-5)
    assert torch.allclose(gathered, ref, atol=1e-5)
    assert ref.abs().max() > 0.1  # a non-trivial function


@pytest.mark.parametrize("kind,feature", FAMILIES)
def test_vocab_path_gradients_equal_direct_path(kind, feature):
    g = torch.Generator().manual_seed(2)
    ids = torch.randint(0, VOCAB.shape[0], (3, 64, 3), generator=g)
    grads = []
    for layout in (PAIR_TABLES, GATHERED, None):
        batch = id_batch(ids, VOCAB, layout)
        model = make(kind, feature)
        mse(model, batch).sum().backward()
        grads.append([p.grad.clone() for p in model.parameters()])
    for other in grads[1:]:
        for a, b in zip(grads[0], other, strict=True):
            assert torch.allclose(a, b, atol=1e-5, rtol=1e-4)


def test_heads_run_together_as_each_alone():
    """forward_bits shares the readouts, the mlp first layers and the mix across heads of every
    kind: each head's rows are its own function (the equations) and its own gradients."""
    factories = [lambda: make("table", "exp", rank=2), lambda: make("mlp", "exp", rank=3),
                 lambda: make("mlp", "softplus", rank=5), lambda: make("dense", None)]
    heads = [f() for f in factories]
    with torch.no_grad():
        for i, head in enumerate(heads):
            for p in head.parameters():
                p.add_(0.3 * torch.randn(p.shape, generator=torch.Generator().manual_seed(i)))
    bits = VOCAB[torch.randint(0, VOCAB.shape[0], (3, 50, 3),
                               generator=torch.Generator().manual_seed(5))]
    targets = minip_targets(bits)
    together = forward_bits(heads, bits)
    assert together.shape == (len(heads) * 3, 50, 3)
    ((together.view(len(heads), 3, 50, 3) - targets) ** 2).mean(dim=(2, 3)).sum().backward()
    for g, head in enumerate(heads):
        with torch.no_grad():
            assert torch.allclose(together[g * 3:(g + 1) * 3], reference_forward(head, bits),
                                  atol=1e-5)
        alone = factories[g]()
        alone.load_state_dict(head.state_dict())
        ((alone(bits) - targets) ** 2).mean(dim=(1, 2)).sum().backward()
        for pa, pb in zip(head.parameters(), alone.parameters(), strict=True):
            assert torch.allclose(pa.grad, pb.grad, atol=1e-6, rtol=1e-4)


def test_id_batches_have_the_bit_batches_targets():
    ids = torch.randint(0, VOCAB.shape[0], (2, 100, 3), generator=torch.Generator().manual_seed(3))
    a, b = id_batch(ids, VOCAB, PAIR_TABLES), id_batch(ids, VOCAB, None)
    assert torch.equal(a.targets, b.targets)
    assert torch.equal(b.targets, minip_targets(VOCAB[ids]))
    assert torch.equal(a.tokens.ids, ids) and torch.equal(b.tokens, VOCAB[ids])


def test_token_ids_round_trip_and_refuse_unknown_tokens():
    fam = witness_family(3, 2)
    vocab = torch.unique(fam.reshape(-1, 6), dim=0)  # not in code order
    assert torch.equal(vocab[token_ids(fam, vocab)], fam)
    with pytest.raises(ValueError, match="not in the vocabulary"):
        token_ids(torch.ones(1, 6), vocab)


def test_batch_layout_choice():
    assert batch_layout(16, 1536, 3) == PAIR_TABLES  # the witness suite
    assert batch_layout(70, 512, 3) == PAIR_TABLES  # m = 8 random tokens
    assert batch_layout(70, 512, 2) == PAIR_TABLES  # m = 8, N = 2 (the length sweep)
    assert batch_layout(70, 512, 1) == GATHERED  # N = 1: 70 tokens against 512
    assert batch_layout(252, 512, 3) == GATHERED  # m = 10
    assert batch_layout(924, 512, 3) == GATHERED  # m = 12: 924 tokens against 1536
    assert batch_layout(3432, 512, 3) is None  # m = 14: bits
    assert batch_layout(None, 512, 3) is None  # m = 24: no enumerated vocabulary


@pytest.mark.parametrize("layout", [PAIR_TABLES, GATHERED, None])
def test_grouped_training_equals_each_group_alone(layout):
    """Groups share no parameters: training them as one program changes nothing but rounding
    (every batch layout)."""
    g = torch.Generator().manual_seed(4)
    stream = [torch.randint(0, VOCAB.shape[0], (2, 64, 3), generator=g) for _ in range(30)]
    cfg = TrainConfig(steps=30, lr=1e-2, warmup=0.1, log_every=10)

    def fit(heads):
        model = GroupedHeads(heads)
        train(model, lambda step: id_batch(stream[step], VOCAB, layout), lambda m, b: m.loss(b),
              cfg)
        return model

    factories = {"kernel-r2": lambda: make("table", "exp", (0, 1), rank=2),
                 "kernel-r3": lambda: make("mlp", "exp", (0, 1), rank=3),
                 "dense": lambda: make("dense", None, (0, 1))}
    together = fit({tag: f() for tag, f in factories.items()})
    for head, (tag, f) in zip(together.heads, factories.items(), strict=True):
        alone = fit({tag: f()}).heads[0]
        for (name, pa), (_, pb) in zip(head.named_parameters(), alone.named_parameters(),
                                       strict=True):
            assert torch.allclose(pa, pb, atol=1e-6), (tag, name)
        fresh = f()
        assert max(float((a - b).detach().abs().max()) for a, b in
                   zip(head.parameters(), fresh.parameters(), strict=True)) > 1e-2


def test_job_data_streams_the_same_tokens_on_either_path():
    """The witness job (vocabulary path) trains on exactly the witness family."""
    job = MinipTrainJob(experiment="t", instance="x", seeds=2, seed_offset=0, lr=0.01,
                        warmup=0.05, log_every=10, hidden=8, feature="exp", eval_sequences=16,
                        batch=0, steps=10, compile=False, ranks=(1,), dense=True, feature_map="table",
                        data=WitnessData("witness", 3, 2))
    data = JobData(job, torch.device("cpu"))
    assert data.layout == PAIR_TABLES
    batch = data.batch_fn()(0)
    fam = witness_family(3, 2)
    assert torch.equal(batch.tokens.vocab[batch.tokens.ids], fam.expand(2, *fam.shape))
    assert torch.equal(batch.targets, minip_targets(fam).expand(2, -1, -1))
    assert torch.equal(bits_batch(fam[None]).targets[0], batch.targets[0])


def test_a_cut_training_job_trains_as_the_whole_job_bit_for_bit(monkeypatch):
    """The plan's cut of a minip_train job (``TRAIN_CUTS``) changes no number: the parts' rows,
    one after the other, and their weights are the whole job's, to the bit."""
    config = load_config(Path(__file__).resolve().parents[1] / "config.yaml")
    full = plan_module.build_plan(config, "full")
    ood = [r.wildcards["instance"] for r in full.runs
           if r.step == "minip_train" and r.wildcards["experiment"] == "ood"]
    assert ood == ["small", "medium", "large_r1_32", "large_r64_128_dense"]
    assert full.run_for("tables/minip_ood.parquet").inputs == tuple(
        f"minip/train/ood/{i}/metrics.parquet" for i in ood)
    monkeypatch.setitem(plan_module.TRAIN_CUTS, ("ood", "medium"), 16)
    job = minip_jobs(config, "smoke")[("ood", "medium")]
    job = replace(job, steps=4, log_every=2, eval_sequences=256)
    parts = plan_module.train_parts("ood", "medium", job)
    assert list(parts) == ["medium_r1_4", "medium_r16_32_dense"]
    assert parts["medium_r1_4"] == replace(job, ranks=(1, 4), dense=False)
    assert plan_module.train_parts("ood", "small", job) == {"small": job}
    metrics, weights = run_job(job, torch.device("cpu"))
    rows, kept = [], {}
    for part in parts.values():
        m, w = run_job(part, torch.device("cpu"))
        rows.append(m)
        kept |= w
    pd.testing.assert_frame_equal(pd.concat(rows, ignore_index=True), metrics, check_exact=True)
    assert set(kept) == set(weights)
    for key, value in weights.items():
        assert np.array_equal(kept[key], value), key
