"""The witness-families table: every family's trained table-feature heads, their
final held-out metrics, and which witness inputs they fail.

The step's inputs are, per family of ``WitnessFamiliesTableJob.families`` and in that order, the
training job's ``metrics.parquet`` and ``weights.npz``. The heads are rebuilt from their final
weights and evaluated on every input of the suite (``tasks.minip.witness_family``), so the table
can say which inputs fail, not only how many:

    input (pos, a, b, c): query q_a at position pos, keys k_b, k_c in the other positions in order;
    targets: the query's t = 0 when k_a is among the keys, else w; a key's t = 0 when it is k_a.

The kernel heads have no positional information, so an input's predictions do not depend on
where the query sits (up to the same permutation): ``pattern`` classifies an input by how often
the query's own complement k_a appears among its keys, and whether the two keys repeat:

    absent_distinct   a ∉ {b, c}, b ≠ c   (every target w)
    absent_repeated   a ∉ {b, c}, b = c   (every target w)
    present_once      exactly one key is k_a (query and that key: 0, the other key: w)
    present_twice     b = c = a           (every target 0)

An input fails when some position has |ŷ − t| ≥ the worst-case cut-off (the theorem's "error <
1/2" is exact). The table keeps, per (family, rank, seed), the count of failing inputs, the
fraction failing per pattern and per position role (the query token, a key token) and the number of
query blocks a with at least one failing input.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import torch

from attnrank.core.columns import TEST_WORST_CASE_ERROR
from attnrank.core.seeding import torch_generator
from attnrank.minip.families import KERNEL, Group
from attnrank.minip.models import KernelAttention, forward_bits
from attnrank.minip.quantities import kernel_rows, witness_lower_bound
from attnrank.minip.task import minip_targets, witness_family
from attnrank.minip.witness_sweep import family_summary

if TYPE_CHECKING:
    from attnrank.minip.jobs import WitnessFamiliesTableJob

log = logging.getLogger("attnrank.minip")

PATTERNS = ("absent_distinct", "absent_repeated", "present_once", "present_twice")
# metrics of the training job's final rows carried into the table
METRICS = ("test_worst_case_error", "test_sequence_accuracy", "test_position_error", "test_mse")
# the rounding slack between the trained job's evaluation and the rebuilt heads' (same weights,
# another summation order); a larger gap means the weights and metrics do not belong together
REBUILD_TOLERANCE = 1e-3


def pattern_of(a: int, b: int, c: int) -> str:
    """The pattern of the input with query block ``a`` and key blocks ``b``, ``c`` (see module)."""
    present = (b == a) + (c == a)
    if present == 0:
        return PATTERNS[1] if b == c else PATTERNS[0]
    return PATTERNS[2] if present == 1 else PATTERNS[3]


def witness_labels(n_blocks: int) -> pd.DataFrame:
    """One row per input of ``witness_family(n_blocks, w)``, in its order (for any w):
    query_position, query_block (a), key_block_1, key_block_2 (b, c, by position) and pattern."""
    rows = [{"query_position": pos, "query_block": a, "key_block_1": b, "key_block_2": c,
             "pattern": pattern_of(a, b, c)}
            for pos in range(3) for a, b, c in itertools.product(range(n_blocks), repeat=3)]
    return pd.DataFrame(rows)


def witness_vocab(bits: torch.Tensor) -> torch.Tensor:
    """The distinct tokens of a family's bits (B, 3, m): (V, m), as the training job builds it."""
    return torch.unique(bits.reshape(-1, bits.shape[-1]), dim=0)


def rebuild_heads(weights: Mapping[str, np.ndarray], m: int, vocab: torch.Tensor,
                  feature: str) -> dict[int, KernelAttention]:
    """The table-feature kernel heads of a training job from its final weights ('kernel-r<r>/
    <param>' → (M, …) arrays; a dense baseline is left out): rank → head with M models."""
    groups = sorted({Group.from_tag(k.split("/")[0]) for k in weights}, key=lambda g: g.rank_column)
    heads = {}
    for g in (g for g in groups if g.family == KERNEL):
        r = int(g.rank)
        n_models = weights[f"{g.tag}/table"].shape[0]
        # the initialization is overwritten by the trained weights right away
        gens = [torch_generator("witness_families", "rebuild", k) for k in range(n_models)]
        head = KernelAttention(m, r, gens, feature_map="table", vocab=vocab, feature=feature)
        head.load_state_dict({name: torch.from_numpy(np.asarray(weights[f"{g.tag}/{name}"]))
                              for name in head.state_dict()})
        heads[r] = head.eval()
    return heads


@torch.no_grad()
def input_errors(heads: Mapping[int, KernelAttention], bits: torch.Tensor) -> torch.Tensor:
    """|ŷ − t| of every head on every input: bits (B, 3, m) → (G, M, B, 3), heads in rank order."""
    groups = [heads[r] for r in sorted(heads)]
    n_models = groups[0].n_models
    pred = forward_bits(groups, bits.expand(n_models, -1, -1, -1))
    return (pred.unflatten(0, (len(groups), n_models)) - minip_targets(bits)).abs()


def failure_rows(errors: torch.Tensor, labels: pd.DataFrame, cutoff: float) -> pd.DataFrame:
    """The diagnostic of M models on one suite: errors (M, B, 3), labels (B rows, see
    ``witness_labels``) → one row per model (``slot``) with failing_inputs, n_inputs,
    failing_query_blocks (query blocks with a failing input) and solved_query_blocks (the others),
    fail_query_token / fail_key_token (fraction of inputs whose query / some key position fails)
    and fail_<pattern> (fraction of that pattern's inputs that fail)."""
    err = errors.numpy()
    n_blocks = labels["query_block"].nunique()
    bad = err >= cutoff  # (M, B, 3)
    pos = labels["query_position"].to_numpy()
    at_query = np.take_along_axis(bad, pos[None, :, None], axis=2)[..., 0]  # (M, B)
    fails = bad.any(axis=2)
    rows = []
    for slot in range(err.shape[0]):
        f = fails[slot]
        row = {"slot": slot, "failing_inputs": int(f.sum()), "n_inputs": int(f.size),
               "failing_query_blocks": int(labels["query_block"][f].nunique()),
               "fail_query_token": float(at_query[slot].mean()),
               "fail_key_token": float((bad[slot].sum(axis=1) > at_query[slot]).mean())}
        for p in PATTERNS:
            mask = (labels["pattern"] == p).to_numpy()
            row[f"fail_{p}"] = float(f[mask].mean()) if mask.any() else np.nan
        row["solved_query_blocks"] = n_blocks - row["failing_query_blocks"]
        rows.append(row)
    return pd.DataFrame(rows)


@torch.no_grad()
def log_selectivity(head: KernelAttention, n_blocks: int, width: int) -> torch.Tensor:
    """What a head's features encode about the blocks: per model and query block a, how much more
    kernel weight the query q_a gives its own complement key k_a than any other key,
    log α(q_a, k_a) − max_{b≠a} log α(q_a, k_b): (M, K). Above 0 the query singles out k_a."""
    q = torch.zeros(n_blocks, n_blocks * width)
    for a in range(n_blocks):
        q[a, a * width:(a + 1) * width] = 1.0
    scores = head.pair_log_scores(torch.cat([q, 1.0 - q]))[:, :n_blocks, n_blocks:]  # (M, K, K)
    own = scores.diagonal(dim1=1, dim2=2)
    others = scores.masked_fill(torch.eye(n_blocks, dtype=torch.bool), -torch.inf).amax(dim=2)
    return own - others


def selectivity_columns(selectivity: torch.Tensor, failing_blocks: list[set[int]]
                        ) -> pd.DataFrame:
    """Per model: the smallest log-selectivity among the query blocks it solves and the largest
    among those it fails (NaN where there are none): (M, K) and M sets of failing blocks → M rows."""
    sel = selectivity.numpy()
    rows = []
    for slot, failing in enumerate(failing_blocks):
        bad = np.isin(np.arange(sel.shape[1]), sorted(failing))
        rows.append({"log_selectivity_solved_min": float(sel[slot, ~bad].min()) if (~bad).any()
                     else np.nan,
                     "log_selectivity_failed_max": float(sel[slot, bad].max()) if bad.any()
                     else np.nan})
    return pd.DataFrame(rows)


def family_rows(metrics: pd.DataFrame, weights: Mapping[str, np.ndarray], blocks: int, width: int,
                feature: str, cutoff: float) -> pd.DataFrame:
    """The table rows of one family: per (rank, seed) of its kernel heads, the training job's
    final metrics, ``exact`` (worst-case error < cutoff) and the failure diagnostic. ValueError
    when the job's suite is not this family's, or when the rebuilt heads' worst-case error differs
    from the job's own evaluation (weights and metrics that do not belong together)."""
    bits = witness_family(blocks, width)
    m = bits.shape[-1]
    fin = kernel_rows(metrics[metrics["final"]])
    if fin.empty or set(fin["m"]) != {m} or set(fin["data_kind"]) != {"witness"}:
        raise ValueError(f"family K={blocks}, w={width}: its job's final kernel rows are not on a "
                         f"witness suite with m={m} (got m {sorted(set(fin['m']))})")
    try:
        heads = rebuild_heads(weights, m, witness_vocab(bits), feature)
    except (KeyError, RuntimeError) as err:  # missing or misshapen parameters
        raise ValueError(f"family K={blocks}, w={width}: its weights are not table-feature heads "
                         f"on this suite (m={m}, V={2 * blocks}): {err}") from None
    errors = input_errors(heads, bits)  # (G, M, B, 3)
    labels = witness_labels(blocks)
    seeds = sorted(fin["seed"].unique())
    parts = []
    for g, r in enumerate(sorted(heads)):
        diag = failure_rows(errors[g], labels, cutoff)
        fails = (errors[g] >= cutoff).any(dim=2).numpy()  # (M, B)
        failing = [set(labels["query_block"][f]) for f in fails]
        diag = pd.concat([diag, selectivity_columns(log_selectivity(heads[r], blocks, width),
                                                    failing)], axis=1)
        diag.insert(0, "seed", np.asarray(seeds)[diag.pop("slot").to_numpy()])
        diag.insert(0, "rank", r)
        parts.append(diag)
    diag = pd.concat(parts, ignore_index=True)
    keep = ["experiment", "instance", "feature_map", "rank", "seed", "steps_total", *METRICS]
    out = fin[keep].merge(diag, on=["rank", "seed"], how="inner", validate="one_to_one")
    if len(out) != len(fin):
        raise ValueError(f"family K={blocks}, w={width}: weights and metrics cover different "
                         "(rank, seed) pairs")
    rebuilt = (errors.amax(dim=(2, 3)).flatten().numpy())
    logged = fin.sort_values(["rank", "seed"])[TEST_WORST_CASE_ERROR].to_numpy()
    if len(rebuilt) != len(logged) or not np.allclose(rebuilt, logged, atol=REBUILD_TOLERANCE):
        raise ValueError(f"family K={blocks}, w={width}: the rebuilt heads' worst-case errors "
                         f"{np.round(rebuilt, 4)} differ from the job's {np.round(logged, 4)}")
    out.insert(0, "r_lb", witness_lower_bound(blocks, width))
    out.insert(0, "m", m)
    out.insert(0, "width", width)
    out.insert(0, "blocks", blocks)
    out.insert(out.columns.get_loc(TEST_WORST_CASE_ERROR), "exact", out[TEST_WORST_CASE_ERROR] < cutoff)
    return out.sort_values(["rank", "seed"]).reset_index(drop=True)


def proven_log_selectivity(width: int) -> float:
    """The proof's necessary condition (docs/methods.md, the witness family): a query block whose
    inputs are all exact at the query has α(q_a, k_b) < α(q_a, k_a) / (w − 1) for every b ≠ a,
    i.e. log-selectivity > log(w − 1); −inf (no condition) for w = 1."""
    return math.log(width - 1) if width > 1 else -math.inf


DIAGNOSTIC = ("failing_inputs", "n_inputs", "solved_query_blocks", "fail_query_token",
              "fail_key_token", *(f"fail_{p}" for p in PATTERNS))


def summary_with_diagnostic(table: pd.DataFrame, cutoff: float) -> pd.DataFrame:
    """``witness_sweep.family_summary`` plus, at each family's rank below the transition, how many
    seeds fail there and the diagnostic's mean over seeds (``below_*``; NaN where no rank lies
    below); and over the whole family, the largest number of query blocks any head solves at a
    rank r < K minus r (``max_solved_blocks_over_rank``: ≤ 0 when no head below K solves more blocks
    than it has features), the log-selectivity that separates solved from failing blocks (the
    smallest over solved blocks, the largest over failing ones, over every head) and the proof's
    lower limit for solved blocks, log(w − 1) (``log_selectivity_proven``)."""
    summary = family_summary(table, cutoff)
    diag = list(DIAGNOSTIC)
    rows = []
    for s in summary.itertuples():
        fam = table[(table["blocks"] == s.blocks) & (table["width"] == s.width)]
        at = fam[fam["rank"] == s.rank_below]
        row = (at[diag].mean() if len(at) else pd.Series(np.nan, index=diag)).add_prefix("below_")
        row["below_seeds_failing"] = int((~at["exact"]).sum()) if len(at) else np.nan
        small = fam[fam["rank"] < s.blocks]
        row["max_solved_blocks_over_rank"] = (float((small["solved_query_blocks"]
                                                     - small["rank"]).max())
                                              if len(small) else np.nan)
        row["log_selectivity_solved_min"] = fam["log_selectivity_solved_min"].min()
        row["log_selectivity_failed_max"] = fam["log_selectivity_failed_max"].max()
        row["log_selectivity_proven"] = proven_log_selectivity(s.width)
        rows.append(row)
    return pd.concat([summary, pd.DataFrame(rows).reset_index(drop=True)], axis=1)


def witness_families_tables(inputs: Sequence[str | Path], job: WitnessFamiliesTableJob
                            ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(table, summary) of the sweep. ``inputs``: metrics and weights per family, in the job's
    family order."""
    from attnrank.core.io import read_table

    families, cutoff = job.families, float(job.worst_case_cutoff)
    if len(inputs) != 2 * len(families):
        raise ValueError(f"expected a metrics table and a weights file per family "
                         f"({2 * len(families)} inputs), got {len(inputs)}")
    parts = []
    for fam, metrics_path, weights_path in zip(families, inputs[::2], inputs[1::2], strict=True):
        if Path(metrics_path).suffix != ".parquet" or Path(weights_path).suffix != ".npz":
            raise ValueError(f"family K={fam.blocks}, w={fam.width}: expected metrics "
                             f"(.parquet) then weights (.npz), got {metrics_path}, {weights_path}")
        log.info("witness family K=%d, w=%d from %s", fam.blocks, fam.width, metrics_path)
        with np.load(weights_path) as npz:
            weights = {k: npz[k] for k in npz.files}
        parts.append(family_rows(read_table(metrics_path), weights, fam.blocks, fam.width,
                                 job.feature, cutoff))
    table = pd.concat(parts, ignore_index=True)
    return table, summary_with_diagnostic(table, cutoff)


def step(job: WitnessFamiliesTableJob, inputs: Sequence[str | Path]) -> dict[str, Any]:
    """The minip_witness_families step: the per-(family, rank, seed) ``out`` table and the
    per-family ``summary`` (also as ``csv``)."""
    table, summary = witness_families_tables(inputs, job)
    return {"out": table, "summary": summary, "csv": summary}
