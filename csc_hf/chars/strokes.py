"""Stroke orders of Chinese characters and edit distances between them.

A stroke sequence is a string of the digits 1-5 naming the five basic stroke
classes in writing order (1 heng 横, 2 shu 竖, 3 pie 撇, 4 dian 点/捺,
5 zhe 折).  The shipped table ``data/strokes.tsv`` covers 20,950 characters
(U+4E00..U+9FD5); see ``data/NOTICE`` for its sources and
:mod:`csc_hf.chars.make_stroke_table` to regenerate it.

Distances are Levenshtein distances.  :func:`stroke_distance` is a plain
dynamic programme for one pair; :func:`stroke_distances` and
:func:`stroke_distance_matrix` run a bit-parallel algorithm (Myers 1999, in
Hyyrö's formulation for global edit distance) vectorised with numpy over many
pairs at once, which is what bulk callers such as the confusion-set builder
should use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import NamedTuple

import numpy as np

__all__ = [
    "STROKE_NAMES",
    "stroke_distance",
    "stroke_distance_matrix",
    "stroke_distances",
    "stroke_sequence",
    "stroke_table",
]

STROKE_NAMES: tuple[str, ...] = ("heng", "shu", "pie", "dian", "zhe")
"""Names of the stroke codes "1".."5" (index = code - 1)."""

_WORD_BITS = 64  # longest pattern the bit-parallel kernel handles
_PAIRS_PER_CHUNK = 1 << 20


@lru_cache(maxsize=1)
def stroke_table() -> Mapping[str, str]:
    """Read-only mapping char -> stroke digits, loaded once from the shipped table."""
    text = resources.files("csc_hf.chars").joinpath("data/strokes.tsv").read_text(encoding="utf-8")
    return MappingProxyType(dict(line.split("\t") for line in text.splitlines()))


def stroke_sequence(ch: str) -> str | None:
    """Stroke order of ``ch`` as digits 1-5 ("不" -> "1324"); None when unknown."""
    return stroke_table().get(ch)


def stroke_distance(a: str, b: str) -> int:
    """Levenshtein distance between two strings (unit costs)."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


class _Encoded(NamedTuple):
    """Two string sets over a shared alphabet, ready for the bit-parallel kernel."""

    a: Sequence[str]
    b: Sequence[str]
    a_len: np.ndarray  # (len(a),) int64
    b_len: np.ndarray  # (len(b),) int64
    peq: np.ndarray  # flat (len(a) * width,) uint64: bit i set where a[r][i] == symbol
    width: int  # alphabet size + 1; the last symbol pads texts and matches nothing
    codes: np.ndarray  # flat (len(b) * max_len,) int64 symbol ids of b, padded
    max_len: int


def _code_points(strings: Sequence[str]) -> np.ndarray:
    return np.frombuffer("".join(strings).encode("utf-32-le"), dtype=np.uint32)


def _encode(a: Sequence[str], b: Sequence[str]) -> _Encoded:
    a_len = np.fromiter(map(len, a), dtype=np.int64, count=len(a))
    b_len = np.fromiter(map(len, b), dtype=np.int64, count=len(b))
    _, symbols = np.unique(np.concatenate([_code_points(a), _code_points(b)]), return_inverse=True)
    width = int(symbols.max(initial=-1)) + 2
    a_sym, b_sym = symbols[: a_len.sum()], symbols[a_len.sum() :]

    a_row = np.repeat(np.arange(len(a)), a_len)
    a_pos = np.arange(len(a_sym)) - np.repeat(np.cumsum(a_len) - a_len, a_len)
    fits = a_len[a_row] <= _WORD_BITS
    peq = np.zeros(len(a) * width, dtype=np.uint64)
    np.bitwise_or.at(
        peq,
        a_row[fits] * width + a_sym[fits],
        np.left_shift(np.uint64(1), a_pos[fits].astype(np.uint64)),
    )

    max_len = int(b_len.max(initial=0))
    b_row = np.repeat(np.arange(len(b)), b_len)
    b_pos = np.arange(len(b_sym)) - np.repeat(np.cumsum(b_len) - b_len, b_len)
    codes = np.full(len(b) * max_len, width - 1, dtype=np.int64)
    codes[b_row * max_len + b_pos] = b_sym
    return _Encoded(a, b, a_len, b_len, peq, width, codes, max_len)


def _pair_distances(enc: _Encoded, ia: np.ndarray, ib: np.ndarray) -> np.ndarray:
    """Levenshtein distance of enc.a[ia[k]] and enc.b[ib[k]] for every k (int32)."""
    out = np.empty(len(ia), dtype=np.int32)
    long = np.flatnonzero(enc.a_len[ia] > _WORD_BITS)
    out[long] = [stroke_distance(enc.a[ia[k]], enc.b[ib[k]]) for k in long]

    fast = np.flatnonzero(enc.a_len[ia] <= _WORD_BITS)
    order = fast[np.argsort(-enc.b_len[ib[fast]], kind="stable")]  # longest texts first
    m = enc.a_len[ia[order]]
    n = enc.b_len[ib[order]]
    peq_base = ia[order] * enc.width
    code_base = ib[order] * enc.max_len
    high = np.left_shift(np.uint64(1), np.maximum(m - 1, 0).astype(np.uint64))
    high[m == 0] = 0
    pv = np.full(len(order), np.iinfo(np.uint64).max, dtype=np.uint64)
    mv = np.zeros(len(order), dtype=np.uint64)
    score = m.copy()
    # Pairs still reading their text at step j form a prefix, since texts are sorted by length.
    active = np.searchsorted(-n, -np.arange(int(n.max(initial=0))), side="left")
    for j, k in enumerate(active):
        eq = enc.peq[peq_base[:k] + enc.codes[code_base[:k] + j]]
        pv_k, mv_k, hb = pv[:k], mv[:k], high[:k]
        xv = eq | mv_k
        xh = (((eq & pv_k) + pv_k) ^ pv_k) | eq
        ph = mv_k | ~(xh | pv_k)
        mh = pv_k & xh
        score[:k] += (ph & hb) != 0
        score[:k] -= (mh & hb) != 0
        ph = (ph << np.uint64(1)) | np.uint64(1)  # row 0 of the DP grows by one per step
        mh = mh << np.uint64(1)
        pv[:k] = mh | ~(xv | ph)
        mv[:k] = ph & xv
    out[order] = np.where(m == 0, n, score)
    return out


def stroke_distances(seq: str, candidates: Sequence[str]) -> np.ndarray:
    """Levenshtein distances from ``seq`` to each candidate, as an int32 array."""
    enc = _encode([seq], candidates)
    return _pair_distances(enc, np.zeros(len(candidates), dtype=np.int64), np.arange(len(candidates)))


def stroke_distance_matrix(
    rows: Sequence[str],
    cols: Sequence[str] | None = None,
    max_distance: int | None = None,
) -> np.ndarray:
    """All-pairs Levenshtein distances, shape (len(rows), len(cols)), int32.

    ``cols=None`` compares ``rows`` with themselves (each pair computed once).
    With ``max_distance`` the result is ``min(distance, max_distance + 1)`` and
    pairs whose lengths differ by more than ``max_distance`` are never computed
    (their distance is at least the length difference), which is much faster
    when only near neighbours matter.
    """
    if max_distance is not None and max_distance < 0:
        raise ValueError(f"max_distance must be >= 0, got {max_distance}")
    symmetric = cols is None
    cols = rows if cols is None else cols
    cap = None if max_distance is None else max_distance + 1
    out = np.full((len(rows), len(cols)), 0 if cap is None else cap, dtype=np.int32)
    enc = _encode(rows, cols)

    col_order = np.argsort(enc.b_len, kind="stable")
    sorted_len = enc.b_len[col_order]
    if cap is None:
        lo = np.zeros(len(rows), dtype=np.int64)
        hi = np.full(len(rows), len(cols), dtype=np.int64)
    else:
        lo = np.searchsorted(sorted_len, enc.a_len - max_distance, side="left")
        hi = np.searchsorted(sorted_len, enc.a_len + max_distance, side="right")
    counts = hi - lo
    ends = np.cumsum(counts)
    start = 0
    while start < len(rows):
        # Rows [start, stop) produce at most _PAIRS_PER_CHUNK pairs (or one row).
        budget = ends[start] - counts[start] + _PAIRS_PER_CHUNK
        stop = max(start + 1, int(np.searchsorted(ends, budget, side="right")))
        block = np.arange(start, stop)
        ia = np.repeat(block, counts[block])
        offsets = np.arange(len(ia)) - np.repeat(np.cumsum(counts[block]) - counts[block], counts[block])
        ib = col_order[np.repeat(lo[block], counts[block]) + offsets]
        if symmetric:
            keep = ib > ia
            ia, ib = ia[keep], ib[keep]
        dist = _pair_distances(enc, ia, ib)
        if cap is not None:
            np.minimum(dist, cap, out=dist)
        out[ia, ib] = dist
        if symmetric:
            out[ib, ia] = dist
        start = stop
    if symmetric:
        np.fill_diagonal(out, 0)
    return out
