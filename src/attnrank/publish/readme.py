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
does both).
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
# Run times: benchmarks/results/summary.json and the README's time table (``make bench``)

TIMES_START, TIMES_END = "<!-- times:start -->", "<!-- times:end -->"
SUMMARY_KEYS = ("full_wall_s", "smoke_wall_s", "trainer_ratio", "trainer_gflops", "matmul_gflops",
                "machine", "date")
MACHINE_KEYS = ("cores", "cpu_model", "torch", "python")
TRAINER_FAMILIES = ("surrogate", "attention", "table", "mlp", "dense")
TARGETS = {"full_wall_s": 45 * 60, "smoke_wall_s": 2 * 60, "trainer_ratio": 3.0}


def _wall(record: dict | None) -> float | None:
    return float(record["wall_s"]) if record and record.get("ok", True) else None


def build_summary(trainer: dict, smoke: dict | None, full: dict | None, date: str) -> dict:
    """The summary record from the trainer benchmark (benchmarks/results/trainer.json) and the
    pipeline wall-time records (pipeline_<scale>_wall.json, None when not recorded)."""
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
            summary["runs"][scale] = {k: rec.get(k) for k in ("date", "cores", "command", "git",
                                                              "load_before", "load_after",
                                                              "where")}
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


def _minutes(seconds: float | None) -> str:
    if seconds is None:
        return "not recorded"
    return f"{seconds / 60:.1f} min ({seconds:,.0f} s)"


def _target_mark(ok: bool | None) -> str:
    return "" if ok is None else (" ✓" if ok else " ✗")


def times_section(summary: dict) -> str:
    """The README's run-time table (without the markers) from a summary record."""
    check_summary(summary)
    mach, targets = summary["machine"], summary.get("targets", TARGETS)
    runs = summary.get("runs", {})
    lines = [f"Generated by `make bench` from `benchmarks/results/summary.json` ({summary['date']}); "
             f"machine: {mach['cores']} cores, {mach['cpu_model']}, torch {mach['torch']}, "
             f"Python {mach['python']}.", "",
             "| what | measured | target | notes |", "| --- | --- | --- | --- |"]
    for scale, key, how in (("smoke", "smoke_wall_s", "make bench"),
                            ("full", "full_wall_s", "recorded by make reference")):
        if str((runs.get(scale) or {}).get("where") or "").startswith("a fresh copy"):
            how = f"benchmarks/pipeline_wall.py --scale {scale}"
        val, goal = summary[key], targets[key]
        run = runs.get(scale, {})
        ok = None if val is None else val <= goal
        if val is None:
            note = f"`python benchmarks/pipeline_wall.py --scale {scale}` records it"
        else:
            commit = ((run.get("git") or {}).get("commit") or "")[:7]
            dirty = " + edits" if (run.get("git") or {}).get("dirty") else ""
            load = run.get("load_before")
            note = (f"whole `snakemake --cores {run.get('cores', '?')} --config scale={scale}` "
                    f"in a fresh folder ({how}; {str(run.get('date', ''))[:10]}"
                    + (f", {commit}{dirty}" if commit else "")
                    + (f"; load average {load:.1f} at the start" if load is not None else "")
                    + (f", {run['load_after']:.1f} at the end" if run.get("load_after") is not None
                       else "") + ")")
        lines.append(f"| {scale} pipeline (both papers, audit included) | {_minutes(val)}"
                     f"{_target_mark(ok)} | ≤ {goal / 60:g} min | {note} |")
    ratios, gflops = summary["trainer_ratio"], summary.get("trainer_gflops", {})
    diffs = summary.get("trainer_max_param_diff", {})
    out_diffs = summary.get("trainer_max_output_diff", {})
    goal = targets["trainer_ratio"]
    order = [f for f in TRAINER_FAMILIES if f in ratios] + sorted(set(ratios) - set(TRAINER_FAMILIES))
    threads = mach.get("threads")
    models = runs.get("trainer", {}).get("models", {})
    programs = runs.get("trainer", {}).get("programs", {})
    for fam in order:
        extra = [f"{models[fam]} models"] if fam in models else []
        if programs.get(fam) == 1 and models.get(fam, goal + 1) <= goal:
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
        lines.append(f"| vectorized trainer, {fam} | {ratios[fam]:.2f}× a loop of single models"
                     f"{_target_mark(ratios[fam] >= goal)} | ≥ {goal:g}× | {'; '.join(extra)} |")
    if threads is not None:
        lines += ["", f"Trainer ratios: `benchmarks/trainer.py`, {threads} "
                      f"thread{'s' if threads != 1 else ''}, same models, "
                      "data and steps on both sides, alternating, min of repeats "
                      "(`benchmarks/results/trainer.json`)."]
    return "\n".join(lines)


def update_times(readme: Path, summary_path: Path, check: bool = False) -> bool:
    """Rewrite the time table of ``readme`` from ``summary_path``; True when it changed (with
    ``check``, nothing is written)."""
    import json

    text = readme.read_text(encoding="utf-8")
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    new = render_readme(text, times_section(summary), TIMES_START, TIMES_END)
    if new != text and not check:
        from attnrank.core.io import write_text

        write_text(new, readme)
    return new != text
