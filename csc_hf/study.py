"""`csc-bench run`: the paper's study end to end — build → pretrain → train the variant grid → evaluate every model on
every test config → results (json, csv, markdown table, plots, report).

A preset (``trainer_configs/presets/NAME.yaml``, or any YAML path) says everything a run does. Each stage's output
lives in ``RUN_DIR/stages/STAGE-KEY`` where KEY hashes the stage's inputs (its configuration and the keys of the
stages it reads), and a ``done.json`` marks it finished: a re-run skips finished stages, a changed preset redoes only
what it changes, and an interrupted training resumes from its last checkpoint.
"""

from __future__ import annotations

import csv
import hashlib
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from tqdm.auto import tqdm

from . import __version__, resources
from .benchmark.builder import load_dataset
from .benchmark.configs import CONFIGS, splits_of
from .benchmark.plan import BenchParams
from .corruption import ERROR_TYPES
from .scoring import compare, score

PRESET_KEYS = {
    "description", "bench_params", "variants", "seeds", "tests", "bootstrap", "keep_bias_grid", "launcher", "model",
    "bart", "pretrain", "finetune", "eval_batch_size",
}


@dataclass
class Preset:
    """A study as data (see ``trainer_configs/presets/*.yaml``)."""

    name: str
    description: str = ""
    bench_params: dict = field(default_factory=dict)  # csc_bench parameters (BenchParams fields)
    variants: list[str] = field(default_factory=lambda: ["bert"])  # names of csc_hf.modeling.VARIANTS
    seeds: list[int] = field(default_factory=lambda: [0])
    tests: list[str] = field(default_factory=lambda: [c for c in CONFIGS if c != "train"])
    bootstrap: int = 1000  # bootstrap resamples for the intervals
    keep_bias_grid: list[float] = field(default_factory=lambda: [0.0])  # source-logit bias, tuned on validation
    launcher: str | None = None  # an accelerate config file: trainings run under `accelerate launch`
    model: dict = field(default_factory=dict)  # BertConfig fields of the semantic encoder (pretrained once)
    bart: dict = field(default_factory=dict)  # BartConfig fields of the seq2seq baseline over the encoder's sizes
    pretrain: dict = field(default_factory=dict)  # training-config keys of the masked-LM stage
    finetune: dict = field(default_factory=dict)  # training-config keys of every variant
    eval_batch_size: int = 64

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
        unknown = sorted(set(data) - PRESET_KEYS)
        if unknown:
            raise ValueError(f"{path}: unknown keys {unknown}; a preset has {sorted(PRESET_KEYS)}")
        preset = cls(name=path.stem, **data)
        preset.validate(path)
        return preset

    def validate(self, origin: Path | str) -> None:
        from .modeling import VARIANTS

        BenchParams(**self.bench_params).validate()
        if bad := [v for v in self.variants if v not in VARIANTS]:
            raise ValueError(f"{origin}: unknown variants {bad}; choose from {', '.join(VARIANTS)}")
        if bad := [t for t in self.tests if t not in CONFIGS or t == "train"]:
            raise ValueError(f"{origin}: unknown test configs {bad}; choose from {', '.join(CONFIGS)}")
        if self.launcher:
            found = resources.trainer_config(self.launcher)  # as given, or a shipped accelerate config
            if not found.is_file():
                raise FileNotFoundError(f"{origin}: launcher config {self.launcher} does not exist")
            self.launcher = str(found.resolve())


def stage_key(*parts: Any) -> str:
    """A short hash of a stage's inputs."""
    return hashlib.sha256(json.dumps([__version__, *parts], sort_keys=True, default=str).encode()).hexdigest()[:12]


@dataclass
class Stage:
    """A stage folder (named for the stage and a hash of its inputs); ``done`` once its ``done.json`` exists."""

    directory: Path
    started: float = field(default_factory=time.monotonic)

    @property
    def done(self) -> bool:
        return (self.directory / "done.json").is_file()

    @property
    def seconds(self) -> float | None:
        """The wall time the stage took when it ran (also when this run found it finished)."""
        return json.loads((self.directory / "done.json").read_text(encoding="utf-8")).get("seconds") if self.done else None

    def finish(self, summary: dict) -> None:
        summary = {**summary, "seconds": round(time.monotonic() - self.started, 1)}
        (self.directory / "done.json").write_text(json.dumps(summary, indent=1, default=str) + "\n", encoding="utf-8")


class Unfinished(ValueError):
    """A stage that a ``finished_only`` study found unfinished."""


class Study:
    """One run of a preset into ``run_dir``; with ``finished_only`` it runs no stage and only collects finished ones."""

    def __init__(self, preset: Preset, run_dir: str | Path, log: Callable[[str], None] = print, finished_only: bool = False):
        self.preset, self.run_dir, self.log, self.finished_only = preset, Path(run_dir), log, finished_only
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.stages: list[Stage] = []
        self.evaluations: dict[tuple[str, int], Path] = {}  # (variant, seed) -> its evaluation folder

    def stage(self, name: str, *inputs: Any) -> Stage:
        directory = self.run_dir / "stages" / f"{name}-{stage_key(name, *inputs)}"
        directory.mkdir(parents=True, exist_ok=True)
        self.stages.append(Stage(directory))
        return self.stages[-1]

    def pending(self, stage: Stage) -> bool:
        """Whether ``stage`` must still run (``Unfinished`` when the study runs nothing)."""
        if stage.done:
            return False
        if self.finished_only:
            raise Unfinished(f"{stage.directory} has not finished")
        return True

    # ---- stages -------------------------------------------------------------------------------------------------

    def build(self) -> Stage:
        """Build (or find in the datasets cache) the training and test configs."""
        p = self.preset
        stage = self.stage("build", p.bench_params, p.tests)
        if self.pending(stage):
            sizes = {}
            for name in tqdm(["train", *p.tests], desc="build", leave=False):
                sizes[name] = {split: len(ds) for split, ds in load_dataset("csc_bench", name, **p.bench_params).items()}
            stage.finish({"configs": sizes})
        return stage

    def pretrain(self) -> Stage:
        """Masked-LM pretraining of the semantic encoder that every variant starts from."""
        p = self.preset
        config = {"task": "mlm", "model_overrides": p.model, "bench_params": p.bench_params, **p.pretrain}
        stage = self.stage("pretrain", config)
        if self.pending(stage):
            self.log(f"pretrain → {stage.directory}")
            self._train(stage, config)
        return stage

    def finetune(self, variant: str, seed: int, pretrained: Stage) -> Stage:
        """Fine-tune one variant with one seed, from the shared pretrained encoder (BART warm-starts from it)."""
        from .modeling import is_seq2seq

        p = self.preset
        config = {"task": "correction", "variant": variant, "bench_params": p.bench_params, "seed": seed, **p.finetune}
        if is_seq2seq(variant):
            config["model_overrides"] = p.bart
        # keyed by the pretrained stage's name, not its path, so that a run folder can move
        stage = self.stage(f"train-{variant}-seed{seed}".replace("+", "_"), config, pretrained.directory.name)
        if self.pending(stage):
            self.log(f"train {variant} (seed {seed}) → {stage.directory}")
            start = str(pretrained.directory)
            self._train(stage, {**config, "tokenizer_path": start, "init_from": start})
        return stage

    def _train(self, stage: Stage, config: dict) -> None:
        from .training import load_config, train

        config = {**config, "output_dir": str(stage.directory)}
        config_path = stage.directory / "train_config.yaml"
        config_path.write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=True), encoding="utf-8")
        if self.preset.launcher:
            command = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", self.preset.launcher,
                       "-m", "csc_hf.train", str(config_path)]
            subprocess.run(command, check=True)
        else:
            train(*load_config(config_path))
        for checkpoint in stage.directory.glob("checkpoint-*"):
            shutil.rmtree(checkpoint)  # the final model is saved in the stage folder itself
        stage.finish({"config": config})

    def evaluate(self, model_stage: Stage, variant: str, seed: int, build: Stage) -> list[dict]:
        """Score one model on every test split (keep_bias tuned on validation); returns result records."""
        p = self.preset
        stage = self.stage(f"eval-{model_stage.directory.name}", p.tests, p.bootstrap, p.keep_bias_grid, build.directory.name)
        path = stage.directory / "records.json"
        if not self.pending(stage):
            self.evaluations[variant, seed] = stage.directory
            return json.loads(path.read_text(encoding="utf-8"))
        self.log(f"evaluate {variant} (seed {seed})")
        records = evaluate_model(model_stage.directory, p.tests, p.bench_params, p.bootstrap, p.keep_bias_grid,
                                 p.eval_batch_size, p.finetune.get("max_train_samples"), p.finetune.get("max_eval_samples"),
                                 predictions_dir=stage.directory / PREDICTIONS)
        for r in records:
            r.update(model=variant, seed=seed)
        path.write_text(json.dumps(records, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        stage.finish({"records": len(records)})
        self.evaluations[variant, seed] = stage.directory  # finished evaluations only: their predictions are complete
        return records

    def run(self) -> Path:
        """Every stage, then the results files and the report; returns ``results.json``'s path. A ``finished_only``
        study writes them for the models evaluated so far (e.g. to look at a long run while it goes on)."""
        p = self.preset
        build = self.build()
        pretrained = self.pretrain()
        records = []
        grid = [(v, s) for s in p.seeds for v in p.variants]  # every variant once before any twice
        for variant, seed in tqdm(grid, desc="variants × seeds", disable=self.finished_only):
            try:
                records += self.evaluate(self.finetune(variant, seed, pretrained), variant, seed, build)
            except Unfinished as missing:
                self.log(f"skipping {variant} (seed {seed}): {missing}")
        if not records:
            raise Unfinished(f"{self.run_dir}: no model of preset {p.name!r} has been evaluated yet")
        timings = {stage.directory.name: stage.seconds for stage in self.stages}
        paired = paired_comparisons(p.bench_params, self.evaluations, n_resamples=p.bootstrap)
        return write_results(self.run_dir, p, records, timings, paired)


# ---- evaluation ----------------------------------------------------------------------------------------------------


def _metadata(dataset) -> list[dict]:
    names = ERROR_TYPES
    return [{"errors": [{"position": e["position"], "type": names[e["type"]]} for e in errors]} for errors in dataset["errors"]]


def training_pairs(bench_params: dict, max_train_samples: int | None) -> set[tuple[str, str]]:
    """The (right, wrong) pairs that occur in the training sentences a model saw."""
    from .analysis import error_pairs

    train = load_dataset("csc_bench", "train", split="train", **bench_params)
    if max_train_samples:
        train = train.select(range(min(max_train_samples, len(train))))
    return set(error_pairs(train["source"], train["target"]))


def evaluate_model(
    model_dir: str | Path,
    tests: Iterable[str],
    bench_params: dict,
    bootstrap: int,
    keep_bias_grid: Iterable[float] = (0.0,),
    batch_size: int = 64,
    max_train_samples: int | None = None,
    max_validation: int | None = None,
    predictions_dir: Path | None = None,
) -> list[dict]:
    """Correct every test split with the model in ``model_dir`` and score it; ``keep_bias`` is chosen on the
    validation split (best character-level correction F1) among ``keep_bias_grid``. With ``predictions_dir``, each
    split's predictions are saved there as edits (see :func:`write_predictions`)."""
    from .pipeline import Corrector

    corrector = Corrector.from_pretrained(str(model_dir), batch_size=batch_size)
    validation = load_dataset("csc_bench", "train", split="validation", **bench_params)
    if max_validation:
        validation = validation.select(range(min(max_validation, len(validation))))
    grid = [0.0] if corrector.seq2seq else list(keep_bias_grid) or [0.0]  # a seq2seq model has no source logit
    if len(grid) > 1:
        validation_f1 = {}
        for bias in grid:
            corrector.keep_bias = bias
            predictions = corrector.correct(validation["source"])
            validation_f1[bias] = score(validation["source"], predictions, validation["target"], bootstrap=0)["char_cor_f1"]
        grid = [max(grid, key=lambda b: (validation_f1[b], -b))]  # ties: the smaller bias
    corrector.keep_bias = grid[0]
    pairs = training_pairs(bench_params, max_train_samples)
    records = []
    params = BenchParams(**bench_params)
    for name in tests:
        for spec in splits_of(name, params.probs):
            try:
                data = load_dataset("csc_bench", name, split=spec.split, **bench_params)
            except FileNotFoundError as err:  # sighan15 without its file
                print(f"skipping {name}: {err}", file=sys.stderr)
                continue
            predictions = corrector.correct(data["source"])
            if predictions_dir is not None:
                write_predictions(predictions_dir / f"{name}.{spec.split}.txt", data["source"], predictions)
            scores = score(data["source"], predictions, data["target"], metadata=_metadata(data), train_pairs=pairs,
                           bootstrap=bootstrap)
            known = spec.pool not in ("scontext", "sighan15")  # real or re-substituted errors have no P_e
            records.append({"config": name, "split": spec.split, "error_prob": params.error_prob_of(spec) if known else None,
                            "keep_bias": corrector.keep_bias, "scores": scores})
    return records


# ---- predictions and paired comparisons ----------------------------------------------------------------------------

PREDICTIONS = "predictions"  # an evaluation folder's sub-folder: CONFIG.SPLIT.txt for each test split


def write_predictions(path: Path, sources: Iterable[str], predictions: Iterable[str]) -> None:
    """One line per sentence: the prediction's edits to its source as ``position:character`` separated by spaces
    (an empty line when it changes nothing). A prediction must have its source's length (every corrector's does)."""
    lines = []
    for i, (source, prediction) in enumerate(zip(sources, predictions, strict=True)):
        if len(prediction) != len(source):
            raise ValueError(f"{path}: prediction {i} has {len(prediction)} characters, its source {len(source)}")
        lines.append(" ".join(f"{j}:{p}" for j, (c, p) in enumerate(zip(source, prediction)) if c != p))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def read_predictions(path: Path, sources: Sequence[str]) -> list[str]:
    """The predictions that :func:`write_predictions` saved for ``sources``."""
    lines = path.read_text(encoding="utf-8").split("\n")[:-1]
    if len(lines) != len(sources):
        raise ValueError(f"{path}: {len(lines)} lines for {len(sources)} sentences")
    predictions = []
    for number, (line, source) in enumerate(zip(lines, sources), 1):
        chars = list(source)
        for edit in line.split():
            position, _, char = edit.partition(":")
            if not (position.isdigit() and int(position) < len(chars) and len(char) == 1):
                raise ValueError(f"{path}, line {number}: bad edit {edit!r}")
            chars[int(position)] = char
        predictions.append("".join(chars))
    return predictions


def paired_comparisons(
    bench_params: dict, evaluations: Mapping[tuple[str, int], Path], baseline: str = "bert", n_resamples: int = 1000
) -> list[dict]:
    """Every model against ``baseline`` with the same seed, on every test split both saved predictions for: the
    paired difference of the report's metrics (``csc_hf.compare``: bootstrap interval, permutation p-value). A
    model's comparisons are kept in its evaluation folder, so a re-run reads them."""
    pairs = [(model, seed, folder, evaluations[baseline, seed]) for (model, seed), folder in evaluations.items()
             if model != baseline and (baseline, seed) in evaluations]
    results = []
    for model, seed, folder, base in tqdm(pairs, desc=f"paired tests against {baseline}", leave=False):
        kept = folder / f"paired-{base.name}-{n_resamples}.json"
        if kept.is_file():
            found = json.loads(kept.read_text(encoding="utf-8"))
        elif found := compare_predictions(bench_params, folder, base, n_resamples, seed):
            partial = kept.with_suffix(".partial")
            partial.write_text(json.dumps(found) + "\n", encoding="utf-8")
            partial.replace(kept)
        results += [{"model": model, "baseline": baseline, "seed": seed, **entry} for entry in found]
    return results


def compare_predictions(bench_params: dict, folder: Path, base: Path, n_resamples: int, seed: int) -> list[dict]:
    """The paired comparisons of the predictions saved in the evaluation folders ``folder`` and ``base``."""
    from .analysis import METRICS

    found = []
    for path in sorted((folder / PREDICTIONS).glob("*.txt")):
        if not (base_path := base / PREDICTIONS / path.name).is_file():
            continue
        config, split = path.stem.split(".")
        data = load_dataset("csc_bench", config, split=split, **bench_params)
        sources, targets = data["source"], data["target"]
        stats = compare(sources, read_predictions(path, sources), read_predictions(base_path, sources), targets,
                        n_resamples=n_resamples, seed=seed)
        found += [{"config": config, "split": split, "metric": metric, **stats[metric]} for metric in METRICS]
    return found  # a, b: the two models' scores; delta = a - b


# ---- results -------------------------------------------------------------------------------------------------------


def write_results(
    run_dir: Path, preset: Preset, records: list[dict], timings: dict[str, float | None], paired: list[dict] = ()
) -> Path:
    """``results.json`` (with each stage's wall time and the paired comparisons), ``results.csv`` and the report."""
    from .report import write_report

    run_dir = Path(run_dir)
    path = run_dir / "results.json"
    payload = {"preset": preset.name, "params": preset.__dict__, "stage_seconds": timings, "records": records,
               "paired": list(paired)}
    path.write_text(json.dumps(payload, indent=1, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    numeric = sorted({k for r in records for k, v in r["scores"].items() if isinstance(v, (int, float))})
    with open(run_dir / "results.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["model", "seed", "config", "split", "error_prob", "keep_bias", *numeric])
        for r in records:
            writer.writerow([r["model"], r["seed"], r["config"], r["split"], r["error_prob"], r["keep_bias"],
                             *(r["scores"].get(k, "") for k in numeric)])
    write_report(run_dir)
    return path
