"""Any CSC data by spec, read by one parser: a ``wrong<TAB>correct`` TSV or a ``.jsonl`` of ``source``/``target``
(``csc_hf.files``), a `datasets` dataset (a ``save_to_disk`` folder or ``datasets:PATH``), an exported benchmark
folder (``FOLDER``: every config; ``FOLDER:CONFIG``; ``FOLDER:CONFIG/SPLIT``) or a csc_bench config built with the
benchmark parameters (``test``, ``probs/pe05``, ``train/validation``). Splits are named as in every table
(:func:`csc_hf.benchmark.configs.split_name`).

:func:`read_data` gives every split a spec names (``csc-bench analyze``, ``train_files``), :func:`read_split` the one
split it must name (``csc-bench score``'s references); :func:`load_confusion` reads a confusion set file or a named part
of the benchmark's S; :func:`analyze_data` is ``csc-bench analyze``: the statistics of :mod:`csc_hf.dataset_stats` over
any data.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets

from .benchmark import CONFIGS, BenchParams, columns, load_dataset, plan_for
from .benchmark.configs import CONFUSION_SUBSETS, split_name, splits_of
from .benchmark.export import stale_export
from .confusion import ConfusionSet
from .corpus import is_saved_dataset, open_dataset, t2s_converter
from .dataset_stats import analyze
from .edits import SUBSTITUTION
from .files import Sentences, check_sentences, read_sentence_file
from .logging import get_logger

logger = get_logger(__name__)

DATA_KINDS = (
    "a wrong<TAB>correct .tsv, a .jsonl with source/target, an exported benchmark FOLDER or FOLDER:CONFIG, "
    "a save_to_disk folder or datasets:PATH with source/target columns"
)
"""What a data spec may be besides a csc_bench config, in words (for help texts)."""


def is_data_spec(spec: str) -> bool:
    """Whether ``spec`` names data other than a csc_bench config: an existing file or folder, ``FOLDER:CONFIG`` of an
    existing folder, or ``datasets:PATH``."""
    folder = spec.rpartition(":")[0]
    return Path(spec).exists() or spec.startswith("datasets:") or bool(folder) and Path(folder).is_dir()


@dataclass(frozen=True)
class DataSplit:
    """One split of CSC data: its table name, its sentence pairs (checked), its rows when the data is a `datasets`
    dataset (ids, typed errors), and the csc_bench config it comes from."""

    name: str
    sources: list[str]
    targets: list[str]
    rows: Any = None  # a datasets.Dataset, or None for a file
    bench_config: str | None = None

    @property
    def sentences(self) -> Sentences:
        return self.sources, self.targets


Candidate = tuple[str, Callable[[], Any]]  # (split name, a loader of its Dataset or Sentences)


def _candidates(
    spec: str, params: Mapping, cache_dir: str | None, equal_lengths: bool
) -> tuple[dict[str, Candidate], str, str | None]:
    """What ``spec`` names before any data is read or built: ``{table name: (split, loader)}``, the split the spec
    chooses (``""`` when it chooses none) and the csc_bench config it is (or None)."""
    path = Path(spec)
    if path.is_file():
        return {spec: ("", lambda: read_sentence_file(path, equal_lengths))}, "", None
    if spec.startswith("datasets:") or is_saved_dataset(spec):
        data = open_dataset(spec.removeprefix("datasets:"))
        splits = data.items() if isinstance(data, datasets.DatasetDict) else [("test", data)]
        return {split_name(spec, split): (split, lambda ds=ds: ds) for split, ds in splits}, "", None
    folder, _, config = spec.rpartition(":")
    config, _, chosen = config.partition("/")
    if folder and Path(folder).is_dir():
        configs = [config]
    elif (bench := spec.partition("/")[0]) in CONFIGS and not path.exists():
        candidates = {
            split_name(bench, s.split): (
                s.split,
                lambda s=s: load_dataset("csc_bench", bench, split=s.split, cache_dir=cache_dir, **params),
            )
            for s in splits_of(bench, BenchParams(**params).probs)
        }
        return candidates, spec.partition("/")[2], bench
    elif path.is_dir():
        folder, configs, chosen = spec, datasets.get_dataset_config_names(spec), ""
    else:
        raise FileNotFoundError(
            f"{spec}: not a file, a folder, FOLDER:CONFIG or a csc_bench config ({', '.join(CONFIGS)})"
        )
    for problem in stale_export(folder):
        logger.warning(
            "%s is a csc-bench export that may differ from what csc_hf generates now: %s "
            "(csc-bench export %s --check compares it)",
            folder,
            problem,
            folder,
        )
    candidates = {}
    for config in configs:
        for split, ds in load_dataset(folder, config).items():
            candidates[split_name(f"{folder}:{config}", split)] = (split, lambda ds=ds: ds)
    return candidates, chosen, None


def spec_paths(spec: str) -> list[Path]:
    """The local files and folders that the data spec ``spec`` reads (none for a csc_bench config), so that an output
    can be checked against them (:func:`csc_hf.files.check_output`)."""
    if spec.startswith("datasets:"):
        return [Path(spec.removeprefix("datasets:"))]
    if Path(spec).exists():
        return [Path(spec)]
    folder = spec.rpartition(":")[0]
    return [Path(folder)] if folder and Path(folder).is_dir() else []


def _split(name: str, data: Any, bench_config: str | None, equal_lengths: bool) -> DataSplit:
    """A loaded split (a Dataset or Sentences) as a :class:`DataSplit`, its pairs checked."""
    if isinstance(data, tuple):
        return DataSplit(name, *data)
    missing = [c for c in ("source", "target") if c not in data.column_names]
    if missing:
        raise ValueError(f"{name}: no column {', '.join(missing)} (has {', '.join(data.column_names)})")
    sources, targets = columns(data, "source", "target")
    try:
        check_sentences(sources, targets, equal_lengths)
    except ValueError as err:
        raise ValueError(f"{name}: {err}") from None
    return DataSplit(name, sources, targets, data, bench_config)


def read_data(
    spec: str, params: Mapping | None = None, cache_dir: str | None = None, equal_lengths: bool = True
) -> dict[str, DataSplit]:
    """Every split ``spec`` names (see the module docstring), by table name; a spec that chooses a split
    (``FOLDER:CONFIG/SPLIT``, ``probs/pe05``) gives that one. Each target must be non-empty and, with
    ``equal_lengths`` (the default: every statistic and score compares aligned characters), as long as its source."""
    candidates, chosen, bench = _candidates(spec, dict(params or {}), cache_dir, equal_lengths)
    if chosen:
        matches = {name: c for name, c in candidates.items() if name == spec or c[0] == chosen}
        if not matches:
            raise ValueError(f"{spec}: no split {chosen}; it has {', '.join(candidates) or 'none'}")
        candidates = matches
    return {name: _split(name, load(), bench, equal_lengths) for name, (_, load) in candidates.items()}


def read_split(
    spec: str,
    params: Mapping | None = None,
    cache_dir: str | None = None,
    what: str = "data",
    equal_lengths: bool = True,
) -> DataSplit:
    """The one split that ``spec`` names: a spec of several splits (or none) is an error that lists them, raised
    before a csc_bench config is built. ``equal_lengths``: as for :func:`read_data`."""
    candidates, chosen, bench = _candidates(spec, dict(params or {}), cache_dir, equal_lengths)
    matches = [name for name, (split, _) in candidates.items() if name == spec or split == chosen]
    if not chosen and len(candidates) == 1:
        matches = list(candidates)
    if len(matches) != 1:
        found = ", ".join(candidates) or "none"
        raise ValueError(f"{what} {spec} must be one split; it has {len(candidates)}: {found}. Give one of them as REF")
    return _split(matches[0], candidates[matches[0]][1](), bench, equal_lengths)


def error_metadata(rows: Any) -> list[dict] | None:
    """The typed errors that rows carry, as :func:`csc_hf.score`'s ``metadata`` (each error's position, type name
    and, where the rows have one, edit kind: the kinds serve ``alignment=True``): csc_bench rows and their exports,
    whose ``errors`` name their types and kinds as ``ClassLabel`` features. None for rows without such errors (or
    no rows: None)."""
    feature = rows.features.get("errors") if rows is not None else None
    try:
        types = feature.feature["type"].names
    except (AttributeError, KeyError, TypeError):
        return None
    kinds = getattr(feature.feature.get("kind"), "names", None)
    return [
        {
            "errors": [
                {"position": e["position"], "type": types[e["type"]], **({"kind": kinds[e["kind"]]} if kinds else {})}
                for e in errors
            ]
        }
        for errors in columns(rows, "errors")[0]
    ]


def needs_alignment(
    sources: Sequence[str],
    targets: Sequence[str],
    metadata: Sequence[Mapping] | None = None,
    bench_config: str | None = None,
) -> bool:
    """Whether CSC data holds missing or redundant characters, and so is scored by edit alignment
    (``csc_hf.score(..., alignment=True)``): a csc_bench config whose errors change lengths, rows whose errors name
    such a kind, or a pair of unequal lengths."""
    if bench_config is not None and CONFIGS[bench_config].changes_length:
        return True
    if any(e.get("kind", SUBSTITUTION) != SUBSTITUTION for row in metadata or () for e in row["errors"]):
        return True
    return any(len(s) != len(t) for s, t in zip(sources, targets))


def training_sentences(splits: Mapping[str, DataSplit]) -> Sentences:
    """The training sentences of read data: its ``train`` splits if it has some, else all of it."""
    return _joined(splits, "train")


def validation_sentences(splits: Mapping[str, DataSplit]) -> Sentences:
    """The validation sentences of read data: its ``validation`` splits if it has some, else all of it."""
    return _joined(splits, "validation")


def _joined(splits: Mapping[str, DataSplit], split: str) -> Sentences:
    chosen = [s for name, s in splits.items() if name.endswith(f"/{split}")] or list(splits.values())
    return [x for s in chosen for x in s.sources], [t for s in chosen for t in s.targets]


def load_confusion(spec: str, params: Mapping | None = None) -> ConfusionSet:
    """A confusion set file (any layout of :meth:`ConfusionSet.load`), or a named part of the benchmark's S
    (:data:`~csc_hf.benchmark.configs.CONFUSION_SUBSETS`)."""
    if spec in CONFUSION_SUBSETS and not Path(spec).exists():
        return plan_for(BenchParams(**(params or {}))).subset(spec)
    return ConfusionSet.load(spec)


def _opencc_t2s() -> Callable[[str], str] | None:
    try:
        return t2s_converter("traditional_share")
    except ImportError as err:
        warnings.warn(str(err), stacklevel=3)
        return None


def analyze_data(
    data: Sequence[str],
    train: Sequence[str] = (),
    confusion: Sequence[str] = (),
    ngram: int = 4,
    params: Mapping | None = None,
    cache_dir: str | None = None,
) -> dict[str, dict]:
    """:func:`csc_hf.dataset_stats.analyze` of every split of the specs ``data``, with the training sentences of the
    specs ``train`` and the confusion sets ``confusion`` (files, or ``S``, ``S_train``, ... of the benchmark). Pairs
    may differ in length (missing and redundant characters, read by their alignment)."""
    splits = {name: s.sentences for spec in data for name, s in read_data(spec, params, cache_dir, False).items()}
    t2s = _opencc_t2s()
    references = {spec: training_sentences(read_data(spec, params, cache_dir, False)) for spec in train}
    confusions = {spec: load_confusion(spec, params) for spec in confusion}
    return analyze(splits, references, confusions, ngram, t2s)
