"""csc_hf's messages, in the style of transformers' ``utils.logging``: every module logs to
``logging.getLogger(__name__)``, below the library's root logger ``csc_hf``, which has one default handler (stderr,
``[csc_hf HH:MM:SS] message``; warnings and errors say their level). stdout is left to results: the tables, paths and
corrected sentences the commands print.

    from csc_hf import logging
    logging.set_verbosity_info()          # progress messages too (csc-bench shows them; -q hides them, -v adds debug)

The level is ``warning`` unless ``CSC_HF_VERBOSITY`` (debug, info, warning, error, critical) says otherwise. A
program that configures logging itself (handlers on the root logger) gets the messages through its own handlers
only: the default handler then stays silent, so nothing is written twice.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from tqdm.auto import tqdm

ENV = "CSC_HF_VERBOSITY"
LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}
DEFAULT_LEVEL = logging.WARNING
LIBRARY = __name__.split(".")[0]  # "csc_hf"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
LOAD_REPORT = "LOAD REPORT"  # transformers' table of the keys a checkpoint and a model do not share
REPORT_PROBLEMS = ("MISSING", "MISMATCH", "CONVERSION")  # report rows that mean weights were not loaded as saved


class _Formatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        level = f"{record.levelname.lower()}: " if record.levelno >= logging.WARNING else ""
        return f"[{LIBRARY} {self.formatTime(record, '%H:%M:%S')}] {level}{record.getMessage()}"


class _Handler(logging.Handler):
    """Writes to the current ``sys.stderr`` above any progress bar (``tqdm.write``); silent when the root logger has
    handlers (the program's own logging shows the message)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not logging.getLogger().handlers and super().filter(record)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            tqdm.write(self.format(record), file=sys.stderr)
        except Exception:  # noqa: BLE001 (logging's rule: a handler reports its own failure)
            self.handleError(record)


def _level(value: int | str, origin: str) -> int:
    """A level number from a number or a name of ``LEVELS`` (any case); a ValueError names ``origin``."""
    if isinstance(value, int):
        return value
    if value.lower() not in LEVELS:
        raise ValueError(f"{origin}={value!r}: choose from {', '.join(LEVELS)}")
    return LEVELS[value.lower()]


def env_verbosity(default: int | str = DEFAULT_LEVEL) -> int:
    """The level ``CSC_HF_VERBOSITY`` names, else ``default``; a ValueError names the variable and its choices."""
    return _level(os.environ.get(ENV) or default, ENV)


def _library_root() -> logging.Logger:
    """The ``csc_hf`` logger, with the default handler and the level of ``CSC_HF_VERBOSITY`` (made once; a value that
    is no level leaves the default, with a warning)."""
    root = logging.getLogger(LIBRARY)
    if not any(isinstance(h, _Handler) for h in root.handlers):
        handler = _Handler()
        handler.setFormatter(_Formatter())
        root.addHandler(handler)
        try:
            root.setLevel(env_verbosity())
        except ValueError as err:
            root.setLevel(DEFAULT_LEVEL)
            root.warning("%s; using %s", err, logging.getLevelName(DEFAULT_LEVEL).lower())
    return root


def get_logger(name: str | None = None) -> logging.Logger:
    """The logger ``name`` (a module's ``__name__``; default: the library's root logger ``csc_hf``)."""
    _library_root()
    return logging.getLogger(name or LIBRARY)


def get_verbosity() -> int:
    """The level of the ``csc_hf`` logger (``logging.INFO`` ...)."""
    return _library_root().getEffectiveLevel()


def set_verbosity(level: int | str) -> None:
    """Set the level of every csc_hf logger: a ``logging`` level or one of debug, info, warning, error, critical."""
    _library_root().setLevel(_level(level, "verbosity"))


def set_verbosity_debug() -> None:
    set_verbosity(logging.DEBUG)


def set_verbosity_info() -> None:
    set_verbosity(logging.INFO)


def set_verbosity_warning() -> None:
    set_verbosity(logging.WARNING)


def set_verbosity_error() -> None:
    set_verbosity(logging.ERROR)


@contextmanager
def verbosity(level: int | str) -> Iterator[None]:
    """Set the csc_hf level for the duration of a block (the CLI's), then restore it."""
    before = _library_root().level
    set_verbosity(level)
    try:
        yield
    finally:
        _library_root().setLevel(before)


class _Demote(logging.Filter):
    """Warnings and infos become debug messages (shown only at debug verbosity); errors pass."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR:
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return _library_root().getEffectiveLevel() <= logging.DEBUG


@contextmanager
def demoted(name: str) -> Iterator[None]:
    """For the block, the warnings and infos of logger ``name`` are debug messages: notes a user cannot act on (e.g.
    the rows a packaged confusion set drops)."""
    logger, demote = logging.getLogger(name), _Demote()
    logger.addFilter(demote)
    try:
        yield
    finally:
        logger.removeFilter(demote)


class _PlainReports(logging.Filter):
    """Strips ANSI codes from transformers' messages when stderr is no terminal (a log file)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not sys.stderr.isatty() and isinstance(record.msg, str) and "\x1b[" in record.msg:
            record.msg = ANSI.sub("", record.msg)
        return True


class _ExpectedReports(logging.Filter):
    """Turns transformers' LOAD REPORT of a checkpoint loaded on purpose into a smaller model (only UNEXPECTED keys,
    such as a masked-LM head left out of an encoder) into a debug message of csc_hf; reports with missing or
    mismatched weights pass unchanged."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = ANSI.sub("", record.getMessage())
        if LOAD_REPORT not in text or any(problem in text for problem in REPORT_PROBLEMS):
            return True
        get_logger(__name__).debug("%s", text)
        return False


@contextmanager
def expected_load_report() -> Iterator[None]:
    """While csc_hf loads its own checkpoints into models that leave some of their weights out (an encoder from a
    masked-LM checkpoint), transformers' LOAD REPORT of only unexpected keys goes to csc_hf's debug messages."""
    from transformers.utils import logging as transformers_logging

    logger, expected = transformers_logging.get_logger("transformers.modeling_utils"), _ExpectedReports()
    logger.addFilter(expected)
    try:
        yield
    finally:
        logger.removeFilter(expected)


@contextmanager
def plain_library_output() -> Iterator[None]:
    """For a long run that a person follows or logs to a file: transformers' messages without ANSI codes when stderr
    is no terminal, and neither its per-file weight loading and saving bars (the Trainer's bar stays) nor datasets'
    bar for each split it generates or maps (a build's forty); restored after."""
    import datasets
    from transformers.utils import logging as transformers_logging

    logger, plain = transformers_logging.get_logger("transformers"), _PlainReports()
    bars = transformers_logging.is_progress_bar_enabled(), datasets.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()
    datasets.disable_progress_bars()
    for handler in logger.handlers:
        handler.addFilter(plain)
    try:
        yield
    finally:
        for handler in logger.handlers:
            handler.removeFilter(plain)
        if bars[0]:
            transformers_logging.enable_progress_bar()
        if bars[1]:
            datasets.enable_progress_bars()
