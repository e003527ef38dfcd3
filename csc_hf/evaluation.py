"""Evaluation of saved models, shared by ``csc-bench evaluate`` and ``csc-bench run``: correct every split of the test
configs with a model (``keep_bias`` and ``similarity_prior`` tuned on the validation split, or the decoding saved
with the model; an LLM with its prompt, decoding and length policy) and score it (:func:`evaluate_model`, with
:class:`EvaluationOptions`), timing the correction of every split, saving each split's predictions as edits
(:func:`csc_hf.files.write_predictions`; an LLM's as jsonl records with its raw output); and compare two models'
saved predictions on the same sentences (:func:`paired_comparisons`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from .benchmark.builder import load_dataset
from .benchmark.configs import splits_of
from .benchmark.plan import BenchParams
from .corruption import ERROR_TYPES
from .dataset_stats import error_pairs
from .files import read_predictions, write_atomic, write_prediction_records, write_predictions
from .llm.policy import apply_length_policy
from .logging import get_logger
from .model_folder import DECODING_KEYS, is_local, save_decoding
from .run_layout import PREDICTIONS, paired_file, predictions_file, predictions_split
from .scoring import REPORTED, compare, score
from .stats import RESAMPLES

logger = get_logger(__name__)


# ---- correcting and scoring ----------------------------------------------------------------------------------------


def _metadata(dataset) -> list[dict]:
    """Each row's errors (position and type name): the ``metadata`` of :func:`csc_hf.score`'s breakdown by type."""
    return [
        {"errors": [{"position": e["position"], "type": ERROR_TYPES[e["type"]]} for e in errors]}
        for errors in dataset["errors"]
    ]


def training_pairs(
    bench_params: dict, max_train_samples: int | None, cache_dir: str | None = None
) -> set[tuple[str, str]]:
    """The (right, wrong) pairs that occur in the training sentences a model saw."""
    train = load_dataset("csc_bench", "train", split="train", cache_dir=cache_dir, **bench_params)
    if max_train_samples:
        train = train.select(range(min(max_train_samples, len(train))))
    return set(error_pairs(train["source"], train["target"]))


def decoding_cell(keep_bias: float, similarity_prior: float) -> str:
    """The key of one cell of the decoding grid, ``"keep_bias/similarity_prior"`` (``"1/0.5"``)."""
    return f"{keep_bias:g}/{similarity_prior:g}"


def check_seq2seq_grids(grids: dict[str, Sequence[float] | None], where: str) -> None:
    """A seq2seq model gives no logits per character: it decodes with ``keep_bias`` and ``similarity_prior`` 0, so a
    grid without 0 asks for what it cannot do (an error naming ``where``); the other values of a grid with 0 are
    left out, with a log line."""
    for name, grid in grids.items():
        if grid is None or set(grid) <= {0.0}:
            continue
        if 0.0 not in grid:
            raise ValueError(
                f"{where}: {name} {', '.join(f'{v:g}' for v in grid)}: a seq2seq model has no logits per character "
                f"and decodes with {name} 0; give 0 (or no {name} grid)"
            )
        logger.info("%s: %s stays 0 (a seq2seq model has no logits per character)", where, name)


def tune_decoding(
    corrector, validation, keep_bias_grid: Sequence[float], similarity_prior_grid: Sequence[float] = (0.0,)
) -> tuple[dict[str, float], dict[str, float]]:
    """The ``keep_bias`` and ``similarity_prior`` of the two grids with the best character-level correction F1 on
    ``validation`` (ties: the smaller prior, then the smaller bias), and each cell's F1 keyed by ``decoding_cell``
    (none tried when the grids make one cell). A seq2seq model has no logits to bias: it keeps 0 and 0 untried."""
    cells = [(b, p) for b in keep_bias_grid for p in similarity_prior_grid]
    if corrector.seq2seq:
        return {"keep_bias": 0.0, "similarity_prior": 0.0}, {}
    if len(cells) == 1:
        return {"keep_bias": cells[0][0], "similarity_prior": cells[0][1]}, {}
    options = [{"keep_bias": bias, "similarity_prior": prior} for bias, prior in cells]
    each = corrector.correct_each(validation["source"], options)  # one forward pass for the whole grid
    validation_f1 = {
        decoding_cell(*cell): score(validation["source"], predictions, validation["target"], bootstrap=0)["char_cor_f1"]
        for cell, predictions in zip(cells, each)
    }
    best = max(cells, key=lambda cell: (validation_f1[decoding_cell(*cell)], -cell[1], -cell[0]))
    return {"keep_bias": best[0], "similarity_prior": best[1]}, validation_f1


@dataclass(frozen=True)
class EvaluationOptions:
    """How :func:`evaluate_model` corrects and scores.

    ``keep_bias`` and ``similarity_prior`` are chosen together on the validation split (best character-level
    correction F1, its first ``max_validation`` sentences) among ``keep_bias_grid`` × ``similarity_prior_grid``
    (:func:`tune_decoding`); a setting without a grid is the decoding saved with the model (0 without one). With
    ``save_decoding`` the decoding used is saved in the model folder with how it was chosen, so that every way of
    loading the model decodes as it was scored. With ``predictions_dir`` each split's predictions are saved there as
    edits. Seen and unseen pairs are those of the first ``max_train_samples`` training sentences of
    ``training_params`` (default ``bench_params``; e.g. with an ``augmentation``). ``batch_size``, ``precision`` and
    ``trust_remote_code`` are the Corrector's (``precision="auto"``: bf16 autocast where the CPU computes bf16).
    ``llm``: options of an LLM corrector (``csc_hf.llm.corrector.LLM_OPTIONS``: ``template``, ``length_policy``,
    ``training_data``, ...); given or not, a causal LM loads as one, takes no decoding grid and saves no decoding."""

    bench_params: dict = field(default_factory=dict)
    bootstrap: int = RESAMPLES
    keep_bias_grid: Sequence[float] | None = None
    similarity_prior_grid: Sequence[float] | None = None
    batch_size: int = 64
    max_train_samples: int | None = None
    max_validation: int | None = None
    predictions_dir: Path | None = None
    save_decoding: bool = False
    trust_remote_code: bool = False
    training_params: dict | None = None
    precision: str = "auto"
    llm: Mapping[str, Any] = field(default_factory=dict)


def evaluate_model(
    model_dir: str | Path, tests: Iterable[str], options: EvaluationOptions = EvaluationOptions()
) -> list[dict]:
    """Correct every test split with the model in ``model_dir`` (a folder or a Hub id: any checkpoint
    ``csc_hf.pipeline.Corrector`` loads, an LLM too) and score it as ``options`` say. Each record holds the split's
    scores, the seconds its correction took and the sentences per second; an LLM's also its settings (prompt,
    decoding, length policy), the answers whose length changed, the failures by kind and the contamination flags of
    the split's sources. Each split logs its size, score and time, and a progress bar runs over the splits."""
    from .pipeline import Corrector, loads_as_llm  # torch: loaded only to correct (csc-bench score reads this module)

    o = options
    llm = loads_as_llm(model_dir, o.llm, o.trust_remote_code)
    if llm and (o.keep_bias_grid is not None or o.similarity_prior_grid is not None):
        raise ValueError(
            f"{model_dir} is an LLM corrector: it has no keep_bias or similarity_prior to tune (no --keep-bias or "
            "--similarity-prior grid)"
        )
    corrector = Corrector.from_pretrained(
        str(model_dir), batch_size=o.batch_size, trust_remote_code=o.trust_remote_code, precision=o.precision, **o.llm
    )
    tuning = None
    if not llm:
        corrector, tuning = _tuned(corrector, o, model_dir)
    if o.save_decoding and llm:
        logger.info("%s is an LLM corrector: no decoding is saved with it", model_dir)
    elif o.save_decoding:
        if is_local(model_dir):
            saved = save_decoding(model_dir, {name: getattr(corrector, name) for name in DECODING_KEYS}, tuning)
            if corrector.similarity_prior:  # its characters too: they depend on pypinyin and the fonts found
                corrector.save_similar(model_dir)
            logger.info("saved the decoding in %s", saved)
        else:
            logger.warning("%s is not a local folder: its decoding is not saved", model_dir)
    bench_params = o.bench_params
    pairs = training_pairs(o.training_params or bench_params, o.max_train_samples)
    records = []
    params = BenchParams(**bench_params)
    splits = [(name, spec) for name in tests for spec in splits_of(name, params.probs)]
    progress = tqdm(splits, desc=f"evaluate {Path(str(model_dir)).name}", unit="split")
    for name, spec in progress:
        progress.set_postfix_str(f"{name}/{spec.split}")
        try:
            data = load_dataset("csc_bench", name, split=spec.split, **bench_params)
        except FileNotFoundError as err:  # sighan15 without its file
            logger.warning("skipping %s: %s", name, err)
            continue
        started = time.perf_counter()
        run = corrector.run(data["source"]) if llm else None
        predictions = corrector.correct(data["source"]) if run is None else run.answers
        seconds = time.perf_counter() - started
        if o.predictions_dir is not None:
            _save_predictions(o.predictions_dir, name, spec.split, data, predictions, run)
        if run is not None:  # the answers as written are saved; the policy is applied to score them
            predictions = apply_length_policy(data["source"], predictions, corrector.length_policy)
        scores = score(
            data["source"],
            predictions,
            data["target"],
            metadata=_metadata(data),
            train_pairs=pairs,
            bootstrap=o.bootstrap,
        )
        record = {"config": name, "split": spec.split, "error_prob": params.error_prob_of(spec)}
        if llm:
            record["llm"] = _llm_record(corrector, run, name, params.corpus)
        else:
            record.update({key: getattr(corrector, key) for key in DECODING_KEYS})
        n = len(predictions)
        records.append(
            {**record, "scores": scores, "seconds": seconds, "sentences_per_s": n / seconds if seconds else None}
        )
        changed = sum(source != prediction for source, prediction in zip(data["source"], predictions))
        logger.info(
            "%s/%s: %d sentences, %d changed, char_cor_f1 %.4f, %.1f s",
            name,
            spec.split,
            n,
            changed,
            scores["char_cor_f1"],
            seconds,
        )
    return records


def _llm_record(corrector, run, config: str, corpus: str) -> dict[str, Any]:
    """What an LLM's record holds besides its scores: the corrector's settings, the run's length changes, failures and
    new tokens (its timing is the record's), and the contamination flags of the config's sources."""
    from .llm.contamination import benchmark_sources, contamination_flags

    summary = {k: v for k, v in run.summary().items() if k not in ("sentences", "seconds", "sentences_per_s")}
    flags = contamination_flags(corrector.training_data, benchmark_sources([config], corpus))
    return {**summary, "settings": corrector.settings, "contamination": flags}


def _save_predictions(folder: Path, config: str, split: str, data, predictions: list[str], run) -> None:
    """A split's predictions in ``folder``: a tagging model's as edits (``CONFIG.SPLIT.txt``), an LLM's (``run``) as
    jsonl records (``CONFIG.SPLIT.jsonl``) of ``id``, ``prediction`` (its answer before the length policy:
    ``csc-bench score --length-policy P`` gives evaluate's scores under any ``P``), the parsed ``answer``, the raw
    ``output`` and the ``status``."""
    if run is None:
        write_predictions(folder / predictions_file(config, split), data["source"], predictions)
        return
    keys = ("answer", "output", "status")
    records = (
        {"id": i, "prediction": prediction, **{k: result[k] for k in keys}}
        for i, prediction, result in zip(data["id"], predictions, run.results)
    )
    write_prediction_records(folder / predictions_file(config, split, ".jsonl"), records)


def _tuned(corrector, o: EvaluationOptions, model_dir: str | Path) -> tuple[object, dict | None]:
    """The corrector with the decoding that the grids of ``o`` choose (:func:`tune_decoding`), and how it was chosen
    (None without a grid)."""
    if o.keep_bias_grid is None and o.similarity_prior_grid is None:
        return corrector, None
    given = {"keep_bias": o.keep_bias_grid, "similarity_prior": o.similarity_prior_grid}
    if corrector.seq2seq:
        check_seq2seq_grids(given, f"{model_dir} (a seq2seq model)")
    grids = {
        name: [getattr(corrector, name)] if grid is None else sorted(set(grid)) or [0.0]  # none: the loaded
        for name, grid in given.items()
    }
    validation = None
    if len(grids["keep_bias"]) * len(grids["similarity_prior"]) > 1 and not corrector.seq2seq:
        validation = load_dataset("csc_bench", "train", split="validation", **o.bench_params)
        if o.max_validation:
            validation = validation.select(range(min(o.max_validation, len(validation))))
    chosen, validation_f1 = tune_decoding(corrector, validation, grids["keep_bias"], grids["similarity_prior"])
    tuning = {"grid": grids}
    if validation is not None:
        tuning.update(split="train/validation", sentences=len(validation), metric="char_cor_f1", scores=validation_f1)
        logger.info(
            "%s: keep_bias %g, similarity_prior %g (validation char_cor_f1 by keep_bias/similarity_prior: %s)",
            model_dir,
            chosen["keep_bias"],
            chosen["similarity_prior"],
            validation_f1,
        )
    return corrector.with_options(**chosen), tuning  # checks the values


# ---- predictions and paired comparisons ----------------------------------------------------------------------------


def paired_comparisons(
    bench_params: dict,
    evaluations: Mapping[tuple[str, int], Path],
    baseline: str = "bert",
    n_resamples: int = RESAMPLES,
) -> list[dict]:
    """Every model against ``baseline`` with the same seed, on every test split both saved predictions for: the
    paired difference of the report's metrics (``csc_hf.compare``: bootstrap interval, permutation p-value). A
    model's comparisons are kept in its evaluation folder, so a re-run reads them."""
    pairs = [
        (model, seed, folder, evaluations[baseline, seed])
        for (model, seed), folder in evaluations.items()
        if model != baseline and (baseline, seed) in evaluations
    ]
    results = []
    for model, seed, folder, base in tqdm(pairs, desc=f"paired tests against {baseline}", leave=False):
        found = kept_comparisons(bench_params, folder, base, n_resamples, seed)
        results += [{"model": model, "baseline": baseline, "seed": seed, **entry} for entry in found]
    return results


def augmentation_comparisons(
    bench_params: dict, evaluations: Mapping[tuple[str, int], tuple[Path, Path]], n_resamples: int = RESAMPLES
) -> list[dict]:
    """Each model trained with an augmentation against the same model and seed trained without (``evaluations``:
    ``{(variant, seed): (augmented evaluation folder, plain evaluation folder)}``), on every test split both saved
    predictions for: ``delta`` is augmented minus plain."""
    results = []
    for (model, seed), (folder, base) in tqdm(
        evaluations.items(), desc="paired tests of the augmentation", leave=False
    ):
        results += [
            {"model": model, "seed": seed, **entry}
            for entry in kept_comparisons(bench_params, folder, base, n_resamples, seed)
        ]
    return results


def kept_comparisons(bench_params: dict, folder: Path, base: Path, n_resamples: int, seed: int) -> list[dict]:
    """:func:`compare_predictions`, kept in ``folder`` (``paired-BASE-N.json``) so that a re-run reads them."""
    kept = folder / paired_file(base.name, n_resamples)
    if kept.is_file():
        return json.loads(kept.read_text(encoding="utf-8"))
    if found := compare_predictions(bench_params, folder, base, n_resamples, seed):
        write_atomic(kept, json.dumps(found) + "\n")  # two processes of one run may both write it: each whole
    return found


def compare_predictions(bench_params: dict, folder: Path, base: Path, n_resamples: int, seed: int) -> list[dict]:
    """The paired comparisons of the predictions saved in the evaluation folders ``folder`` and ``base``."""
    found = []
    for path in sorted((folder / PREDICTIONS).glob("*.txt")):
        if not (base_path := base / PREDICTIONS / path.name).is_file():
            continue
        config, split = predictions_split(path)
        data = load_dataset("csc_bench", config, split=split, **bench_params)
        sources, targets = data["source"], data["target"]
        stats = compare(
            sources,
            read_predictions(path, sources),
            read_predictions(base_path, sources),
            targets,
            n_resamples=n_resamples,
            seed=seed,
        )
        found += [{"config": config, "split": split, "metric": metric, **stats[metric]} for metric in REPORTED]
    return found  # a, b: the two models' scores; delta = a - b
