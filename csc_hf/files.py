"""How csc_hf reads and writes files: UTF-8 text whose errors name the file, lines split at ``\\n`` only, jsonl rows
whose errors name the line, and outputs written whole or not at all (checked before any long work)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any


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


def check_output(path: str | Path | None, option: str = "--output") -> None:
    """Fail before any work when an output file cannot be written: a folder, or a file in a missing folder."""
    if path is None:
        return
    target = Path(path)
    if target.is_dir():
        raise IsADirectoryError(f"{option} {target} is a folder; give a file path")
    if not target.parent.is_dir():
        raise FileNotFoundError(f"{option} {target}: folder {target.parent} does not exist")


def write_atomic(path: str | Path, text: str, make_parents: bool = False) -> Path:
    """Write a UTF-8 file whole or not at all: a temporary file next to it, then renamed over it (a reader never sees
    a half-written file, and a killed writer leaves the old file or none). Returns the path."""
    target = Path(path)
    if make_parents:
        target.parent.mkdir(parents=True, exist_ok=True)
    handle, partial = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(partial, target)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise
    return target
