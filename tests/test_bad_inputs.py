"""Bad inputs, as a table: each row is one kind of bad input and a fragment of the clear error it must give.

To cover a new kind, add a row to the table of its surface:
- ``LIBRARY``: ``Bad(id, call, fragment)``; ``call(tmp)`` gets an empty folder and must raise an exception whose
  message contains ``fragment`` (case-insensitive) — never a bare TypeError/KeyError from deep inside a library.
- ``CLI``: ``BadCli(id, argv, fragment, files)``; ``files`` (name -> str or bytes) are written into the folder first,
  and ``{tmp}`` in ``argv`` is replaced by it. ``csc-bench ARGV`` must exit with 2 and print exactly one line on
  stderr (``csc-bench CMD: error: ...`` containing ``fragment``), no traceback, and leave no output file behind.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from csc_hf.cli import main


@dataclass(frozen=True)
class Bad:
    id: str
    call: Callable[[Path], object]
    fragment: str


@dataclass(frozen=True)
class BadCli:
    id: str
    argv: tuple[str, ...]
    fragment: str
    files: dict[str, str | bytes] = field(default_factory=dict)


def _bench_params(**kwargs):
    from csc_hf.benchmark import BenchParams

    return lambda tmp: BenchParams(**kwargs).validate()


# ---- the library: data, benchmark, confusion sets, scoring ----------------------------------------------------------

LIBRARY_DATA: list[Bad] = [
    Bad("error_prob above 1", _bench_params(error_prob=1.5), "error_prob=1.5"),
]


# ---- the library: models, tokenizers, the corrector ------------------------------------------------------------------

LIBRARY_MODELS: list[Bad] = []


# ---- the library: training, the study, analysis and reports ---------------------------------------------------------

def _write(name: str, text: str, then: Callable[[Path], object]) -> Callable[[Path], object]:
    """A call that first writes ``text`` to ``tmp/name``, then calls ``then(tmp)``."""
    def call(tmp: Path):
        (tmp / name).write_text(text, encoding="utf-8")
        return then(tmp)

    return call


def _study(finished_only: bool = False, **run):
    """``Study.run`` of the smoke preset in an empty run folder (``run``: a part of the grid)."""
    def call(tmp: Path):
        from csc_hf.study import Preset, Study

        return Study(Preset.load("smoke"), tmp / "run", finished_only=finished_only).run(**run)

    return call


def _load_results(tmp: Path):
    from csc_hf.results import load_results

    return load_results(tmp)


def _read_predictions(tmp: Path):
    from csc_hf.evaluation import read_predictions

    return read_predictions(tmp / "p.txt", ["我门去"])


def _preset(tmp: Path):
    from csc_hf.study import Preset

    return Preset.load(str(tmp / "p.yaml"))


LIBRARY_STUDY: list[Bad] = [
    Bad("run: unknown variant in a part of the grid", _study(variants=["bertt"]), "--variants: unknown variants ['bertt']"),
    Bad("run: finished only, nothing finished", _study(finished_only=True), "has not finished"),
    Bad("preset: unknown key", _write("p.yaml", "variant: [bert]\n", _preset), "unknown keys ['variant']"),
    Bad("results.json missing", _load_results, "results.json does not exist"),
    Bad("results.json without records", _write("results.json", '{"records": []}', _load_results),
        "non-empty 'records' list"),
    Bad("results.json record without its F1", _write("results.json", json.dumps(
        {"records": [{"model": "bert", "seed": 0, "config": "test", "split": "test", "scores": {}}]}), _load_results),
        "record 0 has no score char_cor_f1"),
    Bad("predictions: an edit past the sentence", _write("p.txt", "7:们\n", _read_predictions), "line 1: bad edit '7:们'"),
    Bad("predictions: more lines than sentences", _write("p.txt", "\n\n", _read_predictions), "2 lines for 1 sentences"),
]


# ---- the command line -----------------------------------------------------------------------------------------------

CLI: list[BadCli] = [
    BadCli("correct: TEXT and --file", ("correct", "{tmp}/model", "我门", "--file", "{tmp}/in.txt"), "not both",
           {"in.txt": "我门\n"}),
]


LIBRARY = LIBRARY_DATA + LIBRARY_MODELS + LIBRARY_STUDY


@pytest.mark.parametrize("case", LIBRARY, ids=[c.id for c in LIBRARY])
def test_library_rejects(case: Bad, tmp_path):
    with pytest.raises(Exception) as info:
        case.call(tmp_path)
    assert not isinstance(info.value, AssertionError), info.value
    assert case.fragment.lower() in str(info.value).lower(), f"{type(info.value).__name__}: {info.value}"


@pytest.mark.parametrize("case", CLI, ids=[c.id for c in CLI])
def test_cli_rejects(case: BadCli, tmp_path):
    for name, content in case.files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content, encoding="utf-8")
    before = {p for p in tmp_path.rglob("*")}
    argv = [a.replace("{tmp}", str(tmp_path)) for a in case.argv]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    message = err.getvalue().strip()
    assert code == 2, f"exit {code}; stderr: {message}"
    assert "Traceback" not in message and len(message.splitlines()) == 1, message
    assert message.startswith(f"csc-bench {argv[0]}: error: "), message
    assert case.fragment.lower() in message.lower(), message
    assert {p for p in tmp_path.rglob("*")} == before, "a failed command left files behind"

