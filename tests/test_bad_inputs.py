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

def _corrector(call: str = "", **options):
    """A Corrector over a tiny random model built with `options`; `call`: then `with_options` or the pipeline task
    with them instead."""

    def run(tmp):
        from transformers import pipeline

        from csc_hf.modeling import CSCConfig, CSCForCorrection, CSCTokenizer
        from csc_hf.pipeline import TASK, Corrector

        tokenizer = CSCTokenizer.from_texts(["我们去北京"])
        sizes = dict(hidden_size=8, num_hidden_layers=1, num_attention_heads=1, intermediate_size=8,
                     max_position_embeddings=16)  # fmt: skip
        model = CSCForCorrection(CSCConfig(vocab_size=len(tokenizer), **sizes))
        if call == "with_options":
            return Corrector(model, tokenizer).with_options(**options)
        if call == "pipeline":
            return pipeline(TASK, model=model, tokenizer=tokenizer)("我们", **options)
        return Corrector(model, tokenizer, **options)

    return run


LIBRARY_MODELS: list[Bad] = [
    Bad("Corrector keep_bias nan", _corrector(keep_bias=float("nan")), "keep_bias must be a finite number"),
    Bad("Corrector keep_bias inf", _corrector(keep_bias=float("inf")), "keep_bias must be a finite number"),
    Bad("Corrector keep_bias a str", _corrector(keep_bias="1.0"), "keep_bias must be a number"),
    Bad("Corrector threshold nan", _corrector(threshold=float("nan")), "threshold must be a finite number"),
    Bad("Corrector threshold a str", _corrector(threshold="0.5"), "threshold must be a number"),
    Bad("with_options -inf", _corrector("with_options", keep_bias=-float("inf")), "keep_bias must be a finite"),
    Bad("pipeline keep_bias nan", _corrector("pipeline", keep_bias=float("nan")), "keep_bias must be a finite number"),
]


# ---- the library: training, the study, analysis and reports ---------------------------------------------------------

LIBRARY_STUDY: list[Bad] = []


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

