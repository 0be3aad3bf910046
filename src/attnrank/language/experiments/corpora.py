"""The corpora table of Paper A's appendix B: one row per corpus of the scale, with its source,
size, sha256 and complexity measures (``attnrank.language.complexity``), and which measure is the headline.

Columns: corpus, source (builtin | file), n_bytes, sha256, lzma_bits_per_byte, kgram_entropy_bits,
kgram_k, vocab_size, headline_measure (its name), complexity (the headline's value).
"""

from __future__ import annotations

import hashlib
from typing import Any

import pandas as pd

from attnrank.language.complexity import KGRAM_ENTROPY_BITS, LZMA_BITS_PER_BYTE, corpus_complexity
from attnrank.language.corpora import load_source
from attnrank.language.jobs import LanguageCorporaJob

COLUMNS = ("corpus", "source", "n_bytes", "sha256", LZMA_BITS_PER_BYTE, KGRAM_ENTROPY_BITS,
           "kgram_k", "vocab_size", "headline_measure", "complexity")


def corpora_table(job: LanguageCorporaJob) -> pd.DataFrame:
    """The table of ``job``, rows in the job's order of its corpora."""
    rows = []
    for c in job.corpora:
        data = load_source(c, job.max_bytes)
        m = corpus_complexity(data, job.kgram_k)
        rows.append({"corpus": c.name, "source": c.source, "sha256": hashlib.sha256(data).hexdigest(),
                     **m, "headline_measure": job.headline, "complexity": m[job.headline]})
    return pd.DataFrame(rows, columns=list(COLUMNS))


def step(job: LanguageCorporaJob) -> dict[str, Any]:
    """The language_corpora step: one row per corpus, as ``out`` and as ``csv``."""
    table = corpora_table(job)
    return {"out": table, "csv": table}
