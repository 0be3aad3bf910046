"""compare_runs: tables matched on keys, means over seeds within stated tolerances; claim verdicts."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from attnrank.publish.compare import Tolerances, compare_runs, compare_table, split_columns


def _table(shift: float = 0.0) -> pd.DataFrame:
    """Two experiments x three ranks x three seeds; loss spread across seeds ~0.01."""
    rows = []
    for experiment in ("a", "b"):
        for rank in (1, 2, 4):
            for seed in range(3):
                rows.append({"experiment": experiment, "rank": rank, "seed": seed, "beta": 1.0,
                             "final": True, "loss": 1.0 / rank + 0.01 * (seed - 1),
                             "accuracy": 0.5 + 0.1 * rank})
    df = pd.DataFrame(rows)
    df["loss"] += shift
    return df


def _claims(verdicts: dict[str, str]) -> pd.DataFrame:
    return pd.DataFrame({"id": list(verdicts), "paper": "B", "statement": "s", "measured": "m",
                         "threshold": "t", "verdict": list(verdicts.values()), "note": ""})


def _run(root: Path, tables: dict[str, pd.DataFrame], verdicts: dict[str, str]) -> Path:
    (root / "tables").mkdir(parents=True)
    for name, df in tables.items():
        df.to_parquet(root / "tables" / f"{name}.parquet", index=False)
    _claims(verdicts).to_csv(root / "claims.csv", index=False)
    return root


VERDICTS = {"TT-1": "pass", "TT-2": "fail", "EB-1": "pass"}


def _pair(tmp_path: Path, run_table: pd.DataFrame, run_verdicts=VERDICTS) -> tuple[Path, Path]:
    ref = _run(tmp_path / "ref", {"sweep": _table(), "single": _single()}, VERDICTS)
    run = _run(tmp_path / "run", {"sweep": run_table, "single": _single()}, run_verdicts)
    return run, ref


def _single() -> pd.DataFrame:
    return pd.DataFrame({"construction": ["x", "y"], "rank": [1, 2], "beta": [np.nan, 2.0],
                         "mse": [0.0, 0.25]})


def test_identical_runs_agree(tmp_path):
    run, ref = _pair(tmp_path, _table())
    report = compare_runs(run, ref)
    assert report.ok, report.summary()
    sweep = next(t for t in report.tables if t.name == "sweep")
    assert sweep.groups_matched == 6 and sweep.compared == 12 and sweep.within == 12
    assert report.claims.matched == 3 and not report.claims.verdict_differences
    data = json.loads(report.to_json())
    assert data["ok"] is True
    assert data["tolerances"] == {"abs_tol": 1e-9, "rtol": 1e-3, "k": 3.0}


def test_perturbation_beyond_tolerance_is_flagged(tmp_path):
    df = _table()
    df.loc[(df.experiment == "b") & (df["rank"] == 2), "accuracy"] += 0.05  # zero spread in the ref
    run, ref = _pair(tmp_path, df)
    report = compare_runs(run, ref)
    assert not report.ok
    assert report.out_of_tolerance == 1
    (worst,) = next(t for t in report.tables if t.name == "sweep").worst
    assert (worst.table, worst.column) == ("sweep", "accuracy")
    assert worst.key["experiment"] == "b" and worst.key["rank"] == 2
    assert worst.run == pytest.approx(0.75) and worst.ref == pytest.approx(0.7)
    assert "accuracy" in report.summary() and "DIFFERENT" in report.summary()


def test_shift_beyond_seed_spread_is_flagged(tmp_path):
    run, ref = _pair(tmp_path, _table(shift=0.05))  # 5x the seed std of 0.01
    report = compare_runs(run, ref)
    assert not report.ok
    sweep = next(t for t in report.tables if t.name == "sweep")
    assert sweep.out_of_tolerance == 6 and {o.column for o in sweep.worst} == {"loss"}


def test_perturbation_within_seed_spread_is_accepted(tmp_path):
    run, ref = _pair(tmp_path, _table(shift=0.02))  # 2x the seed std, k = 3
    report = compare_runs(run, ref)
    assert report.ok, report.summary()
    assert not compare_runs(run, ref, k=1.0).ok  # the same shift with a tighter stated tolerance


def test_single_seed_tables_use_abs_and_rel_tolerance(tmp_path):
    ref = _run(tmp_path / "ref", {"single": _single()}, VERDICTS)
    close, far = _single(), _single()
    close.loc[1, "mse"] *= 1 + 1e-4  # above the float noise of two platforms, 7e-6
    far.loc[1, "mse"] *= 1 + 1e-2
    assert compare_runs(_run(tmp_path / "close", {"single": close}, VERDICTS), ref).ok
    report = compare_runs(_run(tmp_path / "far", {"single": far}, VERDICTS), ref)
    assert not report.ok and report.tables[0].worst[0].key == {"construction": "y", "rank": 2,
                                                                "beta": 2.0}


def test_the_spread_is_the_larger_of_the_two_runs_either_way_round(tmp_path):
    """A run whose seeds scatter (one diverged) matches a tight reference whose mean lies within
    3 of its own standard deviations, and the check is the same either way round; a shift of the
    mean of two tight runs is still a difference."""
    tight = _table()
    loose = _table()
    loose.loc[loose.seed == 2, "loss"] += 0.5  # spread ~0.29 in every group, mean +0.17
    run, ref = _pair(tmp_path / "a", loose)
    assert compare_runs(run, ref).ok and compare_runs(ref, run).ok
    run, ref = _pair(tmp_path / "b", tight.assign(loss=tight["loss"] + 0.17))
    assert not compare_runs(run, ref).ok and not compare_runs(ref, run).ok


def test_rows_chaotic_under_rounding_must_be_there_but_their_values_are_not_compared(tmp_path):
    from attnrank.publish.compare import ROUNDING_CHAOTIC

    assert ROUNDING_CHAOTIC["minip_beyond"] == ("model", "signed_linear")
    ref = pd.DataFrame({"model": ["kernel", "signed_linear"] * 2, "seed": [0, 0, 1, 1],
                        "train_loss": [0.50, 0.70, 0.51, 0.75]})
    run = ref.assign(train_loss=[0.50, 4.5, 0.51, 4.4])  # signed_linear went elsewhere
    report = compare_table("minip_beyond", run, ref, Tolerances())
    assert report.out_of_tolerance == 0 and report.not_compared == 1 and report.compared == 1
    assert "1 values of model=signed_linear not compared" in report_line(report)
    assert compare_table("other", run, ref, Tolerances()).out_of_tolerance == 1
    shifted = run.assign(train_loss=[0.60, 4.5, 0.61, 4.4])  # the kernel moved: still seen
    assert compare_table("minip_beyond", shifted, ref, Tolerances()).out_of_tolerance == 1
    missing = run[run.model == "kernel"]  # the chaotic rows must still be there
    assert compare_table("minip_beyond", missing, ref, Tolerances()).groups_only_in_ref == 1


def report_line(table) -> str:
    from attnrank.publish.compare import _table_line

    return _table_line(table)


def test_brief_names_only_what_differs(tmp_path):
    df = _table()
    df.loc[(df.experiment == "b") & (df["rank"] == 2), "accuracy"] += 0.05
    run, ref = _pair(tmp_path, df)
    brief = compare_runs(run, ref).summary(brief=True).splitlines()
    assert brief[0].endswith("DIFFERENT") and brief[1].startswith("tolerance")
    assert brief[2].startswith("  sweep:") and "single" not in " ".join(brief)
    assert not any(line.startswith("  claims") for line in brief)
    run, ref = _pair(tmp_path / "same", _table())
    assert compare_runs(run, ref).summary(brief=True).splitlines()[0].endswith(": OK")
    assert len(compare_runs(run, ref).summary(brief=True).splitlines()) == 2


def test_changed_verdict_is_flagged(tmp_path):
    run, ref = _pair(tmp_path, _table(), {**VERDICTS, "TT-2": "pass"})
    report = compare_runs(run, ref)
    assert not report.ok
    (diff,) = report.claims.verdict_differences
    assert (diff.id, diff.run, diff.ref) == ("TT-2", "pass", "fail")
    assert "TT-2" in report.summary()


def test_one_sided_tables_groups_and_claims(tmp_path):
    df = _table()
    df = df[df["rank"] != 4]
    ref = _run(tmp_path / "ref", {"sweep": _table(), "gone": _single()}, VERDICTS)
    run = _run(tmp_path / "run", {"sweep": df, "new": _single()},
               {"TT-1": "pass", "TT-2": "fail", "EB-9": "pass"})
    report = compare_runs(run, ref)
    assert report.tables_only_in_run == ["new"] and report.tables_only_in_ref == ["gone"]
    assert report.tables[0].groups_only_in_ref == 2 and report.tables[0].out_of_tolerance == 0
    assert report.claims.only_in_run == ["EB-9"] and report.claims.only_in_ref == ["EB-1"]
    assert not report.ok and report.structural
    assert compare_runs(run, ref, allow_missing=True).ok


def test_nan_agrees_with_nan_only(tmp_path):
    ref = _single()
    ref.loc[0, "mse"] = np.nan
    run = ref.copy()
    assert compare_table("t", run, ref, Tolerances()).out_of_tolerance == 0
    run.loc[0, "mse"] = 0.0
    assert compare_table("t", run, ref, Tolerances()).out_of_tolerance == 1


def test_key_inference():
    keys, values = split_columns(_table())
    assert keys == ["experiment", "rank", "beta", "final"]
    assert values == ["loss", "accuracy"]
    keys, values = split_columns(_table(), keys=["experiment", "rank"])
    assert keys == ["experiment", "rank"] and "loss" in values


def test_missing_folder_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere"):
        compare_runs(tmp_path / "nowhere", tmp_path)


def test_per_seed_outcome_columns_are_values(tmp_path):
    """entropic_surrogate: the early-stopping step differs by seed, so it is a value, not a key."""
    ref = pd.DataFrame({"optimizer": "gd", "rank": 32, "seed": [0, 1, 2], "step": [400, 600, 500],
                        "final": False, "excess": [0.1, 0.12, 0.11]})
    run = ref.assign(step=[500, 500, 500])
    report = compare_table("entropic_surrogate", run, ref, Tolerances())
    assert report.keys == ["optimizer", "rank"] and "step" in report.values
    assert report.groups_matched == 1 and report.out_of_tolerance == 0
    other = compare_table("other", run, ref, Tolerances())  # step as a key: groups split by step
    assert (other.groups_matched, other.groups_only_in_ref) == (1, 2)
