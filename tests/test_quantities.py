"""The quantities shared by figures and claims, on small constructed tables."""

import math

import pandas as pd
import pytest

from attnrank.core.quantities import (
    deviation_from_r_star,
    median_over_seeds,
    recovery_frontier,
    transition_ratios,
)
from attnrank.minip.quantities import crossing_rank, witness_lower_bound


def test_crossing_rank_uses_the_median_over_seeds_of_kernel_heads():
    rows = [{"model": "kernel", "m": m, "rank": r, "seed": s, "test_sequence_accuracy": a}
            for m, accs in ((4, {1: (0.5, 0.95, 0.95), 8: (1.0, 1.0, 1.0)}),
                            (6, {1: (0.1, 0.1, 0.1), 8: (0.2, 0.95, 0.3)}))
            for r, acc in accs.items() for s, a in enumerate(acc)]
    rows.append({"model": "dense", "m": 6, "rank": -1, "seed": 0, "test_sequence_accuracy": 1.0})
    cross = crossing_rank(pd.DataFrame(rows), 0.9, "m")
    assert cross.to_dict() == {4: 1.0, 6: math.inf}


def test_witness_lower_bound_is_min_of_blocks_and_width():
    assert witness_lower_bound(8, 3) == 3 and witness_lower_bound(2, 5) == 2


def test_transition_ratios_skip_missing_ranks_and_r_star_1():
    rows = [{"r_star": rs, "seed": 0, "rank": r, "excess": e}
            for rs, r, e in ((1, 1, 0.1), (2, 1, 0.5), (2, 2, 0.01), (3, 3, 0.0), (3, 2, 0.4),
                             (4, 4, 0.1))]
    assert transition_ratios(pd.DataFrame(rows)) == [(2, 0, 50.0), (3, 0, math.inf)]


def test_recovery_frontier_is_the_worst_r_star_per_s():
    rows = [{"S": s, "r_star": rs, "seed": seed, "energy_effective_rank": rs + off * (seed + 1)}
            for s, off in ((32, 1.0), (4096, 0.05)) for rs in (2, 4) for seed in range(3)]
    df = pd.DataFrame(rows)
    front = recovery_frontier(df)
    assert front.index.name == "S"
    assert front[32] == 2.0 and front[4096] == pytest.approx(0.1)
    reff = median_over_seeds(df, ["S", "r_star"], "energy_effective_rank")
    assert deviation_from_r_star(reff).groupby(level="S").max().equals(front)
