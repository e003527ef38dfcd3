"""The paper's analyses as pure functions, and the thin shells that load their inputs.

Datasets (Table 9 and Section 5.7): :func:`dataset_stats` (sentences, errors, misspelling pairs and their type judged
by character knowledge, traditional characters), :func:`coverage` (how much of a test set's errors a training set or
a confusion set covers) and :func:`context_overlap` (test sentences and error contexts that occur in training).
:func:`analyze` runs them on any CSC data that :func:`load_pairs` reads.

Results of ``csc-bench run`` (``results.json``): :func:`analyze_results` gives the models x test sets tables, the
ranking of fusion strategies and information sources, F1 against ``P_e``, the seen/unseen gaps, the metric
stability, and the paper's four conclusions, each with the comparisons that decide its verdict.
"""

from __future__ import annotations

import json
import warnings
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import datasets
import numpy as np

from .benchmark import BenchParams, load_dataset, plan_for
from .benchmark.configs import CONFIGS
from .benchmark.plan import read_pair_file
from .chars.pinyin import is_han
from .confusion import ConfusionSet, pair_type
from .corpus import read_lines, read_text, t2s_converter
from .corruption import ERROR_TYPES, NO_ERROR, Corruption, PackedText, pack, pair_counts, unpack

Pairs = tuple[list[str], list[str]]  # (sources, targets)
METRICS = ("char_cor_f1", "sent_cor_f1")  # the character- and sentence-level correction F1
PRIMARY = "char_cor_f1"  # the metric that decides verdicts (the paper's advice: the more stable one)
CONFUSION_SUBSETS = ("S", "S_train", "S_unseen_k", "S_unseen_v", "S_seen", "S_train_phonetic", "S_train_graphic")
_HASH_MULTIPLIER = np.uint64(0x100000001B3)  # FNV-64 prime: n-gram hashes as a polynomial in it


# ---- dataset statistics ------------------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def judge_pair(right: str, wrong: str) -> str:
    """:func:`csc_hf.confusion.pair_type`, cached per distinct pair (it renders glyphs)."""
    return pair_type(right, wrong)


def _pack_pairs(sources: Sequence[str], targets: Sequence[str]) -> tuple[PackedText, PackedText]:
    """Sources and targets packed, after checking they are non-empty, aligned strings."""
    if len(sources) != len(targets):
        raise ValueError(f"{len(sources)} sources but {len(targets)} targets")
    if not targets:
        raise ValueError("no sentence")
    for i, (source, target) in enumerate(zip(sources, targets)):
        if not isinstance(source, str) or not isinstance(target, str):
            raise ValueError(f"sentence {i}: source and target must be strings")
        if not target or len(source) != len(target):
            raise ValueError(f"sentence {i}: source has {len(source)} characters, target {len(target)}")
    return pack(sources), pack(targets)


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
    per_sentence = np.add.reduceat(wrong.astype(np.int64), target.offsets[:-1])
    pairs = _pair_counts(source, target)
    kinds = {pair: judge(*pair) for pair in pairs}
    by_pair, by_error = Counter(kinds.values()), Counter()
    for pair, count in pairs.items():
        by_error[kinds[pair]] += count
    n, n_errors = len(target), int(wrong.sum())
    return {
        "sentences": n,
        "avg_length": round(len(target.codes) / n, 2),
        "sentences_with_errors": int((per_sentence > 0).sum()),
        "errors": n_errors,
        "errors_per_sentence": round(n_errors / n, 4),
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


def read_jsonl(path: str | Path) -> Pairs:
    """Read a jsonl file of objects with ``source`` and ``target``; errors name the file and line."""
    sources, targets = [], []
    for number, line in enumerate(read_lines(path), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}, line {number}: invalid JSON ({err.msg})") from None
        source, target = (row.get("source"), row.get("target")) if isinstance(row, dict) else (None, None)
        if not isinstance(source, str) or not isinstance(target, str):
            raise ValueError(f"{path}, line {number}: expected an object with string 'source' and 'target'")
        if not target or len(source) != len(target):
            raise ValueError(f"{path}, line {number}: source has {len(source)} characters, target {len(target)}")
        sources.append(source)
        targets.append(target)
    if not targets:
        raise ValueError(f"{path}: no sentence pair")
    return sources, targets


def _read_file(path: Path) -> Pairs:
    if path.suffix in (".jsonl", ".json"):
        return read_jsonl(path)
    target, source, _ = read_pair_file(path)
    return unpack(source), unpack(target)


def _columns(name: str, data: datasets.Dataset) -> Pairs:
    """The ``source`` and ``target`` columns of a `datasets.Dataset`, checked."""
    missing = [c for c in ("source", "target") if c not in data.column_names]
    if missing:
        raise ValueError(f"{name}: no column {', '.join(missing)} (has {', '.join(data.column_names)})")
    sources, targets = data["source"], data["target"]
    try:
        _pack_pairs(sources, targets)
    except ValueError as err:
        raise ValueError(f"{name}: {err}") from None
    return list(sources), list(targets)


def load_pairs(spec: str, params: Mapping | None = None, cache_dir: str | None = None) -> dict[str, Pairs]:
    """``(sources, targets)`` of each split of ``spec``, named as in tables.

    ``spec``: a ``wrong<TAB>correct`` TSV, a ``.jsonl`` with ``source``/``target``, an exported folder (every
    config) or ``FOLDER:CONFIG``, or a csc_bench config built with the benchmark parameters ``params``.
    """
    path = Path(spec)
    if path.is_file():
        return {spec: _read_file(path)}
    folder, _, config = spec.rpartition(":")
    if folder and Path(folder).is_dir():
        configs = [config]
    elif path.is_dir():
        folder, configs = spec, datasets.get_dataset_config_names(spec)
    elif spec in CONFIGS:
        data = load_dataset("csc_bench", spec, cache_dir=cache_dir, **(params or {}))
        return {split_name(spec, split): _columns(split_name(spec, split), ds) for split, ds in data.items()}
    else:
        raise FileNotFoundError(
            f"{spec}: not a file, a folder, FOLDER:CONFIG or a csc_bench config ({', '.join(CONFIGS)})"
        )
    result = {}
    for config in configs:
        for split, ds in load_dataset(folder, config).items():
            name = split_name(f"{folder}:{config}", split)
            result[name] = _columns(name, ds)
    return result


def _training_part(splits: Mapping[str, Pairs]) -> Pairs:
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
        train_sources, train_targets = _training_part(load_pairs(spec, params, cache_dir))
        references[spec] = (set(error_pairs(train_sources, train_targets)), train_targets)
    for spec in confusion:
        references[spec] = ({(right, wrong) for right, wrong, _ in load_confusion(spec, params).pairs()}, None)
    if references:
        result["coverage"] = {}
        for name, (sources, targets) in splits.items():
            test_pairs = error_pairs(sources, targets)
            result["coverage"][name] = {
                ref: {**coverage(test_pairs, pairs),
                      **(context_overlap(sources, targets, texts, ngram) if texts is not None else {})}
                for ref, (pairs, texts) in references.items()
            }
    return result


# ---- results of a run --------------------------------------------------------------------------------------------


def load_results(run_dir: str | Path) -> dict:
    """Read and check ``RUN_DIR/results.json`` (see ``csc-bench run``)."""
    path = Path(run_dir) / "results.json"
    text = read_text(path)
    try:
        results = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}, line {err.lineno}: invalid JSON ({err.msg})") from None
    records = results.get("records") if isinstance(results, dict) else None
    if not records or not isinstance(records, list):
        raise ValueError(f"{path}: expected an object with a non-empty 'records' list")
    seen = set()
    for i, record in enumerate(records):
        fields = ("model", "seed", "config", "split", "scores")
        missing = [k for k in fields if not isinstance(record, dict) or k not in record]
        if missing:
            raise ValueError(f"{path}: record {i} lacks {', '.join(missing)}")
        if not isinstance(record["scores"], dict):
            raise ValueError(f"{path}: record {i}: 'scores' is not an object")
        absent = [m for m in METRICS if not isinstance(record["scores"].get(m), (int, float))]
        if absent:
            raise ValueError(f"{path}: record {i} has no score {', '.join(absent)}")
        key = (record["model"], record["seed"], record["config"], record["split"])
        if key in seen:
            raise ValueError(f"{path}: record {i} repeats model {key[0]}, seed {key[1]} on {split_name(*key[2:])}")
        seen.add(key)
    return results


@dataclass(frozen=True)
class Cell:
    """One model on one test set: its score per seed, the bootstrap interval widths, and the interval that judges
    differences (the union of the seeds' bootstrap intervals; ``None`` when the run has no intervals)."""

    values: tuple[float, ...]
    widths: tuple[float, ...]
    interval: tuple[float, float] | None

    @property
    def mean(self) -> float:
        return float(np.mean(self.values))

    @property
    def std(self) -> float | None:
        """The standard deviation across seeds (``None`` with one seed)."""
        return float(np.std(self.values, ddof=1)) if len(self.values) > 1 else None


def cells(records: Iterable[Mapping], metric: str) -> dict[tuple[str, str], Cell]:
    """``{(model, test set): Cell}`` of ``metric`` over the records' seeds."""
    groups: dict[tuple[str, str], list[Mapping]] = defaultdict(list)
    for record in records:
        groups[record["model"], split_name(record["config"], record["split"])].append(record["scores"])
    result = {}
    for key, scores in groups.items():
        lows = [s.get(f"{metric}_ci_low") for s in scores]
        highs = [s.get(f"{metric}_ci_high") for s in scores]
        complete = None not in lows and None not in highs
        result[key] = Cell(
            tuple(float(s[metric]) for s in scores),
            tuple(h - lo for lo, h in zip(lows, highs)) if complete else (),
            (min(lows), max(highs)) if complete else None,
        )
    return result


def model_family(name: str) -> tuple[str, tuple[str, ...]]:
    """A model's fusion and information sources (:func:`csc_hf.modeling.variant_family`); ``("other", ())`` for a
    model that is not a variant of ``csc_hf.modeling.VARIANTS``."""
    from .modeling import VARIANTS, variant_family

    return variant_family(name) if name in VARIANTS else ("other", ())


def _phonetic_and_graphic(sources: Sequence[str]) -> bool:
    return "pinyin" in sources and ("stroke" in sources or "glyph" in sources)


INFORMATION_GROUPS: dict[str, Callable[[Sequence[str]], bool]] = {
    "none": lambda s: not s,
    "+pinyin": lambda s: "pinyin" in s,
    "+stroke": lambda s: "stroke" in s,
    "+glyph": lambda s: "glyph" in s,
    "phonetic+graphic": _phonetic_and_graphic,
}
"""Information-source groups of the ranking (a model counts in every group it matches)."""


@dataclass(frozen=True)
class Comparison:
    """One piece of evidence for a conclusion: the claim expects ``a`` above ``b``.

    ``outcome``: ``expected`` (``a`` above ``b`` beyond the intervals, or by sign when there are none), ``opposite``
    (``b`` above ``a`` likewise) or ``none`` (the intervals overlap or the values are equal). ``paired``, when the
    run saved both models' predictions: the mean paired difference ``a - b`` over seeds and the union of the seeds'
    paired bootstrap intervals of it; it then decides the outcome (zero outside the interval)."""

    label: str
    a: str
    b: str
    a_value: float
    b_value: float
    a_interval: tuple[float, float] | None
    b_interval: tuple[float, float] | None
    outcome: str
    paired: tuple[float, tuple[float, float]] | None = None


Paired = dict[tuple[str, str, str, str], list[Mapping]]
"""``{(model, baseline, test set, metric): [the paired comparison of each seed]}`` from ``results.json``'s
``paired`` list."""


def paired_index(entries: Iterable[Mapping]) -> Paired:
    """Index ``results.json``'s paired comparisons (see ``csc_hf.study.paired_comparisons``)."""
    index: Paired = defaultdict(list)
    for e in entries:
        index[e["model"], e["baseline"], split_name(e["config"], e["split"]), e["metric"]].append(e)
    return dict(index)


def paired_difference(entries: Sequence[Mapping]) -> tuple[float, tuple[float, float]]:
    """The mean paired difference over seeds and the union of the seeds' paired intervals."""
    return float(np.mean([e["delta"] for e in entries])), (min(e["ci_low"] for e in entries),
                                                           max(e["ci_high"] for e in entries))


def compare_cells(
    label: str, a: str, a_cell: Cell, b: str, b_cell: Cell, paired: Sequence[Mapping] | None = None
) -> Comparison:
    """Judge ``a_cell`` > ``b_cell``: by the paired interval of the difference when every seed of both cells has
    one (``paired``: one comparison per seed), else a difference counts only when the intervals do not overlap."""
    ia, ib = a_cell.interval, b_cell.interval
    outcome, difference = "none", None
    if paired and len(paired) == len(a_cell.values) == len(b_cell.values):
        difference = paired_difference(paired)
        low, high = difference[1]
        outcome = "expected" if low > 0 else "opposite" if high < 0 else "none"
    elif ia is not None and ib is not None:
        outcome = "expected" if ia[0] > ib[1] else "opposite" if ib[0] > ia[1] else "none"
    return Comparison(label, a, b, a_cell.mean, b_cell.mean, ia, ib, outcome, difference)


def compare_values(label: str, a: str, a_value: float, b: str, b_value: float) -> Comparison:
    """Judge ``a_value`` > ``b_value`` by sign."""
    outcome = "expected" if a_value > b_value else "opposite" if b_value > a_value else "none"
    return Comparison(label, a, b, a_value, b_value, None, None, outcome)


VERDICT_RULE = (
    "supported when at least half of the comparisons go the expected way and more than go the opposite way; "
    "not supported when more go the opposite way than the expected way; inconclusive otherwise (including when "
    "the run lacks the models or test sets to compare)"
)


def verdict(comparisons: Sequence[Comparison]) -> str:
    """``supported`` / ``not supported`` / ``inconclusive`` by :data:`VERDICT_RULE`."""
    expected = sum(c.outcome == "expected" for c in comparisons)
    opposite = sum(c.outcome == "opposite" for c in comparisons)
    if comparisons and 2 * expected >= len(comparisons) and expected > opposite:
        return "supported"
    return "not supported" if opposite > expected else "inconclusive"


CLAIMS = {
    1: "Fusing phonetic and graphic information helps.",
    2: "Models are sensitive to the error distribution of the test set.",
    3: "Whether the errors and contexts have been seen matters.",
    4: "The character-level metric is more stable than the sentence-level metric.",
}
SEEN_UNSEEN = (("seen", "unseen_k"), ("seen", "unseen_v"), ("scontext", "test"))
"""The seen/unseen contrasts (``seen`` falls back on ``test`` when the run has no ``seen`` set)."""


def _test_sets(records: Iterable[Mapping]) -> list[str]:
    """The records' test sets in the order of the config table (then of appearance)."""
    rank = {name: i for i, name in enumerate(CONFIGS)}
    names = dict.fromkeys(split_name(r["config"], r["split"]) for r in records)
    return sorted(names, key=lambda name: rank.get(name.split("/")[0], len(rank)))


def analyze_results(results: Mapping) -> dict:
    """Every analysis of a run's ``results.json`` (see :func:`load_results`), as plain data."""
    records = results["records"]
    table = {metric: cells(records, metric) for metric in METRICS}
    models = list(dict.fromkeys(r["model"] for r in records))
    test_sets = _test_sets(records)
    clean = {split_name(r["config"], r["split"]) for r in records if r["scores"].get("n_errors", 1) == 0}
    with_errors = [t for t in test_sets if t not in clean]
    common = [t for t in with_errors if all((m, t) in table[PRIMARY] for m in models)]
    families = {m: model_family(m) for m in models}
    analysis = {
        "preset": results.get("preset"),
        "models": models,
        "seeds": sorted({r["seed"] for r in records}),
        "test_sets": test_sets,
        "error_test_sets": with_errors,
        "common_test_sets": common,
        "cells": table,
        "paired": paired_index(results.get("paired", [])),
        "families": families,
        "ranking": _rankings(table, families, common),
        "pe_series": _pe_series(records),
        "seen_unseen": _seen_unseen_sets(test_sets),
        "pair_recall": _pair_recall(records),
        "stability": _stability(table, with_errors),
    }
    analysis["conclusions"] = _conclusions(analysis)
    return analysis


def _mean_over(table: Mapping[tuple[str, str], Cell], model: str, test_sets: Sequence[str]) -> float:
    return float(np.mean([table[model, t].mean for t in test_sets]))


def _rankings(
    table: Mapping[str, Mapping], families: Mapping[str, tuple[str, tuple[str, ...]]], common: Sequence[str]
) -> dict[str, list[dict]]:
    """Fusion strategies and information sources ranked by the mean F1 of their models over ``common`` test sets."""
    if not common:
        return {"fusion": [], "information": []}
    models = list(families)
    fusions = dict.fromkeys(fusion for fusion, _ in families.values())
    groups = {
        "fusion": {fusion: [m for m in models if families[m][0] == fusion] for fusion in fusions},
        "information": {group: [m for m in models if families[m][0] != "seq2seq" and test(families[m][1])]
                        for group, test in INFORMATION_GROUPS.items()},
    }
    rankings = {}
    for kind, members in groups.items():
        rows = []
        for group, ms in members.items():
            if not ms:
                continue
            means = {metric: {m: _mean_over(table[metric], m, common) for m in ms} for metric in METRICS}
            best = max(ms, key=means[PRIMARY].get)
            rows.append({"group": group, "models": ms, "best": best,
                         **{metric: float(np.mean(list(means[metric].values()))) for metric in METRICS}})
        rankings[kind] = sorted(rows, key=lambda row: -row[PRIMARY])
    return rankings


def _pe_series(records: Iterable[Mapping]) -> dict[str, float]:
    """``{test set: P_e}`` of the ``probs`` splits whose ``P_e`` is known, by increasing ``P_e``."""
    points = {split_name(r["config"], r["split"]): float(r["error_prob"]) for r in records
              if r["config"] == "probs" and r.get("error_prob") is not None}
    return dict(sorted(points.items(), key=lambda kv: kv[1]))


def _seen_unseen_sets(test_sets: Sequence[str]) -> list[tuple[str, str]]:
    """The seen/unseen contrasts that the run's test sets allow."""
    contrasts = []
    for seen, unseen in SEEN_UNSEEN:
        if seen == "seen" and seen not in test_sets:
            seen = "test"
        if seen in test_sets and unseen in test_sets:
            contrasts.append((seen, unseen))
    return contrasts


def _pair_recall(records: Iterable[Mapping]) -> dict[tuple[str, str], dict[str, float]]:
    """Mean character-level correction recall on seen and unseen pairs within each test set, where scored."""
    keys = ("seen_char_cor_r", "unseen_char_cor_r", "seen_n_errors", "unseen_n_errors")
    groups: dict[tuple[str, str], list[Mapping]] = defaultdict(list)
    for r in records:
        if all(k in r["scores"] for k in keys):
            groups[r["model"], split_name(r["config"], r["split"])].append(r["scores"])
    return {key: {k: float(np.mean([s[k] for s in scores])) for k in keys} for key, scores in groups.items()}


def _stability(table: Mapping[str, Mapping[tuple[str, str], Cell]], test_sets: Sequence[str]) -> dict[str, dict]:
    """Per test set (with errors), each metric's spread relative to its score: the mean bootstrap interval width
    over the score, and the mean std across seeds over the mean score. Relative, because a lower score has a
    narrower interval anyway; cells whose score is 0 (nothing right: no spread to speak of) are left out."""
    result = {}
    for t in test_sets:
        row = {}
        for metric in METRICS:
            group = [c for (_, test), c in table[metric].items() if test == t and c.mean > 0]
            widths = [w / c.mean for c in group for w in c.widths]
            stds = [c.std / c.mean for c in group if c.std is not None]
            row[f"{metric}_rel_ci_width"] = float(np.mean(widths)) if widths else None
            row[f"{metric}_rel_seed_std"] = float(np.mean(stds)) if stds else None
        result[t] = row
    return result


Evidence = tuple[str, list[tuple[str, Comparison]]]  # (what is compared, [(metric, comparison)])


def _fusion_evidence(analysis: Mapping) -> Evidence:
    """1: the best model fusing phonetic and graphic information against BERT alone, on each test set with errors."""
    table, models, families = analysis["cells"], analysis["models"], analysis["families"]
    baseline = next((m for m in models if m == "bert"), next((m for m in models if families[m][0] == "none"), None))
    fused = [m for m in models if _phonetic_and_graphic(families[m][1])]
    shared = [t for t in analysis["error_test_sets"] if all((m, t) in table[PRIMARY] for m in [baseline, *fused])]
    if not (baseline and fused and shared):
        return "needs a BERT-only model and a model fusing phonetic and graphic information on shared test sets", []
    best = max(fused, key=lambda m: _mean_over(table[PRIMARY], m, shared))
    paired = analysis["paired"]
    return f"{best} (the best model fusing phonetic and graphic information) against {baseline}", [
        (metric, compare_cells(f"{t}, {metric}", best, table[metric][best, t], baseline, table[metric][baseline, t],
                               paired.get((best, baseline, t, metric))))
        for t in shared for metric in METRICS]


def _pe_evidence(analysis: Mapping) -> Evidence:
    """2: per model, the highest against the lowest F1 over the P_e series."""
    series, found = analysis["pe_series"], []
    if len(series) < 2:
        return "needs the probs series with at least two known P_e", []
    for model in analysis["models"]:
        for metric in METRICS:
            points = {t: analysis["cells"][metric][model, t] for t in series if (model, t) in analysis["cells"][metric]}
            if len(points) >= 2:
                high, low = max(points, key=lambda t: points[t].mean), min(points, key=lambda t: points[t].mean)
                found.append((metric, compare_cells(f"{model}, {metric}", high, points[high], low, points[low])))
    pes = ", ".join(f"{pe:g}" for pe in series.values())
    return f"per model, the highest against the lowest F1 over the P_e series {pes}", found


def _seen_evidence(analysis: Mapping) -> Evidence:
    """3: per model, seen against unseen errors and seen against unseen contexts."""
    table, contrasts, found = analysis["cells"], analysis["seen_unseen"], []
    if not contrasts:
        return "needs seen (or test) with unseen_k / unseen_v, or scontext with test", []
    for seen, unseen in contrasts:
        for model in analysis["models"]:
            for metric in METRICS:
                if (model, seen) in table[metric] and (model, unseen) in table[metric]:
                    found.append((metric, compare_cells(f"{model}, {metric}", seen, table[metric][model, seen],
                                                        unseen, table[metric][model, unseen])))
    return "per model: " + "; ".join(f"{a} against {b}" for a, b in contrasts), found


def _stability_evidence(analysis: Mapping) -> Evidence:
    """4: per test set with errors, the sentence-level against the character-level spread (by sign)."""
    found = []
    for t, row in analysis["stability"].items():
        for spread in ("rel_ci_width", "rel_seed_std"):
            sent, char = row[f"sent_cor_f1_{spread}"], row[f"char_cor_f1_{spread}"]
            if sent is not None and char is not None:
                found.append((PRIMARY, compare_values(f"{t}, {spread}", "sent_cor_f1", sent, "char_cor_f1", char)))
    if not found:
        return "needs non-zero scores with bootstrap intervals (score(..., bootstrap=N)) or several seeds", []
    return ("per test set, the mean bootstrap interval width and (with several seeds) the mean std across seeds, each "
            "relative to the score: sentence level against character level"), found


def _conclusions(analysis: Mapping) -> dict[int, dict]:
    """Each claim with its basis, the comparisons that decide it (character level, or the metrics' spread for 4),
    the sentence-level comparisons shown for reference, and the verdict."""
    result = {}
    for number, evidence in zip(CLAIMS, (_fusion_evidence, _pe_evidence, _seen_evidence, _stability_evidence)):
        basis, found = evidence(analysis)
        deciding = [c for metric, c in found if metric == PRIMARY]
        result[number] = {"claim": CLAIMS[number], "basis": basis, "comparisons": deciding,
                          "reference": [c for metric, c in found if metric != PRIMARY], "verdict": verdict(deciding)}
    return result
