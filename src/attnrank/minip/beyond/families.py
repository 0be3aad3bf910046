"""The Min-IP families beyond the single head (docs/methods.md §3.9, TT-7): names and groups.

Standard library only (the typed jobs import it while the workflow parses). A group is one
family at one total feature budget F (and, for ``multihead``, a head count H); its identity:
    ``family``   the tables' ``model`` column;
    ``label``    the figure's and the claims' name of a line: ``H=2``, ``differential``, …;
    ``tag``      the weights' key prefix and the init seed role: ``multihead-H2-F8``, ….
The models are built by ``minip.beyond.models.build_beyond_head``.
"""

from __future__ import annotations

from dataclasses import dataclass

PLAIN = "kernel"  # the single normalized nonnegative head (trained by B2/B3: the reference)
MULTIHEAD = "multihead"  # H nonnegative heads of rank F/H, own values, summed (OPEN-1)
DIFFERENTIAL = "differential"  # π⁺ − λπ⁻, two heads of rank F/2, λ learned (OPEN-2)
SIGNED_LINEAR = "signed_linear"  # α = ⟨a_Q, a_K⟩ signed, π = α / (|Σα| + ε) (OPEN-2)
POSITIONAL = "positional"  # feature maps that see the token's position (TT-7)
CAUSAL_FINAL = "causal_final"  # only the last position queries, loss and accuracy there (TT-7)
BEYOND_FAMILIES = (MULTIHEAD, DIFFERENTIAL, SIGNED_LINEAR, POSITIONAL, CAUSAL_FINAL)
GROUP_FAMILIES = (PLAIN, *BEYOND_FAMILIES)  # a job's groups: the single head as the reference


@dataclass(frozen=True)
class BeyondGroup:
    """One family (or the single head, ``kernel``) at total feature budget ``budget`` (F);
    ``heads``: H for multihead, else 1."""

    family: str
    budget: int
    heads: int = 1

    def __post_init__(self) -> None:
        if self.family not in GROUP_FAMILIES:
            raise ValueError(f"a family is one of {', '.join(GROUP_FAMILIES)}, got "
                             f"{self.family!r}")
        if not isinstance(self.budget, int) or self.budget < 1:
            raise ValueError(f"a feature budget F is an integer ≥ 1, got {self.budget!r}")
        if not isinstance(self.heads, int) or self.heads < 1 or (
                self.family != MULTIHEAD and self.heads != 1):
            raise ValueError(f"H ≥ 1 heads, and H > 1 only for {MULTIHEAD}, got {self}")
        if self.budget % self.splits:
            raise ValueError(f"F = {self.budget} does not split into {self.splits} equal heads")

    @property
    def splits(self) -> int:
        """How many kernel heads share the budget: H, 2 for differential, else 1."""
        return 2 if self.family == DIFFERENTIAL else self.heads

    @property
    def final_only(self) -> bool:
        """Loss and metrics on the last position only (the causal final-query formulation)."""
        return self.family == CAUSAL_FINAL

    @property
    def label(self) -> str:
        return f"H={self.heads}" if self.family == MULTIHEAD else self.family

    @property
    def tag(self) -> str:
        h = f"-H{self.heads}" if self.family == MULTIHEAD else ""
        return f"{self.family}{h}-F{self.budget}"


def family_groups(families: tuple[str, ...], heads: tuple[int, ...], budgets: tuple[int, ...]
                  ) -> list[BeyondGroup]:
    """Every group of a job, family by family (multihead: H by H), budgets ascending; a budget
    that does not split into the family's heads (F < H, odd F for differential) is skipped."""
    out: list[BeyondGroup] = []
    for family in families:
        for h in (heads if family == MULTIHEAD else (1,)):
            splits = 2 if family == DIFFERENTIAL else h
            out += [BeyondGroup(family, f, h) for f in sorted(budgets) if f % splits == 0]
    return out
