"""How csc_hf reads and writes files: UTF-8 text whose errors name the file, lines split at ``\\n`` only, jsonl rows
whose errors name the line, YAML without keys given twice, and outputs written whole or not at all, checked before any
long work (never one of the command's inputs, never a folder of other files replaced: :func:`check_output`,
:func:`check_output_folder`, :func:`output_folder`); and the file formats of CSC data: sentence pairs as a
``wrong<TAB>correct`` TSV or a jsonl of ``source``/``target`` objects, texts to correct (:func:`check_texts`), and a
model's predictions as edits (``position:character``, ``position+character``, ``position-character`` per line) or, for
an LLM, as jsonl records (``id``, ``prediction``, its raw output)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from .edits import MISSING, REDUNDANT, SUBSTITUTION, Edit, alignment, apply, positional


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
    """The lines of a UTF-8 text file, split at ``\\n`` (and ``\\r\\n``) only: a U+2028, U+0085 or form feed inside a
    line stays in it, so line i of an output can always answer line i of the input."""
    lines = read_text(path, what).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def read_yaml(path: str | Path, what: str = "") -> Any:
    """A UTF-8 YAML file read safely (no Python objects); invalid YAML and a key given twice in one mapping (which
    YAML would let the last one win silently) are errors naming the file and the line (:func:`parse_yaml`)."""
    return parse_yaml(read_text(path, what), f"{what} {path}" if what else str(path))


def parse_yaml(text: str, label: str) -> Any:
    """YAML text read safely (plain data only); invalid YAML and a key given twice in one mapping are ValueErrors
    naming ``label`` (where the text comes from) and the line."""
    import yaml

    class UniqueKeys(yaml.SafeLoader):
        pass

    def mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = loader.construct_object(key_node)
            if key in seen:
                raise ValueError(
                    f"{label}, line {key_node.start_mark.line + 1}: the key {key!r} is given twice (also on line "
                    f"{seen[key]}); YAML would keep only the last"
                )
            seen[key] = key_node.start_mark.line + 1
        return loader.construct_mapping(node)

    UniqueKeys.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    try:
        return yaml.load(text, Loader=UniqueKeys)  # a SafeLoader: plain data only
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f", line {mark.line + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise ValueError(f"{label}{where}: invalid YAML ({problem})") from None


def iter_jsonl(path: str | Path, lines: Sequence[str] | None = None) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed value)`` of each non-blank line of a jsonl file (or of its already read ``lines``);
    invalid JSON is an error naming the file and the line."""
    for number, line in enumerate(read_lines(path) if lines is None else lines, 1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}, line {number}: invalid JSON ({err.msg})") from None


Paths = Iterable[str | Path | None]


def _same(a: Path, b: Path) -> bool:
    """Whether two paths name one file or folder (links and ``..`` resolved; also two names of one file)."""
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


def _within(inner: Path, outer: Path) -> bool:
    """Whether ``inner`` is ``outer`` or inside it."""
    return _same(inner, outer) or outer.resolve() in inner.resolve().parents


def check_writable(folder: Path, option: str) -> None:
    """Fail unless a file can be created in ``folder`` (tried: a read-only folder or file system, or a folder of
    another user, is named before any work)."""
    try:
        handle, probe = tempfile.mkstemp(dir=folder, prefix=".csc_hf-write-test.")
    except OSError as err:
        raise PermissionError(f"{option}: cannot write in {folder} ({err.strerror or err})") from None
    os.close(handle)
    os.unlink(probe)


def check_output(
    path: str | Path | None, option: str = "--output", inputs: Paths = (), size: int | None = None
) -> None:
    """Fail before any work when an output file cannot be written or would destroy what the command reads: a
    folder, a file in a missing or read-only folder, one of the command's ``inputs`` or a path inside one of them
    (the files and folders it reads: a model folder, data), or (``size``: the bytes it will about take) a disk
    without that much room."""
    if path is None:
        return
    target = Path(path)
    if target.is_dir():
        raise IsADirectoryError(f"{option} {target} is a folder; give a file path")
    if not target.parent.is_dir():
        raise FileNotFoundError(f"{option} {target}: folder {target.parent} does not exist")
    for given in (Path(p) for p in inputs if p):
        if given.exists() and _within(target, given):
            where = "is" if _same(target, given) else "is inside"
            raise ValueError(f"{option} {target} {where} {given}, which the command reads; give another path")
    check_writable(target.parent, option)
    if size is not None and (free := shutil.disk_usage(target.parent).free) < size:
        message = f"{option} {target}: needs about {size:,} bytes, and its disk has {free:,} free"
        raise OSError(errno.ENOSPC, message)


OUTPUT_MARKER = ".csc_hf_output"
"""The file a command writes into a folder it makes whole (:func:`output_folder`): the folder may be replaced by the
same command later; any other non-empty folder never is."""


def check_output_folder(path: str | Path, option: str, inputs: Paths = (), replaces: str | None = None) -> Path:
    """Fail before any work when an output folder cannot be written or would destroy what the command reads: a file,
    a read-only place, a folder that is, holds or lies inside one of the command's ``inputs`` (the files and folders
    it reads). With ``replaces`` (the command's name) the folder is to be replaced whole (:func:`output_folder`): an
    existing one must be empty or hold the marker of an earlier output of that command, and must not hold the
    current folder: a folder of the user's other data is never deleted. Returns the path."""
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise NotADirectoryError(f"{option} {target} is a file; give a folder")
    for given in (Path(p) for p in inputs if p):
        if given.exists() and (_within(target, given) or _within(given, target)):
            where = "is" if _same(target, given) else "holds" if _within(given, target) else "is inside"
            raise ValueError(f"{option} {target} {where} {given}, which the command reads; give another folder")
    if replaces and target.is_dir():
        if _within(Path.cwd(), target):
            raise ValueError(f"{option} {target} holds the current folder; give another folder")
        if any(target.iterdir()) and not (target / OUTPUT_MARKER).is_file():
            raise FileExistsError(
                f"{option} {target} is a folder of other files (not an earlier output of {replaces}, which holds "
                f"{OUTPUT_MARKER}); give a new or empty folder: csc_hf never deletes what it did not make"
            )
    existing = next(p for p in (target.absolute(), *target.absolute().parents) if p.exists())
    if not existing.is_dir():
        raise NotADirectoryError(f"{option} {target}: {existing} is a file, not a folder")
    check_writable(existing, option)
    return target


@contextlib.contextmanager
def output_folder(path: str | Path, command: str) -> Iterator[Path]:
    """Write a folder whole or not at all: yields an empty staging folder next to ``path``; when the block ends
    without an error, the marker :data:`OUTPUT_MARKER` (naming ``command``) is written into it and it takes the
    place of ``path`` (an earlier output that :func:`check_output_folder` allowed to replace); on an error it is
    removed and ``path`` stays as it was."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".partial"))
    os.chmod(staging, 0o777 & ~_umask())  # mkdtemp makes it 0700: a folder of the umask's mode, as mkdir gives
    try:
        yield staging
        (staging / OUTPUT_MARKER).write_text(f"written by {command}\n", encoding="utf-8")
        old = None
        if target.exists():
            old = target.with_name(f".{target.name}.{os.getpid()}.old")
            os.replace(target, old)
        os.replace(staging, target)
        if old is not None:
            shutil.rmtree(old)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _umask() -> int:
    mask = os.umask(0o022)  # reading the umask sets it: set it back at once
    os.umask(mask)
    return mask


def new_file_mode() -> int:
    """The permission bits a new file gets from the process's umask (``0o666`` less it), as ``open`` gives them."""
    return 0o666 & ~_umask()


def honour_umask(paths: Iterable[str | Path]) -> None:
    """Give each file the mode of a new file (:func:`new_file_mode`): for files written by a library that makes
    them private whatever the umask (safetensors writes its weights with mode 0600), so that a shared model folder
    is as readable as any other file its owner writes."""
    mode = new_file_mode()
    for path in paths:
        os.chmod(path, mode)


def write_atomic(path: str | Path, text: str, make_parents: bool = False) -> Path:
    """Write a UTF-8 file whole or not at all: a temporary file next to it, then renamed over it (a reader never sees
    a half-written file, and a killed writer leaves the old file or none). The file keeps the mode of the file it
    replaces, and a new one gets the umask's (:func:`new_file_mode`), as a plain write gives. A failed write (a full
    disk) names the file. Returns the path."""
    target = Path(path)
    if make_parents:
        target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = new_file_mode()
    try:
        handle, partial = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as err:
        raise type(err)(err.errno, f"cannot write {target}: {err.strerror or err}") from None
    try:
        os.fchmod(handle, mode)  # mkstemp makes it 0600
        with os.fdopen(handle, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(partial, target)
    except BaseException as err:
        Path(partial).unlink(missing_ok=True)
        if isinstance(err, OSError):
            raise type(err)(err.errno, f"cannot write {target}: {err.strerror or err}") from None
        raise
    return target


# ---- sentence pairs ------------------------------------------------------------------------------------------------

Sentences = tuple[list[str], list[str]]
"""Aligned sentence lists ``(sources, targets)``: the wrong sentences and their corrections."""


def check_sentence_pair(source: object, target: object, where: str, equal_lengths: bool = True) -> None:
    """Raise a ValueError naming ``where`` unless ``source`` and ``target`` are strings, the target non-empty and (with
    ``equal_lengths``) as long as its source."""
    if not isinstance(source, str) or not isinstance(target, str):
        raise ValueError(f"{where}: source and target must be strings")
    if not target or (equal_lengths and len(source) != len(target)):
        raise ValueError(f"{where}: source has {len(source)} characters, target {len(target)}")


def check_texts(texts: Iterable[str]) -> list[str]:
    """`texts` as a list, or a TypeError naming the first item that is not a str."""
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Iterable):
        raise TypeError(f"texts must be a str or an iterable of str, got {type(texts).__name__}")
    texts = list(texts)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"texts[{i}] must be a str, got {type(text).__name__}")
    return texts


def check_sentences(sources: Sequence[str], targets: Sequence[str], equal_lengths: bool = True) -> None:
    """Check that ``sources`` and ``targets`` are as many sentence pairs, at least one (see
    :func:`check_sentence_pair`)."""
    if len(sources) != len(targets):
        raise ValueError(f"{len(sources)} sources but {len(targets)} targets")
    if not targets:
        raise ValueError("no sentence")
    for i, (source, target) in enumerate(zip(sources, targets)):
        check_sentence_pair(source, target, f"sentence {i}", equal_lengths)


def read_sentence_tsv(path: str | Path, equal_lengths: bool = True) -> Sentences:
    """Read a ``wrong<TAB>correct`` file (blank lines skipped); errors name the file and line. Each target must be
    non-empty and, with ``equal_lengths``, as long as its source."""
    sources, targets = [], []
    for number, line in enumerate(read_lines(path), 1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 2:
            raise ValueError(f"{path}, line {number}: expected 'wrong<TAB>correct', got {len(fields)} fields")
        check_sentence_pair(*fields, f"{path}, line {number}", equal_lengths)
        sources.append(fields[0])
        targets.append(fields[1])
    return _nonempty(path, sources, targets)


def read_sentence_jsonl(path: str | Path, equal_lengths: bool = True) -> Sentences:
    """Read a jsonl file of objects with ``source`` and ``target``; errors name the file and line. Each target must
    be non-empty and, with ``equal_lengths``, as long as its source."""
    sources, targets = [], []
    for number, row in iter_jsonl(path):
        source, target = (row.get("source"), row.get("target")) if isinstance(row, dict) else (None, None)
        if not isinstance(source, str) or not isinstance(target, str):
            raise ValueError(f"{path}, line {number}: expected an object with string 'source' and 'target'")
        check_sentence_pair(source, target, f"{path}, line {number}", equal_lengths)
        sources.append(source)
        targets.append(target)
    return _nonempty(path, sources, targets)


def read_sentence_file(path: str | Path, equal_lengths: bool = True) -> Sentences:
    """A sentence-pair file: a ``.jsonl`` (or ``.json``) of objects, any other a ``wrong<TAB>correct`` TSV."""
    if Path(path).suffix in (".jsonl", ".json"):
        return read_sentence_jsonl(path, equal_lengths)
    return read_sentence_tsv(path, equal_lengths)


def _nonempty(path: str | Path, sources: list[str], targets: list[str]) -> Sentences:
    if not targets:
        raise ValueError(f"{path}: no sentence pair")
    return sources, targets


# ---- predictions as edits ------------------------------------------------------------------------------------------

EDITS_LINE = re.compile(r"(\d+[:+-]\S( \d+[:+-]\S)*)?")
"""A line of :func:`write_predictions`: edits separated by spaces, ``position:character`` (a substitution),
``position+character`` (a character inserted before that source position: a missing one) or ``position-character``
(the source's character there removed: a redundant one)."""
_EDIT_MARKS = {":": SUBSTITUTION, "+": MISSING, "-": REDUNDANT}


def write_predictions(path: Path, sources: Iterable[str], predictions: Iterable[str]) -> None:
    """One line per sentence: the prediction's edits to its source (:data:`EDITS_LINE`; an empty line when it changes
    nothing). A prediction of its source's length is written position by position (substitutions only); one of
    another length as the edits of their minimum alignment (:func:`csc_hf.edits.alignment`)."""
    marks = {kind: mark for mark, kind in _EDIT_MARKS.items()}
    lines = []
    for i, (source, prediction) in enumerate(zip(sources, predictions, strict=True)):
        edits = positional(source, prediction) if len(source) == len(prediction) else alignment(source, prediction)
        lines.append(
            line := " ".join(f"{e.position}{marks[e.kind]}{e.wrong if e.kind == REDUNDANT else e.right}" for e in edits)
        )
        if not EDITS_LINE.fullmatch(line):
            raise ValueError(f"{path}: prediction {i} puts in or removes whitespace, which edits cannot hold")
    write_atomic(path, "".join(line + "\n" for line in lines), make_parents=True)


def write_prediction_records(path: Path, records: Iterable[dict[str, Any]]) -> None:
    """One JSON object per line (``id`` and ``prediction`` first: what ``csc-bench score`` reads as jsonl, whatever
    the predictions' lengths), written whole."""
    lines = []
    for i, record in enumerate(records):
        if "id" not in record or not isinstance(record.get("prediction"), str):
            raise ValueError(f"{path}: record {i} needs an id and a str prediction, got {sorted(record)}")
        lines.append(json.dumps(record, ensure_ascii=False) + "\n")
    write_atomic(path, "".join(lines), make_parents=True)


def read_predictions(path: Path, sources: Sequence[str]) -> list[str]:
    """The predictions that :func:`write_predictions` saved for ``sources``; an edit outside its sentence, out of
    source order, or removing a character the source does not hold there is an error naming the line."""
    lines = read_lines(path)
    if len(lines) != len(sources):
        raise ValueError(f"{path}: {len(lines)} lines for {len(sources)} sentences")
    predictions = []
    for number, (line, source) in enumerate(zip(lines, sources), 1):
        if not EDITS_LINE.fullmatch(line):
            raise ValueError(
                f"{path}, line {number}: expected position:character edits separated by spaces, got {line!r}"
            )
        edits, previous = [], (0, 0)
        for item in line.split():
            position, mark, char = int(item[:-2]), item[-2], item[-1]
            kind = _EDIT_MARKS[mark]
            inside = position <= len(source) if kind == MISSING else position < len(source)
            if not inside:
                raise ValueError(f"{path}, line {number}: bad edit {item!r}: its sentence has {len(source)} characters")
            order = (position, kind != MISSING)  # insertions before a position come before its other edit
            if order < previous or (order == previous and kind != MISSING):
                raise ValueError(f"{path}, line {number}: edit {item!r} is out of source order")
            if kind == REDUNDANT and source[position] != char:
                raise ValueError(
                    f"{path}, line {number}: edit {item!r} removes {char!r}, but the source has {source[position]!r}"
                )
            previous = order
            edits.append(Edit(kind, position, source[position] if kind != MISSING else None, char))
        predictions.append("".join(apply(source, edits)))
    return predictions
