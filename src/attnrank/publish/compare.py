"""Compare a run's tables and claims against the committed reference, within stated tolerances.

Tables (``tables/*.parquet`` present in both folders)
    Columns are split into *keys* and *values*. Keys: every non-float column (strings, ints,
    bools, categories), plus the float configuration columns in ``FLOAT_KEY_COLUMNS`` (``beta``,
    ``lr``, ...); values: every other float column, plus the non-float measurements in
    ``NON_FLOAT_VALUE_COLUMNS`` (``early_stopped_step``, ``selected``, ...) and, per table,
    ``TABLE_VALUE_COLUMNS``, compared as numbers. ``keys=`` overrides this per table. Rows are
    grouped on the keys other than ``seed``; for each group and value column the mean over seeds
    in the run is compared with the mean over seeds in the reference::

        |run_mean - ref_mean| <= tol,   tol = max(abs_tol, rtol * |ref_mean|, k * spread)

    where ``spread`` is the larger of the two groups' seed-to-seed standard deviations (ddof=1; 0
    for a single-seed group, so it then falls back to ``abs_tol`` / ``rtol``): both runs are draws
    over seeds, so the check is the same either way round. A mean is NaN when any seed is NaN; two
    NaNs (or two equal infinities) agree, one NaN does not.

    Defaults (``Tolerances``): ``abs_tol=1e-9``, ``rtol=1e-3``, ``k=3``. They are recorded in the
    report ("stated tolerances"). They are set so that a platform's float rounding is not a
    difference: two smoke runs on one host whose vector kernels and matrix products were switched
    to other code paths (``ATEN_CPU_CAPABILITY=default``, ``MKL_CBWR=COMPATIBLE``: other rounding,
    as on another CPU) differed in about 1,900 of their values, by up to 6e-4 relative in groups
    with a seed spread and up to 7e-6 in single-seed groups; ``rtol`` covers the latter with
    margin, the seed spread the former. The one family whose training is chaotic under rounding,
    the normalized signed linear kernel (a denominator near 0), moved by more than either seed
    spread in 2-3 of its groups per pair of such runs: its rows (``ROUNDING_CHAOTIC``) must be
    present on both sides, their values are not compared (the summary counts them); the claims'
    verdicts still are. A real change stays a difference: the same smoke run with Min-IP's peak
    learning rate 10 % higher had 66 values out of tolerance in 10 of the Min-IP tables.

Claims (``claims.csv``)
    Joined on ``id``; a different ``verdict`` is a difference.

``report.ok`` is False when any value is out of tolerance, a verdict differs, a table cannot be
compared (unreadable, key columns missing), or, unless ``allow_missing=True``, anything is present
on one side only (table, column, group of rows, claim, claims.csv).

Scales
    Two runs of different scales (``full``, ``smoke``: their grids differ) are not compared:
    ``compare_runs`` raises ``ScaleMismatch`` naming both. A folder's scale is the one its claims
    sidecar records (``claims.md.prov.json``), else its tables' sidecars', else the run folder a
    published reference was made from (``MANIFEST.json``); a folder without any says nothing
    and is compared.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pandas.api import types as ptypes

SEED = "seed"
FLOAT_KEY_COLUMNS = frozenset({"beta", "lr", "init_std", "noise_var", "tau", "temperature"})
NON_FLOAT_VALUE_COLUMNS = frozenset({"early_stopped_step", "selected", "model_bits_cover_bound"})
# Per table, non-float columns that are per-seed outcomes there: in entropic_surrogate the GD rows
# are the early-stopping selection, whose step (and final flag) differ from seed to seed.
TABLE_VALUE_COLUMNS: dict[str, frozenset[str]] = {"entropic_surrogate": frozenset({"step", "final"})}
# Per table, the rows (key column, value) of a model whose training is chaotic under float
# rounding: their groups must be present on both sides, their values are not compared (module
# docstring). The normalized signed linear kernel divides by |Σα| + ε, ε = 1e-3: two smoke runs
# that differ only in rounding put its metrics anywhere in their range (a seed's train loss 0.7
# in one, 4.5 in the other), at every scale by the same mechanism.
ROUNDING_CHAOTIC: dict[str, tuple[str, str]] = {"minip_beyond": ("model", "signed_linear"),
                                                "minip_beyond_growth": ("line", "signed_linear")}
DEFAULT_ABS_TOL = 1e-9
DEFAULT_RTOL = 1e-3
DEFAULT_K = 3.0
DEFAULT_MAX_OFFENDERS = 10
_EXAMPLES = 10  # groups/claims listed by name when only on one side
_SIDECAR = ".prov.json"


class ScaleMismatch(ValueError):
    """The two folders are runs of different scales (their grids differ)."""


@dataclass(frozen=True)
class Tolerances:
    """tol = max(abs_tol, rtol * |ref_mean|, k * the larger seed-to-seed std of the two groups)."""

    abs_tol: float = DEFAULT_ABS_TOL
    rtol: float = DEFAULT_RTOL
    k: float = DEFAULT_K

    def __post_init__(self) -> None:
        for name in ("abs_tol", "rtol", "k"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"tolerance {name} must be a finite number >= 0, got {value!r}")


@dataclass
class Offender:
    """One group's value out of tolerance."""

    table: str
    column: str
    key: dict[str, Any]
    run: float | None
    ref: float | None
    tolerance: float
    ratio: float | None  # |run - ref| / tolerance; None when a side is NaN


@dataclass
class TableComparison:
    name: str
    keys: list[str] = field(default_factory=list)
    values: list[str] = field(default_factory=list)
    groups_matched: int = 0
    groups_only_in_run: int = 0
    groups_only_in_ref: int = 0
    examples_only_in_run: list[dict[str, Any]] = field(default_factory=list)
    examples_only_in_ref: list[dict[str, Any]] = field(default_factory=list)
    columns_only_in_run: list[str] = field(default_factory=list)
    columns_only_in_ref: list[str] = field(default_factory=list)
    compared: int = 0  # (group, value column) cells compared
    within: int = 0
    out_of_tolerance: int = 0
    worst: list[Offender] = field(default_factory=list)
    seed_sets_differ: int = 0  # matched groups whose seeds differ (informational)
    not_compared: int = 0  # values of ROUNDING_CHAOTIC rows, present on both sides, not compared
    duplicate_rows: int = 0  # rows whose keys + seed repeat in the reference (informational)
    error: str | None = None

    @property
    def structural(self) -> bool:
        """Whether anything is present on one side only."""
        return bool(self.groups_only_in_run or self.groups_only_in_ref
                    or self.columns_only_in_run or self.columns_only_in_ref)


@dataclass
class VerdictDifference:
    id: str
    run: str
    ref: str


@dataclass
class ClaimsComparison:
    matched: int = 0
    verdict_differences: list[VerdictDifference] = field(default_factory=list)
    only_in_run: list[str] = field(default_factory=list)
    only_in_ref: list[str] = field(default_factory=list)
    missing_files: list[str] = field(default_factory=list)  # claims.csv absent on one side only
    error: str | None = None  # a claims.csv is unreadable

    @property
    def structural(self) -> bool:
        return bool(self.only_in_run or self.only_in_ref or self.missing_files)


@dataclass
class CompareReport:
    run_dir: str
    ref_dir: str
    tolerances: Tolerances
    allow_missing: bool = False
    tables: list[TableComparison] = field(default_factory=list)
    tables_only_in_run: list[str] = field(default_factory=list)
    tables_only_in_ref: list[str] = field(default_factory=list)
    claims: ClaimsComparison = field(default_factory=ClaimsComparison)

    @property
    def out_of_tolerance(self) -> int:
        return sum(t.out_of_tolerance for t in self.tables)

    @property
    def structural(self) -> bool:
        """Whether a table, column, group, claim or claims.csv is present on one side only."""
        return bool(self.tables_only_in_run or self.tables_only_in_ref or self.claims.structural
                    or any(t.structural for t in self.tables))

    @property
    def errors(self) -> list[str]:
        errs = [f"tables/{t.name}.parquet: {t.error}" for t in self.tables if t.error]
        if self.claims.error:
            errs.append(f"claims.csv: {self.claims.error}")
        return errs

    @property
    def ok(self) -> bool:
        """False on any value out of tolerance, verdict difference, comparison error, or (unless
        ``allow_missing``) anything present on one side only."""
        return (self.out_of_tolerance == 0 and not self.claims.verdict_differences
                and not self.errors and (self.allow_missing or not self.structural))

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(ok=self.ok, out_of_tolerance=self.out_of_tolerance, structural=self.structural,
                    errors=self.errors)
        return data

    def to_json(self) -> str:
        """The whole report as JSON (NaN and infinities written as null)."""
        return json.dumps(_jsonable(self.to_dict()), indent=2, sort_keys=True) + "\n"

    def summary(self, brief: bool = False) -> str:
        """A few lines for a human: verdict, tolerances, per-table counts, worst offenders
        (``brief``: the tables that match and the claims' count when they match are left out)."""
        tol = self.tolerances
        lines = [f"compare {self.run_dir} against {self.ref_dir}: {'OK' if self.ok else 'DIFFERENT'}",
                 f"tolerance = max(abs_tol={tol.abs_tol:g}, rtol={tol.rtol:g}*|ref|, "
                 f"k={tol.k:g}*the larger seed std of the two)"]
        for t in self.tables:
            if brief and not (t.out_of_tolerance or t.error
                              or (t.structural and not self.allow_missing)):
                continue
            lines.append(_table_line(t))
            for o in t.worst[:3]:
                lines.append(f"    {o.column} at {_fmt_key(o.key)}: run {_fmt(o.run)}, "
                             f"reference {_fmt(o.ref)}, tolerance {o.tolerance:.3g}")
        for name in self.tables_only_in_run:
            lines.append(f"  {name}: only in run")
        for name in self.tables_only_in_ref:
            lines.append(f"  {name}: only in reference")
        c = self.claims
        if brief and not (c.error or c.missing_files or c.verdict_differences or c.structural):
            return "\n".join(lines)
        if c.error or c.missing_files:
            lines.append(f"  claims: {c.error or 'missing: ' + ', '.join(c.missing_files)}")
        else:
            lines.append(f"  claims: {c.matched} matched, {len(c.verdict_differences)} verdicts differ"
                         + (f", only in run: {', '.join(c.only_in_run)}" if c.only_in_run else "")
                         + (f", only in reference: {', '.join(c.only_in_ref)}" if c.only_in_ref else ""))
        for d in c.verdict_differences:
            lines.append(f"    {d.id}: run {d.run}, reference {d.ref}")
        return "\n".join(lines)


# ------------------------------------------------------------------------------------------ helpers


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def _table_line(t: TableComparison) -> str:
    """One summary line for a table: counts and what is present on one side only."""
    if t.error:
        return f"  {t.name}: cannot compare: {t.error}"
    extra = [f"{n} {what}" for n, what in ((t.groups_only_in_run, "groups only in run"),
                                            (t.groups_only_in_ref, "groups only in reference")) if n]
    for cols, side in ((t.columns_only_in_run, "run"), (t.columns_only_in_ref, "reference")):
        if cols:
            extra.append(f"columns only in {side}: {', '.join(cols)}")
    if t.not_compared:
        column, value = ROUNDING_CHAOTIC[t.name]
        extra.append(f"{t.not_compared} values of {column}={value} not compared: chaotic under "
                     "float rounding")
    return (f"  {t.name}: {t.groups_matched} groups, {t.compared} values, {t.within} within, "
            f"{t.out_of_tolerance} out of tolerance" + (f" ({'; '.join(extra)})" if extra else ""))


def _fmt(x: float | None) -> str:
    return "NaN" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.6g}"


def _fmt_key(key: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in key.items()) or "(whole table)"


def _plain(value: Any) -> Any:
    """A key value as a plain JSON-able Python value (NaN/NA -> None)."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    return value


def _canonical(value: Any) -> str:
    """A key value as text that matches across dtypes (1 == 1.0, NaN == None == <NA>)."""
    value = _plain(value)
    if value is None:
        return "<NA>"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int | float):
        return repr(float(value))
    return str(value)


def split_columns(df: pd.DataFrame, keys: Sequence[str] | None = None,
                  extra_values: frozenset[str] = frozenset()) -> tuple[list[str], list[str]]:
    """``(keys, values)`` of a table; ``seed`` is in neither. ``keys`` overrides the inference;
    ``extra_values`` are non-float columns to treat as values besides ``NON_FLOAT_VALUE_COLUMNS``."""
    cols = [c for c in df.columns if c != SEED]
    if keys is not None:
        missing = [k for k in keys if k not in df.columns]
        if missing:
            raise KeyError(f"key columns {missing} not in the table's columns {list(df.columns)}")
        key_list = [k for k in keys if k != SEED]
        return key_list, [c for c in cols if c not in key_list and _numeric_like(df[c])]

    def is_key(c: str) -> bool:
        if ptypes.is_float_dtype(df[c]):
            return c in FLOAT_KEY_COLUMNS
        return c not in NON_FLOAT_VALUE_COLUMNS and c not in extra_values

    key_list = [c for c in cols if is_key(c)]
    return key_list, [c for c in cols if not is_key(c) and _numeric_like(df[c])]


def _numeric_like(s: pd.Series) -> bool:
    return bool(ptypes.is_numeric_dtype(s) or ptypes.is_bool_dtype(s))


def _as_float(s: pd.Series) -> pd.Series:
    return pd.to_numeric(s.astype("float64") if ptypes.is_bool_dtype(s) else s,
                         errors="coerce").astype("float64")


@dataclass
class _Stats:
    mean: pd.DataFrame  # index: group id, columns: value columns
    std: pd.DataFrame
    seeds: pd.Series  # group id -> frozenset of seeds
    labels: dict[str, dict[str, Any]]  # group id -> {key column: value}


def group_stats(df: pd.DataFrame, keys: Sequence[str], values: Sequence[str]) -> _Stats:
    """Per group of ``keys``: mean over seeds (NaN if any seed is NaN), std (ddof=1), seed set."""
    gid = (df[list(keys)].apply(lambda row: "\x1f".join(_canonical(v) for v in row), axis=1)
           if keys else pd.Series("", index=df.index))
    gid = gid.astype(str).rename("_group")
    index = pd.Index(sorted(gid.unique()), dtype=object)
    vals = pd.DataFrame({c: _as_float(df[c]) for c in values}, index=df.index)
    grouped = vals.groupby(gid, sort=True)
    mean = grouped.mean().reindex(index).mask(vals.isna().groupby(gid, sort=True).any().reindex(index))
    std = grouped.std(ddof=1).reindex(index).fillna(0.0)
    if SEED in df.columns:
        seeds = df[SEED].groupby(gid, sort=True).agg(lambda s: frozenset(s.tolist())).reindex(index)
    else:
        seeds = pd.Series([frozenset()] * len(index), index=index, dtype=object)
    first = df.groupby(gid, sort=True).head(1)
    labels = {g: {k: _plain(row[k]) for k in keys} for g, (_, row) in zip(gid[first.index],
                                                                          first.iterrows(), strict=True)}
    return _Stats(mean, std, seeds, labels)


def tolerance(ref_mean: np.ndarray, spread: np.ndarray, tol: Tolerances) -> np.ndarray:
    """Element-wise ``max(abs_tol, rtol * |ref_mean|, k * spread)`` (NaN parts count as 0)."""
    rel = np.nan_to_num(tol.rtol * np.abs(ref_mean), nan=0.0, posinf=0.0)
    spread = np.nan_to_num(tol.k * spread, nan=0.0, posinf=0.0)
    return np.maximum(np.maximum(tol.abs_tol, rel), spread)


def within_tolerance(run: np.ndarray, ref: np.ndarray, tol: np.ndarray) -> np.ndarray:
    """Element-wise agreement: both NaN, equal (also equal infinities), or ``|run - ref| <= tol``."""
    with np.errstate(invalid="ignore"):
        close = np.abs(run - ref) <= tol
    return (np.isnan(run) & np.isnan(ref)) | (run == ref) | close


def compare_table(name: str, run: pd.DataFrame, ref: pd.DataFrame, tol: Tolerances,
                  keys: Sequence[str] | None = None,
                  max_offenders: int = DEFAULT_MAX_OFFENDERS) -> TableComparison:
    """Compare one table of a run with the same table of the reference (see the module docstring)."""
    out = TableComparison(name)
    try:
        key_cols, value_cols = split_columns(ref, keys, TABLE_VALUE_COLUMNS.get(name, frozenset()))
    except KeyError as exc:
        out.error = str(exc)
        return out
    out.keys, out.columns_only_in_run = key_cols, sorted(set(run.columns) - set(ref.columns))
    out.columns_only_in_ref = sorted(set(ref.columns) - set(run.columns))
    missing_keys = [k for k in [*key_cols, *([SEED] if SEED in ref.columns else [])]
                    if k not in run.columns]
    if missing_keys:
        out.error = f"key columns {missing_keys} missing from the run's table"
        return out
    out.values = [c for c in value_cols if c in run.columns and _numeric_like(run[c])]
    if SEED in ref.columns:
        out.duplicate_rows = int(ref.duplicated([*key_cols, SEED]).sum())
    rs, fs = group_stats(run, key_cols, out.values), group_stats(ref, key_cols, out.values)
    common = fs.mean.index.intersection(rs.mean.index)
    only_run = rs.mean.index.difference(fs.mean.index)
    only_ref = fs.mean.index.difference(rs.mean.index)
    out.groups_matched, out.groups_only_in_run, out.groups_only_in_ref = (
        len(common), len(only_run), len(only_ref))
    out.examples_only_in_run = [rs.labels[g] for g in only_run[:_EXAMPLES]]
    out.examples_only_in_ref = [fs.labels[g] for g in only_ref[:_EXAMPLES]]
    out.seed_sets_differ = int(sum(rs.seeds[g] != fs.seeds[g] for g in common))
    if not len(common) or not out.values:
        return out
    run_m = rs.mean.loc[common, out.values].to_numpy()
    ref_m = fs.mean.loc[common, out.values].to_numpy()
    spread = np.fmax(fs.std.loc[common, out.values].to_numpy(),
                     rs.std.loc[common, out.values].to_numpy())
    tols = tolerance(ref_m, spread, tol)
    ok = within_tolerance(run_m, ref_m, tols)
    if name in ROUNDING_CHAOTIC:
        column, value = ROUNDING_CHAOTIC[name]
        chaotic = np.array([fs.labels[g].get(column) == value for g in common])
        out.not_compared = int(chaotic.sum()) * len(out.values)
        run_m, ref_m, tols, ok = (a[~chaotic] for a in (run_m, ref_m, tols, ok))
        common = common[~chaotic]
    out.compared, out.within = ok.size, int(ok.sum())
    out.out_of_tolerance = out.compared - out.within
    out.worst = _offenders(name, common, out.values, run_m, ref_m, tols, ok, fs.labels, max_offenders)
    return out


def _offenders(name: str, groups: pd.Index, columns: Sequence[str], run_m: np.ndarray,
               ref_m: np.ndarray, tols: np.ndarray, ok: np.ndarray,
               labels: Mapping[str, dict[str, Any]], limit: int) -> list[Offender]:
    """The ``limit`` worst cells out of tolerance, largest |run - ref| / tol first (NaN ones first)."""
    rows, cols = np.nonzero(~ok)
    with np.errstate(invalid="ignore"):
        ratio = np.abs(run_m - ref_m) / tols
    order = sorted(zip(rows, cols, strict=True),
                   key=lambda rc: -np.inf if np.isnan(ratio[rc]) else -ratio[rc])
    return [Offender(name, columns[c], labels[groups[r]], _plain(float(run_m[r, c])),
                     _plain(float(ref_m[r, c])), float(tols[r, c]),
                     None if np.isnan(ratio[r, c]) else float(ratio[r, c]))
            for r, c in order[:limit]]


def compare_claims(run_csv: Path, ref_csv: Path) -> ClaimsComparison:
    """Join two ``claims.csv`` on ``id`` and list verdict differences and one-sided claims."""
    out = ClaimsComparison()
    missing = [str(p) for p in (run_csv, ref_csv) if not p.is_file()]
    if missing:
        out.missing_files = missing if len(missing) == 1 else []  # neither side: nothing to compare
        return out
    try:
        run, ref = (_read_claims(p) for p in (run_csv, ref_csv))
    except ValueError as exc:
        out.error = str(exc)
        return out
    out.only_in_run = sorted(set(run) - set(ref))
    out.only_in_ref = sorted(set(ref) - set(run))
    common = sorted(set(run) & set(ref))
    out.matched = len(common)
    out.verdict_differences = [VerdictDifference(i, run[i], ref[i]) for i in common if run[i] != ref[i]]
    return out


def _read_claims(path: Path) -> dict[str, str]:
    """``id -> verdict`` of a claims.csv."""
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: unreadable claims table ({exc})") from exc
    absent = [c for c in ("id", "verdict") if c not in df.columns]
    if absent:
        raise ValueError(f"{path}: claims table lacks column(s) {absent}")
    if df["id"].duplicated().any():
        raise ValueError(f"{path}: duplicate claim ids {sorted(set(df['id'][df['id'].duplicated()]))}")
    return dict(zip(df["id"].str.strip(), df["verdict"].str.strip(), strict=True))


def folder_scale(folder: Path) -> str | None:
    """The scale a run folder (or a published reference) was made at, from its sidecars or its
    manifest (module docstring); None when nothing records one."""
    sidecars = [folder / f"claims.md{_SIDECAR}", *sorted((folder / "tables").glob(f"*{_SIDECAR}"))]
    for path in sidecars:
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(record, dict):
            continue
        for where in (record.get("params"), record.get("wildcards")):
            if isinstance(where, dict) and isinstance(where.get("scale"), str):
                return where["scale"]
    try:
        manifest = json.loads((folder / "MANIFEST.json").read_text())
    except (OSError, ValueError):
        return None
    source = manifest.get("source") if isinstance(manifest, dict) else None
    return Path(source).name if isinstance(source, str) and source else None


def check_same_scale(run_dir: Path, ref_dir: Path) -> None:
    """Raise ``ScaleMismatch`` when both folders record a scale and the two differ."""
    run_scale, ref_scale = folder_scale(run_dir), folder_scale(ref_dir)
    if run_scale and ref_scale and run_scale != ref_scale:
        raise ScaleMismatch(f"{run_dir} is a {run_scale} run and {ref_dir} a {ref_scale} one: "
                            "their grids differ, so they are not compared (the committed references: "
                            "results/reference for full, results/reference-smoke for smoke)")


def table_names(run_dir: Path) -> set[str]:
    """Names (stem) of the Parquet tables in ``run_dir/tables``."""
    return {p.stem for p in (run_dir / "tables").glob("*.parquet") if not p.name.startswith(".")}


def compare_runs(run_dir: str | Path, ref_dir: str | Path, *, abs_tol: float = DEFAULT_ABS_TOL,
                 rtol: float = DEFAULT_RTOL, k: float = DEFAULT_K, allow_missing: bool = False,
                 keys: Mapping[str, Sequence[str]] | None = None,
                 max_offenders: int = DEFAULT_MAX_OFFENDERS) -> CompareReport:
    """Compare the tables and claims of ``run_dir`` with those of the reference ``ref_dir``.

    ``abs_tol``, ``rtol``, ``k``: the tolerance ``max(abs_tol, rtol*|ref_mean|, k*spread)``, the
    spread the larger seed-to-seed std of the two groups.
    ``allow_missing``: do not fail on tables, columns, groups or claims present on one side only.
    ``keys``: table name (stem) -> key columns, overriding the inference for that table.
    ``max_offenders``: worst out-of-tolerance cells kept per table.
    Raises ``FileNotFoundError`` if either folder does not exist and ``ScaleMismatch`` if they
    are runs of different scales.
    """
    run_dir, ref_dir = Path(run_dir), Path(ref_dir)
    for d in (run_dir, ref_dir):
        if not d.is_dir():
            raise FileNotFoundError(f"{d}: folder to compare not found")
    check_same_scale(run_dir, ref_dir)
    report = CompareReport(str(run_dir), str(ref_dir), Tolerances(abs_tol, rtol, k), allow_missing)
    run_tables, ref_tables = table_names(run_dir), table_names(ref_dir)
    report.tables_only_in_run = sorted(run_tables - ref_tables)
    report.tables_only_in_ref = sorted(ref_tables - run_tables)
    for name in sorted(run_tables & ref_tables):
        report.tables.append(_compare_files(name, run_dir, ref_dir, report.tolerances,
                                            (keys or {}).get(name), max_offenders))
    report.claims = compare_claims(run_dir / "claims.csv", ref_dir / "claims.csv")
    return report


def _compare_files(name: str, run_dir: Path, ref_dir: Path, tol: Tolerances,
                   keys: Sequence[str] | None, max_offenders: int) -> TableComparison:
    paths = [d / "tables" / f"{name}.parquet" for d in (run_dir, ref_dir)]
    try:
        run, ref = (pd.read_parquet(p) for p in paths)
    except (OSError, ValueError) as exc:
        return TableComparison(name, error=f"unreadable table ({exc})")
    return compare_table(name, run, ref, tol, keys, max_offenders)
