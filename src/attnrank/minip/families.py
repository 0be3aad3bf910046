"""The model families of the Min-IP wing and the one spelling of a model group's identity.

Standard library only: the typed jobs (``minip.jobs``, imported while the workflow parses) check
restart cases against it. The models themselves are built by ``minip.models.build_head``.

A group is one family at one feature rank (the dense baseline has none). Its identity has three
spellings, each derived here and nowhere else:
    ``family``       the tables' ``model`` column (``kernel``, ``dense``);
    ``tag``          the weights' key prefix and the init seed role (``kernel-r8``, ``dense``);
    ``name``         the config's short name (restart cases: ``r8``, ``dense``).
"""

from __future__ import annotations

from dataclasses import dataclass

KERNEL = "kernel"  # normalized nonnegative kernel attention of feature rank r
DENSE = "dense"  # dense softmax attention (score dimension m), the baseline
FAMILIES = (KERNEL, DENSE)
NO_RANK = -1  # the tables' ``rank`` of a group without a feature rank
NO_FEATURE_MAP = "none"  # the tables' ``feature_map`` of a group without feature maps


@dataclass(frozen=True)
class Group:
    """One model group of a job: ``family`` (one of FAMILIES) and, for a kernel head, its rank."""

    family: str
    rank: int | None = None

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"model family must be one of {', '.join(FAMILIES)}, got "
                             f"{self.family!r}")
        if (self.family == KERNEL) != (self.rank is not None):
            raise ValueError(f"a {KERNEL} group has a rank and a {DENSE} group none, got "
                             f"{self.family!r} with rank {self.rank!r}")
        if self.rank is not None and (not isinstance(self.rank, int) or self.rank < 1):
            raise ValueError(f"a feature rank is an integer ≥ 1, got {self.rank!r}")

    @property
    def tag(self) -> str:
        """``kernel-r<rank>`` or ``dense``: the weights' key prefix and the init seed role."""
        return self.family if self.rank is None else f"{self.family}-r{self.rank}"

    @property
    def name(self) -> str:
        """``r<rank>`` or ``dense``: how the config names the group."""
        return self.family if self.rank is None else f"r{self.rank}"

    @property
    def rank_column(self) -> int:
        """The tables' ``rank``: the feature rank, NO_RANK for the dense baseline."""
        return NO_RANK if self.rank is None else self.rank

    @classmethod
    def parse(cls, name: str) -> Group:
        """A config name (``dense``, ``r32``) → its group; ValueError on anything else."""
        if name == DENSE:
            return cls(DENSE)
        if not (name.startswith("r") and name[1:].isdigit() and int(name[1:]) >= 1):
            raise ValueError(f"a model is {DENSE!r} or 'r<rank>', got {name!r}")
        return cls(KERNEL, int(name[1:]))

    @classmethod
    def from_tag(cls, tag: str) -> Group:
        """A weights prefix (``kernel-r8``, ``dense``) → its group."""
        if tag == DENSE:
            return cls(DENSE)
        family, _, rank = tag.rpartition("-r")
        if family != KERNEL or not rank.isdigit():
            raise ValueError(f"a group tag is {DENSE!r} or '{KERNEL}-r<rank>', got {tag!r}")
        return cls(KERNEL, int(rank))


def job_groups(ranks: tuple[int, ...], dense: bool) -> list[Group]:
    """A training job's groups, in table order: the kernel ranks, then the dense baseline."""
    return [Group(KERNEL, r) for r in ranks] + ([Group(DENSE)] if dense else [])
