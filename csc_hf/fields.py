"""One check of a value against a dataclass field's type, for every place that takes typed settings: the training
config's keys (YAML), :class:`~csc_hf.benchmark.BenchParams` (keywords) and the command line's options (text).

YAML and keyword values are checked with :func:`accepts` and named with :func:`type_name`; command-line text is turned
into a value of the type with :func:`from_text`."""

from __future__ import annotations

import difflib
import enum
import math
import numbers
import sys
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

TRUE, FALSE = ("true", "1", "yes"), ("false", "0", "no")  # the command line's words for a bool


def field_types(*dataclasses: type) -> dict[str, Any]:
    """The type of every init field of ``dataclasses``, by name (a later class's field wins)."""
    found = {}
    for dc in dataclasses:
        try:
            hints = typing.get_type_hints(dc)
        except NameError:  # a hint naming what its module imports only for type checkers (transformers' configs)
            hints = _hints_each(dc)
        found.update({f.name: hints.get(f.name, Any) for f in fields(dc) if f.init})
    return found


def _hints_each(dc: type) -> dict[str, Any]:
    """The type hints of ``dc`` and its bases, each resolved on its own; one that cannot be is ``Any``."""
    hints: dict[str, Any] = {}
    for cls in reversed(dc.__mro__):
        namespace = vars(sys.modules[cls.__module__])
        for name, hint in vars(cls).get("__annotations__", {}).items():
            try:
                hints[name] = eval(hint, namespace) if isinstance(hint, str) else hint  # a type hint of the class
            except Exception:
                hints[name] = Any
    return hints


def check_known(keys: Iterable[str], known: Iterable[str], where: str, what: str = "keys") -> None:
    """Raise a ValueError naming ``where`` and every key of ``keys`` that is not ``known``, each with the closest
    known one (a typo that would otherwise be ignored or fail later)."""
    known = sorted(known)
    unknown = sorted(k for k in keys if k not in known)
    if not unknown:
        return
    hints = []
    for key in unknown:
        close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
        hints.append(f"{key!r}: did you mean {close[0]!r}?" if close else f"{key!r}: no close name")
    raise ValueError(f"{where}: unknown {what} {unknown} ({'; '.join(hints)})")


def check_fields(
    data: Mapping[str, Any], hints: Mapping[str, Any], where: str, origins: Mapping[str, str] | None = None
) -> None:
    """Every key of ``data`` is one of ``hints`` (:func:`check_known`: an unknown key is named with the closest known
    one) and its value fits the key's type (:func:`accepts`); an error names where the key comes from (``origins``,
    else ``where``)."""
    origins = origins or {}
    unknown = [key for key in data if key not in hints]
    if unknown:
        check_known(unknown, hints, ", ".join(sorted({origins.get(k, where) for k in unknown})))
    for key, value in data.items():
        if not accepts(hints[key], value):
            raise ValueError(f"{origins.get(key, where)}: {key}={value!r} must be {type_name(hints[key])}")


@dataclass(frozen=True)
class Range:
    """The values a number may take: at least ``low`` (above it with ``low_open``), at most ``high`` (below it with
    ``high_open``), always finite; ``also``: other values it may be (``-1``: off, ``None``: the default)."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    also: tuple = ()

    def holds(self, value: Any) -> bool:
        if any(value is a or (value == a and type(value) is type(a)) for a in self.also):
            return True
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
            return False
        above = self.low is None or (value > self.low if self.low_open else value >= self.low)
        below = self.high is None or (value < self.high if self.high_open else value <= self.high)
        return above and below

    def __str__(self) -> str:
        if self.low is not None and self.high is not None:
            text = f"in {'(' if self.low_open else '['}{self.low:g}, {self.high:g}{')' if self.high_open else ']'}"
        elif self.low is not None:
            text = f"{'above' if self.low_open else 'at least'} {self.low:g}"
        elif self.high is not None:
            text = f"{'below' if self.high_open else 'at most'} {self.high:g}"
        else:
            text = "a finite number"
        return " or ".join([*(repr(a) for a in self.also), text])


def check_range(name: str, value: Any, allowed: Range, where: str = "") -> None:
    """Raise a ValueError naming ``where`` and ``name`` unless ``allowed`` holds ``value``."""
    if not allowed.holds(value):
        raise ValueError(f"{where}: " * bool(where) + f"{name}={value!r} must be {allowed}")


def accepts(hint: Any, value: Any) -> bool:
    """Whether ``value`` fits the type ``hint``: an int is no bool, a float may be an int, a list or tuple type takes a
    list or a tuple of fitting items, an enum takes its values; classes a config cannot give (a config object) are
    left to their dataclass."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(accepts(a, value) for a in args)
    if origin is typing.Literal:
        return any(value is a or (type(value) is type(a) and value == a) for a in args)
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if (origin or hint) in (list, tuple):
        return isinstance(value, (list, tuple)) and (not args or all(accepts(args[0], v) for v in value))
    if (origin or hint) is dict:
        return isinstance(value, dict)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return isinstance(value, hint) or value in {m.value for m in hint}
    return True


_NAMES = {bool: "a bool (true or false)", int: "an int", float: "a number", str: "a str", type(None): "None"}


def type_name(hint: Any) -> str:
    """``hint`` in words, for an error message: ``an int``, ``a number``, ``a list of strs or None``."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(type_name(a) for a in args)
    if origin is typing.Literal:
        return " or ".join(map(repr, args))
    if hint in _NAMES:
        return _NAMES[hint]
    if (origin or hint) in (list, tuple):
        kind = "a tuple" if (origin or hint) is tuple else "a list"
        return f"{kind} of {_plural(type_name(args[0]))}" if args else kind
    if (origin or hint) is dict:
        return "a mapping"
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return "one of " + ", ".join(repr(m.value) for m in hint)
    return getattr(hint, "__name__", str(hint))


def _plural(name: str) -> str:
    """``an int`` -> ``ints``, ``a bool (true or false)`` -> ``bools (true or false)``."""
    word, _, rest = name.partition(" ")[2].partition(" ")
    return f"{word}s" + (f" {rest}" if rest else "")


def from_text(hint: Any) -> Callable[[str], Any]:
    """A parser of command-line text into a value of ``hint`` (a bool, int, float or str, optionally ``| None``:
    the text ``none``); a list or tuple type parses each of its items so (the option takes several)."""
    args = typing.get_args(hint)
    optional = type(None) in args
    kind = next((a for a in args if a is not type(None)), hint) if optional else hint
    if typing.get_origin(kind) in (list, tuple):
        kind = typing.get_args(kind)[0]
    convert = {bool: _bool, int: int, float: float, str: str}[kind]

    def parse(text: str) -> Any:
        return None if optional and text.lower() == "none" else convert(text)

    parse.__name__ = kind.__name__  # argparse names the type in its error
    return parse


def _bool(text: str) -> bool:
    import argparse

    if text.lower() not in (*TRUE, *FALSE):
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return text.lower() in TRUE
