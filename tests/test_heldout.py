"""The held-out record and its sections (one paragraph in README, the table in docs/results.md):
the offset is read from the run's own sidecars."""

from __future__ import annotations

import json

import pytest

from attnrank.publish.readme import heldout_record, heldout_section, render_readme

Q = {"level": 0.9, "quorum": 0.8}  # claims.quorum_interval_level and claims.seed_quorum


def _run(tmp_path, offsets, verdicts):
    run = tmp_path / "run"
    (run / "tables").mkdir(parents=True)
    for i, off in enumerate(offsets):
        (run / "tables" / f"t{i}.parquet.prov.json").write_text(json.dumps({"params": {"seed_offset": off}}))
    (run / "claims.csv.prov.json").write_text(json.dumps(
        {"params": {}, "code": {"git_commit": "abcdef0123", "git_dirty": False}}))
    rows = "\n".join(f"{k},B,s,m,t,{v},," for k, v in verdicts.items())
    header = "id,paper,statement,measured,threshold,verdict,note,sweep\n"
    (run / "claims.csv").write_text(header + rows + "\n")
    return run


def test_record_reads_the_offset_from_every_sidecar(tmp_path):
    run = _run(tmp_path, [7, 7], {"TT-1": "pass", "TT-3": "fail"})
    rec = heldout_record(run)
    assert rec == {"seed_offset": 7, "scale": "run", "git_commit": "abcdef0123", "git_dirty": False,
                   "claims": 2, "pass": 1}


@pytest.mark.parametrize("offsets", [[0, 0], [7, 8], []])
def test_record_refuses_a_reference_or_mixed_run(tmp_path, offsets):
    with pytest.raises(ValueError, match="seed_offset"):
        heldout_record(_run(tmp_path, offsets, {"TT-1": "pass"}))


def _reference_and_moved_run(tmp_path):
    """A reference where TT-1 passes and TT-3 fails, and a held-out run where both pass."""
    ref = tmp_path / "ref"
    ref.mkdir()
    (ref / "claims.csv").write_text("id,paper,statement,measured,threshold,verdict,note,sweep\n"
                                    "TT-1,B,s,m,t,pass,,\nTT-3,B,s,m,t,fail,,\n")
    return ref, _run(tmp_path, [7], {"TT-1": "pass", "TT-3": "pass"})


def test_section_marks_moved_verdicts(tmp_path):
    ref, run = _reference_and_moved_run(tmp_path)
    text = heldout_section(run / "claims.csv", heldout_record(run), ref, **Q)
    assert "differ from the reference: TT-3." in text
    assert "| **TT-3** | fail | pass |" in text and "| TT-1 | pass | pass |" in text
    out = render_readme("a\n<!-- heldout:start -->\nold\n<!-- heldout:end -->\nb", text,
                        "<!-- heldout:start -->", "<!-- heldout:end -->")
    assert "old" not in out and "TT-3" in out


def test_a_claim_added_after_the_heldout_run_is_absent_not_moved(tmp_path):
    ref, run = _reference_and_moved_run(tmp_path)
    with (ref / "claims.csv").open("a") as f:
        f.write("OPEN-1,B,s,m,t,measured,,\n")
    text = heldout_section(run / "claims.csv", heldout_record(run), ref, **Q)
    assert "differ from the reference: TT-3." in text
    assert "Not in the held-out run (claims added after it): OPEN-1." in text
    assert "| OPEN-1 | measured | — |" in text


def test_update_puts_one_paragraph_in_the_readme_and_the_table_in_docs(tmp_path):
    from attnrank.publish.readme import update_heldout

    ref, run = _reference_and_moved_run(tmp_path)
    (tmp_path / "record.json").write_text(json.dumps(heldout_record(run)))
    markers = "<!-- heldout:start -->\nold\n<!-- heldout:end -->\n"
    readme, doc = tmp_path / "README.md", tmp_path / "docs" / "results.md"
    doc.parent.mkdir()
    readme.write_text("# r\n" + markers)
    doc.write_text("# d\n" + markers)
    args = (readme, run / "claims.csv", tmp_path / "record.json", ref)
    assert update_heldout(*args, check=True, **Q) and "old" in readme.read_text()  # check writes nothing
    assert update_heldout(*args, **Q)
    short, full = readme.read_text(), doc.read_text()
    assert "differ from the reference: TT-3." in short and "| claim |" not in short
    assert "[`docs/results.md`](docs/results.md#held-out-seeds)" in short
    assert "| **TT-3** | fail | pass |" in full and "old" not in full
    assert not update_heldout(*args, **Q)


def test_a_measured_claim_shows_its_fitted_slopes_on_both_seed_sets(tmp_path):
    """OPEN-1/OPEN-2 have no verdict to compare: the section sets their fitted lines side by
    side, read from the text minip.claims writes (its own formatter, so a format change fails)."""
    import pandas as pd

    from attnrank.minip.claims import _line_text

    def measured(b_h2: float, f_h2: int) -> str:
        fits = pd.DataFrame({"line": ["kernel", "kernel", "H=2", "H=2"], "m": [6, 8, 6, 8],
                             "smallest": [4.0, 8.0, 4.0, float(f_h2)], "b": [0.5, 0.5, b_h2, b_h2],
                             "lo": [0.45, 0.45, 0.2, 0.2], "hi": [0.5, 0.5, 0.5, 0.5],
                             "points": [2, 2, 2, 2]})
        return "; ".join(_line_text(fits, line, 0.9) for line in ("kernel", "H=2"))

    def claims(path, text):
        path.mkdir(parents=True, exist_ok=True)
        pd.DataFrame([{"id": "OPEN-1", "paper": "B", "statement": "s", "measured": text,
                       "threshold": "t", "verdict": "measured", "note": "", "sweep": ""}]
                     ).to_csv(path / "claims.csv", index=False)

    ref, run = tmp_path / "ref", _run(tmp_path, [7], {})
    claims(ref, measured(0.35, 8))
    claims(run, measured(0.4, 16))
    text = heldout_section(run / "claims.csv", heldout_record(run), ref, **Q)
    assert "OPEN-1 (measured, no verdict): the slope b of log2 F = a + b·m per line, with its 90%" in text
    assert ("| kernel | b = 0.5 [0.45, 0.5]; smallest F by m 6:4, 8:8 | "
            "b = 0.5 [0.45, 0.5]; smallest F by m 6:4, 8:8 |") in text
    assert ("| H=2 | b = 0.35 [0.2, 0.5]; smallest F by m 6:4, 8:8 | "
            "b = 0.4 [0.2, 0.5]; smallest F by m 6:4, 8:16 |") in text


def test_quorum_verdicts_are_pooled_over_both_seed_sets(tmp_path):
    """Each condition's successes add over the two seed sets; the weakest pooled one is shown with
    its Clopper–Pearson interval, and a condition met by exactly the quorum is at the edge."""
    import pandas as pd

    from attnrank.core.stats import clopper_pearson

    cols = ["id", "paper", "statement", "measured", "threshold", "verdict", "note", "sweep",
            "quorum"]
    ref = tmp_path / "ref"
    ref.mkdir()
    pd.DataFrame([["TT-3", "B", "s", "m", "t", "pass", "", "", "m=6: 5/5; m=16: 4/5"],
                  ["TT-1", "B", "s", "m", "t", "pass", "", "", ""]], columns=cols
                 ).to_csv(ref / "claims.csv", index=False)
    run = _run(tmp_path, [2000], {})
    pd.DataFrame([["TT-3", "B", "s", "m", "t", "pass", "", "", "m=6: 4/5; m=16: 5/5"],
                  ["TT-1", "B", "s", "m", "t", "pass", "", "", ""]], columns=cols
                 ).to_csv(run / "claims.csv", index=False)
    text = heldout_section(run / "claims.csv", heldout_record(run), ref, **Q)
    lo, hi = clopper_pearson(9, 10, 0.9)
    assert f"| TT-3 | pass / pass | m=6: 9/10 | {lo:.2f}–{hi:.2f} | m=16 (reference 4/5); " \
           "m=6 (held-out 4/5) |" in text
    assert "| TT-1 |" in text.split("Quorum verdicts pooled")[0]  # in the verdict table only
    assert "| TT-1 | pass / pass" not in text
