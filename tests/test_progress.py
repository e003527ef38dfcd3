"""A study a person can follow (issue 12, item 4) and library messages through `logging` (issue 11, item 4): the
study-level progress line, csc_hf's logging module, the CLI's -v / -q and its interrupt line, transformers' load
reports of csc_hf's own checkpoints, and checkpoint frequency that keeps a run's stages."""

import io
import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml
from conftest import BERT_TINY

from csc_hf import hardware
from csc_hf import logging as csc_logging
from csc_hf.cli import main
from csc_hf.run_layout import stage_key
from csc_hf.study import Preset, Study
from csc_hf.study.progress import Progress, Stage, Step, clock

ROOT = Path(__file__).resolve().parents[1]


def finished(folder: Path, seconds: float, cpu: str | None = None) -> Path:
    folder.mkdir(parents=True)
    (folder / "done.json").write_text(json.dumps({"seconds": seconds, "cpu": cpu}), encoding="utf-8")
    return folder


def test_progress_counts_finished_stages_and_estimates_the_rest_by_kind(tmp_path):
    """Stages finished on disk count as done and their recorded seconds estimate the stages of their kind still to
    run, the most alike kind first; a kind with no finished stage makes the ETA a lower bound."""

    def step(label, name, *kinds):
        return Step(label, tmp_path / name, kinds)

    plan = [
        step("build", "build", "build"),
        step("train bert (seed 0)", "t0", "train bert", "train"),
        step("evaluate bert (seed 0)", "e0", "evaluate bert", "evaluate"),
        step("train bart (seed 0)", "t1", "train bart", "train"),
        step("evaluate bart (seed 0)", "e1", "evaluate bart", "evaluate"),
        step("augment", "a", "augment"),
        Step("train bert (seed 0, augmented)", tmp_path / "t2", ("train bert", "train"), 2),
    ]  # twice the steps
    progress = Progress(plan)
    assert progress.eta() is None  # nothing timed yet: no ETA
    assert progress.line(tmp_path / "build", "build").startswith("stage 1/7: build · elapsed 0:00:00")
    assert progress.line(tmp_path / "build", "build").endswith("elapsed 0:00:00")
    finished(tmp_path / "build", 10)
    finished(tmp_path / "t0", 600)
    finished(tmp_path / "e0", 300)
    # bart's training and evaluation as bert's, the augmented bert's training twice bert's; augment not timed yet
    assert progress.eta() == (2100.0, False)
    assert progress.line(tmp_path / "t1", "train bart (seed 0)").endswith(
        "stage 4/7: train bart (seed 0) · elapsed 0:00:00 · ETA ≥ 0:35:00"
    )
    finished(tmp_path / "a", 5)
    finished(tmp_path / "t1", 1200)
    assert progress.eta() == (300.0 + 1200.0, True)
    assert progress.line(tmp_path / "e1", "evaluate bart (seed 0)").endswith(
        "stage 6/7: evaluate bart (seed 0) · elapsed 0:00:00 · ETA 0:25:00"
    )
    finished(tmp_path / "e1", 300)
    assert progress.eta() == (1200.0, True)  # 600 s per unit of bert's work
    finished(tmp_path / "t2", 1000)
    assert progress.eta() is None  # nothing left to estimate
    assert clock(3 * 3600 + 61.6) == "3:01:02"


def test_a_study_plans_every_stage_once_in_order(tmp_path):
    study = Study(Preset.load("smoke"), tmp_path)
    labels = [step.label for step in study.plan(study.grid())]
    variants = Preset.load("smoke").variants
    assert labels[:2] == ["build", "pretrain"]
    assert labels[2 : 2 + 2 * len(variants)] == [
        f"{action} {v} (seed 0)" for v in variants for action in ("train", "evaluate")
    ]
    assert labels[2 + 2 * len(variants) :] == [
        "augment",
        "train bert (seed 0, augmented)",
        "evaluate bert (seed 0, augmented)",
        "train bert (seed 0, training set pe20)",
        "evaluate bert (seed 0, training set pe20)",
        "train bart (seed 0, training set edits)",
        "evaluate bart (seed 0, training set edits)",
    ]  # the plain bert and bart are the grid's
    part = [step.label for step in study.plan(study.grid(["plome"], [1]))]
    assert part == ["build", "pretrain", "train plome (seed 1)", "evaluate plome (seed 1)", "augment"]
    assert not (tmp_path / "stages").exists()  # planning makes no folder


def test_checkpoint_frequency_is_not_a_stage_input(tmp_path):
    """More frequent checkpoints (a preset's save_steps) keep a run's finished stages: they change how a training is
    followed, not its model."""
    config = {"task": "mlm", "max_steps": 2000, "save_steps": 500, "logging_steps": 100}
    assert stage_key("pretrain", config) == stage_key("pretrain", {**config, "save_steps": 50, "logging_steps": 10})
    assert stage_key("pretrain", config) != stage_key("pretrain", {**config, "max_steps": 1000})
    cpu = Preset.load("cpu")  # a restart of the cpu preset loses minutes: at most 50 / 100 steps (see its comments)
    assert cpu.pretrain["save_steps"] <= 50 and cpu.finetune["save_steps"] <= 100
    assert cpu.pretrain["save_total_limit"] == cpu.finetune["save_total_limit"] == 1  # the disk stays small


# ---- csc_hf.logging ---------------------------------------------------------------------------------------------


@pytest.fixture
def library_level():
    """Restore the csc_hf level after a test that changes it."""
    before = logging.getLogger("csc_hf").level
    yield
    logging.getLogger("csc_hf").setLevel(before)


def test_library_loggers_share_the_csc_hf_level(library_level, caplog):
    logger = csc_logging.get_logger("csc_hf.study")
    assert logger.name == "csc_hf.study" and csc_logging.get_logger().name == "csc_hf"
    csc_logging.set_verbosity_info()
    assert csc_logging.get_verbosity() == logging.INFO
    logger.info("shown")
    logger.debug("hidden")
    csc_logging.set_verbosity("error")
    logger.warning("hidden too")
    assert [r.getMessage() for r in caplog.records] == ["shown"]
    with csc_logging.verbosity("debug"):
        assert logger.isEnabledFor(logging.DEBUG)
    assert csc_logging.get_verbosity() == logging.ERROR
    with pytest.raises(ValueError, match="verbosity='loud': choose from debug, info, warning, error, critical"):
        csc_logging.set_verbosity("loud")


def test_the_default_handler_writes_plain_lines_to_stderr(library_level, capsys, monkeypatch):
    """Without handlers of the program's own: one plain line a message on stderr (no ANSI codes), warnings named."""
    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    csc_logging.set_verbosity_info()
    logger = csc_logging.get_logger("csc_hf.study")
    logger.info("stage 1/3: build")
    logger.warning("a problem")
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 2 and "\x1b" not in captured.err
    assert lines[0].startswith("[csc_hf ") and lines[0].endswith("] stage 1/3: build")
    assert lines[1].endswith("] warning: a problem")


def test_the_level_comes_from_the_environment(tmp_path):
    """CSC_HF_VERBOSITY sets the library's level; a value that is no level warns and keeps the default."""
    code = "from csc_hf import logging as l; import logging; print(logging.getLevelName(l.get_verbosity()))"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def run(value):
        return subprocess.run(
            [sys.executable, "-c", code],
            env={**env, "CSC_HF_VERBOSITY": value},
            capture_output=True,
            text=True,
            check=True,
        )

    assert run("debug").stdout == "DEBUG\n" and run("").stdout == "WARNING\n"
    bad = run("loud")
    assert bad.stdout == "WARNING\n" and "CSC_HF_VERBOSITY='loud': choose from debug, info" in bad.stderr


def test_cli_verbosity_flags(library_level, monkeypatch, caplog, capsys, tmp_path):
    """csc-bench shows progress (info) by default; -q warnings only; -v debug too; the level is restored after."""
    from csc_hf import study

    def run(self, variants=None, seeds=None):
        logger = logging.getLogger("csc_hf.study")
        logger.debug("debug message")
        logger.info("progress message")
        logger.warning("warning message")
        return Path("results.json")

    monkeypatch.setattr(study.Study, "run", run)
    monkeypatch.delenv("CSC_HF_VERBOSITY", raising=False)
    csc_logging.set_verbosity_warning()
    shown = {}
    for flags in ([], ["-q"], ["-v"], ["--verbose"]):
        caplog.clear()
        assert main([*flags, "run", "--preset", "smoke", "--output", str(tmp_path)]) == 0
        shown[" ".join(flags)] = [r.getMessage().split()[0] for r in caplog.records if r.name == "csc_hf.study"]
    assert shown == {
        "": ["progress", "warning"],
        "-q": ["warning"],
        "-v": ["debug", "progress", "warning"],
        "--verbose": ["debug", "progress", "warning"],
    }
    assert csc_logging.get_verbosity() == logging.WARNING
    monkeypatch.setenv("CSC_HF_VERBOSITY", "warning")  # the environment sets the CLI's default too
    caplog.clear()
    assert main(["run", "--preset", "smoke", "--output", str(tmp_path)]) == 0
    assert [r.getMessage() for r in caplog.records if r.name == "csc_hf.study"] == ["warning message"]
    assert capsys.readouterr().out.startswith("results: results.json")
    with pytest.raises(SystemExit):
        main(["-q", "-v", "run"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_an_interrupted_run_says_how_to_resume(monkeypatch, capsys, tmp_path):
    from csc_hf import study

    def run(self, variants=None, seeds=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(study.Study, "run", run)
    assert main(["run", "--preset", "smoke", "--output", str(tmp_path)]) == 130
    assert capsys.readouterr().err == (
        "csc-bench run: interrupted: run the same command to resume from the last finished stage / checkpoint\n"
    )


def test_ctrl_c_inside_the_trainer_prints_one_line_and_keeps_a_checkpoint(small_params, tmp_path):
    """Ctrl-C (SIGINT to the whole process group, as a terminal sends it) while the Trainer trains: no traceback,
    the interrupt's line last, exit status 130, and a checkpoint to resume from."""
    preset = {
        "bench_params": small_params,
        "variants": ["bert"],
        "tests": ["test"],
        "bootstrap": 0,
        "model": BERT_TINY,
        "pretrain": {
            "max_steps": 100000,
            "per_device_train_batch_size": 8,
            "save_strategy": "steps",
            "save_steps": 2,
            "save_total_limit": 1,
            "report_to": "none",
            "use_cpu": True,
        },
    }
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(preset), encoding="utf-8")
    run_dir, err = tmp_path / "run", tmp_path / "err.txt"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = (
        "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "  # also when
        "sys.argv = ['csc-bench', *sys.argv[1:]]; runpy.run_module('csc_hf', run_name='__main__')"
    )  # ignored here
    with open(err, "w") as handle:
        process = subprocess.Popen(
            [sys.executable, "-c", command, "run", "--preset", str(tmp_path / "p.yaml"), "--output", str(run_dir)],
            stdout=subprocess.DEVNULL,
            stderr=handle,
            env=env,
            start_new_session=True,
        )
        deadline = time.monotonic() + 240
        while not list(run_dir.glob("stages/pretrain-*/checkpoint-*")) and time.monotonic() < deadline:
            assert process.poll() is None, err.read_text()
            time.sleep(0.2)
        time.sleep(1)
        os.killpg(process.pid, signal.SIGINT)
        assert process.wait(timeout=60) == 130
    text = err.read_text(encoding="utf-8")
    assert "Traceback" not in text and "KeyboardInterrupt" not in text
    assert text.rstrip("\n").split("\n")[-1] == (
        "csc-bench run: interrupted: run the same command to resume from the last finished stage / checkpoint"
    )
    assert "stage 2/4: pretrain the encoder (100000 steps of masked LM)" in text
    assert list(run_dir.glob("stages/pretrain-*/checkpoint-*"))


# ---- transformers' output while csc_hf runs -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def mlm_checkpoint(tmp_path_factory):
    """A tiny BertForMaskedLM checkpoint and the CSCTokenizer of its vocabulary."""
    from transformers import BertConfig, BertForMaskedLM

    from csc_hf.modeling import CSCTokenizer

    folder = tmp_path_factory.mktemp("mlm")
    tokenizer = CSCTokenizer.from_texts(["我们今天去学校。", "他们明天去公园。"])
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        layer_norm_eps=1e-5,
    )
    BertForMaskedLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder, tokenizer


class Records(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@pytest.fixture
def load_reports():
    """The messages of transformers' weight-loading logger that pass its filters."""
    handler, logger = Records(), logging.getLogger("transformers.modeling_utils")
    logger.addHandler(handler)
    yield handler.messages
    logger.removeHandler(handler)


def test_expected_load_reports_of_csc_hf_checkpoints_are_debug_messages(mlm_checkpoint, load_reports, caplog):
    """BART warm-started from the pretrained encoder leaves the masked-LM head out on purpose: transformers' LOAD
    REPORT of those unexpected keys becomes a csc_hf debug message. The same load outside csc_hf, and a report of
    missing weights inside, still reach transformers' log."""
    from transformers import BertForMaskedLM, BertModel

    from csc_hf.modeling import build_model

    folder, tokenizer = mlm_checkpoint
    with caplog.at_level(logging.DEBUG, logger="csc_hf"):
        build_model("bart", tokenizer, init_from=str(folder), decoder_layers=1)
    assert not any("LOAD REPORT" in m for m in load_reports)
    assert any(
        "BertModel LOAD REPORT" in r.getMessage() and "UNEXPECTED" in r.getMessage() and r.levelno == logging.DEBUG
        for r in caplog.records
        if r.name.startswith("csc_hf")
    )
    BertModel.from_pretrained(folder, add_pooling_layer=False)
    assert any("LOAD REPORT" in m for m in load_reports)
    load_reports.clear()
    encoder = folder.parent / "encoder"
    BertModel.from_pretrained(folder, add_pooling_layer=False).save_pretrained(encoder)
    with csc_logging.expected_load_report():
        BertForMaskedLM.from_pretrained(encoder)  # the head is missing: a real problem
    assert any("LOAD REPORT" in m and "MISSING" in m for m in load_reports)


@pytest.fixture
def transformers_stream():
    """What transformers' own handler writes (here into a text buffer, as into a log file)."""
    from transformers.utils import logging as transformers_logging

    buffer = io.StringIO()
    handlers = [
        h for h in transformers_logging.get_logger("transformers").handlers if isinstance(h, logging.StreamHandler)
    ]
    assert handlers, "transformers has no stream handler"  # its default one (pytest may add handlers of other kinds)
    before = [handler.setStream(buffer) for handler in handlers]
    yield buffer
    for handler, stream in zip(handlers, before):
        handler.setStream(stream)


def test_library_output_is_plain_during_a_run(mlm_checkpoint, transformers_stream, capsys):
    """While a study runs: transformers' messages carry no ANSI codes when stderr is no terminal, and neither its
    per-file weight loading bars nor datasets' bars show; all come back after."""
    import datasets
    from transformers import BertModel
    from transformers.utils import logging as transformers_logging

    folder, _ = mlm_checkpoint
    rows = datasets.Dataset.from_dict({"n": list(range(3))})
    assert datasets.is_progress_bar_enabled()
    with csc_logging.plain_library_output():
        assert not transformers_logging.is_progress_bar_enabled()
        assert not datasets.is_progress_bar_enabled()
        rows.map(lambda row: row)
        BertModel.from_pretrained(folder, add_pooling_layer=False)
    assert "LOAD REPORT" in transformers_stream.getvalue() and "\x1b[" not in transformers_stream.getvalue()
    err = capsys.readouterr().err
    assert "Loading weights" not in err and "Map" not in err
    assert transformers_logging.is_progress_bar_enabled() and datasets.is_progress_bar_enabled()
    BertModel.from_pretrained(folder, add_pooling_layer=False)
    rows.map(lambda row: row)
    assert "\x1b[1mBertModel LOAD REPORT" in transformers_stream.getvalue()  # transformers' own output, outside a run
    err = capsys.readouterr().err
    assert "Loading weights" in err and "Map" in err


def test_a_bad_verbosity_in_the_environment_is_a_one_line_cli_error(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("CSC_HF_VERBOSITY", "loud")
    assert main(["run", "--preset", "smoke", "--output", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        "csc-bench run: error: CSC_HF_VERBOSITY='loud': choose from debug, info, warning, error, critical\n"
    )
    assert main(["-q", "run", "--preset", "smoke", "--output", str(tmp_path), "--finished-only"]) == 2  # a flag wins
    assert "has not finished" in capsys.readouterr().err


def test_demoted_warnings_show_only_at_debug_verbosity(caplog):
    """A packaged confusion set's dropped rows are notes a user cannot act on: debug messages, not warnings."""
    logger = csc_logging.get_logger("csc_hf.confusion")
    with caplog.at_level(logging.DEBUG, logger="csc_hf"), csc_logging.verbosity("warning"):
        with csc_logging.demoted("csc_hf.confusion"):
            logger.warning("dropped 3 rows")
            logger.error("a real error")
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [("ERROR", "a real error")]
    with caplog.at_level(logging.DEBUG, logger="csc_hf"), csc_logging.verbosity("debug"):
        with csc_logging.demoted("csc_hf.confusion"):
            logger.warning("dropped 3 rows")
    assert ("DEBUG", "dropped 3 rows") in [(r.levelname, r.getMessage()) for r in caplog.records]


def test_a_forecast_fills_the_eta_until_stages_of_its_kind_finish(tmp_path):
    """A remaining stage of a kind with no finished stage takes its forecast, and the line says so (``ETA ~``);
    measured stages replace it."""
    plan = [
        Step("pretrain", tmp_path / "p", ("pretrain",)),
        Step("train bert", tmp_path / "t", ("train bert", "train")),
    ]
    progress = Progress(plan, forecast={tmp_path / "p": 100.0, tmp_path / "t": 50.0})
    assert progress.eta() == (150.0, True)
    assert progress.line(tmp_path / "p", "pretrain").endswith("· ETA ~0:02:30")
    finished(tmp_path / "p", 200)
    assert progress.eta() == (50.0, True)  # the forecast of the training; the pretraining is measured
    assert progress.line(tmp_path / "t", "train bert").endswith("· ETA ~0:00:50")
    progress.forecast.pop(tmp_path / "t")
    assert progress.line(tmp_path / "t", "train bert").endswith("elapsed 0:00:00")  # nothing to estimate it by


def test_finished_stages_scale_the_forecast_of_the_rest_of_their_kind(tmp_path):
    """Once a stage with a forecast finishes, the remaining stages of its kind take their own forecasts times its
    measured / forecast seconds: a slower variant stays slower (not the finished stages' mean), and an evaluation
    that generates (bart's) keeps its larger forecast; a kind with no finished stage keeps its forecast (``ETA ~``)."""

    def step(name, kind, variant):
        return Step(f"{kind} {variant}", tmp_path / name, (f"{kind} {variant}", kind), variant=variant)

    plan = [
        step("t0", "train", "bert"),
        step("e0", "evaluate", "bert"),
        step("t1", "train", "all_gate"),
        step("e1", "evaluate", "bart"),
        Step("train bert (augmented)", tmp_path / "t2", ("train bert", "train"), 2, variant="bert"),
    ]
    forecast = {tmp_path / "t0": 100.0, tmp_path / "e0": 10.0, tmp_path / "t1": 150.0, tmp_path / "e1": 50.0}
    forecast[tmp_path / "t2"] = 200.0
    progress = Progress(plan, forecast=forecast)
    finished(tmp_path / "t0", 120)  # the CPU trains 1.2x slower than the probe said
    assert progress.eta() == (10.0 + 150.0 * 1.2 + 50.0 + 200.0 * 1.2, True)
    assert [is_forecast for _, is_forecast in progress.estimates()] == [True, False, True, False]
    assert progress.line(tmp_path / "e0", "evaluate bert").endswith("· ETA ~0:08:00")
    finished(tmp_path / "e0", 5)  # and evaluates 2x faster
    assert progress.eta() == (180.0 + 25.0 + 240.0, True)
    assert progress.line(tmp_path / "t1", "train all_gate").endswith("· ETA 0:07:25")
    finished(tmp_path / "t1", 150)  # all_gate as forecast: the augmented bert keeps bert's own pace (its first kind)
    assert progress.eta() == (25.0 + 240.0, True)
    plan[-1] = Step("train plome", tmp_path / "t2", ("train plome", "train"), variant="plome")
    assert progress.eta()[0] == pytest.approx(25.0 + 200.0 * (120 + 150) / (100 + 150))  # the kind's stages, summed


def test_processes_sharing_the_models_share_their_time_in_the_eta(tmp_path):
    """With ``processes`` running the models' stages side by side, those count for their share of the ETA; the
    pretraining, which one process runs with every thread, counts whole."""
    plan = [
        Step("pretrain", tmp_path / "p", ("pretrain",)),
        Step("train bert", tmp_path / "t", ("train bert", "train"), variant="bert"),
        Step("evaluate bert", tmp_path / "e", ("evaluate bert", "evaluate"), variant="bert"),
    ]
    forecast = {tmp_path / "p": 100.0, tmp_path / "t": 60.0, tmp_path / "e": 40.0}
    assert Progress(plan, forecast=forecast).eta() == (200.0, True)
    assert Progress(plan, forecast=forecast, processes=2).eta() == (150.0, True)
    finished(tmp_path / "p", 120)
    assert Progress(plan, forecast=forecast, processes=4).eta() == (25.0, True)


def test_a_study_forecasts_its_stages_from_steps_timed_here(small_params, tmp_path, caplog, monkeypatch):
    """`Study.forecast`: every pretraining, training and evaluation stage of the plan gets seconds from a step of its
    kind timed here (an augmented training twice its plain one's: twice the steps); the log names the CPU's compute
    path and the threads, and the forecast of the whole job."""
    preset = Preset(
        name="tiny",
        bench_params=small_params,
        variants=["bert", "bart"],
        seeds=[0],
        tests=["test", "unseen_k"],
        keep_bias_grid=[0.0, 1.0],
        model=BERT_TINY,
        bart={"decoder_layers": 1},
        augmentation={"confusion": "sighan13", "variants": ["bert"]},
        pretrain={"max_steps": 100, "per_device_train_batch_size": 4, "precision": "fp32"},
        finetune={"max_steps": 10, "per_device_train_batch_size": 4, "precision": "fp32", "max_eval_samples": 20},
        eval_batch_size=4,
    )
    study = Study(preset, tmp_path, estimate=True)
    plan = study.plan(study.grid())
    build = finished(plan[0].directory, 1.0)
    (build / "done.json").write_text(
        json.dumps({"configs": {"train": {"train": 500, "validation": 60}, "test": {"test": 80}}, "seconds": 1}),
        encoding="utf-8",
    )
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # the user's choice wins (whatever the environment of the test run)
    with caplog.at_level(logging.INFO, logger="csc_hf"):
        before = hardware.set_threads()
        try:
            seconds = study.forecast(plan, Stage(build))
        finally:
            torch.set_num_threads(before)
    assert {step.directory for step in plan if step.kinds[-1] in ("pretrain", "train", "evaluate")} == set(seconds)
    assert all(s > 0 for s in seconds.values())
    plain, augmented = study.folders("bert", 0)[0], study.folders("bert", 0, augmented=True)[0]
    assert seconds[augmented] == pytest.approx(2 * seconds[plain])
    text = caplog.text
    assert "compute path: " in text and "torch threads: 1 (OMP_NUM_THREADS=1)\n" in text
    assert "forecast of the 7 pretraining, training and evaluation stages left: " in text
    found = re.search(
        r"left: ([\d:]+); times 1.2, what whole runs measured so far took over theirs at least: ([\d:]+) ", text
    )
    forecast, more = (sum(int(x) * 60**k for k, x in enumerate(reversed(t.split(":")))) for t in found.groups())
    assert abs(more - 1.2 * forecast) <= 1  # whole seconds


def test_stages_finished_on_another_machine_count_as_done_but_set_no_pace(tmp_path):
    """A run resumed on another CPU: the stages the first machine finished are done (the line counts them), but the
    ETA takes its pace from the stages finished here (and from those that did not record a machine), not from theirs.
    A stage records the machine it finished on."""
    plan = [Step(f"train {v}", tmp_path / v, (f"train {v}", "train"), variant=v) for v in ("bert", "plome", "bart")]
    forecast = {tmp_path / "bert": 100.0, tmp_path / "plome": 100.0, tmp_path / "bart": 100.0}
    progress = Progress(plan, forecast=forecast, machine="here")
    finished(tmp_path / "bert", 300.0, cpu="a slower CPU")
    assert len(progress.finished()) == 1 and progress.measured() == {}
    assert progress.estimates() == [(100.0, True), (100.0, True)]  # the forecasts: nothing measured here yet
    finished(tmp_path / "plome", 120.0, cpu="here")
    assert progress.estimates() == [(120.0, False)]  # bart at plome's pace here (1.2x), not at bert's there (3x)
    stage = Stage(tmp_path / "bart")
    stage.directory.mkdir()
    stage.finish({})
    assert stage.marker()["cpu"] == hardware.describe() == Progress(plan).machine


def test_stages_of_another_layout_count_as_done_but_set_no_pace(tmp_path):
    """A run resumed with its models' stages shared out otherwise (other torch threads per process, or another number
    of processes): a variant's stages finished in the first layout are done, but the ETA takes its pace from those
    that ran as this run runs them (or did not record how); a stage that is no variant's (the pretraining, whose
    process runs alone) keeps its pace. The study records the layout a stage ran with."""
    plan = [Step("pretrain", tmp_path / "pretrain", ("pretrain",))]
    plan += [Step(f"train {v}", tmp_path / v, (f"train {v}", "train"), variant=v) for v in ("bert", "plome", "bart")]
    forecast = {step.directory: 100.0 for step in plan}
    progress = Progress(plan, forecast=forecast, machine="here", processes=1, threads=2)

    def ran(name: str, seconds: float, **layout) -> None:
        (tmp_path / name).mkdir()
        (tmp_path / name / "done.json").write_text(json.dumps({"seconds": seconds, "cpu": "here", **layout}))

    ran("pretrain", 150.0, threads=1, processes=2)
    ran("bert", 300.0, threads=1, processes=2)  # two processes of one thread: slower, each
    assert progress.measured() == {tmp_path / "pretrain": 150.0} and len(progress.finished()) == 2
    assert progress.estimates() == [(100.0, True), (100.0, True)]  # the forecasts of this layout
    ran("plome", 120.0, threads=2, processes=1)
    assert progress.estimates() == [(pytest.approx(120.0), False)]  # at plome's pace in this layout, not bert's
    assert Progress(plan, forecast=forecast, machine="here", processes=2).estimates() == [(pytest.approx(300.0), False)]
    ran("bart", 110.0)  # no record of its layout: it counts
    assert tmp_path / "bart" in Progress(plan, machine="here", threads=4).measured()
    study = Study(Preset.load("smoke"), tmp_path / "run", processes=2)
    assert study.layout() == {"threads": torch.get_num_threads(), "processes": 2}
    stage = Stage(tmp_path / "stage")
    stage.directory.mkdir()
    stage.finish({}, layout=study.layout())
    assert {k: stage.marker()[k] for k in ("threads", "processes")} == study.layout()


def test_a_resumed_stage_sets_the_pace_only_until_one_of_its_kind_runs_in_one_piece(tmp_path):
    """A stage that resumed from a checkpoint (earlier_seconds) paid each piece's start and the steps after its last
    checkpoint again: the ETA takes its pace while it is the only one of its kind, and drops it once another stage
    of its kind has finished in one piece."""
    plan = [Step(f"train {v}", tmp_path / v, (f"train {v}", "train"), variant=v) for v in ("bert", "plome", "bart")]
    forecast = {tmp_path / "bert": 100.0, tmp_path / "plome": 100.0, tmp_path / "bart": 100.0}
    progress = Progress(plan, forecast=forecast, machine="here")
    (tmp_path / "bert").mkdir()
    (tmp_path / "bert" / "done.json").write_text(json.dumps({"seconds": 190.0, "earlier_seconds": 90.0, "cpu": "here"}))
    assert progress.measured() == {tmp_path / "bert": 190.0}
    assert progress.estimates() == [(190.0, False), (190.0, False)]  # the resumed one's pace: nothing else yet
    finished(tmp_path / "plome", 110.0, cpu="here")
    assert progress.measured() == {tmp_path / "plome": 110.0}
    assert progress.estimates() == [(pytest.approx(110.0), False)]  # bart at plome's pace (1.1x), not 1.5x


def test_a_training_that_resumes_counts_the_steps_after_its_checkpoint(tmp_path):
    """A stage with a checkpoint (a run stopped in its training) takes its forecast, and its measured pace, for the
    steps after that checkpoint only: the newest readable trainer_state.json says how many of its steps are done."""
    plan = [Step(f"train {v}", tmp_path / v, (f"train {v}", "train"), variant=v) for v in ("bert", "plome", "bart")]
    forecast = {tmp_path / "bert": 100.0, tmp_path / "plome": 100.0, tmp_path / "bart": 100.0}
    progress = Progress(plan, forecast=forecast, machine="here")
    for step, (done, total) in {"checkpoint-300": (300, 400), "checkpoint-100": (100, 400)}.items():
        (tmp_path / "plome" / step).mkdir(parents=True)
        (tmp_path / "plome" / step / "trainer_state.json").write_text(
            json.dumps({"global_step": done, "max_steps": total})
        )
    (tmp_path / "plome" / "checkpoint-350").mkdir()
    (tmp_path / "plome" / "checkpoint-350" / "trainer_state.json").write_text("{")  # being written
    assert Stage(tmp_path / "plome").share_left() == 0.25 and Stage(tmp_path / "bart").share_left() == 1.0
    assert progress.estimates() == [(100.0, True), (25.0, True), (100.0, True)]
    finished(tmp_path / "bert", 120.0, cpu="here")
    assert progress.estimates() == [(pytest.approx(30.0), False), (pytest.approx(120.0), False)]
