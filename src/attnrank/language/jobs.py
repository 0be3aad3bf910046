"""Typed jobs of Paper A's appendix B (language models on text) and the one function that builds
them from the config.

``language_jobs(config, scale)`` holds every cross-key check of the ``language`` block that the
JSON schema cannot express and raises ValueError naming the key: the corpora of every scale are
in ``language.corpora``, builtins exist, user files exist and are non-empty UTF-8 text (read at
plan time, so ``snakemake -n`` already refuses them), and every corpus is long enough that both its
train and validation parts hold a window of ``context + 1`` bytes.

Jobs (key → job): ``(CORPORA, "")`` the corpora table (``language_corpora`` step),
``(TRAIN, corpus)`` one training job per corpus of the scale (``language_train`` step; the rank
estimators' τs are ``entropic.taus``, the seeds honour ``seed_offset``) and ``(RUNG,
"<rung>/<corpus>")`` one per corpus and larger rung (``language.scales.<scale>.rungs``: the
scale's grid with some keys written over; the same step). Standard library only (the
workflow imports this module while it parses the Snakefile; ``attnrank.language.corpora`` and
``attnrank.language.complexity`` are standard library at import time).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from attnrank.core.job import Job, part
from attnrank.language.complexity import MEASURES
from attnrank.language.corpora import FILE, CorpusSource, check_corpora, corpus_source

CORPORA = "corpora"  # language_jobs' key of the corpora-table job
HEADLINES = MEASURES  # the complexity measures a headline may name


def _sources(value: Any, where: str) -> tuple[CorpusSource, ...]:
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{where}: expected a list, got {value!r}")
    return tuple(part(CorpusSource)(v, f"{where}[{i}]") for i, v in enumerate(value))


@dataclass(frozen=True)
class _CorporaKeys(Job):
    """Keys every appendix-B job shares: the corpora it reads and how they are cut and split."""

    corpora: tuple[CorpusSource, ...]
    max_bytes: int
    val_fraction: float

    _nested: ClassVar[dict[str, Any]] = {"corpora": _sources}


@dataclass(frozen=True)
class LanguageCorporaJob(_CorporaKeys):
    """The corpora table: one row per corpus of the scale, with its complexity measures."""

    headline: str
    kgram_k: int

    def __post_init__(self) -> None:
        if self.headline not in HEADLINES:
            raise ValueError(f"LanguageCorporaJob.headline: must be one of {', '.join(HEADLINES)}, "
                             f"got {self.headline!r}")


TRAIN = "train"  # language_jobs' kind of the training jobs (one per corpus)
RUNG = "rung"  # language_jobs' kind of the larger rungs' jobs (one per rung and corpus)
BASE_RUNG = "base"  # the rung of the appendix-B model itself (the scale's grid; TRAIN jobs)


@dataclass(frozen=True)
class LanguageTrainJob(_CorporaKeys):
    """One corpus (``corpora`` holds it alone), every seed as the model axis of one program:
    byte-level causal Transformers (``models.language``), Adam with warm-up + cosine, ranks of
    every head's static kernel and realized mixer and both losses at the steps of
    ``logged_steps()`` (``experiments.language``). ``rung``: ``BASE_RUNG`` for the appendix-B
    model, else the name of a larger rung (``language.scales.<scale>.rungs``); ``field_windows``:
    how many of the ``mixer_inputs`` validation windows the logit field's ranks are taken over
    (0: the field is not measured)."""

    corpus: str
    rung: str
    seed_offset: int
    seeds: int
    d_model: int
    n_layers: int
    n_heads: int
    context: int
    batch: int
    steps: int
    lr: float
    warmup: float
    log_every: int
    early_log_every: int
    early_log_until: int
    mixer_inputs: int
    field_windows: int
    taus: tuple[float, ...]

    def __post_init__(self) -> None:
        if [c.name for c in self.corpora] != [self.corpus]:
            raise ValueError(f"LanguageTrainJob.corpora: must hold exactly the corpus "
                             f"{self.corpus!r}, got {[c.name for c in self.corpora]}")
        if not 0 <= self.field_windows <= self.mixer_inputs:
            raise ValueError(f"LanguageTrainJob.field_windows: must be in 0 … mixer_inputs "
                             f"({self.mixer_inputs}), got {self.field_windows}")
        if not self.rung:
            raise ValueError("LanguageTrainJob.rung: must be a name (base: the appendix-B model)")
        for key, least in (("log_every", 1), ("early_log_every", 1), ("early_log_until", 0)):
            if getattr(self, key) < least:
                raise ValueError(f"LanguageTrainJob.{key}: must be ≥ {least}, got "
                                 f"{getattr(self, key)}")

    def logged_steps(self) -> tuple[int, ...]:
        """The steps whose ranks and losses are recorded (``log_steps``)."""
        return log_steps(self.steps, self.log_every, self.early_log_every, self.early_log_until)


def log_steps(steps: int, log_every: int, early_log_every: int, early_log_until: int
              ) -> tuple[int, ...]:
    """The logged steps of a run of ``steps`` steps, increasing: step 0 (the initialization), every
    ``early_log_every`` steps up to ``early_log_until`` (inclusive; 0: none), every ``log_every``
    steps, and the last step: {0, e, 2e, …, ≤ min(until, steps)} ∪ {multiples of log_every ≤
    steps} ∪ {steps}."""
    if min(steps, log_every, early_log_every) < 1 or early_log_until < 0:
        raise ValueError(f"log_steps: steps, log_every and early_log_every must be ≥ 1 and "
                         f"early_log_until ≥ 0, got {steps}, {log_every}, {early_log_every}, "
                         f"{early_log_until}")
    early = range(0, min(early_log_until, steps) + 1, early_log_every)
    return tuple(sorted({*early, *range(0, steps + 1, log_every), steps}))


def corpus_sources(language: dict[str, Any], names: list[str]) -> tuple[CorpusSource, ...]:
    """The sources of corpora ``names`` (in that order) of config block ``language``."""
    out = []
    for n in names:
        kind = corpus_source(n, language)
        out.append(CorpusSource(n, kind, str(language["corpora"][n][kind])))
    return tuple(out)


def corpus_files(params: dict[str, Any]) -> list[str]:
    """The user files a job (its params, as JSON: the workflow's side of the boundary) reads: the
    rule lists them as inputs, so an edited file reruns the job."""
    return [c.ref for c in _sources(params["corpora"], "corpora") if c.source == FILE]


def min_corpus_bytes(context: int, val_fraction: float) -> int:
    """The fewest bytes whose split (the last floor(n · val_fraction) held out) leaves a window
    of context + 1 bytes on both sides."""
    need = context + 1
    n = 2 * need
    while int(n * val_fraction) < need or n - int(n * val_fraction) < need:
        n += 1  # at most need / min(val_fraction, 1 − val_fraction) steps
    return n


def check_language_config(config: dict[str, Any], scale: str) -> None:
    """Cross-key checks of the ``language`` block at ``scale``; ValueError naming the key (and,
    for a user file, its path)."""
    lang = config["language"]
    scales = lang["scales"]
    if scale not in scales:
        raise ValueError(f"language.scales: no grid for scale {scale!r}; config has "
                         f"{', '.join(scales)}")
    headline = lang["complexity"]["headline"]
    if headline not in HEADLINES:
        raise ValueError(f"language.complexity.headline: must be one of {', '.join(HEADLINES)}, "
                         f"got {headline!r}")
    vf = float(lang["val_fraction"])
    if not 0 < vf < 1:
        raise ValueError(f"language.val_fraction: must be in (0, 1), got {vf}")
    g = scales[scale]
    where = f"language.scales.{scale}"
    grids = rung_grids(g)
    if BASE_RUNG in g.get("rungs", {}):
        raise ValueError(f"{where}.rungs: {BASE_RUNG!r} names the scale's own grid; give the rung "
                         "another name")
    need = max(min_corpus_bytes(int(r["context"]), vf) for r in grids.values())
    for rung, r in grids.items():
        at = where if rung == BASE_RUNG else f"{where}.rungs.{rung}"
        least = min_corpus_bytes(int(r["context"]), vf)
        if int(lang["max_bytes"]) < least:
            raise ValueError(f"language.max_bytes: {lang['max_bytes']} bytes leave no window of "
                             f"{at}.context + 1 = {int(r['context']) + 1} bytes in both the train "
                             f"and the validation part (val_fraction {vf}); at least {least} needed")
        if int(r["d_model"]) % int(r["n_heads"]):
            raise ValueError(f"{at}.d_model: must be a multiple of {at}.n_heads "
                             f"({r['n_heads']}) (heads of equal width), got {r['d_model']}")
        if not 0 <= float(r["warmup"]) < int(r["steps"]):
            raise ValueError(f"{at}.warmup: must be a fraction in [0, 1) or a step count below "
                             f"{at}.steps ({r['steps']}), got {r['warmup']}")
        if not 0 <= int(r["field_windows"]) <= int(r["mixer_inputs"]):
            raise ValueError(f"{at}.field_windows: must be in 0 … {at}.mixer_inputs "
                             f"({r['mixer_inputs']}), got {r['field_windows']}")
    if int(lang["complexity"]["kgram_k"]) >= need:
        raise ValueError(f"language.complexity.kgram_k: {lang['complexity']['kgram_k']} is not "
                         f"below the corpus length")
    if len(set(g["corpora"])) != len(g["corpora"]):
        raise ValueError(f"{where}.corpora: names must be unique, got {g['corpora']}")
    check_corpora(lang, list(g["corpora"]), where=f"{where}.corpora", min_bytes=need)


def rung_grids(grid: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The model and training keys of every rung of a scale's grid ``grid``: ``BASE_RUNG`` → the
    grid itself, then each of its ``rungs`` → the grid with the rung's keys written over it (the
    corpora are the scale's)."""
    base = {k: v for k, v in grid.items() if k not in ("rungs", "corpora")}
    return {BASE_RUNG: base, **{name: {**base, **over}
                                for name, over in grid.get("rungs", {}).items()}}


TRAIN_KEYS = ("seeds", "d_model", "n_layers", "n_heads", "context", "batch", "steps", "log_every",
              "early_log_every", "early_log_until", "mixer_inputs", "field_windows")


def language_jobs(config: dict[str, Any], scale: str) -> dict[tuple[str, str], Job]:
    """Every appendix-B job at ``scale``: (kind, key) → job; kind ``CORPORA`` (key ""), ``TRAIN``
    (key: the corpus) or ``RUNG`` (key: "<rung>/<corpus>"). Checks the config first."""
    check_language_config(config, scale)
    lang = config["language"]
    g = lang["scales"][scale]
    sources = corpus_sources(lang, list(g["corpora"]))
    jobs: dict[tuple[str, str], Job] = {}
    jobs[(CORPORA, "")] = LanguageCorporaJob(
        corpora=sources, max_bytes=int(lang["max_bytes"]), val_fraction=float(lang["val_fraction"]),
        headline=str(lang["complexity"]["headline"]), kgram_k=int(lang["complexity"]["kgram_k"]))
    for rung, r in rung_grids(g).items():
        for src in sources:
            key = (TRAIN, src.name) if rung == BASE_RUNG else (RUNG, f"{rung}/{src.name}")
            jobs[key] = LanguageTrainJob(
                corpora=(src,), max_bytes=int(lang["max_bytes"]),
                val_fraction=float(lang["val_fraction"]), corpus=src.name, rung=rung,
                seed_offset=int(config["seed_offset"]), lr=float(r["lr"]),
                warmup=float(r["warmup"]), taus=tuple(float(t) for t in config["entropic"]["taus"]),
                **{k: int(r[k]) for k in TRAIN_KEYS})
    return jobs
