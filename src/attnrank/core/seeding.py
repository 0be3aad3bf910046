"""The seed scheme: every random object derives from (experiment, task instance, seed index, role).

No global RNG state is used anywhere. A seed is a ``numpy.random.SeedSequence`` whose entropy is
built from stable 32-bit hashes of the names, so it does not depend on job order, on how many jobs
ran at once, or on Python's per-process string hashing.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # torch is imported where a torch generator is made: numpy users stay light
    import torch


def _word(part: str | int) -> int:
    if isinstance(part, (int, np.integer)):
        if part < 0:
            raise ValueError(f"seed parts must be non-negative, got {part}")
        return int(part)
    return zlib.crc32(str(part).encode("utf-8"))


def seed_sequence(*parts: str | int) -> np.random.SeedSequence:
    """SeedSequence for a tuple such as ("B1", "N=3", seed_index, "init")."""
    return np.random.SeedSequence([_word(p) for p in parts])


def numpy_rng(*parts: str | int) -> np.random.Generator:
    """A numpy Generator owned by exactly one random object."""
    return np.random.default_rng(seed_sequence(*parts))


def seed_indices(seeds: int, seed_offset: int) -> list[int]:
    """The seed indices of a job: ``seed_offset, …, seed_offset + seeds − 1``.

    ``seed_offset`` (config, 0 for the reference) shifts every seed index, so a run with another
    offset draws a disjoint set of teachers, data and initializations (a held-out run).
    """
    if seed_offset < 0 or seeds < 1:
        raise ValueError(f"seed_offset must be ≥ 0 and seeds ≥ 1, got seed_offset={seed_offset}, "
                         f"seeds={seeds}")
    return list(range(seed_offset, seed_offset + seeds))


def torch_seed(*parts: str | int) -> int:
    """A 63-bit integer seed for ``torch.Generator.manual_seed``."""
    lo, hi = (int(v) for v in seed_sequence(*parts).generate_state(2, dtype=np.uint32))
    return ((hi & 0x7FFFFFFF) << 32) | lo


def torch_generator(*parts: str | int, device: str | torch.device = "cpu") -> torch.Generator:
    """A torch.Generator seeded from the scheme (on ``device``)."""
    import torch

    g = torch.Generator(device=device)
    g.manual_seed(torch_seed(*parts))
    return g
