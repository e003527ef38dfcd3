"""Every file name of a run folder and of a model folder, and the address of a study's stage: names only (no file
is read or written here), so that each name has one home.

A run folder (``csc-bench run --output RUN_DIR``)::

    RUN_DIR/results.json, results.csv, report.md, report_plots/*.png
    RUN_DIR/stages/NAME-KEY/            one stage: NAME says what it is, KEY hashes its inputs (:func:`stage_dir`)
        done.json                       the marker that it finished (with its wall time)
        stage.lock                      while a process runs the stage: its pid (one process per stage)
        train_config.yaml               a training stage's config; the stage folder is also the model folder
        records.json, predictions/CONFIG.SPLIT.txt, paired-BASE-N.json, decoding/   an evaluation stage's outputs
        augmentation.json               the augment stage's leak filter and coverage

A model folder: the transformers files (``config.json``, weights, tokenizer files), ``csc_training.json`` (how
``csc-bench train`` trained it), ``csc_decoding.json`` and ``csc_similar.json`` (the decoding it was evaluated with).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from . import __version__

RUNS_DIR = "runs"  # where csc_hf writes its runs and models by default

# ---- a run folder
RESULTS_FILE = "results.json"  # the records, paired comparisons and stage times
RESULTS_CSV = "results.csv"  # the records as a table
REPORT_FILE = "report.md"  # the report, with its plots in PLOT_DIR
PLOT_DIR = "report_plots"
PLOTS = {
    "test_sets": "f1_per_test_set.png",
    "pe": "f1_against_pe.png",
    "seen_unseen": "seen_unseen.png",
    "training_sets": "train_x_test.png",
}
STAGES = "stages"
WORKERS = "workers"  # a run's other processes of the models' stages: their preset and logs
FORECAST = "forecast.json"  # in WORKERS: the first process's forecast of each stage (its workers' ETA takes it), the
# step times it rests on and the machine they were probed on (a resumed run takes them)
HANDED_OVER = "handed_over.json"  # a default run whose forecast was over its hours: the smaller preset that took it

# ---- a stage folder
DONE = "done.json"  # the marker that the stage finished
LOCK = "stage.lock"  # held by the process running the stage (its pid inside), removed when it ends
TRAIN_CONFIG = "train_config.yaml"  # a training stage's config
RECORDS = "records.json"  # an evaluation stage's result records
PREDICTIONS = "predictions"  # an evaluation stage's sub-folder of predictions (see `predictions_file`)
DECODING_COPY = "decoding"  # an evaluation stage's copy of the decoding files it saved with its model
AUGMENTATION = "augmentation.json"  # the augment stage's leak filter and coverage

# ---- a model folder
TRAINING_RECORD = "csc_training.json"  # how `csc-bench train` trained it
DECODING_FILE = "csc_decoding.json"  # the decoding it was evaluated with
SIMILAR_FILE = "csc_similar.json"  # the similarity prior's characters it was evaluated with
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt")  # a CSCTokenizer saves the first; a BERT checkpoint has the second
TRAINER_STATE = "trainer_state.json"  # the Trainer's state, in a checkpoint and (after training) in the model folder
CHECKPOINT = "checkpoint-"  # a checkpoint's folder: checkpoint-STEP


PREDICTIONS_SUFFIXES = (".txt", ".jsonl")  # a tagging model's edits; an LLM's records (prediction and raw output)


def predictions_file(config: str, split: str, suffix: str = ".txt") -> str:
    """The file name of one test split's predictions in ``predictions/``: ``CONFIG.SPLIT.txt`` (edits, of a model
    whose predictions keep their sources' lengths) or ``CONFIG.SPLIT.jsonl`` (an LLM's records)."""
    if suffix not in PREDICTIONS_SUFFIXES:
        raise ValueError(f"predictions files end in {' or '.join(PREDICTIONS_SUFFIXES)}, not {suffix!r}")
    return f"{config}.{split}{suffix}"


def predictions_split(path: Path) -> tuple[str, str]:
    """``(config, split)`` of a file named by :func:`predictions_file`."""
    config, split = path.stem.split(".")
    return config, split


def paired_file(baseline: str, n_resamples: int) -> str:
    """The file of an evaluation stage that keeps its paired comparisons against the stage ``baseline``."""
    return f"paired-{baseline}-{n_resamples}.json"


# ---- the stage address

FOLLOWING_KEYS = {
    "save_strategy",
    "save_steps",
    "save_total_limit",
    "save_every_seconds",
    "logging_steps",
    "logging_strategy",
    "disable_tqdm",
    "report_to",
}
"""Training-config keys that change how a training is followed and resumed, never its model: not a stage's inputs."""


def variant_file_name(variant: str) -> str:
    """A model variant's name as a file or folder name part: ``pinyin+glyph_gate`` -> ``pinyin_glyph_gate`` (its
    training stage, its shipped training config and that config's output folder)."""
    return variant.replace("+", "_")


def stage_key(*parts: Any) -> str:
    """A short hash of a stage's inputs (less the :data:`FOLLOWING_KEYS` of a training config: checkpoints made more
    often keep a run's stages)."""
    parts = [
        {k: v for k, v in part.items() if k not in FOLLOWING_KEYS} if isinstance(part, dict) else part for part in parts
    ]
    return hashlib.sha256(json.dumps([__version__, *parts], sort_keys=True, default=str).encode()).hexdigest()[:12]


def stage_dir(run_dir: Path, name: str, *inputs: Any) -> Path:
    """The folder of the stage ``name`` with these inputs: ``RUN_DIR/stages/NAME-KEY``."""
    return Path(run_dir) / STAGES / f"{name}-{stage_key(name, *inputs)}"


def train_stage(variant: str, seed: int, augmented: bool = False, training_set: str | None = None) -> str:
    """The name of a model's training stage: ``train-pinyin_glyph_gate-seed0``, ``train-bert-seed1-augmented``, and
    with a training set of a preset's ``training_sets``, ``train-plome-seed0-set-pe10``."""
    suffix = ("-augmented" if augmented else "") + (f"-set-{training_set}" if training_set else "")
    return f"train-{variant_file_name(variant)}-seed{seed}" + suffix


def evaluation_stage(model_dir: Path) -> str:
    """The name of the evaluation stage of the model trained in the stage folder ``model_dir``."""
    return f"eval-{model_dir.name}"
