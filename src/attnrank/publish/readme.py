"""The README's generated sections: results (``make readme``) and run times (``make bench``).

The text between ``<!-- results:start -->`` and ``<!-- results:end -->`` is the README's compact
results: it is rewritten from ``results/reference/claims.csv`` (counts, the ids that pass, fail or
were not run per paper, and one line per claim that did not pass: its statement and, where the
claim sweeps a value, its verdict at every value), shows the first figure of every wing
(``minip``, ``entropic``, ``language``) as a thumbnail and links every PNG under
``results/reference/figures/``, in registry order. What each claim measured, its threshold and
note are in ``claims.md`` beside the CSV, which the section links. Every number in the section
comes from claims.csv; nothing is typed by hand. Standard library and pandas only.

The held-out section (``<!-- heldout:start -->`` … ``<!-- heldout:end -->``, ``make heldout``)
is one paragraph in the README (counts and the verdicts that moved) and the whole verdict table
in ``docs/results.md``.

The text between ``<!-- times:start -->`` and ``<!-- times:end -->`` is the run-time table of
``docs/performance.md``, rendered from ``benchmarks/results/summary.json`` (``build_summary``
makes that record from the benchmarks' own files; ``times_section`` renders it; ``make bench``
does both). From the same record: the P-core table between ``<!-- cores:start -->`` and
``<!-- cores:end -->`` (docs/performance.md, docs/running.md; ``cores_section``) and the README's
run times between ``<!-- runtimes:start -->`` and ``<!-- runtimes:end -->`` (``runtimes_section``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pandas as pd

from attnrank.pipeline.registry import FIGURES

START, END = "<!-- results:start -->", "<!-- results:end -->"
PAPERS = {"B": "Paper B (Min-IP)", "A": "Paper A (Entropic Bound)"}
VERDICTS = ("pass", "fail", "measured", "not run")
OPEN_FIGURES = ("minip_beyond",)  # figures of the papers' open questions: never a wing's thumbnail
THUMB_WIDTH = 260  # pixels


def _paper(label: str) -> str:
    """The registry's paper of a verdict's paper column ("B (our caution, not a paper claim)" → "B")."""
    return label.split(" ")[0]


def _ids(table: pd.DataFrame, verdict: str) -> str:
    ids = table[table["verdict"] == verdict]["id"].tolist()
    return ", ".join(ids) if ids else "none"


def _sentence(text: str) -> str:
    return text if text.endswith((".", "!", "?")) else text + "."


def _link(path: Path, readme_dir: Path) -> str:
    return Path(os.path.relpath(path, readme_dir)).as_posix()


def results_section(reference: Path, readme_dir: Path) -> str:
    """The generated section (without the markers) for the reference folder ``reference``; links
    are relative to ``readme_dir``."""
    table = pd.read_csv(reference / "claims.csv", dtype=str, keep_default_na=False)
    counts = table["verdict"].value_counts()
    claims_md = _link(reference / "claims.md", readme_dir)
    measured = (f"{counts.get('measured', 0)} measured (questions the papers leave open, never "
                f"pass/fail), " if counts.get("measured", 0) else "")
    lines = [f"{counts.get('pass', 0)} of {len(table)} claims pass, {counts.get('fail', 0)} fail, "
             f"{measured}{counts.get('not run', 0)} not run "
             f"([`{claims_md}`]({claims_md}): what each claim measured, its threshold and note; "
             f"published from `results/full` by `make reference`; this section is generated from "
             f"`{_link(reference / 'claims.csv', readme_dir)}` by `make readme`).", ""]
    for paper, title in PAPERS.items():
        part = table[table["paper"].map(_paper) == paper]
        lines.append(f"- **{title}**: " + "; ".join(f"{v}: {_ids(part, v)}" for v in VERDICTS)
                     + ".")
    others = table[~table["verdict"].isin(["pass", "measured"])]
    if len(others):
        lines += ["", "The claims that did not pass:", ""]
        for r in others.itertuples():
            sweep = getattr(r, "sweep", "")  # absent from a table written before the column
            sweep = f" *Verdict at every value:* {_sentence(sweep)}" if sweep else ""
            lines.append(f"- **{r.id}** ({r.verdict}) — {_sentence(r.statement)}{sweep}")
    figures = [reference / "figures" / f"{n}.png" for n in FIGURES]
    figures = [p for p in figures if p.exists()]
    if figures:
        first: dict[str, Path] = {}  # the first figure of every wing (minip_*, entropic_*, ...),
        for p in sorted(figures, key=lambda f: f.stem in OPEN_FIGURES):  # a paper claim's first
            first.setdefault(p.stem.split("_")[0], p)
        lines += ["", "".join(f'<a href="{_link(p, readme_dir)}"><img src="{_link(p, readme_dir)}" '
                              f'width="{THUMB_WIDTH}" alt="{p.stem}" title="{p.stem}"></a>'
                              for p in first.values()), "",
                  "Every figure (PNG; the PDF beside it): "
                  + ", ".join(f"[{p.stem}]({_link(p, readme_dir)})" for p in figures) + "."]
    return "\n".join(lines)


def render_readme(text: str, section: str, start: str = START, end: str = END) -> str:
    """``text`` with the part between the markers replaced by ``section``."""
    if text.count(start) != 1 or text.count(end) != 1 or text.index(start) > text.index(end):
        raise ValueError(f"README: expected one {start} … {end} block")
    head, rest = text.split(start)
    _, tail = rest.split(end)
    return f"{head}{start}\n{section}\n{end}{tail}"


def update_readme(readme: Path, reference: Path, check: bool = False) -> bool:
    """Rewrite the results section of ``readme`` from ``reference``; True when it changed (with
    ``check``, nothing is written)."""
    text = readme.read_text(encoding="utf-8")
    new = render_readme(text, results_section(reference, readme.parent))
    if new != text and not check:
        from attnrank.core.io import write_text

        write_text(new, readme)
    return new != text


# ---------------------------------------------------------------------------------------------
# Held-out seeds: the verdicts of a full run with another seed_offset beside the reference's

HELDOUT_START, HELDOUT_END = "<!-- heldout:start -->", "<!-- heldout:end -->"


def heldout_record(run: Path) -> dict:
    """What a held-out run is: its seed offset (read from every training sidecar, which must agree
    and be ≠ 0), its scale (the folder's name, results/<scale>), the commit its claims were made at
    and its verdict counts. ValueError otherwise."""
    import json

    claims_prov = run / "claims.csv.prov.json"
    if not claims_prov.exists():
        raise ValueError(f"{run}: no claims.csv.prov.json (is this a finished run folder?)")
    offsets = set()
    for prov in run.rglob("*.prov.json"):
        params = json.loads(prov.read_text()).get("params") or {}
        if isinstance(params, dict) and "seed_offset" in params:
            offsets.add(int(params["seed_offset"]))
    if len(offsets) != 1 or offsets == {0}:
        raise ValueError(f"{run}: a held-out run needs one seed_offset ≠ 0 in every job, found "
                         f"{sorted(offsets) or 'none'}")
    code = json.loads(claims_prov.read_text())["code"]
    table = pd.read_csv(run / "claims.csv", dtype=str, keep_default_na=False)
    return {"seed_offset": offsets.pop(), "scale": run.name, "git_commit": code["git_commit"],
            "git_dirty": code["git_dirty"], "claims": int(len(table)),
            "pass": int((table["verdict"] == "pass").sum())}


def pooled_quorum(ref: pd.DataFrame, held: pd.DataFrame, level: float, quorum: float
                  ) -> list[str]:
    """The quorum verdicts pooled over both seed sets (docs/methods.md §5): for every claim whose
    ``quorum`` column holds success counts in both claims tables, each condition's k₁ + k₂ of
    n₁ + n₂, the weakest pooled condition with its Clopper–Pearson interval at ``level``, and
    which conditions sit at the quorum edge (met by ``quorum_size`` seeds of n, or fewer, on a
    set). No lines when either table lacks the column (a run made before it existed)."""
    from attnrank.core.claims import parse_quorum, quorum_size
    from attnrank.core.stats import clopper_pearson

    if "quorum" not in ref.columns or "quorum" not in held.columns:
        return []
    a, b = (t.set_index("id")["quorum"] for t in (ref, held))
    rows = []
    for cid in a.index:
        if cid not in b.index or not a[cid] or not b[cid]:
            continue
        ca, cb = dict((c, (k, n)) for c, k, n in parse_quorum(a[cid])), \
            dict((c, (k, n)) for c, k, n in parse_quorum(b[cid]))
        pooled = {c: (ca[c][0] + cb[c][0], ca[c][1] + cb[c][1]) for c in ca if c in cb}
        if not pooled:
            continue
        cond, (k, n) = min(pooled.items(), key=lambda kv: kv[1][0] / kv[1][1])
        lo, hi = clopper_pearson(k, n, level)
        edge = [f"{c} ({name} {kk}/{nn})" for name, counts in (("reference", ca), ("held-out", cb))
                for c, (kk, nn) in counts.items() if kk < nn and kk <= quorum_size(nn, quorum)]
        rows.append(f"| {cid} | {ref.set_index('id').at[cid, 'verdict']} / "
                    f"{held.set_index('id').at[cid, 'verdict']} | {cond}: {k}/{n} | "
                    f"{lo:.2f}–{hi:.2f} | {'; '.join(edge) or '—'} |")
    if not rows:
        return []
    return [f"Quorum verdicts pooled over both seed sets: each per-seed condition's successes "
            f"added over the reference and the held-out seeds, the weakest pooled condition and "
            f"its exact (Clopper–Pearson) {level:.0%} interval; *at the quorum edge*: conditions "
            "that some seed set met with exactly the quorum's seeds (or missed):", "",
            "| claim | verdict (reference / held-out) | weakest pooled condition | "
            f"{level:.0%} interval | at the quorum edge |", "|---|---|---|---|---|", *rows]


def heldout_section(heldout: Path, record: dict, reference: Path, *, level: float,
                    quorum: float) -> str:
    """The held-out section: every claim's verdict on the reference seeds and on the held-out seeds
    (``heldout``: that run's claims.csv; ``record``: ``heldout_record`` of it), and the quorum
    verdicts pooled over both (``pooled_quorum`` at ``level``, seed quorum ``quorum``)."""
    ref = pd.read_csv(reference / "claims.csv", dtype=str, keep_default_na=False)
    held = pd.read_csv(heldout, dtype=str, keep_default_na=False)
    ids = ref["id"].tolist() + [i for i in held["id"] if i not in set(ref["id"])]  # table order
    both = pd.DataFrame({"id": ids,
                         "verdict_ref": ref.set_index("id")["verdict"].reindex(ids).fillna("—").values,
                         "verdict_held": held.set_index("id")["verdict"].reindex(ids).fillna("—").values})
    absent = both[(both["verdict_ref"] == "—") | (both["verdict_held"] == "—")]["id"].tolist()
    differ = (both["verdict_ref"] != both["verdict_held"]) & ~both["id"].isin(absent)
    moved = both[differ]["id"].tolist()
    only_ref = both[both["verdict_held"] == "—"]["id"].tolist()
    lines = [f"Held-out run (`make heldout`: the {record['scale']} run with "
             f"`seed_offset: {record['seed_offset']}`, "
             f"so no teacher, data set or initialization of the reference; commit "
             f"`{record['git_commit'][:7]}`"
             f"{', config.yaml differing only in seed_offset' if record['git_dirty'] else ''}): "
             f"{record['pass']} of {record['claims']} claims pass. Verdicts that differ from the "
             f"reference: {', '.join(moved) if moved else 'none'}."
             + (f" Not in the held-out run (claims added after it): {', '.join(only_ref)}."
                if only_ref else ""), "",
             "| claim | reference (offset 0) | held-out |", "|---|---|---|"]
    for r in both.itertuples():
        mark = "**" if r.id in moved else ""
        lines.append(f"| {mark}{r.id}{mark} | {r.verdict_ref} | {r.verdict_held} |")
    pooled = pooled_quorum(ref, held, level, quorum)
    if pooled:
        lines += ["", *pooled]
    measured = both[(both["verdict_ref"] == "measured") & (both["verdict_held"] == "measured")]
    for cid in measured["id"]:
        lines += ["", *_measured_side_by_side(cid, ref.set_index("id").at[cid, "measured"],
                                              held.set_index("id").at[cid, "measured"])]
    return "\n".join(lines)


# one fitted line of a "measured" claim, as minip.claims writes it:
#   "H=2: smallest F by m 6:4, 8:8, 10:16, 12:16; b = 0.35, 90% interval [0.2, 0.5] over 4 m"
_FIT = re.compile(r"([^;:]+): smallest F by m ([^;]*); b = ([^,]+), (\d+%) interval \[([^\]]*)\]")


def _fitted_lines(measured: str) -> dict[str, str]:
    """{line: "b = 0.35 [0.2, 0.5]; smallest F by m 6:4, 8:8, …"} of a measured claim's text."""
    return {m[1].strip(): f"b = {m[3]} [{m[5]}]; smallest F by m {m[2]}"
            for m in _FIT.finditer(measured)}


def _measured_side_by_side(cid: str, ref: str, held: str) -> list[str]:
    """A claim measured without a verdict (OPEN-1, OPEN-2): its fitted slopes on both seed sets,
    line by line, or its whole measured text where no fitted line is found."""
    a, b = _fitted_lines(ref), _fitted_lines(held)
    if not a and not b:
        return [f"{cid} (measured, no verdict): reference: {ref}; held-out: {held}"]
    level = (_FIT.search(ref) or _FIT.search(held))[4]
    out = [f"{cid} (measured, no verdict): the slope b of log2 F = a + b·m per line, with its "
           f"{level} seed-bootstrap interval, on both seed sets:", "",
           "| line | reference (offset 0) | held-out |", "|---|---|---|"]
    names = [*a, *(k for k in b if k not in a)]
    out += [f"| {line} | {a.get(line, '—')} | {b.get(line, '—')} |" for line in names]
    return out


HELDOUT_DOC = Path("docs") / "results.md"  # the whole verdict table; relative to the README


def update_heldout(readme: Path, heldout: Path, record_path: Path, reference: Path,
                   *, level: float, quorum: float, check: bool = False,
                   doc: Path | None = None) -> bool:
    """Rewrite the held-out sections from the committed held-out claims and record: in
    ``readme`` its first paragraph (counts, the verdicts that differ) with a link to ``doc``
    (default ``docs/results.md`` beside the README), in ``doc`` the whole section with the table.
    True when either changed (with ``check``, nothing is written)."""
    import json

    doc = readme.parent / HELDOUT_DOC if doc is None else doc
    section = heldout_section(heldout, json.loads(record_path.read_text()), reference,
                              level=level, quorum=quorum)
    link = _link(doc, readme.parent)
    summary = (section.split("\n\n")[0]
               + f" Every claim's verdict on both seed sets: [`{link}`]({link}#held-out-seeds).")
    changed = False
    for path, text in ((readme, summary), (doc, section)):
        old = path.read_text(encoding="utf-8")
        new = render_readme(old, text, HELDOUT_START, HELDOUT_END)
        if new != old and not check:
            from attnrank.core.io import write_text

            write_text(new, path)
        changed |= new != old
    return changed


# ---------------------------------------------------------------------------------------------
# Run times: benchmarks/results/summary.json, the time table of docs/performance.md, the P-core
# table (docs/performance.md, docs/running.md) and the README's run times (``make bench``)

TIMES_START, TIMES_END = "<!-- times:start -->", "<!-- times:end -->"
CORES_START, CORES_END = "<!-- cores:start -->", "<!-- cores:end -->"
RUNTIMES_START, RUNTIMES_END = "<!-- runtimes:start -->", "<!-- runtimes:end -->"
SUMMARY_KEYS = ("full_wall_s", "smoke_wall_s", "trainer_ratio", "trainer_gflops", "matmul_gflops",
                "machine", "date")
MACHINE_KEYS = ("cores", "cpu_model", "torch", "python")
TRAINER_FAMILIES = ("surrogate", "attention", "table", "mlp", "dense")
# the smoke run's wall; the vectorized trainer against a loop (judged for families of at least
# TRAINER_MIN_MODELS models: one program of M models cannot beat M programs of one by more than
# M×); the project's step against the packed peer (the peer more than this much faster: the
# project takes its structure). The full run has no target: its 2-core time is set by the recipe.
TARGETS = {"smoke_wall_s": 2 * 60, "trainer_ratio": 3.0, "peer_ratio": 1.2}
TRAINER_MIN_MODELS = 5
RUN_KEYS = ("date", "cores", "command", "git", "load_before", "load_after", "where",
            "every_job_ran", "training_jobs_benchmarked", "job_s", "compute_s",
            "startup_s_per_job")
SLOW_HOSTS = 3  # hosts differ by up to this factor in how fast the same job runs


def _wall(record: dict | None) -> float | None:
    return float(record["wall_s"]) if record and record.get("ok", True) else None


def _cores_record(cores: dict) -> dict:
    """What the tables use of benchmarks/results/cores.json."""
    return {k: cores[k] for k in ("run", "date", "jobs", "job_s", "longest_job", "check", "rows",
                                  "startup_median_s", "without") if k in cores} | {
        "critical_path": {"wall_s": cores["critical_path"]["wall_s"],
                          "jobs": [{"name": j["name"], "duration_s": j["duration_s"]}
                                   for j in cores["critical_path"]["jobs"]]}}


def _peer_record(peer: dict) -> dict:
    """What the time table uses of benchmarks/results/peer_step.json, per job."""
    out = {}
    for name, j in peer["jobs"].items():
        out[name] = {"ratio": j["project_over_peer"], "k": j["k"],
                     "loss_max_difference": j["loss_max_difference"],
                     "loss_max_relative_difference": j.get("loss_max_relative_difference"),
                     "heads": j.get("heads"), "groups": j["groups"], "models": j["models"],
                     **{side: {"ms_min": j[side]["ms_per_step"]["min"],
                               "ms_median": j[side]["ms_per_step"]["median"],
                               "events": j[side]["events_per_step"]["events"],
                               "top_level": j[side]["events_per_step"]["top_level"],
                               "compile_cold_s": j[side]["compile_s"]["cold"],
                               "compile_warm_s": j[side]["compile_s"]["warm"]}
                        for side in ("project", "peer")}}
    return {"date": peer["date"], "machine": peer["machine"], "load": peer.get("load"),
            "jobs": out}


def build_summary(trainer: dict, smoke: dict | None, full: dict | None, date: str, *,
                  cores: dict | None = None, peer: dict | None = None,
                  events: dict | None = None, without_beyond: dict | None = None) -> dict:
    """The summary record from the trainer benchmark (benchmarks/results/trainer.json) and the
    pipeline wall-time records (pipeline_<scale>_wall.json, None when not recorded); optional:
    the P-core replay (cores.json), the peer step (peer_step.json), the operator events of every
    training rule (step_events.json) and the run without the beyond study
    (pipeline_full_without_minip_beyond_train_wall.json)."""
    fams = {r["family"]: r for r in trainer["families"]}
    mach = trainer["machine"]
    summary = {
        "full_wall_s": _wall(full),
        "smoke_wall_s": _wall(smoke),
        "trainer_ratio": {k: r["ratio"] for k, r in fams.items()},
        "trainer_gflops": {k: r["vectorized_gflops"] for k, r in fams.items()},
        "trainer_max_param_diff": {k: r["max_param_diff"] for k, r in fams.items()},
        "trainer_max_output_diff": {k: r["max_output_diff"] for k, r in fams.items()
                                    if "max_output_diff" in r},
        "matmul_gflops": trainer["matmul_gflops"],
        "machine": {k: mach.get(k) for k in MACHINE_KEYS} | {"threads": mach.get("threads"),
                                                              "device": mach.get("device")},
        "date": date,
        "targets": dict(TARGETS),
        "runs": {"trainer": {"date": trainer.get("date"), "repeats": trainer.get("repeats"),
                             "steps": {k: r["steps"] for k, r in fams.items()},
                             "models": {k: r["models"] for k, r in fams.items()},
                             "programs": {k: r["vectorized_programs"] for k, r in fams.items()
                                          if "vectorized_programs" in r}}},
    }
    for scale, rec in (("smoke", smoke), ("full", full)):
        if rec:
            summary["runs"][scale] = {k: rec.get(k) for k in RUN_KEYS}
    if without_beyond and without_beyond.get("ok", True):
        summary["runs"]["full_without_beyond"] = {k: without_beyond.get(k) for k in RUN_KEYS} | {
            "wall_s": float(without_beyond["wall_s"]), "omit_from": without_beyond.get("omit_from")}
    if cores:
        summary["cores"] = _cores_record(cores)
    if peer:
        summary["peer_step"] = _peer_record(peer)
    if events:
        summary["step_events"] = {"date": events["date"], "scale": events.get("scale"),
                                  "jobs": [{k: j[k] for k in ("rule", "job", "events",
                                                              "top_level", "models")}
                                           for j in events["jobs"]]}
    check_summary(summary)
    return summary


def check_summary(summary: dict) -> None:
    """Raise ValueError naming the first missing or malformed key of a summary record."""
    for key in SUMMARY_KEYS:
        if key not in summary:
            raise ValueError(f"summary.json: missing key {key!r}")
    for key in MACHINE_KEYS:
        if key not in summary["machine"]:
            raise ValueError(f"summary.json: machine lacks {key!r}")
    for key in ("full_wall_s", "smoke_wall_s"):
        if summary[key] is not None and not float(summary[key]) > 0:
            raise ValueError(f"summary.json: {key} must be positive seconds or null")
    if not isinstance(summary["trainer_ratio"], dict) or not summary["trainer_ratio"]:
        raise ValueError("summary.json: trainer_ratio must map each model family to its ratio")
    rows = (summary.get("cores") or {}).get("rows")
    if summary.get("cores") is not None and (
            not rows or not all(r.get("wall_s", 0) > 0 for r in rows)):
        raise ValueError("summary.json: cores.rows must list positive walls per core count")


def _minutes(seconds: float | None) -> str:
    if seconds is None:
        return "not recorded"
    return f"{seconds / 60:.1f} min ({seconds:,.0f} s)"


def _target_mark(ok: bool | None) -> str:
    return "" if ok is None else (" ✓" if ok else " ✗")


def how_run(run: dict, scale: str) -> str:
    """What a wall-time record says of its run: a fresh folder (every job ran), the repository
    with every job run, or the repository on a run folder that existed before (restored from the
    reference or left by an earlier run: only what was stale reran)."""
    where = str(run.get("where") or "")
    if where.startswith("a fresh copy"):
        return f"in a fresh folder, every job run (benchmarks/pipeline_wall.py --scale {scale})"
    ran = run.get("training_jobs_benchmarked")
    jobs = f", {ran} jobs ran" if ran is not None else ""
    if run.get("every_job_ran"):
        return f"in the repository, every job run{jobs} (make reference)"
    return (f"in the repository on its existing results/{scale} (restored from the reference "
            f"or left by an earlier run), every stale job rerun{jobs} (make reference)")


def _run_note(run: dict, scale: str) -> str:
    commit = ((run.get("git") or {}).get("commit") or "")[:7]
    dirty = " + edits" if (run.get("git") or {}).get("dirty") else ""
    load = run.get("load_before")
    return (f"whole `snakemake --cores {run.get('cores', '?')} --config scale={scale}` "
            f"{how_run(run, scale)}; {str(run.get('date', ''))[:10]}"
            + (f", {commit}{dirty}" if commit else "")
            + (f"; {run['training_jobs_benchmarked']} jobs, {run['job_s']:,.0f} job s, of "
               f"which {run['compute_s']:,.0f} s their steps and {run['startup_s_per_job']:.1f} s "
               "a job starting (Python, torch, pandas)"
               if run.get("job_s") and run.get("training_jobs_benchmarked") else "")
            + (f"; load average {load:.1f} at the start" if load is not None else "")
            + (f", {run['load_after']:.1f} at the end" if run.get("load_after") is not None
               else ""))


def _trainer_rows(summary: dict) -> list[str]:
    ratios, gflops = summary["trainer_ratio"], summary.get("trainer_gflops", {})
    diffs = summary.get("trainer_max_param_diff", {})
    out_diffs = summary.get("trainer_max_output_diff", {})
    goal = summary.get("targets", TARGETS).get("trainer_ratio", TARGETS["trainer_ratio"])
    order = [f for f in TRAINER_FAMILIES if f in ratios] + sorted(set(ratios) - set(TRAINER_FAMILIES))
    runs = summary.get("runs", {})
    models = runs.get("trainer", {}).get("models", {})
    programs = runs.get("trainer", {}).get("programs", {})
    lines = []
    for fam in order:
        extra = [f"{models[fam]} models"] if fam in models else []
        judged = models.get(fam, TRAINER_MIN_MODELS) >= TRAINER_MIN_MODELS
        if not judged:
            extra.append(f"reported, not judged: the target holds for families of at least "
                         f"{TRAINER_MIN_MODELS} models")
            if programs.get(fam) == 1:
                # the loop trains each model alone; one program of M models costs at least one
                # model's step, so loop ÷ vectorized ≤ M
                extra.append(f"at most {models[fam]}× by construction (one program of "
                             f"{models[fam]} models against {models[fam]} programs of one)")
        if fam in gflops:
            extra.append(f"{gflops[fam]:.3g} GFLOP/s of matrix products vs "
                         f"{summary['matmul_gflops']:.3g} for a large fp32 matmul")
        if fam in out_diffs:
            extra.append(f"max output difference {out_diffs[fam]:.1e}")
        if fam in diffs:
            extra.append(f"max parameter difference {diffs[fam]:.1e}")
        mark = _target_mark(ratios[fam] >= goal) if judged else ""
        target = f"≥ {goal:g}×" if judged else "—"
        lines.append(f"| vectorized trainer, {fam} | {ratios[fam]:.2f}× a loop of single models"
                     f"{mark} | {target} | {'; '.join(extra)} |")
    return lines


def _peer_rows(summary: dict) -> list[str]:
    peer = summary.get("peer_step")
    if not peer:
        return []
    goal = summary.get("targets", TARGETS).get("peer_ratio", TARGETS["peer_ratio"])
    lines = []
    for name, j in peer["jobs"].items():
        p, q = j["project"], j["peer"]
        heads = f", H = {j['heads']} alone" if j.get("heads") else ""
        rel = j.get("loss_max_relative_difference")
        note = (f"{j['groups']} groups, {j['models']} models{heads}; ms a step (min, median of "
                f"alternating runs): project {p['ms_min']:.1f}, {p['ms_median']:.1f}; peer "
                f"{q['ms_min']:.1f}, {q['ms_median']:.1f}; operator events a step: project "
                f"{p['events']:,} ({p['top_level']:,} top-level), peer {q['events']:,} "
                f"({q['top_level']:,}); compile cold / warm: project {p['compile_cold_s']:.1f} / "
                f"{p['compile_warm_s']:.1f} s, peer {q['compile_cold_s']:.1f} / "
                f"{q['compile_warm_s']:.1f} s; largest loss difference over {j['k']} steps "
                f"{j['loss_max_difference']:.1e}"
                + (f" ({rel:.1e} relative)" if rel is not None else ""))
        # the peer faster by more than the goal: the project should take its structure
        mark = _target_mark(j["ratio"] <= goal)
        lines.append(f"| training step beside a packed, whole-compiled peer, {name} | project ÷ "
                     f"peer {j['ratio']:.2f}×{mark} | peer ≤ {goal:g}× faster | {note} |")
    return lines


def _event_rows(summary: dict) -> list[str]:
    events = summary.get("step_events")
    if not events:
        return []
    return [f"| operator events a training step, {j['rule']} | {j['events']:,} "
            f"({j['top_level']:,} top-level) | — | its longest job, {j['job']} ({j['models']} "
            f"models); each at least one kernel launch on a GPU |" for j in events["jobs"]]


def times_section(summary: dict) -> str:
    """The run-time table (without the markers) from a summary record."""
    check_summary(summary)
    mach, targets = summary["machine"], summary.get("targets", TARGETS)
    runs = summary.get("runs", {})
    lines = [f"Generated by `make bench` from `benchmarks/results/summary.json` ({summary['date']}); "
             f"machine: {mach['cores']} cores, {mach['cpu_model']}, torch {mach['torch']}, "
             f"Python {mach['python']}.", "",
             "| what | measured | target | notes |", "| --- | --- | --- | --- |"]
    for scale, key in (("smoke", "smoke_wall_s"), ("full", "full_wall_s")):
        val, goal = summary[key], targets.get(key)
        run = runs.get(scale, {})
        ok = None if val is None or goal is None else val <= goal
        if val is None:
            note = f"`python benchmarks/pipeline_wall.py --scale {scale}` records it"
        else:
            note = _run_note(run, scale)
        if key == "full_wall_s" and summary.get("cores"):
            note += "; on more cores: the P-core table"
        target = f"≤ {goal / 60:g} min" if goal is not None else "—"
        lines.append(f"| {scale} pipeline (both papers, audit included) | {_minutes(val)}"
                     f"{_target_mark(ok)} | {target} | {note} |")
    lines += _trainer_rows(summary) + _peer_rows(summary) + _event_rows(summary)
    threads = mach.get("threads")
    if threads is not None:
        lines += ["", f"Trainer ratios: `benchmarks/trainer.py`, {threads} "
                      f"thread{'s' if threads != 1 else ''}, same models, "
                      "data and steps on both sides, alternating, min of repeats "
                      "(`benchmarks/results/trainer.json`)."]
    peer = summary.get("peer_step")
    if peer:
        load = peer.get("load") or {}
        at = (f", load average {load['before']:.1f} at the start, {load['after']:.1f} at the end"
              if load.get("before") is not None and load.get("after") is not None else "")
        lines += ["", f"Peer step: `benchmarks/peer_step.py` ({str(peer['date'])[:10]}, "
                      f"{peer['machine'].get('threads', 1)} thread{at}; "
                      "`benchmarks/results/peer_step.json`)."]
    events = summary.get("step_events")
    if events:
        lines += ["", f"Operator events: `benchmarks/step_events.py` (one step after warm-up, "
                      f"the profiler's count; {str(events['date'])[:10]}; "
                      "`benchmarks/results/step_events.json`)."]
    return "\n".join(lines)


def _cores_label(p: int | None) -> str:
    return "unlimited" if p is None else str(p)


def _chain(cores: dict) -> str:
    return " → ".join(f"{j['name']} ({j['duration_s']:,.0f} s)"
                      for j in cores["critical_path"]["jobs"])


def cores_section(summary: dict) -> str:
    """How long the full run takes on P cores (without the markers): the replay of the
    reference's jobs (benchmarks/results/cores.json, through summary.json)."""
    check_summary(summary)
    cores = summary.get("cores")
    if not cores:
        return ("How long on P cores: not recorded (`python benchmarks/cores.py`, then "
                "`make bench`).")
    check = cores["check"]
    lines = [f"How long the full run takes on your machine, by its cores: the full DAG of "
             f"`{cores['run']}` ({cores['jobs']} jobs, {cores['job_s']:,.0f} job seconds) "
             f"replayed from its sidecars by `benchmarks/cores.py` (each job one core for its "
             f"recorded seconds and its start-up, ready jobs by the rules' priority then longest "
             f"first; generated by `make bench` from `benchmarks/results/cores.json`, "
             f"{str(cores['date'])[:10]}).", "",
             "| cores | full run (wall) |", "| ---: | ---: |"]
    for r in cores["rows"]:
        extra = ""
        if r["cores"] == check["cores"] and r["wall_s"] > 1.05 * check["recorded_wall_s"]:
            extra = (f" (the recorded run restored {check.get('jobs_restored', 'some')} jobs and "
                     f"reran {check.get('jobs_rerun', 'the other')} in "
                     f"{check['recorded_wall_s'] / 60:.1f} min; the replay of that run: "
                     f"{100 * check['difference']:+.2f} %)")
        elif r["cores"] == check["cores"]:
            extra = (f" (recorded: {check['recorded_wall_s'] / 60:.1f} min; the replay of that "
                     f"run: {100 * check['difference']:+.2f} %)")
        lines.append(f"| {_cores_label(r['cores'])} | {r['wall_s'] / 60:.1f} min{extra} |")
    longest = cores["longest_job"]
    lines += ["", f"From about {_plateau(cores)} cores up the wall is the longest chain of jobs "
                  f"(the critical path): {_chain(cores)}; the longest job is {longest['name']} "
                  f"({longest['duration_s']:,.0f} s). Hosts differ by up to {SLOW_HOSTS}× in how "
                  f"fast the same job runs, and every row scales with the host; with more than "
                  f"{check['cores']} cores, jobs side by side also share memory bandwidth, which "
                  f"the replay does not model."]
    return "\n".join(lines)


def _plateau(cores: dict) -> int | str:
    """The fewest cores of the table whose wall is within 1 % of the unlimited one."""
    rows = cores["rows"]
    floor = min(r["wall_s"] for r in rows)
    return next((r["cores"] for r in rows if r["cores"] and r["wall_s"] <= 1.01 * floor),
                "unlimited")


def runtimes_section(summary: dict) -> str:
    """The README's run times (without the markers): the full run on 2 cores (its record), on
    more cores (the replay), the smoke run and the run without the beyond study."""
    check_summary(summary)
    runs = summary.get("runs", {})
    full, smoke = summary["full_wall_s"], summary["smoke_wall_s"]
    parts = []
    cores = summary.get("cores")
    run = runs.get("full", {})
    two = next((r["wall_s"] for r in (cores or {}).get("rows", [])
                if r["cores"] == run.get("cores")), None)
    if full is not None and two is not None and two > 1.05 * full:
        # The record is of a partial run (restored, then only the stale jobs rerun): the whole
        # run's time is the replay of every job of the reference on the same cores.
        rerun = cores["check"].get("jobs_rerun")
        parts.append(f"The full run takes **about {two / 60:.0f} minutes on {run.get('cores')} "
                     f"cores** (every job of the reference replayed from its sidecars; its last "
                     f"run, {str(run.get('date', ''))[:10]}, restored the previous reference and "
                     f"reran the {rerun or 'its'} stale jobs in {full / 60:.0f} minutes; hosts differ by "
                     f"up to {SLOW_HOSTS}× in how fast the same job runs)")
    elif full is not None:
        parts.append(f"The full run took **{full / 60:.0f} minutes on {run.get('cores', '?')} "
                     f"cores** (the reference's run, {str(run.get('date', ''))[:10]}; hosts differ "
                     f"by up to {SLOW_HOSTS}× in how fast the same job runs)")
    if cores:
        rows = {r["cores"]: r["wall_s"] for r in cores["rows"]}
        plateau = _plateau(cores)
        shown = [p for p in (4, 8, 16) if p in rows and (plateau == "unlimited" or p < plateau)]
        parts.append("on more cores (each job runs on one): "
                     + "".join(f"{rows[p] / 60:.0f} min on {p}, " for p in shown)
                     + f"about {min(rows.values()) / 60:.0f} min from {plateau} cores up (the "
                       "longest chain of jobs)")
    lines = ["; ".join(parts) + "." if parts else "The full run's time: not recorded."]
    if smoke is not None:
        run = runs.get("smoke", {})
        lines.append(f"The smoke run takes {smoke / 60:.1f} minutes on {run.get('cores', '?')} "
                     "cores.")
    wo = runs.get("full_without_beyond")
    replayed = ((cores or {}).get("without") or {}).get("minip_beyond_train")
    what = ("`snakemake --cores all --omit-from minip_beyond_train` builds every table and figure "
            "but the beyond-the-single-head study's (OPEN-1, OPEN-2, TT-7, TT-7b), without the "
            "claims file and the audit, which need every study: ")
    if replayed:  # the same run as the rows above, replayed without the study
        two = next(r["wall_s"] for r in replayed["rows"] if r["cores"] == 2)
        lines.append(what + f"about {two / 60:.0f} minutes on 2 cores (the reference's run "
                            "replayed without it).")
    elif wo:
        lines.append(what + f"{wo['wall_s'] / 60:.0f} minutes on {wo.get('cores', '?')} cores.")
    lines.append("Measured figures, the table by cores and where the time goes: "
                 "[`docs/performance.md`](docs/performance.md).")
    return " ".join(lines)


def update_times(readme: Path, summary_path: Path, check: bool = False,
                 cores_docs: tuple[Path, ...] = (), front: Path | None = None) -> bool:
    """Rewrite the time table of ``readme``, the P-core table of every file of ``cores_docs``
    and the run times of ``front`` (the README) from ``summary_path``; True when any changed
    (with ``check``, nothing is written)."""
    import json

    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    blocks: dict[Path, list[tuple[str, str, str]]] = {
        readme: [(times_section(summary), TIMES_START, TIMES_END)]}
    for doc in cores_docs:
        blocks.setdefault(doc, []).append((cores_section(summary), CORES_START, CORES_END))
    if front is not None:
        blocks.setdefault(front, []).append((runtimes_section(summary), RUNTIMES_START,
                                             RUNTIMES_END))
    changed = False
    for path, sections in blocks.items():
        text = path.read_text(encoding="utf-8")
        new = text
        for section, start, end in sections:
            new = render_readme(new, section, start, end)
        if new != text and not check:
            from attnrank.core.io import write_text

            write_text(new, path)
        changed |= new != text
    return changed
