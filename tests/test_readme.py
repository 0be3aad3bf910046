"""README's results section is what `make readme` generates from results/reference, and every
number in it comes from the reference's claims.csv; docs/performance.md's time table is what
`make bench` generates from benchmarks/results/summary.json."""

import re
from pathlib import Path

import pandas as pd
import pytest

from attnrank.publish.readme import END, START, render_readme, results_section, update_readme

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "results" / "reference"
needs_reference = pytest.mark.skipif(not (REFERENCE / "claims.csv").exists(),
                                     reason="no reference run committed")


@needs_reference
def test_make_readme_leaves_the_readme_unchanged():
    assert not update_readme(ROOT / "README.md", REFERENCE, check=True), \
        "README's results section is stale: run `make readme`"


NUMBER = re.compile(r"\d+(?:\.\d+)?")
COUNTS = re.compile(r"^(\d+) of (\d+) claims pass, (\d+) fail, (?:(\d+) measured \([^)]*\), )?"
                    r"(\d+) not run \(")
CLAIM_LINE = re.compile(r"^- \*\*([^*]+)\*\* ")


def _tokens(cells) -> set[str]:
    """Every number of ``cells``, as whole tokens ("14.25" gives 14.25, never 4.2 or 25)."""
    return {n for cell in cells for n in NUMBER.findall(str(cell))}


def numbers_not_from_claims(section: str, table: pd.DataFrame) -> list[str]:
    """What in ``section`` no cell of ``table`` (claims.csv) backs: the count line must state the
    verdict counts; a claim's line ("- **TT-3** ...") may hold only numbers of that claim's row;
    any other line only numbers of some cell. Each number is compared as a whole token."""
    counts = table["verdict"].value_counts()
    want = [int(counts.get("pass", 0)), len(table), int(counts.get("fail", 0)),
            int(counts["measured"]) if "measured" in counts else None, int(counts.get("not run", 0))]
    rows = table.set_index("id")
    every = _tokens(table.to_numpy().ravel())
    bad, lines = [], section.splitlines()
    head = COUNTS.match(lines[0]) if lines else None
    if head is None or [None if g is None else int(g) for g in head.groups()] != want:
        bad.append(f"count line {lines[0][:60] if lines else ''!r} ≠ {want}")
    for line in lines[1:] if head else lines:
        if line.startswith("<a href="):  # thumbnails: paths and names only
            continue
        claim = CLAIM_LINE.match(line)
        allowed = _tokens([claim.group(1), *rows.loc[claim.group(1)]]) \
            if claim and claim.group(1) in rows.index else every
        bad += [f"{n} in {line[:40]!r}" for n in NUMBER.findall(line) if n not in allowed]
    return bad


@needs_reference
def test_every_number_in_the_section_comes_from_claims_csv():
    table = pd.read_csv(REFERENCE / "claims.csv", dtype=str, keep_default_na=False)
    assert numbers_not_from_claims(results_section(REFERENCE, ROOT), table) == []


@needs_reference
def test_a_number_not_in_claims_csv_is_caught():
    """The check above is not a substring search: a changed count, or a statement's 0.999 made
    0.99 (a substring of a cell, so the old check passed it), is rejected."""
    table = pd.read_csv(REFERENCE / "claims.csv", dtype=str, keep_default_na=False)
    section = results_section(REFERENCE, ROOT)
    n_pass = int(COUNTS.match(section).group(1))
    assert numbers_not_from_claims(section.replace(f"{n_pass} of", f"{n_pass - 1} of", 1), table)
    line, number = next((x, m.group(0)) for x in section.splitlines() if CLAIM_LINE.match(x)
                        for m in [re.search(r"\d+\.\d{2,}", x)] if m)
    shorter = number[:-1]  # e.g. 0.999 → 0.99: a substring of the cell, not a number of it
    assert shorter in (REFERENCE / "claims.csv").read_text()  # what the substring check accepted
    assert numbers_not_from_claims(section.replace(line, line.replace(number, shorter, 1)), table)


@needs_reference
def test_every_reference_figure_is_linked_and_each_wing_has_a_thumbnail():
    section = results_section(REFERENCE, ROOT)
    pngs = sorted((REFERENCE / "figures").glob("*.png"))
    for png in pngs:
        assert f"](results/reference/figures/{png.name})" in section, png.name
    for wing in {png.stem.split("_")[0] for png in pngs}:
        assert re.search(f'<img src="results/reference/figures/{wing}_[a-z_]+\\.png"', section), wing
    assert section.count("<img ") == len({png.stem.split("_")[0] for png in pngs})


def test_render_replaces_only_between_the_markers():
    text = f"head\n{START}\nold\n{END}\ntail\n"
    assert render_readme(text, "new") == f"head\n{START}\nnew\n{END}\ntail\n"
    with pytest.raises(ValueError, match="one"):
        render_readme("no markers", "new")


# ---------------------------------------------------------------------------------------------
# The run-time table (make bench) and benchmarks/results/summary.json

SUMMARY = ROOT / "benchmarks" / "results" / "summary.json"


def _trainer_record() -> dict:
    fams = [{"family": f, "ratio": r, "vectorized_gflops": g, "max_param_diff": 1e-8,
             "max_output_diff": 2e-7, "steps": 5, "models": n, "vectorized_programs": 1}
            for f, r, g, n in (("surrogate", 15.25, 17.5, 480), ("attention", 4.0, 9.4, 240),
                               ("table", 1.5, 0.22, 21), ("mlp", 1.73, 5.3, 21),
                               ("dense", 1.7, 4.0, 3))]
    return {"families": fams, "matmul_gflops": 61.5, "date": "2026-01-01T00:00:00+00:00",
            "repeats": 3, "machine": {"cores": 2, "cpu_model": "Test CPU", "torch": "9.9",
                                      "python": "3.12.0", "threads": 1, "device": "cpu"}}


def _cores_record() -> dict:
    rows = [{"cores": p, "wall_s": w} for p, w in ((1, 10967.0), (2, 5482.0), (4, 2740.0),
                                                   (8, 1370.0), (16, 776.0), (32, 776.0),
                                                   (64, 776.0), (None, 776.0))]
    return {"run": "results/reference", "date": "2026-01-03T00:00:00+00:00", "jobs": 142,
            "job_s": 10686.1, "startup_median_s": 2.3,
            "longest_job": {"name": "minip_beyond_train/multihead/m12", "duration_s": 771.9},
            "check": {"cores": 2, "recorded_wall_s": 5480.8, "replayed_wall_s": 5480.1,
                      "difference": -0.0001},
            "rows": rows, "critical_path": {"wall_s": 776.0, "jobs": [
                {"name": "minip_beyond_train/multihead/m12", "duration_s": 771.9},
                {"name": "table/minip_beyond", "duration_s": 0.1}]}}


def _peer_record() -> dict:
    side = lambda ms, ev, top, cold: {  # noqa: E731
        "ms_per_step": {"min": ms, "median": ms + 1}, "events_per_step": {"events": ev,
                                                                          "top_level": top},
        "compile_s": {"cold": cold, "warm": 1.0}}
    job = lambda ratio: {"project_over_peer": ratio, "k": 50, "loss_max_difference": 3e-7,  # noqa: E731
                         "loss_max_relative_difference": 1e-7, "heads": None, "groups": 8,
                         "models": 40, "project": side(20.0, 1930, 320, 27.0),
                         "peer": side(20.0 / ratio, 206, 16, 70.0)}
    return {"date": "2026-01-04T00:00:00+00:00", "machine": {"threads": 1},
            "load": {"before": 0.1, "after": 1.0},
            "jobs": {"rank_vs_m/m12": job(0.95), "beyond/multihead/m12": job(1.3)}}


def _summary(full: float | None = None, where: str = "the repository itself",
             every: bool = False, extras: bool = False) -> dict:
    from attnrank.publish.readme import build_summary

    smoke = {"wall_s": 245.0, "ok": True, "cores": 2, "date": "2026-01-01T00:00:00+00:00",
             "git": {"commit": "abcdef1234", "dirty": False},
             "where": "a fresh copy of the working tree", "every_job_ran": True}
    full_rec = None if full is None else {"wall_s": full, "ok": True, "cores": 2, "where": where,
                                          "every_job_ran": every, "load_before": 1.3,
                                          "load_after": 2.6, "training_jobs_benchmarked": 141}
    more = {}
    if extras:
        more = {"cores": _cores_record(), "peer": _peer_record(),
                "events": {"date": "2026-01-05T00:00:00+00:00", "scale": "full", "jobs": [
                    {"rule": "minip_train", "job": "ood/large", "events": 1230, "top_level": 194,
                     "models": 45}]},
                "without_beyond": {"wall_s": 2280.9, "ok": True, "cores": 2,
                                   "omit_from": "minip_beyond_train"}}
    return build_summary(_trainer_record(), smoke, full_rec, "2026-01-02T00:00:00+00:00", **more)


def test_summary_has_the_required_keys():
    from attnrank.publish.readme import MACHINE_KEYS, SUMMARY_KEYS, check_summary

    s = _summary()
    for key in ("full_wall_s", "smoke_wall_s", "trainer_ratio", "machine", "date", *SUMMARY_KEYS):
        assert key in s, key
    assert set(MACHINE_KEYS) <= set(s["machine"])
    assert s["smoke_wall_s"] == 245.0 and s["full_wall_s"] is None  # never estimated
    assert s["trainer_ratio"] == {"surrogate": 15.25, "attention": 4.0, "table": 1.5,
                                  "mlp": 1.73, "dense": 1.7}
    for key in SUMMARY_KEYS:
        broken = {k: v for k, v in s.items() if k != key}
        with pytest.raises(ValueError, match=key):
            check_summary(broken)
    with pytest.raises(ValueError, match="smoke_wall_s"):
        check_summary(s | {"smoke_wall_s": -1})
    with pytest.raises(ValueError, match="cores.rows"):
        check_summary(_summary(extras=True) | {"cores": {"rows": []}})


def test_time_table_renders_every_number_from_the_summary():
    from attnrank.publish.readme import times_section

    text = times_section(_summary(full=3000.0))
    assert "4.1 min (245 s) ✓" not in text  # 245 s is over the 2-minute smoke target
    assert "4.1 min (245 s) ✗" in text
    full = next(line for line in text.splitlines() if "full pipeline" in line)
    assert "50.0 min (3,000 s) |" in full and "| — |" in full  # no target: withdrawn
    for fam, ratio in (("surrogate", "15.25× "), ("attention", "4.00×"), ("table", "1.50×"),
                       ("mlp", "1.73×"), ("dense", "1.70×")):
        row = next(line for line in text.splitlines() if f"trainer, {fam} |" in line)
        assert ratio in row
        assert ("✓" in row) == (fam in ("surrogate", "attention"))
        # judged for families of at least 5 models only: dense (3 models) is reported
        assert ("✗" in row) == (fam in ("table", "mlp"))
        assert ("| ≥ 3× |" in row) == (fam != "dense")
    assert "max output difference 2.0e-07" in text
    # one program of M < 5 models cannot be 3× faster than M programs of one: said so
    ceiling = [line for line in text.splitlines() if "by construction" in line]
    assert len(ceiling) == 1 and "trainer, dense |" in ceiling[0]
    assert "at most 3× by construction" in ceiling[0] and "reported, not judged" in ceiling[0]
    assert "61.5 for a large fp32 matmul" in text and "Test CPU" in text and "abcdef1" in text
    assert "not recorded" in times_section(_summary())
    smoke = next(line for line in text.splitlines() if "smoke pipeline" in line)
    assert "job s" not in smoke  # the record has no accounting: nothing said
    counted = _summary(full=3000.0)
    counted["runs"]["smoke"] |= {"training_jobs_benchmarked": 102, "job_s": 230.4,
                                 "compute_s": 110.0, "startup_s_per_job": 1.18}
    smoke = next(line for line in times_section(counted).splitlines() if "smoke pipeline" in line)
    assert "102 jobs, 230 job s, of which 110 s their steps and 1.2 s a job starting" in smoke


def test_the_full_row_says_what_its_record_says():
    from attnrank.publish.readme import times_section

    def full_row(**kw):
        text = times_section(_summary(full=5480.8, **kw))
        return next(line for line in text.splitlines() if "full pipeline" in line)

    restored = full_row()
    assert "on its existing results/full (restored from the reference or left by an earlier " \
        "run), every stale job rerun, 141 jobs ran" in restored
    assert "load average 1.3 at the start, 2.6 at the end" in restored
    assert "every job run, 141 jobs ran (make reference)" in full_row(every=True)
    fresh = full_row(where="a fresh copy of the working tree", every=True)
    assert "in a fresh folder, every job run" in fresh and "restore" not in fresh


def test_peer_and_event_rows_come_from_their_records():
    from attnrank.publish.readme import times_section

    text = times_section(_summary(full=5480.8, extras=True))
    rank = next(line for line in text.splitlines() if "peer, rank_vs_m/m12 |" in line)
    assert "project ÷ peer 0.95× ✓" in rank and "project 1,930 (320 top-level), peer 206" in rank
    assert "compile cold / warm: project 27.0 / 1.0 s, peer 70.0 / 1.0 s" in rank
    assert "3.0e-07 (1.0e-07 relative)" in rank and "over 50 steps" in rank
    beyond = next(line for line in text.splitlines() if "peer, beyond/multihead/m12 |" in line)
    assert "project ÷ peer 1.30× ✗" in beyond  # the peer 1.3× faster: past the 1.2× goal
    events = next(line for line in text.splitlines() if "events a training step" in line)
    assert "minip_train | 1,230 (194 top-level)" in events and "ood/large (45 models)" in events
    assert "load average 0.1 at the start, 1.0 at the end" in text


def test_cores_and_readme_sections_come_from_the_replay():
    from attnrank.publish.readme import cores_section, runtimes_section

    s = _summary(full=5480.8, extras=True)
    cores = cores_section(s)
    assert "| 2 | 91.4 min (recorded: 91.3 min; the replay of that run: -0.01 %) |" in cores
    assert "| unlimited | 12.9 min |" in cores and "| 8 | 22.8 min |" in cores
    assert "From about 16 cores up" in cores
    assert "minip_beyond_train/multihead/m12 (772 s) → table/minip_beyond (0 s)" in cores
    assert "142 jobs, 10,686 job seconds" in cores
    front = runtimes_section(s)
    assert "**91 minutes on 2 cores**" in front and "up to 3×" in front
    assert "46 min on 4, 23 min on 8, about 13 min from 16 cores up" in front
    assert "The smoke run takes 4.1 minutes on 2 cores." in front
    assert "--omit-from minip_beyond_train" in front and "38 minutes on 2 cores" in front
    assert "not recorded" in cores_section(_summary())
    # with the replay of the same run without the beyond study, that replay is shown instead of
    # a measurement of another run
    s["cores"]["without"] = {"minip_beyond_train": {"jobs": 110, "job_s": 4400.0, "rows": [
        {"cores": 2, "wall_s": 2460.0}, {"cores": None, "wall_s": 400.0}]}}
    front = runtimes_section(s)
    assert "about 41 minutes on 2 cores (the reference's run replayed without it)" in front
    assert "38 minutes" not in front and "TT-7, TT-7b" in front
    # a record of a partial run (restored, then the stale jobs rerun) is not the full run's time:
    # the headline is the replay of every job on the record's cores, the record said beside it
    partial = _summary(full=3356.6, extras=True)
    partial["cores"]["check"] |= {"jobs_rerun": 66, "recorded_wall_s": 3356.6}
    front = runtimes_section(partial)
    assert "**about 91 minutes on 2 cores** (every job of the reference replayed" in front
    assert "reran the 66 stale jobs in 56 minutes" in front and "took **" not in front
    assert "reran 66 in 55.9 min; the replay of that run" in cores_section(partial)


def test_time_table_goes_between_its_markers_only():
    from attnrank.publish.readme import TIMES_END, TIMES_START, render_readme, times_section

    text = f"a\n{START}\nkeep\n{END}\n{TIMES_START}\nstale table\n{TIMES_END}\nz\n"
    new = render_readme(text, times_section(_summary()), TIMES_START, TIMES_END)
    assert "stale table" not in new and f"{START}\nkeep\n{END}" in new and new.endswith(f"{TIMES_END}\nz\n")


@pytest.mark.skipif(not SUMMARY.exists(), reason="no benchmarks/results/summary.json")
def test_performance_time_table_is_what_summary_json_gives():
    from attnrank.publish.readme import update_times

    assert not update_times(ROOT / "docs" / "performance.md", SUMMARY, check=True,
                            cores_docs=(ROOT / "docs" / "performance.md",
                                        ROOT / "docs" / "running.md"),
                            front=ROOT / "README.md"), \
        "docs/performance.md's time table, the P-core tables or README's run times are stale: " \
        "run `make bench` (or `python -m attnrank readme-times --readme docs/performance.md`)"


def test_make_bench_writes_the_time_table_into_docs_performance():
    bench = (ROOT / "Makefile").read_text().split("\nbench:")[1].split("\n\n")[0]
    assert "readme-times --readme docs/performance.md" in bench
    assert "<!-- times:start -->" not in (ROOT / "README.md").read_text()
