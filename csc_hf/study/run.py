"""One run of a preset (:class:`Study`): orchestration only. Each stage's output lives in its folder
(``csc_hf.run_layout.stage_dir``); evaluation is :mod:`csc_hf.evaluation`, training :mod:`csc_hf.training`, the
outputs :mod:`csc_hf.study.outputs`."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from .. import hardware
from ..benchmark.builder import columns, load_dataset
from ..benchmark.cache import code_hash
from ..benchmark.configs import DOMAINS
from ..benchmark.plan import AUGMENTED_COPIES, BenchParams, input_changes, input_files, plan_for
from ..evaluation import (
    EvaluationOptions,
    augmentation_comparisons,
    evaluate_model,
    paired_comparisons,
    training_set_comparisons,
)
from ..fields import Range, check_range
from ..files import check_output_folder, write_atomic
from ..logging import ENV as VERBOSITY_ENV
from ..logging import get_logger, get_verbosity, plain_library_output
from ..model_folder import copy_decoding
from ..modeling import VARIANTS, CSCTokenizer, is_seq2seq, variant_sources
from ..modeling.configuration_csc import SOURCE_KINDS
from ..precision import resolved
from ..run_layout import (
    AUGMENTATION,
    CHECKPOINT,
    DECODING_COPY,
    DONE,
    FORECAST,
    HANDED_OVER,
    PREDICTIONS,
    RECORDS,
    STAGES,
    TRAIN_CONFIG,
    TRAINING_RECORD,
    WORKERS,
    evaluation_stage,
    stage_dir,
    train_stage,
)
from ..training import DataArguments, check_config, train
from ..training.config import precision_keys, trains_on_cpu
from .outputs import augmentation_coverage, domain_error_groups, write_results
from .preset import Preset, check_seeds, check_variants
from .progress import Progress, Stage, Step, clock, model_label, wall_seconds

if TYPE_CHECKING:
    from ..job_estimate import StepProbe

logger = get_logger(__name__)

FORECAST_KINDS = ("pretrain", "pretrain-sides", "train", "evaluate")
"""The kinds of stage the forecast times (the build and augmentation stages it leaves out)."""
RUN_OVER_FORECAST = 1.2
"""The least that the whole runs measured so far (on a Zen 4) took over their start's forecast (BENCHMARKS.md): a
preset's ``hours`` are checked against the forecast times this."""


def _ends_with_its_parent() -> None:
    """In a process the study starts (a worker, `Study.start_workers`; a training, `Study._train_in`), before it
    runs: on Linux, a SIGTERM when the process that started it dies, however it dies (killed too), so that
    none trains on alone; elsewhere nothing."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _stop(process: subprocess.Popen, seconds: float) -> None:
    """Give ``process`` up to ``seconds`` to exit on its own, then terminate it; return once it has exited."""
    try:
        process.wait(timeout=max(0.0, seconds))
    except subprocess.TimeoutExpired:
        process.terminate()
        process.wait()


def _terminated(signum: int, frame: Any) -> None:
    """SIGTERM's handler while a run's workers run: an exit that stops them on the way out (`Study.stop_workers`)."""
    raise SystemExit(128 + signum)


def _resolved(config: dict) -> dict:
    """A training config with its ``precision`` as this machine resolves it (``auto`` is bf16 on a CPU with bf16 in
    hardware, else fp32): a stage's address says which precision trained it."""
    keys = precision_keys(config, {})
    return {**config, "precision": "bf16" if keys["bf16"] else "fp32"} if "bf16" in keys else config


def _sorted(value: Any) -> Any:
    """``value`` with the keys of every mapping in it sorted (as the stage's ``train_config.yaml`` holds them)."""
    return {key: _sorted(value[key]) for key in sorted(value)} if isinstance(value, dict) else value


def _probe_inputs(model: Mapping[str, Any], options: Mapping[str, Any], threads: int, shared: int) -> str:
    """What a forecast's probe times, as a digest: the encoder's sizes, the probe's options (the training sentences by
    their digest), the torch threads of the pretraining and of each process of the models' stages, and the versions
    of csc_hf and torch. The variants it timed are its step times' own keys; the machine is checked apart."""
    import torch

    from .. import __version__

    texts = hashlib.sha256("\n".join(options["texts"]).encode()).hexdigest()
    inputs = {
        "model": model,
        "options": {**options, "texts": texts},
        "threads": [threads, shared],
        "versions": [__version__, torch.__version__],  # the code that computes a step
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()


class Unfinished(ValueError):
    """A stage that a ``finished_only`` study found unfinished."""


class Busy(Exception):
    """A stage that another process is running (it holds the stage's lock)."""

    def __init__(self, stage: Stage):
        super().__init__(f"{stage.directory} is being run by process {stage.lock.owner()}")


class OverHours(Exception):
    """The forecast of a default run is over the hours its preset is sized for, and the preset names a ``smaller`` one
    for slower CPUs: raised before any stage after the build has begun, for `csc-bench run` to take that one."""

    def __init__(self, preset: Preset, seconds: float):
        super().__init__(
            f"the forecast of {preset.name} here ({clock(seconds)}; times {RUN_OVER_FORECAST:g}, what whole runs "
            f"measured so far took over theirs at least) is over the {preset.hours:g} hours it is sized for"
        )


class Study:
    """One run of a preset into ``run_dir``; with ``finished_only`` it runs no stage and only collects finished ones;
    with ``estimate``, a few steps of each kind of stage are timed once the configs are built, and the forecast of the
    whole job is logged and fills the progress line's ETA until measured stages replace it (:meth:`forecast`).

    Processes may share a run folder (one per seed, or the same command twice): each stage is run by one process at a
    time (its :class:`StageLock`). A process that finds a model's stage taken moves on to the next model and comes back
    to it at the end, then waits for it (every ``LOCK_POLL`` seconds) and uses what the other process made; a stage
    every later one needs (build, pretraining) is waited for at once. A ``worker`` is one of the processes that a run
    with ``processes`` N > 1 starts (:meth:`start_workers`): it starts none itself, and its progress line, like the
    first process's, counts the models' stages for 1/N."""

    LOCK_POLL = 10.0  # seconds between two looks at a stage another process runs
    WORKER_EXIT = 60.0  # seconds a worker gets to stop on its own (Ctrl-C reaches it too) before it is terminated
    PROBE_STEPS = 6  # training batches the forecast times per kind, from the shortest to the longest (StepProbe)
    PROBE_PASSES = 2  # evaluation passes the forecast times per variant (their median)

    def __init__(
        self,
        preset: Preset,
        run_dir: str | Path,
        finished_only: bool = False,
        estimate: bool = False,
        processes: int | None = None,
        worker: bool = False,
        fallback: bool = False,
        forecast_from: str | Path | None = None,
    ):
        self.preset, self.run_dir, self.finished_only = preset, Path(run_dir), finished_only
        self.forecast_from = None if forecast_from is None else Path(forecast_from)  # a run whose forecast may serve
        self.estimate = estimate
        self.processes = preset.processes if processes is None else processes  # of the models' stages
        check_range("processes", self.processes, Range(1), "--processes")
        self.worker = worker  # started by another process of this run (`start_workers`)
        self.fallback = fallback  # a default preset's run: OverHours where its forecast is over the preset's hours
        self._workers: list[tuple[subprocess.Popen, Path]] = []  # the other processes of the models' stages
        self._sigterm: Any = None  # SIGTERM's handler before the workers started
        self.progress: Progress | None = None  # the plan of the run in progress (see :meth:`run`)
        self.probed_on: str | None = None  # the machine the forecast holds for (:meth:`machine`); None without one
        self.probe: dict[str, Any] | None = None  # the forecast's step times and what they time (`_probe_inputs`)
        self.wait = True  # whether a stage another process runs is waited for (else: Busy)
        self.put_off: list[tuple[Callable[..., None], Any]] = []  # (run, model) pairs that `each` met busy
        self._running: list[Stage] = []  # the stages this process holds the lock of
        if not finished_only:
            check_output_folder(self.run_dir, "--output")

    def directory(self, name: str, *inputs: Any) -> Path:
        """The folder of the stage ``name`` with these inputs (whether or not it has run)."""
        return stage_dir(self.run_dir, name, *inputs)

    def stage(self, name: str, *inputs: Any) -> Stage:
        """The stage ``name`` with these inputs; its folder is made unless the study runs nothing."""
        directory = self.directory(name, *inputs)
        if not self.finished_only:
            directory.mkdir(parents=True, exist_ok=True)
        return Stage(directory)

    def pending(self, stage: Stage, label: str) -> bool:
        """Whether ``stage`` must still run (``Unfinished`` when the study runs nothing); when it must, the stage
        starts now and its progress line is logged."""
        if stage.done:
            return False
        if self.finished_only:
            raise Unfinished(f"{stage.directory} has not finished")
        if not self._claim(stage):
            return False  # another process finished it meanwhile
        stage.started = time.monotonic()
        logger.info(self.progress.line(stage.directory, label) if self.progress else label)
        logger.debug("%s: %s", label, stage.directory)
        return True

    def _claim(self, stage: Stage) -> bool:
        """Take the lock of ``stage`` (waiting for another process that holds it, or raising Busy when the study does
        not wait); False when the stage turns out finished."""
        waited = False
        while not stage.lock.acquire():
            if not self.wait:
                raise Busy(stage)
            if not waited:
                logger.info("waiting for %s: process %s runs it", stage.directory.name, stage.lock.owner())
                waited = True
            time.sleep(self.LOCK_POLL)
        if stage.done:
            stage.lock.release()
            return False
        self._running.append(stage)
        return True

    # ---- stages -------------------------------------------------------------------------------------------------

    def build(self) -> Stage:
        """Build (or find in the datasets cache) the training and test configs."""
        p = self.preset
        stage = self.stage(*self._build_inputs())
        if self.pending(stage, f"build the training and {len(p.tests)} test configs"):
            sizes = {}
            for name in ["train", *p.tests]:
                logger.debug("build %s", name)
                sizes[name] = {
                    split: len(ds) for split, ds in load_dataset("csc_bench", name, **p.bench_params).items()
                }
            stage.finish({"configs": sizes, "inputs": self._data_inputs(), "code_hash": code_hash()})
        return stage

    def _data_inputs(self) -> dict:
        """What the run's data is built from beyond its parameters (:func:`csc_hf.benchmark.plan.input_files`): the
        build stage records it, and a resumed run must find the same."""
        return input_files(BenchParams(**self.preset.bench_params))

    def check_data(self) -> None:
        """A run folder whose data was built from other input files (a corpus or confusion file edited in place, another
        glyph font or pypinyin) is an error before any work: its finished stages would be taken as done and mixed with
        models of the new data. Other generating code (an edited csc_hf) is a warning. A build stage that recorded
        neither (an older csc_hf) is not checked."""
        marker = Stage(self.directory(*self._build_inputs())).marker()
        changes = input_changes(marker["inputs"], self._data_inputs()) if "inputs" in marker else []
        if changes:
            raise ValueError(
                f"{self.run_dir} was built from other data than the preset's now: {'; '.join(changes)}. Give another "
                f"--output to run on the data as it is now, or restore what changed to resume {self.run_dir}"
            )
        if marker.get("code_hash") not in (None, code_hash()):
            logger.warning(
                "%s was built by other csc_hf code (%s; this is %s): its finished stages are kept, and a build of "
                "its data with this code may differ",
                self.run_dir,
                marker["code_hash"],
                code_hash(),
            )

    def pretrain(self) -> Stage:
        """Masked-LM pretraining of the semantic encoder that every variant starts from."""
        name, config = self._pretrain_inputs()
        stage = self.stage(name, config)
        if self.pending(stage, f"pretrain the encoder ({config.get('max_steps', '?')} steps of masked LM)"):
            self._train(stage, config)
        return stage

    def pretrain_sides(self, pretrained: Stage) -> Stage | None:
        """The side encoders of every source the preset's variants fuse, pretrained over the masked LM of
        ``pretrained`` (``csc_hf.modeling.SidePretrainingModel``); each variant with sources starts from them.
        ``None`` when the preset has no ``pretrain_sides``."""
        if not (inputs := self._sides_inputs(pretrained.directory)):
            return None
        name, config, start_name = inputs
        stage = self.stage(name, config, start_name)
        sources = ", ".join(config["model_overrides"]["sources"])
        if self.pending(stage, f"pretrain the side encoders ({sources}; {config.get('max_steps', '?')} steps)"):
            start = str(pretrained.directory)
            self._train(stage, {**config, "tokenizer_path": start, "init_from": start})
        return stage

    def _sides_inputs(self, pretrained: Path) -> tuple[str, dict, str] | None:
        """The name and inputs of the side-encoder pretraining (its config and the masked LM's stage name), or
        ``None`` when the preset has none or no variant of it has side sources."""
        p = self.preset
        used = {source for variant in p.variants for source in variant_sources(variant)}
        if not p.pretrain_sides or not used:
            return None
        sources = [source for source in SOURCE_KINDS if source in used]
        config = {"task": "sides", "model_overrides": {"sources": sources}, "bench_params": p.bench_params}
        return "pretrain-sides", _resolved({**config, **p.pretrain_sides}), pretrained.name

    def _build_inputs(self) -> tuple:
        return "build", self.preset.bench_params, self.preset.tests

    def _pretrain_inputs(self) -> tuple[str, dict]:
        p = self.preset
        return "pretrain", _resolved(
            {"task": "mlm", "model_overrides": p.model, "bench_params": p.bench_params, **p.pretrain}
        )

    def _augmented_params(self) -> dict:
        """The benchmark parameters of the augmentation stage's training data."""
        return {**self.preset.bench_params, "augmentation": self.preset.augmentation_study.confusion}

    def _training_params(self, augmented: bool = False, training_set: str | None = None) -> dict:
        """The benchmark parameters of a model's training data: the preset's, the augmentation stage's, or those of a
        training set of the training-distribution stage."""
        if training_set:
            return self.preset.training_sets_study.params(self.preset.bench_params, training_set)
        return self._augmented_params() if augmented else self.preset.bench_params

    def _finetune_inputs(
        self, variant: str, seed: int, pretrained: Path, augmented: bool = False, training_set: str | None = None
    ) -> tuple[str, dict, str]:
        """The name and inputs of a fine-tuning stage: its training config, and the pretrained stage's name (not its
        path, so that a run folder can move); ``augmented``: the augmentation stage's training; ``training_set``: a
        training set of the training-distribution stage."""
        p = self.preset
        bench_params = self._training_params(augmented, training_set)
        config = {"task": "correction", "variant": variant, "bench_params": bench_params, "seed": seed, **p.finetune}
        if augmented:  # as many epochs over a data set AUGMENTED_COPIES times as large
            config.update(
                {k: config[k] * AUGMENTED_COPIES for k in ("max_steps", "warmup_steps") if config.get(k, 0) > 0}
            )
        if is_seq2seq(variant):
            config["model_overrides"] = p.bart
        starts = [pretrained.name]
        if variant_sources(variant) and (sides := self._sides_inputs(pretrained)):
            starts.append(self.directory(*sides).name)  # its side encoders start from the pretrained ones
        return train_stage(variant, seed, augmented, training_set), _resolved(config), *starts

    def _evaluate_inputs(
        self, model_dir: Path, build: Path, augmented: bool = False, training_set: str | None = None
    ) -> tuple:
        """The name and inputs of the evaluation stage of the model trained in ``model_dir``."""
        p = self.preset
        decoding = {"precision": self._inference_precision()}
        if self._bf16_weights():  # only where it changes the computation: other runs keep their stages' names
            decoding["bf16_weights"] = True
        if p.similarity_prior_grid != [0.0]:  # the default stays out of the key: runs before the option keep theirs
            decoding["similarity_prior_grid"] = p.similarity_prior_grid
        common = (p.bootstrap, p.keep_bias_grid, build.name, decoding)
        if augmented:
            return evaluation_stage(model_dir), list(p.augmentation_study.tests), *common, self._augmented_params()
        if training_set:
            return evaluation_stage(model_dir), p.tests, *common, self._training_params(training_set=training_set)
        return evaluation_stage(model_dir), p.tests, *common

    def _bf16_weights(self) -> bool:
        """Whether the evaluations hold the weights in bf16: the preset's ``eval_bf16_weights`` where they compute in
        bf16."""
        return self.preset.eval_bf16_weights and self._inference_precision() == "bf16"

    def _inference_precision(self) -> str:
        """What the evaluations compute in on this machine: the fine-tuning's ``precision`` (auto, bf16, fp32)
        resolved for the CPU (bf16 or fp32), so that an fp32 evaluation is never taken for a bf16 one."""
        return resolved(self.preset.finetune.get("precision", "auto"))

    def finetune(
        self, variant: str, seed: int, pretrained: Stage, augmented: bool = False, training_set: str | None = None
    ) -> Stage:
        """Fine-tune one variant with one seed, from the shared pretrained encoder (BART warm-starts from it);
        ``augmented``: on the augmentation stage's training data; ``training_set``: on that set's."""
        name, config, *starts = self._finetune_inputs(variant, seed, pretrained.directory, augmented, training_set)
        stage = self.stage(name, config, *starts)
        sides = self.pretrain_sides(pretrained) if len(starts) > 1 and not stage.done else None  # pretrained first
        if self.pending(stage, model_label("train", variant, seed, augmented, training_set)):
            start = str(pretrained.directory)
            side_start = {"init_sides_from": str(sides.directory)} if sides else {}
            self._train(stage, {**config, "tokenizer_path": start, "init_from": start, **side_start})
        return stage

    def _train(self, stage: Stage, config: dict) -> None:
        """Train ``config`` into the stage folder: in this process, in a process of its own (the preset's
        ``fresh_processes``: `train_in_own_process`), or under ``accelerate launch`` with the preset's launcher. The
        config is kept in the folder (``train_config.yaml``: a process started for it reads it, and a model card says
        how the model was trained); a run in this process takes the same config, keys sorted as there."""
        config = {**config, "output_dir": str(stage.directory)}
        config_path = stage.directory / TRAIN_CONFIG
        config_path.write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=True), encoding="utf-8")
        if self.preset.launcher:
            launch = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", self.preset.launcher]
            self._train_in(launch + ["-m", "csc_hf.train", str(config_path)], "accelerate launch", config_path)
        elif self.preset.fresh_processes:
            self.train_in_own_process(config_path)
        else:
            train(*check_config(_sorted(config), source=str(config_path)))
        for checkpoint in stage.directory.glob(f"{CHECKPOINT}*"):
            shutil.rmtree(checkpoint)  # the final model is saved in the stage folder itself
        kept = stage.directory / TRAINING_RECORD  # a resumed training's earlier pieces count in the stage's time
        record = json.loads(kept.read_text(encoding="utf-8")) if kept.is_file() else {}
        stage.finish({"config": config}, earlier=record.get("earlier_seconds", 0.0), layout=self.layout())

    def train_in_own_process(self, config_path: Path) -> None:
        """Train the config at ``config_path`` in a new process (``python -m csc_hf.train``, its log lines in this
        process's output, at this process's verbosity) with this process's torch threads, and wait for it
        (`_train_in`): each training starts with the memory and kernel caches of a fresh process, whatever ran before
        it here."""
        import torch

        command = [sys.executable, "-m", "csc_hf.train", str(config_path)]
        level = logging.getLevelName(get_verbosity()).lower()
        environment = {"OMP_NUM_THREADS": str(torch.get_num_threads()), VERBOSITY_ENV: level}
        self._train_in(command, "python -m csc_hf.train", config_path, environment)

    def _train_in(
        self, command: list[str], name: str, config_path: Path, environment: Mapping[str, str] | None = None
    ) -> None:
        """Run ``command``, a process (called ``name``) that trains the config at ``config_path``, with
        ``environment`` over this process's, and wait for it; it ends if this process dies. After a Ctrl-C (which
        reaches it too) it gets `WORKER_EXIT` seconds to stop on its own; after an error here it is terminated at
        once. One that was interrupted interrupts the run; one that fails raises here, naming the config."""
        child = subprocess.Popen(command, env={**os.environ, **(environment or {})}, preexec_fn=_ends_with_its_parent)
        try:
            code = child.wait()
        except BaseException as stopped:
            _stop(child, self.WORKER_EXIT if isinstance(stopped, KeyboardInterrupt) else 0.0)
            raise
        if code in (130, -signal.SIGINT):  # interrupted (`csc_hf.cli.run_guarded` exits 130): so is the run
            raise KeyboardInterrupt
        if code != 0:
            raise RuntimeError(f"{config_path}: the training's process ({name}) exited with status {code}")

    def evaluate(
        self,
        model_stage: Stage,
        variant: str,
        seed: int,
        build: Stage,
        augmented: bool = False,
        training_set: str | None = None,
    ) -> Stage:
        """Score one model on every test split (keep_bias and similarity_prior tuned on validation) into the stage's
        ``records.json``, save its predictions (``predictions/``), and save the tuned decoding with the model (its
        ``csc_decoding.json``); ``augmented``: a model of the augmentation stage, on its tests, its seen pairs those of
        its own training data; ``training_set``: a model of the training-distribution stage, its validation split,
        ``seen`` and ``scontext`` and seen pairs those of its training set."""
        p = self.preset
        stage = self.stage(*self._evaluate_inputs(model_stage.directory, build.directory, augmented, training_set))
        tests = p.augmentation_study.tests if augmented else p.tests
        label = model_label("evaluate", variant, seed, augmented, training_set)
        if self.pending(stage, f"{label} on {len(tests)} test configs"):
            options = self._evaluation_options(stage, augmented, training_set)
            records = evaluate_model(model_stage.directory, tests, options)
            origin = {"augmentation": p.augmentation_study.confusion} if augmented else {}
            if training_set:
                origin = {"training_set": training_set}
            for r in records:
                r.update(model=variant, seed=seed, **origin)
            (stage.directory / RECORDS).write_text(
                json.dumps(records, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
            )
            copy_decoding(model_stage.directory, stage.directory / DECODING_COPY)
            stage.finish({"records": len(records)}, layout=self.layout())
        elif not self.finished_only and (
            restored := copy_decoding(stage.directory / DECODING_COPY, model_stage.directory)
        ):
            logger.info(
                "%s: restored %s (the decoding its results were scored with)",
                model_stage.directory,
                ", ".join(restored),
            )
        return stage

    def _evaluation_options(self, stage: Stage, augmented: bool, training_set: str | None = None) -> EvaluationOptions:
        """How the study evaluates a model into ``stage``: the preset's bootstrap, decoding grids and batch size, the
        fine-tuning's sample limits, the predictions kept in the stage, and the tuned decoding saved with the model
        (its default from then on); ``augmented``: seen pairs are those of the augmentation stage's training data;
        ``training_set``: the test sets are built with that set's parameters (only its validation split, ``seen``
        and ``scontext`` differ from the grid's)."""
        p = self.preset
        grids = {"keep_bias_grid": p.keep_bias_grid, "similarity_prior_grid": p.similarity_prior_grid}
        limits = {
            "max_train_samples": p.finetune.get("max_train_samples"),
            "max_validation": p.finetune.get("max_eval_samples"),
        }
        training_params = self._augmented_params() if augmented else None
        return EvaluationOptions(
            self._training_params(training_set=training_set) if training_set else p.bench_params,
            p.bootstrap,
            **grids,
            batch_size=p.eval_batch_size,
            **limits,
            predictions_dir=stage.directory / PREDICTIONS,
            training_params=training_params,
            save_decoding=True,
            precision=self._inference_precision(),
            bf16_weights=self._bf16_weights(),
        )

    # ---- the run ------------------------------------------------------------------------------------------------

    def grid(self, variants: Sequence[str] | None = None, seeds: Sequence[int] | None = None) -> list[tuple[str, int]]:
        """The (variant, seed) pairs to run: the preset's, or a part of the grid (``variants``, ``seeds``); every
        variant once before any twice."""
        variants, seeds = variants or self.preset.variants, seeds or self.preset.seeds
        check_variants(variants, "--variants")
        check_seeds(seeds, "--seeds")
        return [(v, s) for s in seeds for v in variants]

    def each(self, models: Sequence[Any], run: Callable[..., None]) -> None:
        """``run(*model)`` for each model in order (the grid's, the augmentation stage's and the training sets'); one
        whose stage another process runs (:class:`Busy`) is put off (:attr:`put_off`) until the run has tried every
        model of every stage, then waited for (:meth:`finish_put_off`)."""
        self.wait = False
        try:
            for model in models:
                try:
                    run(*model)
                except Busy as busy:
                    logger.info("%s; going on with the next model", busy)
                    self.put_off.append((run, model))
        finally:
            self.wait = True

    def finish_put_off(self) -> None:
        """Run the models :meth:`each` put off, in order, waiting for the process that runs each."""
        self.wait = True
        while self.put_off:
            run, model = self.put_off.pop(0)
            run(*model)

    def check(self, grid: Sequence[tuple[str, int]]) -> None:
        """Check every training config a run of ``grid`` trains with (the pretraining's and each variant's, the
        preset's keys over the study's), before any work: an error names the preset's block the key comes from."""
        p, pretrained = self.preset, self.directory(*self._pretrain_inputs())
        name, config = self._pretrain_inputs()
        blocks = {**dict.fromkeys(p.pretrain, "pretrain"), "model_overrides": "model"}
        configs = [(name, config, blocks)]
        if sides := self._sides_inputs(pretrained):
            configs.append((sides[0], sides[1], dict.fromkeys(p.pretrain_sides, "pretrain_sides")))
        trainings = [(v, False, None) for v, _ in grid]  # (variant, augmented, training set)
        if p.augmentation_study:
            trainings += [(v, augmented, None) for v, _ in self._augmentation_grid(grid) for augmented in (0, 1)]
        if study := p.training_sets_study:
            trainings += [
                (v, False, name) for name in study.sets for v, _ in self._stage_grid(study.variants_of(name), grid)
            ]
        seed = grid[0][1]  # the configs of other seeds differ only in their seed
        for variant, augmented, training_set in dict.fromkeys(trainings):
            name, config, *_ = self._finetune_inputs(variant, seed, pretrained, bool(augmented), training_set)
            configs.append((name, config, {**dict.fromkeys(p.finetune, "finetune"), "model_overrides": "bart"}))
        for name, config, blocks in configs:
            origins = {key: f"preset {p.name}: {blocks[key]}" for key in config if key in blocks}
            config = {**config, "output_dir": str(self.run_dir / STAGES / name)}
            check_config(_sorted(config), origins, source=f"preset {p.name} ({name})")

    def _order(self, model: tuple[str, int]) -> tuple:
        """Results list models seed by seed in the preset's order, then variants and seeds the preset lacks."""
        (variant, seed), p = model, self.preset
        seed_rank = (0, p.seeds.index(seed)) if seed in p.seeds else (1, seed)
        variant_rank = (0, p.variants.index(variant)) if variant in p.variants else (1, list(VARIANTS).index(variant))
        return seed_rank, variant_rank

    def folders(
        self, variant: str, seed: int, augmented: bool = False, training_set: str | None = None
    ) -> tuple[Path, Path]:
        """The training and the evaluation stage folder of one variant and seed (whether or not they have run);
        ``augmented``: of the augmentation stage; ``training_set``: of that set's model."""
        pretrained = self.directory(*self._pretrain_inputs())
        model_dir = self.directory(*self._finetune_inputs(variant, seed, pretrained, augmented, training_set))
        build = self.directory(*self._build_inputs())
        return model_dir, self.directory(*self._evaluate_inputs(model_dir, build, augmented, training_set))

    def augment(self) -> Stage:
        """The augmentation set's leak filter (how many pairs were removed) and the coverage of each of the stage's
        test sets by S_train and by the augmented set, in the stage's ``augmentation.json``."""
        p, study = self.preset, self.preset.augmentation_study
        stage = self.stage(*self._augment_inputs())
        if self.pending(stage, f"augment: the leak filter and coverage of {study.confusion}"):
            augmented = plan_for(BenchParams(**p.bench_params)).augmented(study.confusion)
            leaks = augmented.leaks
            logger.info(
                f"augmentation {study.confusion}: {leaks['pairs']} pairs; removed {leaks['removed_unseen_k']} "
                f"(keys of S_unseen^k) and {leaks['removed_unseen_v']} (pairs of S_unseen^v)"
            )
            train = plan_for(BenchParams(**p.bench_params)).division.train
            summary = {
                "confusion": study.confusion,
                "leaks": leaks,
                "coverage": augmentation_coverage(p.bench_params, study.tests, train, augmented.confusion),
            }
            (stage.directory / AUGMENTATION).write_text(
                json.dumps(summary, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
            )
            stage.finish({"leaks": leaks})
        return stage

    def _augment_inputs(self) -> tuple:
        """The name and inputs of the augment stage: the set's name and its file's content (or package version)."""
        p, study = self.preset, self.preset.augmentation_study
        files = input_files(BenchParams(**self._augmented_params()))["augmentation"]
        return "augment", p.bench_params, study.confusion, files, study.tests

    def _augmentation_grid(self, grid: Sequence[tuple[str, int]]) -> list[tuple[str, int]]:
        """The (variant, seed) pairs of the augmentation stage for a run of ``grid`` (see :meth:`_stage_grid`)."""
        return self._stage_grid(self.preset.augmentation_study.variants, grid)

    def run_augmentation(self, pretrained: Stage, build: Stage, grid: Sequence[tuple[str, int]]) -> dict | None:
        """Run the augmentation stage for its variants with the seeds of ``grid`` (only the variants ``grid`` names
        when it is a part of the preset's; models another process runs are put off): the augment stage's summary
        (the leak filter and coverage), or ``None`` without an augmentation stage or before the augment stage has
        run. The plain model is the grid's (the same stage: trained once)."""
        if self.preset.augmentation_study is None:
            return None
        try:
            summary = json.loads((self.augment().directory / AUGMENTATION).read_text(encoding="utf-8"))
        except Unfinished as missing:
            logger.info("skipping the augmentation stage: %s", missing)
            return None

        def augmented(variant: str, seed: int) -> None:
            try:
                self.evaluate(self.finetune(variant, seed, pretrained), variant, seed, build)
                model = self.finetune(variant, seed, pretrained, augmented=True)
                self.evaluate(model, variant, seed, build, augmented=True)
            except Unfinished as missing:
                logger.info("skipping %s (seed %s, augmented): %s", variant, seed, missing)

        self.each(self._augmentation_grid(grid), augmented)
        return summary

    def augmentation_results(self, summary: dict | None, grid: Sequence[tuple[str, int]]) -> dict | None:
        """Collect every finished model of the augmentation stage: the augment stage's ``summary``, records and
        paired comparisons (augmented − plain) for ``results.json`` (``None`` without a summary or before the
        stage's first finished evaluation)."""
        p, study = self.preset, self.preset.augmentation_study
        if summary is None:
            return None
        pairs = {}
        for variant, seed in sorted({*((v, s) for v in study.variants for s in p.seeds), *grid}, key=self._order):
            augmented, plain = self.folders(variant, seed, augmented=True)[1], self.folders(variant, seed)[1]
            if variant in study.variants and Stage(augmented).done and Stage(plain).done:
                pairs[variant, seed] = augmented, plain
        if not pairs:
            return None
        records = [
            r for folder, _ in pairs.values() for r in json.loads((folder / RECORDS).read_text(encoding="utf-8"))
        ]
        paired = augmentation_comparisons(p.bench_params, pairs, n_resamples=p.bootstrap)
        return {**summary, "records": records, "paired": paired}

    def _stage_grid(self, variants: Sequence[str], grid: Sequence[tuple[str, int]]) -> list[tuple[str, int]]:
        """The (variant, seed) pairs of a stage that trains ``variants`` again, for a run of ``grid``: those variants
        (only those ``grid`` names when it is a part of the preset's) with the seeds of ``grid``, seed by seed."""
        requested = {v for v, _ in grid}
        chosen = [v for v in variants if v in requested or requested >= set(self.preset.variants)]
        return [(v, s) for s in dict.fromkeys(s for _, s in grid) for v in chosen]

    def run_training_sets(self, pretrained: Stage, build: Stage, grid: Sequence[tuple[str, int]]) -> None:
        """Run the training-distribution stage for its variants with the seeds of ``grid`` (the grid's model of each
        first: every set's model is compared with it; models another process runs are put off)."""
        study = self.preset.training_sets_study
        if study is None:
            return

        def trained_on(name: str, variant: str, seed: int) -> None:
            try:
                self.evaluate(self.finetune(variant, seed, pretrained), variant, seed, build)
                model = self.finetune(variant, seed, pretrained, training_set=name)
                self.evaluate(model, variant, seed, build, training_set=name)
            except Unfinished as missing:
                logger.info("skipping %s (seed %s, training set %s): %s", variant, seed, name, missing)

        sets = [(name, v, s) for name in study.sets for v, s in self._stage_grid(study.variants_of(name), grid)]
        self.each(sets, trained_on)

    def training_sets_results(self, grid: Sequence[tuple[str, int]]) -> dict | None:
        """Collect every finished model of the training-distribution stage: the sets, records, paired comparisons
        (set − grid's model, and within each set each variant − bert) and stage times for ``results.json`` (``None``
        without the stage or before its first finished evaluation)."""
        p, study = self.preset, self.preset.training_sets_study
        if study is None:
            return None
        models = sorted({*((v, s) for v in study.all_variants for s in p.seeds), *grid}, key=self._order)
        evaluations = {
            (variant, seed, name): self.folders(variant, seed, training_set=name)[1]
            for variant, seed in models
            for name in (None, *study.sets)
            if variant in (study.all_variants if name is None else study.variants_of(name))
            and Stage(self.folders(variant, seed, training_set=name)[1]).done
        }
        if not any(name for _, _, name in evaluations):
            return None
        records = [
            r
            for (_, _, name), folder in evaluations.items()
            if name
            for r in json.loads((folder / RECORDS).read_text(encoding="utf-8"))
        ]
        params = {name: self._training_params(training_set=name) for name in (None, *study.sets)}
        paired = training_set_comparisons(params, evaluations, n_resamples=p.bootstrap)
        return {
            "sets": study.sets,
            "variants": list(study.all_variants),
            **({"set_variants": {k: list(v) for k, v in study.set_variants.items()}} if study.set_variants else {}),
            "records": records,
            "paired": paired,
        }

    def finished(self, grid: Sequence[tuple[str, int]] = ()) -> dict[tuple[str, int], Path]:
        """Every finished evaluation of this preset's stages in the run folder, whichever process ran it (of
        ``grid``, the preset's grid, and every model a finished ``eval-*`` stage holds): ``{(variant, seed): its
        folder}``, seed by seed in the preset's order."""
        candidates = {*grid, *((v, s) for s in self.preset.seeds for v in self.preset.variants)}
        for done in (self.run_dir / STAGES).glob(f"{evaluation_stage(Path('*'))}/{DONE}"):
            records = json.loads((done.parent / RECORDS).read_text(encoding="utf-8"))
            candidates |= {(r["model"], r["seed"]) for r in records if r.get("model") in VARIANTS}
        found = {}
        for variant, seed in sorted(candidates, key=self._order):
            folder = self.folders(variant, seed)[1]
            if Stage(folder).done:
                found[variant, seed] = folder
        return found

    def plan(self, grid: Sequence[tuple[str, int]]) -> list[Step]:
        """Every stage a run of ``grid`` goes through, in order (each once), whether or not it has finished."""

        def model(variant: str, seed: int, augmented: bool = False, training_set: str | None = None) -> list[Step]:
            train, evaluation = self.folders(variant, seed, augmented, training_set)  # augmented: more steps
            tests = self.preset.augmentation_study.tests if augmented else self.preset.tests
            return [
                Step(
                    model_label("train", variant, seed, augmented, training_set),
                    train,
                    (f"train {variant}", "train"),
                    AUGMENTED_COPIES if augmented else 1,
                    variant,
                ),
                Step(
                    model_label("evaluate", variant, seed, augmented, training_set),
                    evaluation,
                    (model_label("evaluate", variant, None, augmented), "evaluate"),
                    variant=variant,
                    tests=tuple(tests),
                ),
            ]

        pretrained = self.directory(*self._pretrain_inputs())
        steps = [
            Step("build", self.directory(*self._build_inputs()), ("build",)),
            Step("pretrain", pretrained, ("pretrain",)),
            *(step for variant, seed in grid for step in model(variant, seed)),
        ]
        if self.preset.augmentation_study is not None:
            steps.append(Step("augment", self.directory(*self._augment_inputs()), ("augment",)))
            steps += [step for v, s in self._augmentation_grid(grid) for step in model(v, s) + model(v, s, True)]
        if (sets := self.preset.training_sets_study) is not None:
            steps += [
                step
                for name in sets.sets
                for v, s in self._stage_grid(sets.variants_of(name), grid)
                for step in model(v, s) + model(v, s, training_set=name)
            ]
        sides = self._sides_inputs(pretrained)
        if sides and any(variant_sources(step.variant) for step in steps if step.variant):
            steps.insert(2, Step("pretrain sides", self.directory(*sides), ("pretrain-sides",)))
        return list(dict.fromkeys(steps))

    def run(self, variants: Sequence[str] | None = None, seeds: Sequence[int] | None = None) -> Path:
        """Every stage of the grid (or of a part of it: ``variants``, ``seeds``), then the results files and the
        report; returns ``results.json``'s path. The results cover every finished evaluation of this preset in the
        run folder, so processes that share a run (one per seed, say) each end with all of them. A ``finished_only``
        study runs nothing and writes them for the models evaluated so far (e.g. to look at a long run while it goes
        on). Each stage that runs logs its progress line (:class:`Progress`)."""
        grid = self.grid(variants, seeds)
        threads_before = None
        if not self.finished_only:
            self.check(grid)
            self.check_data()
            threads_before = hardware.set_threads()
            import torch

            threads = self.model_threads(torch.get_num_threads())
            self.progress = Progress(self.plan(grid), processes=self.processes, threads=threads)
            total, finished = len(self.progress.plan), len(self.progress.finished())
            logger.info(
                "%s: %d stages%s",
                self.run_dir,
                total,
                f", {finished} finished: resuming after them" if finished else "",
            )
            if self.worker:
                logger.info("a worker: one of %d processes that share the models' stages", self.processes)
        try:
            with plain_library_output():
                path = self._run(grid)
        finally:
            progress, self.progress = self.progress, None
            for stage in self._running:  # an interrupted stage: its lock goes, its checkpoints stay
                stage.lock.release()
            self._running.clear()
            if threads_before is not None:
                import torch

                torch.set_num_threads(threads_before)
        if progress is not None:
            logger.info(
                "all %d stages finished (elapsed %s)", len(progress.plan), clock(time.monotonic() - progress.started)
            )
        return path

    def layout(self) -> dict:
        """How a stage that finishes now ran (`Stage.finish`): with this process's torch threads, beside the
        run's ``processes``."""
        import torch

        return {"threads": torch.get_num_threads(), "processes": self.processes}

    def model_threads(self, threads: int) -> int:
        """The torch threads of each of the ``processes`` in the models' stages, out of the run's ``threads`` (a
        worker's threads are its share already)."""
        return threads if self.worker else max(1, threads // self.processes)

    def start_workers(self, grid: Sequence[tuple[str, int]]) -> None:
        """With ``processes`` N > 1, once the encoder is pretrained (with every thread): N - 1 more processes, each a
        ``csc-bench run`` of the same grid and preset (written to ``RUN/workers/PRESET.yaml``) in this run folder
        with 1/N of this process's torch threads, which this process keeps for itself; the stage locks share the
        models out. Each logs to ``RUN/workers/worker-K.log``. Every model's stage then trains and evaluates with
        the same thread count, whichever process takes it: same seed, same bytes."""
        if self.processes <= 1 or self.finished_only or self.worker:
            return
        import torch

        threads = self.model_threads(torch.get_num_threads())
        torch.set_num_threads(threads)
        folder = self.run_dir / WORKERS
        data = {k: v for k, v in dataclasses.asdict(self.preset).items() if k != "name"}
        preset = write_atomic(
            folder / f"{self.preset.name}.yaml",
            yaml.safe_dump(json.loads(json.dumps(data)), allow_unicode=True, sort_keys=False),
            make_parents=True,
        )
        command = [sys.executable, "-m", "csc_hf", "run", "--preset", str(preset), "--output", str(self.run_dir)]
        command += [
            "--variants",
            *dict.fromkeys(v for v, _ in grid),
            "--seeds",
            *dict.fromkeys(str(s) for _, s in grid),
        ]
        command += ["--no-estimate", "--processes", str(self.processes), "--worker"]
        self.share_forecast()
        # a log file takes no progress bars: each redraw would be kept (the "step N/M" lines say as much)
        environ = {**os.environ, "OMP_NUM_THREADS": str(threads), "TQDM_DISABLE": "1"}
        for k in range(1, self.processes):
            log = folder / f"worker-{k}.log"
            with log.open("a", encoding="utf-8") as out:
                worker = subprocess.Popen(
                    command, stdout=out, stderr=subprocess.STDOUT, env=environ, preexec_fn=_ends_with_its_parent
                )
            self._workers.append((worker, log))
        if threading.current_thread() is threading.main_thread():  # a kill stops the workers too (stop_workers)
            self._sigterm = signal.signal(signal.SIGTERM, _terminated)
        logger.info(
            "the models' stages: %d processes with %d torch thread(s) each (this one; the others log to %s)",
            self.processes,
            threads,
            folder,
        )

    def share_forecast(self) -> None:
        """Write this run's forecast of each stage (by stage folder; empty without one), the step times it took and what
        they time (``probe``), and the machine they were probed on (:meth:`machine`, as :meth:`forecast` saw it) where
        the workers that :meth:`start_workers` starts read it (:meth:`shared_forecast`), so that their ETA is this
        process's, and where a resumed run finds the step times (:meth:`shared_probe`). A run without a forecast
        (``--no-estimate``) keeps the step times an earlier start wrote there."""
        forecast = self.progress.forecast if self.progress is not None else {}
        if self.probe is not None:
            machine, probe = self.probed_on, self.probe
        else:  # no forecast at this start: the step times an earlier one saved stay
            kept = self._shared(None, self.run_dir)
            machine, probe = kept.get("machine"), kept.get("probe")
        stages = {Path(d).name: seconds for d, seconds in forecast.items()}
        shared = {"machine": machine, "stages": stages, "probe": probe}
        write_atomic(self.run_dir / WORKERS / FORECAST, json.dumps(shared, indent=1) + "\n", make_parents=True)

    def _shared(self, machine: str | None, run_dir: Path) -> dict[str, Any]:
        """What :meth:`share_forecast` wrote in ``run_dir``, or only where it was probed on ``machine``; empty without
        it, or where the file is not one this csc_hf wrote (it is written again)."""
        path = run_dir / WORKERS / FORECAST
        if not path.is_file():
            return {}
        try:
            shared = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            logger.warning("%s: not a forecast (%s); left out", path, error)
            return {}
        if not isinstance(shared, dict) or not isinstance(shared.get("stages"), dict):
            return {}  # of an earlier csc_hf, which did not say where it was probed
        return shared if machine is None or shared.get("machine") == machine else {}

    def shared_forecast(self) -> dict[Path, float]:
        """The forecast of each stage that :meth:`share_forecast` wrote in this run's folder (a worker's: what the
        process that started it shared)."""
        stages = self._shared(None, self.run_dir).get("stages", {})
        return {self.run_dir / STAGES / name: float(seconds) for name, seconds in stages.items()}

    def shared_probe(self, machine: str, run_dir: Path, timed: str, variants: Sequence[str]) -> StepProbe | None:
        """The step times :meth:`share_forecast` wrote in ``run_dir`` where they were probed on ``machine`` for what
        ``timed`` says (`_probe_inputs`) and hold every one of ``variants``; else None."""
        from ..job_estimate import StepProbe

        probe = self._shared(machine, run_dir).get("probe")
        if not isinstance(probe, dict) or probe.get("timed") != timed:
            return None
        try:
            steps = StepProbe(**probe["steps"])
        except (KeyError, TypeError):
            return None  # another csc_hf's fields
        return steps if all(v in steps.finetune_step and v in steps.sentence for v in variants) else None

    def machine(self) -> str:
        """What a forecast holds only for: the CPU (:func:`csc_hf.hardware.describe`), the torch threads of the
        pretraining and of each process of the models' stages, and the processes."""
        import torch

        threads = torch.get_num_threads()
        return f"{hardware.describe()}; {threads}/{self.model_threads(threads)} threads, {self.processes} processes"

    def _restore_sigterm(self) -> None:
        if self._sigterm is not None:
            signal.signal(signal.SIGTERM, self._sigterm)
            self._sigterm = None

    def wait_for_workers(self) -> None:
        """Wait for the processes of :meth:`start_workers`; one that failed is named with its log (its stages were
        finished by the others, which take over a dead process's locks)."""
        for process, log in self._workers:
            if process.wait() != 0:
                logger.warning("a worker process exited with code %s: its log is %s", process.returncode, log)
        self._workers.clear()

    def stop_workers(self, interrupted: bool = False) -> None:
        """Stop the processes of :meth:`start_workers` when this one stops early. After a Ctrl-C (which reaches them
        too: they stop after their own checkpoint) each gets `WORKER_EXIT` seconds; then, or at once after an error,
        it is terminated (it loses the steps since its last checkpoint)."""
        deadline = time.monotonic() + (self.WORKER_EXIT if interrupted else 0.0)
        for process, _ in self._workers:
            _stop(process, deadline - time.monotonic())
        self._workers.clear()

    def forecast(self, plan: Sequence[Step], build: Stage) -> dict[Path, float]:
        """The seconds each model and pretraining stage of ``plan`` (the side encoders' too) will take here: the steps
        of each kind timed now (`csc_hf.job_estimate.StepProbe`: `PROBE_STEPS` batches of the training sentences from
        the shortest to the longest, a few seconds per variant at the preset's sizes, batch sizes and precision), times
        the stage's steps (a training) or sentences (an evaluation: every split of its test configs, as the build
        counted them, and the validation sentences its decoding is tuned on). Logged with the whole job's sum.
        Where this run's folder, or that of the run that handed itself over to this one (``forecast_from``), holds the
        step times of a probe on this machine (:meth:`machine`) of the same steps (`_probe_inputs`) and variants, they
        are taken instead of timing the steps again (:meth:`shared_probe`)."""
        import torch

        from ..job_estimate import StepProbe, timed_keys

        p = self.preset
        pending = [step for step in plan if step.kinds[-1] in FORECAST_KINDS and not Stage(step.directory).done]
        if not pending:
            return {}
        if p.launcher or not trains_on_cpu(bool(p.finetune.get("use_cpu"))):
            logger.info("no forecast: the probe times one process on the CPU, and this preset trains otherwise")
            return {}
        self.probed_on = self.machine()
        sizes = json.loads((build.directory / DONE).read_text(encoding="utf-8")).get("configs", {})
        (train_targets,) = columns(load_dataset("csc_bench", "train", split="train", **p.bench_params), "target")
        cut = p.finetune.get("max_length", DataArguments.max_length) - 2  # [CLS] and [SEP]
        variants = list(dict.fromkeys(step.variant for step in plan if step.variant))
        sides = self._sides_inputs(self.directory(*self._pretrain_inputs()))
        sides_config = sides[1] if sides else {}  # timed whether or not they are pretrained: a resume times the same
        threads = torch.get_num_threads()
        shared = self.model_threads(threads)
        options = {
            "precision": p.finetune.get("precision", "auto"),
            "bf16_weights": p.eval_bf16_weights,
            "bart": p.bart,
            "pretrain_batch": p.pretrain.get("per_device_train_batch_size", 8),
            "finetune_batch": p.finetune.get("per_device_train_batch_size", 8),
            "eval_batch": p.eval_batch_size,
            "sides": sides_config.get("model_overrides", {}).get("sources", ()),
            "sides_batch": sides_config.get("per_device_train_batch_size", 8),
            "steps": self.PROBE_STEPS,
            "passes": self.PROBE_PASSES,
            "pretrain_keys": timed_keys(p.pretrain),
            "finetune_keys": timed_keys(p.finetune),
            "texts": [target[:cut] for target in train_targets],
        }
        timed = _probe_inputs(p.model, options, threads, shared)
        earlier_runs = dict.fromkeys(f for f in (self.run_dir, self.forecast_from) if f is not None)
        for folder in earlier_runs:  # a resumed run's probe, or the probe of the run that handed itself over
            if (probe := self.shared_probe(self.probed_on, folder, timed, variants)) is not None:
                logger.info(
                    "the step times of an earlier probe of the same steps on this machine (%s; remove it to probe "
                    "again)",
                    folder / WORKERS / FORECAST,
                )
                break
        else:
            probe = StepProbe.measure(p.model, None, variants, threads=shared, **options)
            if shared != threads:  # the encoder pretrains with every thread, before the processes share the models
                probe.pretrain_step = StepProbe.measure(p.model, None, [], threads=threads, **options).pretrain_step
        self.probe = {"timed": timed, "steps": dataclasses.asdict(probe)}
        scored = {name: sum(splits.values()) for name, splits in sizes.items() if name != "train"}  # every split
        mean_test = sum(scored.values()) / len(scored) if scored else 0
        validation = sizes.get("train", {}).get("validation", 0)
        tuned = min(validation, p.finetune.get("max_eval_samples") or validation) if len(p.keep_bias_grid) > 1 else 0
        seconds = {}
        for step in plan:
            kind = step.kinds[-1]
            if kind == "pretrain" and p.pretrain.get("max_steps", 0) > 0:
                seconds[step.directory] = p.pretrain["max_steps"] * probe.pretrain_step
            elif kind == "pretrain-sides" and sides_config.get("max_steps", 0) > 0:
                seconds[step.directory] = sides_config["max_steps"] * probe.sides_step
            elif kind == "train" and p.finetune.get("max_steps", 0) > 0:
                seconds[step.directory] = step.work * p.finetune["max_steps"] * probe.finetune_step[step.variant]
            elif kind == "evaluate":
                sentences = tuned + sum(scored.get(test, mean_test) for test in step.tests)
                seconds[step.directory] = sentences * probe.sentence[step.variant]
        logger.info("step times here: %s", probe.summary())
        if shared != threads:
            logger.info(
                "(pretraining with %d torch threads, the models' stages with %d in each process)", threads, shared
            )
        self._log_forecast(plan, seconds)
        return seconds

    def _log_forecast(self, plan: Sequence[Step], seconds: Mapping[Path, float]) -> None:
        pending, left = self._forecast_left(plan, seconds)
        models = f" ({self.processes} processes sharing the models' stages)" if self.processes > 1 else ""
        logger.info(
            "forecast of the %d pretraining, training and evaluation stages left%s: %s; times %g, what whole runs "
            "measured so far took over theirs at least: %s (build and augment stages not included; measured stages "
            "replace the forecast in the progress line as they finish)",
            pending,
            models,
            clock(left),
            RUN_OVER_FORECAST,
            clock(left * RUN_OVER_FORECAST),
        )

    def _forecast_left(self, plan: Sequence[Step], forecast: Mapping[Path, float]) -> tuple[int, float]:
        """How many unfinished stages of ``plan`` have a forecast, and their wall seconds with this run's processes (a
        training that resumes: the steps after its checkpoint)."""
        pending = [s for s in plan if s.directory in forecast and not Stage(s.directory).done]
        left = [forecast[s.directory] * Stage(s.directory).share_left() for s in pending]
        return len(pending), sum(wall_seconds(s, seconds, self.processes) for s, seconds in zip(pending, left))

    def handed_to(self) -> str | None:
        """The preset an earlier default run here handed itself to (:meth:`check_hours`), if one did."""
        marker = self.run_dir / HANDED_OVER
        return json.loads(marker.read_text(encoding="utf-8"))["preset"] if marker.is_file() else None

    def begun(self, plan: Sequence[Step] | None = None) -> bool:
        """Whether a stage of ``plan`` (default: the whole grid's) after the build has begun here: its folder exists."""
        plan = self.plan(self.grid()) if plan is None else plan
        return any(s.directory.exists() for s in plan if s.kinds[-1] != "build")

    def check_hours(self, plan: Sequence[Step], forecast: Mapping[Path, float]) -> None:
        """Whether the forecast of the stages left, times `RUN_OVER_FORECAST`, fits the hours the preset is sized for.
        Where it does not, a ``fallback`` run whose stages after the build have not begun raises :class:`OverHours`
        (its preset's ``smaller`` takes the run); any other run goes on, and the log says so and names ``smaller``."""
        p = self.preset
        seconds = self._forecast_left(plan, forecast)[1]
        if not p.hours or seconds * RUN_OVER_FORECAST <= p.hours * 3600:
            return
        if self.fallback and p.smaller and not self.begun(plan):
            over = OverHours(p, seconds)
            write_atomic(
                self.run_dir / HANDED_OVER, json.dumps({"preset": p.smaller, "why": str(over)}), make_parents=True
            )
            raise over
        instead = f"; the preset {p.smaller} is sized for slower CPUs (--preset {p.smaller})" if p.smaller else ""
        logger.warning(
            "the forecast here (%s; times %g, what whole runs measured so far took over theirs at least) is over the "
            "%g hours %s is sized for: this CPU is slower than the ones it was sized on%s",
            clock(seconds),
            RUN_OVER_FORECAST,
            p.hours,
            p.name,
            instead,
        )

    def _run(self, grid: Sequence[tuple[str, int]]) -> Path:
        p = self.preset
        build = self.build()
        if self.estimate and self.progress is not None:
            self.progress.forecast = self.forecast(self.progress.plan, build)
            self.share_forecast()  # where a resumed run finds it
            self.check_hours(self.progress.plan, self.progress.forecast)
        elif self.worker and self.progress is not None:
            self.progress.forecast = self.shared_forecast()
        pretrained = self.pretrain()

        def model(variant: str, seed: int) -> None:
            try:
                self.evaluate(self.finetune(variant, seed, pretrained), variant, seed, build)
            except Unfinished as missing:
                logger.info("skipping %s (seed %s): %s", variant, seed, missing)

        self.start_workers(grid)
        try:
            self.each(grid, model)
            summary = self.run_augmentation(pretrained, build, grid)
            self.run_training_sets(pretrained, build, grid)
            self.finish_put_off()  # what another process ran when this one reached it, now that nothing else is left
        except BaseException as stopped:
            self.stop_workers(interrupted=isinstance(stopped, KeyboardInterrupt))
            raise
        finally:
            self._restore_sigterm()
        self.wait_for_workers()
        augmentation = self.augmentation_results(summary, grid)
        training_sets = self.training_sets_results(grid)
        evaluations = self.finished(grid)
        if not evaluations:
            raise Unfinished(f"{self.run_dir}: no model of preset {p.name!r} has been evaluated yet")
        records = [
            r for folder in evaluations.values() for r in json.loads((folder / RECORDS).read_text(encoding="utf-8"))
        ]
        paired = paired_comparisons(p.bench_params, evaluations, n_resamples=p.bootstrap)
        domains = None
        if any(config in DOMAINS for config in p.tests):
            known = CSCTokenizer.from_pretrained(str(pretrained.directory)).get_vocab()
            domains = domain_error_groups(p.bench_params, evaluations, known)
        stages = self.finished_stages([*grid, *evaluations])
        return write_results(
            self.run_dir, p, records, stages, paired, augmentation, training_sets, domains, self.processes
        )

    def finished_stages(self, grid: Sequence[tuple[str, int]]) -> dict[str, dict]:
        """Each finished stage of the plan of ``grid`` (`plan`), by folder name, in the plan's order: its kind
        (``build``, ``pretrain``, ``pretrain-sides``, ``train``, ``evaluate``, ``augment``), its wall time and the
        machine it ran on (`Stage.marker`)."""
        markers = [(step, Stage(step.directory).marker()) for step in self.plan(list(dict.fromkeys(grid)))]
        return {
            step.directory.name: {"kind": step.kinds[-1], "seconds": marker.get("seconds"), "cpu": marker.get("cpu")}
            for step, marker in markers
            if marker
        }
