"""Chinese Spelling Check (CSC) scoring: one scorer for every csc_hf experiment and any Trainer.

Inputs are parallel lists of ``sources`` (the text to check), ``predictions`` (the system
output) and ``references`` (the gold target), either strings or token-id sequences.  A
*gold error* is a position where source and reference differ; a *change* is a position
where the prediction differs from the source.

Sentence level (detection ``det``, correction ``cor``): a detection is right when the set of
changed positions equals the set of gold error positions; a correction is right when the
prediction equals the reference (the set of edits equals the gold set).  Recall is the share
of sentences with errors that are right.  Precision depends on the *convention*:

``"strict"`` (default)
    precision = right sentences / every sentence the system changed.  This is the convention
    of SpellGCN's ``run_spellgcn.py`` (Cheng et al., 2020) and of the ReaLiSe (Xu et al.,
    2021) ``metric_core.py`` script that SCOPE (Li et al., 2022) and most later papers reuse.
``"lenient"``
    each sentence is exactly one of TP (has errors, handled right), FN (has errors, handled
    wrong, *whatever it changed*), FP (error-free, changed) and TN (error-free, unchanged);
    precision = TP / (TP + FP).  A wrong change in a sentence that has errors costs recall
    only, never precision.  This is the confusion matrix of the SIGHAN bake-off definitions
    (Tseng et al., 2015; accuracy = (TP + TN) / N, FPR = FP / (FP + TN)) and exactly what
    pycorrector's ``eval_sighan2015_by_model`` computes (correction level only).

Recall, accuracy and the false positive rate are the same under both conventions, and strict
precision is never above lenient precision.

Character level: detection TP is a changed position that is a gold error; correction TP is
such a position changed to the gold character; precision divides by all changes, recall by
all gold errors (ReaLiSe's ``char_metric``; the character-level scripts of SpellGCN and SCOPE
instead divide correction hits by detection hits: ``n_cor_hits / n_det_hits`` here).  ``fpr``
is the share of error-free sentences the system changed; ``sent_acc`` the share of sentences
whose prediction equals the reference; ``sent_det_acc`` the share whose changed positions
equal the gold positions.

Predictions whose length differs from the source (seq2seq output) are aligned to it with a
minimum-edit (Levenshtein) alignment (:mod:`csc_hf.edits`): substitutions are scored at their
source position, every insertion and deletion counts as a change that is never right, and such a
sentence is never right at sentence level. A ratio whose denominator is zero is reported as 0.0
(like scikit-learn's ``zero_division=0``); the ``n_*`` counts in the output tell when that
happens. The false positive rate is the exception (:data:`UNDEFINABLE`): a set without an
error-free sentence has none to count, and its ``fpr`` (with its interval, or paired test) is
None, which every table shows as ``n/a`` (:func:`csc_hf.markdown.score_text`), never as a rate
of 0. A prediction that is empty or longer than twice its source is scored as what it is and
counted in ``n_implausible``.

Errors that change the length (``alignment=True``): gold errors and changes are *edits* at
source positions, read from the minimum-edit alignments source -> reference and source ->
prediction (:func:`csc_hf.edits.alignment`; the prediction's, among its minimum alignments, is
the one closest to the gold edits): a substitution, a *missing* character (an insertion before
a source position) or a *redundant* one (a deletion).  A detection hit is a predicted edit of
the gold edit's kind at its slot (position, and for missing characters their order at that
position); a correction hit is one that also puts in the gold character (a redundant
character's deletion is both).  Every definition above then holds with "position" read as
"slot" and "change" as "edit"; each kind gets ``{kind}_char_{det,cor}_{p,r,f1}``.  On
substitution-only data (references and predictions as long as their sources, whose
position-by-position reading is a minimum alignment, as in any CSC data) the numbers are those
of the default mode exactly; the default mode refuses a reference of another length.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np

from csc_hf.corruption import ERROR_TYPES
from csc_hf.edits import EDIT_KINDS, MISSING, SUBSTITUTION, align, slots
from csc_hf.edits import alignment as edit_alignment
from csc_hf.stats import CONFIDENCE, RESAMPLES, bootstrap_ci, paired_test

__all__ = [
    "CONVENTIONS",
    "EDIT_KINDS",
    "ERROR_TYPES",
    "UNDEFINABLE",
    "align",
    "check_inputs",
    "compare",
    "make_compute_metrics",
    "preprocess_logits_for_metrics",
    "score",
    "scores_from_totals",
    "sentence_counts",
]

CONVENTIONS = ("strict", "lenient")
_REACH = 3  # sentences of up to 7 changes are checked for the position-by-position reading without an alignment
UNDEFINABLE = {"fpr": ("sentences", "error_sentences")}
"""The scores that a set can leave undefined, None then, and the count columns ``(all, excluded)`` whose difference is
their denominator: ``fpr`` has none without an error-free sentence."""
_NERR_BUCKETS = (("nerr1", 1, 1), ("nerr2", 2, 2), ("nerr3plus", 3, None))
_CHAR_GROUPS = tuple(f"type_{name}" for name in ERROR_TYPES) + ("seen", "unseen")
_NERR_COLUMNS = ("error_sentences", "det_tp", "cor_tp", "gold_errors", "det_hits", "cor_hits")
_SUMMARY = (
    ("n_sentences", "sentences"),
    ("n_error_sentences", "error_sentences"),
    ("n_errors", "gold_errors"),
    ("n_changed_sentences", "changed_sentences"),
    ("n_changes", "changes"),
    ("n_det_hits", "det_hits"),
    ("n_cor_hits", "cor_hits"),
    ("n_length_mismatch", "length_mismatch"),
    ("n_indels", "indels"),
    ("n_implausible", "implausible"),
)


# --------------------------------------------------------------------------- public API


def score(
    sources: Sequence[Any],
    predictions: Sequence[Any],
    references: Sequence[Any],
    *,
    convention: str = "strict",
    metadata: Sequence[Mapping[str, Any]] | Mapping[str, Sequence[Any]] | None = None,
    train_pairs: Iterable[tuple[Any, Any]] | None = None,
    ignore_index: int = -100,
    bootstrap: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = 0,
    numeric_only: bool = False,
    alignment: bool = False,
) -> dict[str, Any]:
    """Score a CSC system; return a flat, JSON-serializable dict.

    Keys: ``convention`` (dropped when ``numeric_only``); ``sent_{det,cor}_{p,r,f1}``,
    ``sent_det_acc``, ``sent_acc``, ``char_{det,cor}_{p,r,f1}``, ``fpr`` (None without an
    error-free sentence, left out when ``numeric_only``); the counts
    ``n_sentences``, ``n_error_sentences``, ``n_errors``, ``n_changed_sentences``,
    ``n_changes``, ``n_det_hits``, ``n_cor_hits``, ``n_length_mismatch``, ``n_indels``,
    ``n_implausible``; with ``alignment`` (references may differ in length from their sources:
    missing and redundant characters), per edit kind ``{substitution,missing,redundant}_{n_errors,
    n_changes,char_det_p,char_det_r,char_det_f1,char_cor_p,char_cor_r,char_cor_f1}``; by number of
    errors per sentence,
    ``nerr{1,2,3plus}_{n_sentences,sent_det_r,sent_cor_r,char_det_r,char_cor_r}``; with
    ``metadata``, per error type ``type_{phonetic,graphic,both,other}_{n_errors,char_det_r,
    char_cor_r}``; with ``train_pairs``, ``{seen,unseen}_{n_errors,char_det_r,char_cor_r}``.
    With ``bootstrap > 0`` every score ``k`` also gets ``k_ci_low`` and ``k_ci_high`` (a
    seeded percentile bootstrap over sentences) plus ``ci_resamples`` and ``ci_confidence``.
    See :func:`sentence_counts` for the inputs.
    """
    _check_convention(convention)
    counts = sentence_counts(
        sources,
        predictions,
        references,
        metadata=metadata,
        train_pairs=train_pairs,
        ignore_index=ignore_index,
        alignment=alignment,
    )
    totals = {name: column.sum() for name, column in counts.items()}
    statistic = partial(scores_from_totals, convention=convention)
    result: dict[str, Any] = {} if numeric_only else {"convention": convention}
    result.update({key: float(value) for key, value in statistic(totals).items()})
    result.update({key: int(totals[column]) for key, column in _summary_columns(totals)})
    if bootstrap:
        intervals = bootstrap_ci(counts, statistic, n_resamples=bootstrap, confidence=confidence, seed=seed)
        for key, (low, high) in intervals.items():
            result[f"{key}_ci_low"] = low
            result[f"{key}_ci_high"] = high
        result["ci_resamples"] = int(bootstrap)
        result["ci_confidence"] = float(confidence)
    for key in undefined_scores(totals):
        for name in [k for k in (key, f"{key}_ci_low", f"{key}_ci_high") if k in result]:
            if numeric_only:  # numbers only (a Trainer's metrics): left out
                del result[name]
            else:
                result[name] = None
    return result


def undefined_scores(totals: Mapping[str, Any]) -> list[str]:
    """The scores of :data:`UNDEFINABLE` that the column totals of :func:`sentence_counts` leave undefined."""
    return [key for key, (every, excluded) in UNDEFINABLE.items() if totals[every] - totals[excluded] <= 0]


def compare(
    sources: Sequence[Any],
    predictions_a: Sequence[Any],
    predictions_b: Sequence[Any],
    references: Sequence[Any],
    *,
    convention: str = "strict",
    method: str = "permutation",
    n_resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = 0,
    **counting: Any,
) -> dict[str, dict[str, float]]:
    """Paired significance test of system A against system B on the same data.

    Returns ``{score: {"a", "b", "delta", "ci_low", "ci_high", "p_value"}}`` for every score
    of :func:`score` (all None for a score the references leave undefined, :data:`UNDEFINABLE`);
    see :func:`csc_hf.stats.paired_test`.  ``counting`` takes the options of :func:`sentence_counts`
    (``metadata``, ``train_pairs``, ``ignore_index``, ``alignment``), as :func:`score` does.
    """
    _check_convention(convention)
    counts_a = sentence_counts(sources, predictions_a, references, **counting)
    counts_b = sentence_counts(sources, predictions_b, references, **counting)
    statistic = partial(scores_from_totals, convention=convention)
    result = paired_test(
        counts_a, counts_b, statistic, method=method, n_resamples=n_resamples, confidence=confidence, seed=seed
    )
    for key in undefined_scores({name: column.sum() for name, column in counts_a.items()}):
        result[key] = dict.fromkeys(result[key])  # the same references: undefined for both systems
    return result


def sentence_counts(
    sources: Sequence[Any],
    predictions: Sequence[Any],
    references: Sequence[Any],
    *,
    metadata: Sequence[Mapping[str, Any]] | Mapping[str, Sequence[Any]] | None = None,
    train_pairs: Iterable[tuple[Any, Any]] | None = None,
    ignore_index: int = -100,
    alignment: bool = False,
) -> dict[str, np.ndarray]:
    """Per-sentence counts, one int64 array per column, from which every score is a ratio of sums.

    Inputs are all strings, or all token-id sequences (lists, tuples or 1-D integer arrays;
    a 2-D padded array is a list of rows).  For token ids, positions where the reference
    equals ``ignore_index`` (Trainer's label padding, -100) are dropped from the source and,
    when it has the reference's length, from the prediction; a prediction of another length
    only loses its ``ignore_index`` entries and is then aligned.  Sources and references must
    be non-empty and of equal length; an empty prediction is scored as deleting everything.

    ``metadata``: per example a mapping (or one columnar mapping) with ``errors``: a list of
    ``{"position", "type"}`` entries (other keys are ignored), one per gold error position,
    ``type`` in :data:`ERROR_TYPES`; positions index the source (for token ids, after
    dropping ``ignore_index`` positions).  ``train_pairs``: ``(right, wrong)`` pairs seen in
    training (characters for string input, token ids for token input); each gold error
    ``(reference item, source item)`` is then classified as seen or unseen.

    With ``alignment``, errors and changes are edits (see the module docstring): references may
    differ in length from their sources, ``metadata`` errors may name their ``kind`` (default
    ``"substitution"``; positions of missing characters are insertion positions, listed in
    order), seen/unseen pairs classify the substitutions, and token ids of a source and a
    reference of different lengths only lose the ``ignore_index`` entries of the reference and
    the prediction.

    Columns: ``sentences``, ``error_sentences``, ``changed_sentences``, ``clean_changed``,
    ``det_exact``, ``cor_exact``, ``det_tp``, ``cor_tp`` (0/1 per sentence), ``gold_errors``,
    ``changes``, ``det_hits``, ``cor_hits``, ``indels`` (counts), ``length_mismatch``,
    ``implausible`` (0/1); ``nerr*_``, ``type_*_`` and ``seen_``/``unseen_`` prefixed columns for
    the breakdowns; with ``alignment``, ``{kind}_`` prefixed ``gold_errors``, ``changes``,
    ``det_hits`` and ``cor_hits``.
    """
    if alignment:
        counts, groups = _edit_counts(sources, predictions, references, metadata, train_pairs, ignore_index)
    else:
        text = _encode(sources, predictions, references, ignore_index)
        counts, groups = _base_counts(text), _position_groups(text, metadata, train_pairs)
    for name, low, high in _NERR_BUCKETS:
        in_bucket = counts["gold_errors"] >= low
        if high is not None:
            in_bucket &= counts["gold_errors"] <= high
        for column in _NERR_COLUMNS:
            counts[f"{name}_{column}"] = counts[column] * in_bucket
    counts.update(groups)
    return counts


def scores_from_totals(totals: Mapping[str, Any], convention: str = "strict") -> dict[str, Any]:
    """Turn column totals of :func:`sentence_counts` into scores (elementwise over arrays)."""
    _check_convention(convention)
    t = totals
    scores: dict[str, Any] = {}
    for level in ("det", "cor"):
        tp = t[f"{level}_tp"]
        claimed = t["changed_sentences"] if convention == "strict" else tp + t["clean_changed"]
        scores.update(_prf(f"sent_{level}", tp, claimed, t["error_sentences"]))
    scores["sent_det_acc"] = _ratio(t["det_exact"], t["sentences"])
    scores["sent_acc"] = _ratio(t["cor_exact"], t["sentences"])
    scores.update(_prf("char_det", t["det_hits"], t["changes"], t["gold_errors"]))
    scores.update(_prf("char_cor", t["cor_hits"], t["changes"], t["gold_errors"]))
    scores["fpr"] = _ratio(t["clean_changed"], t["sentences"] - t["error_sentences"])
    for name, _, _ in _NERR_BUCKETS:
        scores[f"{name}_sent_det_r"] = _ratio(t[f"{name}_det_tp"], t[f"{name}_error_sentences"])
        scores[f"{name}_sent_cor_r"] = _ratio(t[f"{name}_cor_tp"], t[f"{name}_error_sentences"])
        scores.update(_char_recalls(t, name))
    for name in _CHAR_GROUPS:
        if f"{name}_gold_errors" in t:
            scores.update(_char_recalls(t, name))
    for kind in EDIT_KINDS:
        if f"{kind}_changes" in t:
            for level in ("det", "cor"):
                hits, changes, gold = t[f"{kind}_{level}_hits"], t[f"{kind}_changes"], t[f"{kind}_gold_errors"]
                scores.update(_prf(f"{kind}_char_{level}", hits, changes, gold))
    return scores


def make_compute_metrics(
    *,
    convention: str = "strict",
    ignore_index: int = -100,
    bootstrap: int = 0,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> Callable[[Any], dict[str, float]]:
    """Build a ``compute_metrics`` for ``transformers.Trainer`` (token-classification CSC models).

    The Trainer must pass the inputs (``TrainingArguments(include_for_metrics=["inputs"])``):
    ``input_ids`` are the sources, ``label_ids`` the references, and the predictions are token
    ids, or logits that are reduced with ``argmax`` (prefer :func:`preprocess_logits_for_metrics`
    to save memory).  The result is :func:`score` with ``numeric_only=True``.
    """
    _check_convention(convention)

    def compute_metrics(eval_pred: Any) -> dict[str, float]:
        if eval_pred.inputs is None:
            raise ValueError("compute_metrics needs the inputs: set TrainingArguments(include_for_metrics=['inputs'])")
        predictions = eval_pred.predictions
        if isinstance(predictions, tuple):
            predictions = predictions[0]
        predictions = np.asarray(predictions)
        if predictions.ndim == 3:
            predictions = predictions.argmax(axis=-1)
        return score(
            eval_pred.inputs,
            predictions,
            eval_pred.label_ids,
            convention=convention,
            ignore_index=ignore_index,
            bootstrap=bootstrap,
            confidence=confidence,
            seed=seed,
            numeric_only=True,
        )

    return compute_metrics


def preprocess_logits_for_metrics(logits: Any, labels: Any) -> Any:
    """Trainer hook: keep only the argmax token ids of the (first) logits tensor."""
    if isinstance(logits, tuple):
        logits = logits[0]
    return logits.argmax(dim=-1)


def check_inputs(sources: Sequence[Any], predictions: Sequence[Any], references: Sequence[Any]) -> bool:
    """Check the three columns before any scoring and return whether they are text: sequences of one, equal,
    non-zero length whose items are all strings or all token-id sequences, like ``sources[0]``.  The errors name the
    column and the item (``predictions[3] is int, expected str like sources[0]``)."""
    columns = {"sources": sources, "predictions": predictions, "references": references}
    for name, column in columns.items():
        if isinstance(column, (str, bytes)) or not hasattr(column, "__len__"):
            raise TypeError(f"{name} must be a sequence of examples, got {type(column).__name__}")
    n = len(sources)
    if n == 0:
        raise ValueError("no examples to score")
    for name, column in columns.items():
        if len(column) != n:
            raise ValueError(
                "sources, predictions and references must have the same length; "
                f"{name} has {len(column)}, sources has {n}"
            )
    if sources[0] is None:
        raise TypeError("sources[0] is None")
    is_text = isinstance(sources[0], str)
    for name, column in columns.items():
        (_check_strings if is_text else _check_not_strings)(name, column)
    return is_text


# --------------------------------------------------------------------------- internals


class _Encoded:
    """All sentences as flat integer arrays over source positions, plus per-sentence data.

    ``prediction[i]`` is the predicted item at source position ``i``: the prediction itself
    when it has the source's length, otherwise the aligned substitution or the source item.
    """

    __slots__ = ("source", "prediction", "reference", "lengths", "starts", "indels", "prediction_lengths", "is_text")

    def __init__(self, source, prediction, reference, lengths, indels, prediction_lengths, is_text):
        self.source, self.prediction, self.reference = source, prediction, reference
        self.lengths, self.indels, self.prediction_lengths, self.is_text = lengths, indels, prediction_lengths, is_text
        self.starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))

    @property
    def mismatch(self) -> np.ndarray:
        return self.prediction_lengths != self.lengths


def _check_convention(convention: str) -> None:
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {CONVENTIONS}, got {convention!r}")


def _encode(sources, predictions, references, ignore_index: int) -> _Encoded:
    if check_inputs(sources, predictions, references):
        return _encode_text(sources, predictions, references)
    return _encode_ids(sources, predictions, references, ignore_index)


def _check_strings(name: str, column: Sequence[Any]) -> None:
    if set(map(type, column)) <= {str}:
        return
    for i, item in enumerate(column):
        if not isinstance(item, str):
            raise TypeError(f"{name}[{i}] is {type(item).__name__}, expected str like sources[0]")


def _check_not_strings(name: str, column: Sequence[Any]) -> None:
    for i, item in enumerate(column):
        if item is None or isinstance(item, (str, bytes)):
            raise TypeError(f"{name}[{i}] is {type(item).__name__}, expected a sequence of token ids like sources[0]")


def _lengths(column: Sequence[Any]) -> np.ndarray:
    return np.fromiter(map(len, column), dtype=np.int64, count=len(column))


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _check_gold_lengths(source_lengths: np.ndarray, reference_lengths: np.ndarray, what: str) -> None:
    for name, lengths in (("sources", source_lengths), ("references", reference_lengths)):
        if not lengths.all():
            raise ValueError(f"{name}[{_first(lengths == 0)}] is empty{what}")
    if (source_lengths != reference_lengths).any():
        i = _first(source_lengths != reference_lengths)
        raise ValueError(
            f"example {i}: source has length {source_lengths[i]} but reference has length "
            f"{reference_lengths[i]}{what}; gold sources and references must align position by position "
            "(for missing or redundant characters, score with alignment=True)"
        )


def _codepoints(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")


def _encode_text(sources, predictions, references) -> _Encoded:
    lengths = _lengths(sources)
    _check_gold_lengths(lengths, _lengths(references), "")
    prediction_lengths = _lengths(predictions)
    unequal = np.flatnonzero(prediction_lengths != lengths)
    if len(unequal):  # score the source in their place, then write the aligned substitutions
        projected = list(predictions)
        for i in unequal:
            projected[i] = sources[i]
        prediction = _codepoints("".join(projected)).copy()
    else:
        prediction = _codepoints("".join(predictions))
    encoded = _Encoded(
        _codepoints("".join(sources)),
        prediction,
        _codepoints("".join(references)),
        lengths,
        np.zeros(len(lengths), dtype=np.int64),
        prediction_lengths,
        True,
    )
    for i in unequal:
        _apply_alignment(encoded, i, sources[i], predictions[i], ord)
    return encoded


def _id_array(name: str, i: int, item: Any) -> np.ndarray:
    array = np.asarray(item)
    if array.size == 0:
        return np.zeros(0, dtype=np.int64)
    if array.ndim != 1 or array.dtype == bool or not np.issubdtype(array.dtype, np.integer):
        raise TypeError(
            f"{name}[{i}] must be a 1-D sequence of integer token ids, got {array.dtype} with shape {array.shape}"
        )
    return array.astype(np.int64)


def _encode_ids(sources, predictions, references, ignore_index: int) -> _Encoded:
    src_rows, pred_rows, ref_rows = [], [], []
    for i in range(len(sources)):
        source = _id_array("sources", i, sources[i])
        prediction = _id_array("predictions", i, predictions[i])
        reference = _id_array("references", i, references[i])
        if len(source) != len(reference):
            raise ValueError(
                f"example {i}: source has length {len(source)} but reference has length {len(reference)} "
                "(before dropping ignore_index); gold sources and references must align position by position "
                "(for missing or redundant characters, score with alignment=True)"
            )
        keep = reference != ignore_index
        src_rows.append(source[keep])
        ref_rows.append(reference[keep])
        same_length = len(prediction) == len(reference)
        pred_rows.append(prediction[keep] if same_length else prediction[prediction != ignore_index])
    lengths = np.array([len(row) for row in src_rows], dtype=np.int64)
    _check_gold_lengths(lengths, lengths, " after dropping ignore_index positions")
    prediction_lengths = np.array([len(p) for p in pred_rows], dtype=np.int64)
    mismatch = prediction_lengths != lengths
    encoded = _Encoded(
        np.concatenate(src_rows),
        np.concatenate([s if m else p for s, p, m in zip(src_rows, pred_rows, mismatch)]),
        np.concatenate(ref_rows),
        lengths,
        np.zeros(len(lengths), dtype=np.int64),
        prediction_lengths,
        False,
    )
    for i in np.flatnonzero(mismatch):
        _apply_alignment(encoded, i, src_rows[i].tolist(), pred_rows[i].tolist(), int)
    return encoded


def _apply_alignment(encoded: _Encoded, i: int, source, prediction, to_int: Callable[[Any], int]) -> None:
    substitutions, indels = align(source, prediction)
    start = encoded.starts[i]
    for position, item in substitutions:
        encoded.prediction[start + position] = to_int(item)
    encoded.indels[i] = indels


def _base_counts(text: _Encoded) -> dict[str, np.ndarray]:
    scratch = np.empty(len(text.source), dtype=bool)  # one reused buffer: fresh pages are costly

    def per_sentence(mask: np.ndarray) -> np.ndarray:
        return np.add.reduceat(mask.view(np.uint8), text.starts, dtype=np.int64)

    gold = text.source != text.reference
    changed = text.source != text.prediction
    gold_errors = per_sentence(gold)
    changed_positions = per_sentence(changed)
    det_hits = per_sentence(np.logical_and(gold, changed, out=scratch))
    np.equal(text.prediction, text.reference, out=scratch)
    cor_hits = per_sentence(np.logical_and(scratch, gold, out=scratch))
    no_indel = text.indels == 0
    # changed positions == gold positions  <=>  no gold error unchanged and no change off gold
    det_exact = (gold_errors - det_hits + changed_positions - det_hits == 0) & no_indel
    # prediction == reference  <=>  every gold error corrected and no change off gold
    cor_exact = (gold_errors - cor_hits + changed_positions - det_hits == 0) & no_indel
    return _sentence_columns(
        gold_errors,
        changed_positions + text.indels,
        det_hits,
        cor_hits,
        det_exact,
        cor_exact,
        text.indels,
        text.prediction_lengths,
        text.lengths,
    )


def _sentence_columns(
    gold_errors, changes, det_hits, cor_hits, det_exact, cor_exact, indels, prediction_lengths, source_lengths
) -> dict[str, np.ndarray]:
    """The per-sentence columns of :func:`sentence_counts` (both modes) from the per-sentence counts."""
    error_sentence, changed_sentence = gold_errors > 0, changes > 0
    columns = {
        "sentences": np.ones(len(gold_errors), dtype=bool),
        "error_sentences": error_sentence,
        "changed_sentences": changed_sentence,
        "clean_changed": changed_sentence & ~error_sentence,
        "det_exact": det_exact,
        "cor_exact": cor_exact,
        "det_tp": det_exact & changed_sentence,
        "cor_tp": cor_exact & changed_sentence,
        "gold_errors": gold_errors,
        "changes": changes,
        "det_hits": det_hits,
        "cor_hits": cor_hits,
        "indels": indels,
        "length_mismatch": prediction_lengths != source_lengths,
        "implausible": (prediction_lengths == 0) | (prediction_lengths > 2 * source_lengths),  # no plausible correction
    }
    return {name: column.astype(np.int64) for name, column in columns.items()}


def _position_groups(text: _Encoded, metadata, train_pairs) -> dict[str, np.ndarray]:
    """The breakdown columns of the default mode: by error type (``metadata``) and seen/unseen pair."""
    groups: dict[str, np.ndarray] = {}
    counts: dict[str, np.ndarray] = {}
    if metadata is not None:
        positions, types = _typed_errors(metadata, text)
        groups.update({f"type_{name}": positions[types == code] for code, name in enumerate(ERROR_TYPES)})
    if train_pairs is not None:
        gold = np.flatnonzero(text.source != text.reference)
        seen = np.isin(_pair_keys(text.reference[gold], text.source[gold]), _train_keys(train_pairs, text.is_text))
        groups.update({"seen": gold[seen], "unseen": gold[~seen]})
    for name, flat_positions in groups.items():
        counts.update(_position_group_counts(name, flat_positions, text))
    return counts


class _EditArrays:
    """Edits of many sentences as parallel int64 arrays: sentence, kind (index in ``EDIT_KINDS``), position, ordinal
    (of a missing item at its position), wrong and right items (-1 where the kind has none)."""

    __slots__ = ("sentence", "kind", "position", "ordinal", "wrong", "right")

    def __init__(self, *columns):
        for name, column in zip(self.__slots__, columns):
            setattr(self, name, np.asarray(column, dtype=np.int64).reshape(-1))

    @classmethod
    def rows(cls, rows: list[tuple[int, ...]]) -> _EditArrays:
        """From one tuple per edit."""
        return cls(*(list(zip(*rows)) or [()] * len(cls.__slots__)))

    @classmethod
    def join(cls, *parts: _EditArrays) -> _EditArrays:
        return cls(*(np.concatenate([getattr(p, name) for p in parts]) for name in cls.__slots__))

    def keys(self, shape: tuple[int, int]) -> np.ndarray:
        """One integer per slot (sentence, kind, position, ordinal), ordinals capped at ``shape[1] - 1``."""
        positions, ordinals = shape
        return ((self.sentence * len(EDIT_KINDS) + self.kind) * positions + self.position) * ordinals + np.minimum(
            self.ordinal, ordinals - 1
        )


def _edit_rows(sources, predictions, references, ignore_index: int):
    """The three columns for the alignment: strings as given, token ids as int64 arrays (``ignore_index`` entries
    dropped as :func:`sentence_counts` says), after checking that no source or reference is empty."""
    is_text = check_inputs(sources, predictions, references)
    if is_text:
        rows = list(sources), list(predictions), list(references)
    else:
        rows = [], [], []
        for i in range(len(sources)):
            source, prediction, reference = (
                _id_array(name, i, column[i])
                for name, column in (("sources", sources), ("predictions", predictions), ("references", references))
            )
            if len(source) == len(reference):  # as without alignment
                keep = reference != ignore_index
                source, reference = source[keep], reference[keep]
                same_length = len(prediction) == len(keep)
                prediction = prediction[keep] if same_length else prediction[prediction != ignore_index]
            else:
                prediction, reference = prediction[prediction != ignore_index], reference[reference != ignore_index]
            for column, row in zip(rows, (source, prediction, reference)):
                column.append(row)
    for name, column in (("sources", rows[0]), ("references", rows[2])):
        empty = next((i for i, row in enumerate(column) if len(row) == 0), None)
        if empty is not None:
            raise ValueError(f"{name}[{empty}] is empty" + ("" if is_text else " after dropping ignore_index entries"))
    return (*rows, is_text)


def _edit_counts(sources, predictions, references, metadata, train_pairs, ignore_index: int):
    """The columns and breakdown columns of :func:`sentence_counts` with ``alignment``."""
    src, pred, ref, is_text = _edit_rows(sources, predictions, references, ignore_index)
    n = len(src)
    ls, lp, lr = _lengths(src), _lengths(pred), _lengths(ref)
    # Sentences whose reference and prediction are both read position by position (the lemma of
    # csc_hf.edits.shifted_matches: at most 1 changed item found nearby in the source) are counted here at once,
    # the others aligned one by one.
    same = np.flatnonzero((ls == lr) & (ls == lp))
    rows = same.tolist()
    s_items, p_items, r_items = (
        _codepoints("".join([column[i] for i in rows]))
        if is_text
        else np.concatenate([column[i] for i in rows] or [np.zeros(0, dtype=np.int64)])
        for column in (src, pred, ref)
    )
    lengths = ls[same]
    row_starts = np.concatenate(([0], np.cumsum(lengths)))
    fast = np.ones(len(same), dtype=bool)
    changes = []
    for items in (r_items, p_items):
        at = np.flatnonzero(s_items != items)
        row = np.searchsorted(row_starts, at, side="right") - 1
        position = at - row_starts[row]
        reach = (np.bincount(row, minlength=len(same)) - 1) // 2
        fast &= reach <= _REACH
        nearby = np.zeros(len(at), dtype=bool)
        for d in [*range(-_REACH, 0), *range(1, _REACH + 1)]:
            inside = np.flatnonzero((position + d >= 0) & (position + d < lengths[row]) & (abs(d) <= reach[row]))
            nearby[inside] |= s_items[at[inside] + d] == items[at[inside]]
        fast &= np.bincount(row[nearby], minlength=len(same)) <= 1
        changes.append((at, row, position))
    is_fast = np.zeros(n, dtype=bool)
    is_fast[same[fast]] = True

    def substitutions(items: np.ndarray, at: np.ndarray, row: np.ndarray, position: np.ndarray) -> _EditArrays:
        keep = fast[row]
        at, k = at[keep], int(keep.sum())
        return _EditArrays(same[row[keep]], np.zeros(k), position[keep], np.zeros(k), s_items[at], items[at])

    slow_gold, slow_pred = [], []
    item = ord if is_text else int
    for i in np.flatnonzero(~is_fast).tolist():
        source = src[i] if is_text else src[i].tolist()
        gold = edit_alignment(source, ref[i] if is_text else ref[i].tolist())
        guess = edit_alignment(source, pred[i] if is_text else pred[i].tolist(), gold)
        for out, edits in ((slow_gold, gold), (slow_pred, guess)):
            out += [
                (
                    i,
                    EDIT_KINDS.index(e.kind),
                    e.position,
                    o,
                    -1 if e.wrong is None else item(e.wrong),
                    -1 if e.right is None else item(e.right),
                )
                for e, (_, _, o) in zip(edits, slots(edits))
            ]
    gold = _EditArrays.join(substitutions(r_items, *changes[0]), _EditArrays.rows(slow_gold))
    guess = _EditArrays.join(substitutions(p_items, *changes[1]), _EditArrays.rows(slow_pred))
    shape = (int(max(ls.max(), 0)) + 2, int(gold.ordinal.max(initial=0)) + 2)
    if n * len(EDIT_KINDS) * shape[0] * shape[1] >= 2**62:
        raise ValueError(f"{n} sentences of up to {shape[0] - 2} items: too many to score at once; score in parts")
    gold_keys, guess_keys = gold.keys(shape), guess.keys(shape)
    order = np.argsort(gold_keys, kind="stable")
    gold_keys_sorted = gold_keys[order]
    found = np.minimum(np.searchsorted(gold_keys_sorted, guess_keys), max(len(order) - 1, 0))
    detected = (gold_keys_sorted[found] == guess_keys) if len(order) else np.zeros(len(guess_keys), dtype=bool)
    matched = order[found[detected]]  # the gold edit each detection hit matches
    gold_detected = np.zeros(len(gold_keys), dtype=bool)
    gold_corrected = np.zeros(len(gold_keys), dtype=bool)
    gold_detected[matched] = True
    gold_corrected[matched] = gold.right[matched] == guess.right[detected]

    def per_sentence(rows: np.ndarray) -> np.ndarray:
        return np.bincount(rows, minlength=n).astype(np.int64)

    gold_errors, changes = per_sentence(gold.sentence), per_sentence(guess.sentence)
    det_hits, cor_hits = per_sentence(gold.sentence[gold_detected]), per_sentence(gold.sentence[gold_corrected])
    # the edit sets are equal  <=>  as many edits as gold edits and every gold edit hit
    det_exact = (gold_errors == changes) & (det_hits == gold_errors)
    cor_exact = (gold_errors == changes) & (cor_hits == gold_errors)
    indels = per_sentence(guess.sentence[guess.kind != EDIT_KINDS.index(SUBSTITUTION)])
    counts = _sentence_columns(gold_errors, changes, det_hits, cor_hits, det_exact, cor_exact, indels, lp, ls)

    def group(name: str, mask: np.ndarray) -> dict[str, np.ndarray]:
        return {
            f"{name}_gold_errors": per_sentence(gold.sentence[mask]),
            f"{name}_det_hits": per_sentence(gold.sentence[mask & gold_detected]),
            f"{name}_cor_hits": per_sentence(gold.sentence[mask & gold_corrected]),
        }

    groups: dict[str, np.ndarray] = {}
    for code, kind in enumerate(EDIT_KINDS):
        groups.update(group(kind, gold.kind == code))
        groups[f"{kind}_changes"] = per_sentence(guess.sentence[guess.kind == code])
    if metadata is not None:
        types = _typed_edits(metadata, n, gold_keys_sorted, order, shape)
        for code, name in enumerate(ERROR_TYPES):
            groups.update(group(f"type_{name}", types == code))
    if train_pairs is not None:
        substitution = gold.kind == EDIT_KINDS.index(SUBSTITUTION)
        seen = substitution & np.isin(_pair_keys(gold.right, gold.wrong), _train_keys(train_pairs, is_text))
        groups.update({**group("seen", seen), **group("unseen", substitution & ~seen)})
    return counts, groups


def _typed_edits(metadata, n: int, gold_keys: np.ndarray, order: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """The type code of each gold edit (in the order of the gold arrays) from ``metadata``, validated: every gold edit
    listed once, with its kind (default substitution), position and, for missing items, order."""
    per_example = _metadata_errors(metadata, n)
    type_codes = {name: code for code, name in enumerate(ERROR_TYPES)}
    columns: list[list[int]] = [[], [], [], [], []]  # sentence, kind, position, ordinal, type
    for i, errors in enumerate(per_example):
        listed = []
        for error in errors or ():
            if not isinstance(error, Mapping):
                raise ValueError(f"metadata[{i}]: each error must be a mapping with 'position' and 'type'")
            position, kind, error_type = error.get("position"), error.get("kind", SUBSTITUTION), error.get("type")
            integer = isinstance(position, (int, np.integer)) and not isinstance(position, bool)
            if not integer or position < 0:
                raise ValueError(f"metadata[{i}]: error position {position!r} is not a source position")
            if kind not in EDIT_KINDS:
                raise ValueError(f"metadata[{i}]: error kind {kind!r} at position {position} is not in {EDIT_KINDS}")
            if error_type not in type_codes:
                raise ValueError(
                    f"metadata[{i}]: error type {error_type!r} at position {position} is not in {ERROR_TYPES}"
                )
            listed.append((kind, int(position), type_codes[error_type]))
        listed.sort(key=lambda e: (e[1], e[0] != MISSING))  # source order, as the alignment lists them (stable)
        for j, (kind, position, code) in enumerate(listed):
            ordinal = sum(1 for k, p, _ in listed[:j] if (k, p) == (MISSING, position)) if kind == MISSING else 0
            for column, value in zip(columns, (i, EDIT_KINDS.index(kind), position, ordinal, code)):
                column.append(value)
    listed = _EditArrays(columns[0], columns[1], columns[2], columns[3], columns[4], columns[4])
    keys = listed.keys(shape)
    found = np.minimum(np.searchsorted(gold_keys, keys), max(len(gold_keys) - 1, 0))
    known = (
        (gold_keys[found] == keys) & (listed.position < shape[0] - 1) & (listed.ordinal < shape[1] - 1)
        if len(gold_keys)
        else np.zeros(len(keys), dtype=bool)
    )
    if not known.all():
        bad = _first(~known)
        raise ValueError(
            f"metadata[{listed.sentence[bad]}]: {EDIT_KINDS[listed.kind[bad]]} at position "
            f"{listed.position[bad]} is not a gold error (the alignment of source and reference)"
        )
    if len(np.unique(keys)) != len(keys) or len(keys) != len(gold_keys):
        listed_per = np.bincount(listed.sentence, minlength=n)
        gold_per = np.bincount(gold_keys // (len(EDIT_KINDS) * shape[0] * shape[1]), minlength=n)
        bad = _first(listed_per != gold_per)
        raise ValueError(
            f"metadata[{bad}] lists {listed_per[bad]} errors but the alignment of source and reference "
            f"has {gold_per[bad]}"
        )
    types = np.full(len(gold_keys), -1, dtype=np.int64)
    types[order[found]] = listed.wrong  # the type codes travelled in the ``wrong`` column
    return types


def _position_group_counts(name: str, flat_positions: np.ndarray, text: _Encoded) -> dict[str, np.ndarray]:
    """Per-sentence gold errors, detection hits and correction hits among ``flat_positions``."""
    n = len(text.lengths)
    sentence = np.searchsorted(text.starts, flat_positions, side="right") - 1
    detected = text.source[flat_positions] != text.prediction[flat_positions]
    corrected = text.prediction[flat_positions] == text.reference[flat_positions]
    return {
        f"{name}_gold_errors": np.bincount(sentence, minlength=n).astype(np.int64),
        f"{name}_det_hits": np.bincount(sentence[detected], minlength=n).astype(np.int64),
        f"{name}_cor_hits": np.bincount(sentence[corrected], minlength=n).astype(np.int64),
    }


def _metadata_errors(metadata, n: int) -> list[Any]:
    """Each example's list of errors (mappings) from per-example or columnar ``metadata``."""
    if isinstance(metadata, Mapping):
        if "errors" not in metadata:
            raise ValueError("columnar metadata needs an 'errors' column")
        per_example = list(metadata["errors"])
    else:
        per_example = [_errors_of(i, example) for i, example in enumerate(metadata)]
    if len(per_example) != n:
        raise ValueError(f"metadata has {len(per_example)} examples but there are {n} sentences")
    return [
        [dict(zip(errors, values)) for values in zip(*errors.values())] if isinstance(errors, Mapping) else errors
        for errors in per_example
    ]


def _typed_errors(metadata, text: _Encoded) -> tuple[np.ndarray, np.ndarray]:
    """Flat positions and type codes of the gold errors listed in ``metadata``, validated."""
    n = len(text.lengths)
    per_example = _metadata_errors(metadata, n)
    type_codes = {name: code for code, name in enumerate(ERROR_TYPES)}
    positions: list[int] = []
    codes: list[int] = []
    gold = text.source != text.reference
    for i, errors in enumerate(per_example):
        start, length = int(text.starts[i]), int(text.lengths[i])
        listed = set()
        for error in errors or ():
            if not isinstance(error, Mapping):
                raise ValueError(f"metadata[{i}]: each error must be a mapping with 'position' and 'type'")
            position, kind = error.get("position"), error.get("type")
            integer = isinstance(position, (int, np.integer)) and not isinstance(position, bool)
            if not integer or not 0 <= position < length:
                raise ValueError(f"metadata[{i}]: error position {position!r} is outside the source ({length} long)")
            if kind not in type_codes:
                raise ValueError(f"metadata[{i}]: error type {kind!r} at position {position} is not in {ERROR_TYPES}")
            if not gold[start + position] or position in listed:
                raise ValueError(f"metadata[{i}]: position {position} is not a gold error or is listed twice")
            listed.add(position)
            positions.append(start + int(position))
            codes.append(type_codes[kind])
        n_gold = int(gold[start : start + length].sum())
        if len(listed) != n_gold:
            raise ValueError(
                f"metadata[{i}] lists {len(listed)} errors but source and reference differ at {n_gold} positions"
            )
    return np.asarray(positions, dtype=np.int64), np.asarray(codes, dtype=np.int64)


def _errors_of(i: int, example: Any) -> Any:
    if not isinstance(example, Mapping) or "errors" not in example:
        raise ValueError(f"metadata[{i}] must be a mapping with an 'errors' list")
    return example["errors"]


def _pair_keys(right: np.ndarray, wrong: np.ndarray) -> np.ndarray:
    return (right.astype(np.uint64) << np.uint64(32)) | wrong.astype(np.uint64)


def _train_keys(train_pairs: Iterable[tuple[Any, Any]], is_text: bool) -> np.ndarray:
    items: list[int] = []
    for pair in train_pairs:
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(f"train_pairs must hold (right, wrong) pairs, got {pair!r}")
        for item in pair:
            if is_text and not (isinstance(item, str) and len(item) == 1):
                raise ValueError(f"train pair {pair!r}: with string input, pairs are single characters")
            if not is_text and (isinstance(item, bool) or not isinstance(item, (int, np.integer))):
                raise ValueError(f"train pair {pair!r}: with token-id input, pairs are token ids")
            items.append(ord(item) if is_text else int(item))
    pairs = np.asarray(items, dtype=np.int64).reshape(-1, 2)
    return _pair_keys(pairs[:, 0], pairs[:, 1])


def _ratio(numerator: Any, denominator: Any) -> Any:
    numerator = np.asarray(numerator, dtype=np.float64)
    denominator = np.asarray(denominator, dtype=np.float64)
    zeros = np.zeros(np.broadcast(numerator, denominator).shape)
    ratio = np.divide(numerator, denominator, out=zeros, where=denominator > 0)
    return ratio if ratio.ndim else float(ratio)


def _prf(prefix: str, tp: Any, predicted: Any, gold: Any) -> dict[str, Any]:
    precision, recall = _ratio(tp, predicted), _ratio(tp, gold)
    total = np.asarray(precision) + np.asarray(recall)
    return {
        f"{prefix}_p": precision,
        f"{prefix}_r": recall,
        f"{prefix}_f1": _ratio(2 * np.asarray(precision) * np.asarray(recall), total),
    }


def _char_recalls(t: Mapping[str, Any], name: str) -> dict[str, Any]:
    return {
        f"{name}_char_det_r": _ratio(t[f"{name}_det_hits"], t[f"{name}_gold_errors"]),
        f"{name}_char_cor_r": _ratio(t[f"{name}_cor_hits"], t[f"{name}_gold_errors"]),
    }


def _summary_columns(totals: Mapping[str, Any]) -> list[tuple[str, str]]:
    pairs = list(_SUMMARY)
    pairs += [(f"{name}_n_sentences", f"{name}_error_sentences") for name, _, _ in _NERR_BUCKETS]
    pairs += [(f"{name}_n_errors", f"{name}_gold_errors") for name in _CHAR_GROUPS if f"{name}_gold_errors" in totals]
    for kind in EDIT_KINDS:
        if f"{kind}_changes" in totals:
            pairs += [(f"{kind}_n_errors", f"{kind}_gold_errors"), (f"{kind}_n_changes", f"{kind}_changes")]
    return pairs


# --------------------------------------------------------------------------- the headline scores, in words

HEADLINE = ("char_cor_f1", "char_det_f1", "sent_cor_f1", "sent_det_f1", "fpr")
"""The scores that stand for a model: a model card's model-index and ``csc-bench evaluate``'s table."""
REPORTED = ("char_cor_f1", "sent_cor_f1")
"""The character- and sentence-level correction F1: the study's report and its paired comparisons."""
MAIN_SCORES = (
    *(f"{level}_{task}_{part}" for level in ("sent", "char") for task in ("det", "cor") for part in ("p", "r", "f1")),
    "fpr",
    "sent_acc",
)
"""Every top-line score of :func:`score`, in reading order (``csc-bench score``'s main table)."""
_WORDS = {
    "sent": "sentence-level",
    "char": "character-level",
    "det": "detection",
    "cor": "correction",
    "p": "P",
    "r": "R",
    "f1": "F1",
    "fpr": "false positive rate",
    "sent_acc": "sentence accuracy",
}


def score_name(key: str) -> str:
    """A score key in words: ``char_cor_f1`` -> ``character-level correction F1``, ``fpr`` -> ``false positive
    rate``."""
    if key in _WORDS:
        return _WORDS[key]
    return " ".join(_WORDS[part] for part in key.split("_"))
