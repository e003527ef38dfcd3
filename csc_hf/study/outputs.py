"""What a run writes at its end: ``results.json``, ``results.csv`` and the report (:func:`write_results`), the
coverage figures of the augmentation stage (:func:`augmentation_coverage`) and the errors of the domain configs by
context and vocabulary (:func:`domain_error_groups`)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

import numpy as np

from ..benchmark.builder import columns, load_dataset
from ..benchmark.configs import DOMAINS, domain_reference, split_name, splits_of
from ..benchmark.plan import BenchParams
from ..confusion import ConfusionSet
from ..dataset_stats import CONTEXT_N, ERROR_GROUPS, coverage, error_groups, error_pairs, training_ngrams
from ..files import read_predictions, write_atomic
from ..logging import get_logger
from ..model_folder import DECODING_KEYS
from ..report import write_report
from ..run_layout import PREDICTIONS, RESULTS_CSV, RESULTS_FILE, predictions_file
from .preset import Preset

logger = get_logger(__name__)


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
            test_pairs = error_pairs(*columns(data, "source", "target"))
            result[split_name(name, spec.split)] = {
                ref: coverage(test_pairs, pairs) for ref, pairs in references.items()
            }
    return result


def domain_error_groups(
    bench_params: dict, evaluations: Mapping[tuple[str, int], Path], known: Collection[str], n: int = CONTEXT_N
) -> list[dict]:
    """For each model and seed (``evaluations``: ``{(variant, seed): evaluation folder}``), on every split with errors
    of the domain configs it saved predictions for and on the main configs they are compared with (``test``,
    ``unseen_k``, ``unseen_v``: :func:`csc_hf.benchmark.configs.domain_reference`): how many errors of each
    :data:`csc_hf.dataset_stats.ERROR_GROUPS` group (context seen in the training sentences or not, the characters
    around the error all in the vocabulary ``known`` or not) the split holds and how many of them the model corrected
    (its prediction has the correct character there; a prediction of another length corrects its errors only when
    it equals the target). The drop from the main config to a domain's split splits into these groups' shares and
    recalls (:func:`csc_hf.results.domain_shift`)."""
    params = BenchParams(**bench_params)
    domain_splits = [
        (config, spec.split) for config in DOMAINS for spec in splits_of(config, params.probs) if spec.error_prob
    ]
    references = dict.fromkeys((domain_reference(split), "test") for _, split in domain_splits)
    splits = [*references, *domain_splits]
    train_ngrams: np.ndarray | None = None
    found = []
    for config, split in splits:
        folders = {
            model: folder / PREDICTIONS / predictions_file(config, split)
            for model, folder in evaluations.items()
            if (folder / PREDICTIONS / predictions_file(config, split)).is_file()
        }
        if not folders:
            continue
        if train_ngrams is None:
            (train_targets,) = columns(load_dataset("csc_bench", "train", split="train", **bench_params), "target")
            train_ngrams = training_ngrams(train_targets, n)
        data = load_dataset("csc_bench", config, split=split, **bench_params)
        sources, targets = columns(data, "source", "target")
        groups = error_groups(sources, targets, train_ngrams, known, n)
        wrong = [(i, j) for i, (s, t) in enumerate(zip(sources, targets)) for j in range(len(t)) if s[j] != t[j]]
        for (variant, seed), path in folders.items():
            predictions = read_predictions(path, sources)
            corrected = np.array(
                [
                    predictions[i][j] == targets[i][j]
                    if len(predictions[i]) == len(targets[i])
                    else predictions[i] == targets[i]
                    for i, j in wrong
                ],
                dtype=bool,
            )
            counts = {
                name: [int((groups == g).sum()), int(((groups == g) & corrected).sum())]
                for g, name in enumerate(ERROR_GROUPS)
            }
            found.append({"model": variant, "seed": seed, "config": config, "split": split, "groups": counts})
    return found


def write_results(
    run_dir: Path,
    preset: Preset,
    records: list[dict],
    stages: dict[str, dict],
    paired: list[dict] = (),
    augmentation: dict | None = None,
    training_sets: dict | None = None,
    domains: list[dict] | None = None,
    processes: int = 1,
) -> Path:
    """``results.json`` (each finished stage's kind, wall time and machine: ``stages``, `Study.finished_stages`, and
    the ``processes`` that shared the models' stages; the paired comparisons and, with an augmentation stage, its
    leak filter, coverage, records and paired comparisons; with a training-distribution stage, its sets, records and
    paired comparisons), ``results.csv`` (the grid's records) and the report."""
    run_dir = Path(run_dir)
    path = run_dir / RESULTS_FILE
    payload = {
        "preset": preset.name,
        "params": preset.__dict__,
        "stages": stages,
        "processes": processes,
        "records": records,
        "paired": list(paired),
        **({"augmentation": augmentation} if augmentation else {}),
        **({"training_sets": training_sets} if training_sets else {}),
        **({"domain_errors": domains} if domains else {}),
    }
    write_atomic(path, json.dumps(payload, indent=1, ensure_ascii=False, default=str) + "\n")  # processes share it
    numeric = sorted({k for r in records for k, v in r["scores"].items() if isinstance(v, (int, float))})
    table = io.StringIO(newline="")
    writer = csv.writer(table)
    writer.writerow(["model", "seed", "config", "split", "error_prob", *DECODING_KEYS, "sentences_per_s", *numeric])
    for r in records:
        writer.writerow(
            [
                r["model"],
                r["seed"],
                r["config"],
                r["split"],
                r["error_prob"],
                *(r.get(k, "") for k in DECODING_KEYS),
                r.get("sentences_per_s", ""),  # none in records evaluated before it was timed
                *(r["scores"].get(k, "") for k in numeric),
            ]
        )
    write_atomic(run_dir / RESULTS_CSV, table.getvalue())  # whole or not at all, as results.json
    write_report(run_dir)
    return path
