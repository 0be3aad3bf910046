"""Complexity of a corpus from its bytes alone (Paper A, appendix B; docs/methods.md, "Appendix B
corpora and complexity").

- ``lzma_bits_per_byte``: 8 · |LZMA2(x)| / |x|, raw LZMA2 stream (no container header), preset 9
  extreme, dictionary larger than any corpus. A model-free upper bound on the entropy rate (up to
  the coder's overhead) that sees repetition at any distance: the headline.
- ``kgram_conditional_entropy``: the plug-in estimate of H(X_{k+1} | X_1..X_k) in bits per byte,
  Ĥ = Ĥ(k+1-grams) − Ĥ(k-gram contexts), both counted over the same n − k positions. Biased low
  (strongly so once the (k+1)-grams are not all seen many times, i.e. large k), and blind beyond
  k bytes of context.
- ``vocabulary_size``: the number of distinct bytes.

The measures' names (``MEASURES``, the corpora table's columns and what a headline may name) are
declared here; standard library only at import time (``attnrank.language.jobs`` imports them
while the workflow plans), numpy is imported where bytes are counted.
"""

from __future__ import annotations

import lzma
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

LZMA_BITS_PER_BYTE = "lzma_bits_per_byte"
KGRAM_ENTROPY_BITS = "kgram_entropy_bits"
MEASURES = (LZMA_BITS_PER_BYTE, KGRAM_ENTROPY_BITS)  # the measures a headline may name

_LZMA_FILTERS = [{"id": lzma.FILTER_LZMA2, "preset": 9 | lzma.PRESET_EXTREME}]


def _nonempty(data: bytes) -> None:
    if not data:
        raise ValueError("complexity of an empty corpus is undefined")


def lzma_bits_per_byte(data: bytes) -> float:
    """8 · len(raw LZMA2 stream of data) / len(data)."""
    _nonempty(data)
    packed = lzma.compress(data, format=lzma.FORMAT_RAW, filters=_LZMA_FILTERS)
    return 8.0 * len(packed) / len(data)


def _entropy_bits(rows: np.ndarray) -> float:
    """Plug-in entropy (bits) of the empirical distribution of the rows of ``rows`` (n, w) uint8."""
    import numpy as np

    if rows.shape[1] == 0:
        return 0.0
    keys = np.ascontiguousarray(rows).view(np.dtype((np.void, rows.shape[1]))).ravel()
    _, counts = np.unique(keys, return_counts=True)
    p = counts / counts.sum()
    return float(-(p * np.log2(p)).sum())


def kgram_conditional_entropy(data: bytes, k: int) -> float:
    """Plug-in H(X_{k+1} | X_1..X_k) in bits per byte over the n − k windows of k + 1 bytes:
    Ĥ(k+1-grams) − Ĥ(their first k bytes). k = 0 is the unigram entropy. Needs n > k."""
    if k < 0:
        raise ValueError(f"kgram_k must be ≥ 0, got {k}")
    if len(data) <= k:
        raise ValueError(f"a corpus of {len(data)} bytes has no {k + 1}-grams")
    import numpy as np

    x = np.frombuffer(data, dtype=np.uint8)
    windows = np.lib.stride_tricks.sliding_window_view(x, k + 1)  # (n − k, k + 1)
    h = _entropy_bits(windows) - _entropy_bits(windows[:, :k])
    return max(h, 0.0)  # exact zero, not −1e-16, for a deterministic continuation


def vocabulary_size(data: bytes) -> int:
    """The number of distinct byte values in data."""
    import numpy as np

    return int(np.unique(np.frombuffer(data, dtype=np.uint8)).size)


def corpus_complexity(data: bytes, k: int) -> dict[str, Any]:
    """Every measure of one corpus: n_bytes, lzma_bits_per_byte, kgram_entropy_bits (at k),
    kgram_k, vocab_size."""
    _nonempty(data)
    return {"n_bytes": len(data), LZMA_BITS_PER_BYTE: lzma_bits_per_byte(data),
            KGRAM_ENTROPY_BITS: kgram_conditional_entropy(data, k), "kgram_k": int(k),
            "vocab_size": vocabulary_size(data)}
