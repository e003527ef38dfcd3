"""The paper's substitution, vectorised: each key character of a confusion set C is replaced, independently with
probability ``P_e``, by a candidate drawn uniformly from ``C[x]``; and errors that change a sentence's length
(:func:`drop`: missing characters, :func:`insert`: redundant ones, :func:`mixed`: all three kinds at stated shares).

Sentences travel as one code-point array plus offsets (:class:`PackedText`); a confusion set travels as sorted arrays
(:class:`CandidateTable`). Random numbers come from a counter-based generator (SplitMix64 over the global character
position, the seed and a stream id), so a character's fate depends only on (seed, stream, position): the output is
the same for any batch size or process count, and a higher ``P_e`` on the same stream adds errors to those of a
lower one without moving them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields

import numpy as np

from .edits import EDIT_KINDS, MISSING, REDUNDANT, SUBSTITUTION, alignment

PAIR_TYPES = ("phonetic", "graphic", "both")  # the types of a confusion pair
ERROR_TYPES = (*PAIR_TYPES, "other")  # the types of an observed error (judged by character knowledge)
NO_ERROR = -1
FUNCTION_CHARS = "的了是在和也就都地得着"
"""Frequent function characters: what a redundant character of the ``function`` source is drawn from."""
REDUNDANT_SOURCES = {"repeat": 1 / 3, "function": 1 / 3, "confusion": 1 / 3}
"""Where a redundant character comes from, and each source's share: ``repeat`` doubles the character before it
(们们), ``function`` adds one of :data:`FUNCTION_CHARS` after it, ``confusion`` adds one of its confusion-set values
after it (高兴 -> 高心兴; a character that is no key of the set is doubled instead)."""
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


@dataclass(frozen=True)
class Edits:
    """The edits of many sentences as parallel arrays, by sentence and then in source order (see
    :mod:`csc_hf.edits`): ``sentence``, ``kind`` (index in ``EDIT_KINDS``), ``position`` (in the source sentence),
    ``wrong`` and ``right`` (code points, 0 where the kind has none) and ``type`` (index in ``ERROR_TYPES``)."""

    sentence: np.ndarray
    kind: np.ndarray
    position: np.ndarray
    wrong: np.ndarray
    right: np.ndarray
    type: np.ndarray

    def __len__(self) -> int:
        return len(self.sentence)

    def take(self, mask: np.ndarray) -> Edits:
        return Edits(*(getattr(self, f.name)[mask] for f in fields(self)))


def substitution_edits(target: PackedText, corruption: Corruption) -> Edits:
    """The edits of a same-length corruption: a substitution wherever source and target differ."""
    wrong_at = np.flatnonzero(corruption.source.codes != target.codes)
    sentence = np.searchsorted(target.offsets, wrong_at, side="right") - 1
    kind = np.full(len(wrong_at), EDIT_KINDS.index(SUBSTITUTION), dtype=np.int8)
    return Edits(
        sentence,
        kind,
        wrong_at - target.offsets[sentence],
        corruption.source.codes[wrong_at],
        target.codes[wrong_at],
        corruption.error_types[wrong_at],
    )


@dataclass(frozen=True)
class EditCorruption:
    """The result of a corruption that may change lengths: the sources, and the edits that correct each of them into
    its target (its errors), as the minimum-edit alignment of :mod:`csc_hf.edits` reads them."""

    source: PackedText
    edits: Edits


def drop(
    target: PackedText, error_prob: float, seed: int, stream: int = 0, eligible: np.ndarray | None = None
) -> EditCorruption:
    """Missing characters: each ``eligible`` character (default: all) is dropped independently with ``error_prob``."""
    return mixed(target, None, error_prob, seed, stream, {MISSING: 1.0}, eligible)


def insert(
    target: PackedText,
    table: CandidateTable | None,
    error_prob: float,
    seed: int,
    stream: int = 0,
    eligible: np.ndarray | None = None,
) -> EditCorruption:
    """Redundant characters: after each ``eligible`` character, independently with ``error_prob``, one character from
    a source of :data:`REDUNDANT_SOURCES` (drawn by its share) is inserted."""
    return mixed(target, table, error_prob, seed, stream, {REDUNDANT: 1.0}, eligible)


def mixed(
    target: PackedText,
    table: CandidateTable | None,
    error_prob: float,
    seed: int,
    stream: int,
    shares: dict[str, float],
    eligible: np.ndarray | None = None,
) -> EditCorruption:
    """Errors of every kind: each character gets at most one error, with probability ``error_prob``, whose kind is
    drawn by ``shares`` (of :data:`EDIT_KINDS`, summing to 1). A substitution replaces a key of ``table`` by a
    uniform candidate (as :func:`substitute` does), a missing character drops an ``eligible`` one, a redundant one is
    inserted after an ``eligible`` one (see :func:`insert`); a character that cannot take the drawn kind keeps no
    error. A sentence is never emptied (its first dropped character is kept).

    Each character's fate depends only on (seed, stream, its position), as in :func:`substitute`. The edits are
    those of :func:`csc_hf.edits.alignment` between each changed source and its target (where the kinds meet, the
    alignment's reading can differ from how the error was made: 高兴 with 高 dropped and 兴 replaced by 高 reads as one
    missing 兴), with their type: a substitution's pair type in ``table`` (``other`` if absent), a redundant
    character's pair type with the character before it (or after it) if they are a pair of ``table``, else ``other``;
    a missing character's ``other``."""
    if not 0.0 <= error_prob <= 1.0:
        raise ValueError(f"error_prob (P_e) = {error_prob} is outside [0, 1]")
    if set(shares) - set(EDIT_KINDS) or any(v < 0 for v in shares.values()) or abs(sum(shares.values()) - 1) > 1e-9:
        raise ValueError(f"shares={shares}: give non-negative shares of {', '.join(EDIT_KINDS)} that sum to 1")
    codes, n = target.codes, len(target.codes)
    positions = np.arange(n, dtype=np.int64)
    eligible = np.ones(n, dtype=bool) if eligible is None else np.asarray(eligible, dtype=bool)
    key_idx = table.key_index(codes) if table is not None and len(table.keys) else np.full(n, -1, dtype=np.int32)
    bits = random_bits(seed, stream, positions, 0)  # draw 0: which error, if any; 1 and 2: which character
    hit, low = {}, 0.0
    cumulative = np.cumsum([shares.get(kind, 0.0) for kind in EDIT_KINDS])
    cumulative[cumulative >= cumulative[-1]] = 1.0  # the last kind ends at P_e exactly
    for kind, share in zip(EDIT_KINDS, cumulative):
        high = error_prob * float(share)
        hit[kind] = (bits >= _cut(low)) & ((bits < _cut(high)) | (high >= 1.0))
        low = high
    hit[SUBSTITUTION] &= key_idx >= 0
    hit[MISSING] &= eligible
    hit[REDUNDANT] &= eligible
    new = codes.copy()
    pos = np.flatnonzero(hit[SUBSTITUTION])  # as in `substitute`: the same draws give the same candidates
    if len(pos):
        keys = key_idx[pos]
        choice = table.starts[keys] + (uniforms(seed, stream, pos, 1) * table.counts[keys]).astype(np.int64)
        new[pos] = table.candidates[choice]
    added = _redundant(codes, key_idx, np.flatnonzero(hit[REDUNDANT]), table, seed, stream)
    counts = np.ones(n, dtype=np.int64)
    counts[hit[MISSING]] = 0
    counts[hit[REDUNDANT]] = 2
    sentence_of = np.repeat(np.arange(len(target)), target.lengths)
    for i in np.flatnonzero(np.bincount(sentence_of, counts, minlength=len(target)) == 0):
        counts[target.offsets[i]] = 1  # a sentence of dropped characters only (P_e near 1) keeps its first
    source_codes = np.repeat(new, counts)
    ends = np.cumsum(counts)
    source_codes[ends[hit[REDUNDANT]] - 1] = added
    source = PackedText(source_codes, np.concatenate([[0], ends])[target.offsets])
    changed = np.flatnonzero(np.bincount(sentence_of[(counts != 1) | (new != codes)], minlength=len(target)))
    return EditCorruption(source, _aligned_edits(source, target, changed, table))


def _cut(prob: float) -> np.uint64:
    """``prob`` as a threshold on 64 random bits."""
    return np.uint64(min(int(prob * 2.0**64), 2**64 - 1))


def _redundant(
    codes: np.ndarray, key_idx: np.ndarray, pos: np.ndarray, table: CandidateTable | None, seed: int, stream: int
) -> np.ndarray:
    """The character inserted after each position of ``pos``, by :data:`REDUNDANT_SOURCES`."""
    names = list(REDUNDANT_SOURCES)
    bounds = np.cumsum([REDUNDANT_SOURCES[name] for name in names])
    source = np.minimum(np.searchsorted(bounds, uniforms(seed, stream, pos, 1), side="right"), len(names) - 1)
    u = uniforms(seed, stream, pos, 2)
    added = codes[pos].copy()  # repeat
    function = source == names.index("function")
    functions = np.array([ord(c) for c in FUNCTION_CHARS], dtype=np.uint32)
    added[function] = functions[(u[function] * len(functions)).astype(np.int64)]
    confusion = (source == names.index("confusion")) & (key_idx[pos] >= 0)
    if confusion.any():
        keys = key_idx[pos[confusion]]
        added[confusion] = table.candidates[table.starts[keys] + (u[confusion] * table.counts[keys]).astype(np.int64)]
    return added


def _aligned_edits(source: PackedText, target: PackedText, changed: np.ndarray, table: CandidateTable | None) -> Edits:
    """The alignment's edits of the ``changed`` sentences, with their types."""
    sources, targets = unpack(source.take(changed)), unpack(target.take(changed))
    rows = [
        (i, EDIT_KINDS.index(e.kind), e.position, ord(e.wrong or "\0"), ord(e.right or "\0"))
        for i, s, t in zip(changed.tolist(), sources, targets)
        for e in alignment(s, t)
    ]
    sentence, kind, position, wrong, right = (
        (np.array(column, dtype=np.int64).reshape(-1) for column in zip(*rows))
        if rows
        else (np.zeros(0, dtype=np.int64),) * 5
    )
    types = np.full(len(rows), ERROR_TYPES.index("other"), dtype=np.int8)
    if table is not None and len(table.keys) and len(rows):
        sub = kind == EDIT_KINDS.index(SUBSTITUTION)
        found = table.pair_index(table.key_index(right[sub].astype(np.uint32)), wrong[sub])
        types[np.flatnonzero(sub)[found >= 0]] = table.types[found[found >= 0]]
        red = np.flatnonzero(kind == EDIT_KINDS.index(REDUNDANT))
        at = source.offsets[sentence[red]] + position[red]
        lengths = source.lengths[sentence[red]]
        for neighbour, inside in ((at - 1, position[red] > 0), (at + 1, position[red] < lengths - 1)):
            keys = np.where(inside, table.key_index(source.codes[np.clip(neighbour, 0, len(source.codes) - 1)]), -1)
            found = table.pair_index(keys, wrong[red])
            unset = types[red] == ERROR_TYPES.index("other")
            types[red[(found >= 0) & unset]] = table.types[found[(found >= 0) & unset]]
    return Edits(
        sentence,
        kind.astype(np.int8),
        position.astype(np.int32),
        wrong.astype(np.uint32),
        right.astype(np.uint32),
        types,
    )
