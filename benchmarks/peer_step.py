"""The project's training step beside an independent, packed, whole-compiled step of the same math.

The project trains every group of a job (kernel heads of each feature rank, the dense baseline; the
multihead groups of each budget F and head count H) as one program of per-group modules, with
only the pairwise reductions compiled (``minip.pairs``). The peer written here computes the same
loss from scratch in another form:

* every group's parameters packed into one set of tensors (one readout projection for all groups
  and heads, one first mlp layer, one second layer whose rows are every group's features), so
  Adam updates a handful of tensors;
* every attention head of every group on one head axis: the features of the heads of equal size
  (F/H) side by side, so one log-sum-exp over features serves all heads of a size, and one
  softmax over keys and one mix serve every head; the heads summed into their group by an index;
* the whole per-model loss — the batch's tokens, projections, feature maps, pair scores,
  readouts, mixing and the MSE — one ``torch.compile`` graph (fullgraph, static shapes), its
  backward compiled with it.

Both sides start from the same parameters (the peer's are copied from the project's models as the
job builds them) and take the same batches (the job's own stream), in one process, one thread:

* ``loss_max_difference``: the largest |Δ| of any model's training loss over K steps taken side by
  side (``--k``), ``loss_difference_at_k`` at the K-th, ``loss_max_relative_difference`` the
  largest |Δ| / loss (float32 rounding: a few 1e-7 on one forward pass);
* ``ms_per_step``: min and median over ``--repeats`` alternating runs of ``--timed`` steps each
  (project, peer, project, …; each step a fresh batch object, pre-drawn);
* ``compile_s``: cold (an empty on-disk inductor cache for each job: the first step's seconds
  less a warm step's) and warm (after ``torch._dynamo.reset()``, the kernels from that cache);
  inductor's one-time import is paid beforehand by a trivial compile, so neither side carries it,
  but kernels a job before it loaded into the process are reused (the project's pair kernels are
  the same functions in both jobs, so its cold compile of the second job is partly warm);
* ``events_per_step``: operator events of one step (``step_events.count_events``): every event and
  the top-level ones.

Jobs: ``minip_train`` rank_vs_m/m12 (7 kernel ranks and the dense baseline) and
``minip_beyond_train`` multihead at m12 (every H, as one program; ``--heads H`` for one H alone).
Where the peer is more than 1.2× faster the project should take its structure.

    .venv/bin/python benchmarks/peer_step.py                              # both jobs (≈ 5 min)
    .venv/bin/python benchmarks/peer_step.py --jobs rank_vs_m/m12 --k 5 --timed 5 --repeats 2
    .venv/bin/python benchmarks/peer_step.py --device cuda --out /tmp/peer_step_cuda.json

Writes benchmarks/results/peer_step.json (no machine paths); its rows go to the time table
(``benchmarks/summary.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from step_events import count_events  # noqa: E402
from trainer import machine  # noqa: E402

from attnrank.core import optim  # noqa: E402
from attnrank.minip.beyond.families import MULTIHEAD  # noqa: E402
from attnrank.minip.beyond.jobs import beyond_jobs, family_parts  # noqa: E402
from attnrank.minip.data import JobData, MinIPBatch  # noqa: E402
from attnrank.minip.experiments.beyond import build_heads  # noqa: E402
from attnrank.minip.families import job_groups  # noqa: E402
from attnrank.minip.jobs import minip_jobs  # noqa: E402
from attnrank.minip.models import GATHERED, DenseAttention, KernelAttention, TokenIds  # noqa: E402
from attnrank.minip.program import GroupedHeads, build_model, recipe  # noqa: E402
from attnrank.publish.audit import load_config  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "peer_step.json"
JOBS = ("rank_vs_m/m12", "beyond/multihead/m12")


@dataclass(frozen=True)
class GroupSpec:
    """One group of the peer: a kernel group of ``features`` (F) split into ``heads`` (H) heads,
    or the dense baseline (``features`` 0, one head)."""

    dense: bool
    features: int
    heads: int


class PeerStep(nn.Module):
    """The packed program (module docstring) for groups ``specs`` of M models on m-bit tokens.

    Inside, the groups are ordered by the size F/H of their heads (the dense baseline last), so
    the heads of one size lie next to each other; ``forward`` returns the losses in the order of
    ``specs``. Parameters, in that inner order: ``w_out`` (M, C, m), ``b_out`` (M, C) with each
    group's rows [W_A (m); w_c (1); W_V of each head (H·m)]; ``w1`` (M, Gk·h, m), ``b1`` the kernel
    groups' first layers; ``w2`` (M, 2R, h), ``b2`` (M, 2R) their second layers, group after group,
    rows [a_Q (F); a_K (F)]; ``w_qk`` (M, 2m, m), ``b_q`` (M, m) the dense group's scores."""

    def __init__(self, specs: list[GroupSpec], n_models: int, m: int, hidden: int) -> None:
        super().__init__()
        self.m, self.hidden = m, hidden
        self.order = sorted(range(len(specs)), key=lambda g: (specs[g].dense, specs[g].features
                                                              // max(1, specs[g].heads)))
        self.specs = [specs[g] for g in self.order]
        kernel = [s for s in self.specs if not s.dense]
        self.n_kernel, self.has_dense = len(kernel), any(s.dense for s in specs)
        rows = sum(m + 1 + s.heads * m for s in self.specs)
        zeros = lambda *shape: nn.Parameter(torch.zeros(n_models, *shape))  # noqa: E731
        self.w_out, self.b_out = zeros(rows, m), zeros(rows)
        self.w1, self.b1 = zeros(len(kernel) * hidden, m), zeros(len(kernel) * hidden)
        n_features = sum(s.features for s in kernel)
        self.w2, self.b2 = zeros(2 * n_features, hidden), zeros(2 * n_features)
        if self.has_dense:
            self.w_qk, self.b_q = zeros(2 * m, m), zeros(m)
        # (first readout row, heads) of each group; (first w2 row, F) of each kernel group, by
        # the size of its heads
        self.readouts, self.classes = [], {}
        offset, row = 0, 0
        for s in self.specs:
            self.readouts.append((offset, s.heads))
            offset += m + 1 + s.heads * m
            if not s.dense:
                self.classes.setdefault(s.features // s.heads, []).append((row, s.features))
                row += 2 * s.features
        head_group = [g for g, s in enumerate(self.specs) for _ in range(s.heads)]
        self.register_buffer("head_group", torch.tensor(head_group), persistent=False)
        self.register_buffer("back", torch.argsort(torch.tensor(self.order)), persistent=False)

    def forward(self, ids: torch.Tensor, vocab: torch.Tensor, targets: torch.Tensor
                ) -> torch.Tensor:
        """Per-model MSE (G·M,), row g·M + k for model k of group g of ``specs``, of token ids
        (M, B, N) into ``vocab`` (V, m) against ``targets`` (M, B, N)."""
        n_models, bsz, n = ids.shape
        m = self.m
        x = vocab[ids].permute(0, 3, 2, 1).reshape(n_models, m, n * bsz)  # token i·B + b
        proj = torch.baddbmm(self.b_out[:, :, None], self.w_out, x).view(n_models, -1, n, bsz)
        scores = []
        if self.n_kernel:
            hidden = F.gelu(torch.baddbmm(self.b1[:, :, None], self.w1, x))
            hidden = hidden.view(n_models, self.n_kernel, self.hidden, -1)
            g = 0
            for size, groups in self.classes.items():  # the heads of one size at once
                a_q, a_k = [], []
                for row, features in groups:
                    a = torch.baddbmm(self.b2[:, row:row + 2 * features, None],
                                      self.w2[:, row:row + 2 * features], hidden[:, g])
                    a_q.append(a[:, :features])
                    a_k.append(a[:, features:])
                    g += 1
                a_q = torch.cat(a_q, 1).view(n_models, -1, size, n, bsz)
                a_k = torch.cat(a_k, 1).view(n_models, -1, size, n, bsz)
                scores.append(torch.logsumexp(a_q.unsqueeze(-2) + a_k.unsqueeze(-3), dim=2))
        if self.has_dense:
            b = torch.cat([self.b_q, torch.zeros_like(self.b_q)], 1)
            qk = torch.baddbmm(b[:, :, None], self.w_qk, x).view(n_models, 2 * m, n, bsz)
            scores.append((qk[:, None, :m].unsqueeze(-2) * qk[:, None, m:].unsqueeze(-3)).sum(2))
        readouts, lins = [], []
        for first, heads in self.readouts:
            q = proj[:, None, first:first + m]  # (M, 1, m, N, B)
            v = proj[:, first + m + 1:first + m + 1 + heads * m].view(n_models, heads, m, n, bsz)
            readouts.append((q.unsqueeze(-2) * v.unsqueeze(-3)).sum(2))  # (M, H, N, N, B)
            lins.append(proj[:, first + m])
        mixed = (torch.softmax(torch.cat(scores, 1), dim=3) * torch.cat(readouts, 1)).sum(3)
        lin = torch.stack(lins, 1)  # (M, G, N, B)
        pred = torch.zeros_like(lin).index_add(1, self.head_group, mixed) + lin
        err = pred - targets.transpose(1, 2)[:, None]
        return (err**2).mean(dim=(2, 3))[:, self.back].T.reshape(-1)

    @torch.no_grad()
    def copy_from(self, heads: list[nn.Module]) -> None:
        """The project's initial parameters: ``heads`` in the order of ``specs``
        (``KernelAttention`` or ``BeyondKernel`` with an mlp map, or ``DenseAttention``)."""
        m = self.m
        w_out, b_out, w1, b1, w2, b2 = [], [], [], [], [], []
        for spec, head in zip(self.specs, (heads[g] for g in self.order), strict=True):
            extra_w = getattr(head, "w_values", head.w_out[:, :0])
            extra_b = getattr(head, "b_values", head.b_out[:, :0])
            w_out.append(torch.cat([head.w_out[:, m:], head.w_out[:, :m], extra_w], 1))
            b_out.append(torch.cat([head.b_out[:, m:], head.b_out[:, :m], extra_b], 1))
            if spec.dense:
                self.w_qk.copy_(torch.cat([head.w_q, head.w_k], 1))
                self.b_q.copy_(head.b_q)
            else:
                w1.append(head.w1)
                b1.append(head.b1)
                w2.append(head.w2)
                b2.append(head.b2)
        for param, parts in ((self.w_out, w_out), (self.b_out, b_out), (self.w1, w1),
                             (self.b1, b1), (self.w2, w2), (self.b2, b2)):
            if parts:
                param.copy_(torch.cat(parts, 1))


def project_program(name: str, heads_only: int | None, device: torch.device
                    ) -> tuple[nn.Module, JobData, list[GroupSpec], Any]:
    """The project's program of a job (as its step builds it), its data, the peer's group specs
    and the job's recipe."""
    config = load_config(ROOT / "config.yaml")
    if name == "rank_vs_m/m12":
        job = minip_jobs(config, "full")[("rank_vs_m", "m12")]
        data = JobData(job, device)
        groups = job_groups(job.ranks, job.dense)
        model = GroupedHeads({g.tag: build_model(g, data, job, job.feature_map) for g in groups})
        specs = [GroupSpec(True, 0, 1) if g.rank is None else GroupSpec(False, g.rank, 1)
                 for g in groups]
        train = job
    else:
        whole = family_parts(beyond_jobs(config, "full")["m12"])[MULTIHEAD]
        job = whole if heads_only is None else replace_heads(whole, heads_only)
        data = JobData(job.train, device)
        model = build_heads(job, data)
        specs = [GroupSpec(False, g.budget, g.heads) for g in job.groups()]
        train = job.train
    if train.feature_map != "mlp" or train.feature != "exp" or data.layout != GATHERED:
        raise ValueError(f"{name}: the peer is written for mlp features, exp and the tokens layout")
    for head in model.heads:
        if not isinstance(head, KernelAttention | DenseAttention):
            raise ValueError(f"{name}: unexpected head {type(head).__name__}")
    return model.to(device), data, specs, train


def replace_heads(job: Any, h: int) -> Any:
    from dataclasses import replace

    if h not in job.heads:
        raise ValueError(f"--heads {h}: the job's head counts are {job.heads}")
    return replace(job, heads=(h,))


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def compare_job(name: str, k: int, timed: int, repeats: int, device: torch.device,
                heads_only: int | None, cudagraphs: bool) -> dict[str, Any]:
    """Both sides of one job (module docstring)."""
    model, data, specs, train = project_program(name, heads_only, device)
    n_models = len(data.seeds)
    peer = PeerStep(specs, n_models, data.m, train.hidden).to(device)
    peer.copy_from(list(model.heads))
    compiled = torch.compile(peer, fullgraph=True, dynamic=False,
                             mode="reduce-overhead" if cudagraphs else None)
    cfg = recipe(train)
    stream = data.batch_fn()
    drawn = [stream(i) for i in range(k + timed)]
    vocab = data.vocab
    sides: dict[str, dict[str, Any]] = {}

    def project_step(i: int) -> torch.Tensor:
        b = drawn[i]
        batch = MinIPBatch(TokenIds(b.tokens.ids, vocab, b.tokens.layout), b.targets)
        losses = model.loss(batch)
        opts["project"].zero_grad()
        losses.sum().backward()
        opts["project"].step(cfg.lr * cfg.lr_factor(i))
        return losses

    def peer_step(i: int) -> torch.Tensor:
        b = drawn[i]
        losses = compiled(b.tokens.ids, vocab, b.targets)
        opts["peer"].zero_grad()
        losses.sum().backward()
        opts["peer"].step(cfg.lr * cfg.lr_factor(i))
        return losses

    opts = {"project": optim.make(cfg.optimizer, list(model.parameters())),
            "peer": optim.make(cfg.optimizer, list(peer.parameters()))}
    steps: dict[str, Callable[[int], torch.Tensor]] = {"project": project_step,
                                                      "peer": peer_step}
    # K steps side by side from the same parameters on the same batches (the first compiles)
    diffs, relative, first = [], [], {}
    for i in range(k):
        losses = {}
        for side, fn in steps.items():
            t = time.perf_counter()
            losses[side] = fn(i).detach()
            synchronize(device)
            if i == 0:
                first[side] = time.perf_counter() - t
        gap = (losses["project"] - losses["peer"]).abs()
        diffs.append(float(gap.max()))
        relative.append(float((gap / losses["project"].abs()).max()))
    # alternating timed runs on the batches after them
    ms: dict[str, list[float]] = {s: [] for s in steps}
    for _ in range(repeats):
        for side, fn in steps.items():
            synchronize(device)
            t = time.perf_counter()
            for i in range(k, k + timed):
                fn(i)
            synchronize(device)
            ms[side].append(1000 * (time.perf_counter() - t) / timed)
    for side, fn in steps.items():
        sides[side] = {"ms_per_step": {"min": round(min(ms[side]), 3),
                                       "median": round(statistics.median(ms[side]), 3),
                                       "runs": [round(x, 3) for x in ms[side]]},
                       "compile_s": {"cold": round(first[side] - min(ms[side]) / 1000, 2)},
                       "events_per_step": count_events(lambda fn=fn: fn(k + timed - 1),
                                                       cuda=device.type == "cuda")}
    torch._dynamo.reset()  # warm: the same graphs again, their kernels from the on-disk cache
    compiled = torch.compile(peer, fullgraph=True, dynamic=False,
                             mode="reduce-overhead" if cudagraphs else None)
    for side, fn in steps.items():
        synchronize(device)
        t = time.perf_counter()
        fn(k + timed - 1)
        synchronize(device)
        sides[side]["compile_s"]["warm"] = round(time.perf_counter() - t
                                                 - sides[side]["ms_per_step"]["min"] / 1000, 2)
    ratio = sides["project"]["ms_per_step"]["min"] / sides["peer"]["ms_per_step"]["min"]
    return {"job": name, "heads": heads_only, "groups": len(specs),
            "attention_heads": sum(s.heads for s in specs), "models": len(specs) * n_models,
            "k": k, "timed_steps": timed, "repeats": repeats,
            "loss_max_difference": max(diffs), "loss_difference_at_k": diffs[-1],
            "loss_max_relative_difference": max(relative),
            "project": sides["project"], "peer": sides["peer"],
            "project_over_peer": round(ratio, 3)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", nargs="+", default=list(JOBS), choices=JOBS)
    ap.add_argument("--heads", type=int, default=None,
                    help="the beyond job: one head count H alone (default every H)")
    ap.add_argument("--k", type=int, default=50, help="steps side by side for the loss difference")
    ap.add_argument("--timed", type=int, default=50, help="steps per timed run")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--cudagraphs", action="store_true",
                    help="on CUDA: the peer compiled with mode='reduce-overhead' (CUDA graphs)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args(argv)
    if a.k < 1 or a.timed < 1 or a.repeats < 1:
        raise SystemExit("--k, --timed and --repeats: at least 1")
    device = torch.device(a.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: no CUDA device is visible")
    torch.set_num_threads(a.threads)
    report: dict[str, Any] = {"date": datetime.now(UTC).isoformat(timespec="seconds"),
                              "machine": machine(device, a.threads),
                              "load": {"before": os.getloadavg()[0]}, "jobs": {}}
    with tempfile.TemporaryDirectory(prefix="attnrank-peer-") as cache:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(Path(cache) / "warm-up")
        torch.compile(lambda t: t + 1)(torch.zeros(2, device=device))  # inductor's import
        for name in a.jobs:
            # cold: an empty on-disk cache for each job
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(Path(cache) / name.replace("/", "-"))
            torch._dynamo.reset()
            row = compare_job(name, a.k, a.timed, a.repeats, device,
                              a.heads if name.startswith("beyond") else None, a.cudagraphs)
            report["jobs"][name] = row
            print(json.dumps({k: row[k] for k in ("job", "project_over_peer",
                                                  "loss_max_difference")}
                             | {s: row[s]["ms_per_step"]["min"] for s in ("project", "peer")}
                             | {f"{s}_events": row[s]["events_per_step"]["events"]
                                for s in ("project", "peer")}), flush=True)
    report["load"]["after"] = os.getloadavg()[0]
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
