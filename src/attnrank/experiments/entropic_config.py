"""Cross-key checks of the ``entropic`` config block (Paper A) that the JSON schema cannot express.

Standard library only: the workflow imports this module while it parses the Snakefile.
"""

from __future__ import annotations

from typing import Any


def check_config(ent: dict[str, Any]) -> None:
    """Cross-key checks of the ``entropic`` config block that the JSON schema cannot express.
    Raises ValueError with a message that names the offending key."""
    n, d, e = int(ent["n_tokens"]), int(ent["d"]), int(ent["e"])
    cap = min(n, d)
    for scale, g in ent["scales"].items():
        where = f"entropic.scales.{scale}"
        for exp in ("surrogate", "ladder", "attention", "predict"):
            r_stars = g[exp]["r_star"]
            r_stars = r_stars if isinstance(r_stars, list) else [r_stars]
            bad = [r for r in r_stars if r > cap]
            if bad:
                raise ValueError(f"{where}.{exp}.r_star: r* = {bad} exceeds min(N, d) = "
                                 f"min({n}, {d}) = {cap}")
        for key, limit, name in (("ranks", n, "N"), ("gd_ranks", n, "N")):
            bad = [r for r in g["surrogate"][key] if r > limit]
            if bad:
                raise ValueError(f"{where}.surrogate.{key}: ranks {bad} exceed {name} = {limit}")
        bad = [r for r in g["attention"]["ranks"] if r > d]
        if bad:
            raise ValueError(f"{where}.attention.ranks: ranks {bad} exceed d = {d}")
        for key in ("betas",):
            bad = [b for b in g["attention"][key] if not b > 0]
            if bad:
                raise ValueError(f"{where}.attention.{key}: β must be > 0, got {bad}")
        bad = [b for b in g["predict"]["betas"] if not b > 0]
        if bad:
            raise ValueError(f"{where}.predict.betas: β must be > 0, got {bad}")
        # E1 solves for the d² entries of K from S·N·e equations: S must give at least d² of them.
        min_s = -(-d * d // (n * e))
        bad = [s for s in g["predict"]["S"] if s < min_s]
        if bad:
            raise ValueError(f"{where}.predict.S: S = {bad} is smaller than the number of sequences "
                             f"E1 needs for its d² = {d * d} unknowns (S·N·e ≥ d², so S ≥ {min_s})")
        if not n > d:
            raise ValueError(f"entropic.n_tokens: the debiased E2 estimator needs N > d, got N={n}, d={d}")
