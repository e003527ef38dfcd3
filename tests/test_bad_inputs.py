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

LIBRARY_MODELS: list[Bad] = []


# ---- the library: training, the study, analysis and reports ---------------------------------------------------------

LIBRARY_STUDY: list[Bad] = []


# ---- the command line -----------------------------------------------------------------------------------------------

GBK = "我们今天去学校。\n".encode("gbk")
TRAIN_YAML = "task: mlm\nmax_steps: 5\nuse_cpu: true\nreport_to: none\noutput_dir: out\n"
SCORES = '{"char_cor_f1": 0.5, "char_det_f1": 0.5, "sent_cor_f1": 0.5, "sent_det_f1": 0.5, "fpr": 0.1}'

CLI: list[BadCli] = [
    BadCli("correct: TEXT and --file", ("correct", "{tmp}/model", "我门", "--file", "{tmp}/in.txt"), "not both",
           {"in.txt": "我门\n"}),
    BadCli("build: a non-UTF-8 file in a datasets: corpus", ("build", "test", "--corpus", "datasets:{tmp}/corpus"),
           "can't decode byte", {"corpus/a.txt": GBK}),
    BadCli("correct: a GBK --file", ("correct", "{tmp}/model", "--file", "{tmp}/in.txt"), "--file {tmp}/in.txt: not UTF-8",
           {"in.txt": GBK}),
    BadCli("correct: --output a folder", ("correct", "{tmp}/model", "我门", "--output", "{tmp}"), "is a folder"),
    BadCli("correct: --keep-bias nan", ("correct", "{tmp}/model", "我门", "--keep-bias", "nan"), "finite"),
    BadCli("correct: a model folder without tokenizer files", ("correct", "{tmp}/model", "我门"), "no tokenizer files",
           {"model/config.json": "{}"}),
    BadCli("evaluate: --bootstrap -1", ("evaluate", "{tmp}/model", "--bootstrap", "-1"), "--bootstrap -1"),
    BadCli("evaluate: --keep-bias nan", ("evaluate", "{tmp}/model", "--keep-bias", "0", "nan"), "finite numbers"),
    BadCli("evaluate: --output a folder", ("evaluate", "{tmp}/model", "--output", "{tmp}"), "is a folder"),
    BadCli("evaluate: --output in a missing folder", ("evaluate", "{tmp}/model", "--output", "{tmp}/no/e.json"),
           "folder {tmp}/no does not exist"),
    BadCli("evaluate: an unknown config", ("evaluate", "{tmp}/model", "--configs", "tset"), "unknown ['tset']"),
    BadCli("evaluate: a missing model folder", ("evaluate", "{tmp}/model"), "model folder {tmp}/model does not exist"),
    BadCli("push: results with records not a list", ("push", "{tmp}/model", "user/x", "--results", "{tmp}/r.json"),
           "r.json: expected a list of records", {"r.json": '{"records": 5}'}),
    BadCli("push: a record without scores", ("push", "{tmp}/model", "user/x", "--results", "{tmp}/r.json"),
           "record 0 lacks ['config', 'split', 'scores']", {"r.json": '[{"foo": 1}]'}),
    BadCli("push: a record with a missing score", ("push", "{tmp}/model", "user/x", "--results", "{tmp}/r.json"),
           "record 0 has no numeric scores ['fpr']",
           {"r.json": '[{"config": "test", "split": "test", "scores": ' + SCORES.replace('"fpr": 0.1', '"fpr": null') + "}]"}),
    BadCli("push: results not JSON", ("push", "{tmp}/model", "user/x", "--results", "{tmp}/r.json"), "r.json: not JSON",
           {"r.json": "records: 5"}),
    BadCli("push: a model folder without tokenizer files", ("push", "{tmp}/model", "user/x", "--folder", "{tmp}/hub"),
           "no tokenizer files", {"model/config.json": "{}"}),
    BadCli("train: max_steps not a number", ("train", "{tmp}/c.yaml"), "c.yaml: max_steps='abc' must be int",
           {"c.yaml": TRAIN_YAML.replace("max_steps: 5", "max_steps: abc")}),
    BadCli("train: an override of the wrong type", ("train", "{tmp}/c.yaml", "learning_rate=fast"),
           "override learning_rate=fast: learning_rate='fast' must be float", {"c.yaml": TRAIN_YAML}),
    BadCli("train: a missing local init_from", ("train", "{tmp}/c.yaml", "init_from={tmp}/enc"),
           "init_from={tmp}/enc: the folder does not exist", {"c.yaml": TRAIN_YAML}),
    BadCli("train: a tokenizer_path without tokenizer files", ("train", "{tmp}/c.yaml", "tokenizer_path={tmp}/enc"),
           "no tokenizer files", {"c.yaml": TRAIN_YAML, "enc/config.json": "{}"}),
    BadCli("train: a missing base", ("train", "{tmp}/c.yaml"), "base.yaml does not exist (base of {tmp}/c.yaml)",
           {"c.yaml": "base: base.yaml\n" + TRAIN_YAML}),
    BadCli("train: a bad bench_params value", ("train", "{tmp}/c.yaml", "bench_params={error_prob: 2}"),
           "bench_params: error_prob=2", {"c.yaml": TRAIN_YAML}),
]


LIBRARY = LIBRARY_DATA + LIBRARY_MODELS + LIBRARY_STUDY


@pytest.mark.parametrize("case", LIBRARY, ids=[c.id for c in LIBRARY])
def test_library_rejects(case: Bad, tmp_path):
    with pytest.raises(Exception) as info:
        case.call(tmp_path)
    assert not isinstance(info.value, AssertionError), info.value
    assert case.fragment.lower() in str(info.value).lower(), f"{type(info.value).__name__}: {info.value}"


@contextlib.contextmanager
def _no_progress_bars():
    """datasets' progress bars (stderr) are not part of an error message."""
    import datasets

    enabled = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if enabled:
            datasets.enable_progress_bars()


@pytest.mark.parametrize("case", CLI, ids=[c.id for c in CLI])
def test_cli_rejects(case: BadCli, tmp_path):
    for name, content in case.files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content, encoding="utf-8")
    before = {p for p in tmp_path.rglob("*")}
    argv = [a.replace("{tmp}", str(tmp_path)) for a in case.argv]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), _no_progress_bars():
        code = main(argv)
    message = err.getvalue().strip()
    assert code == 2, f"exit {code}; stderr: {message}"
    assert "Traceback" not in message and len(message.splitlines()) == 1, message
    assert message.startswith(f"csc-bench {argv[0]}: error: "), message
    assert case.fragment.replace("{tmp}", str(tmp_path)).lower() in message.lower(), message
    assert {p for p in tmp_path.rglob("*")} == before, "a failed command left files behind"

