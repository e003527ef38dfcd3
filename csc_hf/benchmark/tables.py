"""Examples as Arrow tables, built column-wise from the packed arrays (no per-row Python)."""

from __future__ import annotations

import datasets
import numpy as np
import pyarrow as pa

from ..corruption import ERROR_TYPES
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
    """Rows ``lo:hi`` of a split as an Arrow table with the schema of ``FEATURES``."""
    hi = len(examples.target) if hi is None else hi
    target = examples.target
    a, b = int(target.offsets[lo]), int(target.offsets[hi])
    offsets = target.offsets[lo : hi + 1] - a
    tgt, src = target.codes[a:b], examples.corruption.source.codes[a:b]
    types = examples.corruption.error_types[a:b]
    wrong_at = np.flatnonzero(tgt != src)
    sentence = np.searchsorted(offsets, wrong_at, side="right") - 1
    list_offsets = np.searchsorted(wrong_at, offsets).astype(np.int32)
    position = pa.array((wrong_at - offsets[sentence]).astype(np.int32))
    single = np.arange(len(wrong_at) + 1, dtype=np.int64)
    errors = pa.StructArray.from_arrays(
        [
            position,
            string_array(src[wrong_at], single),
            string_array(tgt[wrong_at], single),
            pa.array(types[wrong_at].astype(np.int64)),
        ],
        names=["position", "wrong", "right", "type"],
    )
    columns = {
        "id": pa.array(examples.ids[lo:hi].astype(np.int32)),
        "source": string_array(src, offsets),
        "target": string_array(tgt, offsets),
        "error_positions": pa.ListArray.from_arrays(pa.array(list_offsets), position),
        "errors": pa.ListArray.from_arrays(pa.array(list_offsets), errors),
        "detection_labels": pa.ListArray.from_arrays(
            pa.array(offsets.astype(np.int32)), pa.array((tgt != src).astype(np.int8))
        ),
    }
    return pa.Table.from_pydict(columns).cast(SCHEMA)
