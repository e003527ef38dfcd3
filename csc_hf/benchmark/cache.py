"""What keys the benchmark's caches, and the one cache kept outside the datasets builder: the confusion set S.

Building S from the corpus (pypinyin reads 20,000 sentences in context, and every character's glyph is rendered) is the
slowest step of a plan, and every new process needs S: a training run's tokenizer, a resumed study, each builder that
is not served from the datasets cache. So a built S is kept as a JSON file next to the builder's files, under a key of
everything it is made from: the generating code (:func:`code_hash`), the corpus sentences, the build parameters and
what this machine reads and draws the characters with (:func:`csc_hf.confusion.character_inputs`). A file that
cannot be read is built again.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import astuple
from pathlib import Path

from ..confusion import BuildParams, ConfusionSet, character_inputs
from ..logging import get_logger

logger = get_logger(__name__)

CACHE_NAME = "csc_hf--csc_bench"
"""Where the builder's files go in the datasets cache: not a Hub id, so that plain
``datasets.load_dataset("csc_bench")`` (offline, it serves the latest cached copy of that name, whatever parameters or
code made it) never finds them."""


def code_files() -> list[Path]:
    """The code and shipped tables that generate the data: ``benchmark/``, ``chars/`` (its tables too), ``corpus``,
    ``confusion`` and ``corruption``, and every csc_hf module these import (relative imports, followed)."""
    root = Path(__file__).resolve().parents[1]
    found = {
        *root.glob("benchmark/*.py"),
        *root.glob("chars/*.py"),
        *root.glob("chars/data/*"),
        *(root / f"{name}.py" for name in ("corpus", "confusion", "corruption")),
    }
    todo = [path for path in found if path.suffix == ".py"]
    while todo:
        path = todo.pop()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or not node.level:
                continue
            base = path.parents[node.level - 1]
            names = [node.module] if node.module else [alias.name for alias in node.names]
            for name in names:
                module = base.joinpath(*name.split("."))
                for candidate in (module.with_suffix(".py"), module / "__init__.py"):
                    if candidate.is_file() and candidate not in found:
                        found.add(candidate)
                        todo.append(candidate)
    return sorted(found)


@functools.cache
def code_hash() -> str:
    """A hash of :func:`code_files`: a change of any of them invalidates the cache."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for path in code_files():
        h.update(path.relative_to(root).as_posix().encode() + path.read_bytes())
    return h.hexdigest()[:16]


def confusion_cache_file(sentences: Sequence[str], build: BuildParams) -> Path:
    """The file that keeps S as built from these corpus sentences with ``build``, in the datasets cache
    (``$HF_DATASETS_CACHE/csc_hf--csc_bench/confusion/``)."""
    import datasets.config  # the user's cache location, read where it is set

    text = hashlib.sha256("\n".join(sentences).encode()).hexdigest()
    key = [code_hash(), text, astuple(build), character_inputs()]
    digest = hashlib.sha256(json.dumps(key).encode()).hexdigest()[:24]
    return Path(datasets.config.HF_DATASETS_CACHE) / CACHE_NAME / "confusion" / f"{digest}.json"


def cached_confusion(path: Path, build: Callable[[], ConfusionSet]) -> ConfusionSet:
    """S from ``path`` when a previous process built it, else ``build()`` and keep the result there (a cache that
    cannot be written only costs the next process the build)."""
    if path.is_file():
        try:
            return ConfusionSet.load(path, format="json")
        except (OSError, ValueError) as err:
            logger.warning("%s: unreadable cached confusion set (%s); building it again", path, err)
    confusion = build()
    try:
        confusion.save(path)
    except OSError as err:
        logger.warning("could not keep the confusion set in %s (%s); the next process builds it again", path, err)
    return confusion
