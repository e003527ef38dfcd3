"""Evaluation of saved models, shared by ``csc-bench evaluate`` and ``csc-bench run``: correct every split of the test
configs (or of any CSC data) with a model (``keep_bias`` and ``similarity_prior`` tuned on the validation split or a
validation file, or the decoding saved with the model; an LLM with its prompt, decoding and length policy) and score
it (:func:`evaluate_model`, with :class:`EvaluationOptions`), timing the correction of every split, saving each
split's predictions as edits (:func:`csc_hf.files.write_predictions`; an LLM's as jsonl records with its raw output);
refuse to score a model on its own training sentences (:func:`trained_sentences`, from the model folder's training
record; :func:`scoring_params` builds the test sets as the model was trained); and compare two models' saved
predictions on the same sentences (:func:`paired_comparisons`).

A split with missing or redundant characters (the ``missing``, ``redundant`` and ``mixed`` configs, or data whose
pairs change lengths: :func:`csc_hf.data.needs_alignment`) is scored with ``alignment=True`` and its rows' edit
kinds, and a model that can insert and delete (a seq2seq one, or a tagging one with an edit head:
``Corrector.can_change_length``) keeps its insertions and deletions there; another tagging model corrects the
substitutions only; each record says which kinds of edit the model
kept (``edit_kinds``; an LLM's follow its length policy).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from .benchmark.builder import columns, load_dataset
from .benchmark.configs import CONFIGS, depends_on_training, split_name, splits_of
from .benchmark.plan import BenchParams
from .data import error_metadata, is_data_spec, needs_alignment, read_data, training_sentences, validation_sentences
from .dataset_stats import error_pairs
from .edits import EDIT_KINDS, SUBSTITUTION
from .files import Sentences, read_predictions, write_atomic, write_prediction_records, write_predictions
from .llm.policy import apply_length_policy
from .logging import get_logger
from .model_folder import DECODING_KEYS, WEIGHTS_DIGEST, is_local, save_decoding, training_record, weights_digest
from .precision import check_bf16_weights
from .run_layout import PREDICTIONS, paired_file, predictions_file, predictions_split
from .scoring import REPORTED, compare, score
from .stats import RESAMPLES

logger = get_logger(__name__)


# ---- correcting and scoring ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScoredSplit:
    """One split a model is scored on: a split of a csc_bench test config, or (``data``: its spec) of any CSC data
    that :func:`csc_hf.data.read_data` reads (``config`` is then its table name); ``ids``: its rows' ids (their row
    numbers where the data has none). ``seen_context``: its sentences are training sentences by design
    (``scontext``). ``aligned``: it holds missing or redundant characters and is scored by edit alignment
    (:func:`csc_hf.data.needs_alignment`)."""

    config: str
    split: str
    ids: list
    sources: list[str]
    targets: list[str]
    metadata: list[dict] | None
    error_prob: float | None
    data: str | None = None
    seen_context: bool = False
    aligned: bool = False

    @property
    def name(self) -> str:
        return self.config if self.data else f"{self.config}/{self.split}"


def scored_splits(tests: Iterable[str], bench_params: dict) -> list[ScoredSplit]:
    """Every split of ``tests``: csc_bench configs built with ``bench_params`` (``sighan15`` without its file is
    skipped with a warning), or data specs (a TSV, a jsonl, an exported folder, ``FOLDER:CONFIG``, ...)."""
    params, found = BenchParams(**bench_params), []
    for name in tests:
        if is_data_spec(name) or name not in CONFIGS:
            for part in read_data(name, bench_params, equal_lengths=False).values():
                names = part.rows.column_names if part.rows is not None else []
                metadata = error_metadata(part.rows)
                ids = columns(part.rows, "id")[0] if "id" in names else list(range(len(part.sources)))
                aligned = needs_alignment(part.sources, part.targets, metadata)
                found.append(
                    ScoredSplit(
                        part.name, "test", ids, part.sources, part.targets, metadata, None, name, False, aligned
                    )
                )
            continue
        for spec in splits_of(name, params.probs):
            try:
                data = load_dataset("csc_bench", name, split=spec.split, **bench_params)
            except FileNotFoundError as err:  # sighan15 without its file
                logger.warning("skipping %s: %s", name, err)
                continue
            found.append(
                ScoredSplit(
                    name,
                    spec.split,
                    *columns(data, "id", "source", "target"),
                    error_metadata(data),
                    params.error_prob_of(spec),
                    seen_context=spec.pool == "scontext",
                    aligned=CONFIGS[name].changes_length,
                )
            )
    return found


# ---- what the model trained on -------------------------------------------------------------------------------------


def scoring_params(model_dir: str | Path, given: dict) -> tuple[dict, str]:
    """The benchmark parameters to build a model's test sets with, and where they come from in words: those it
    trained with (its training record's ``bench_params``, less ``augmentation`` and ``train_edit_shares``, which
    change only the train config's splits), the ``given`` ones (the command line's) winning; the defaults where it
    records no benchmark training."""
    record = training_record(model_dir)
    trained = record.get("bench_params") if record.get("use_benchmark", True) else None
    if not isinstance(trained, dict):
        trained = None
    params = {k: v for k, v in (trained or {}).items() if k not in ("augmentation", "train_edit_shares")}
    trained_value = BenchParams(**params)  # a parameter it does not record is the default

    def as_given(value):
        return tuple(value) if isinstance(value, list) else value

    changed = sorted(k for k, v in given.items() if as_given(getattr(trained_value, k)) != as_given(v))
    source = (
        "the model's training record"
        if trained is not None
        else "the defaults (the model did not train on the benchmark)"
        if record
        else "the defaults (the model records no training)"
    )
    if changed:
        source += f", {', '.join(changed)} from the command line"
    return BenchParams.changed({**params, **given}), source


def trained_sentences(model_dir: str | Path, fallback: dict | None = None, max_samples: int | None = None) -> Sentences:
    """The sentence pairs a model trained on, in its training's order, as its training record states them: the
    ``train_files`` (their train splits), then the benchmark's train split of its ``bench_params`` (with
    ``use_benchmark``; an augmentation's sentences too), cut to its ``max_train_samples``. A model without a record:
    the benchmark's train split of ``fallback`` (default parameters when None), cut to ``max_samples``. Files that
    cannot be read (a Hub model's, named without their folder) and pretraining text (``pretrain_corpus``, which
    leaves out the held-out pools of its own parameters) are logged as not included."""
    record = training_record(model_dir)
    if not record:
        return benchmark_train(fallback or {}, max_samples)
    sources, targets = [], []
    for spec in record.get("train_files") or []:
        try:
            part = training_sentences(read_data(str(spec), equal_lengths=False))
        except (OSError, ValueError) as err:
            logger.warning("%s: its train_files %s cannot be read (%s): not checked", model_dir, spec, err)
            continue
        sources += part[0]
        targets += part[1]
    if record.get("use_benchmark", True) and isinstance(record.get("bench_params", {}), dict):
        if record.get("pretrain_corpus"):
            logger.info("%s: its pretraining text (%s) is not checked", model_dir, record["pretrain_corpus"])
        else:
            train = benchmark_train(record.get("bench_params", {}))
            sources += train[0]
            targets += train[1]
    limit = record.get("max_train_samples")
    if isinstance(limit, int) and limit > 0:
        sources, targets = sources[:limit], targets[:limit]
    return sources, targets


def train_overlap(model_dir: str | Path, splits: Iterable[ScoredSplit], trained: Iterable[str]) -> dict[str, tuple]:
    """``{split name: (its sentences that are training sentences, its sentences)}`` of every split whose targets
    include a target of ``trained`` (the model's own training sentences) or of the training of the local ``init_from``
    it started from (followed as far as records go), less those built from training sentences by design
    (``scontext``)."""
    known, start, seen = set(trained), training_record(model_dir).get("init_from"), {str(model_dir)}
    while isinstance(start, str) and start not in seen and is_local(start) and training_record(start):
        known.update(trained_sentences(start)[1])
        seen.add(start)
        start = training_record(start).get("init_from")
    found = {}
    for split in splits:
        if not split.seen_context and (n := sum(target in known for target in split.targets)):
            found[split.name] = (n, len(split.targets))
    return found


def benchmark_train(bench_params: dict, max_samples: int | None = None, cache_dir: str | None = None) -> Sentences:
    """The benchmark's training sentences with ``bench_params`` (its first ``max_samples``)."""
    train = load_dataset("csc_bench", "train", split="train", cache_dir=cache_dir, **bench_params)
    if max_samples:
        train = train.select(range(min(max_samples, len(train))))
    return columns(train, "source", "target")


def training_pairs(
    bench_params: dict, max_train_samples: int | None, cache_dir: str | None = None
) -> set[tuple[str, str]]:
    """The (right, wrong) pairs that occur in the training sentences a model saw."""
    return set(error_pairs(*benchmark_train(bench_params, max_train_samples, cache_dir)))


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
    (none tried when the grids make one cell). A seq2seq model has no logits to bias: it keeps 0 and 0 untried.
    Validation pairs of unequal lengths (missing or redundant characters) are scored by edit alignment, and a model
    that can insert and delete (an edit head) keeps its insertions and deletions there, as on such a test set."""
    cells = [(b, p) for b in keep_bias_grid for p in similarity_prior_grid]
    if corrector.seq2seq:
        return {"keep_bias": 0.0, "similarity_prior": 0.0}, {}
    if len(cells) == 1:
        return {"keep_bias": cells[0][0], "similarity_prior": cells[0][1]}, {}
    aligned = needs_alignment(validation["source"], validation["target"])
    kinds = {"edit_kinds": EDIT_KINDS} if aligned and corrector.can_change_length else {}
    options = [{"keep_bias": bias, "similarity_prior": prior, **kinds} for bias, prior in cells]
    each = corrector.correct_each(validation["source"], options)  # one forward pass for the whole grid
    validation_f1 = {
        decoding_cell(*cell): score(
            validation["source"], predictions, validation["target"], bootstrap=0, alignment=aligned
        )["char_cor_f1"]
        for cell, predictions in zip(cells, each)
    }
    best = max(cells, key=lambda cell: (validation_f1[decoding_cell(*cell)], -cell[1], -cell[0]))
    return {"keep_bias": best[0], "similarity_prior": best[1]}, validation_f1


@dataclass(frozen=True)
class EvaluationOptions:
    """How :func:`evaluate_model` corrects and scores.

    The csc_bench test configs are built with ``bench_params`` (:func:`scoring_params`: as the model was trained).
    ``keep_bias`` and ``similarity_prior`` are chosen together (best character-level correction F1) among
    ``keep_bias_grid`` × ``similarity_prior_grid`` (:func:`tune_decoding`) on the validation split of
    ``bench_params`` (its first ``max_validation`` sentences), or on ``validation``: any CSC data (its validation
    splits, else all of it: a TSV, a jsonl, an exported folder); a setting without a grid is the decoding saved with
    the model (0 without one). With ``save_decoding`` the decoding used is saved in the model folder with how it was
    chosen, so that every way of loading the model decodes as it was scored. With ``predictions_dir`` each split's
    predictions are saved there as edits. Seen and unseen pairs are those of the model's training sentences
    (:func:`trained_sentences`; for a model that records no training, the first ``max_train_samples`` training
    sentences of ``training_params``, default ``bench_params``). A test split that shares sentences with the model's
    training sentences is an error before any correction, unless ``allow_train_overlap`` (then a warning, and each
    record counts them). ``batch_size``, ``precision``, ``bf16_weights`` and ``trust_remote_code`` are the Corrector's
    (``precision="auto"``: bf16 autocast where the CPU computes bf16; ``bf16_weights``: the weights in bf16 there,
    without autocast). ``llm``: options of an LLM corrector
    (``csc_hf.llm.corrector.LLM_OPTIONS``: ``template``, ``length_policy``, ``training_data``, ...); given or not, a
    causal LM loads as one, takes no decoding grid and saves no decoding."""

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
    bf16_weights: bool = False
    llm: Mapping[str, Any] = field(default_factory=dict)
    validation: str | None = None
    allow_train_overlap: bool = False


def evaluate_model(
    model_dir: str | Path, tests: Iterable[str], options: EvaluationOptions = EvaluationOptions()
) -> list[dict]:
    """Correct every test split (:func:`scored_splits`: csc_bench configs or data specs) with the model in
    ``model_dir`` (a folder or a Hub id: any checkpoint ``csc_hf.pipeline.Corrector`` loads, an LLM too) and score it
    as ``options`` say. Every split is read, and checked against the model's training sentences, before the model is
    loaded. Each record holds the split's scores, the benchmark parameters it was built with (or the data it is), the
    seconds its correction took and the sentences per second and, for a local folder, the sha256 of its weights
    (:func:`csc_hf.model_folder.weights_digest`); an LLM's also its settings (prompt, decoding, length
    policy), the answers whose length changed, the failures by kind and the contamination flags of the split's
    sources. Each split logs its size, score and time, and a progress bar runs over the splits."""
    from .pipeline import Corrector, loads_as_llm, loads_as_seq2seq  # torch: only here (csc-bench score reads us)

    o = options
    check_bf16_weights(o.precision, o.bf16_weights)
    llm = loads_as_llm(model_dir, o.llm, o.trust_remote_code)
    if llm and (o.keep_bias_grid is not None or o.similarity_prior_grid is not None):
        raise ValueError(
            f"{model_dir} is an LLM corrector: it has no keep_bias or similarity_prior to tune (no --keep-bias or "
            "--similarity-prior grid)"
        )
    if llm and o.bf16_weights:
        raise ValueError(
            f"{model_dir} is an LLM corrector: its weights load in the dtype its precision gives (bf16 with "
            "--precision bf16); bf16_weights is for a tagging or seq2seq model"
        )
    grids = {"keep_bias": o.keep_bias_grid, "similarity_prior": o.similarity_prior_grid}
    if any(set(grid or ()) - {0.0} for grid in grids.values()) and loads_as_seq2seq(model_dir, o.trust_remote_code):
        check_seq2seq_grids(grids, f"{model_dir} (a seq2seq model)")  # a grid it cannot decode: before any test set
    validation = None if llm else _validation(o)
    splits = scored_splits(tests, o.bench_params)
    trained = trained_sentences(model_dir, o.training_params or o.bench_params, o.max_train_samples)
    if training_record(model_dir):
        overlap = _checked_overlap(model_dir, splits, trained[1], o.allow_train_overlap)
    else:  # its training sentences are unknown (the benchmark's stand in for its seen pairs alone)
        overlap = {}
        logger.info("%s records no training: its test sets are not checked against its training sentences", model_dir)
    weights = {"bf16_weights": True} if o.bf16_weights else {}  # an LLM's weights follow precision: it takes none
    corrector = Corrector.from_pretrained(
        str(model_dir),
        batch_size=o.batch_size,
        trust_remote_code=o.trust_remote_code,
        precision=o.precision,
        **weights,
        **o.llm,
    )
    tuning = None
    if not llm:
        corrector, tuning = _tuned(corrector, o, model_dir, validation)
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
    pairs = set(error_pairs(*trained))
    corpus = BenchParams(**o.bench_params).corpus
    digest = weights_digest(model_dir)  # the weights the scores belong to: csc-bench push checks it
    records = []
    for split in splits if llm else ():  # every split's prompts fit the model before the first generation
        corrector.check_lengths(split.sources, f"{split.name}, sentence")
    progress = tqdm(splits, desc=f"evaluate {Path(str(model_dir)).name}", unit="split")
    for split in progress:
        progress.set_postfix_str(split.name)
        split_corrector = (
            corrector.with_options(edit_kinds=EDIT_KINDS)
            if split.aligned and not llm and corrector.can_change_length
            else corrector
        )
        started = time.perf_counter()
        run = split_corrector.run(split.sources, f"{split.name}, sentence") if llm else None
        predictions = split_corrector.correct(split.sources) if run is None else run.answers
        seconds = time.perf_counter() - started
        if o.predictions_dir is not None:
            _save_predictions(o.predictions_dir, split, predictions, run)
        if run is not None:  # the answers as written are saved; the policy is applied to score them
            predictions = apply_length_policy(split.sources, predictions, corrector.length_policy)
        scores = score(
            split.sources,
            predictions,
            split.targets,
            metadata=split.metadata,
            train_pairs=pairs,
            bootstrap=o.bootstrap,
            alignment=split.aligned,
        )
        record = {
            "config": split.config,
            "split": split.split,
            **({"data": split.data} if split.data else {"bench_params": dict(o.bench_params)}),
            "error_prob": split.error_prob,
            **({"alignment": True} if split.aligned else {}),  # scored by edit alignment: insertions and deletions
            **({WEIGHTS_DIGEST: digest} if digest else {}),
        }
        if llm:
            record["llm"] = _llm_record(corrector, run, split, corpus)
        else:
            record.update({key: getattr(corrector, key) for key in DECODING_KEYS})
        if split.name in overlap:
            record["train_overlap"] = overlap[split.name][0]
        n = len(predictions)
        records.append(
            {
                **record,
                "edit_kinds": list(_kept_kinds(split_corrector, llm)),
                "scores": scores,
                "seconds": seconds,
                "sentences_per_s": n / seconds if seconds else None,
            }
        )
        changed = sum(source != prediction for source, prediction in zip(split.sources, predictions))
        logger.info(
            "%s: %d sentences, %d changed, char_cor_f1 %.4f, %.1f s",
            split.name,
            n,
            changed,
            scores["char_cor_f1"],
            seconds,
        )
    return records


def _llm_record(corrector, run, split: ScoredSplit, corpus: str) -> dict[str, Any]:
    """What an LLM's record holds besides its scores: the corrector's settings, the run's length changes, failures and
    new tokens (its timing is the record's), and the contamination flags of the split's sources (a csc_bench config's;
    none for other data)."""
    from .llm.contamination import benchmark_sources, contamination_flags

    summary = {k: v for k, v in run.summary().items() if k not in ("sentences", "seconds", "sentences_per_s")}
    sources = {split.name: []} if split.data else benchmark_sources([split.config], corpus)
    flags = contamination_flags(corrector.training_data, sources)
    return {**summary, "settings": corrector.settings, "contamination": flags}


def _save_predictions(folder: Path, split: ScoredSplit, predictions: list[str], run) -> None:
    """A split's predictions in ``folder``: a tagging model's as edits (``CONFIG.SPLIT.txt``), an LLM's (``run``) as
    jsonl records (``CONFIG.SPLIT.jsonl``) of ``id``, ``prediction`` (its answer before the length policy:
    ``csc-bench score --length-policy P`` gives evaluate's scores under any ``P``), the parsed ``answer``, the raw
    ``output`` and the ``status``. A split of other data is saved as ``NAME.test``, its table name made a file name
    (a file's name without its folder, each other character than a letter, digit, ``-`` or ``_`` as ``_``)."""
    config = split.config
    if split.data:
        config = re.sub(r"[^\w-]+", "_", Path(config).name if Path(config).is_file() else config).strip("_")
    path = folder / predictions_file(config, split.split, ".txt" if run is None else ".jsonl")
    logger.info("%s: predictions in %s", split.name, path)
    if run is None:
        write_predictions(path, split.sources, predictions)
        return
    keys = ("answer", "output", "status")
    records = (
        {"id": i, "prediction": prediction, **{k: result[k] for k in keys}}
        for i, prediction, result in zip(split.ids, predictions, run.results)
    )
    write_prediction_records(path, records)


def _kept_kinds(corrector, llm: bool) -> tuple[str, ...]:
    """The kinds of edit a corrector's predictions keep: its ``edit_kinds``; an LLM's, all of them under the ``edits``
    length policy (its answers scored as written), else substitutions only."""
    if not llm:
        return corrector.edit_kinds
    return EDIT_KINDS if corrector.length_policy == "edits" else (SUBSTITUTION,)


def _checked_overlap(
    model_dir: str | Path, splits: Sequence[ScoredSplit], trained: Sequence[str], allow: bool
) -> dict[str, tuple]:
    """:func:`train_overlap`; any is an error naming each split and its count, or with ``allow`` a warning."""
    overlap = train_overlap(model_dir, splits, trained)
    if not overlap:
        return overlap
    counts = "; ".join(f"{name}: {n} of its {total} sentences" for name, (n, total) in overlap.items())
    what = f"test sentences that {model_dir} trained on ({counts})"
    if not allow:
        raise ValueError(
            f"{what}: its scores there would be on training sentences. Build the test sets with the benchmark "
            "parameters it trained with (csc-bench evaluate's default: drop the benchmark options), or score them "
            "anyway with --allow-train-overlap (allow_train_overlap=True)"
        )
    logger.warning("scoring on %s: THESE SCORES COUNT TRAINING SENTENCES (each record says how many)", what)
    return overlap


def _validation(o: EvaluationOptions) -> Sentences | None:
    """The sentences the grids of ``o`` are tuned on (None without a grid of several cells): the benchmark's
    validation split (its first ``max_validation`` sentences) or those of ``o.validation``."""
    cells = len(set(o.keep_bias_grid or [0])) * len(set(o.similarity_prior_grid or [0]))
    if o.validation is not None:
        return validation_sentences(read_data(o.validation, o.bench_params))
    if cells < 2:
        return None
    data = load_dataset("csc_bench", "train", split="validation", **o.bench_params)
    data = data.select(range(min(o.max_validation, len(data)))) if o.max_validation else data
    return columns(data, "source", "target")


def _tuned(
    corrector, o: EvaluationOptions, model_dir: str | Path, validation: Sentences | None
) -> tuple[object, dict | None]:
    """The corrector with the decoding that the grids of ``o`` choose on ``validation`` (:func:`tune_decoding`),
    and how it was chosen (None without a grid)."""
    if o.keep_bias_grid is None and o.similarity_prior_grid is None:
        return corrector, None
    given = {"keep_bias": o.keep_bias_grid, "similarity_prior": o.similarity_prior_grid}
    if corrector.seq2seq:
        check_seq2seq_grids(given, f"{model_dir} (a seq2seq model)")
    grids = {
        name: [getattr(corrector, name)] if grid is None else sorted(set(grid)) or [0.0]  # none: the loaded
        for name, grid in given.items()
    }
    several = len(grids["keep_bias"]) * len(grids["similarity_prior"]) > 1 and not corrector.seq2seq
    sources, targets = validation if several and validation else ([], [])
    chosen, validation_f1 = tune_decoding(
        corrector, {"source": sources, "target": targets}, grids["keep_bias"], grids["similarity_prior"]
    )
    tuning = {"grid": grids}
    if several:
        split = o.validation or split_name("train", "validation")
        tuning.update(split=split, sentences=len(sources), metric="char_cor_f1", scores=validation_f1)
        logger.info(
            "%s: keep_bias %g, similarity_prior %g (%s char_cor_f1 by keep_bias/similarity_prior: %s)",
            model_dir,
            chosen["keep_bias"],
            chosen["similarity_prior"],
            split,
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


def training_set_comparisons(
    params: Mapping[str | None, dict],
    evaluations: Mapping[tuple[str, int, str | None], Path],
    baseline: str = "bert",
    n_resamples: int = RESAMPLES,
) -> list[dict]:
    """The paired comparisons of the training-distribution stage (``evaluations``: ``{(variant, seed, training set,
    None for the grid's own): evaluation folder}``; ``params``: the benchmark parameters of each training set, None
    the grid's): each set's model against the grid's model of the same variant and seed (``against: "grid"``), on
    the test splits that both training sets give the same sentences (not ``seen`` or ``scontext``); and within each
    training set, the grid's included, each variant against ``baseline`` of the same seed (``against: baseline``),
    on every split. ``delta`` is the first minus the second."""
    results = []
    for (model, seed, name), folder in tqdm(evaluations.items(), desc="paired tests of the training sets", leave=False):
        if name is not None and (grid := evaluations.get((model, seed, None))) is not None:
            found = kept_comparisons(params[None], folder, grid, n_resamples, seed, same_training=False)
            results += [{"model": model, "seed": seed, "training_set": name, "against": "grid", **e} for e in found]
        if model != baseline and (base := evaluations.get((baseline, seed, name))) is not None:
            found = kept_comparisons(params[name], folder, base, n_resamples, seed)
            results += [{"model": model, "seed": seed, "training_set": name, "against": baseline, **e} for e in found]
    return results


def kept_comparisons(
    bench_params: dict, folder: Path, base: Path, n_resamples: int, seed: int, same_training: bool = True
) -> list[dict]:
    """:func:`compare_predictions`, kept in ``folder`` (``paired-BASE-N.json``) so that a re-run reads them."""
    kept = folder / paired_file(base.name, n_resamples)
    if kept.is_file():
        return json.loads(kept.read_text(encoding="utf-8"))
    if found := compare_predictions(bench_params, folder, base, n_resamples, seed, same_training):
        write_atomic(kept, json.dumps(found) + "\n")  # two processes of one run may both write it: each whole
    return found


def compare_predictions(
    bench_params: dict, folder: Path, base: Path, n_resamples: int, seed: int, same_training: bool = True
) -> list[dict]:
    """The paired comparisons of the predictions saved in the evaluation folders ``folder`` and ``base``; unless
    both models saw the same training set (``same_training``), only on the splits that do not depend on it."""
    found = []
    probs = BenchParams(**bench_params).probs
    for path in sorted((folder / PREDICTIONS).glob("*.txt")):
        if not (base_path := base / PREDICTIONS / path.name).is_file():
            continue
        config, split = predictions_split(path)
        if not same_training and any(
            depends_on_training(spec) for spec in splits_of(config, probs) if spec.split == split
        ):
            continue
        data = load_dataset("csc_bench", config, split=split, **bench_params)
        sources, targets = columns(data, "source", "target")
        stats = compare(
            sources,
            read_predictions(path, sources),
            read_predictions(base_path, sources),
            targets,
            n_resamples=n_resamples,
            seed=seed,
            alignment=CONFIGS[config].changes_length,
        )
        found += [{"config": config, "split": split, "metric": metric, **stats[metric]} for metric in REPORTED]
    return found  # a, b: the two models' scores; delta = a - b
