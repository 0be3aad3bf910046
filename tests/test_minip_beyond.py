"""The Min-IP families beyond the single head (SPEC B6, TT-7): reductions to the single head,
the mixing weights of each family, the two layouts, the causal final-query loss, vectorized
training, the growth table and the config."""

import copy
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from torch.nn import functional as F

from attnrank.core.train import TrainConfig, train
from attnrank.minip.beyond.families import BeyondGroup, family_groups
from attnrank.minip.beyond.growth import B2_LINE, growth_table
from attnrank.minip.beyond.jobs import (
    BEYOND_GROWTH,
    BeyondGrowthJob,
    beyond_config_problems,
    beyond_jobs,
    family_parts,
)
from attnrank.minip.beyond.models import BeyondKernel
from attnrank.minip.data import JobData, MinIPBatch, bits_batch, id_batch
from attnrank.minip.experiments.beyond import BeyondHeads, answered, build_heads, run_job
from attnrank.minip.jobs import minip_jobs
from attnrank.minip.models import GATHERED, PAIR_TABLES, HeadOptions, KernelAttention, TokenIds
from attnrank.minip.task import token_ids, token_vocab, witness_family
from attnrank.pipeline.plan import beyond_parts, build_plan
from attnrank.pipeline.registry import STEPS

ROOT = Path(__file__).resolve().parents[1]
M_BITS, N_TOKENS, HIDDEN = 6, 3, 16
VOCAB = token_vocab(M_BITS, "bernoulli")  # (64, 6)
FEATURE_MAPS = ("table", "mlp")
# (family, F, H) of every family, F = 8
FAMILIES = [("kernel", 8, 1), ("multihead", 8, 2), ("differential", 8, 1),
            ("signed_linear", 8, 1), ("positional", 8, 1), ("causal_final", 8, 1)]


def gens(seeds=(1, 2)):
    return [torch.Generator().manual_seed(s) for s in seeds]


def options(feature_map, vocab=VOCAB):
    return HeadOptions(feature_map, HIDDEN, "exp", vocab)


def beyond(family, budget, feature_map, heads=1, seeds=(1, 2), eps=1e-3, vocab=VOCAB,
           n_tokens=N_TOKENS):
    m = vocab.shape[1]
    return BeyondKernel(BeyondGroup(family, budget, heads), m, n_tokens, gens(seeds),
                        options(feature_map, vocab), eps)


def plain(rank, feature_map, seeds=(1, 2), vocab=VOCAB):
    return KernelAttention(vocab.shape[1], rank, gens(seeds), feature_map=feature_map,
                           vocab=vocab, hidden=HIDDEN)


def random_ids(n_models=2, bsz=32, seed=7, vocab=VOCAB, n_tokens=N_TOKENS):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab.shape[0], (n_models, bsz, n_tokens), generator=g)


def first_group_columns(rank, n_groups):
    """Columns of the first of ``n_groups`` feature groups in a [a_Q (F) | a_K (F)] layout."""
    size = rank // n_groups
    return list(range(size)) + list(range(rank, rank + size))


def copy_first_group(src, dst, n_groups):
    """dst (a plain head of rank F/G) takes src's (rank F) first feature group and readout."""
    cols = first_group_columns(src.rank, n_groups)
    with torch.no_grad():
        if src.feature_map == "table":
            dst.table.copy_(src.table[:, :, cols])
        else:
            dst.w1.copy_(src.w1)
            dst.b1.copy_(src.b1)
            dst.w2.copy_(src.w2[:, cols])
            dst.b2.copy_(src.b2[:, cols])
        dst.w_out.copy_(src.w_out)
        dst.b_out.copy_(src.b_out)


def max_diff(a, b):
    return float((a - b).detach().abs().max())


def assert_close(a, b, tol):
    assert a.shape == b.shape
    if a.numel():
        assert max_diff(a, b) <= tol


# ---- 1. the plain group is the single head


@pytest.mark.parametrize("feature_map", FEATURE_MAPS)
def test_plain_group_draws_the_single_heads_parameters_and_predicts_alike(feature_map):
    b, k = beyond("kernel", 8, feature_map), plain(8, feature_map)
    ref = dict(k.named_parameters())
    for name, p in b.named_parameters():
        if name in ref:
            assert torch.equal(p, ref[name]), name
        else:
            assert p.numel() == 0, name  # the extra values of heads 2…H: none for H = 1
    ids = random_ids()
    assert_close(b.predict(VOCAB[ids]), k(VOCAB[ids]), 1e-5)
    tokens = TokenIds(ids, VOCAB)
    assert_close(b.predict(tokens), k.forward_tokens(tokens), 1e-5)


@pytest.mark.parametrize("feature_map", FEATURE_MAPS)
def test_plain_group_on_the_witness_family_is_the_single_head(feature_map):
    fam = witness_family(4, 2)
    vocab = torch.unique(fam.reshape(-1, 8), dim=0)
    ids = token_ids(fam, vocab).expand(2, -1, -1)
    b, k = beyond("kernel", 4, feature_map, vocab=vocab), plain(4, feature_map, vocab=vocab)
    assert_close(b.predict(vocab[ids]), k(vocab[ids]), 1e-5)
    assert_close(b.predict(TokenIds(ids, vocab)), k.forward_tokens(TokenIds(ids, vocab)), 1e-5)


@pytest.mark.parametrize("feature_map", FEATURE_MAPS)
def test_multihead_without_extra_values_is_its_first_head(feature_map):
    b, k = beyond("multihead", 8, feature_map, heads=2), plain(4, feature_map, seeds=(5, 6))
    copy_first_group(b, k, 2)
    ids = random_ids()
    assert max_diff(b.predict(VOCAB[ids]), k(VOCAB[ids])) > 1e-3  # head 2 counts
    with torch.no_grad():
        b.w_values.zero_()
        b.b_values.zero_()
    assert_close(b.predict(VOCAB[ids]), k(VOCAB[ids]), 1e-5)
    assert_close(b.predict(TokenIds(ids, VOCAB)), k(VOCAB[ids]), 1e-5)


def test_groups_refuse_bad_splits_and_family_groups_skip_them():
    with pytest.raises(ValueError, match="family"):
        BeyondGroup("softmax", 4)
    with pytest.raises(ValueError, match="H > 1 only"):
        BeyondGroup("kernel", 4, 2)
    with pytest.raises(ValueError, match="split"):
        BeyondGroup("differential", 3)
    with pytest.raises(ValueError, match="split"):
        BeyondGroup("multihead", 6, 4)
    groups = family_groups(("kernel", "multihead", "differential"), (2, 4), (4, 1, 2))
    assert [(g.family, g.budget, g.heads) for g in groups] == [
        ("kernel", 1, 1), ("kernel", 2, 1), ("kernel", 4, 1), ("multihead", 2, 2),
        ("multihead", 4, 2), ("multihead", 4, 4), ("differential", 2, 1), ("differential", 4, 1)]
    assert [g.label for g in groups[2:6]] == ["kernel", "H=2", "H=2", "H=4"]
    assert len({g.tag for g in groups}) == len(groups)


# ---- 2, 3. the differential head


@pytest.mark.parametrize("feature_map", FEATURE_MAPS)
def test_differential_with_lambda_zero_is_its_positive_head(feature_map):
    b, k = beyond("differential", 8, feature_map), plain(4, feature_map, seeds=(5, 6))
    assert torch.allclose(b.lam, torch.full((2,), 0.5))  # λ₀ = 1/2
    copy_first_group(b, k, 2)
    ids = random_ids()
    assert max_diff(b.predict(VOCAB[ids]), k(VOCAB[ids])) > 1e-3  # λ₀ > 0 counts
    with torch.no_grad():
        b.lam_logit.copy_(torch.full((2,), float("-inf")))
    assert torch.equal(b.lam, torch.zeros(2))
    assert_close(b.predict(VOCAB[ids]), k(VOCAB[ids]), 1e-5)
    assert_close(b.predict(TokenIds(ids, VOCAB)), k(VOCAB[ids]), 1e-5)


@pytest.mark.parametrize("feature_map", FEATURE_MAPS)
def test_differential_rows_sum_to_one_minus_lambda_with_negative_entries(feature_map):
    b = beyond("differential", 8, feature_map)
    with torch.no_grad():
        b.lam_logit.copy_(torch.tensor([-0.5, 1.0]))
    pi = b.mixing_weights(VOCAB[random_ids(bsz=64)])
    assert pi.shape == (2, 1, 64, N_TOKENS, N_TOKENS)
    want = (1 - torch.sigmoid(torch.tensor([-0.5, 1.0])))[:, None, None, None]
    assert_close(pi.sum(-1), want.expand(2, 1, 64, N_TOKENS), 1e-5)
    assert bool((pi < 0).any())


@pytest.mark.parametrize("feature_map", FEATURE_MAPS)
@pytest.mark.parametrize("family,budget,heads", [("kernel", 8, 1), ("multihead", 8, 2),
                                                 ("multihead", 8, 4), ("positional", 8, 1),
                                                 ("causal_final", 8, 1)])
def test_nonnegative_families_mix_with_stochastic_rows(feature_map, family, budget, heads):
    pi = beyond(family, budget, feature_map, heads=heads).mixing_weights(VOCAB[random_ids()])
    assert pi.shape == (2, heads, 32, N_TOKENS, N_TOKENS)
    assert bool((pi >= 0).all())
    assert_close(pi.sum(-1), torch.ones(2, heads, 32, N_TOKENS), 1e-5)


# ---- 4. the signed linear kernel


def hand_preactivations(head, bits):
    """a_Q, a_K (M, B, N, F) of a plain-layout head, computed from its parameters directly."""
    if head.feature_map == "table":
        rows = token_ids(bits, VOCAB.to(bits.dtype))
        a = torch.stack([head.table[k][rows[k]] for k in range(bits.shape[0])])
    else:
        h = F.gelu(torch.einsum("mhi,mbni->mbnh", head.w1, bits) + head.b1[:, None, None])
        a = torch.einsum("mfh,mbnh->mbnf", head.w2, h) + head.b2[:, None, None]
    return a[..., :head.rank], a[..., head.rank:]


def hand_readout(head, bits, pi):
    """ŷ_i = Σ_j π_ij ⟨q_i, v_j⟩ + lin_i from the head's readout parameters: (M, B, N)."""
    m = head.m
    out = torch.einsum("moi,mbni->mbno", head.w_out, bits) + head.b_out[:, None, None]
    v, q, lin = out[..., :m], out[..., m:2 * m], out[..., 2 * m]
    return (pi * torch.einsum("mbid,mbjd->mbij", q, v)).sum(-1) + lin


@pytest.mark.parametrize("feature_map", FEATURE_MAPS)
@pytest.mark.parametrize("eps", [1e-3, 0.5])
def test_signed_linear_is_the_normalized_signed_kernel(feature_map, eps):
    b = beyond("signed_linear", 4, feature_map, eps=eps).double()
    bits = VOCAB[random_ids()].double()
    with torch.no_grad():
        a_q, a_k = hand_preactivations(b, bits)
        alpha = torch.einsum("mbif,mbjf->mbij", a_q, a_k)
        pi = alpha / (alpha.sum(-1, keepdim=True).abs() + eps)
        got = b.mixing_weights(bits)[:, 0]
        assert_close(got, pi, 1e-10)
        assert bool((got < 0).any())
        assert_close(b.predict(bits), hand_readout(b, bits, pi), 1e-9)


def test_signed_linear_uses_raw_preactivations_and_refuses_nonpositive_eps():
    o = HeadOptions("table", HIDDEN, "softplus", VOCAB)  # the job's feature does not apply
    b = BeyondKernel(BeyondGroup("signed_linear", 4), M_BITS, N_TOKENS, gens(), o, 1e-3)
    assert b.feature == "exp"
    for eps in (0.0, -1.0):
        with pytest.raises(ValueError, match="ε"):
            beyond("signed_linear", 4, "table", eps=eps)


def test_build_heads_passes_the_jobs_eps():
    jobs = beyond_jobs(smoke_config(), "smoke")
    assert jobs["m6"].eps == 0.001
    job = replace(jobs["m6"], budgets=(2,), eps=0.25)
    model = build_heads(job, JobData(job.train, torch.device("cpu")))
    assert [g.family for g in model.groups] == list(job.families)
    assert all(h.eps == 0.25 for h in model.heads)
    bits = VOCAB[random_ids()]
    signed = model.heads[[g.family for g in model.groups].index("signed_linear")]
    with torch.no_grad():
        a_q, a_k = hand_preactivations(signed, bits)
        alpha = torch.einsum("mbif,mbjf->mbij", a_q, a_k)
        want = alpha / (alpha.sum(-1, keepdim=True).abs() + 0.25)
        assert_close(signed.mixing_weights(bits)[:, 0], want, 1e-5)


# ---- 5. positional heads


def test_positional_table_reads_the_block_of_each_tokens_position():
    b = beyond("positional", 4, "table")
    assert b.table.shape == (2, N_TOKENS * 64, 8)
    bits = VOCAB[random_ids()]
    a_q, a_k = b.preactivations(bits)  # (M, B, N, F)
    rows = token_ids(bits, VOCAB) + torch.arange(N_TOKENS) * 64
    want = torch.stack([b.table[k][rows[k]] for k in range(2)])
    assert torch.equal(a_q, want[..., :4])
    assert torch.equal(a_k, want[..., 4:])


@pytest.mark.parametrize("feature_map", FEATURE_MAPS)
def test_positional_head_with_position_free_weights_is_the_plain_head(feature_map):
    b, k = beyond("positional", 8, feature_map), plain(8, feature_map, seeds=(5, 6))
    ids = random_ids()
    with torch.no_grad():
        if feature_map == "table":
            for p in range(N_TOKENS):
                b.table[:, p * 64:(p + 1) * 64] = k.table
        else:
            assert b.w1.shape == (2, HIDDEN, M_BITS + N_TOKENS)
            b.w1[:, :, :M_BITS] = k.w1
            b.w1[:, :, M_BITS:] = 0.0
            for name in ("b1", "w2", "b2"):
                getattr(b, name).copy_(getattr(k, name))
        b.w_out.copy_(k.w_out)
        b.b_out.copy_(k.b_out)
    assert_close(b.predict(VOCAB[ids]), k(VOCAB[ids]), 1e-5)
    assert_close(b.predict(TokenIds(ids, VOCAB)), k(VOCAB[ids]), 1e-5)
    with torch.no_grad():  # a weight of the last position only: the position is seen
        if feature_map == "table":
            b.table[:, (N_TOKENS - 1) * 64:] += 1.0
        else:
            b.w1[:, :, -1] = 1.0
    assert max_diff(b.predict(VOCAB[ids]), k(VOCAB[ids])) > 1e-3
    assert_close(b.predict(TokenIds(ids, VOCAB)), b.predict(VOCAB[ids]), 1e-5)


# ---- 6. two layouts


@pytest.mark.parametrize("feature_map", FEATURE_MAPS)
@pytest.mark.parametrize("family,budget,heads", FAMILIES)
def test_bits_and_token_ids_agree(feature_map, family, budget, heads):
    b = beyond(family, budget, feature_map, heads=heads)
    ids = random_ids()
    vocab = VOCAB
    if family == "signed_linear":  # near-zero row sums amplify float32 rounding
        b, vocab = b.double(), VOCAB.double()
    with torch.no_grad():
        got = b.predict(TokenIds(ids, vocab))
        want = b.predict(vocab[ids])
    assert got.shape == (2, 32, N_TOKENS)
    assert_close(got, want, 1e-9 if family == "signed_linear" else 1e-4)


# ---- 7. the causal final-query group


def test_causal_final_loss_and_metrics_are_those_of_the_last_position():
    groups = [BeyondGroup("kernel", 4), BeyondGroup("causal_final", 4)]
    heads = [beyond(g.family, 4, "mlp") for g in groups]  # the same parameters (same generators)
    model = BeyondHeads(groups, heads)
    batch = bits_batch(VOCAB[random_ids(bsz=64)])
    with torch.no_grad():
        pred = heads[1].predict(batch.tokens)
        assert torch.equal(pred, heads[0].predict(batch.tokens))
        loss = model.loss(batch)
    last = ((pred[..., -1] - batch.targets[..., -1]) ** 2).mean(1)
    full = ((pred - batch.targets) ** 2).mean((1, 2))
    assert_close(loss[2:], last, 1e-6)
    assert_close(loss[:2], full, 1e-6)
    assert float((last - full).abs().min()) > 1e-4
    assert answered(pred, True).shape == (2, 64, 1)
    # targets right at the last position of every sequence, wrong before it in the first half
    target = torch.round(pred)
    target[:, :32, :-1] += 1
    with torch.no_grad():
        out = model.evaluate({"test": MinIPBatch(batch.tokens, target)}, chunk=24)
    assert torch.equal(out["test_sequence_accuracy"], torch.tensor([0.5, 0.5, 1.0, 1.0]))
    assert torch.equal(out["test_position_error"][2:], torch.zeros(2))
    assert_close(out["test_mse"][2:], ((pred[..., -1] - target[..., -1]) ** 2).mean(1), 1e-6)
    assert torch.equal(out["lam"], torch.zeros(4))


def test_evaluate_reports_lambda_of_differential_groups():
    groups = [BeyondGroup("kernel", 4), BeyondGroup("differential", 4)]
    model = BeyondHeads(groups, [beyond(g.family, 4, "table") for g in groups])
    with torch.no_grad():
        model.heads[1].lam_logit.copy_(torch.tensor([0.0, 2.0]))
        out = model.evaluate({"test": bits_batch(VOCAB[random_ids()])})
    assert_close(out["lam"], torch.tensor([0.0, 0.0, 0.5, float(torch.sigmoid(torch.tensor(2.0)))]),
                 1e-7)


# ---- 8. vectorized training is per-model training


def all_groups():
    return [BeyondGroup(f, budget, h) for f, budget, h in FAMILIES]


def trained(groups, seeds, batch, feature_map):
    heads = [BeyondKernel(g, M_BITS, N_TOKENS, gens([s + 10 * i for s in seeds]),
                          options(feature_map), 1e-3) for i, g in enumerate(groups)]
    model = BeyondHeads(groups, heads)
    train(model, lambda step: batch, lambda mdl, b: mdl.loss(b),
          TrainConfig(steps=15, lr=1e-2, log_every=15))
    return model


@pytest.mark.parametrize("feature_map,layout", [("table", None), ("mlp", PAIR_TABLES),
                                                ("mlp", GATHERED), ("table", GATHERED)])
def test_vectorized_training_equals_each_model_alone(feature_map, layout):
    ids = random_ids()
    batch = id_batch(ids, VOCAB, layout)

    def one(k):
        return id_batch(ids[k:k + 1], VOCAB, layout)

    groups = all_groups()
    together = trained(groups, (1, 2), batch, feature_map)
    for k, seed in enumerate((1, 2)):
        for g, head in zip(groups, together.heads, strict=True):
            alone = trained([g], (seed + 10 * groups.index(g),), one(k), feature_map).heads[0]
            start = beyond(g.family, g.budget, feature_map, heads=g.heads,
                           seeds=(seed + 10 * groups.index(g),))
            tol = 1e-3 if g.family == "signed_linear" else 1e-5
            for (name, p), q, p0 in zip(head.named_parameters(), alone.parameters(),
                                        start.parameters(), strict=True):
                assert_close(p[k:k + 1].detach(), q.detach(), tol)
                if p0.numel():
                    assert not torch.equal(q, p0), (g.tag, name)  # it trained


# ---- 9. the growth table


def beyond_rows(label, needs, ms, budgets, seeds=(0, 1, 2)):
    """Final random-token rows of one line: accuracy 1 iff F ≥ needs(m), else 0."""
    return [{"label": label, "model": label.split("=")[0], "rank": f, "seed": s, "m": m,
             "final": True, "data_kind": "random", "steps_total": 300,
             "test_sequence_accuracy": 1.0 if f >= needs(m) else 0.0}
            for m in ms for f in budgets for s in seeds]


def fake_tables():
    budgets, ms = [1, 2, 4, 8, 16, 32, 64], [6, 8, 10, 12]
    rows = (beyond_rows("kernel", lambda m: 2 ** (m - 4), ms, budgets)
            + beyond_rows("H=2", lambda m: 2 ** (m // 2), ms, budgets)
            + beyond_rows("differential", lambda m: 2, ms, budgets))
    df = pd.DataFrame(rows)
    df.loc[df["label"] == "H=2", "model"] = "multihead"
    noise = df.copy()  # neither the non-final rows nor the witness rows count
    noise["test_sequence_accuracy"] = 1.0 - noise["test_sequence_accuracy"]
    df = pd.concat([df, noise.assign(final=False), noise.assign(data_kind="witness")])
    b2 = pd.DataFrame(beyond_rows("kernel", lambda m: 2 ** (m // 2 - 1), ms + [14], budgets))
    b2 = pd.concat([b2.assign(steps_total=6000).drop(columns="label"),
                    b2.assign(model="dense", rank=np.nan, steps_total=6000,
                              test_sequence_accuracy=0.0).drop(columns="label")])
    return df, b2


def test_growth_table_recovers_each_lines_slope():
    beyond_df, b2 = fake_tables()
    out = growth_table(beyond_df, b2, [0.8, 0.9], n_boot=50, level=0.9)
    assert list(out["line"].unique()) == ["kernel", "H=2", "differential", B2_LINE]
    assert len(out) == 4 * 2 * 4  # (line, target, m), B2's m = 14 left out
    want = {"kernel": (1.0, [4, 16, 64, np.inf], 3), "H=2": (0.5, [8, 16, 32, 64], 4),
            "differential": (0.0, [2, 2, 2, 2], 4), B2_LINE: (0.5, [4, 8, 16, 32], 4)}
    for line, (b, smallest, points) in want.items():
        part = out[out["line"] == line].sort_values(["target", "m"])
        assert (part["b"] == b).all(), line
        assert (part["lo"] <= b).all() and (part["hi"] >= b).all(), line
        assert part["smallest"].tolist() == smallest * 2, line
        assert (part["points"] == points).all(), line
        assert part["m"].tolist() == [6, 8, 10, 12] * 2
        assert (part["steps"] == (6000 if line == B2_LINE else 300)).all()
    pd.testing.assert_frame_equal(out, growth_table(beyond_df, b2, [0.8, 0.9], 50, 0.9))


def test_growth_interval_follows_the_seeds():
    beyond_df, b2 = fake_tables()
    # one seed of H=2 at m = 6 short of its F = 8 (0.5 < 0.8): the median still reaches it,
    # resamples that draw that seed twice need F = 16 there, a flatter line: b's interval widens
    # below 0.5 … but holds it
    hit = ((beyond_df["label"] == "H=2") & (beyond_df["m"] == 6) & (beyond_df["rank"] == 8)
           & (beyond_df["seed"] == 2) & beyond_df["final"] & (beyond_df["data_kind"] == "random"))
    assert hit.sum() == 1
    beyond_df.loc[hit, "test_sequence_accuracy"] = 0.5
    out = growth_table(beyond_df, b2, [0.8], n_boot=200, level=0.9)
    h2 = out[out["line"] == "H=2"]
    assert (h2["b"] == 0.5).all()
    assert h2["lo"].iloc[0] < 0.5 <= h2["hi"].iloc[0]


# ---- 10. the jobs and their config


def smoke_config():
    return yaml.safe_load((ROOT / "config.yaml").read_text())


def test_smoke_jobs_embed_the_b2_and_b3_jobs():
    config = smoke_config()
    config["minip"]["scales"]["smoke"]["beyond"]["witness"]["steps"] = 222  # ≠ the block's steps
    jobs = beyond_jobs(config, "smoke")
    assert set(jobs) == {"m6", "m8", "witness", BEYOND_GROWTH}
    base = minip_jobs(config, "smoke")
    b = config["minip"]["scales"]["smoke"]["beyond"]
    families = ("kernel", *b["families"])
    for inst, key, steps, budgets in [("m6", ("rank_vs_m", "m6"), b["steps"], b["budgets"]),
                                      ("m8", ("rank_vs_m", "m8"), b["steps"], b["budgets"]),
                                      ("witness", ("witness", "table"), b["witness"]["steps"],
                                       b["witness"]["budgets"])]:
        job = jobs[inst]
        assert job.train == replace(base[key], ranks=(), dense=False, steps=steps)
        assert (job.experiment, job.instance) == ("beyond", inst)
        assert job.families == families
        assert job.budgets == tuple(budgets) and job.heads == tuple(b["heads"])
        assert job.eps == config["minip"]["signed_linear_eps"]
        assert [g.family for g in job.groups()][0] == "kernel"
    wit = {(g.family, g.budget) for g in jobs["witness"].groups()}
    assert ("multihead", 1) not in wit and ("differential", 1) not in wit
    assert ("signed_linear", 1) in wit and ("multihead", 2) in wit
    t6 = config["claims"]["TT-6"]
    assert jobs[BEYOND_GROWTH] == BeyondGrowthJob(tuple(map(float, t6["targets"])),
                                                  t6["bootstrap_samples"], t6["interval_level"])
    assert beyond_config_problems(config, "smoke") == []


@pytest.mark.parametrize("edit,key", [
    (lambda b, c: b.update(families=["multihead", "quadratic"]), "beyond.families"),
    (lambda b, c: b.update(families=["kernel"]), "beyond.families"),
    (lambda b, c: b.update(ms=[6, 10]), "beyond.ms"),
    (lambda b, c: b.update(ms=[6, 6]), "beyond.ms"),
    (lambda b, c: b["witness"].update(feature_map="dense"), "beyond.witness.feature_map"),
    (lambda b, c: b.update(budgets=[1]), "beyond.budgets"),
    (lambda b, c: b["witness"].update(budgets=[1]), "beyond.witness.budgets"),
    (lambda b, c: c["minip"].update(signed_linear_eps=0.0), "minip.signed_linear_eps"),
])
def test_config_problems_name_the_key(edit, key):
    config = copy.deepcopy(smoke_config())
    edit(config["minip"]["scales"]["smoke"]["beyond"], config)
    problems = beyond_config_problems(config, "smoke")
    assert len(problems) == 1 and key in problems[0].split(" = ")[0], problems
    with pytest.raises(ValueError, match=key.replace(".", r"\.")):
        beyond_jobs(config, "smoke")


def test_a_scale_without_a_beyond_block_has_no_jobs():
    config = copy.deepcopy(smoke_config())
    del config["minip"]["scales"]["smoke"]["beyond"]
    assert beyond_jobs(config, "smoke") == {}
    assert beyond_config_problems(config, "smoke") == []


@pytest.mark.parametrize("instance", ["witness", "m6"])
def test_run_job_tables_one_final_row_per_group_and_seed(instance):
    job = beyond_jobs(smoke_config(), "smoke")[instance]
    job = replace(job, budgets=(2,), train=replace(job.train, steps=3, log_every=3,
                                                  eval_sequences=256))
    metrics, weights = run_job(job, torch.device("cpu"))
    final = metrics[metrics["final"]]
    groups = job.groups()
    assert len(final) == len(groups) * job.train.seeds
    assert final["label"].tolist() == [g.label for g in groups for _ in range(job.train.seeds)]
    assert (final["rank"] == 2).all() and (final["steps_total"] == 3).all()
    assert set(final.loc[final["model"] == "causal_final", "answered"]) == {"last"}
    assert set(final.loc[final["model"] != "causal_final", "answered"]) == {"all"}
    lam = final.set_index("model")["lam"]
    assert ((lam["differential"] > 0) & (lam["differential"] < 1)).all()
    assert (lam.drop("differential") == 0).all()
    assert set(weights) >= {"differential-F2/lam_logit", "multihead-H2-F2/w_values",
                            "signed_linear-F2/w_out", "causal_final-F2/b_out"}
    if job.train.feature_map == "table":
        assert weights["positional-F2/table"].shape[1] == 3 * weights["kernel-F2/table"].shape[1]
    else:
        assert weights["positional-F2/w1"].shape[2] == weights["kernel-F2/w1"].shape[2] + 3
    assert (final["m"] == (8 if instance == "witness" else 6)).all()


# ---- 11. the pipeline's jobs: one per family, multihead one per H


def two_head_config():
    config = copy.deepcopy(smoke_config())
    config["minip"]["scales"]["smoke"]["beyond"]["heads"] = [2, 4, 32]  # 32: no F splits into it
    return config


def test_plan_cuts_multihead_into_one_job_per_head_count():
    config = two_head_config()
    config["minip"]["scales"]["smoke"]["beyond"]["split"] = True  # the full scale's cut
    whole = beyond_jobs(config, "smoke")["m6"]
    parts = beyond_parts(whole)
    assert list(parts) == ["kernel", "multihead-H2", "multihead-H4", "differential",
                           "signed_linear", "positional", "causal_final"]
    assert [g for p in parts.values() for g in p.groups()] == whole.groups()  # table order
    assert parts["multihead-H4"].heads == (4,) and parts["multihead-H4"].families == ("multihead",)
    assert {g.heads for g in parts["multihead-H4"].groups()} == {4}
    assert parts["kernel"] == replace(whole, families=("kernel",))  # other families: as before
    plan = build_plan(config, "smoke")
    runs = [r for r in plan.runs if r.step == "minip_beyond_train"]
    assert [r.wildcards["family"] for r in runs if r.wildcards["instance"] == "m6"] == list(parts)
    table = plan.run_for("tables/minip_beyond.parquet")
    assert table.inputs == tuple(r.outputs[0] for r in runs)
    assert STEPS["minip_beyond_train"].what(parts["multihead-H4"]) == "minip beyond/m6/multihead H=4"


def assert_parts_train_as_the_whole(whole, parts) -> None:
    """The parts' rows, one after the other, and their weights are the whole job's, to the bit."""
    metrics, weights = run_job(whole, torch.device("cpu"))
    rows, kept = [], {}
    for part in parts:
        m, w = run_job(part, torch.device("cpu"))
        rows.append(m)
        kept |= w
    pd.testing.assert_frame_equal(pd.concat(rows, ignore_index=True), metrics, check_exact=True)
    assert set(kept) == set(weights)
    for key, value in weights.items():
        assert np.array_equal(kept[key], value), key


@pytest.mark.parametrize("instance", ["m6", "witness"])
def test_multihead_parts_train_as_the_whole_job_bit_for_bit(instance):
    """Cutting the multihead job by H changes no number: the same rows and weights, to the bit."""
    whole = family_parts(beyond_jobs(two_head_config(), "smoke")[instance])["multihead"]
    whole = replace(whole, train=replace(whole.train, steps=6, log_every=3, eval_sequences=256))
    parts = [p for name, p in beyond_parts(whole).items() if name.startswith("multihead-")]
    assert len(parts) == 2
    assert_parts_train_as_the_whole(whole, parts)


def test_a_whole_instance_trains_as_its_family_jobs_bit_for_bit():
    """``beyond.split: false`` (the smoke scale) runs an instance as one job, ``all``: its rows,
    one after the other, and its weights are those of the split jobs, to the bit."""
    config = two_head_config()
    config["minip"]["scales"]["smoke"]["beyond"]["split"] = False
    plan = build_plan(config, "smoke")
    runs = [r for r in plan.runs if r.step == "minip_beyond_train"]
    assert [r.wildcards["family"] for r in runs] == ["all"] * 3  # m6, m8, witness
    assert plan.run_for("tables/minip_beyond.parquet").inputs == tuple(r.outputs[0] for r in runs)
    whole = beyond_jobs(config, "smoke")["m6"]
    whole = replace(whole, train=replace(whole.train, steps=6, log_every=3, eval_sequences=256))
    assert beyond_parts(whole, split=False) == {"all": whole}
    assert_parts_train_as_the_whole(whole, list(beyond_parts(whole).values()))


def test_a_multihead_job_cut_at_a_budget_trains_as_the_whole_bit_for_bit(monkeypatch):
    """``BEYOND_CUTS``: one H of an instance cut once more at a budget F runs as two jobs named by
    their budgets, in table order, with the whole job's rows and weights to the bit."""
    from attnrank.pipeline import plan as plan_module

    monkeypatch.setitem(plan_module.BEYOND_CUTS, ("m6", 2), 4)
    whole = family_parts(beyond_jobs(two_head_config(), "smoke")["m6"])["multihead"]
    whole = replace(whole, train=replace(whole.train, steps=6, log_every=3, eval_sequences=256))
    parts = beyond_parts(whole)
    assert list(parts) == ["multihead-H2-F2_2", "multihead-H2-F4_16", "multihead-H4"]
    assert [g for p in parts.values() for g in p.groups()] == whole.groups()  # table order
    assert_parts_train_as_the_whole(whole, list(parts.values()))
    monkeypatch.setitem(plan_module.BEYOND_CUTS, ("m6", 2), 64)  # nothing on one side: no cut
    assert "multihead-H2" in beyond_parts(whole)
