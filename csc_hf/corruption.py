"""The paper's substitution, vectorised: each key character of a confusion set C is replaced, independently with
probability ``P_e``, by a candidate drawn uniformly from ``C[x]``.

Sentences travel as one code-point array plus offsets (:class:`PackedText`); a confusion set travels as sorted arrays
(:class:`CandidateTable`). Random numbers come from a counter-based generator (SplitMix64 over the global character
position, the seed and a stream id), so a character's fate depends only on (seed, stream, position): the output is
the same for any batch size or process count, and a higher ``P_e`` on the same stream adds errors to those of a
lower one without moving them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

PAIR_TYPES = ("phonetic", "graphic", "both")  # the types of a confusion pair
ERROR_TYPES = (*PAIR_TYPES, "other")  # the types of an observed error (judged by character knowledge)
NO_ERROR = -1
_BMP = 0x10000
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@dataclass(frozen=True)
class PackedText:
    """Sentences as one uint32 code-point array; sentence ``i`` is ``codes[offsets[i]:offsets[i + 1]]``."""

    codes: np.ndarray
    offsets: np.ndarray

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def take(self, index: np.ndarray) -> PackedText:
        """The sentences at ``index``, in that order."""
        lengths = self.lengths[index]
        offsets = np.zeros(len(index) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return PackedText(self.codes[segment_positions(self.offsets[index], lengths)], offsets)


def pack(sentences: Sequence[str]) -> PackedText:
    """Pack strings into a :class:`PackedText`."""
    codes = np.frombuffer("".join(sentences).encode("utf-32-le"), dtype="<u4").astype(np.uint32)
    offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in sentences], out=offsets[1:])
    return PackedText(codes, offsets)


def unpack(packed: PackedText) -> list[str]:
    """The strings of a :class:`PackedText`."""
    text = packed.codes.astype("<u4").tobytes().decode("utf-32-le")
    bounds = packed.offsets.tolist()
    return [text[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def segment_positions(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(start, start + length)`` for each segment, without a Python loop."""
    total = int(lengths.sum())
    ends = np.cumsum(lengths)
    shift = np.repeat(np.asarray(starts, dtype=np.int64) - (ends - lengths), lengths)
    return np.arange(total, dtype=np.int64) + shift


@dataclass(frozen=True)
class CandidateTable:
    """A confusion set as arrays: key ``keys[i]`` has candidates ``candidates[starts[i]:starts[i + 1]]``.

    Keys and each key's candidates are sorted by code point; ``types`` holds each pair's index in ``PAIR_TYPES``.
    """

    keys: np.ndarray
    starts: np.ndarray
    candidates: np.ndarray
    types: np.ndarray

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[str, str, str]]) -> CandidateTable:
        """Build from ``(key, candidate, type)`` triples of single characters (duplicates are an error)."""
        rows = sorted((ord(k), ord(c), PAIR_TYPES.index(t)) for k, c, t in pairs)
        if any(a[:2] == b[:2] for a, b in zip(rows, rows[1:])):
            raise ValueError("a confusion pair occurs twice")
        arr = np.array(rows, dtype=np.int64).reshape(-1, 3)
        keys, counts = np.unique(arr[:, 0], return_counts=True)
        if keys.size and keys.max() >= _BMP:
            raise ValueError(f"confusion key U+{int(keys.max()):X} is outside the Basic Multilingual Plane")
        starts = np.zeros(len(keys) + 1, dtype=np.int64)
        np.cumsum(counts, out=starts[1:])
        return cls(keys.astype(np.uint32), starts, arr[:, 1].astype(np.uint32), arr[:, 2].astype(np.int8))

    @property
    def counts(self) -> np.ndarray:
        return np.diff(self.starts)

    def key_index(self, codes: np.ndarray) -> np.ndarray:
        """Index of each code point among the keys, or -1 for a character that is no key."""
        lookup = np.full(_BMP, -1, dtype=np.int32)
        lookup[self.keys] = np.arange(len(self.keys), dtype=np.int32)
        return lookup[np.minimum(codes, _BMP - 1)]  # U+FFFF is never a key

    def pair_index(self, key_idx: np.ndarray, candidates: np.ndarray) -> np.ndarray:
        """Global index of each pair (key ``key_idx``, ``candidate``) in ``candidates``, or -1 where absent."""
        pair_codes = np.repeat(np.arange(len(self.keys), dtype=np.int64), self.counts) << 21 | self.candidates
        query = key_idx.astype(np.int64) << 21 | candidates.astype(np.int64)
        found = np.minimum(np.searchsorted(pair_codes, query), len(pair_codes) - 1)
        return np.where((pair_codes[found] == query) & (key_idx >= 0), found, -1)


def random_bits(seed: int, stream: int, positions: np.ndarray, draw: int) -> np.ndarray:
    """64 random bits per position that depend only on (seed, stream, position, draw): SplitMix64 as a counter RNG."""
    if not 0 <= stream < 1 << 16 or not 0 <= draw < 4:
        raise ValueError(f"stream={stream} must be in [0, 65536) and draw={draw} in [0, 4)")
    base = np.uint64((seed * 0xD1B54A32D192ED03 + (stream << 2 | draw) * 0xA24BAED4963EE407) % (1 << 64))
    z = positions.astype(np.uint64)
    with np.errstate(over="ignore"):  # in place: this runs over every key character of the corpus
        z *= _GOLDEN
        z += base
        z ^= z >> np.uint64(30)
        z *= np.uint64(0xBF58476D1CE4E5B9)
        z ^= z >> np.uint64(27)
        z *= np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return z


def uniforms(seed: int, stream: int, positions: np.ndarray, draw: int) -> np.ndarray:
    """Uniform floats in [0, 1) from :func:`random_bits`."""
    return (random_bits(seed, stream, positions, draw) >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


def below(seed: int, stream: int, positions: np.ndarray, draw: int, prob: float) -> np.ndarray:
    """``uniforms(...) < prob``, compared on the integers (no float array is made)."""
    if prob >= 1.0:
        return np.ones(len(positions), dtype=bool)
    return random_bits(seed, stream, positions, draw) < np.uint64(int(prob * 2.0**64))


@dataclass(frozen=True)
class Corruption:
    """The result of a substitution: the corrupted code points and each position's pair type (``NO_ERROR`` if kept)."""

    source: PackedText
    error_types: np.ndarray

    @property
    def error_mask(self) -> np.ndarray:
        return self.error_types != NO_ERROR


def substitute(
    target: PackedText, table: CandidateTable, error_prob: float, seed: int, stream: int = 0, chunk: int = 1 << 24
) -> Corruption:
    """Replace each key character independently with probability ``error_prob`` by a uniform candidate."""
    if not 0.0 <= error_prob <= 1.0:
        raise ValueError(f"error_prob (P_e) = {error_prob} is outside [0, 1]")
    codes = target.codes.copy()
    types = np.full(len(codes), NO_ERROR, dtype=np.int8)
    for lo in range(0, len(codes), chunk):
        key_idx = table.key_index(codes[lo : lo + chunk])
        pos = np.flatnonzero(key_idx >= 0)
        pos += lo
        hit = below(seed, stream, pos, 0, error_prob)
        pos, key_idx = pos[hit], key_idx[pos[hit] - lo]
        choice = table.starts[key_idx] + (uniforms(seed, stream, pos, 1) * table.counts[key_idx]).astype(np.int64)
        codes[pos] = table.candidates[choice]
        types[pos] = table.types[choice]
    return Corruption(PackedText(codes, target.offsets), types)


def resubstitute(
    target: PackedText, source: PackedText, table: CandidateTable, seed: int, stream: int = 0
) -> tuple[Corruption, np.ndarray]:
    """Replace every wrong character ``v_ij`` by another candidate ``v_ik`` of the same correct character ``k_i``.

    Returns the new corruption and a mask of the sentences in which every error had another candidate in ``table``
    (the others keep errors that were not replaced and should be left out).
    """
    wrong = np.flatnonzero(source.codes != target.codes)
    key_idx = table.key_index(target.codes[wrong])
    current = table.pair_index(key_idx, source.codes[wrong])
    usable = (current >= 0) & (np.where(key_idx >= 0, table.counts[np.maximum(key_idx, 0)], 0) >= 2)
    sentence = np.searchsorted(target.offsets, wrong, side="right") - 1
    ok = np.ones(len(target), dtype=bool)
    ok[sentence[~usable]] = False
    wrong, key_idx, current = wrong[usable], key_idx[usable], current[usable]
    n_others = table.counts[key_idx] - 1
    pick = (uniforms(seed, stream, wrong, 2) * n_others).astype(np.int64) + table.starts[key_idx]
    pick += pick >= current  # skip the wrong character already there
    codes = target.codes.copy()
    types = np.full(len(codes), NO_ERROR, dtype=np.int8)
    codes[wrong] = table.candidates[pick]
    types[wrong] = table.types[pick]
    return Corruption(PackedText(codes, target.offsets), types), ok


def pair_counts(target: PackedText, corruption: Corruption) -> dict[tuple[str, str], int]:
    """How often each misspelling pair (right, wrong) occurs in a corruption."""
    pos = np.flatnonzero(corruption.error_mask)
    pairs = target.codes[pos].astype(np.int64) << 21 | corruption.source.codes[pos]
    values, counts = np.unique(pairs, return_counts=True)
    return {(chr(v >> 21), chr(v & 0x1FFFFF)): int(c) for v, c in zip(values.tolist(), counts.tolist())}
