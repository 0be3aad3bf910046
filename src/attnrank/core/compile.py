"""Compiled pure tensor functions: ``torch.compile`` where it can run, the function itself where not.

A compiled function computes the same equation as its eager form; only the order of float
operations differs (inductor fuses a broadcast, its reduction and the backward into one loop
each, so the large intermediate tensors are never written). Every caller decides whether to
compile from its job's parameters (a result may differ from eager in the last bits, so the choice
is part of what a step's outputs depend on, never a property of the machine); where no C++
compiler is found (inductor needs one for CPU kernels), ``compiled`` returns the eager function
and logs one notice.

Shapes are dynamic (``dynamic=True``): one compiled graph serves every size of an axis except the
sizes 0 and 1 and, without duck shaping, axes of equal size are not tied together, so the kernels a
job writes to inductor's on-disk cache (``TORCHINDUCTOR_CACHE_DIR``, set by the pipeline to the
run folder's ``.cache/``) are reused by every other job and every rank group of any size.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
from collections.abc import Callable
from typing import TypeVar

log = logging.getLogger("attnrank.core.compile")

F = TypeVar("F", bound=Callable)
RECOMPILE_LIMIT = 64  # graphs per function (sizes 0/1 are specialised: a few per function suffice)


def cxx_compiler() -> str | None:
    """The C++ compiler inductor would use on the CPU ($CXX, else g++, c++, clang++), or None."""
    for name in (os.environ.get("CXX"), "g++", "c++", "clang++"):
        if name and shutil.which(name):
            return name
    return None


@functools.cache
def _configure() -> bool:
    """Set dynamo's limits once per process; False (with a notice) when no C++ compiler exists."""
    if cxx_compiler() is None:
        log.warning("compile: no C++ compiler found (set CXX, or install g++): the compiled "
                    "functions run eagerly, so results may differ from a compiled run in the last "
                    "bits")
        return False
    import torch._dynamo
    import torch.fx.experimental._config as fx_config

    torch._dynamo.config.recompile_limit = RECOMPILE_LIMIT
    torch._dynamo.config.accumulated_recompile_limit = 16 * RECOMPILE_LIMIT
    fx_config.use_duck_shape = False  # a size equal to another's by chance ties no graph to it
    return True


def compiled(fn: F) -> F:
    """``fn`` (a pure function of tensors, no Python side effects) compiled with dynamic shapes and
    no graph breaks; ``fn`` itself when no C++ compiler is available."""
    if not _configure():
        return fn
    import torch

    return torch.compile(fn, dynamic=True, fullgraph=True)  # type: ignore[return-value]
