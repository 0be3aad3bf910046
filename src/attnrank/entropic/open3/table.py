"""OPEN-3's judged tables (docs/methods.md §2.9): r_attn per cell, every reading's error against
it per (cell, S), and S_min per (reading, teacher, d, spectrum).

A cell is (d, spectrum, teacher, β, r*). r_attn is measured from the student sweeps at the sweeps'
d (``measured_rattn``) and carried, labelled, to the cells no student was trained for
(``targets``: rules (a) and (b) of §2.9). A reading is an estimator's matrix read by one rank
estimator (``READINGS``). At a grid S a cell passes when |reading − r_attn| ≤ the tolerance on
⌈quorum·n⌉ of its n seeds (``cell_errors``); S_min is the smallest S after which every S of the
grid has every cell with a target passing, censored when the largest S fails (``s_min``).

The step (``step``) reads the tables by file stem and writes the S_min table (``out``, and the
same as CSV), the errors (``errors``) and the targets (``rattn``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from attnrank.core.claims import quorum_size
from attnrank.core.columns import EXCESS
from attnrank.entropic.jobs import LINEAR
from attnrank.entropic.open3.jobs import (
    ATTENTION_TABLE,
    CANDIDATE_TABLE,
    FLOOR_RANK,
    PREDICT_TABLE,
    Open3TableJob,
)

CELL = ["d", "spectrum", "teacher", "beta", "r_star"]
GROUP = ["estimator", "reading", "teacher", "beta", "d", "spectrum"]
SHAPE_READINGS = ("energy_effective_rank", "entropy_effective_rank", "stable_rank")
NUMERICAL_PREFIX = "numerical_rank_tau"
MEASURED, CENSORED, NONE = "measured", "censored", "none"
SAME_CELL = "assumed: same cell at d = {d}"
EQUALS_R_STAR = "assumed: r_attn = r* on every measured r*"
# The input tables, by file stem: the student sweeps and the estimates.
STUDENT_TABLES = ("entropic_attention", ATTENTION_TABLE)
ESTIMATE_TABLES = ("entropic_predict", "entropic_predict_d32", PREDICT_TABLE, CANDIDATE_TABLE)
SHORT = {"energy_effective_rank": "R̃_eff", "entropy_effective_rank": "entropy rank",
         "stable_rank": "stable rank", FLOOR_RANK: "floor rank"}


def readings(columns: Sequence[str]) -> list[str]:
    """The rank-reading columns among ``columns``: the numerical rank at every τ, R̃_eff, the
    entropy and the stable rank, and the floor rank (the candidate's)."""
    num = sorted((c for c in columns if c.startswith(NUMERICAL_PREFIX)),
                 key=lambda c: float(c.removeprefix(NUMERICAL_PREFIX)))
    return num + [c for c in (*SHAPE_READINGS, FLOOR_RANK) if c in columns]


def reading_label(estimator: str, reading: str) -> str:
    """A reading in words: ``E2_centred floor rank``, ``E1 numerical rank τ=0.05``."""
    if reading.startswith(NUMERICAL_PREFIX):
        return f"{estimator} numerical rank τ={reading.removeprefix(NUMERICAL_PREFIX)}"
    return f"{estimator} {SHORT.get(reading, reading)}"


def teacher_label(kind: str, beta: float) -> str:
    """``linear`` or ``softmax β=<β>``."""
    return LINEAR if kind == LINEAR else f"{kind} β={beta:g}"


def measured_rattn(final: pd.DataFrame, floor: float, quorum: float) -> pd.DataFrame:
    """r_attn of every swept cell, from the students' final rows (columns ``CELL``, ``rank``,
    ``seed``, excess): the smallest rank whose excess ≤ ``floor`` on ⌈quorum·n⌉ of its n seeds;
    NaN and ``censored`` when no rank qualifies. One row per cell: r_attn, source, the seeds at
    that rank that reach the floor and the seeds of the cell (``at_floor``, ``seeds``)."""
    rows = []
    for cell, part in final.groupby(CELL, sort=True):
        r_attn, at, n_seeds = np.nan, 0, int(part["seed"].nunique())
        for rank, g in sorted(part.groupby("rank")):
            k = int((g[EXCESS] <= floor).sum())
            if k >= quorum_size(len(g), quorum):
                r_attn, at = float(rank), k
                break
        rows.append(dict(zip(CELL, cell, strict=True), r_attn=r_attn, at_floor=at,
                         seeds=n_seeds, source=MEASURED if np.isfinite(r_attn) else CENSORED))
    return pd.DataFrame(rows, columns=[*CELL, "r_attn", "at_floor", "seeds", "source"])


def targets(measured: pd.DataFrame, cells: pd.DataFrame, d_measured: int) -> pd.DataFrame:
    """r_attn and its source for every cell of ``cells`` (columns ``CELL``) and every measured
    cell: measured (or censored) where swept; else (a) at another d the same (spectrum, teacher,
    β, r*) measured at ``d_measured``, uncensored; else (b) r* when every measured cell of the
    same (spectrum, teacher, β) at ``d_measured`` is uncensored with r_attn = r*; else none."""
    key = ["spectrum", "teacher", "beta"]
    meas = measured[measured["d"] == d_measured]
    by_cell = {tuple(r[c] for c in CELL): r for r in meas.to_dict("records")}
    by_key = {k: g for k, g in meas.groupby(key)}
    rows = [dict(r) for r in measured.to_dict("records")]
    seen = set(by_cell) | {tuple(r[c] for c in CELL) for r in rows}
    for cell in cells[CELL].drop_duplicates().itertuples(index=False):
        cell = tuple(cell)
        if cell in seen:
            continue
        d, spec, kind, beta, r_star = cell
        row = dict(zip(CELL, cell, strict=True), r_attn=np.nan, at_floor=0, seeds=0, source=NONE)
        same = by_cell.get((d_measured, spec, kind, beta, r_star))
        group = by_key.get((spec, kind, beta))
        if d != d_measured and same is not None and same["source"] == MEASURED:
            row.update(r_attn=same["r_attn"], source=SAME_CELL.format(d=d_measured))
        elif (same is None and group is not None and len(group)
              and bool((group["source"] == MEASURED).all())
              and bool((group["r_attn"] == group["r_star"]).all())):
            row.update(r_attn=float(r_star), source=EQUALS_R_STAR)
        rows.append(row)
        seen.add(cell)
    out = pd.DataFrame(rows, columns=[*CELL, "r_attn", "at_floor", "seeds", "source"])
    return out.sort_values(CELL, ignore_index=True)


def long_readings(estimates: pd.DataFrame) -> pd.DataFrame:
    """The estimates as one row per (estimator, reading, cell, seed, S) with its ``value``
    (rows where a reading is missing, e.g. the floor rank of another estimator, dropped)."""
    cols = readings(list(estimates.columns))
    keep = ["estimator", *CELL, "seed", "S"]
    long = estimates[keep + cols].melt(id_vars=keep, value_vars=cols, var_name="reading")
    return long.dropna(subset=["value"]).reset_index(drop=True)


def cell_errors(estimates: pd.DataFrame, target: pd.DataFrame, tol: float,
                quorum: float) -> pd.DataFrame:
    """Per (reading, cell with a target, S): the seeds, those within ``tol`` of r_attn, the
    quorum error (the ⌈quorum·n⌉-th smallest |error|), the median error and whether it passes."""
    long = long_readings(estimates)
    tgt = target[np.isfinite(target["r_attn"])][[*CELL, "r_attn", "source"]]
    long = long.merge(tgt, on=CELL, how="inner")
    long["error"] = long["value"] - long["r_attn"]
    rows = []
    for key, g in long.groupby(["estimator", "reading", *CELL, "S"], sort=True):
        err = np.sort(np.abs(g["error"].to_numpy()))
        k = quorum_size(len(err), quorum)
        rows.append(dict(zip(["estimator", "reading", *CELL, "S"], key, strict=True),
                         r_attn=float(g["r_attn"].iloc[0]), source=g["source"].iloc[0],
                         seeds=len(err), within=int((err <= tol).sum()),
                         quorum_error=float(err[k - 1]),
                         median_error=float(np.median(g["error"])),
                         passes=bool(err[k - 1] <= tol)))
    out = pd.DataFrame(rows)
    if len(out):
        out.insert(2, "label", [reading_label(e, r) for e, r in zip(out["estimator"],
                                                                    out["reading"], strict=True)])
    return out


def smallest_sufficient(passes: pd.Series) -> float:
    """The smallest S (the index, ascending) after which every S passes; NaN when the largest
    fails."""
    out = np.nan
    for s_, ok in passes.sort_index(ascending=False).items():
        if not ok:
            break
        out = float(s_)
    return out


def s_min(errors: pd.DataFrame) -> pd.DataFrame:
    """Per (reading, teacher, β, d, spectrum): the S grid, the S at which every cell with a target
    passes, S_min (``smallest_sufficient``; NaN when censored), its status (``S_min`` or
    ``censored``), the r* judged and the largest quorum error at the largest S."""
    rows = []
    for key, g in errors.groupby(GROUP, sort=True):
        by_s = g.groupby("S")["passes"].all()
        top = g[g["S"] == g["S"].max()]
        smin = smallest_sufficient(by_s)
        rows.append(dict(zip(GROUP, key, strict=True), label=g["label"].iloc[0],
                         S_grid=",".join(str(int(s)) for s in by_s.index),
                         passing_S=",".join(str(int(s)) for s, ok in by_s.items() if ok),
                         S_min=smin, status="S_min" if np.isfinite(smin) else "censored",
                         r_star=",".join(str(int(r)) for r in sorted(g["r_star"].unique())),
                         assumed_cells=int(g.drop_duplicates("r_star")["source"]
                                           .str.startswith("assumed").sum()),
                         quorum_error_at_max_S=float(top["quorum_error"].max())))
    return pd.DataFrame(rows)


def open3_tables(tables: dict[str, pd.DataFrame], job: Open3TableJob
                 ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(S_min, errors, targets) from the run's tables by file stem (``STUDENT_TABLES``,
    ``ESTIMATE_TABLES``)."""
    students = pd.concat([tables[t] for t in STUDENT_TABLES], ignore_index=True)
    if "final" in students.columns:
        students = students[students["final"].astype(bool)]
    estimates = pd.concat([tables[t] for t in ESTIMATE_TABLES], ignore_index=True)
    measured = measured_rattn(students, job.noise_floor, job.seed_quorum)
    target = targets(measured, estimates, job.d)
    errors = cell_errors(estimates, target, job.rank_tolerance, job.seed_quorum)
    summary = s_min(errors)
    for name, value in (("noise_floor", job.noise_floor), ("rank_tolerance", job.rank_tolerance),
                        ("seed_quorum", job.seed_quorum)):
        summary[name] = value
    return summary, errors, target


def step(job: Open3TableJob, inputs: Sequence[str | Path]) -> dict[str, Any]:
    """The entropic_open3 step: ``out`` (S_min, also as ``csv``), ``errors``, ``rattn``."""
    from attnrank.core.io import read_table

    tables = {Path(p).stem: read_table(p) for p in inputs}
    missing = [t for t in (*STUDENT_TABLES, *ESTIMATE_TABLES) if t not in tables]
    if missing:
        raise ValueError(f"entropic_open3: inputs lack the tables {', '.join(missing)}")
    summary, errors, target = open3_tables(tables, job)
    return {"out": summary, "csv": summary, "errors": errors, "rattn": target}
