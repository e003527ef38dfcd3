"""Dataset statistics of any CSC data (the paper's Table 9 and Section 5.7), as pure functions over strings.

The errors of a pair are read position by position when source and target have one length, else by their minimum-edit
alignment (:func:`gold_errors`: missing and redundant characters too). :func:`split_stats` counts sentences and
errors of one split (the benchmark's ``csc-bench build`` table uses it too);
:func:`dataset_stats` adds misspelling pairs and their type judged by character knowledge, and traditional
characters; :func:`coverage` says how much of a test set's errors a training set or a confusion set covers, and
:func:`context_overlap` how much test sentences and error contexts occur in training. :func:`analyze` runs them over
loaded splits (``csc-bench analyze`` loads any CSC data with :func:`csc_hf.data.analyze_data`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from .chars.pinyin import is_han
from .confusion import ConfusionSet, pair_type
from .corruption import ERROR_TYPES, NO_ERROR, Corruption, PackedText, pack, pair_counts
from .edits import EDIT_KINDS, MISSING, REDUNDANT, SUBSTITUTION, alignment
from .files import Sentences, check_sentences

_HASH_MULTIPLIER = np.uint64(0x100000001B3)  # FNV-64 prime: n-gram hashes as a polynomial in it


# ---- statistics ----------------------------------------------------------------------------------------------------


def split_stats(target: PackedText, errors: np.ndarray) -> dict[str, float]:
    """Sentences, average length, sentences with errors, errors and errors per sentence of one split: the packed
    ``target`` sentences and the number of ``errors`` of each."""
    n, per_sentence = len(target), np.asarray(errors, dtype=np.int64)
    n_errors = int(per_sentence.sum())
    return {
        "sentences": n,
        "avg_length": round(len(target.codes) / max(n, 1), 2),
        "sentences_with_errors": int((per_sentence > 0).sum()),
        "errors": n_errors,
        "errors_per_sentence": round(n_errors / max(n, 1), 4),
    }


def errors_per_sentence(target: PackedText, wrong: np.ndarray) -> np.ndarray:
    """The number of misspelt positions (the mask ``wrong`` over the packed ``target``) of each sentence."""
    sentence_of = np.repeat(np.arange(len(target)), target.lengths)
    return np.bincount(sentence_of[np.asarray(wrong, dtype=bool)], minlength=len(target))


@cache
def judge_pair(right: str, wrong: str) -> str:
    """:func:`csc_hf.confusion.pair_type`, cached per distinct pair (it renders glyphs)."""
    return pair_type(right, wrong)


@dataclass(frozen=True)
class GoldErrors:
    """The errors of sentence pairs (:func:`gold_errors`): per sentence their number, per edit kind their number, the
    misspelling pairs ``(right, wrong)`` of the substitutions with their counts, and each error's position in the
    packed ``target`` (a missing character: where it is put in; a redundant one: the target character after it)."""

    target: PackedText
    per_sentence: np.ndarray
    kinds: dict[str, int]
    pairs: Counter[tuple[str, str]]
    target_positions: np.ndarray


def gold_errors(sources: Sequence[str], targets: Sequence[str], by_position: bool = False) -> GoldErrors:
    """The errors of non-empty ``sources`` / ``targets``, as the edits of :func:`csc_hf.edits.alignment` (the scorer's
    ``alignment=True`` reading): a pair of equal lengths reads position by position whenever that is a minimum
    alignment (any substitution-only CSC data), other pairs by their minimum-edit alignment (missing and redundant
    characters). Vectorised for the pairs of equal lengths with at most 2 changed positions, which always read by
    position; ``by_position``: every pair of equal lengths reads so (the default scorer's convention)."""
    check_sentences(sources, targets, equal_lengths=False)
    target, source_lengths = pack(targets), np.fromiter(map(len, sources), dtype=np.int64, count=len(sources))
    n = len(targets)
    equal = np.flatnonzero(source_lengths == target.lengths)
    same = target.take(equal)
    wrong = pack([sources[i] for i in equal]).codes != same.codes
    changed = errors_per_sentence(same, wrong)
    positional_rows = equal if by_position else equal[changed <= 2]
    aligned = np.setdiff1d(np.arange(n), positional_rows)
    same = target.take(positional_rows)
    source = pack([sources[i] for i in positional_rows])
    wrong = source.codes != same.codes
    per_sentence = np.zeros(n, dtype=np.int64)
    per_sentence[positional_rows] = errors_per_sentence(same, wrong)
    corruption = Corruption(source, np.where(wrong, 0, NO_ERROR).astype(np.int8))
    pairs = Counter(pair_counts(same, corruption))
    kinds = dict.fromkeys(EDIT_KINDS, 0)
    kinds[SUBSTITUTION] = int(wrong.sum())
    at = np.flatnonzero(wrong)
    row = np.searchsorted(same.offsets, at, side="right") - 1
    positions = [target.offsets[positional_rows[row]] + at - same.offsets[row]]
    for i in aligned.tolist():
        edits = alignment(sources[i], targets[i])
        per_sentence[i] = len(edits)
        shift, found = 0, []  # target position = source position + missing so far - redundant so far
        for e in edits:
            kinds[e.kind] += 1
            found.append(min(e.position + shift, len(targets[i]) - 1))
            if e.kind == SUBSTITUTION:
                pairs[e.right, e.wrong] += 1
            shift += (e.kind == MISSING) - (e.kind == REDUNDANT)
        positions.append(target.offsets[i] + np.asarray(found, dtype=np.int64))
    return GoldErrors(target, per_sentence, kinds, pairs, np.sort(np.concatenate(positions)).astype(np.int64))


def error_pairs(sources: Sequence[str], targets: Sequence[str]) -> Counter[tuple[str, str]]:
    """How often each misspelling pair ``(right, wrong)`` occurs (substitutions; see :func:`gold_errors`)."""
    return gold_errors(sources, targets).pairs


def dataset_stats(
    sources: Sequence[str],
    targets: Sequence[str],
    judge: Callable[[str, str], str] = judge_pair,
    t2s: Callable[[str], str] | None = None,
) -> dict[str, float | None]:
    """Table-9-style statistics of ``sources`` / ``targets`` (their errors: :func:`gold_errors`).

    ``avg_length`` is the targets', ``avg_source_length`` the sources'; ``{kind}_errors`` counts the errors of each
    edit kind (substitution, missing, redundant). Error types come from ``judge(right, wrong)`` (default: character
    knowledge) over the substitutions; ``*_pair_share`` counts distinct pairs, ``*_error_share`` their occurrences.
    ``traditional_share`` is the share of the targets' Han characters that ``t2s`` (a traditional-to-simplified
    converter) changes, ``None`` without a converter.
    """
    errors = gold_errors(sources, targets)
    pairs = errors.pairs
    kinds = {pair: judge(*pair) for pair in pairs}
    by_pair, by_error = Counter(kinds.values()), Counter()
    for pair, count in pairs.items():
        by_error[kinds[pair]] += count
    n_substitutions = errors.kinds[SUBSTITUTION]
    return {
        **split_stats(errors.target, errors.per_sentence),
        "avg_source_length": round(sum(map(len, sources)) / len(sources), 2),
        **{f"{kind}_errors": count for kind, count in errors.kinds.items()},
        "pairs": len(pairs),
        **{f"{t}_pair_share": _share(by_pair[t], len(pairs)) for t in ERROR_TYPES},
        **{f"{t}_error_share": _share(by_error[t], n_substitutions) for t in ERROR_TYPES},
        "traditional_share": None if t2s is None else _traditional_share(errors.target.codes, t2s),
    }


def _share(part: float, whole: float) -> float | None:
    return round(part / whole, 4) if whole else None


def _traditional_share(codes: np.ndarray, t2s: Callable[[str], str]) -> float | None:
    han = [c for c in np.unique(codes).tolist() if is_han(chr(c))]
    traditional = [c for c in han if t2s(chr(c)) != chr(c)]
    return _share(int(np.isin(codes, traditional).sum()), int(np.isin(codes, han).sum()))


# ---- coverage and context overlap --------------------------------------------------------------------------------


def coverage(
    test_pairs: Mapping[tuple[str, str], int], reference: Collection[tuple[str, str]]
) -> dict[str, float | None]:
    """How much of a test set's errors ``reference`` pairs (a training set's or a confusion set's) cover.

    ``error_coverage``: the share of the test errors whose pair ``(right, wrong)`` is a reference pair;
    ``pair_coverage``: the same over distinct pairs; ``key_coverage``: the share of the test errors whose correct
    character is misspelt somewhere in the reference. ``None`` when the test set has no error.
    """
    pairs, keys = set(reference), {right for right, _ in reference}
    n_errors = sum(test_pairs.values())
    return {
        "error_coverage": _share(sum(c for p, c in test_pairs.items() if p in pairs), n_errors),
        "pair_coverage": _share(sum(p in pairs for p in test_pairs), len(test_pairs)),
        "key_coverage": _share(sum(c for (right, _), c in test_pairs.items() if right in keys), n_errors),
    }


def _ngram_hashes(text: PackedText, n: int) -> tuple[np.ndarray, np.ndarray]:
    """A 64-bit hash of the ``n`` characters starting at each position, and whether they lie in one sentence."""
    m = max(len(text.codes) - n + 1, 0)
    hashes = np.zeros(m, dtype=np.uint64)
    for j in range(n):  # wraps modulo 2**64; collisions among a few million n-grams are negligible
        hashes = hashes * _HASH_MULTIPLIER + text.codes[j : j + m].astype(np.uint64)
    ends = np.repeat(text.offsets[1:], text.lengths)[:m]
    return hashes, np.arange(m) + n <= ends


def _error_ngrams(errors: GoldErrors, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The hash of each target ``n``-gram that holds an error position (:class:`GoldErrors`), as a matrix (one row per
    error, one column per start offset) with the mask of the n-grams that lie within the error's sentence."""
    if n < 1:
        raise ValueError(f"n-gram length {n} must be at least 1")
    target, at = errors.target, errors.target_positions
    hashes, _ = _ngram_hashes(target, n)
    sentence = np.searchsorted(target.offsets, at, side="right") - 1
    starts = at[:, None] - np.arange(n)[None, :]
    inside = (starts >= target.offsets[sentence][:, None]) & (starts + n <= target.offsets[sentence + 1][:, None])
    return hashes, starts, inside


CONTEXT_N = 4
"""The n of the character n-grams that make an error's context (:func:`context_overlap`, :func:`error_groups`)."""


def training_ngrams(train_targets: Sequence[str], n: int) -> np.ndarray:
    """The distinct hashes of the character ``n``-grams of ``train_targets``, sorted."""
    train_hashes, train_ok = _ngram_hashes(pack(list(train_targets)), n)
    hashes = np.sort(train_hashes[train_ok])  # not np.unique: numpy >= 2.3 hashes there, far slower on millions
    return hashes[np.concatenate(([True], hashes[1:] != hashes[:-1]))] if len(hashes) else hashes


def _in_sorted(values: np.ndarray, distinct: np.ndarray) -> np.ndarray:
    """Whether each of ``values`` is in ``distinct`` (sorted, without repeats: :func:`training_ngrams`), by binary
    search (np.isin would make ``distinct`` unique again at every call)."""
    if not len(distinct):
        return np.zeros(np.shape(values), dtype=bool)
    at = np.minimum(np.searchsorted(distinct, values), len(distinct) - 1)  # past the last: compared with the last
    return distinct[at] == values


def context_overlap(
    sources: Sequence[str], targets: Sequence[str], train_targets: Sequence[str], n: int = CONTEXT_N
) -> dict[str, float | None]:
    """How much context a test set shares with the training sentences ``train_targets``.

    ``sentence_overlap``: the share of test targets that are training targets; ``ngram_overlap``: the share of the
    test target's character ``n``-grams that contain an error position (:class:`GoldErrors`) and occur in the
    training targets.
    """
    hashes, starts, inside = _error_ngrams(gold_errors(sources, targets), n)
    queries = hashes[starts[inside]]
    train_set = set(train_targets)
    return {
        "sentence_overlap": _share(sum(t in train_set for t in targets), len(targets)),
        "ngram_overlap": _share(int(_in_sorted(queries, training_ngrams(train_targets, n)).sum()), len(queries)),
    }


ERROR_GROUPS = ("seen context, known", "seen context, unknown", "unseen context, known", "unseen context, unknown")
"""The groups of :func:`error_groups`: whether an error's context occurs in training, and whether every character
of its window (the correct character and its neighbours that share an n-gram with it) is known to the model (in its
vocabulary: an unknown one reaches the model as ``[UNK]``)."""


def error_groups(
    sources: Sequence[str], targets: Sequence[str], train_ngrams: np.ndarray, known: Collection[str], n: int = CONTEXT_N
) -> np.ndarray:
    """The :data:`ERROR_GROUPS` index of each error of a split (:class:`GoldErrors` read position by position where
    source and target have one length, in target order): its context is
    seen when one of the target's character ``n``-grams that hold the error's position occurs in the training
    sentences (``train_ngrams``: their :func:`training_ngrams`, with the same ``n``, computed once for every split);
    its characters are known when the correct character and the target's characters up to ``n - 1`` positions either
    side of it in its sentence are all in ``known`` (a model's vocabulary; a redundant character's correct character:
    the target character after it)."""
    errors = gold_errors(sources, targets, by_position=True)
    hashes, starts, inside = _error_ngrams(errors, n)
    found = np.zeros(starts.shape, dtype=bool)
    found[inside] = _in_sorted(hashes[starts[inside]], train_ngrams)
    target, at = errors.target, errors.target_positions
    known_codes = np.array(sorted(ord(c) for c in known if len(c) == 1), dtype=target.codes.dtype)
    sentence = np.searchsorted(target.offsets, at, side="right") - 1
    window = at[:, None] + np.arange(1 - n, n)[None, :]
    within = (window >= target.offsets[sentence][:, None]) & (window < target.offsets[sentence + 1][:, None])
    unknown = np.zeros(window.shape, dtype=bool)
    unknown[within] = ~np.isin(target.codes[window[within]], known_codes)
    return 2 * (~found.any(axis=1)) + unknown.any(axis=1)


# ---- every statistic of loaded data -----------------------------------------------------------------------------


def analyze(
    splits: Mapping[str, Sentences],
    train: Mapping[str, Sentences] = {},
    confusion: Mapping[str, ConfusionSet] = {},
    ngram: int = CONTEXT_N,
    t2s: Callable[[str], str] | None = None,
) -> dict[str, dict]:
    """Statistics of every split of ``splits`` (``{name: (sources, targets)}``); with ``train`` (``{name: its
    training sentences}``) / ``confusion`` (``{name: a confusion set}``), their coverage of each split, and the
    training sentences' context overlap. ``t2s``: see :func:`dataset_stats`.

    Returns ``{"statistics": {split: stats}, "coverage": {split: {reference: coverage and overlap}}}``.
    """
    result: dict[str, dict] = {"statistics": {name: dataset_stats(*pairs, t2s=t2s) for name, pairs in splits.items()}}
    references = {name: (set(error_pairs(*sentences)), sentences[1]) for name, sentences in train.items()}
    references |= {name: ({(right, wrong) for right, wrong, _ in s.pairs()}, None) for name, s in confusion.items()}
    if references:
        result["coverage"] = {}
        for name, (sources, targets) in splits.items():
            test_pairs = error_pairs(sources, targets)
            result["coverage"][name] = {
                ref: {
                    **coverage(test_pairs, pairs),
                    **(context_overlap(sources, targets, texts, ngram) if texts is not None else {}),
                }
                for ref, (pairs, texts) in references.items()
            }
    return result
