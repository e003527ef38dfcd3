"""Pinyin of Chinese characters and sentences, built on pypinyin.

Conventions used throughout csc_hf:

* Syllables are in pypinyin's ``Style.TONE3`` form with the tone digit at the
  end (``"hang2"``); the neutral tone is ``5`` (``"de5"``) and ü is written
  ``v`` (``"lv4"``, ``"nve4"``).  A *toneless* syllable is the same string
  without its digit (``"hang"``).
* Only characters for which :func:`is_han` is true get a reading; every other
  character (Latin, digits, punctuation, emoji, 〇, CJK extension B and
  beyond, compatibility ideographs) gets ``""``.
* Initials and finals follow pypinyin's ``strict=True`` semantics (the
  phonological analysis of the Chinese standard): ``y``/``w`` are not
  initials, so ``"yan4"`` is ``("", "ian", 4)``, ``"wan2"`` is
  ``("", "uan", 2)``, ``"yu2"`` is ``("", "v", 2)``, ``"ju1"`` is
  ``("j", "v", 1)``, ``"liu2"`` is ``("l", "iou", 2)``.  pypinyin gives empty
  finals for the syllabic nasals and conflates ``yo`` with ``o``; for these
  six syllables the nasal is the final (``m n ng hm hng`` ->
  ``("", "m")``, ``("", "n")``, ``("", "ng")``, ``("h", "m")``,
  ``("h", "ng")``) and ``yo`` is ``("", "io")``.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from pypinyin import Style, pinyin
from pypinyin.constants import PINYIN_DICT
from pypinyin.contrib.tone_convert import to_finals, to_initials, to_normal

__all__ = [
    "FUZZY_FINALS",
    "FUZZY_INITIALS",
    "HAN_RANGES",
    "Syllable",
    "char_readings",
    "is_han",
    "sentence_pinyin",
    "similar_syllables",
    "split_syllable",
    "valid_syllables",
]

HAN_RANGES: tuple[tuple[int, int], ...] = (
    (0x3400, 0x4DBF),  # CJK Unified Ideographs Extension A
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
)
"""Inclusive code point ranges that :func:`is_han` accepts."""

FUZZY_INITIALS: tuple[tuple[str, str], ...] = (
    ("z", "zh"),
    ("c", "ch"),
    ("s", "sh"),
    ("n", "l"),
    ("f", "h"),
    ("r", "l"),
)
"""Initial pairs commonly confused in speech and input (flat/retroflex
sibilants, n/l, f/h, r/l); each pair works in both directions."""

FUZZY_FINALS: tuple[tuple[str, str], ...] = (
    ("an", "ang"),
    ("en", "eng"),
    ("in", "ing"),
    ("ian", "iang"),
    ("uan", "uang"),
)
"""Final pairs commonly confused (front/back nasal codas), as strict finals:
``in``/``ing`` covers yin/ying, ``ian``/``iang`` covers yan/yang and
jian/jiang, ``uan``/``uang`` covers wan/wang and guan/guang."""

_SPECIAL_SPLITS: dict[str, tuple[str, str]] = {
    "m": ("", "m"),
    "n": ("", "n"),
    "ng": ("", "ng"),
    "hm": ("h", "m"),
    "hng": ("h", "ng"),
    "yo": ("", "io"),
}
_SYLLABLE_RE = re.compile(r"([a-zê]+)([1-5]?)")


class Syllable(NamedTuple):
    """A pinyin syllable split into initial, final and tone (0 when not given)."""

    initial: str
    final: str
    tone: int


def is_han(ch: str) -> bool:
    """True if ``ch`` is one character in CJK Unified Ideographs or extension A."""
    if len(ch) != 1:
        return False
    cp = ord(ch)
    return any(low <= cp <= high for low, high in HAN_RANGES)


def _no_pinyin(chars: str) -> list[str]:
    # pypinyin passes runs of characters it cannot read; keep one slot per character.
    return [""] * len(chars)


def sentence_pinyin(text: str) -> list[str]:
    """One TONE3 syllable per character of ``text`` ("" for non-Han characters).

    pypinyin reads the whole sentence, so phrases resolve heteronyms
    (银行 -> yin2 hang2, 行走 -> xing2 zou3).
    """
    readings = pinyin(text, style=Style.TONE3, neutral_tone_with_five=True, errors=_no_pinyin)
    syllables = [item[0] for item in readings]
    if len(syllables) != len(text):
        raise RuntimeError(f"pypinyin returned {len(syllables)} readings for {len(text)} characters: {text!r}")
    return [syl if is_han(ch) else "" for ch, syl in zip(text, syllables, strict=True)]


@lru_cache(maxsize=65536)
def char_readings(ch: str) -> tuple[str, ...]:
    """All TONE3 readings of one Han character, most common first; () otherwise."""
    if not is_han(ch):
        return ()
    readings = pinyin(ch, style=Style.TONE3, heteronym=True, neutral_tone_with_five=True, errors=lambda _: None)
    return tuple(dict.fromkeys(r for r in readings[0] if r)) if readings else ()


@lru_cache(maxsize=1)
def valid_syllables() -> frozenset[str]:
    """Toneless syllables read by pypinyin for some :func:`is_han` character."""
    toned: set[str] = set()
    for cp, value in PINYIN_DICT.items():
        if is_han(chr(cp)):
            toned.update(value.split(","))
    return frozenset(to_normal(t, v_to_u=False) for t in toned)


def _split_toneless(base: str) -> tuple[str, str]:
    special = _SPECIAL_SPLITS.get(base)
    if special is not None:
        return special
    return to_initials(base, strict=True), to_finals(base, strict=True, v_to_u=False)


def split_syllable(s: str) -> Syllable:
    """Split a TONE3 (or toneless) syllable: "zhong1" -> ("zh", "ong", 1).

    Uses strict initials/finals (see module docstring); raises ValueError for a
    string that is not a valid syllable.
    """
    match = _SYLLABLE_RE.fullmatch(s)
    if match is None or match.group(1) not in valid_syllables():
        raise ValueError(f"not a valid TONE3 pinyin syllable: {s!r}")
    base, tone = match.groups()
    initial, final = _split_toneless(base)
    return Syllable(initial, final, int(tone) if tone else 0)


@lru_cache(maxsize=1)
def _syllable_by_parts() -> dict[tuple[str, str], str]:
    table: dict[tuple[str, str], str] = {}
    for base in sorted(valid_syllables()):
        parts = _split_toneless(base)
        if parts in table:
            raise RuntimeError(f"syllables {table[parts]!r} and {base!r} share the split {parts}")
        table[parts] = base
    return table


def _partners(pairs: tuple[tuple[str, str], ...], unit: str) -> list[str]:
    return [b if a == unit else a for a, b in pairs if unit in (a, b)]


@lru_cache(maxsize=1024)
def similar_syllables(s: str) -> frozenset[str]:
    """Valid toneless syllables one fuzzy initial or final away from ``s``.

    ``s`` may carry a tone digit, which is ignored: "lan" -> {"nan", "lang"},
    "zhi" -> {"zi"}.  ``s`` itself is not included.
    """
    initial, final, _ = split_syllable(s)
    by_parts = _syllable_by_parts()
    keys = [(i, final) for i in _partners(FUZZY_INITIALS, initial)]
    keys += [(initial, f) for f in _partners(FUZZY_FINALS, final)]
    return frozenset(by_parts[k] for k in keys if k in by_parts)
