"""What a run writes at its end: ``results.json``, ``results.csv`` and the report (:func:`write_results`), and the
coverage figures of the augmentation stage (:func:`augmentation_coverage`)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path

from ..benchmark.builder import load_dataset
from ..benchmark.configs import split_name, splits_of
from ..benchmark.plan import BenchParams
from ..confusion import ConfusionSet
from ..dataset_stats import coverage, error_pairs
from ..files import write_atomic
from ..logging import get_logger
from ..model_folder import DECODING_KEYS
from ..report import write_report
from ..run_layout import RESULTS_CSV, RESULTS_FILE
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
