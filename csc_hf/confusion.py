"""The confusion set ``S = S_p ∪ S_g``: typed misspelling pairs, how to build them from character knowledge, the
common file layouts, and the paper's division into ``S_unseen^k``, ``S_unseen^v``, ``S_train`` and ``S_seen``.

A pair ``(key, candidate)`` says that the correct character ``key`` is easily misspelt as ``candidate``; its type is
``phonetic``, ``graphic`` or ``both``.
"""

from __future__ import annotations

import importlib.metadata
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from .chars.glyphs import default_font_record, glyph_features, glyph_similarity, render_glyphs
from .chars.pinyin import char_readings, is_han, sentence_pinyin, similar_syllables
from .chars.strokes import stroke_distance, stroke_distances, stroke_sequence
from .corruption import PAIR_TYPES, CandidateTable
from .files import read_text, write_atomic
from .logging import get_logger

logger = get_logger(__name__)


class ConfusionSet(Mapping[str, Mapping[str, str]]):
    """An immutable mapping ``key -> {candidate: type}``; iteration and every export are sorted by code point."""

    def __init__(self, pairs: Mapping[str, Mapping[str, str]] | Iterable[tuple[str, str, str]] = ()):
        table: dict[str, dict[str, str]] = defaultdict(dict)
        items = pairs.items() if isinstance(pairs, Mapping) else None
        triples = ((k, c, t) for k, cands in items for c, t in cands.items()) if items is not None else pairs
        for key, cand, kind in triples:
            if kind not in PAIR_TYPES:
                raise ValueError(f"pair ({key}, {cand}): type {kind!r} is not one of {PAIR_TYPES}")
            if len(key) != 1 or len(cand) != 1 or key == cand:
                raise ValueError(f"pair ({key!r}, {cand!r}): keys and candidates are distinct single characters")
            old = table[key].get(cand)
            table[key][cand] = kind if old in (None, kind) else "both"
        self._table = {k: dict(sorted(table[k].items())) for k in sorted(table) if table[k]}

    def __getitem__(self, key: str) -> Mapping[str, str]:
        return self._table[key]

    def __iter__(self):
        return iter(self._table)

    def __len__(self) -> int:
        return len(self._table)

    def __repr__(self) -> str:
        return f"ConfusionSet(keys={len(self)}, pairs={self.n_pairs})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ConfusionSet) and self._table == other._table

    def __hash__(self) -> int:
        return hash(self.fingerprint)

    @cached_property
    def n_pairs(self) -> int:
        return sum(map(len, self._table.values()))

    def pairs(self) -> list[tuple[str, str, str]]:
        """Every ``(key, candidate, type)`` triple, sorted."""
        return [(k, c, t) for k, cands in self._table.items() for c, t in cands.items()]

    @cached_property
    def table(self) -> CandidateTable:
        """The arrays the vectorised substitution works on."""
        return CandidateTable.from_pairs(self.pairs())

    @cached_property
    def fingerprint(self) -> str:
        import hashlib

        return hashlib.sha256(self.to_json().encode()).hexdigest()[:16]

    def restrict(self, types: Sequence[str]) -> ConfusionSet:
        """The pairs whose type is in ``types`` (``both`` counts as phonetic and as graphic)."""
        wanted = set(types) | ({"both"} if {"phonetic", "graphic"} & set(types) else set())
        return ConfusionSet((k, c, t) for k, c, t in self.pairs() if t in wanted)

    def only_keys(self, keys: Iterable[str]) -> ConfusionSet:
        keep = set(keys)
        return ConfusionSet((k, c, t) for k, c, t in self.pairs() if k in keep)

    def minus(self, other: ConfusionSet) -> ConfusionSet:
        """The pairs of ``self`` that are not pairs of ``other``."""
        return ConfusionSet((k, c, t) for k, c, t in self.pairs() if c not in other.get(k, {}))

    def union(self, other: ConfusionSet) -> ConfusionSet:
        return ConfusionSet(self.pairs() + other.pairs())

    def stats(self) -> dict[str, float]:
        """Table-4-style statistics: keys, pairs, candidates per key, and the share of each pair type."""
        types = Counter(t for _, _, t in self.pairs())
        n = self.n_pairs or 1
        return {
            "keys": len(self),
            "pairs": self.n_pairs,
            "candidates_per_key": round(self.n_pairs / max(len(self), 1), 2),
            **{f"{t}_share": round(types[t] / n, 4) for t in PAIR_TYPES},
        }

    # ---- files -------------------------------------------------------------------------------------------------

    def to_json(self) -> str:
        return json.dumps(self._table, ensure_ascii=False, indent=0, sort_keys=True)

    def save(self, path: str | Path, format: str = "json") -> None:
        """Write the set in one of ``FORMATS`` (the text layouts hold the part of the set they can express)."""
        text = self.to_json() + "\n" if format == "json" else _write_layout(self, format)
        write_atomic(path, text, make_parents=True)

    @classmethod
    def load(cls, path: str | Path, format: str | None = None) -> ConfusionSet:
        """Read a set in one of ``FORMATS``; ``format=None`` guesses from the name and first line."""
        path = Path(path)
        text = read_text(path, "confusion set file")
        format = format or _guess_format(path, text)
        if format not in FORMATS:
            raise ValueError(f"{path}: unknown confusion set format {format!r}; use one of {FORMATS}")
        pairs = _read_json(path, text) if format == "json" else _read_layout(path, text, format)
        try:
            return cls(_han_candidates(path, pairs))
        except ValueError as err:
            raise ValueError(f"{path}: {err}") from None


# Each text layout: how a line splits into fields, and the pair type of each field after the key.
_LAYOUTS: dict[str, tuple[str, tuple[str, ...], bool]] = {
    # name: (separator, type of each candidate field (the last one repeats), has a header line)
    "sighan13-pronunciation": ("\t", ("phonetic", "phonetic", "phonetic", "phonetic", "graphic"), True),
    "sighan13-shape": (",", ("graphic",), False),
    "pycorrector-pinyin": ("\t", ("phonetic",), False),
    "pycorrector-stroke": ("\t", ("graphic",), False),
}
FORMATS = ("json", *_LAYOUTS)  # the formats a set reads and writes: JSON and the text layouts


def _guess_format(path: Path, text: str) -> str:
    name = path.name.lower()
    if name.endswith(".json"):
        return "json"
    if "pronunciation" in name:
        return "sighan13-pronunciation"
    if "shape" in name:
        return "sighan13-shape"
    if "pinyin" in name:
        return "pycorrector-pinyin"
    if "stroke" in name:
        return "pycorrector-stroke"
    raise ValueError(f"{path}: cannot tell the confusion set format from the name; pass format= one of {FORMATS}")


def _read_json(path: Path, text: str) -> list[tuple[str, str, str]]:
    try:
        table = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}, line {err.lineno}: invalid JSON ({err.msg})") from None
    if not isinstance(table, dict) or not all(isinstance(v, dict) for v in table.values()):
        raise ValueError(f"{path}: expected a JSON object {{key: {{candidate: type}}}}")
    for key in table:
        if len(key) != 1 or not is_han(key):
            raise ValueError(f"{path}: key {key!r} is not a Chinese character (every key of S is one)")
    return [(key, cand, kind) for key, cands in table.items() for cand, kind in cands.items()]


def _han_candidates(path: Path, pairs: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """The pairs whose candidate is a Chinese character, as in every layout; how many were dropped is logged."""
    kept = [(k, c, t) for k, c, t in pairs if len(c) != 1 or is_han(c)]
    if len(kept) < len(pairs):
        dropped = sorted({c for _, c, _ in pairs if len(c) == 1 and not is_han(c)})
        logger.warning(
            "%s: dropped %d candidates that are not Chinese characters: %s",
            path,
            len(pairs) - len(kept),
            " ".join(map(repr, dropped[:10])) + (" ..." if len(dropped) > 10 else ""),
        )
        if not kept:
            raise ValueError(f"{path}: no candidate is a Chinese character")
    return kept


def _read_layout(path: Path, text: str, format: str) -> list[tuple[str, str, str]]:
    sep, types, header = _LAYOUTS[format]
    pairs, skipped = [], []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or (header and number == 1):
            continue
        fields = line.split(sep)  # a key whose candidate fields are all empty ("日\t\t\t") has no pairs
        key = fields[0].strip()
        if len(fields) >= 2 and (not key or (len(key) == 1 and ord(key) > 0xFFFF)):
            skipped.append(number)  # no key, or a rare ideograph (CJK extension B on): substitution keys are BMP
            continue
        if len(key) != 1 or not is_han(key) or len(fields) < 2:
            raise ValueError(
                f"{path}, line {number}: expected a character, {sep!r}, then candidates; got {stripped[:40]!r}"
            )
        for i, field in enumerate(fields[1:]):
            kind = types[min(i, len(types) - 1)]
            pairs.extend((key, c, kind) for c in field.strip() if c != key and not c.isspace())
    if skipped:
        logger.warning(
            "%s: dropped %d rows without a key or with a key beyond the Basic Multilingual Plane (lines %s)",
            path,
            len(skipped),
            ", ".join(map(str, skipped[:10])) + (" ..." if len(skipped) > 10 else ""),
        )
    if not any(is_han(c) for _, c, _ in pairs):
        raise ValueError(f"{path}: no confusion pair found in the {format} layout")
    return pairs


def _toneless(reading: str) -> str:
    return reading.rstrip("012345")


def _write_layout(cs: ConfusionSet, format: str) -> str:
    if format not in _LAYOUTS:
        raise ValueError(f"unknown confusion set format {format!r}; use one of {FORMATS}")
    sep, types, header = _LAYOUTS[format]
    lines = ["字\t同音同調\t同音異調\t近音同調\t近音異調\t同部首同筆畫數"] if header else []
    for key, cands in cs.items():
        if types == ("graphic",):
            fields = ["".join(c for c, t in cands.items() if t != "phonetic")]
        else:
            phonetic = [c for c, t in cands.items() if t != "graphic"]
            graphic = "".join(c for c, t in cands.items() if t != "phonetic")
            fields = _phonetic_fields(key, phonetic, n_fields=4 if header else 2)
            fields = fields + [graphic] if header else fields
        if any(fields):
            lines.append(sep.join([key, *fields]))
    return "\n".join(lines) + "\n"


def _phonetic_fields(key: str, cands: list[str], n_fields: int) -> list[str]:
    """Split phonetic candidates into same sound/same tone, same sound/other tone (then similar sound, same split)."""
    mine = set(char_readings(key))
    mine_toneless = {_toneless(r) for r in mine}
    fields = [""] * n_fields
    for c in cands:
        readings = set(char_readings(c))
        same_sound = bool({_toneless(r) for r in readings} & mine_toneless)
        slot = (0 if readings & mine else 1) + (0 if same_sound or n_fields == 2 else 2)
        fields[slot] += c
    return fields


# ---- building S from character knowledge -------------------------------------------------------------------------


@dataclass(frozen=True)
class BuildParams:
    """How :func:`build_confusion_set` builds S (all of it lands in the benchmark's cache key)."""

    n_chars: int = 3500  # the universe: the most frequent Han characters of the corpus
    max_phonetic: int = 10  # phonetic candidates per key (same syllable first, then fuzzy-similar syllables)
    fuzzy: bool = True  # add candidates whose syllable differs by one fuzzy initial or final (z/zh, an/ang, ...)
    max_graphic: int = 6  # graphic candidates per key
    max_stroke_distance: float = 0.34  # stroke-sequence edit distance over the longer sequence's length
    min_glyph_similarity: float = 0.55  # cosine similarity of the blurred glyph bitmaps


def character_inputs() -> dict:
    """What S's pairs and their types depend on besides the corpus, :class:`BuildParams` and csc_hf's code: pypinyin's
    readings, and the glyphs as Pillow draws them with the default font (:func:`default_font_record`), which is not
    the same on every machine."""
    return {
        "pypinyin": importlib.metadata.version("pypinyin"),
        "pillow": importlib.metadata.version("pillow"),
        "glyph_font": default_font_record(),
    }


def common_chars(frequencies: Mapping[str, int], n: int) -> list[str]:
    """The ``n`` most frequent characters that have readings and strokes (ties broken by code point)."""
    ranked = sorted(frequencies.items(), key=lambda kv: (-kv[1], kv[0]))
    usable = [c for c, _ in ranked if char_readings(c) and stroke_sequence(c)]
    return usable[:n]


def attested_readings(
    sentences: Sequence[str], max_sentences: int = 20_000, min_share: float = 0.05
) -> dict[str, tuple[str, ...]]:
    """The readings that pypinyin gives each character in context, in an evenly spaced sample of ``sentences``,
    keeping those of at least ``min_share`` of its occurrences (most frequent first). Rare dictionary readings
    (是 ti2, 提 shi2) would otherwise make unrelated characters look homophonous."""
    step = max(1, len(sentences) // max_sentences)
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for sentence in sentences[::step]:
        for ch, reading in zip(sentence, sentence_pinyin(sentence)):
            if reading:
                counts[ch][reading] += 1
    result = {}
    for ch, c in counts.items():
        total = sum(c.values())
        result[ch] = tuple(r for r, n in sorted(c.items(), key=lambda kv: (-kv[1], kv[0])) if n >= min_share * total)
    return result


def phonetic_candidates(
    chars: Sequence[str], readings: Mapping[str, tuple[str, ...]], max_per_key: int, fuzzy: bool
) -> dict[str, list[str]]:
    """Same syllable (same tone, then other tones), then fuzzy-similar syllables; ties by the order of ``chars``.

    ``readings`` gives each character's readings (a character missing there uses its first dictionary reading).
    """
    read = {c: set(readings.get(c) or char_readings(c)[:1]) for c in chars}
    rank = {c: i for i, c in enumerate(chars)}
    by_syllable: dict[str, list[str]] = defaultdict(list)
    for c in chars:
        for s in {_toneless(r) for r in read[c]}:
            by_syllable[s].append(c)
    result = {}
    for key in chars:
        readings_k = read[key]
        tones = {r[-1] for r in readings_k}
        syllables = {_toneless(r) for r in readings_k}
        near = set().union(*(similar_syllables(s) for s in syllables)) - syllables if fuzzy else set()
        scored: dict[str, int] = {}
        for level, group in ((0, syllables), (2, near)):
            for s in group:
                for c in by_syllable.get(s, ()):
                    if c != key:
                        same_tone = any(r[-1] in tones for r in read[c] if _toneless(r) == s)
                        scored[c] = min(scored.get(c, 9), level + (0 if same_tone else 1))
        result[key] = sorted(scored, key=lambda c: (scored[c], rank[c]))[:max_per_key]
    return result


def graphic_candidates(
    chars: Sequence[str], max_per_key: int, max_stroke_distance: float, min_glyph_similarity: float
) -> dict[str, list[str]]:
    """Visually similar characters: close stroke sequences and similar glyph bitmaps, ranked by glyph similarity."""
    features = glyph_features(render_glyphs(chars))
    similarity = features @ features.T
    strokes = [stroke_sequence(c) for c in chars]
    lengths = np.array([len(s) for s in strokes])
    result = {}
    for i, key in enumerate(chars):
        order = np.argsort(-similarity[i], kind="stable")
        order = order[(order != i) & (similarity[i, order] >= min_glyph_similarity)]
        close = order[np.abs(lengths[order] - lengths[i]) <= np.ceil(max_stroke_distance * lengths[i])]
        distance = stroke_distances(strokes[i], [strokes[j] for j in close])
        relative = distance / np.maximum(lengths[close], lengths[i])
        result[key] = [chars[j] for j in close[relative <= max_stroke_distance][:max_per_key]]
    return result


def similar_characters(
    chars: Sequence[str], max_phonetic: int = 40, max_graphic: int = 12, params: BuildParams = BuildParams()
) -> dict[str, list[str]]:
    """Each of ``chars`` (those with a reading and strokes) mapped to the others that sound alike (first dictionary
    reading, fuzzy syllables; :func:`phonetic_candidates`) then look alike (:func:`graphic_candidates`, the criteria
    of ``params``), without repeats: character knowledge only, never observed pairs. The candidates of the decoding's
    similarity prior (``csc_hf.pipeline``)."""
    chars = [c for c in dict.fromkeys(chars) if is_han(c) and char_readings(c) and stroke_sequence(c)]
    if not chars:
        return {}
    phonetic = phonetic_candidates(chars, {}, max_phonetic, params.fuzzy)
    graphic = graphic_candidates(chars, max_graphic, params.max_stroke_distance, params.min_glyph_similarity)
    return {c: list(dict.fromkeys(phonetic[c] + graphic[c])) for c in chars}


def sounds_alike(a: str, b: str, fuzzy: bool = True) -> bool:
    """Whether two characters share a toneless syllable (or, with ``fuzzy``, differ by one fuzzy initial/final)."""
    sa, sb = ({_toneless(r) for r in char_readings(c)} for c in (a, b))
    return bool(sa & sb) or (fuzzy and any(sb & similar_syllables(s) for s in sa))


def looks_alike(a: str, b: str, params: BuildParams = BuildParams()) -> bool:
    """Whether two characters pass the graphic criteria of :func:`graphic_candidates`."""
    sa, sb = stroke_sequence(a), stroke_sequence(b)
    if not sa or not sb or stroke_distance(sa, sb) / max(len(sa), len(sb)) > params.max_stroke_distance:
        return False
    glyphs = render_glyphs([a, b])
    return glyph_similarity(glyphs[0], glyphs[1]) >= params.min_glyph_similarity


def pair_type(right: str, wrong: str) -> str:
    """Judge an observed misspelling by character knowledge: ``phonetic``, ``graphic``, ``both`` or ``other``."""
    phonetic, graphic = sounds_alike(right, wrong), looks_alike(right, wrong)
    return "both" if phonetic and graphic else "phonetic" if phonetic else "graphic" if graphic else "other"


def build_confusion_set(
    frequencies: Mapping[str, int], readings: Mapping[str, tuple[str, ...]], params: BuildParams = BuildParams()
) -> ConfusionSet:
    """Build S = S_p ∪ S_g over the most frequent characters; a pair in both parts has type ``both``.

    ``frequencies`` counts the corpus's Han characters; ``readings`` are their readings (see :func:`attested_readings`).
    """
    chars = common_chars(frequencies, params.n_chars)
    if len(chars) < 2:
        raise ValueError(f"the corpus has {len(chars)} usable Han characters; a confusion set needs at least 2")
    phonetic = phonetic_candidates(chars, readings, params.max_phonetic, params.fuzzy)
    graphic = graphic_candidates(chars, params.max_graphic, params.max_stroke_distance, params.min_glyph_similarity)
    pairs = [(k, c, "phonetic") for k, cs in phonetic.items() for c in cs]
    pairs += [(k, c, "graphic") for k, cs in graphic.items() for c in cs]
    return ConfusionSet(pairs)


# ---- the paper's division ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Division:
    """S divided as in the paper: ``train = S - unseen_k - unseen_v``. ``S_seen`` is not a part of it: it exists only
    once the training data does (``Plan.seen`` in :mod:`csc_hf.benchmark.plan`); :meth:`stats` takes it as an
    argument."""

    full: ConfusionSet
    unseen_k: ConfusionSet
    unseen_v: ConfusionSet
    train: ConfusionSet

    def stats(self, seen: ConfusionSet | None = None) -> dict[str, dict[str, float]]:
        sets = {"S": self.full, "S_unseen_k": self.unseen_k, "S_unseen_v": self.unseen_v, "S_train": self.train}
        return {name: s.stats() for name, s in ({**sets, "S_seen": seen} if seen is not None else sets).items()}


def divide(
    full: ConfusionSet,
    n_unseen_keys: int,
    n_unseen_v_keys: int,
    unseen_v_share: float,
    seed: int,
    key_pool: Sequence[str] | None = None,
) -> Division:
    """Sample ``n_unseen_keys`` keys with all their values as ``S_unseen^k``; from ``n_unseen_v_keys`` other keys
    with at least two candidates, sample a share ``unseen_v_share`` of their values (at least one, never all) as
    ``S_unseen^v``. Keys are drawn from ``key_pool`` (e.g. the most frequent keys) when given, else from all keys.
    """
    if not 0.0 < unseen_v_share < 1.0:
        raise ValueError(f"unseen_v_share={unseen_v_share} must be in (0, 1)")
    pool = [k for k in (key_pool if key_pool is not None else full) if k in full]
    rng = np.random.default_rng(seed)
    if n_unseen_keys + n_unseen_v_keys > len(pool):
        raise ValueError(
            f"n_unseen_keys={n_unseen_keys} + n_unseen_v_keys={n_unseen_v_keys} exceed the {len(pool)} keys to draw "
            "from"
        )
    unseen_keys = sorted(rng.choice(pool, size=n_unseen_keys, replace=False).tolist()) if n_unseen_keys else []
    rest = [k for k in pool if k not in set(unseen_keys) and len(full[k]) >= 2]
    if n_unseen_v_keys > len(rest):
        raise ValueError(f"n_unseen_v_keys={n_unseen_v_keys}: only {len(rest)} remaining keys have two candidates")
    v_keys = sorted(rng.choice(rest, size=n_unseen_v_keys, replace=False).tolist()) if n_unseen_v_keys else []
    unseen_v = []
    for key in v_keys:
        cands = list(full[key])
        take = min(max(1, round(unseen_v_share * len(cands))), len(cands) - 1)
        unseen_v += [(key, c, full[key][c]) for c in sorted(rng.choice(cands, size=take, replace=False).tolist())]
    unseen_k = full.only_keys(unseen_keys)
    unseen_v_set = ConfusionSet(unseen_v)
    train = full.minus(unseen_k).minus(unseen_v_set)
    if train.n_pairs == 0:
        raise ValueError("the division leaves S_train empty: lower n_unseen_keys / n_unseen_v_keys / unseen_v_share")
    return Division(full, unseen_k, unseen_v_set, train)
