"""Contamination: whether a model's training data includes what a test set was drawn from.

Training data is named as ``NAME[:SPLIT]``: a dataset as a model card's ``datasets`` lists it (a Hub id such as
``shibing624/CSC``) or as a user declares it (``sighan15:test``, ``peoples_daily``). A test set's sources are keys of
:data:`TEST_SOURCES` (:func:`benchmark_sources` for the csc_bench configs; a user names them for other data). A name
matches a source when, written without case, spaces and punctuation, it contains one of the source's names. Then:

- the source is a corpus (its ``test_split`` is None: any part of it holds the test sentences): ``contaminated``;
- the source is a dataset whose ``test_split`` holds the test set: ``contaminated`` when the name states that split
  (``:test``, or ``test`` in the name), nothing when it states another (``:train``), ``possible`` when it states none.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from csc_hf.logging import get_logger
from csc_hf.model_folder import model_file

logger = get_logger(__name__)
LEVELS = ("contaminated", "possible")


@dataclass(frozen=True)
class DataSource:
    """What test sentences come from: its title in a report, the names training data may give it, and the split of
    those datasets that holds the test set (None: the whole of it, a corpus)."""

    title: str
    names: tuple[str, ...]
    test_split: str | None = None


def _corpus_sources() -> dict[str, DataSource]:
    """A row for each corpus the benchmark can draw its test sentences from (:data:`csc_hf.corpus.TEXT_SOURCES`)."""
    from csc_hf.corpus import TEXT_SOURCES

    aliases = {"peoples_daily": ("people's daily", "人民日报", "rmrb", "pd1998")}
    return {
        name: DataSource(source.description, (name, *aliases.get(name, ()))) for name, source in TEXT_SOURCES.items()
    }


TEST_SOURCES: dict[str, DataSource] = {
    "sighan15": DataSource("the SIGHAN-2015 test set", ("sighan15", "sighan2015", "shibing624/CSC"), "test"),
    **_corpus_sources(),
}


def _normal(name: str) -> str:
    return re.sub(r"[\W_]+", "", name.casefold())


def check_training_data(items: Iterable[str | tuple[str, str]]) -> list[tuple[str, str]]:
    """Training data as ``(NAME[:SPLIT], where it was named)``: a str is the user's (``declared``); a pair keeps its
    origin (``model card``). An empty or non-text name is a ValueError."""
    if isinstance(items, str):
        raise TypeError(f"training_data must be a list of names, not the str {items!r}")
    found = []
    for item in items:
        name, origin = (item, "declared") if isinstance(item, str) else tuple(item)
        if not isinstance(name, str) or not _normal(name.partition(":")[0]):
            raise ValueError(f"training data {item!r}: give a dataset name, NAME[:SPLIT] (e.g. shibing624/CSC:train)")
        found.append((name, str(origin)))
    return found


def card_training_data(model: str | Path) -> list[tuple[str, str]]:
    """The ``datasets`` of the model card (README.md's YAML header) of a local folder or a Hub id, as training data
    named by the ``model card``; none when there is no card or it names none."""
    card = model_file(model, "README.md")
    if card is None:
        return []
    text = card.read_text(encoding="utf-8", errors="replace")
    header = re.match(r"---\s*\n(.*?)\n---\s*(\n|$)", text, re.S)
    try:
        data = yaml.safe_load(header.group(1)) if header else None
    except yaml.YAMLError as err:
        logger.warning("%s: the model card's YAML header does not parse (%s); its datasets are not checked", card, err)
        return []
    datasets = data.get("datasets") if isinstance(data, dict) else None
    names = [datasets] if isinstance(datasets, str) else [d for d in datasets or () if isinstance(d, str)]
    return [(name, "model card") for name in names if _normal(name)]


def benchmark_sources(configs: Iterable[str], corpus: str) -> dict[str, list[str]]:
    """The sources (keys of :data:`TEST_SOURCES`) of each csc_bench config's sentences, by the pools its splits draw
    from: SIGHAN-2015's for ``sighan15``, a domain config's corpus (:data:`csc_hf.benchmark.configs.DOMAINS`), and
    the main corpus's (each source of a mix) for every other pool; none for a corpus file."""
    from csc_hf.benchmark.configs import CONFIGS, DOMAINS
    from csc_hf.corpus import MIXES

    def pool_sources(pool: str) -> list[str]:
        if pool == "sighan15":
            return ["sighan15"]
        names = (DOMAINS[pool][0],) if pool in DOMAINS else MIXES.get(corpus, (corpus,))
        return [name for name in names if name in TEST_SOURCES]

    return {
        config: list(dict.fromkeys(name for spec in CONFIGS[config].splits for name in pool_sources(spec.pool)))
        for config in configs
    }


def _level(name: str, source: DataSource) -> str | None:
    dataset, _, split = name.partition(":")
    normal = _normal(dataset)
    if not any(_normal(alias) in normal for alias in source.names):
        return None
    if source.test_split is None:
        return "contaminated"
    stated = _normal(split) or ("test" if "test" in normal else "")
    if not stated:
        return "possible"
    return "contaminated" if stated == _normal(source.test_split) else None


def contamination_flags(
    training_data: Iterable[str | tuple[str, str]], test_sources: Mapping[str, Sequence[str]]
) -> list[dict[str, str]]:
    """One flag per (test set, training data) that matches (see the module docstring): ``{"test", "source",
    "training_data", "from", "level"}``. ``test_sources`` maps each test set's name to its sources' keys; an unknown key
    is a ValueError."""
    data = check_training_data(training_data)
    flags = []
    for test, keys in test_sources.items():
        for key in keys:
            if key not in TEST_SOURCES:
                raise ValueError(f"test set {test}: unknown source {key!r}; known: {', '.join(TEST_SOURCES)}")
            for name, origin in data:
                if level := _level(name, TEST_SOURCES[key]):
                    flags.append(
                        {
                            "test": test,
                            "source": TEST_SOURCES[key].title,
                            "training_data": name,
                            "from": origin,
                            "level": level,
                        }
                    )
    return flags


def describe_flag(flag: Mapping[str, str]) -> str:
    """A flag of :func:`contamination_flags` as a sentence for a report."""
    text = f"{flag['test']}: the training data {flag['training_data']} ({flag['from']}) includes {flag['source']}"
    if flag["level"] == "possible":
        return text + " in one of its splits, and which split the model trained on is not stated: possibly contaminated"
    return text + ": contaminated"
