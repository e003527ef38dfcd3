"""Dataset statistics of any CSC data (the paper's Table 9 and Section 5.7), as pure functions over strings.

:func:`split_stats` counts sentences and errors of one split (the benchmark's ``csc-bench build`` table uses it too);
:func:`dataset_stats` adds misspelling pairs and their type judged by character knowledge, and traditional
characters; :func:`coverage` says how much of a test set's errors a training set or a confusion set covers, and
:func:`context_overlap` how much test sentences and error contexts occur in training. :func:`analyze` runs them on
any CSC data that :func:`load_pairs` reads (``csc-bench analyze``); the loaders import the benchmark only when called,
so the benchmark can import this module.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from functools import lru_cache
from pathlib import Path

import datasets
import numpy as np

from .chars.pinyin import is_han
from .confusion import ConfusionSet, pair_type
from .corpus import is_saved_dataset, open_dataset, t2s_converter
from .corruption import ERROR_TYPES, NO_ERROR, Corruption, PackedText, pack, pair_counts
from .files import iter_jsonl, read_lines

Pairs = tuple[list[str], list[str]]  # (sources, targets)
PAIR_KINDS = (
    "a wrong<TAB>correct .tsv, a .jsonl with source/target, an exported benchmark FOLDER or FOLDER:CONFIG, "
    "a save_to_disk folder or datasets:PATH with source/target columns"
)  # what load_pairs reads
CONFUSION_SUBSETS = ("S", "S_train", "S_unseen_k", "S_unseen_v", "S_seen", "S_train_phonetic", "S_train_graphic")
_HASH_MULTIPLIER = np.uint64(0x100000001B3)  # FNV-64 prime: n-gram hashes as a polynomial in it


# ---- statistics ----------------------------------------------------------------------------------------------------


def split_stats(target: PackedText, wrong: np.ndarray) -> dict[str, float]:
    """Sentences, average length, sentences with errors, errors and errors per sentence of one split: the packed
    ``target`` sentences and the mask ``wrong`` of their misspelt positions."""
    n, n_errors = len(target), int(np.count_nonzero(wrong))
    sentence_of = np.repeat(np.arange(n), target.lengths)
    per_sentence = np.bincount(sentence_of[np.asarray(wrong, dtype=bool)], minlength=n)
    return {
        "sentences": n,
        "avg_length": round(len(target.codes) / max(n, 1), 2),
        "sentences_with_errors": int((per_sentence > 0).sum()),
        "errors": n_errors,
        "errors_per_sentence": round(n_errors / max(n, 1), 4),
    }


@lru_cache(maxsize=None)
def judge_pair(right: str, wrong: str) -> str:
    """:func:`csc_hf.confusion.pair_type`, cached per distinct pair (it renders glyphs)."""
    return pair_type(right, wrong)


def _pack_pairs(sources: Sequence[str], targets: Sequence[str]) -> tuple[PackedText, PackedText]:
    """Sources and targets packed, after checking they are non-empty, aligned strings."""
    _check_pairs(sources, targets)
    return pack(sources), pack(targets)


def _check_pairs(sources: Sequence[str], targets: Sequence[str], equal_lengths: bool = True) -> None:
    """Check that ``sources`` and ``targets`` are as many strings, each target non-empty and (with ``equal_lengths``)
    as long as its source."""
    if len(sources) != len(targets):
        raise ValueError(f"{len(sources)} sources but {len(targets)} targets")
    if not targets:
        raise ValueError("no sentence")
    for i, (source, target) in enumerate(zip(sources, targets)):
        if not isinstance(source, str) or not isinstance(target, str):
            raise ValueError(f"sentence {i}: source and target must be strings")
        if not target or (equal_lengths and len(source) != len(target)):
            raise ValueError(f"sentence {i}: source has {len(source)} characters, target {len(target)}")


def _pair_counts(source: PackedText, target: PackedText) -> Counter[tuple[str, str]]:
    wrong = source.codes != target.codes
    corruption = Corruption(source, np.where(wrong, 0, NO_ERROR).astype(np.int8))
    return Counter(pair_counts(target, corruption))


def error_pairs(sources: Sequence[str], targets: Sequence[str]) -> Counter[tuple[str, str]]:
    """How often each misspelling pair ``(right, wrong)`` occurs."""
    return _pair_counts(*_pack_pairs(sources, targets))


def dataset_stats(
    sources: Sequence[str],
    targets: Sequence[str],
    judge: Callable[[str, str], str] = judge_pair,
    t2s: Callable[[str], str] | None = None,
) -> dict[str, float | None]:
    """Table-9-style statistics of aligned ``sources`` / ``targets``.

    Error types come from ``judge(right, wrong)`` (default: character knowledge); ``*_pair_share`` counts distinct
    pairs, ``*_error_share`` error occurrences. ``traditional_share`` is the share of the targets' Han characters
    that ``t2s`` (a traditional-to-simplified converter) changes, ``None`` without a converter.
    """
    source, target = _pack_pairs(sources, targets)
    wrong = source.codes != target.codes
    pairs = _pair_counts(source, target)
    kinds = {pair: judge(*pair) for pair in pairs}
    by_pair, by_error = Counter(kinds.values()), Counter()
    for pair, count in pairs.items():
        by_error[kinds[pair]] += count
    n_errors = int(wrong.sum())
    return {
        **split_stats(target, wrong),
        "pairs": len(pairs),
        **{f"{t}_pair_share": _share(by_pair[t], len(pairs)) for t in ERROR_TYPES},
        **{f"{t}_error_share": _share(by_error[t], n_errors) for t in ERROR_TYPES},
        "traditional_share": None if t2s is None else _traditional_share(target.codes, t2s),
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


def context_overlap(
    sources: Sequence[str], targets: Sequence[str], train_targets: Sequence[str], n: int = 4
) -> dict[str, float | None]:
    """How much context a test set shares with the training sentences ``train_targets``.

    ``sentence_overlap``: the share of test targets that are training targets; ``ngram_overlap``: the share of the
    test target's character ``n``-grams that contain an error position and occur in the training targets.
    """
    if n < 1:
        raise ValueError(f"n-gram length {n} must be at least 1")
    source, target = _pack_pairs(sources, targets)
    train = pack(list(train_targets))
    train_hashes, train_ok = _ngram_hashes(train, n)
    known = np.unique(train_hashes[train_ok])
    hashes, _ = _ngram_hashes(target, n)
    errors = np.flatnonzero(source.codes != target.codes)
    sentence = np.searchsorted(target.offsets, errors, side="right") - 1
    starts = errors[:, None] - np.arange(n)[None, :]
    inside = (starts >= target.offsets[sentence][:, None]) & (starts + n <= target.offsets[sentence + 1][:, None])
    queries = hashes[starts[inside]]
    train_set = set(train_targets)
    return {
        "sentence_overlap": _share(sum(t in train_set for t in targets), len(targets)),
        "ngram_overlap": _share(int(np.isin(queries, known).sum()), len(queries)),
    }


# ---- loading any CSC data ----------------------------------------------------------------------------------------


def split_name(base: str, split: str) -> str:
    """How a split is named in tables: ``unseen_k`` for a ``test`` split, else ``probs/pe05``, ``train/validation``."""
    return base if split == "test" else f"{base}/{split}"


def read_jsonl(path: str | Path, equal_lengths: bool = True) -> Pairs:
    """Read a jsonl file of objects with ``source`` and ``target``; errors name the file and line. Each target must
    be non-empty and, with ``equal_lengths``, as long as its source."""
    sources, targets = [], []
    for number, row in iter_jsonl(path):
        source, target = (row.get("source"), row.get("target")) if isinstance(row, dict) else (None, None)
        if not isinstance(source, str) or not isinstance(target, str):
            raise ValueError(f"{path}, line {number}: expected an object with string 'source' and 'target'")
        _append_pair(sources, targets, source, target, f"{path}, line {number}", equal_lengths)
    return _nonempty(path, sources, targets)


def read_tsv(path: str | Path, equal_lengths: bool = True) -> Pairs:
    """Read a ``wrong<TAB>correct`` file (blank lines skipped); errors name the file and line. Each target must be
    non-empty and, with ``equal_lengths``, as long as its source."""
    sources, targets = [], []
    for number, line in enumerate(read_lines(path), 1):
        if not line.strip():
            continue
        fields_ = line.split("\t")
        if len(fields_) != 2:
            raise ValueError(f"{path}, line {number}: expected 'wrong<TAB>correct', got {len(fields_)} fields")
        _append_pair(sources, targets, *fields_, f"{path}, line {number}", equal_lengths)
    return _nonempty(path, sources, targets)


def _append_pair(
    sources: list[str], targets: list[str], source: str, target: str, where: str, equal_lengths: bool
) -> None:
    if not target or (equal_lengths and len(source) != len(target)):
        raise ValueError(f"{where}: source has {len(source)} characters, target {len(target)}")
    sources.append(source)
    targets.append(target)


def _nonempty(path: str | Path, sources: list[str], targets: list[str]) -> Pairs:
    if not targets:
        raise ValueError(f"{path}: no sentence pair")
    return sources, targets


def _read_file(path: Path, equal_lengths: bool = True) -> Pairs:
    if path.suffix in (".jsonl", ".json"):
        return read_jsonl(path, equal_lengths)
    return read_tsv(path, equal_lengths)


def pair_columns(name: str, data: datasets.Dataset, equal_lengths: bool = True) -> Pairs:
    """The ``source`` and ``target`` columns of a `datasets.Dataset`, checked."""
    missing = [c for c in ("source", "target") if c not in data.column_names]
    if missing:
        raise ValueError(f"{name}: no column {', '.join(missing)} (has {', '.join(data.column_names)})")
    sources, targets = data["source"], data["target"]
    try:
        _check_pairs(sources, targets, equal_lengths)
    except ValueError as err:
        raise ValueError(f"{name}: {err}") from None
    return list(sources), list(targets)


def load_pairs(
    spec: str, params: Mapping | None = None, cache_dir: str | None = None, equal_lengths: bool = True
) -> dict[str, Pairs]:
    """``(sources, targets)`` of each split of ``spec``, named as in tables.

    ``spec``: a ``wrong<TAB>correct`` TSV, a ``.jsonl`` with ``source``/``target``, an exported folder (every
    config) or ``FOLDER:CONFIG``, a `datasets` dataset with ``source``/``target`` columns (a folder that
    ``save_to_disk`` wrote, or ``datasets:PATH``: any name ``datasets.load_dataset`` takes), or a csc_bench config
    built with the benchmark parameters ``params``. Each target must be non-empty and, with ``equal_lengths``
    (the default: every statistic compares aligned characters), as long as its source.
    """
    from .benchmark import CONFIGS, load_dataset

    path = Path(spec)
    if path.is_file():
        return {spec: _read_file(path, equal_lengths)}
    if spec.startswith("datasets:") or is_saved_dataset(spec):
        data = open_dataset(spec.removeprefix("datasets:"))
        splits = data.items() if isinstance(data, datasets.DatasetDict) else [("test", data)]
        return {(name := split_name(spec, split)): pair_columns(name, ds, equal_lengths) for split, ds in splits}
    folder, _, config = spec.rpartition(":")
    if folder and Path(folder).is_dir():
        configs = [config]
    elif path.is_dir():
        folder, configs = spec, datasets.get_dataset_config_names(spec)
    elif spec in CONFIGS:
        data = load_dataset("csc_bench", spec, cache_dir=cache_dir, **(params or {}))
        return {(name := split_name(spec, split)): pair_columns(name, ds, equal_lengths) for split, ds in data.items()}
    else:
        raise FileNotFoundError(
            f"{spec}: not a file, a folder, FOLDER:CONFIG or a csc_bench config ({', '.join(CONFIGS)})"
        )
    result = {}
    for config in configs:
        for split, ds in load_dataset(folder, config).items():
            name = split_name(f"{folder}:{config}", split)
            result[name] = pair_columns(name, ds, equal_lengths)
    return result


def training_part(splits: Mapping[str, Pairs]) -> Pairs:
    """The training sentences of loaded data: its ``train`` splits if it has some, else all of it."""
    train = [pairs for name, pairs in splits.items() if name.endswith("/train")] or list(splits.values())
    return [s for src, _ in train for s in src], [t for _, tgt in train for t in tgt]


def _opencc_t2s() -> Callable[[str], str] | None:
    try:
        return t2s_converter("traditional_share")
    except ImportError as err:
        warnings.warn(str(err), stacklevel=3)
        return None


def load_confusion(spec: str, params: Mapping | None = None) -> ConfusionSet:
    """A confusion set file (any layout of :meth:`ConfusionSet.load`), or a named part of the benchmark's S."""
    from .benchmark import BenchParams, plan_for

    if spec in CONFUSION_SUBSETS and not Path(spec).exists():
        return plan_for(BenchParams(**(params or {}))).subset(spec)
    return ConfusionSet.load(spec)


def analyze(
    data: Sequence[str],
    train: Sequence[str] = (),
    confusion: Sequence[str] = (),
    ngram: int = 4,
    params: Mapping | None = None,
    cache_dir: str | None = None,
) -> dict[str, dict]:
    """Statistics of every split of ``data``; with ``train`` / ``confusion``, their coverage and context overlap.

    Returns ``{"statistics": {split: stats}, "coverage": {split: {reference: coverage and overlap}}}``.
    """
    splits = {name: pairs for spec in data for name, pairs in load_pairs(spec, params, cache_dir).items()}
    t2s = _opencc_t2s()
    result: dict[str, dict] = {"statistics": {name: dataset_stats(*pairs, t2s=t2s) for name, pairs in splits.items()}}
    references = {}
    for spec in train:
        train_sources, train_targets = training_part(load_pairs(spec, params, cache_dir))
        references[spec] = (set(error_pairs(train_sources, train_targets)), train_targets)
    for spec in confusion:
        references[spec] = ({(right, wrong) for right, wrong, _ in load_confusion(spec, params).pairs()}, None)
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
