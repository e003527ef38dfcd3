"""`csc-bench run`: the paper's study end to end — build → pretrain → train the variant grid → evaluate every model on
every test config → results (json, csv, markdown table, plots, report).

A preset (``trainer_configs/presets/NAME.yaml``, or any YAML path) says everything a run does; its
``augmentation`` (:class:`AugmentationStudy`) adds the SIGHAN-credibility stage: models trained once more with an
augmentation confusion set, compared with the grid's on SIGHAN-15 and on the controlled test sets. Each stage's output
lives in ``RUN_DIR/stages/STAGE-KEY`` where KEY hashes the stage's inputs (its configuration and the keys of the
stages it reads), and a ``done.json`` marks it finished: a re-run skips finished stages, a changed preset redoes only
what it changes, and an interrupted training resumes from its last checkpoint. Each stage that runs logs a progress
line (stage k of N, elapsed time, an ETA from the stage times recorded so far: :class:`Progress`) to the ``csc_hf``
logger. A run may do a part of the grid (``variants``, ``seeds``); its results cover every finished evaluation of the
preset in the run folder. This module only orchestrates: evaluation is :mod:`csc_hf.evaluation`, the analysis
:mod:`csc_hf.results`, the report :mod:`csc_hf.report`.
"""

from __future__ import annotations

import csv
import datetime
import hashlib
import io
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from . import __version__, resources
from .benchmark.builder import load_dataset
from .benchmark.configs import TEST_CONFIGS, check_configs, splits_of
from .benchmark.plan import (
    AUGMENTED_COPIES,
    PACKAGED_CONFUSION,
    BenchParams,
    input_files,
    load_augmentation,
    plan_for,
)
from .confusion import ConfusionSet
from .dataset_stats import coverage, error_pairs, split_name
from .evaluation import (
    PREDICTIONS,
    augmentation_comparisons,
    evaluate_model,
    paired_comparisons,
)
from .files import write_atomic
from .hub import DONE, RECORDS, TRAIN_CONFIG
from .logging import get_logger, plain_transformers_output
from .results import CONTROLLED, RESULTS_FILE, SIGHAN
from .stats import RESAMPLES, check_resamples

logger = get_logger(__name__)
AUGMENTATION = "augmentation.json"  # the augment stage's leak filter and coverage
RESULTS_CSV = "results.csv"  # a run folder's records as a table, beside its results.json and report.md
DECODING_COPY = "decoding"  # an evaluation folder's copy of the decoding files it saved with its model


@dataclass(frozen=True)
class AugmentationStudy:
    """The SIGHAN-credibility stage (a preset's ``augmentation``; empty: off): each of ``variants`` is trained, with
    every seed, once more with augmentation data added to its training set, as the paper added Wang271K: the same
    training sentences again, corrupted with the confusion set ``confusion`` less its pairs that would leak into
    unseen_k / unseen_v (the benchmark parameter ``augmentation``; the data holds AUGMENTED_COPIES times the rows). It
    trains as many epochs as the grid's model (``max_steps`` and ``warmup_steps`` scaled by AUGMENTED_COPIES), so that it
    meets the plain rows as often; it is evaluated on ``tests`` and compared with the grid's model of the same variant
    and seed."""

    confusion: str = "sighan13"  # a name of csc_hf.benchmark.plan.PACKAGED_CONFUSION, or a confusion set file
    variants: tuple[str, ...] = ("bert", "bart")
    tests: tuple[str, ...] = (SIGHAN, *CONTROLLED)

    @classmethod
    def of(cls, data: Any, origin: Path | str) -> AugmentationStudy:
        """The stage a preset's ``augmentation`` mapping describes (unknown keys are errors)."""
        known = [f.name for f in fields(cls)]
        if not isinstance(data, dict):
            raise ValueError(
                f"{origin}: augmentation must be a mapping such as {{confusion: sighan13, variants: "
                f"[bert, bart]}}, not {data!r}"
            )
        if unknown := sorted(set(data) - set(known)):
            raise ValueError(f"{origin}: augmentation: unknown keys {unknown}; it has {known}")
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})


@dataclass
class Preset:
    """A study as data (see ``trainer_configs/presets/*.yaml``)."""

    name: str
    description: str = ""
    bench_params: dict = field(default_factory=dict)  # csc_bench parameters (BenchParams fields)
    variants: list[str] = field(default_factory=lambda: ["bert"])  # names of csc_hf.modeling.VARIANTS
    seeds: list[int] = field(default_factory=lambda: [0])
    tests: list[str] = field(default_factory=lambda: list(TEST_CONFIGS))
    bootstrap: int = RESAMPLES  # bootstrap resamples for the intervals
    keep_bias_grid: list[float] = field(default_factory=lambda: [0.0])  # source-logit bias, tuned on validation
    similarity_prior_grid: list[float] = field(default_factory=lambda: [0.0])  # decoding prior, tuned with keep_bias
    launcher: str | None = None  # an accelerate config file: trainings run under `accelerate launch`
    model: dict = field(default_factory=dict)  # BertConfig fields of the semantic encoder (pretrained once)
    bart: dict = field(default_factory=dict)  # BartConfig fields of the seq2seq baseline over the encoder's sizes
    pretrain: dict = field(default_factory=dict)  # training-config keys of the masked-LM stage
    finetune: dict = field(default_factory=dict)  # training-config keys of every variant
    eval_batch_size: int = 64
    augmentation: dict = field(default_factory=dict)  # the SIGHAN-credibility stage (AugmentationStudy); {}: off

    @property
    def augmentation_study(self) -> AugmentationStudy | None:
        """The preset's :class:`AugmentationStudy`, or ``None`` when it has none."""
        return AugmentationStudy.of(self.augmentation, self.name) if self.augmentation else None

    @classmethod
    def load(cls, name_or_path: str) -> Preset:
        """A preset by name (``smoke``, ``cpu``, ``paper``) or from a YAML file; unknown keys are errors."""
        path = Path(name_or_path)
        if not path.suffix:
            path = resources.preset_path(name_or_path)
        if not path.is_file():
            known = ", ".join(resources.preset_names())
            raise FileNotFoundError(f"preset {name_or_path!r} not found ({path}); presets: {known}")
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        keys = {f.name for f in fields(cls)} - {"name"}  # the name is the file's
        unknown = sorted(set(data) - keys)
        if unknown:
            raise ValueError(f"{path}: unknown keys {unknown}; a preset has {sorted(keys)}")
        preset = cls(name=path.stem, **data)
        preset.validate(path)
        return preset

    def validate(self, origin: Path | str) -> None:
        BenchParams(**self.bench_params).validate()
        check_variants(self.variants, origin)
        check_resamples(self.bootstrap, f"{origin}: bootstrap")
        check_configs(self.tests, "test config", TEST_CONFIGS, where=f"{origin}: tests")
        from .pipeline import check_decoding

        for name in ("keep_bias", "similarity_prior"):
            grid = getattr(self, f"{name}_grid")
            if not isinstance(grid, list) or not grid:
                raise ValueError(f"{origin}: {name}_grid={grid!r} must be a non-empty list of numbers")
            for value in grid:
                check_decoding(name, value, f"{origin}: {name}_grid")
        if self.launcher:
            found = resources.trainer_config(self.launcher)  # as given, or a shipped accelerate config
            if not found.is_file():
                raise FileNotFoundError(f"{origin}: launcher config {self.launcher} does not exist")
            self.launcher = str(found.resolve())
        if self.augmentation:
            self._validate_augmentation(origin)

    def _validate_augmentation(self, origin: Path | str) -> None:
        """Check the augmentation stage, and read its confusion set (a bad file fails here, before any training,
        with the errors of ``csc-bench confusion import``); a file's path is made absolute."""
        study = AugmentationStudy.of(self.augmentation, origin)
        check_variants(study.variants, f"{origin}: augmentation")
        if bad := [t for t in study.tests if t not in self.tests]:
            raise ValueError(f"{origin}: augmentation: tests {bad} are not among the preset's tests {self.tests}")
        confusion = study.confusion
        if not isinstance(confusion, str) or not confusion:
            raise ValueError(
                f"{origin}: augmentation: confusion={confusion!r} must be one of "
                f"{', '.join(PACKAGED_CONFUSION)} or a confusion set file"
            )
        if confusion not in PACKAGED_CONFUSION:
            confusion = str(Path(confusion).resolve())
            self.augmentation = {**self.augmentation, "confusion": confusion}
        try:
            load_augmentation(confusion)
        except (ValueError, FileNotFoundError) as err:
            raise type(err)(f"{origin}: augmentation: {err}") from None


def check_variants(variants: Sequence[str], origin: Path | str) -> None:
    """Raise a ValueError naming ``origin`` unless every name is one of ``csc_hf.modeling.VARIANTS``."""
    from .modeling import VARIANTS

    if bad := [v for v in variants if v not in VARIANTS]:
        raise ValueError(f"{origin}: unknown variants {bad}; choose from {', '.join(VARIANTS)}")


# training-config keys that change how a training is followed and resumed, never its model: not a stage's inputs
FOLLOWING_KEYS = {
    "save_strategy",
    "save_steps",
    "save_total_limit",
    "logging_steps",
    "logging_strategy",
    "disable_tqdm",
    "report_to",
}


def _resolved(config: dict) -> dict:
    """A training config with its ``precision`` as this machine resolves it (``auto`` is bf16 on a CPU with bf16 in
    hardware, else fp32): a stage's address says which precision trained it."""
    from .training import precision_keys

    keys = precision_keys(config, {})
    return {**config, "precision": "bf16" if keys["bf16"] else "fp32"} if "bf16" in keys else config


def copy_decoding(source: Path, target: Path) -> list[str]:
    """Copy the decoding files that an evaluation saves with a model (``csc_decoding.json``, ``csc_similar.json``)
    from the folder ``source`` to ``target``, each whole, where ``source`` has them and ``target``'s differ; returns
    the names copied. An evaluation stage keeps such a copy, and restores it to its model when it is skipped as
    finished: a grid changed and changed back leaves the model with the decoding its results were scored with."""
    from .pipeline import DECODING_FILE, SIMILAR_FILE

    copied = []
    for name in (DECODING_FILE, SIMILAR_FILE):
        if (source / name).is_file():
            text = (source / name).read_text(encoding="utf-8")
            if not (target / name).is_file() or (target / name).read_text(encoding="utf-8") != text:
                write_atomic(target / name, text, make_parents=True)
                copied.append(name)
    return copied


def stage_key(*parts: Any) -> str:
    """A short hash of a stage's inputs (less the :data:`FOLLOWING_KEYS` of a training config: checkpoints made more
    often keep a run's stages)."""
    parts = [
        {k: v for k, v in part.items() if k not in FOLLOWING_KEYS} if isinstance(part, dict) else part for part in parts
    ]
    return hashlib.sha256(json.dumps([__version__, *parts], sort_keys=True, default=str).encode()).hexdigest()[:12]


@dataclass
class Stage:
    """A stage folder (named for the stage and a hash of its inputs); ``done`` once its ``done.json`` exists."""

    directory: Path
    started: float = field(default_factory=time.monotonic)

    @property
    def done(self) -> bool:
        return (self.directory / DONE).is_file()

    @property
    def seconds(self) -> float | None:
        """The wall time the stage took when it ran (also when this run found it finished)."""
        return json.loads((self.directory / DONE).read_text(encoding="utf-8")).get("seconds") if self.done else None

    def finish(self, summary: dict) -> None:
        summary = {**summary, "seconds": round(time.monotonic() - self.started, 1)}
        write_atomic(self.directory / DONE, json.dumps(summary, indent=1, default=str) + "\n")  # the marker: whole


def clock(seconds: float) -> str:
    """Seconds as ``H:MM:SS``."""
    return str(datetime.timedelta(seconds=round(seconds)))


@dataclass(frozen=True)
class Step:
    """A stage of a run's plan: its label (``train bert (seed 0)``), its folder, the kinds whose finished stages'
    times estimate its own, most alike first (``train bert``, then ``train``), and its work in units of its kinds'
    (an augmented training, twice the steps: 2)."""

    label: str
    directory: Path
    kinds: tuple[str, ...]
    work: float = 1.0


@dataclass
class Progress:
    """The study-level progress of a run: every stage it goes through (``plan``), in order. A stage whose
    ``done.json`` exists counts as done, whichever process or earlier run finished it; the time it recorded there
    joins the estimates. Each remaining stage is estimated by the mean time per unit of work of the finished stages
    of its first kind that has one, times its work; the ETA is their sum (a lower bound, ``≥``, while some remaining
    kind has no finished stage)."""

    plan: list[Step]
    started: float = field(default_factory=time.monotonic)

    def finished(self) -> dict[Path, float | None]:
        """The planned stages that have finished, with the seconds each recorded."""
        return {step.directory: Stage(step.directory).seconds for step in self.plan if Stage(step.directory).done}

    def eta(self) -> tuple[float, bool] | None:
        """The estimated seconds of the unfinished stages and whether every one of them has an estimate (``None``
        while none has)."""
        finished, times = self.finished(), {}
        for step in self.plan:
            if finished.get(step.directory) is not None:
                for kind in step.kinds:
                    times.setdefault(kind, []).append(finished[step.directory] / step.work)
        estimates = [
            next((step.work * sum(times[k]) / len(times[k]) for k in step.kinds if k in times), None)
            for step in self.plan
            if step.directory not in finished
        ]
        known = [e for e in estimates if e is not None]
        return (sum(known), len(known) == len(estimates)) if known else None

    def line(self, directory: Path, label: str) -> str:
        """The progress line of the stage in ``directory`` as it starts: ``stage 5/30: evaluate bert (seed 0) ·
        elapsed 0:21:05 · ETA 3:02:10``."""
        eta = self.eta()
        ahead = "" if eta is None else f" · ETA {'' if eta[1] else '≥ '}{clock(eta[0])}"
        position = f"{len(self.finished()) + 1}/{len(self.plan)}"
        return f"stage {position}: {label} · elapsed {clock(time.monotonic() - self.started)}{ahead}"


class Unfinished(ValueError):
    """A stage that a ``finished_only`` study found unfinished."""


class Study:
    """One run of a preset into ``run_dir``; with ``finished_only`` it runs no stage and only collects finished ones."""

    def __init__(self, preset: Preset, run_dir: str | Path, finished_only: bool = False):
        self.preset, self.run_dir, self.finished_only = preset, Path(run_dir), finished_only
        self.progress: Progress | None = None  # the plan of the run in progress (see :meth:`run`)
        self.run_dir.mkdir(parents=True, exist_ok=True)

    def directory(self, name: str, *inputs: Any) -> Path:
        """The folder of the stage ``name`` with these inputs (whether or not it has run)."""
        return self.run_dir / "stages" / f"{name}-{stage_key(name, *inputs)}"

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
        stage.started = time.monotonic()
        logger.info(self.progress.line(stage.directory, label) if self.progress else label)
        logger.debug("%s: %s", label, stage.directory)
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
            stage.finish({"configs": sizes})
        return stage

    def pretrain(self) -> Stage:
        """Masked-LM pretraining of the semantic encoder that every variant starts from."""
        name, config = self._pretrain_inputs()
        stage = self.stage(name, config)
        if self.pending(stage, f"pretrain the encoder ({config.get('max_steps', '?')} steps of masked LM)"):
            self._train(stage, config)
        return stage

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

    def _finetune_inputs(
        self, variant: str, seed: int, pretrained: Path, augmented: bool = False
    ) -> tuple[str, dict, str]:
        """The name and inputs of a fine-tuning stage: its training config, and the pretrained stage's name (not its
        path, so that a run folder can move); ``augmented``: the augmentation stage's training."""
        from .modeling import is_seq2seq

        p = self.preset
        bench_params = self._augmented_params() if augmented else p.bench_params
        config = {"task": "correction", "variant": variant, "bench_params": bench_params, "seed": seed, **p.finetune}
        if augmented:  # as many epochs over a data set AUGMENTED_COPIES times as large
            config.update(
                {k: config[k] * AUGMENTED_COPIES for k in ("max_steps", "warmup_steps") if config.get(k, 0) > 0}
            )
        if is_seq2seq(variant):
            config["model_overrides"] = p.bart
        name = f"train-{variant}-seed{seed}" + ("-augmented" if augmented else "")
        return name.replace("+", "_"), _resolved(config), pretrained.name

    def _evaluate_inputs(self, model_dir: Path, build: Path, augmented: bool = False) -> tuple:
        """The name and inputs of the evaluation stage of the model trained in ``model_dir``."""
        p = self.preset
        decoding = {"precision": self._inference_precision()}
        if p.similarity_prior_grid != [0.0]:  # the default stays out of the key: runs before the option keep theirs
            decoding["similarity_prior_grid"] = p.similarity_prior_grid
        common = (p.bootstrap, p.keep_bias_grid, build.name, decoding)
        if augmented:
            return f"eval-{model_dir.name}", list(p.augmentation_study.tests), *common, self._augmented_params()
        return f"eval-{model_dir.name}", p.tests, *common

    def _inference_precision(self) -> str:
        """What the evaluations compute in on this machine: the fine-tuning's ``precision`` (auto, bf16, fp32)
        resolved for the CPU (bf16 or fp32), so that an fp32 evaluation is never taken for a bf16 one."""
        from .precision import resolved

        return resolved(self.preset.finetune.get("precision", "auto"))

    def finetune(self, variant: str, seed: int, pretrained: Stage, augmented: bool = False) -> Stage:
        """Fine-tune one variant with one seed, from the shared pretrained encoder (BART warm-starts from it);
        ``augmented``: on the augmentation stage's training data."""
        name, config, start_name = self._finetune_inputs(variant, seed, pretrained.directory, augmented)
        stage = self.stage(name, config, start_name)
        if self.pending(stage, model_label("train", variant, seed, augmented)):
            start = str(pretrained.directory)
            self._train(stage, {**config, "tokenizer_path": start, "init_from": start})
        return stage

    def _train(self, stage: Stage, config: dict) -> None:
        from .training import load_config, train

        config = {**config, "output_dir": str(stage.directory)}
        config_path = stage.directory / TRAIN_CONFIG
        config_path.write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=True), encoding="utf-8")
        if self.preset.launcher:
            command = [
                sys.executable,
                "-m",
                "accelerate.commands.launch",
                "--config_file",
                self.preset.launcher,
                "-m",
                "csc_hf.train",
                str(config_path),
            ]
            subprocess.run(command, check=True)
        else:
            train(*load_config(config_path))
        for checkpoint in stage.directory.glob("checkpoint-*"):
            shutil.rmtree(checkpoint)  # the final model is saved in the stage folder itself
        stage.finish({"config": config})

    def evaluate(self, model_stage: Stage, variant: str, seed: int, build: Stage, augmented: bool = False) -> Stage:
        """Score one model on every test split (keep_bias and similarity_prior tuned on validation) into the stage's
        ``records.json``, save its predictions (``predictions/``), and save the tuned decoding with the model (its
        ``csc_decoding.json``); ``augmented``: a model of the augmentation stage, on its tests, its seen pairs those of
        its own training data."""
        p = self.preset
        stage = self.stage(*self._evaluate_inputs(model_stage.directory, build.directory, augmented))
        tests = p.augmentation_study.tests if augmented else p.tests
        if self.pending(stage, f"{model_label('evaluate', variant, seed, augmented)} on {len(tests)} test configs"):
            records = evaluate_model(
                model_stage.directory,
                tests,
                p.bench_params,
                p.bootstrap,
                p.keep_bias_grid,
                p.similarity_prior_grid,
                p.eval_batch_size,
                p.finetune.get("max_train_samples"),
                p.finetune.get("max_eval_samples"),
                predictions_dir=stage.directory / PREDICTIONS,
                training_params=self._augmented_params() if augmented else None,
                save_decoding=True,  # the tuned decoding: the model's default
                precision=self._inference_precision(),
            )
            for r in records:
                r.update(
                    model=variant, seed=seed, **({"augmentation": p.augmentation_study.confusion} if augmented else {})
                )
            (stage.directory / RECORDS).write_text(
                json.dumps(records, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
            )
            copy_decoding(model_stage.directory, stage.directory / DECODING_COPY)
            stage.finish({"records": len(records)})
        elif not self.finished_only and (
            restored := copy_decoding(stage.directory / DECODING_COPY, model_stage.directory)
        ):
            logger.info(
                "%s: restored %s (the decoding its results were scored with)",
                model_stage.directory,
                ", ".join(restored),
            )
        return stage

    # ---- the run ------------------------------------------------------------------------------------------------

    def grid(self, variants: Sequence[str] | None = None, seeds: Sequence[int] | None = None) -> list[tuple[str, int]]:
        """The (variant, seed) pairs to run: the preset's, or a part of the grid (``variants``, ``seeds``); every
        variant once before any twice."""
        variants, seeds = variants or self.preset.variants, seeds or self.preset.seeds
        check_variants(variants, "--variants")
        return [(v, s) for s in seeds for v in variants]

    def _order(self, model: tuple[str, int]) -> tuple:
        """Results list models seed by seed in the preset's order, then variants and seeds the preset lacks."""
        from .modeling import VARIANTS

        (variant, seed), p = model, self.preset
        seed_rank = (0, p.seeds.index(seed)) if seed in p.seeds else (1, seed)
        variant_rank = (0, p.variants.index(variant)) if variant in p.variants else (1, list(VARIANTS).index(variant))
        return seed_rank, variant_rank

    def folders(self, variant: str, seed: int, augmented: bool = False) -> tuple[Path, Path]:
        """The training and the evaluation stage folder of one variant and seed (whether or not they have run);
        ``augmented``: of the augmentation stage."""
        pretrained = self.directory(*self._pretrain_inputs())
        model_dir = self.directory(*self._finetune_inputs(variant, seed, pretrained, augmented))
        build = self.directory(*self._build_inputs())
        return model_dir, self.directory(*self._evaluate_inputs(model_dir, build, augmented))

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
        """The (variant, seed) pairs of the augmentation stage for a run of ``grid``: its variants (only those ``grid``
        names when it is a part of the preset's) with the seeds of ``grid``, seed by seed."""
        p, study = self.preset, self.preset.augmentation_study
        requested = {v for v, _ in grid}
        variants = [v for v in study.variants if v in requested or requested >= set(p.variants)]
        return [(v, s) for s in dict.fromkeys(s for _, s in grid) for v in variants]

    def augmentation_results(self, pretrained: Stage, build: Stage, grid: Sequence[tuple[str, int]]) -> dict | None:
        """Run the augmentation stage for its variants with the seeds of ``grid`` (only the variants ``grid`` names
        when it is a part of the preset's), then collect every finished one: the leak filter, coverage, records and
        paired comparisons (augmented − plain) for ``results.json`` (``None`` without an augmentation stage or
        before its first finished evaluation). The plain model is the grid's (the same stage: trained once)."""
        p, study = self.preset, self.preset.augmentation_study
        if study is None:
            return None
        try:
            summary = json.loads((self.augment().directory / AUGMENTATION).read_text(encoding="utf-8"))
        except Unfinished as missing:
            logger.info("skipping the augmentation stage: %s", missing)
            return None
        for variant, seed in self._augmentation_grid(grid):
            try:
                self.evaluate(self.finetune(variant, seed, pretrained), variant, seed, build)
                model = self.finetune(variant, seed, pretrained, augmented=True)
                self.evaluate(model, variant, seed, build, augmented=True)
            except Unfinished as missing:
                logger.info("skipping %s (seed %s, augmented): %s", variant, seed, missing)
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
        stages = [
            self.directory(*self._augment_inputs()),
            *(f for model in pairs for f in self.folders(*model, augmented=True)),
        ]
        return {
            **summary,
            "records": records,
            "paired": paired,
            "stage_seconds": {folder.name: Stage(folder).seconds for folder in stages},
        }

    def finished(self, grid: Sequence[tuple[str, int]] = ()) -> dict[tuple[str, int], Path]:
        """Every finished evaluation of this preset's stages in the run folder, whichever process ran it (of
        ``grid``, the preset's grid, and every model a finished ``eval-*`` stage holds): ``{(variant, seed): its
        folder}``, seed by seed in the preset's order."""
        from .modeling import VARIANTS

        candidates = {*grid, *((v, s) for s in self.preset.seeds for v in self.preset.variants)}
        for done in (self.run_dir / "stages").glob(f"eval-*/{DONE}"):
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

        def model(variant: str, seed: int, augmented: bool = False) -> list[Step]:
            train, evaluation = self.folders(variant, seed, augmented)  # augmented: more steps, fewer tests
            return [
                Step(
                    model_label("train", variant, seed, augmented),
                    train,
                    (f"train {variant}", "train"),
                    AUGMENTED_COPIES if augmented else 1,
                ),
                Step(
                    model_label("evaluate", variant, seed, augmented),
                    evaluation,
                    (model_label("evaluate", variant, None, augmented), "evaluate"),
                ),
            ]

        steps = [
            Step("build", self.directory(*self._build_inputs()), ("build",)),
            Step("pretrain", self.directory(*self._pretrain_inputs()), ("pretrain",)),
            *(step for variant, seed in grid for step in model(variant, seed)),
        ]
        if self.preset.augmentation_study is not None:
            steps.append(Step("augment", self.directory(*self._augment_inputs()), ("augment",)))
            steps += [step for v, s in self._augmentation_grid(grid) for step in model(v, s) + model(v, s, True)]
        return list(dict.fromkeys(steps))

    def run(self, variants: Sequence[str] | None = None, seeds: Sequence[int] | None = None) -> Path:
        """Every stage of the grid (or of a part of it: ``variants``, ``seeds``), then the results files and the
        report; returns ``results.json``'s path. The results cover every finished evaluation of this preset in the
        run folder, so processes that share a run (one per seed, say) each end with all of them. A ``finished_only``
        study runs nothing and writes them for the models evaluated so far (e.g. to look at a long run while it goes
        on). Each stage that runs logs its progress line (:class:`Progress`)."""
        grid = self.grid(variants, seeds)
        if not self.finished_only:
            self.progress = Progress(self.plan(grid))
            total, finished = len(self.progress.plan), len(self.progress.finished())
            logger.info(
                "%s: %d stages%s",
                self.run_dir,
                total,
                f", {finished} finished: resuming after them" if finished else "",
            )
        try:
            with plain_transformers_output():
                path = self._run(grid)
        finally:
            progress, self.progress = self.progress, None
        if progress is not None:
            logger.info(
                "all %d stages finished (elapsed %s)", len(progress.plan), clock(time.monotonic() - progress.started)
            )
        return path

    def _run(self, grid: Sequence[tuple[str, int]]) -> Path:
        p = self.preset
        build = self.build()
        pretrained = self.pretrain()
        for variant, seed in grid:
            try:
                self.evaluate(self.finetune(variant, seed, pretrained), variant, seed, build)
            except Unfinished as missing:
                logger.info("skipping %s (seed %s): %s", variant, seed, missing)
        augmentation = self.augmentation_results(pretrained, build, grid)
        evaluations = self.finished(grid)
        if not evaluations:
            raise Unfinished(f"{self.run_dir}: no model of preset {p.name!r} has been evaluated yet")
        records = [
            r for folder in evaluations.values() for r in json.loads((folder / RECORDS).read_text(encoding="utf-8"))
        ]
        stages = [build.directory, pretrained.directory, *(f for model in evaluations for f in self.folders(*model))]
        timings = {folder.name: Stage(folder).seconds for folder in stages}
        paired = paired_comparisons(p.bench_params, evaluations, n_resamples=p.bootstrap)
        if augmentation:
            timings.update(augmentation.pop("stage_seconds"))
        return write_results(self.run_dir, p, records, timings, paired, augmentation)


def model_label(action: str, variant: str, seed: int | None, augmented: bool = False) -> str:
    """How the progress names a model's stage: ``train bert (seed 0)``, ``evaluate bart (seed 1, augmented)``; without
    a seed, the kind of stage of every seed (``evaluate bart (augmented)``)."""
    details = [*([f"seed {seed}"] if seed is not None else []), *(["augmented"] if augmented else [])]
    return f"{action} {variant}" + (f" ({', '.join(details)})" if details else "")


# ---- results -------------------------------------------------------------------------------------------------------


def augmentation_coverage(
    bench_params: dict, tests: Sequence[str], train: ConfusionSet, augmented: ConfusionSet
) -> dict[str, dict[str, dict]]:
    """``{test set: {"S_train" / "augmented": coverage}}``: how much of each test set's errors and distinct pairs the
    confusion set ``train`` (S_train) and ``augmented`` (S_train ∪ the leak-free augmentation) hold
    (:func:`csc_hf.dataset_stats.coverage`); test sets that cannot be built (sighan15 without its file) are left out."""
    references = {
        name: {(right, wrong) for right, wrong, _ in s.pairs()}
        for name, s in (("S_train", train), ("augmented", augmented))
    }
    result = {}
    for name in tests:
        for spec in splits_of(name, BenchParams(**bench_params).probs):
            try:
                data = load_dataset("csc_bench", name, split=spec.split, **bench_params)
            except FileNotFoundError as err:
                logger.warning("coverage: skipping %s: %s", name, err)
                continue
            test_pairs = error_pairs(data["source"], data["target"])
            result[split_name(name, spec.split)] = {
                ref: coverage(test_pairs, pairs) for ref, pairs in references.items()
            }
    return result


def write_results(
    run_dir: Path,
    preset: Preset,
    records: list[dict],
    timings: dict[str, float | None],
    paired: list[dict] = (),
    augmentation: dict | None = None,
) -> Path:
    """``results.json`` (with each stage's wall time, the paired comparisons and, with an augmentation stage, its
    leak filter, coverage, records and paired comparisons), ``results.csv`` and the report."""
    from .pipeline import DECODING_KEYS
    from .report import write_report

    run_dir = Path(run_dir)
    path = run_dir / RESULTS_FILE
    payload = {
        "preset": preset.name,
        "params": preset.__dict__,
        "stage_seconds": timings,
        "records": records,
        "paired": list(paired),
        **({"augmentation": augmentation} if augmentation else {}),
    }
    write_atomic(path, json.dumps(payload, indent=1, ensure_ascii=False, default=str) + "\n")  # processes share it
    numeric = sorted({k for r in records for k, v in r["scores"].items() if isinstance(v, (int, float))})
    table = io.StringIO(newline="")
    writer = csv.writer(table)
    writer.writerow(["model", "seed", "config", "split", "error_prob", *DECODING_KEYS, *numeric])
    for r in records:
        writer.writerow(
            [
                r["model"],
                r["seed"],
                r["config"],
                r["split"],
                r["error_prob"],
                *(r.get(k, "") for k in DECODING_KEYS),
                *(r["scores"].get(k, "") for k in numeric),
            ]
        )
    write_atomic(run_dir / RESULTS_CSV, table.getvalue())  # whole or not at all, as results.json
    write_report(run_dir)
    return path
