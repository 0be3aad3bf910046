"""Appendix B corpora and complexity: byte-exact deterministic corpora, the controls' complexity
order as constructed, k-gram entropy on sequences of known entropy, and user files refused at
plan time (the jobs builder and the plan) with the config key and the path in the message."""

import copy
import hashlib
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from attnrank.language import complexity
from attnrank.language.complexity import (
    corpus_complexity,
    kgram_conditional_entropy,
    lzma_bits_per_byte,
    vocabulary_size,
)
from attnrank.language.corpora import (
    BUILTIN_CORPORA,
    check_corpora,
    load_corpus,
    split_corpus,
    stdlib_sources,
)
from attnrank.language.experiments.corpora import COLUMNS, corpora_table
from attnrank.language.jobs import (
    CORPORA,
    HEADLINES,
    LanguageCorporaJob,
    corpus_files,
    language_jobs,
    min_corpus_bytes,
)
from attnrank.pipeline.plan import build_plans

ROOT = Path(__file__).resolve().parents[1]
SMALL = 100_000  # bytes per corpus in the order tests (the config's full size is slower, same order)
CONTROLS = ("templated", "prose", "prose_words_shuffled", "prose_chars_shuffled")  # rising complexity


@pytest.fixture()
def config():
    return yaml.safe_load((ROOT / "config.yaml").read_text())


def _language(max_bytes=SMALL, **files):
    corpora = {n: {"builtin": n} for n in BUILTIN_CORPORA} | {n: {"file": p} for n, p in files.items()}
    return {"corpora": corpora, "max_bytes": max_bytes, "val_fraction": 0.1}


# ---- loading -------------------------------------------------------------------------------

def test_every_builtin_is_cut_to_max_bytes_and_byte_exact_twice():
    lang = _language(max_bytes=5000)
    for name in BUILTIN_CORPORA:
        a = load_corpus(name, lang)
        assert len(a) == 5000, name
        assert load_corpus(name, copy.deepcopy(lang)) == a


def test_builtins_are_byte_exact_in_a_fresh_process():
    lang = _language(max_bytes=50_000)
    here = {n: hashlib.sha256(load_corpus(n, lang)).hexdigest() for n in BUILTIN_CORPORA}
    code = ("import hashlib, json, sys\nfrom attnrank.language.corpora import BUILTIN_CORPORA, load_corpus\n"
            "lang = json.loads(sys.argv[1])\n"
            "print(json.dumps({n: hashlib.sha256(load_corpus(n, lang)).hexdigest() "
            "for n in BUILTIN_CORPORA}))")
    out = subprocess.run([sys.executable, "-c", code, json.dumps(lang)], check=True,
                         capture_output=True, text=True, env={"PYTHONHASHSEED": "123",
                                                              "PATH": "/usr/bin:/bin"})
    assert json.loads(out.stdout) == here


def test_controls_are_permutations_of_the_prose():
    lang = _language()
    prose = load_corpus("prose", lang)
    words = load_corpus("prose_words_shuffled", lang)
    chars = load_corpus("prose_chars_shuffled", lang)
    assert sorted(words) == sorted(prose) and sorted(chars.decode()) == sorted(prose.decode())
    assert words != prose and chars != prose
    # the word shuffle keeps the sequence of whitespace runs, and permutes whole words
    assert re.findall(rb"\s+", words) == re.findall(rb"\s+", prose)
    assert sorted(prose.split()) == sorted(words.split())


def test_templated_is_made_of_its_small_vocabulary():
    data = load_corpus("templated", _language())
    vocab = {w for line in data.decode().splitlines() for w in line.split()}
    assert len(vocab) <= 25 and vocabulary_size(data) < vocabulary_size(load_corpus("prose", _language()))


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "lib"
    files = {"b.py": "b = 1\n", "a.py": "a = 1\n", "pkg/z.py": "z = 1\n", "pkg/a.py": "pa\n",
             "test/t.py": "skip\n", "pkg/tests/t.py": "skip\n", "site-packages/s.py": "skip\n",
             "pkg/notes.txt": "not python\n", "pkg_b.py": "pb\n"}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_code_sources_are_sorted_python_without_tests_or_site_packages(tmp_path):
    root = _tree(tmp_path)
    rel = [p.relative_to(root).as_posix() for p in stdlib_sources(root)]
    assert rel == ["a.py", "b.py", "pkg/a.py", "pkg/z.py", "pkg_b.py"]
    real = [p.as_posix() for p in stdlib_sources()]
    assert real == sorted(real) and len(real) > 100
    assert not any(part in ("test", "tests", "site-packages") for p in stdlib_sources()
                   for part in p.parts[-3:-1])


def test_code_stops_once_max_bytes_is_reached(tmp_path):
    from attnrank.language import corpora

    root = _tree(tmp_path)
    assert corpora._code(1, root) == b"a = 1\n"  # the first file reaches 1 byte: reading stops
    assert corpora._code(12, root) == b"a = 1\nb = 1\n"
    assert corpora._code(10**6, root) == b"a = 1\nb = 1\npa\nz = 1\npb\n"


def test_split_holds_out_the_tail():
    data = bytes(range(100))
    train, val = split_corpus(data, 0.1)
    assert train + val == data and len(val) == 10 and val == data[-10:]
    with pytest.raises(ValueError, match="cannot be split"):
        split_corpus(b"abc", 0.1)
    with pytest.raises(ValueError, match="val_fraction"):
        split_corpus(data, 1.0)


# ---- complexity ----------------------------------------------------------------------------

def test_kgram_entropy_of_known_sequences():
    periodic = b"abcde" * 4000
    assert kgram_conditional_entropy(periodic, 4) == 0.0  # the next byte is fixed by 4 before it
    assert kgram_conditional_entropy(periodic, 1) == 0.0  # here even by one
    assert kgram_conditional_entropy(periodic, 0) == pytest.approx(math.log2(5), abs=1e-12)
    rng = np.random.default_rng(0)
    for j in (1, 3, 5):
        iid = rng.integers(2**j, size=200_000).astype(np.uint8).tobytes()
        for k in (0, 1):
            assert kgram_conditional_entropy(iid, k) == pytest.approx(j, abs=0.01)
        # plug-in is biased low once the contexts are sparse: 32^3 contexts for 200k bytes
        if j == 5:
            assert kgram_conditional_entropy(iid, 3) < j - 0.5
        assert lzma_bits_per_byte(iid) >= j * 0.98  # a code cannot beat the entropy (much)
        assert vocabulary_size(iid) == 2**j


def test_kgram_entropy_equals_the_definition_on_a_small_text():
    data = b"abracadabra abracadabra"
    k = 2
    grams = [data[i:i + k + 1] for i in range(len(data) - k)]
    n = len(grams)
    joint = {g: grams.count(g) / n for g in set(grams)}
    ctx: dict[bytes, float] = {}
    for g, p in joint.items():
        ctx[g[:k]] = ctx.get(g[:k], 0.0) + p
    h = -sum(p * math.log2(p / ctx[g[:k]]) for g, p in joint.items())
    assert kgram_conditional_entropy(data, k) == pytest.approx(h, abs=1e-12)
    with pytest.raises(ValueError):
        kgram_conditional_entropy(b"ab", 2)
    with pytest.raises(ValueError):
        lzma_bits_per_byte(b"")


@pytest.mark.parametrize("measure", ["lzma_bits_per_byte", "kgram_entropy_bits"])
def test_controls_complexity_order_is_as_constructed(measure):
    lang = _language()
    values = [corpus_complexity(load_corpus(n, lang), 3)[measure] for n in CONTROLS]
    shown = dict(zip(CONTROLS, values, strict=True))
    assert values == sorted(values) and len(set(values)) == len(values), shown


def test_headlines_are_the_complexity_measures():
    assert HEADLINES == complexity.MEASURES


# ---- the corpora table and its job ---------------------------------------------------------

def test_corpora_table_rows_and_headline(config, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("mine.txt").write_text("hello world, " * 2000)
    config["language"]["max_bytes"] = 20_000
    config["language"]["corpora"]["mine"] = {"file": "mine.txt"}
    config["language"]["scales"]["smoke"]["corpora"] = ["prose", "mine"]
    config["language"]["complexity"]["headline"] = "kgram_entropy_bits"
    job = language_jobs(config, "smoke")[(CORPORA, "")]
    assert LanguageCorporaJob.from_json(job.to_json()) == job
    assert corpus_files(job.to_dict()) == ["mine.txt"]
    df = corpora_table(job)
    assert tuple(df.columns) == COLUMNS and list(df["corpus"]) == ["prose", "mine"]
    assert list(df["source"]) == ["builtin", "file"]
    assert (df["complexity"] == df["kgram_entropy_bits"]).all()
    assert set(df["headline_measure"]) == {"kgram_entropy_bits"}
    mine = Path("mine.txt").read_bytes()[:20_000]
    assert df["sha256"].iloc[1] == hashlib.sha256(mine).hexdigest()
    assert df["n_bytes"].tolist() == [20_000, 20_000]
    # the job refuses a headline that is not a measure
    data = job.to_dict() | {"headline": "vocab_size"}
    with pytest.raises(ValueError, match="headline"):
        LanguageCorporaJob.from_dict(data)


def test_min_corpus_bytes_leaves_a_window_on_both_sides():
    for context in (2, 32, 64):
        for vf in (0.05, 0.1, 0.5, 0.9):
            n = min_corpus_bytes(context, vf)
            train, val = split_corpus(bytes(n), vf)
            assert len(train) > context and len(val) > context
            shorter = bytes(n - 1)
            assert min(len(p) for p in split_corpus(shorter, vf)) <= context


# ---- bad corpora are refused at plan time, naming the key and the path ----------------------

BAD_FILES = {
    "missing": (None, "no such file"),
    "empty": (b"", "is empty"),
    "nul": (b"text\0more text\n" * 100, "not UTF-8 text"),
    "latin1": ("caf\u00e9 ".encode("latin-1") * 200, "not UTF-8 text"),
}


@pytest.mark.parametrize("case", BAD_FILES)
def test_bad_user_files_are_refused_by_check_corpora(case, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    content, why = BAD_FILES[case]
    path = f"texts/{case}.txt"
    if content is not None:
        Path("texts").mkdir()
        Path(path).write_bytes(content)
    lang = _language(mine=path)
    with pytest.raises(ValueError) as err:
        check_corpora(lang, ["prose", "mine"])
    msg = str(err.value)
    assert "language.corpora.mine.file" in msg and path in msg and why in msg
    assert "\n" not in msg
    check_corpora(lang, ["prose"])  # a bad file no scale uses is not read


@pytest.mark.parametrize("case", BAD_FILES)
def test_bad_user_files_fail_the_plan(case, config, tmp_path, monkeypatch):
    """What `snakemake -n` runs while it parses the Snakefile (common.smk: build_plans)."""
    monkeypatch.chdir(tmp_path)
    content, why = BAD_FILES[case]
    path = f"{case}.txt"
    if content is not None:
        Path(path).write_bytes(content)
    config["language"]["corpora"]["mine"] = {"file": path}
    config["language"]["scales"]["smoke"]["corpora"] = ["prose", "mine"]
    for build in (lambda: language_jobs(config, "smoke"), lambda: build_plans(config)):
        with pytest.raises(ValueError, match=r"language\.corpora\.mine\.file") as err:
            build()
        assert path in str(err.value) and why in str(err.value)


def test_a_good_user_file_loads_exactly_and_is_planned(config, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = "ünïcode text, line after line\n" * 300
    Path("good.txt").write_text(text, encoding="utf-8")
    lang = _language(max_bytes=1001, mine="good.txt")
    data = load_corpus("mine", lang)
    assert data == text.encode()[:1001]  # a cut may end inside a character: still accepted
    check_corpora(lang, ["mine"])
    config["language"]["corpora"]["mine"] = {"file": "good.txt"}
    config["language"]["scales"]["smoke"]["corpora"] = ["mine"]
    job = language_jobs(config, "smoke")[(CORPORA, "")]
    assert corpus_files(job.to_dict()) == ["good.txt"]


def test_short_user_file_is_refused(config, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("short.txt").write_text("too short for a window\n")
    config["language"]["corpora"]["mine"] = {"file": "short.txt"}
    config["language"]["scales"]["smoke"]["corpora"] = ["mine"]
    with pytest.raises(ValueError, match=r"language\.corpora\.mine\.file: file 'short.txt' has"):
        language_jobs(config, "smoke")


def test_unknown_builtin_and_unknown_corpus_are_refused(config):
    bad = copy.deepcopy(config)
    bad["language"]["corpora"]["prose"] = {"builtin": "poetry"}
    with pytest.raises(ValueError, match=r"language\.corpora\.prose\.builtin: unknown builtin 'poetry'"):
        language_jobs(bad, "smoke")
    bad = copy.deepcopy(config)
    bad["language"]["scales"]["smoke"]["corpora"] = ["prose", "novels"]
    with pytest.raises(ValueError, match=r"language\.scales\.smoke\.corpora: corpora \['novels'\]"):
        language_jobs(bad, "smoke")
    bad = copy.deepcopy(config)
    bad["language"]["corpora"]["prose"] = {"builtin": "prose", "file": "x.txt"}
    with pytest.raises(ValueError, match=r"language\.corpora\.prose: expected"):
        language_jobs(bad, "smoke")
    bad = copy.deepcopy(config)
    bad["language"]["max_bytes"] = 100
    with pytest.raises(ValueError, match=r"language\.max_bytes"):
        language_jobs(bad, "smoke")


def test_the_configured_corpora_are_planned(config):
    for scale, g in config["language"]["scales"].items():
        job = language_jobs(config, scale)[(CORPORA, "")]
        assert [c.name for c in job.corpora] == g["corpora"]
        assert corpus_files(job.to_dict()) == []
