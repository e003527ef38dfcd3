"""Score any system's predictions file against one split of CSC data (what `csc-bench score` runs).

Predictions come in three formats (:data:`PREDICTION_FORMATS`): ``text``, one predicted sentence per line in the
references' order; ``jsonl``, one ``{"id": ..., "prediction": ...}`` object per line, ids matching the references'
``id`` column (or 0-based row numbers when they have none); ``edits``, the study's saved predictions
(``position:character`` edits per line, see :func:`csc_hf.files.write_predictions`).

References (``REF``) are the one split that a data spec of :func:`csc_hf.data.read_split` names: a csc_bench config
(``test``, ``unseen_k``, ``probs/pe05``, ``train/validation``, ``sighan15``, built with the given benchmark
parameters), an exported folder (``FOLDER:CONFIG``, ``FOLDER:CONFIG/SPLIT``, or a bare ``FOLDER`` holding one split), a
``wrong<TAB>correct`` TSV or a ``.jsonl`` with ``source``/``target``.

Missing and redundant characters (:data:`ALIGNMENT_MODES`): references whose pairs differ in length (the ``missing``,
``redundant`` and ``mixed`` configs, any file with such pairs) are scored with ``alignment=True``: gold errors and
changes are edits at source positions, with a breakdown by edit kind; ``--alignment off`` is the substitution-only
scorer, which refuses such a pair naming its file and line (or split and sentence).

The predictions are scored under a declared length policy (:mod:`csc_hf.llm.policy`: ``edits``, the default, scores
a prediction of another length than its source as written; ``substitutions`` keeps its same-position substitutions;
``strict`` keeps the source instead), recorded in the report. The report holds both precision conventions of
:func:`csc_hf.scoring.score` with bootstrap intervals, the breakdown by error type (the rows' own ``errors`` where
they carry typed errors, else judged by character knowledge) and, with training pairs, by seen/unseen pair; with
alignment, by edit kind; the length changes of the predictions as given, before the policy (LLM and seq2seq output;
aligned by :func:`csc_hf.scoring.align`) and the implausible ones (empty, or longer than twice their source: scored as
they are and counted); and, with a baseline (under the same policy), the paired test of
:func:`csc_hf.scoring.compare`.
:func:`score_files` is the shell that reads the files (checking every argument and file before any scoring work);
:func:`detect_format`, :func:`length_changes`, :func:`score_report` and :func:`scores_markdown` are pure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .benchmark import columns
from .corruption import ERROR_TYPES
from .data import DataSplit, error_metadata, needs_alignment, read_data, read_split, spec_paths, training_sentences
from .dataset_stats import error_pairs, judge_pair
from .edits import EDIT_KINDS, SUBSTITUTION, alignment, positional
from .evaluation import training_pairs
from .files import EDITS_LINE, check_output, iter_jsonl, read_lines, read_predictions, write_atomic
from .llm.policy import DEFAULT_LENGTH_POLICY, LENGTH_POLICIES, apply_length_policy, check_length_policy
from .logging import get_logger
from .markdown import UNDEFINED, percent, percent_range, score_text, signed_points, table
from .scoring import CONVENTIONS, HEADLINE, MAIN_SCORES, align, compare, score, score_name
from .stats import CONFIDENCE, RESAMPLES, check_resamples

__all__ = [
    "ALIGNMENT_MODES",
    "PREDICTION_FORMATS",
    "References",
    "detect_format",
    "length_changes",
    "load_references",
    "parse_predictions",
    "score_files",
    "score_report",
    "scores_markdown",
]

logger = get_logger(__name__)

PREDICTION_FORMATS = ("text", "jsonl", "edits")
ALIGNMENT_MODES = ("auto", "on", "off")
"""How the references are scored: ``on``, by edit alignment (:func:`csc_hf.scoring.score` with ``alignment=True``:
missing and redundant characters); ``off``, position by position (substitutions only: a reference pair of unequal
lengths is an error); ``auto``, by alignment when the references change lengths (a csc_bench config with missing or
redundant errors, rows whose errors have such a kind, or any pair of unequal lengths)."""


@dataclass(frozen=True)
class References:
    """One split of CSC data: its table name, the sentence pairs, the row ids (as text, when the rows have an ``id``
    column), each row's typed gold errors (scoring ``metadata``) and whether those types came with the rows."""

    name: str
    sources: list[str]
    targets: list[str]
    ids: list[str] | None
    metadata: list[dict]
    typed_rows: bool
    bench_config: str | None = None  # the csc_bench config the split comes from
    alignment: bool = False  # scored by edit alignment (see ALIGNMENT_MODES)


# ---- references ----------------------------------------------------------------------------------------------------


def _judged_errors(sources: Sequence[str], targets: Sequence[str], by_alignment: bool = False) -> list[dict]:
    """Each row's gold errors, substitutions typed by character knowledge (:func:`csc_hf.confusion.pair_type`,
    cached); with ``by_alignment``, every edit of the pair's alignment (:func:`csc_hf.edits.alignment`) with its kind,
    missing and redundant characters typed ``other``."""
    rows = []
    for source, target in zip(sources, targets):
        edits = alignment(source, target) if by_alignment else positional(source, target)
        rows.append(
            {
                "errors": [
                    {
                        "position": e.position,
                        "type": judge_pair(e.right, e.wrong) if e.kind == SUBSTITUTION else "other",
                        "kind": e.kind,
                    }
                    for e in edits
                ]
            }
        )
    return rows


def references_of(split: DataSplit, alignment_mode: str = "auto") -> References:
    """The references of one split of CSC data: its ids and typed errors where its rows have them, and whether they
    are scored by alignment (``alignment_mode``: one of :data:`ALIGNMENT_MODES`)."""
    rows = split.rows
    ids = [str(i) for i in columns(rows, "id")[0]] if rows is not None and "id" in rows.column_names else None
    metadata = error_metadata(rows)
    typed = metadata is not None
    aligned = alignment_mode == "on" or (
        alignment_mode == "auto" and needs_alignment(split.sources, split.targets, metadata, split.bench_config)
    )
    if typed and not aligned:  # the default scorer reads errors by position only
        metadata = [{"errors": [{k: v for k, v in e.items() if k != "kind"} for e in m["errors"]]} for m in metadata]
    return References(
        split.name,
        split.sources,
        split.targets,
        ids,
        metadata if typed else _judged_errors(split.sources, split.targets, aligned),
        typed,
        split.bench_config,
        aligned,
    )


def load_references(
    ref: str, params: Mapping | None = None, cache_dir: str | None = None, alignment_mode: str = "auto"
) -> References:
    """The one split that ``ref`` names (see the module docstring); several splits or none are an error that lists
    them. A csc_bench config is checked before it is built. With ``alignment_mode="off"`` a pair of unequal lengths is
    an error naming its file and line (or split and sentence)."""
    check_alignment_mode(alignment_mode)
    try:
        split = read_split(ref, params, cache_dir, what="references", equal_lengths=alignment_mode == "off")
    except ValueError as err:
        if alignment_mode == "off" and "characters, target" in str(err):
            raise ValueError(
                f"{err}: --alignment off scores substitutions position by position; score missing and redundant "
                "characters with --alignment auto or on"
            ) from None
        raise
    return references_of(split, alignment_mode)


def check_alignment_mode(mode: str) -> None:
    if mode not in ALIGNMENT_MODES:
        raise ValueError(f"--alignment {mode!r}: choose {', '.join(ALIGNMENT_MODES)}")


def training_pairs_for(
    references: References, train: str | None, params: Mapping | None = None, cache_dir: str | None = None
) -> tuple[set[tuple[str, str]] | None, str | None]:
    """The ``(right, wrong)`` training pairs for the seen/unseen breakdown and where they come from: ``train`` (any
    REF kind; its train splits, or all of it), else the benchmark's own training set for a csc_bench config, else
    none."""
    if train:
        return set(error_pairs(*training_sentences(read_data(train, params, cache_dir, False)))), train
    if references.bench_config is not None:
        logger.info("building the benchmark's training pairs for the seen/unseen breakdown")
        return training_pairs(params or {}, None, cache_dir), "the benchmark's training set"
    return None, None


# ---- predictions ---------------------------------------------------------------------------------------------------


def detect_format(path: str | Path, lines: Sequence[str]) -> str:
    """``jsonl`` for a ``.jsonl`` name or a first line that is a JSON object with ``prediction``; ``edits`` when every
    line is ``position:character`` edits (or empty); else ``text``."""
    if Path(path).suffix == ".jsonl":
        return "jsonl"
    first = next((line for line in lines if line.strip()), "")
    if first.lstrip().startswith("{"):
        try:
            if "prediction" in json.loads(first):
                return "jsonl"
        except (json.JSONDecodeError, TypeError):
            pass
    if lines and all(EDITS_LINE.fullmatch(line) for line in lines):
        return "edits"
    return "text"


def _count_error(path: str | Path, count: int, unit: str, references: References) -> ValueError:
    return ValueError(
        f"{path} has {count} {unit} but the references {references.name} have "
        f"{len(references.sources)} sentences; give one prediction per reference sentence"
    )


def _jsonl_predictions(path: str | Path, lines: Sequence[str], references: References) -> list[str]:
    keys = references.ids if references.ids is not None else [str(i) for i in range(len(references.sources))]
    index = {key: i for i, key in enumerate(keys)}
    records = []
    for number, row in iter_jsonl(path, lines):
        if not isinstance(row, dict) or "id" not in row or not isinstance(row.get("prediction"), str):
            raise ValueError(f"{path}, line {number}: expected an object with 'id' and a string 'prediction'")
        records.append((number, row["id"], row["prediction"]))
    if len(records) != len(keys):
        raise _count_error(path, len(records), "records", references)
    what = "the references' id column" if references.ids is not None else "the row numbers 0 to n-1 (REF has no id)"
    predictions: list[str | None] = [None] * len(keys)
    given: dict[int, int] = {}
    for number, key, prediction in records:
        i = index.get(str(key)) if isinstance(key, (int, str)) and not isinstance(key, bool) else None
        if i is None:
            raise ValueError(f"{path}, line {number}: id {key!r} is not in {what}")
        if i in given:
            raise ValueError(f"{path}, line {number}: id {key!r} was already given on line {given[i]}")
        given[i], predictions[i] = number, prediction
    return predictions


def parse_predictions(
    path: str | Path, lines: Sequence[str], references: References, fmt: str | None = None
) -> tuple[list[str], str]:
    """The predictions in ``lines`` (of the file ``path``, see :func:`csc_hf.files.read_lines`), in the references'
    order, and their format
    (``fmt``, or detected: :func:`detect_format`). A count that differs from the references' is an error. Edits are
    applied by the study's reader (:func:`csc_hf.files.read_predictions`, which reads ``path``)."""
    fmt = fmt or detect_format(path, lines)
    if fmt not in PREDICTION_FORMATS:
        raise ValueError(f"unknown predictions format {fmt!r}; choose {', '.join(PREDICTION_FORMATS)}")
    if fmt == "jsonl":
        return _jsonl_predictions(path, lines, references), fmt
    if len(lines) != len(references.sources):
        raise _count_error(path, len(lines), "lines", references)
    if fmt == "text":
        for number, (line, source) in enumerate(zip(lines, references.sources), 1):
            if "\t" in line and "\t" not in source:
                raise ValueError(
                    f"{path}, line {number}: a TAB in a predicted sentence whose source has none: is this a "
                    "wrong<TAB>correct file? --predictions takes one predicted sentence a line"
                )
        return list(lines), fmt
    return read_predictions(Path(path), references.sources), fmt


def length_changes(sources: Sequence[str], predictions: Sequence[str]) -> dict[str, int]:
    """How many predictions differ in length from their source, and the characters they insert and delete in the
    minimum-edit alignment the scorer uses (:func:`csc_hf.scoring.align`)."""
    sentences = inserted = deleted = 0
    for source, prediction in zip(sources, predictions, strict=True):
        if len(prediction) == len(source):
            continue
        indels = align(source, prediction)[1]
        growth = len(prediction) - len(source)  # = insertions - deletions, in every alignment
        sentences += 1
        inserted += (indels + growth) // 2
        deleted += (indels - growth) // 2
    return {"sentences": sentences, "inserted": inserted, "deleted": deleted}


# ---- the report ----------------------------------------------------------------------------------------------------


def _check_bootstrap(bootstrap: int, with_baseline: bool) -> None:
    check_resamples(bootstrap, "bootstrap (--bootstrap)")
    if with_baseline and bootstrap < 1:
        raise ValueError("the paired test against a baseline needs bootstrap resamples; give --bootstrap 1 or more")


def score_report(
    references: References,
    predictions: Sequence[str],
    *,
    train_pairs: set[tuple[str, str]] | None = None,
    baseline: Sequence[str] | None = None,
    bootstrap: int = RESAMPLES,
    seed: int = 0,
    length_policy: str = DEFAULT_LENGTH_POLICY,
) -> dict[str, Any]:
    """Scores under both conventions (with ``bootstrap`` resamples) of the predictions under ``length_policy``
    (:func:`csc_hf.llm.policy.apply_length_policy`, to the baseline too), the length changes of the predictions as
    given and, with ``baseline``, the paired test of the predictions against it (``delta`` = predictions - baseline;
    ``bootstrap`` resamples for the interval and the permutation p-value)."""
    _check_bootstrap(bootstrap, baseline is not None)
    check_length_policy(length_policy)
    changes = length_changes(references.sources, predictions)
    predictions = apply_length_policy(references.sources, predictions, length_policy)
    if baseline is not None:
        baseline_changes = length_changes(references.sources, baseline)
        baseline = apply_length_policy(references.sources, baseline, length_policy)
    data = (references.sources, predictions, references.targets)
    options = {"metadata": references.metadata, "train_pairs": train_pairs, "alignment": references.alignment}
    report: dict[str, Any] = {
        "references": references.name,
        "n_sentences": len(references.sources),
        "alignment": references.alignment,
        "error_types": "from the rows' errors" if references.typed_rows else "judged by character knowledge",
        "length_policy": length_policy,
        "length_changes": changes,
        "scores": {
            c: score(*data, convention=c, bootstrap=bootstrap, confidence=CONFIDENCE, seed=seed, **options)
            for c in CONVENTIONS
        },
    }
    if baseline is not None:
        report["baseline"] = {
            "length_changes": baseline_changes,
            "paired": {
                c: compare(
                    references.sources,
                    predictions,
                    baseline,
                    references.targets,
                    convention=c,
                    n_resamples=bootstrap,
                    confidence=CONFIDENCE,
                    seed=seed,
                    **options,
                )
                for c in CONVENTIONS
            },
        }
    return report


def _cell(scores: Mapping[str, Any], key: str) -> str:
    """``71.2 (69.8-72.5)``: a score and its bootstrap interval, in % (``n/a`` where it is undefined)."""
    text = score_text(scores[key])
    if scores[key] is not None and f"{key}_ci_low" in scores:
        text += " " + percent_range(scores[f"{key}_ci_low"], scores[f"{key}_ci_high"])
    return text


def scores_markdown(report: Mapping[str, Any]) -> str:
    """The report of :func:`score_report` (with the ``predictions``/``format`` keys of :func:`score_files`) as
    markdown tables: scores in %, each with its bootstrap interval."""
    strict, lenient = (report["scores"][c] for c in CONVENTIONS)
    resamples = strict.get("ci_resamples")
    what = (
        f"{100 * strict['ci_confidence']:g}% bootstrap intervals over sentences, {resamples} resamples"
        if resamples
        else "no bootstrap intervals"
    )
    parts = [
        f"## {report.get('predictions', 'predictions')} on {report['references']}",
        f"{report['n_sentences']} sentences, {strict['n_error_sentences']} with errors ({strict['n_errors']} errors); "
        f"predictions read as {report.get('format', '-')}. Scores in % ({what}). Strict precision counts every "
        "changed sentence (SpellGCN, ReaLiSe); lenient counts only error-free changed ones (SIGHAN bake-off); they "
        "differ only in sentence-level precision and F1.",
        table(
            ["score", "strict", "lenient"],
            ([score_name(key), _cell(strict, key), _cell(lenient, key)] for key in MAIN_SCORES),
        ),
    ]
    groups = [(f"type_{t}", t) for t in ERROR_TYPES] + [("seen", "seen pairs"), ("unseen", "unseen pairs")]
    rows = [
        [label, n, *(_cell(strict, f"{key}_char_{task}_r") if n else None for task in ("det", "cor"))]
        for key, label in groups
        if (n := strict.get(f"{key}_n_errors")) is not None
    ]
    parts += [
        f"### Breakdown by error (error types {report['error_types']}; seen/unseen pairs against "
        f"{report.get('train_pairs_from') or 'no training data: give --train DATA'})",
        table(["errors", "count", *(score_name(f"char_{task}_r") for task in ("det", "cor"))], rows),
    ]
    if report.get("alignment"):
        parts += [
            "### Breakdown by edit kind (scored by edit alignment: a missing character is corrected by an insertion, "
            "a redundant one by a deletion, each at its source position)",
            table(
                [
                    "edit kind",
                    "errors",
                    "predicted edits",
                    *(score_name(f"char_{t}") for t in ("det_r", "cor_p", "cor_r")),
                ],
                (
                    [
                        kind,
                        strict[f"{kind}_n_errors"],
                        strict[f"{kind}_n_changes"],
                        *(_cell(strict, f"{kind}_char_{t}") for t in ("det_r", "cor_p", "cor_r")),
                    ]
                    for kind in EDIT_KINDS
                ),
            ),
        ]
    changes, policy = report["length_changes"], report.get("length_policy", DEFAULT_LENGTH_POLICY)
    meaning = LENGTH_POLICIES[policy]
    if report.get("alignment") and policy == DEFAULT_LENGTH_POLICY:  # the references change lengths too
        meaning = "scored as written, by edit alignment: an insertion or deletion that a gold edit asks for is right"
    parts.append(
        f"Length changes: {changes['sentences']} predictions ({percent(changes['sentences'] / report['n_sentences'])}%)"
        f" differ in length from their source ({changes['inserted']} characters inserted, {changes['deleted']} "
        f"deleted, aligned by minimum edit). Length policy {policy}: such a prediction is {meaning}. Implausible "
        f"predictions (empty, or longer than twice their source), scored as they are: {strict['n_implausible']}."
    )
    if "baseline" in report:
        base = report["baseline"]
        paired = []
        for convention in CONVENTIONS:
            for key in (k for k in MAIN_SCORES if k in HEADLINE):  # in reading order
                if convention == "strict" or key.startswith("sent"):  # the others are the same under both
                    entry = base["paired"][convention][key]
                    label = score_name(key) + (f" ({convention})" if key.startswith("sent") else "")
                    if entry["delta"] is None:  # undefined on these references
                        paired.append([label, *[UNDEFINED] * 4])
                        continue
                    interval = f"({signed_points(entry['ci_low'])} to {signed_points(entry['ci_high'])})"
                    paired.append(
                        [
                            label,
                            percent(entry["a"]),
                            percent(entry["b"]),
                            f"{signed_points(entry['delta'])} {interval}",
                            f"{entry['p_value']:.3f}",
                        ]
                    )
        parts += [
            f"### Paired test against the baseline {base.get('predictions', '')}",
            f"Difference = predictions - baseline, in points of %, with its paired bootstrap interval; p: two-sided "
            f"permutation test. The baseline changes the length of {base['length_changes']['sentences']} predictions.",
            table(["score", "predictions", "baseline", "difference", "p"], paired),
        ]
    return "\n\n".join(parts) + "\n"


# ---- the shell: files in, report out -------------------------------------------------------------------------------


def score_files(
    predictions: str | Path,
    references: str,
    *,
    fmt: str | None = None,
    baseline: str | Path | None = None,
    baseline_format: str | None = None,
    train: str | None = None,
    params: Mapping | None = None,
    bootstrap: int = RESAMPLES,
    seed: int = 0,
    cache_dir: str | None = None,
    output: str | Path | None = None,
    alignment_mode: str = "auto",
    length_policy: str = DEFAULT_LENGTH_POLICY,
) -> dict[str, Any]:
    """Score the predictions file against the references ``REF`` (see the module docstring) and return the report;
    with ``output``, also write it there as json. Every argument and file is checked before any scoring work."""
    for option, value in (("--format", fmt), ("--baseline-format", baseline_format)):
        if value is not None and value not in PREDICTION_FORMATS:
            raise ValueError(f"{option} {value!r} is not a predictions format; choose {', '.join(PREDICTION_FORMATS)}")
    check_alignment_mode(alignment_mode)
    _check_bootstrap(bootstrap, baseline is not None)
    check_length_policy(length_policy, "--length-policy")
    check_output(output, inputs=[predictions, baseline, *spec_paths(references), *(spec_paths(train) if train else [])])
    lines = read_lines(predictions, "predictions")
    baseline_lines = read_lines(baseline, "baseline") if baseline is not None else None
    refs = load_references(references, params, cache_dir, alignment_mode)
    system, found = parse_predictions(predictions, lines, refs, fmt)
    base = parse_predictions(baseline, baseline_lines, refs, baseline_format) if baseline is not None else None
    pairs, pairs_from = training_pairs_for(refs, train, params, cache_dir)
    report = {
        "predictions": str(predictions),
        "format": found,
        "train_pairs_from": pairs_from,
        **score_report(
            refs,
            system,
            train_pairs=pairs,
            baseline=None if base is None else base[0],
            bootstrap=bootstrap,
            seed=seed,
            length_policy=length_policy,
        ),
    }
    if base is not None:
        report["baseline"] = {"predictions": str(baseline), "format": base[1], **report["baseline"]}
    if output is not None:
        write_atomic(output, json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    return report
