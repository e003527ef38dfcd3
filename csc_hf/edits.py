"""Edits between a source sentence and another version of it, and the minimum-edit alignment that finds them.

An edit is one of :data:`EDIT_KINDS`, placed at a position of the **source**:

- ``substitution``: ``source[position]`` is replaced by ``right`` (``wrong`` is the source item);
- ``missing``: ``right`` is inserted before ``source[position]`` (``position == len(source)``: at the end); several
  missing items at one position are listed in target order, their *ordinal* (0, 1, ...) tells them apart;
- ``redundant``: ``source[position]`` is removed (``wrong`` is the removed item, ``right`` is None).

A CSC error is named by what the source lacks or has too much of: a *missing* character is corrected by an
insertion, a *redundant* one by a deletion. Items are characters of a string or token ids of a sequence.

:func:`alignment` finds the edits of a minimum (Levenshtein) alignment, deterministically:

1. a pair of equal lengths whose position-by-position reading costs no more than any other alignment is read position
   by position (all substitutions: CSC data's own convention), so substitution-only data never meets an insertion;
2. otherwise the common prefix and suffix are matched first, and reading left to right, ties prefer a substitution,
   then a deletion (redundant), then an insertion (missing);
3. given ``gold`` edits (the reference's alignment, when aligning a prediction), among the minimum alignments the one
   sharing the most edits with ``gold`` wins (an edit at the same slot counts 1, with the same ``right`` 2), then
   rule 2: a prediction equal to the reference gets exactly the gold edits, and one that fixes a doubled character
   (``们们``) is not read as having removed the other copy.

Pure Python over sequences; the distances are computed in a band around the diagonal that widens until it provably
holds every minimum alignment (Ukkonen, 1985).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from difflib import SequenceMatcher
from typing import Any, NamedTuple

EDIT_KINDS = ("substitution", "missing", "redundant")
SUBSTITUTION, MISSING, REDUNDANT = EDIT_KINDS


class Edit(NamedTuple):
    """One edit at a source position (see the module docstring)."""

    kind: str
    position: int
    wrong: Any
    right: Any


def slots(edits: Iterable[Edit]) -> list[tuple[str, int, int]]:
    """Each edit's slot ``(kind, position, ordinal)``: the ordinal numbers the missing items at one position in order
    (0 for the other kinds). Two edits are the same detection when their slots are equal."""
    out, previous, ordinal = [], None, 0
    for edit in edits:
        ordinal = ordinal + 1 if edit.kind == MISSING and previous == (MISSING, edit.position) else 0
        previous = (edit.kind, edit.position)
        out.append((edit.kind, edit.position, ordinal))
    return out


def apply(source: Sequence[Any], edits: Iterable[Edit]) -> list[Any]:
    """The items that ``edits`` (in source order, as :func:`alignment` gives them) make of ``source``."""
    out: list[Any] = []
    done = 0
    for edit in edits:
        out.extend(source[done : edit.position])
        done = edit.position
        if edit.kind == MISSING:
            out.append(edit.right)
        elif edit.kind == SUBSTITUTION:
            out.append(edit.right)
            done += 1
        else:
            done += 1
    out.extend(source[done:])
    return out


def positional(source: Sequence[Any], target: Sequence[Any]) -> list[Edit]:
    """The position-by-position edits of two sequences of equal length (substitutions only)."""
    return [Edit(SUBSTITUTION, i, s, t) for i, (s, t) in enumerate(zip(source, target)) if s != t]


def shifted_matches(source: Sequence[Any], edits: Sequence[Edit]) -> int:
    """How many of the position-by-position ``edits`` of a source and an equal-length target put in an item that the
    source holds up to ``(len(edits) - 1) // 2`` positions away.

    An alignment with ``I`` insertions (hence ``I`` deletions) costs at least the positional one plus ``I`` minus the
    number of changed positions it aligns to an equal item off the diagonal, and one that is cheaper than the
    positional one never leaves the diagonal by more than ``(len(edits) - 1) // 2``: so with at most 1 such match, no
    alignment is cheaper than reading by position."""
    reach = (len(edits) - 1) // 2
    nearby = (range(max(0, e.position - reach), min(len(source), e.position + reach + 1)) for e in edits)
    return sum(any(source[j] == e.right for j in around if j != e.position) for e, around in zip(edits, nearby))


def alignment(source: Sequence[Any], target: Sequence[Any], gold: Sequence[Edit] | None = None) -> list[Edit]:
    """The edits, in source order, of the minimum alignment of ``target`` to ``source`` chosen by the module's rules
    (``gold``: the reference's edits, when ``target`` is a prediction)."""
    if len(source) == len(target):
        edits = positional(source, target)
        if shifted_matches(source, edits) <= 1:  # reading by position is a minimum alignment: no table needed
            return edits
    else:
        edits = None
    table = _Table(source, target, gold)
    if edits is not None and table.cost == len(edits):
        return edits
    return table.walk()


def aligned_edits(source: str, prediction: str, skip_whitespace: bool = True) -> list[Edit]:
    """The edits of a free rewrite (a seq2seq model's or an LLM's output) at positions of ``source``, in source order.

    With ``skip_whitespace``, whitespace is left out on both sides, so that a decoder's spaces between characters
    ("我 们 去") neither shift nor hide an edit. The characters both texts share are matched first (``difflib``'s
    matching blocks), so a character that moved is a deletion and an insertion, never a chain of substitutions ("，去"
    -> "去了"); what lies between matches is aligned by :func:`alignment`. An insertion before a whitespace-led stretch
    lands after the whitespace; one after the last character is at ``len(source)``."""
    kept = [i for i, char in enumerate(source) if not (skip_whitespace and char.isspace())]
    a, b = [source[i] for i in kept], [char for char in prediction if not (skip_whitespace and char.isspace())]
    found = []
    for tag, a_start, a_end, b_start, b_end in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            for edit in alignment(a[a_start:a_end], b[b_start:b_end]):
                at = a_start + edit.position
                found.append(edit._replace(position=kept[at] if at < len(kept) else len(source)))
    return found


def aligned_substitutions(source: str, prediction: str) -> list[tuple[int, str]]:
    """The substitutions of :func:`aligned_edits` (a free rewrite aligned to its source), as ``(position,
    character)``: what a rewrite keeps when the source's length must stay (insertions and deletions dropped)."""
    return [(e.position, e.right) for e in aligned_edits(source, prediction) if e.kind == SUBSTITUTION]


def align(source: Sequence[Any], prediction: Sequence[Any]) -> tuple[list[tuple[int, Any]], int]:
    """:func:`alignment` without gold, reduced to ``(substitutions, n_indels)``: each substituted item as ``(source
    position, predicted item)`` in source order, and the number of inserted plus removed items."""
    edits = alignment(source, prediction)
    substitutions = [(e.position, e.right) for e in edits if e.kind == SUBSTITUTION]
    return substitutions, len(edits) - len(substitutions)


class _Table:
    """The banded table of the best ``(cost, -agreement with gold)`` from each cell to the end, as one integer
    ``cost * weight - agreement``, and the walk through it.

    A cell ``(i, j)`` of the middle part (common prefix and suffix cut) means ``a[:i]`` and ``b[:j]`` are aligned.
    At a position where gold inserts ``k`` items, the table also holds the states "``o`` items already inserted
    here" (o = 1..k), so that the o-th inserted item is compared with the o-th gold one."""

    def __init__(self, source: Sequence[Any], target: Sequence[Any], gold: Sequence[Edit] | None):
        self.substituted: dict[int, Any] = {}
        self.removed: set[int] = set()
        self.inserted: dict[int, list[Any]] = {}
        for edit in gold or ():
            if edit.kind == SUBSTITUTION:
                self.substituted[edit.position] = edit.right
            elif edit.kind == REDUNDANT:
                self.removed.add(edit.position)
            else:
                self.inserted.setdefault(edit.position, []).append(edit.right)
        # Cut the common prefix and suffix, but never past a gold edit: the agreement must be free to choose there.
        first = min((e.position for e in gold), default=len(source)) if gold else len(source)
        last = max((e.position + (e.kind != MISSING) for e in gold), default=0) if gold else 0
        start, stop_s, stop_t = 0, len(source), len(target)
        while start < min(stop_s, stop_t, first) and source[start] == target[start]:
            start += 1
        while stop_s > max(start, last) and stop_t > start and source[stop_s - 1] == target[stop_t - 1]:
            stop_s, stop_t = stop_s - 1, stop_t - 1
        self.start = start
        self.a, self.b = source[start:stop_s], target[start:stop_t]
        self.weight = 2 * (len(self.a) + len(self.b)) + 3  # more than any agreement: the cost comes first
        if not self.a or not self.b:  # one side is empty: only insertions or only deletions, no choice to make
            self.cost, self.rows = len(self.a) + len(self.b), None
            return
        band = abs(len(self.a) - len(self.b)) + 2
        while True:
            self._fill(band)  # (0, 0) and (n, m) are always in the band: a path exists
            self.cost = -(-self._at(0, 0) // self.weight)
            if self.cost <= band:
                break
            band *= 2  # a cheaper path could leave the band: widen it

    def _fill(self, band: int) -> None:
        """Fill the rows bottom up; row ``i`` holds the cells ``j = lows[i] .. lows[i] + len(row) - 1`` (the band)."""
        a, b, n, m, w = self.a, self.b, len(self.a), len(self.b), self.weight
        start, substituted, removed, inserted = self.start, self.substituted, self.removed, self.inserted
        offset = m - n  # a cell (i, j) on a path of cost <= band has |(j - i) - offset| <= band
        lows = [max(0, i + offset - band) for i in range(n + 1)]
        rows: list[list[int | None]] = [[] for _ in range(n + 1)]
        layers: dict[int, list[list[int | None]]] = {}  # position -> the rows of "o items inserted here", o = 0..k
        for i in range(n, -1, -1):
            low, high = lows[i], min(m, i + offset + band)
            width = high - low + 1
            below, below_low = (rows[i + 1], lows[i + 1]) if i < n else (None, 0)
            below_width = len(below) if below is not None else 0
            position = start + i
            sub_right = substituted.get(position)
            del_bonus = 2 if position in removed else 0
            gold = inserted.get(position)
            vertical: list[int | None] = [None] * width  # the best without an insertion at this position first
            for j in range(high, low - 1, -1):
                value = None
                if i < n:
                    k = j + 1 - below_low
                    if j < m and 0 <= k < below_width and below[k] is not None:
                        if a[i] == b[j]:
                            value = below[k]
                        else:
                            value = w - (0 if sub_right is None else 1 + (b[j] == sub_right)) + below[k]
                    k -= 1
                    if 0 <= k < below_width and below[k] is not None:
                        deletion = w - del_bonus + below[k]
                        if value is None or deletion < value:
                            value = deletion
                elif j == m:
                    value = 0
                if not gold and j < high:  # a plain insertion here: the cell to the right is already done
                    after = vertical[j + 1 - low]
                    if after is not None and (value is None or w + after < value):
                        value = w + after
                vertical[j - low] = value
            if not gold:
                rows[i] = vertical
                continue
            count = len(gold)
            states = [list(vertical) for _ in range(count + 1)]
            for o in range(count, -1, -1):
                row, after_row = states[o], states[min(o + 1, count)]
                for j in range(high - 1, low - 1, -1):
                    after = after_row[j + 1 - low]
                    if after is not None:
                        insertion = w - (1 + (b[j] == gold[o]) if o < count else 0) + after
                        if row[j - low] is None or insertion < row[j - low]:
                            row[j - low] = insertion
            rows[i] = states[0]
            layers[position] = states
        self.rows, self.lows, self.layers = rows, lows, layers

    def _at(self, i: int, j: int) -> int | None:
        k = j - self.lows[i]
        row = self.rows[i]
        return row[k] if 0 <= k < len(row) else None

    def walk(self) -> list[Edit]:
        """The edits along the best path, reading left to right: a substitution (or match) first, then a deletion,
        then an insertion, whichever keeps the path best."""
        a, b, n, m, w = self.a, self.b, len(self.a), len(self.b), self.weight
        if self.rows is None:
            return [Edit(REDUNDANT, self.start + i, item, None) for i, item in enumerate(a)] + [
                Edit(MISSING, self.start + n, None, item) for item in b
            ]
        edits: list[Edit] = []
        i = j = o = 0
        while i < n or j < m:
            position = self.start + i
            states = self.layers.get(position)
            value = states[o][j - self.lows[i]] if states else self._at(i, j)
            if i < n and j < m and (diagonal := self._at(i + 1, j + 1)) is not None:
                if a[i] == b[j]:
                    if value == diagonal:
                        i, j, o = i + 1, j + 1, 0
                        continue
                else:
                    sub_right = self.substituted.get(position)
                    if value == w - (0 if sub_right is None else 1 + (b[j] == sub_right)) + diagonal:
                        edits.append(Edit(SUBSTITUTION, position, a[i], b[j]))
                        i, j, o = i + 1, j + 1, 0
                        continue
            if i < n and (down := self._at(i + 1, j)) is not None:
                if value == w - (2 if position in self.removed else 0) + down:
                    edits.append(Edit(REDUNDANT, position, a[i], None))
                    i, o = i + 1, 0
                    continue
            edits.append(Edit(MISSING, position, None, b[j]))
            if states:
                o = min(o + 1, len(states) - 1)
            j += 1
        return edits
