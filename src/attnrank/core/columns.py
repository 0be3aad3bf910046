"""Names of the result tables' metric columns that both the figures and the claims read.

Standard library only. A column that is renamed here is renamed for every reader at once.
"""

from __future__ import annotations

# Min-IP training tables (minip_length_sweep, minip_rank_vs_m, minip_witness, minip_ood,
# minip_capacity): held-out metrics of one trained head.
TEST_SEQUENCE_ACCURACY = "test_sequence_accuracy"  # fraction of sequences with every position right
TEST_WORST_CASE_ERROR = "test_worst_case_error"  # max |ŷ − t| over the held-out sequences
# minip_ood*: the same accuracy on the first min(8192, train_pool) sequences of the train pool
TRAIN_SEQUENCE_ACCURACY = "train_sequence_accuracy"

# minip_constructions: the same metrics of a hand-built head, without the "test_" prefix.
SEQUENCE_ACCURACY = "sequence_accuracy"
WORST_CASE_ERROR = "worst_case_error"

# Entropic tables: risk of a trained student in excess of the noise, and the Eckart–Young bound.
EXCESS = "excess"  # held-out excess risk
EXCESS_POPULATION = "excess_population"  # exact population excess risk
BOUND = "bound"  # Eckart–Young lower bound on the excess risk at this rank

# Rank estimates of a learned or estimated operator.
ENERGY_EFFECTIVE_RANK = "energy_effective_rank"  # R̃_eff
ENTROPY_EFFECTIVE_RANK = "entropy_effective_rank"


def numerical_rank(tau: float) -> str:
    """The column of the numerical rank at relative threshold ``tau`` (e.g. numerical_rank_tau0.05)."""
    return f"numerical_rank_tau{tau:g}"
