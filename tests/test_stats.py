"""Tests of csc_hf.stats: bootstrap intervals and paired tests over count tables."""

from __future__ import annotations

import numpy as np
import pytest

from csc_hf.stats import bootstrap_ci, paired_test


def accuracy(totals):
    return {"acc": totals["right"] / totals["n"]}


def table(right):
    right = np.asarray(right, dtype=np.int64)
    return {"right": right, "n": np.ones_like(right)}


def test_bootstrap_interval_matches_the_normal_approximation():
    rng = np.random.default_rng(3)
    counts = table(rng.random(2000) < 0.3)
    (low, high) = bootstrap_ci(counts, accuracy, n_resamples=2000, seed=0)["acc"]
    mean = counts["right"].mean()
    half_width = 1.96 * np.sqrt(mean * (1 - mean) / 2000)
    assert low < mean < high
    assert (high - low) / 2 == pytest.approx(half_width, rel=0.15)


def test_bootstrap_is_seeded_and_reacts_to_confidence():
    counts = table([1, 0, 1, 1, 0, 1, 0, 1, 1, 1])
    first = bootstrap_ci(counts, accuracy, n_resamples=500, seed=5)
    assert bootstrap_ci(counts, accuracy, n_resamples=500, seed=5) == first
    assert bootstrap_ci(counts, accuracy, n_resamples=500, seed=6) != first
    narrow = bootstrap_ci(counts, accuracy, n_resamples=500, seed=5, confidence=0.5)["acc"]
    assert first["acc"][0] <= narrow[0] <= narrow[1] <= first["acc"][1]


def test_bootstrap_over_several_chunks():
    counts = table(np.arange(100_000) % 4 == 0)  # 41 resamples per chunk
    low, high = bootstrap_ci(counts, accuracy, n_resamples=100, seed=0)["acc"]
    assert low < 0.25 < high and high - low < 0.01


def test_constant_table_gives_a_degenerate_interval():
    assert bootstrap_ci(table([1, 1, 1]), accuracy, n_resamples=50)["acc"] == (1.0, 1.0)


@pytest.mark.parametrize("method", ["permutation", "bootstrap"])
def test_paired_test_detects_a_real_difference(method):
    rng = np.random.default_rng(0)
    a, b = table(rng.random(300) < 0.8), table(rng.random(300) < 0.5)
    result = paired_test(a, b, accuracy, method=method, n_resamples=1000, seed=0)["acc"]
    assert result["a"] == pytest.approx(a["right"].mean()) and result["b"] == pytest.approx(b["right"].mean())
    assert result["delta"] == pytest.approx(result["a"] - result["b"])
    assert result["p_value"] < 0.01
    assert 0 < result["ci_low"] < result["delta"] < result["ci_high"]


@pytest.mark.parametrize("method", ["permutation", "bootstrap"])
def test_paired_test_of_identical_systems(method):
    a = table([1, 0, 1, 1, 0, 0, 1])
    result = paired_test(a, a, accuracy, method=method, n_resamples=200)["acc"]
    assert (result["delta"], result["ci_low"], result["ci_high"], result["p_value"]) == (0.0, 0.0, 0.0, 1.0)


def test_paired_test_without_a_difference_is_not_significant():
    rng = np.random.default_rng(1)
    a, b = table(rng.random(200) < 0.6), table(rng.random(200) < 0.6)
    assert paired_test(a, b, accuracy, n_resamples=1000, seed=0)["acc"]["p_value"] > 0.05


def test_permutation_p_value_by_exhaustive_enumeration():
    """Two discordant sentences: 4 equally likely swaps, 2 as extreme as observed -> p ~ 1/2."""
    a, b = table([1, 1, 0]), table([0, 0, 0])
    p = paired_test(a, b, accuracy, n_resamples=4000, seed=0)["acc"]["p_value"]
    assert p == pytest.approx(0.5, abs=0.03)


def test_bad_arguments():
    a = table([1, 0])
    with pytest.raises(ValueError, match="method"):
        paired_test(a, a, accuracy, method="t-test")
    with pytest.raises(ValueError, match="same columns"):
        paired_test(a, table([1, 0, 1]), accuracy)
    with pytest.raises(ValueError, match="n_resamples"):
        bootstrap_ci(a, accuracy, n_resamples=0)
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_ci(a, accuracy, confidence=0.0)
    with pytest.raises(ValueError, match="non-empty 1-D"):
        bootstrap_ci({"right": np.array([1]), "n": np.array([1, 1])}, accuracy)
    with pytest.raises(ValueError, match="no columns"):
        bootstrap_ci({}, accuracy)
