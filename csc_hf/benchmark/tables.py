"""Examples as Arrow tables, built column-wise from the packed arrays (no per-row Python)."""

from __future__ import annotations

import datasets
import numpy as np
import pyarrow as pa

from ..corruption import EDIT_KINDS, ERROR_TYPES
from .plan import Examples

FEATURES = datasets.Features(
    {
        "id": datasets.Value("int32"),
        "source": datasets.Value("string"),
        "target": datasets.Value("string"),
        "error_positions": datasets.List(datasets.Value("int32")),
        "errors": datasets.List(
            {
                "position": datasets.Value("int32"),
                "wrong": datasets.Value("string"),
                "right": datasets.Value("string"),
                "type": datasets.ClassLabel(names=list(ERROR_TYPES)),
                "kind": datasets.ClassLabel(names=list(EDIT_KINDS)),
            }
        ),
        "detection_labels": datasets.List(datasets.Value("int8")),
    }
)
SCHEMA = FEATURES.arrow_schema


def _utf8_lengths(codes: np.ndarray) -> np.ndarray:
    return 1 + (codes >= 0x80) + (codes >= 0x800) + (codes >= 0x10000).astype(np.int64)


def string_array(codes: np.ndarray, offsets: np.ndarray) -> pa.Array:
    """An Arrow string array whose element ``i`` holds ``codes[offsets[i]:offsets[i + 1]]``."""
    data = codes.astype("<u4").tobytes().decode("utf-32-le").encode("utf-8")
    byte_ends = np.concatenate([[0], np.cumsum(_utf8_lengths(codes))])
    byte_offsets = byte_ends[offsets]
    if len(data) >= 2**31:
        raise ValueError(f"{len(data)} bytes of text in one Arrow array; build it in smaller batches")
    buffers = [None, pa.py_buffer(byte_offsets.astype(np.int32)), pa.py_buffer(data)]
    return pa.Array.from_buffers(pa.string(), len(offsets) - 1, buffers)


def examples_table(examples: Examples, lo: int = 0, hi: int | None = None) -> pa.Table:
    """Rows ``lo:hi`` of a split as an Arrow table with the schema of ``FEATURES``: each row's errors are its edits
    (:mod:`csc_hf.edits`) at positions of its source; ``detection_labels`` marks the source characters that are wrong
    (substituted or redundant)."""
    hi = len(examples.target) if hi is None else hi
    target, source, edits = examples.target, examples.source, examples.edits
    t_start, s_start = int(target.offsets[lo]), int(source.offsets[lo])
    tgt, src = target.codes[t_start : target.offsets[hi]], source.codes[s_start : source.offsets[hi]]
    t_offsets, s_offsets = target.offsets[lo : hi + 1] - t_start, source.offsets[lo : hi + 1] - s_start
    e_lo, e_hi = np.searchsorted(edits.sentence, [lo, hi])
    sentence, kind, position = edits.sentence[e_lo:e_hi], edits.kind[e_lo:e_hi], edits.position[e_lo:e_hi]
    wrong, right = edits.wrong[e_lo:e_hi], edits.right[e_lo:e_hi]
    list_offsets = pa.array(np.searchsorted(sentence, np.arange(lo, hi + 1)).astype(np.int32))
    positions = pa.array(position.astype(np.int32))
    errors = pa.StructArray.from_arrays(
        [
            positions,
            _chars(wrong),
            _chars(right),
            pa.array(edits.type[e_lo:e_hi].astype(np.int64)),
            pa.array(kind.astype(np.int64)),
        ],
        names=["position", "wrong", "right", "type", "kind"],
    )
    labels = np.zeros(len(src), dtype=np.int8)
    wrong_char = kind != EDIT_KINDS.index("missing")
    labels[s_offsets[sentence[wrong_char] - lo] + position[wrong_char]] = 1
    columns = {
        "id": pa.array(examples.ids[lo:hi].astype(np.int32)),
        "source": string_array(src, s_offsets),
        "target": string_array(tgt, t_offsets),
        "error_positions": pa.ListArray.from_arrays(list_offsets, positions),
        "errors": pa.ListArray.from_arrays(list_offsets, errors),
        "detection_labels": pa.ListArray.from_arrays(pa.array(s_offsets.astype(np.int32)), pa.array(labels)),
    }
    return pa.Table.from_pydict(columns).cast(SCHEMA)


def _chars(codes: np.ndarray) -> pa.Array:
    """One string per code point: the character, or "" for 0 (the side an edit lacks)."""
    present = codes != 0
    return string_array(codes[present], np.concatenate([[0], np.cumsum(present)]))
