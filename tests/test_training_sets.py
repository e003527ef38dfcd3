"""The training distribution as benchmark parameters (train_error_prob, train_confusion) and the domain configs."""

import numpy as np
import pytest

from csc_hf import corpus
from csc_hf.benchmark import CONFIGS, TEST_CONFIGS
from csc_hf.benchmark.configs import DOMAINS, splits_of
from csc_hf.benchmark.plan import TRAIN_CONFUSIONS, BenchParams, Plan, input_fingerprint, plan_for
from csc_hf.corruption import ERROR_TYPES, unpack

# the test sets that depend on the generated training set: seen pairs and seen contexts are the training set's own
FROM_TRAINING = ("seen", "scontext")


def _same(a, b) -> bool:
    return (
        np.array_equal(a.target.codes, b.target.codes)
        and np.array_equal(a.target.offsets, b.target.offsets)
        and np.array_equal(a.corruption.source.codes, b.corruption.source.codes)
    )


@pytest.mark.parametrize(
    "changes",
    [
        {"train_error_prob": 0.2},
        {"train_confusion": "S_train_phonetic"},
        {"train_error_prob": 0.01, "train_confusion": "S_train_graphic"},
    ],
)
def test_training_distribution_changes_the_training_set_only(small_params, changes):
    base = plan_for(BenchParams(**small_params))
    varied = plan_for(BenchParams(**small_params, **changes))
    assert varied.division.train.pairs() == base.division.train.pairs()
    for name in TEST_CONFIGS:
        if name in FROM_TRAINING or name == "sighan15":
            continue
        for spec in splits_of(name, base.params.probs):
            assert _same(base.examples(spec), varied.examples(spec)), (name, spec.split)
    for spec in CONFIGS["train"].splits:
        assert not _same(base.examples(spec), varied.examples(spec)), spec.split


@pytest.mark.parametrize("confusion", TRAIN_CONFUSIONS)
def test_train_and_validation_follow_train_confusion_and_p_e(small_params, confusion):
    plan = plan_for(BenchParams(**small_params, train_error_prob=0.2, train_confusion=confusion))
    table = plan.subset(confusion).table
    allowed = {
        "S_train": {"phonetic", "graphic", "both"},
        "S_train_phonetic": {"phonetic", "both"},
        "S_train_graphic": {"graphic", "both"},
    }[confusion]
    for spec in CONFIGS["train"].splits:
        examples = plan.examples(spec)
        mask = examples.corruption.error_mask
        assert {ERROR_TYPES[t] for t in examples.corruption.error_types[mask]} <= allowed
        pairs = set(zip(examples.target.codes[mask].tolist(), examples.corruption.source.codes[mask].tolist()))
        assert all(chr(w) in plan.subset(confusion)[chr(r)] for r, w in pairs)
        keys = table.key_index(examples.target.codes) >= 0  # the characters that can err
        assert abs(mask.sum() / keys.sum() - 0.2) < 0.03, spec.split
    assert plan.params.error_prob_of(CONFIGS["test"].splits[0]) == 0.05  # the test sets keep error_prob


def test_train_error_prob_defaults_to_error_prob(small_params):
    params = BenchParams(**small_params, error_prob=0.1)
    assert params.train_p_e == 0.1 and params.error_prob_of(CONFIGS["train"].splits[0]) == 0.1
    assert (
        plan_for(params).train_corruption.source.codes.tobytes()
        == plan_for(
            BenchParams(**small_params, error_prob=0.1, train_error_prob=0.1)
        ).train_corruption.source.codes.tobytes()
    )


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"train_confusion": "S_unseen_k"}, "train_confusion='S_unseen_k'"),
        ({"train_error_prob": 1.5}, "train_error_prob=1.5 is outside"),
        ({"train_error_prob": "0.1"}, "train_error_prob='0.1' must be a number"),
    ],
)
def test_bad_training_distribution_is_named(bad, message):
    with pytest.raises((TypeError, ValueError), match=message):
        BenchParams(**bad).validate()


def test_domain_configs_are_installed_here():
    assert set(DOMAINS) <= set(BenchParams().available_configs())  # the test extras install every domain corpus


@pytest.mark.parametrize("config", list(DOMAINS))
def test_domain_pool(small_params, config):
    params = BenchParams(**small_params)
    plan = plan_for(params)
    pool = plan.domain(config)
    again = Plan(params, input_fingerprint(params)).domain(config)  # a fresh plan: the same sentences
    assert np.array_equal(pool.codes, again.codes) and np.array_equal(pool.offsets, again.offsets)
    sentences = unpack(pool)
    assert len(sentences) == params.n_test == len(set(sentences))
    assert not any(corpus.overlaps(sentences, plan.sentences))  # nothing of the main corpus
    corpus_name = DOMAINS[config][0]
    cleaned = set(corpus.clean_sentences(corpus.corpus_lines(corpus_name)))
    assert set(sentences) <= cleaned
    splits = {spec.split: plan.examples(spec) for spec in splits_of(config, params.probs)}
    assert set(splits) == {"test", "unseen_k", "unseen_v", "clean"}
    assert not splits["clean"].corruption.error_mask.any()
    assert splits["test"].corruption.error_mask.any()
    unseen_k = plan.division.unseen_k
    k = splits["unseen_k"]
    mask = k.corruption.error_mask
    assert all(chr(r) in unseen_k for r in k.target.codes[mask].tolist())


def test_a_missing_domain_corpus_is_left_out(monkeypatch):
    installed = corpus.is_installed
    monkeypatch.setattr(corpus, "is_installed", lambda name: name != "hsk" and installed(name))
    available = BenchParams().available_configs()
    assert "domain_hsk" not in available and "domain_reviews" in available


def test_held_out_covers_every_test_side_pool(small_params):
    plan = plan_for(BenchParams(**small_params))
    held = set(plan.held_out())
    for pool in ("validation", "test"):
        assert set(unpack(plan.pools[pool])) <= held
    for config in DOMAINS:
        assert set(unpack(plan.domain(config))) <= held
    assert set(unpack(plan.sighan15.target)) <= held
    assert not held & set(unpack(plan.pools["train"]))
