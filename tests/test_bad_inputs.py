"""Bad inputs, as a table: each row is one kind of bad input and a fragment of the clear error it must give.

To cover a new kind, add a row to the table of its surface:
- ``LIBRARY``: ``Bad(id, call, fragment)``; ``call(tmp)`` gets an empty folder and must raise an exception whose
  message contains ``fragment`` (case-insensitive) — never a bare TypeError/KeyError from deep inside a library.
- ``CLI``: ``BadCli(id, argv, fragment, files)``; ``files`` (name -> str or bytes) are written into the folder first,
  and ``{tmp}`` in ``argv`` is replaced by it. ``csc-bench ARGV`` must exit with 2 and print exactly one line on
  stderr (``csc-bench CMD: error: ...`` containing ``fragment``), no traceback, and leave every file as it was: no
  output behind, no input changed or deleted.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
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


def _load_confusion(name: str, text: str):
    from csc_hf.confusion import ConfusionSet

    def call(tmp):
        (tmp / name).write_text(text, encoding="utf-8")
        return ConfusionSet.load(tmp / name)

    return call


# ---- the library: data, benchmark, confusion sets, scoring ----------------------------------------------------------

LIBRARY_DATA: list[Bad] = [
    Bad("error_prob above 1", _bench_params(error_prob=1.5), "error_prob=1.5"),
    Bad("bench bool given as a string", _bench_params(dedupe="false"), "dedupe='false' must be a bool"),
    Bad("bench int given as a string", _bench_params(seed="1"), "seed='1' must be an int"),
    Bad("bench int given as a bool", _bench_params(n_test=True), "n_test=True must be an int or None"),
    Bad("bench float given as a string", _bench_params(error_prob="0.1"), "error_prob='0.1' must be a number"),
    Bad("bench probs not a tuple", _bench_params(probs=0.1), "probs=0.1 must be a tuple of numbers"),
    Bad("bench negative seed", _bench_params(seed=-1), "seed=-1 must not be negative"),
    Bad(
        "bench probs naming one split",
        _bench_params(probs=(0.12345671, 0.12345674)),
        "P_e=0.12345671 and P_e=0.12345674 both",
    ),
    Bad("bench min_len above max_len", _bench_params(min_len=50, max_len=20), "need 1 <= min_len <= max_len"),
    Bad(
        "confusion json: emoji key",
        _load_confusion("s.json", '{"😀": {"添": "phonetic"}}'),
        "key '😀' is not a Chinese",
    ),
    Bad(
        "confusion json: only non-Han candidates",
        _load_confusion("s.json", '{"天": {"a": "phonetic", "1": "graphic"}}'),
        "no candidate is a Chinese character",
    ),
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
        sizes = dict(
            hidden_size=8, num_hidden_layers=1, num_attention_heads=1, intermediate_size=8, max_position_embeddings=16
        )
        model = CSCForCorrection(CSCConfig(vocab_size=len(tokenizer), **sizes))
        if call == "with_options":
            return Corrector(model, tokenizer).with_options(**options)
        if call == "pipeline":
            return pipeline(TASK, model=model, tokenizer=tokenizer)("我们", **options)
        return Corrector(model, tokenizer, **options)

    return run


def _saved_corrector(tokenizer: bool = True, decoding: str | None = None, similar: str | None = None):
    """``Corrector.from_pretrained`` of a tiny model saved in ``tmp/m`` (with its tokenizer, and ``decoding`` as its
    csc_decoding.json)."""

    def run(tmp):
        from csc_hf.modeling import CSCConfig, CSCForCorrection, CSCTokenizer
        from csc_hf.pipeline import Corrector
        from csc_hf.run_layout import DECODING_FILE

        characters = CSCTokenizer.from_texts(["我们去北京"])
        sizes = dict(
            hidden_size=8, num_hidden_layers=1, num_attention_heads=1, intermediate_size=8, max_position_embeddings=16
        )
        CSCForCorrection(CSCConfig(vocab_size=len(characters), **sizes)).save_pretrained(tmp / "m")
        if tokenizer:
            characters.save_pretrained(tmp / "m")
        if decoding is not None:
            (tmp / "m" / DECODING_FILE).write_text(decoding, encoding="utf-8")
        if similar is not None:
            (tmp / "m" / "csc_similar.json").write_text(similar, encoding="utf-8")
        return Corrector.from_pretrained(tmp / "m")

    return run


def _save_decoding(**decoding):
    def run(tmp):
        from csc_hf.model_folder import save_decoding

        return save_decoding(tmp, decoding)

    return run


def _missing_runs_model(tmp):
    from csc_hf.pipeline import Corrector

    return Corrector.from_pretrained("runs/no-such-model-of-csc-hf")


LIBRARY_MODELS: list[Bad] = [
    Bad(
        "Corrector.from_pretrained: a missing runs/ folder, never the Hub",
        _missing_runs_model,
        "model folder runs/no-such-model-of-csc-hf does not exist",
    ),
    Bad("Corrector.from_pretrained: no tokenizer files", _saved_corrector(tokenizer=False), "no tokenizer files"),
    Bad("csc_decoding.json not JSON", _saved_corrector(decoding="keep_bias: 2"), "csc_decoding.json: not a JSON file"),
    Bad("csc_decoding.json a list", _saved_corrector(decoding="[2.0]"), "expected a JSON object with keep_bias"),
    Bad("csc_decoding.json unknown key", _saved_corrector(decoding='{"keep-bias": 2}'), "unknown keys ['keep-bias']"),
    Bad(
        "csc_decoding.json keep_bias NaN",
        _saved_corrector(decoding='{"keep_bias": NaN}'),
        "keep_bias must be a finite number",
    ),
    Bad(
        "csc_decoding.json keep_bias a str",
        _saved_corrector(decoding='{"keep_bias": "2"}'),
        "keep_bias must be a number",
    ),
    Bad(
        "csc_decoding.json threshold above 1",
        _saved_corrector(decoding='{"threshold": 2}'),
        "threshold must be in [0, 1]",
    ),
    Bad("save_decoding: an unknown setting", _save_decoding(keepbias=1.0), "unknown decoding settings ['keepbias']"),
    Bad("Corrector keep_bias nan", _corrector(keep_bias=float("nan")), "keep_bias must be a finite number"),
    Bad("Corrector keep_bias inf", _corrector(keep_bias=float("inf")), "keep_bias must be a finite number"),
    Bad("Corrector keep_bias a str", _corrector(keep_bias="1.0"), "keep_bias must be a number"),
    Bad("Corrector threshold nan", _corrector(threshold=float("nan")), "threshold must be a finite number"),
    Bad("Corrector threshold a str", _corrector(threshold="0.5"), "threshold must be a number"),
    Bad("with_options -inf", _corrector("with_options", keep_bias=-float("inf")), "keep_bias must be a finite"),
    Bad("pipeline keep_bias nan", _corrector("pipeline", keep_bias=float("nan")), "keep_bias must be a finite number"),
    Bad(
        "Corrector similarity_prior negative", _corrector(similarity_prior=-1.0), "similarity_prior must be at least 0"
    ),
    Bad("Corrector similarity_prior a str", _corrector(similarity_prior="2"), "similarity_prior must be a number"),
    Bad(
        "pipeline similarity_prior inf",
        _corrector("pipeline", similarity_prior=float("inf")),
        "similarity_prior must be a finite number",
    ),
    Bad(
        "csc_similar.json not a mapping of characters",
        _saved_corrector(similar='{"们": ["门"]}'),
        "csc_similar.json: expected a JSON object mapping single characters to strings",
    ),
    Bad("csc_similar.json not JSON", _saved_corrector(similar="们: 门"), "csc_similar.json: not a JSON file"),
    Bad(
        "csc_decoding.json similarity_prior negative",
        _saved_corrector(decoding='{"similarity_prior": -2}'),
        "similarity_prior must be at least 0",
    ),
]


# ---- the library: training, the study, analysis and reports ---------------------------------------------------------


def _write(name: str, text: str, then: Callable[[Path], object]) -> Callable[[Path], object]:
    """A call that first writes ``text`` to ``tmp/name``, then calls ``then(tmp)``."""

    def call(tmp: Path):
        (tmp / name).write_text(text, encoding="utf-8")
        return then(tmp)

    return call


def _write_bytes(name: str, data: bytes, then: Callable[[Path], object]) -> Callable[[Path], object]:
    """A call that first writes ``data`` to ``tmp/name``, then calls ``then(tmp)``."""

    def call(tmp: Path):
        (tmp / name).write_bytes(data)
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
    from csc_hf.files import read_predictions

    return read_predictions(tmp / "p.txt", ["我门去"])


def _preset(tmp: Path):
    from csc_hf.study import Preset

    return Preset.load(str(tmp / "p.yaml"))


def _augmentation_preset(name: str, text: str):
    """A preset whose augmentation set is the file ``name`` holding ``text``."""

    def call(tmp: Path):
        (tmp / name).write_text(text, encoding="utf-8")
        (tmp / "p.yaml").write_text(f"augmentation: {{confusion: {tmp / name}, variants: [bert]}}\n", encoding="utf-8")
        return _preset(tmp)

    return call


LIBRARY_STUDY: list[Bad] = [
    Bad(
        "preset: augmentation file with a bad line",
        _augmentation_preset("x_shape.txt", "天,夭\nabc\n"),
        "x_shape.txt, line 2: expected a character",
    ),
    Bad(
        "preset: augmentation file of an unknown layout",
        _augmentation_preset("aug.txt", "天,夭\n"),
        "cannot tell the confusion set format from the name",
    ),
    Bad(
        "preset: augmentation json with an emoji key",
        _augmentation_preset("s.json", '{"😀": {"添": "phonetic"}}'),
        "key '😀' is not a Chinese",
    ),
    Bad(
        "preset: augmentation file missing",
        _write("p.yaml", "augmentation: {confusion: /nowhere/s.json}\n", _preset),
        "s.json does not exist",
    ),
    Bad(
        "preset: bootstrap negative",
        _write("p.yaml", "bootstrap: -5\n", _preset),
        "p.yaml: bootstrap must be a whole number >= 0 (0: no intervals), got -5",
    ),
    Bad(
        "preset: similarity_prior_grid negative",
        _write("p.yaml", "similarity_prior_grid: [0, -1]\n", _preset),
        "similarity_prior_grid must be at least 0 (0: off), got -1.0",
    ),
    Bad(
        "preset: keep_bias_grid not a list",
        _write("p.yaml", "keep_bias_grid: 2\n", _preset),
        "keep_bias_grid=2 must be a list of numbers",
    ),
    Bad(
        "preset: keep_bias_grid with a str",
        _write("p.yaml", "keep_bias_grid: [0, two]\n", _preset),
        "keep_bias_grid=[0, 'two'] must be a list of numbers",
    ),
    Bad(
        "preset: augmentation unknown key",
        _write("p.yaml", "augmentation: {set: sighan13}\n", _preset),
        "augmentation: unknown keys ['set']",
    ),
    Bad(
        "run: unknown variant in a part of the grid",
        _study(variants=["bertt"]),
        "--variants: unknown variants ['bertt']",
    ),
    Bad("run: finished only, nothing finished", _study(finished_only=True), "has not finished"),
    Bad("preset: unknown key", _write("p.yaml", "variant: [bert]\n", _preset), "unknown keys ['variant']"),
    Bad("results.json missing", _load_results, "results.json does not exist"),
    Bad(
        "results.json without records",
        _write("results.json", '{"records": []}', _load_results),
        "non-empty 'records' list",
    ),
    Bad(
        "results.json record without its F1",
        _write(
            "results.json",
            json.dumps({"records": [{"model": "bert", "seed": 0, "config": "test", "split": "test", "scores": {}}]}),
            _load_results,
        ),
        "record 0 has no score char_cor_f1",
    ),
    Bad(
        "predictions: an edit past the sentence",
        _write("p.txt", "7:们\n", _read_predictions),
        "line 1: bad edit '7:们'",
    ),
    Bad(
        "predictions: more lines than sentences", _write("p.txt", "\n\n", _read_predictions), "2 lines for 1 sentences"
    ),
]


# ---- the command line -----------------------------------------------------------------------------------------------

GBK = "我们今天去学校。\n".encode("gbk")
TRAIN_YAML = "task: mlm\nmax_steps: 5\nuse_cpu: true\nreport_to: none\noutput_dir: out\n"
SCORES = '{"char_cor_f1": 0.5, "char_det_f1": 0.5, "sent_cor_f1": 0.5, "sent_det_f1": 0.5, "fpr": 0.1}'


def _weights(**tensors: tuple[int, ...]) -> bytes:
    """A safetensors file of zero tensors of these shapes (default: one small tensor)."""
    import numpy as np
    from safetensors.numpy import save

    return save({name: np.zeros(shape, dtype=np.float32) for name, shape in (tensors or {"w": (2,)}).items()})


WEIGHTS = _weights()


def _model(folder: str = "model", config: str = "{}", **files: str | bytes) -> dict[str, str | bytes]:
    """The files of a model folder that the checks before loading accept (``files`` replace or add some)."""
    found = {"config.json": config, "tokenizer.json": "{}", "model.safetensors": WEIGHTS, **files}
    return {f"{folder}/{name}": content for name, content in found.items()}


def _score(*argv: str) -> tuple[str, ...]:
    return ("score", "--predictions", "{tmp}/p.txt", "--references", "{tmp}/ref.tsv", *argv)


PAIRS = {"p.txt": "我们\n", "ref.tsv": "我门\t我们\n"}

CLI_OUTPUTS: list[BadCli] = [  # an output never destroys an input (issue 29, item 2)
    BadCli("score: --output the predictions", _score("--output", "{tmp}/p.txt"), "--output {tmp}/p.txt is", PAIRS),
    BadCli("score: --output the references", _score("--output", "{tmp}/ref.tsv"), "--output {tmp}/ref.tsv is", PAIRS),
    BadCli(
        "score: --output the baseline",
        _score("--baseline", "{tmp}/b.txt", "--output", "{tmp}/b.txt"),
        "--output {tmp}/b.txt is {tmp}/b.txt, which the command reads",
        {**PAIRS, "b.txt": "我门\n"},
    ),
    BadCli(
        "analyze: --output the data",
        ("analyze", "{tmp}/ref.tsv", "--output", "{tmp}/ref.tsv"),
        "--output {tmp}/ref.tsv is {tmp}/ref.tsv, which the command reads",
        PAIRS,
    ),
    BadCli(
        "evaluate: --output inside the model folder",
        ("evaluate", "{tmp}/model", "--output", "{tmp}/model/config.json"),
        "--output {tmp}/model/config.json is inside {tmp}/model",
        _model(),
    ),
    BadCli(
        "correct: --output the --file",
        ("correct", "{tmp}/model", "--file", "{tmp}/in.txt", "--output", "{tmp}/in.txt"),
        "--output {tmp}/in.txt is {tmp}/in.txt",
        {"in.txt": "我门\n"},
    ),
    BadCli(
        "correct: --output inside the model folder",
        ("correct", "{tmp}/model", "我门", "--output", "{tmp}/model/tokenizer.json"),
        "is inside {tmp}/model",
        _model(),
    ),
    BadCli(
        "confusion: --output the --input",
        ("confusion", "import", "--input", "{tmp}/s.json", "--output", "{tmp}/s.json"),
        "--output {tmp}/s.json is {tmp}/s.json",
        {"s.json": '{"天": {"添": "phonetic"}}'},
    ),
    BadCli(
        "train: output_dir is init_from",
        ("train", "{tmp}/c.yaml", "init_from={tmp}/model", "output_dir={tmp}/model"),
        "output_dir {tmp}/model is {tmp}/model, which the command reads",
        {"c.yaml": "task: mlm\nmax_steps: 5\nuse_cpu: true\nreport_to: none\n", **_model()},
    ),
    BadCli(
        "train: output_dir inside init_from",
        ("train", "{tmp}/c.yaml", "init_from={tmp}/model", "output_dir={tmp}/model/out"),
        "output_dir {tmp}/model/out is inside {tmp}/model",
        {"c.yaml": "task: mlm\nmax_steps: 5\nuse_cpu: true\nreport_to: none\n", **_model()},
    ),
]

CLI_FOLDERS: list[BadCli] = [  # a folder the command did not make is never deleted (issue 29, item 3)
    BadCli(
        "push: --folder holding the model",
        ("push", "{tmp}/parent/m", "user/x", "--folder", "{tmp}/parent"),
        "--folder {tmp}/parent holds {tmp}/parent/m, which the command reads",
        {**_model("parent/m"), "parent/notes.txt": "the user's other files"},
    ),
    BadCli(
        "push: --folder a folder of other files",
        ("push", "{tmp}/model", "user/x", "--folder", "{tmp}/important"),
        "--folder {tmp}/important is a folder of other files",
        {**_model(), "important/data.txt": "the user's data"},
    ),
    BadCli(
        "push: --folder the model itself",
        ("push", "{tmp}/model", "user/x", "--folder", "{tmp}/model"),
        "--folder {tmp}/model is {tmp}/model, which the command reads",
        _model(),
    ),
    BadCli(
        "push: --folder inside the model",
        ("push", "{tmp}/model", "user/x", "--folder", "{tmp}/model/hub"),
        "--folder {tmp}/model/hub is inside {tmp}/model",
        _model(),
    ),
    BadCli(
        "export: --overwrite a folder of other files",
        ("export", "{tmp}/data", "test", "--overwrite"),
        "DIRECTORY {tmp}/data is a folder of other files",
        {"data/thesis.tex": "the user's data"},
    ),
    BadCli(
        "export: into the corpus it reads",
        ("export", "{tmp}/corpus", "test", "--overwrite", "--corpus", "datasets:{tmp}/corpus"),
        "DIRECTORY {tmp}/corpus is {tmp}/corpus, which the command reads",
        {"corpus/a.txt": "我们今天去学校。\n"},
    ),
    BadCli(
        "build: --output a file",
        ("build", "test", "--output", "{tmp}/f.txt"),
        "--output {tmp}/f.txt is a file; give a folder",
        {"f.txt": "x"},
    ),
    BadCli(
        "run: --output a file",
        ("run", "--preset", "smoke", "--output", "{tmp}/f.txt"),
        "--output {tmp}/f.txt is a file; give a folder",
        {"f.txt": "x"},
    ),
]

TRAIN = {"c.yaml": TRAIN_YAML}


def _train(*overrides: str) -> tuple[str, ...]:
    return ("train", "{tmp}/c.yaml", *overrides)


CLI_TRAINING: list[BadCli] = [  # every key, type, range and path before any work (issue 29, items 1, 5 and weak)
    BadCli(
        "train: a misspelt model_overrides key",
        _train("model_overrides={hidden_dropout_probb: 0.9}"),
        "unknown BertConfig fields ['hidden_dropout_probb'] ('hidden_dropout_probb': did you mean "
        "'hidden_dropout_prob'?)",
        TRAIN,
    ),
    BadCli(
        "train: a misspelt model_overrides key of a variant",
        _train("task=correction", "variant=all_gate", "model_overrides={fusoin: sum}"),
        "'fusoin': did you mean 'fusion'?",
        TRAIN,
    ),
    BadCli(
        "train: a model_overrides value of the wrong type",
        _train("model_overrides={num_hidden_layers: two}"),
        "model_overrides: num_hidden_layers='two' must be an int",
        TRAIN,
    ),
    BadCli(
        "train: a model_overrides value the config refuses",
        _train("task=correction", "model_overrides={fusion: product}"),
        "model_overrides: unknown fusion 'product'",
        TRAIN,
    ),
    BadCli(
        "train: model_overrides vocab_size",
        _train("model_overrides={vocab_size: 5}"),
        "['vocab_size'] are set from the tokenizer",
        TRAIN,
    ),
    BadCli(
        "train: a pickled .npy of vectors",
        _train("task=correction", "model_overrides={sources: [pinyin_vectors], phonetic_vectors: {tmp}/v.npy}"),
        "vectors file {tmp}/v.npy: a .npy file holds one array without its keys (or a pickled dict, which is not "
        "loaded",
        {**TRAIN, "v.npy": b"\x93NUMPY"},
    ),
    BadCli(
        "train: batch size 0",
        _train("per_device_train_batch_size=0"),
        "per_device_train_batch_size=0 must be at least 1",
        TRAIN,
    ),
    BadCli(
        "train: gradient accumulation 0",
        _train("gradient_accumulation_steps=0"),
        "gradient_accumulation_steps=0 must be at least 1",
        TRAIN,
    ),
    BadCli("train: learning rate nan", _train("learning_rate=.nan"), "learning_rate=nan must be at least 0", TRAIN),
    BadCli("train: max_steps 0", _train("max_steps=0"), "max_steps=0 must be -1 or at least 1", TRAIN),
    BadCli("train: max_length 1", _train("max_length=1"), "max_length=1 must be at least 3", TRAIN),
    BadCli("train: max_length 0", _train("max_length=0"), "max_length=0 must be at least 3", TRAIN),
    BadCli("train: a negative seed", _train("seed=-3"), "seed=-3 must be at least 0", TRAIN),
    BadCli("train: adam_beta2 1", _train("adam_beta2=1"), "adam_beta2=1 must be in [0, 1)", TRAIN),
    BadCli("train: neftune noise nan", _train("neftune_noise_alpha=.nan"), "neftune_noise_alpha=nan must be", TRAIN),
    BadCli("train: output_dir empty", _train("output_dir="), "output_dir=None: give the folder", TRAIN),
    BadCli(
        "train: output_dir a file",
        _train("output_dir={tmp}/f.txt"),
        "output_dir {tmp}/f.txt is a file; give a folder",
        {**TRAIN, "f.txt": "x"},
    ),
    BadCli(
        "train: init_from with weights cut short",
        _train("init_from={tmp}/model"),
        "model.safetensors is not a complete safetensors file",
        {**TRAIN, **_model(**{"model.safetensors": WEIGHTS[:-3]})},
    ),
    BadCli(
        "train: max_length past init_from's positions",
        _train("init_from={tmp}/model", "max_length=64"),
        "max_length=64, but init_from={tmp}/model has 16 positions",
        {**TRAIN, **_model(config='{"max_position_embeddings": 16}')},
    ),
    BadCli("train: a GBK config", ("train", "{tmp}/c.yaml"), "c.yaml: not UTF-8", {"c.yaml": "# 说明\n".encode("gbk")}),
    BadCli(
        "train: a GBK base",
        ("train", "{tmp}/c.yaml"),
        "b.yaml: not UTF-8 (invalid",
        {"c.yaml": "base: b.yaml\n" + TRAIN_YAML, "b.yaml": "# 说明\nmax_steps: 3\n".encode("gbk")},
    ),
    BadCli(
        "train: a key given twice",
        ("train", "{tmp}/c.yaml"),
        "c.yaml, line 6: the key 'max_steps' is given twice (also on line 2)",
        {"c.yaml": TRAIN_YAML + "max_steps: 50\n"},
    ),
    BadCli(
        "train: a key given twice in an override",
        _train("model_overrides={hidden_dropout_prob: 0.1, hidden_dropout_prob: 0.2}"),
        "line 1: the key 'hidden_dropout_prob' is given twice",
        TRAIN,
    ),
    BadCli(
        "run: a misspelt finetune key",
        ("run", "--preset", "{tmp}/p.yaml", "--output", "{tmp}/run"),
        "preset p: finetune: unknown keys ['max_stepz'] ('max_stepz': did you mean 'max_steps'?)",
        {"p.yaml": "variants: [bert]\ntests: [test]\nfinetune: {max_stepz: 5}\n"},
    ),
    BadCli(
        "run: a pretrain value out of range",
        ("run", "--preset", "{tmp}/p.yaml", "--output", "{tmp}/run"),
        "preset p: pretrain: learning_rate=-0.001 must be at least 0",
        {"p.yaml": "variants: [bert]\ntests: [test]\npretrain: {learning_rate: -1.0e-3}\n"},
    ),
    BadCli(
        "run: a misspelt model key",
        ("run", "--preset", "{tmp}/p.yaml", "--output", "{tmp}/run"),
        "preset p: model: model_overrides: unknown BertConfig fields ['hidden_layers']",
        {"p.yaml": "variants: [bert]\ntests: [test]\nmodel: {hidden_layers: 2}\n"},
    ),
    BadCli("run: a negative --seeds", ("run", "--output", "{tmp}/run", "--seeds", "-1"), "--seeds: seed=-1 must be"),
]

CLI_MODELS: list[BadCli] = [  # a model folder's problems named before it loads
    BadCli(
        "correct: empty weights",
        ("correct", "{tmp}/model", "我门"),
        "model.safetensors is not a complete safetensors file",
        _model(config='{"model_type": "bert"}', **{"model.safetensors": b""}),
    ),
    BadCli(
        "correct: weights of another vocabulary",
        ("correct", "{tmp}/model", "我门"),
        "holds bert.embeddings.word_embeddings.weight of shape [10, 8], but config.json says vocab_size x hidden "
        "size [13, 8]",
        _model(
            config='{"model_type": "bert", "vocab_size": 13, "hidden_size": 8}',
            **{"model.safetensors": _weights(**{"bert.embeddings.word_embeddings.weight": (10, 8)})},
        ),
    ),
    BadCli(
        "correct: an unknown model_type",
        ("correct", "{tmp}/model", "我门"),
        "model_type 'nope' is not a model type of transformers",
        _model(config='{"model_type": "nope"}'),
    ),
    BadCli(
        "correct: a model's own code without --trust-remote-code",
        ("correct", "{tmp}/model", "我门"),
        "pass --trust-remote-code",
        _model(config='{"model_type": "nope", "auto_map": {"AutoConfig": "c.NopeConfig"}}'),
    ),
    BadCli(
        "correct: tokenizer.json not JSON",
        ("correct", "{tmp}/model", "我门"),
        "model/tokenizer.json: not JSON",
        _model(config='{"model_type": "bert"}', **{"tokenizer.json": "{"}),
    ),
    BadCli(
        "correct: config.json in GBK", ("correct", "{tmp}/model", "我门"), "config.json: not UTF-8", _model(config=GBK)
    ),
    BadCli(
        "correct: --bf16-weights with --precision fp32",
        ("correct", "{tmp}/model", "我门", "--precision", "fp32", "--bf16-weights"),
        "--bf16-weights with --precision fp32: bf16_weights=True holds the weights in bf16: it contradicts",
    ),
    BadCli(
        "evaluate: --bf16-weights with --precision fp32",
        ("evaluate", "{tmp}/model", "--configs", "test", "--precision", "fp32", "--bf16-weights"),
        "--bf16-weights with --precision fp32: bf16_weights=True",
    ),
    BadCli("correct: a TEXT with a line break", ("correct", "{tmp}/model", "我门\n他门"), "TEXT 1 holds a line break"),
    BadCli(
        "score: a wrong<TAB>correct file as predictions",
        _score(),
        "p.txt, line 1: a TAB in a predicted sentence",
        {"p.txt": "我门\t我们\n", "ref.tsv": "我门\t我们\n"},
    ),
    BadCli(
        "push: a --model-name no record has",
        ("push", "{tmp}/model", "user/x", "--results", "{tmp}/r.json", "--model-name", "bertt"),
        "holds no records of this model (model bertt); it holds bert",
        {"r.json": '[{"model": "bert", "config": "test", "split": "test", "scores": ' + SCORES + "}]"},
    ),
    BadCli(
        "push: a token on the command line",
        ("push", "{tmp}/model", "user/x", "--token", "hf_abc"),
        "--token is not taken: a token on the command line shows in the process list",
    ),
]


def _read_only(folder: str) -> bool:
    try:
        handle, probe = tempfile.mkstemp(dir=folder)
    except OSError:
        return True
    os.close(handle)
    os.unlink(probe)
    return False


if Path("/sys").is_dir() and _read_only("/sys"):
    CLI_TRAINING.append(  # a read-only place, even for root
        BadCli("train: a read-only output_dir", _train("output_dir=/sys/csc_hf_out"), "cannot write in /sys", TRAIN)
    )

CLI: list[BadCli] = [
    BadCli(
        "correct: TEXT and --file",
        ("correct", "{tmp}/model", "我门", "--file", "{tmp}/in.txt"),
        "not both",
        {"in.txt": "我门\n"},
    ),
    BadCli(
        "score: fewer predictions than references",
        ("score", "--predictions", "{tmp}/p.txt", "--references", "{tmp}/ref.tsv", "--output", "{tmp}/r.json"),
        "p.txt has 1 lines but the references",
        {"p.txt": "我们\n", "ref.tsv": "我门\t我们\n他门\t他们\n"},
    ),
    BadCli(
        "score: unknown predictions format",
        ("score", "--predictions", "{tmp}/p.txt", "--references", "{tmp}/ref.tsv", "--format", "xml"),
        "--format 'xml' is not a predictions format; choose text, jsonl, edits",
        {"p.txt": "我们\n", "ref.tsv": "我门\t我们\n"},
    ),
    BadCli(
        "score: REF with several splits",
        ("score", "--predictions", "{tmp}/p.txt", "--references", "train"),
        "references train must be one split; it has 2: train/train, train/validation",
        {"p.txt": "我们\n"},
    ),
    BadCli(
        "score: missing predictions file",
        ("score", "--predictions", "{tmp}/none.txt", "--references", "{tmp}/ref.tsv"),
        "none.txt does not exist",
        {"ref.tsv": "我门\t我们\n"},
    ),
    BadCli(
        "score: predictions not UTF-8",
        ("score", "--predictions", "{tmp}/p.txt", "--references", "{tmp}/ref.tsv"),
        "p.txt: not UTF-8",
        {"p.txt": "我们\n".encode("gb18030"), "ref.tsv": "我门\t我们\n"},
    ),
    BadCli(
        "score: jsonl id not in the references",
        ("score", "--predictions", "{tmp}/p.jsonl", "--references", "{tmp}/ref.tsv"),
        "p.jsonl, line 1: id 5 is not in the row numbers",
        {"p.jsonl": '{"id": 5, "prediction": "我们"}\n', "ref.tsv": "我门\t我们\n"},
    ),
    BadCli(
        "build: negative --seed",
        ("build", "test", "--seed", "-1", "--cache-dir", "{tmp}/c"),
        "seed=-1 must not be negative",
    ),
    BadCli(
        "build: --probs naming one split twice",
        ("build", "probs", "--probs", "0.12345671", "0.12345674", "--cache-dir", "{tmp}/c"),
        "P_e=0.12345671 and P_e=0.12345674 both name the split pe123457",
    ),
    BadCli("confusion inspect without --input", ("confusion", "inspect"), "give --input FILE"),
    BadCli(
        "build: a non-UTF-8 file in a datasets: corpus",
        ("build", "test", "--corpus", "datasets:{tmp}/corpus"),
        "can't decode byte",
        {"corpus/a.txt": GBK},
    ),
    BadCli(
        "correct: a GBK --file",
        ("correct", "{tmp}/model", "--file", "{tmp}/in.txt"),
        "--file {tmp}/in.txt: not UTF-8",
        {"in.txt": GBK},
    ),
    BadCli("correct: --output a folder", ("correct", "{tmp}/model", "我门", "--output", "{tmp}"), "is a folder"),
    BadCli("correct: --keep-bias nan", ("correct", "{tmp}/model", "我门", "--keep-bias", "nan"), "finite"),
    BadCli(
        "correct: a model folder without tokenizer files",
        ("correct", "{tmp}/model", "我门"),
        "no tokenizer files",
        {"model/config.json": '{"model_type": "bert"}'},  # read first: an LLM's tokenizer files are others
    ),
    BadCli(
        "correct: an LLM template without {text}",
        ("correct", "{tmp}/model", "我门", "--template", "{tmp}/t.txt"),
        "t.txt: the user message has no {text} placeholder",
        {"model/config.json": '{"model_type": "bert"}', "t.txt": "请改正错别字。"},
    ),
    BadCli(
        "correct: an LLM template with a key given twice",
        ("correct", "{tmp}/model", "我门", "--template", "{tmp}/t.yaml"),
        "t.yaml, line 3: the key 'user' is given twice (also on line 1)",
        {"model/config.json": '{"model_type": "bert"}', "t.yaml": "user: '改正：{text}'\nsystem: 你好\nuser: 改\n"},
    ),
    BadCli(
        "correct: an LLM option for a masked LM",
        ("correct", "{tmp}/model", "我门", "--length-policy", "strict"),
        "is a BertForMaskedLM model, not a causal language model",
        {"model/config.json": '{"model_type": "bert", "architectures": ["BertForMaskedLM"]}'},
    ),
    BadCli(
        "correct: an unknown LLM backend",
        ("correct", "{tmp}/model", "我门", "--backend", "tgi"),
        "backend 'tgi': choose transformers, vllm",
        {"model/config.json": '{"model_type": "bert"}'},
    ),
    BadCli(
        "evaluate: --bootstrap -1",
        ("evaluate", "{tmp}/model", "--bootstrap", "-1"),
        "--bootstrap must be a whole number >= 0 (0: no intervals), got -1",
    ),
    BadCli(
        "evaluate: --keep-bias nan",
        ("evaluate", "{tmp}/model", "--keep-bias", "0", "nan"),
        "--keep-bias must be a finite number, got nan",
    ),
    BadCli(
        "evaluate: --similarity-prior negative",
        ("evaluate", "{tmp}/model", "--similarity-prior", "0", "-1"),
        "--similarity-prior must be at least 0 (0: off), got -1.0",
    ),
    BadCli(
        "correct: --similarity-prior negative",
        ("correct", "{tmp}/model", "我门", "--similarity-prior", "-1"),
        "--similarity-prior must be at least 0 (0: off), got -1.0",
    ),
    BadCli("evaluate: --output a folder", ("evaluate", "{tmp}/model", "--output", "{tmp}"), "is a folder"),
    BadCli(
        "evaluate: --output in a missing folder",
        ("evaluate", "{tmp}/model", "--output", "{tmp}/no/e.json"),
        "folder {tmp}/no does not exist",
    ),
    BadCli(
        "evaluate: an unknown config",
        ("evaluate", "{tmp}/model", "--configs", "tset"),
        "--configs: unknown test config 'tset'; choose from test, ",
    ),
    BadCli("evaluate: a missing model folder", ("evaluate", "{tmp}/model"), "model folder {tmp}/model does not exist"),
    BadCli(
        "push: results with records not a list",
        ("push", "{tmp}/model", "user/x", "--results", "{tmp}/r.json"),
        "r.json: expected a list of records",
        {"r.json": '{"records": 5}'},
    ),
    BadCli(
        "push: a record without scores",
        ("push", "{tmp}/model", "user/x", "--results", "{tmp}/r.json"),
        "record 0 lacks ['config', 'split', 'scores']",
        {"r.json": '[{"foo": 1}]'},
    ),
    BadCli(
        "push: a record with a missing score",
        ("push", "{tmp}/model", "user/x", "--results", "{tmp}/r.json"),
        "record 0 has no numeric scores ['char_cor_f1']",
        {
            "r.json": '[{"config": "test", "split": "test", "scores": '
            + SCORES.replace('"char_cor_f1": 0.5', '"char_cor_f1": null')
            + "}]"
        },
    ),
    BadCli(
        "push: an LLM corrector's results",
        ("push", "{tmp}/model", "user/x", "--results", "{tmp}/r.json"),
        "r.json holds the results of the LLM corrector Qwen/Qwen2.5-7B-Instruct, not of a CSC model folder",
        {
            "r.json": '[{"config": "test", "split": "test", "scores": '
            + SCORES
            + ', "llm": {"settings": {"model": "Qwen/Qwen2.5-7B-Instruct"}}}]'
        },
    ),
    BadCli(
        "push: results not JSON",
        ("push", "{tmp}/model", "user/x", "--results", "{tmp}/r.json"),
        "r.json: not JSON",
        {"r.json": "records: 5"},
    ),
    BadCli(
        "push: a model folder without tokenizer files",
        ("push", "{tmp}/model", "user/x", "--folder", "{tmp}/hub"),
        "no tokenizer files",
        {"model/config.json": "{}"},
    ),
    BadCli(
        "train: max_steps not a number",
        ("train", "{tmp}/c.yaml"),
        "c.yaml: max_steps='abc' must be an int",
        {"c.yaml": TRAIN_YAML.replace("max_steps: 5", "max_steps: abc")},
    ),
    BadCli(
        "train: an override of the wrong type",
        ("train", "{tmp}/c.yaml", "learning_rate=fast"),
        "override learning_rate=fast: learning_rate='fast' must be a number",
        {"c.yaml": TRAIN_YAML},
    ),
    BadCli(
        "train: a missing local init_from",
        ("train", "{tmp}/c.yaml", "init_from={tmp}/enc"),
        "init_from={tmp}/enc: the folder does not exist",
        {"c.yaml": TRAIN_YAML},
    ),
    BadCli(
        "train: a tokenizer_path without tokenizer files",
        ("train", "{tmp}/c.yaml", "tokenizer_path={tmp}/enc"),
        "no tokenizer files",
        {"c.yaml": TRAIN_YAML, "enc/config.json": "{}"},
    ),
    BadCli(
        "train: mlm replacement shares over 1",
        ("train", "{tmp}/c.yaml", "mask_replace_prob=0.7", "random_replace_prob=0.4"),
        "mask_replace_prob=0.7, random_replace_prob=0.4: each must be in [0, 1] and their sum at most 1",
        {"c.yaml": TRAIN_YAML},
    ),
    BadCli(
        "train: a missing base",
        ("train", "{tmp}/c.yaml"),
        "base.yaml does not exist (base of {tmp}/c.yaml)",
        {"c.yaml": "base: base.yaml\n" + TRAIN_YAML},
    ),
    BadCli(
        "train: a bad bench_params value",
        ("train", "{tmp}/c.yaml", "bench_params={error_prob: 2}"),
        "bench_params: error_prob=2",
        {"c.yaml": TRAIN_YAML},
    ),
    BadCli(
        "train: use_benchmark=false without train_files",
        ("train", "{tmp}/c.yaml", "use_benchmark=false"),
        "use_benchmark=false needs train_files",
        {"c.yaml": TRAIN_YAML},
    ),
    BadCli(
        "train: train_files with unequal lengths for bert",
        ("train", "{tmp}/c.yaml", "task=correction", "train_files=[{tmp}/pairs.tsv]"),
        "train_files: {tmp}/pairs.tsv, line 2: source has 3 characters, target 2; the bert variant",
        {"c.yaml": TRAIN_YAML, "pairs.tsv": "我门\t我们\n我门了\t我们\n"},
    ),
    BadCli(
        "train: a pair file as the corpus",
        ("train", "{tmp}/c.yaml", "bench_params={corpus: {tmp}/pairs.tsv}"),
        "holds wrong<TAB>correct sentence pairs",
        {"c.yaml": TRAIN_YAML, "pairs.tsv": "我门去学校\t我们去学校\n"},
    ),
    BadCli(
        "build: a pair file as --corpus",
        ("build", "test", "--corpus", "{tmp}/pairs.tsv"),
        "train_files=[{tmp}/pairs.tsv]",
        {"pairs.tsv": "我门去学校\t我们去学校\n他门在家\t他们在家\n"},
    ),
    BadCli(
        "push: an unknown --license",
        ("push", "{tmp}/model", "user/x", "--license", "apache"),
        "--license 'apache' is not a Hub licence id",
    ),
    BadCli("push: a repo id without owner", ("push", "{tmp}/model", "csc-tiny"), "give a Hub repository id OWNER/NAME"),
]


def _tokenizer_without(token: str):
    """``check_config`` of an mlm config whose ``init_from`` is a tiny BERT whose saved tokenizer lacks ``token``."""

    def call(tmp: Path):
        from transformers import BertConfig, BertForMaskedLM

        from csc_hf.modeling import CSCTokenizer
        from csc_hf.training import check_config

        tokenizer = CSCTokenizer.from_texts(["我们去北京鼻子"])
        tokenizer.save_pretrained(tmp / "enc")
        backend = json.loads((tmp / "enc" / "tokenizer.json").read_text(encoding="utf-8"))
        del backend["model"]["vocab"][token]  # its id is left a hole; the other ids stay
        backend["added_tokens"] = [t for t in backend["added_tokens"] if t["content"] != token]
        (tmp / "enc" / "tokenizer.json").write_text(json.dumps(backend, ensure_ascii=False), encoding="utf-8")
        vocab = tokenizer.get_vocab()
        sizes = dict(hidden_size=8, num_hidden_layers=1, num_attention_heads=1, intermediate_size=8)
        BertForMaskedLM(BertConfig(vocab_size=len(vocab), **sizes)).save_pretrained(tmp / "enc")
        config = {"task": "correction", "mask_rate": 0.15, "init_from": str(tmp / "enc"), "output_dir": str(tmp / "o")}
        return check_config(config, source="c.yaml")

    return call


def _seq2seq_with_keep_bias(tmp: Path):
    """``csc-bench evaluate``'s scoring of a tiny BART with ``--keep-bias 2`` (the model has no logits to bias): an
    error before any test set is built."""
    from unittest import mock

    from csc_hf.evaluation import EvaluationOptions, evaluate_model
    from csc_hf.modeling import CSCTokenizer, build_bart

    tokenizer = CSCTokenizer.from_texts(["我们去北京"])
    sizes = dict(d_model=8, encoder_layers=1, decoder_layers=1, encoder_attention_heads=1, decoder_attention_heads=1)
    build_bart(tokenizer, None, encoder_ffn_dim=8, decoder_ffn_dim=8, **sizes).save_pretrained(tmp / "bart")
    tokenizer.save_pretrained(tmp / "bart")
    with mock.patch("csc_hf.evaluation.scored_splits", side_effect=AssertionError("test sets built before the check")):
        return evaluate_model(tmp / "bart", ["test"], EvaluationOptions(keep_bias_grid=[2.0]))


def _full_disk(tmp: Path):
    """``write_atomic`` on a disk that fills up during the write."""
    from unittest import mock

    from csc_hf.files import write_atomic

    class Full(io.StringIO):
        def write(self, text):
            raise OSError(28, "No space left on device")

    with mock.patch("csc_hf.files.os.fdopen", lambda handle, *args, **kwargs: os.close(handle) or Full()):
        return write_atomic(tmp / "out.txt", "我们\n")


def _export_over_the_current_folder(tmp: Path):
    """``export(".", overwrite=True)`` from inside an earlier export (it holds the marker)."""
    from csc_hf.benchmark.export import export
    from csc_hf.files import OUTPUT_MARKER

    (tmp / "exp").mkdir()
    (tmp / "exp" / OUTPUT_MARKER).write_text("written by csc-bench export\n")
    with contextlib.chdir(tmp / "exp"):
        return export(".", ["test"], overwrite=True)


LIBRARY_TRAINING: list[Bad] = [
    Bad("write_atomic: a full disk", _full_disk, "cannot write"),
    Bad("export: --overwrite the current folder", _export_over_the_current_folder, "holds the current folder"),
    Bad("init_from: a tokenizer without [MASK]", _tokenizer_without("[MASK]"), "lacks the special tokens ['[MASK]']"),
    Bad("init_from: a tokenizer without [PAD]", _tokenizer_without("[PAD]"), "lacks the special tokens ['[PAD]']"),
    Bad("init_from: a tokenizer without [UNK]", _tokenizer_without("[UNK]"), "lacks the special tokens ['[UNK]']"),
    Bad("evaluate: a seq2seq model with keep_bias 2", _seq2seq_with_keep_bias, "keep_bias 2: a seq2seq model has no"),
    Bad(
        "preset: seeds a list of words",
        _write("p.yaml", "seeds: [abc]\n", _preset),
        "seeds=['abc'] must be a list of ints",
    ),
    Bad("preset: seeds a number", _write("p.yaml", "seeds: 0\n", _preset), "seeds=0 must be a list of ints"),
    Bad("preset: a negative seed", _write("p.yaml", "seeds: [0, -1]\n", _preset), "seed=-1 must be at least 0"),
    Bad("preset: eval_batch_size 0", _write("p.yaml", "eval_batch_size: 0\n", _preset), "eval_batch_size=0 must be"),
    Bad(
        "preset: eval_bf16_weights with fp32 fine-tuning",
        _write("p.yaml", "finetune: {precision: fp32}\neval_bf16_weights: true\n", _preset),
        "p.yaml: eval_bf16_weights: bf16_weights=True holds the weights in bf16: it contradicts precision=fp32",
    ),
    Bad(
        "preset: eval_bf16_weights a number",
        _write("p.yaml", "eval_bf16_weights: 1\n", _preset),
        "eval_bf16_weights=1 must be a bool (true or false)",
    ),
    Bad("preset: no tests", _write("p.yaml", "tests: []\n", _preset), "tests is empty"),
    Bad("preset: variants a word", _write("p.yaml", "variants: bert\n", _preset), "variants='bert' must be a list"),
    Bad("preset: a YAML list", _write("p.yaml", "- variants: [bert]\n", _preset), "a preset is a mapping of keys"),
    Bad("preset: in GBK", _write_bytes("p.yaml", "# 说明\nseeds: [0]\n".encode("gbk"), _preset), "p.yaml: not UTF-8"),
    Bad(
        "preset: a bench_params typo",
        _write("p.yaml", "bench_params: {n_tset: 5}\n", _preset),
        "bench_params: unknown keys ['n_tset'] ('n_tset': did you mean 'n_test'?)",
    ),
    Bad(
        "preset: a key given twice",
        _write("p.yaml", "seeds: [0]\nbootstrap: 5\nseeds: [1]\n", _preset),
        "p.yaml, line 3: the key 'seeds' is given twice (also on line 1)",
    ),
    Bad(
        "preset: a keep_bias grid without 0 for bart",
        _write("p.yaml", "variants: [bert, bart]\nkeep_bias_grid: [1, 2]\n", _preset),
        "keep_bias_grid=[1, 2] lacks 0, with which the seq2seq variants ['bart'] decode",
    ),
    Bad(
        "preset: augmentation variants a word",
        _write("p.yaml", "augmentation: {variants: bert}\n", _preset),
        "augmentation: variants='bert' must be a tuple of strs",
    ),
]

LIBRARY = LIBRARY_DATA + LIBRARY_MODELS + LIBRARY_STUDY + LIBRARY_TRAINING
CLI += CLI_OUTPUTS + CLI_FOLDERS + CLI_TRAINING + CLI_MODELS


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


def _contents(folder: Path) -> dict[Path, bytes | None]:
    """Every path under ``folder`` with its bytes (None for a folder)."""
    return {p: None if p.is_dir() else p.read_bytes() for p in folder.rglob("*")}


@pytest.mark.parametrize("case", CLI, ids=[c.id for c in CLI])
def test_cli_rejects(case: BadCli, tmp_path):
    for name, content in case.files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content, encoding="utf-8")
    before = _contents(tmp_path)
    argv = [a.replace("{tmp}", str(tmp_path)) for a in case.argv]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), _no_progress_bars():
        code = main(argv)
    message = err.getvalue().strip()
    assert code == 2, f"exit {code}; stderr: {message}"
    assert "Traceback" not in message and len(message.splitlines()) == 1, message
    assert message.startswith(f"csc-bench {argv[0]}: error: "), message
    assert case.fragment.replace("{tmp}", str(tmp_path)).lower() in message.lower(), message
    assert _contents(tmp_path) == before, "a failed command left files behind or changed its inputs"
