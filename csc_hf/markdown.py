"""Markdown for every table csc_hf prints or writes (the run report, ``csc-bench score`` and ``analyze``, model
cards): a GitHub table, and scores in percent."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

UNDEFINED = "n/a"
"""How a score that the data leaves undefined (None: the false positive rate of a set without an error-free sentence)
reads; a missing one reads ``-``."""


def table(header: Sequence[str], rows: Iterable[Sequence]) -> str:
    """A GitHub markdown table; ``None`` shows as ``-``."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join("-" if v is None else str(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def percent(value: float | None) -> str | None:
    """A share in percent with one decimal (``0.7123`` -> ``71.2``); None stays None."""
    return None if value is None else f"{100 * value:.1f}"


def score_text(value: float | None, form: Callable[[float], str] = percent) -> str:
    """A score as text by ``form`` (default :func:`percent`), or :data:`UNDEFINED` where it is None."""
    return UNDEFINED if value is None else form(value)


def percent_range(low: float, high: float) -> str:
    """An interval in percent: ``(69.8-72.5)``; ``(-4.2 to -2.8)`` when a bound is negative (a difference)."""
    separator = " to " if min(low, high) < 0 else "-"
    return f"({percent(low)}{separator}{percent(high)})"


def signed_points(value: float) -> str:
    """A difference of shares in signed points of percent: ``+1.2``, never ``-0.0``."""
    return f"{round(100 * value, 1) + 0.0:+.1f}"
