"""Resampling statistics over sentences: bootstrap confidence intervals and paired tests.

Everything here works on *per-sentence count tables*: a mapping from a column name to a
1-D integer array with one entry per sentence (see :func:`csc_hf.scoring.sentence_counts`).
A *statistic* maps the column totals of such a table to named scores.  Because every CSC
score is a function of summed counts, a resample never rescores text: it only re-weights
the rows of the table.  The statistic receives totals as arrays of shape ``(k,)`` (``k``
resamples at once) and must work elementwise, as :func:`csc_hf.scoring.scores_from_totals`
does.

Intervals are percentile bootstrap intervals (Efron & Tibshirani, 1993).  The paired test
resamples the same sentences for both systems; its p-value is two-sided and comes either
from an approximate randomization (permutation) test that swaps the two systems' outputs
sentence by sentence (Riezler & Maxwell, 2005), or from the paired bootstrap distribution
shifted to the null (Berg-Kirkpatrick et al., 2012).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping

import numpy as np

RESAMPLES = 1000  # the default number of bootstrap resamples, everywhere in csc_hf
CONFIDENCE = 0.95  # the default level of every interval

__all__ = ["Statistic", "bootstrap_ci", "paired_test"]

Statistic = Callable[[Mapping[str, np.ndarray]], Mapping[str, "np.ndarray | float"]]
"""Maps column totals (scalars or arrays of shape ``(k,)``) to named scores of the same shape."""

_CHUNK_CELLS = 1 << 22  # resamples x sentences handled per step; bounds memory to ~32 MiB
_TIE_TOLERANCE = 1e-12


def bootstrap_ci(
    counts: Mapping[str, np.ndarray],
    statistic: Statistic,
    *,
    n_resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> dict[str, tuple[float, float]]:
    """Percentile bootstrap interval of every score, resampling sentences with replacement.

    Returns ``{score name: (low, high)}``.  The same seed gives the same intervals.
    """
    _check_resampling(n_resamples, confidence)
    names, matrix = _table(counts)
    rng = np.random.default_rng(seed)
    samples = _collect(
        statistic(_totals(names, weights @ matrix)) for weights in _bootstrap_weights(rng, matrix.shape[0], n_resamples)
    )
    return {key: _interval(values, confidence) for key, values in samples.items()}


def paired_test(
    counts_a: Mapping[str, np.ndarray],
    counts_b: Mapping[str, np.ndarray],
    statistic: Statistic,
    *,
    method: str = "permutation",
    n_resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> dict[str, dict[str, float]]:
    """Compare two systems scored on the same sentences (row ``i`` of both tables is sentence ``i``).

    Returns, for every score, ``{"a", "b", "delta", "ci_low", "ci_high", "p_value"}`` where
    ``delta = a - b``, the interval is a paired percentile bootstrap interval of ``delta``, and
    ``p_value`` is two-sided for the null hypothesis that both systems are equally good:
    ``method="permutation"`` (default) swaps the systems' outputs per sentence at random,
    ``method="bootstrap"`` uses the paired bootstrap distribution of ``delta`` shifted to zero.
    Both p-values are ``(1 + #extreme) / (1 + n_resamples)``, so never exactly 0.
    """
    if method not in ("permutation", "bootstrap"):
        raise ValueError(f"method must be 'permutation' or 'bootstrap', got {method!r}")
    _check_resampling(n_resamples, confidence)
    names, matrix_a = _table(counts_a)
    names_b, matrix_b = _table(counts_b)
    if names_b != names or matrix_b.shape != matrix_a.shape:
        raise ValueError(
            "counts_a and counts_b must have the same columns and the same number of sentences "
            f"(got {matrix_a.shape[0]} and {matrix_b.shape[0]} sentences)"
        )
    scores_a = _as_floats(statistic(_totals(names, matrix_a.sum(axis=0))))
    scores_b = _as_floats(statistic(_totals(names, matrix_b.sum(axis=0))))
    observed = {key: scores_a[key] - scores_b[key] for key in scores_a}

    rng = np.random.default_rng(seed)
    n = matrix_a.shape[0]
    boot = _collect(
        _difference(statistic, names, weights @ matrix_a, weights @ matrix_b)
        for weights in _bootstrap_weights(rng, n, n_resamples)
    )
    if method == "permutation":
        swap_gain = matrix_b - matrix_a
        total_a, total_b = matrix_a.sum(axis=0), matrix_b.sum(axis=0)
        null = _collect(
            _difference(statistic, names, total_a + swaps @ swap_gain, total_b - swaps @ swap_gain)
            for swaps in _swap_masks(rng, n, n_resamples)
        )
    else:
        null = {key: values - observed[key] for key, values in boot.items()}

    result = {}
    for key, delta in observed.items():
        extreme = int(np.count_nonzero(np.abs(null[key]) >= abs(delta) - _TIE_TOLERANCE))
        low, high = _interval(boot[key], confidence)
        result[key] = {
            "a": scores_a[key],
            "b": scores_b[key],
            "delta": delta,
            "ci_low": low,
            "ci_high": high,
            "p_value": (1 + extreme) / (1 + n_resamples),
        }
    return result


def check_resamples(value: object, label: str = "bootstrap", minimum: int = 0) -> int:
    """``value`` as a number of resamples (a whole number, at least ``minimum``; a bootstrap of 0 computes no
    intervals), else a ValueError naming ``label``: the one check of every resample count in csc_hf."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        zero = " (0: no intervals)" if minimum == 0 else ""
        raise ValueError(f"{label} must be a whole number >= {minimum}{zero}, got {value!r}")
    return int(value)


def _check_resampling(n_resamples: int, confidence: float) -> None:
    check_resamples(n_resamples, "n_resamples", 1)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence!r}")


def _table(counts: Mapping[str, np.ndarray]) -> tuple[tuple[str, ...], np.ndarray]:
    """Stack the count columns into a float64 matrix (exact for integer counts below 2**53)."""
    if not counts:
        raise ValueError("the count table has no columns")
    names = tuple(counts)
    columns = [np.asarray(counts[name]) for name in names]
    lengths = {column.shape for column in columns}
    if len(lengths) != 1 or columns[0].ndim != 1 or columns[0].shape[0] == 0:
        raise ValueError("every count column must be a non-empty 1-D array of the same length")
    return names, np.stack(columns, axis=1).astype(np.float64)


def _totals(names: tuple[str, ...], totals: np.ndarray) -> dict[str, np.ndarray]:
    """Name the last axis of ``totals`` (shape ``(K,)`` or ``(k, K)``)."""
    return {name: totals[..., j] for j, name in enumerate(names)}


def _difference(
    statistic: Statistic, names: tuple[str, ...], totals_a: np.ndarray, totals_b: np.ndarray
) -> dict[str, np.ndarray]:
    scores_a = statistic(_totals(names, totals_a))
    scores_b = statistic(_totals(names, totals_b))
    return {key: np.asarray(scores_a[key]) - np.asarray(scores_b[key]) for key in scores_a}


def _chunks(n: int, n_resamples: int) -> Iterator[int]:
    step = max(1, _CHUNK_CELLS // n)
    for start in range(0, n_resamples, step):
        yield min(step, n_resamples - start)


def _bootstrap_weights(rng: np.random.Generator, n: int, n_resamples: int) -> Iterator[np.ndarray]:
    """Yield ``(k, n)`` matrices: how often each sentence is drawn in each resample."""
    for k in _chunks(n, n_resamples):
        draws = rng.integers(0, n, size=(k, n)) + (np.arange(k) * n)[:, None]
        yield np.bincount(draws.ravel(), minlength=k * n).reshape(k, n).astype(np.float64)


def _swap_masks(rng: np.random.Generator, n: int, n_resamples: int) -> Iterator[np.ndarray]:
    """Yield ``(k, n)`` 0/1 matrices: which sentences swap systems in each permutation."""
    for k in _chunks(n, n_resamples):
        yield rng.integers(0, 2, size=(k, n)).astype(np.float64)


def _collect(batches: Iterable[Mapping[str, np.ndarray | float]]) -> dict[str, np.ndarray]:
    collected: dict[str, list[np.ndarray]] = {}
    for batch in batches:
        for key, values in batch.items():
            collected.setdefault(key, []).append(np.atleast_1d(np.asarray(values, dtype=np.float64)))
    return {key: np.concatenate(parts) for key, parts in collected.items()}


def _interval(values: np.ndarray, confidence: float) -> tuple[float, float]:
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(values, [tail, 1.0 - tail])
    return float(low), float(high)


def _as_floats(scores: Mapping[str, np.ndarray | float]) -> dict[str, float]:
    return {key: float(value) for key, value in scores.items()}
