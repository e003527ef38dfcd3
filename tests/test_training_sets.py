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


def test_error_groups():
    from csc_hf.dataset_stats import ERROR_GROUPS, error_groups, training_ngrams

    train = ["我们今天去学校上课。"]
    sources = ["我门今天去学校上课。", "他们明天去公圆玩。"]
    targets = ["我们今天去学校上课。", "他们明天去公园玩。"]
    groups = error_groups(sources, targets, training_ngrams(train, 3), known=set("我们今天去学校上课他明公玩。"), n=3)
    assert [ERROR_GROUPS[g] for g in groups] == ["seen context, known", "unseen context, unknown"]
    # known: the correct character and n - 1 characters either side of it, within its sentence
    every = set("我们今天去学校上课他明公园玩。")

    def kinds(known, n=3):
        return [ERROR_GROUPS[g] for g in error_groups(sources, targets, training_ngrams(train, n), known, n)]

    assert kinds(every) == ["seen context, known", "unseen context, known"]
    assert kinds(every - {"。"}) == ["seen context, known", "unseen context, unknown"]  # 2 after 园, none near 们
    assert kinds(every - {"天"}) == ["seen context, unknown", "unseen context, known"]  # 2 after 们, 3 before 园
    assert kinds(every - {"去"}) == ["seen context, known", "unseen context, unknown"]  # 3 after 们: outside at n = 3
    assert kinds(every - {"去"}, n=4) == ["seen context, unknown", "unseen context, unknown"]


# ---- the preset's training-distribution stage and base: ----------------------------------------------------------


def test_ablations_preset_is_cpu_for_bert_and_plome():
    from csc_hf.study.preset import Preset

    cpu, ablations = Preset.load("cpu"), Preset.load("ablations")
    assert ablations.variants == ["bert", "plome"] and not ablations.augmentation
    for key in ("bench_params", "seeds", "tests", "model", "pretrain", "finetune", "keep_bias_grid", "bootstrap"):
        assert getattr(ablations, key) == getattr(cpu, key), key  # the same stages: a cpu run folder is reused
    study = ablations.training_sets_study
    assert study.variants == ("bert", "plome") and set(study.sets) == {"pe01", "pe10", "pe20", "phonetic", "graphic"}
    assert set(DOMAINS) <= set(cpu.tests)


@pytest.mark.parametrize(
    "block, message",
    [
        ({"variants": ["bert"], "sets": {"pe10": {"seed": 3}}}, r"\['seed'\] would change the test sets too"),
        ({"variants": ["bert"], "sets": {"Bad Name": {"train_error_prob": 0.1}}}, "lower-case letters"),
        ({"variants": ["bert"], "sets": {"pe10": {"train_error_prob": 2.0}}}, "pe10: train_error_prob=2.0 is outside"),
        ({"variants": ["bret"], "sets": {"pe10": {"train_error_prob": 0.1}}}, r"unknown variants \['bret'\]"),
        ({"variants": ["bert"], "sets": {}}, "must map names to parameter changes"),
        ({"variants": ["bert"], "sets": {"x": {}}}, "give the parameters it changes"),
        ({"variant": ["bert"]}, r"unknown keys \['variant'\]"),
        ("pe10", "must be a mapping"),
    ],
)
def test_bad_training_sets_fail_on_load(tmp_path, block, message):
    import yaml

    from csc_hf.study.preset import Preset

    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({"base": "smoke", "training_sets": block}), encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        Preset.load(str(path))


def test_preset_base_chain_and_errors(tmp_path):
    import yaml

    from csc_hf.study.preset import Preset

    (tmp_path / "a.yaml").write_text(yaml.safe_dump({"base": "smoke", "seeds": [3]}), encoding="utf-8")
    (tmp_path / "b.yaml").write_text(yaml.safe_dump({"base": "a.yaml", "bootstrap": 7}), encoding="utf-8")
    preset = Preset.load(str(tmp_path / "b.yaml"))
    smoke = Preset.load("smoke")
    assert (preset.name, preset.seeds, preset.bootstrap, preset.variants) == ("b", [3], 7, smoke.variants)
    # a mapping takes its base's keys under its own (one level deep); an empty one is empty (a stage turned off)
    shorter = {"base": "cpu-small", "pretrain": {"max_steps": 3000}, "model": {"num_hidden_layers": 6}}
    (tmp_path / "g.yaml").write_text(yaml.safe_dump({**shorter, "augmentation": {}}), encoding="utf-8")
    preset, small = Preset.load(str(tmp_path / "g.yaml")), Preset.load("cpu-small")
    assert preset.pretrain == {**small.pretrain, "max_steps": 3000} and small.pretrain["max_steps"] != 3000
    assert preset.model == {**small.model, "num_hidden_layers": 6} and preset.finetune == small.finetune
    assert small.augmentation and not preset.augmentation and preset.training_sets == small.training_sets
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({"base": "d.yaml"}), encoding="utf-8")
    (tmp_path / "d.yaml").write_text(yaml.safe_dump({"base": "c.yaml"}), encoding="utf-8")
    with pytest.raises(ValueError, match="take each other as base"):
        Preset.load(str(tmp_path / "c.yaml"))
    (tmp_path / "e.yaml").write_text(yaml.safe_dump({"base": "nope"}), encoding="utf-8")
    with pytest.raises(FileNotFoundError, match="preset 'nope' not found"):
        Preset.load(str(tmp_path / "e.yaml"))
    (tmp_path / "f.yaml").write_text("- a\n- b\n", encoding="utf-8")
    with pytest.raises(ValueError, match="a preset is a mapping"):
        Preset.load(str(tmp_path / "f.yaml"))


# ---- the analysis: the train x test matrix and the domain drop ---------------------------------------------------


def _record(model, seed, config, split, f1, training_set=None):
    scores = {m: f1 for m in ("char_cor_f1", "sent_cor_f1")}
    scores.update(
        {
            f"{m}_ci_{side}": f1 + d
            for m in ("char_cor_f1", "sent_cor_f1")
            for side, d in (("low", -0.01), ("high", 0.01))
        }
    )
    return {
        "model": model,
        "seed": seed,
        "config": config,
        "split": split,
        "scores": scores,
        **({"training_set": training_set} if training_set else {}),
    }


def _paired(model, seed, name, against, config, split, delta, half=0.01):
    return {
        "model": model,
        "seed": seed,
        "training_set": name,
        "against": against,
        "config": config,
        "split": split,
        "metric": "char_cor_f1",
        "delta": delta,
        "ci_low": delta - half,
        "ci_high": delta + half,
        "a": 0,
        "b": 0,
    }


def test_training_matrix_answers_the_three_questions():
    from csc_hf.results import GRID_SET, training_matrix

    sets = {"pe20": {"train_error_prob": 0.2}, "phonetic": {"train_confusion": "S_train_phonetic"}}
    grid, records, paired = [], [], []
    for seed in (0, 1):
        for model in ("bert", "plome"):
            grid += [_record(model, seed, "probs", "pe20", 0.5), _record(model, seed, "graphic", "test", 0.6)]
            records += [
                _record(model, seed, "probs", "pe20", 0.55, "pe20"),
                _record(model, seed, "graphic", "test", 0.4, "phonetic"),
                _record(model, seed, "probs", "pe20", 0.5, "phonetic"),
                _record(model, seed, "graphic", "test", 0.6, "pe20"),
            ]
            paired += [
                _paired(model, seed, "pe20", "grid", "probs", "pe20", 0.05),
                _paired(model, seed, "phonetic", "grid", "graphic", "test", -0.2),
            ]
        paired += [
            _paired("plome", seed, "phonetic", "bert", "graphic", "test", 0.08),
            _paired("plome", seed, None, "bert", "graphic", "test", 0.01),
        ]
    results = {
        "params": {"bench_params": {}},
        "training_sets": {"sets": sets, "variants": ["bert", "plome"], "records": records, "paired": paired},
    }
    matrix = training_matrix(results, grid, {"probs/pe05": 0.05, "probs/pe20": 0.2})
    assert matrix.scores["bert", GRID_SET, "graphic"].mean == 0.6
    assert matrix.scores["bert", "phonetic", "graphic"].mean == 0.4
    assert [c.outcome for c in matrix.questions["pe"]] == ["expected", "expected"]  # pe05: nearest is the grid's own
    assert [c.outcome for c in matrix.questions["type"]] == ["expected", "expected"]
    assert [c.outcome for c in matrix.questions["fusion"]] == ["expected"]
    assert matrix.verdicts == {"pe": "supported", "type": "supported", "fusion": "supported"}
    assert matrix.gains["plome", GRID_SET, "graphic"][0] == pytest.approx(0.01)


def test_domain_drop_decomposes_exactly():
    from csc_hf.results import domain_shift

    def entry(config, split, groups):
        return {"model": "bert", "seed": 0, "config": config, "split": split, "groups": groups}

    test = {"seen context, known": [80, 60], "unseen context, known": [20, 10]}
    domain = {"seen context, known": [40, 20], "unseen context, known": [60, 18]}
    (drop,) = domain_shift([entry("test", "test", test), entry("domain_reviews", "test", domain)])
    assert drop.recall == pytest.approx((0.7, 0.38))
    assert drop.composition + drop.within == pytest.approx(0.7 - 0.38)
    # composition: (0.8 - 0.4) * 0.75 + (0.2 - 0.6) * 0.5 = 0.1
    assert drop.composition == pytest.approx(0.1) and drop.domain == "domain_reviews" and drop.reference == "test"


def test_domain_unseen_splits_drop_from_the_main_unseen_splits():
    from csc_hf.results import domain_shift

    def entry(config, split, groups):
        return {"model": "bert", "seed": 0, "config": config, "split": split, "groups": groups}

    main_test = {"seen context, known": [90, 80], "unseen context, known": [10, 5]}
    main_unseen = {"seen context, known": [50, 10], "unseen context, known": [50, 5]}
    domain_unseen = {"seen context, known": [20, 2], "unseen context, known": [80, 4]}
    entries = [entry("test", "test", main_test), entry("unseen_k", "test", main_unseen)]
    (drop,) = domain_shift([*entries, entry("domain_hsk", "unseen_k", domain_unseen)])
    assert drop.domain == "domain_hsk/unseen_k" and drop.reference == "unseen_k"
    assert drop.recall == pytest.approx((0.15, 0.06))  # against the main unseen_k (0.15), not the main test (0.85)
    assert drop.composition + drop.within == pytest.approx(0.15 - 0.06)
    # without the main split of the same controls there is nothing to compare with
    assert domain_shift([entry("test", "test", main_test), entry("domain_hsk", "unseen_k", domain_unseen)]) == []


def test_each_domain_split_is_compared_with_the_main_config_of_the_same_controls():
    from csc_hf.benchmark.configs import CONFIGS, DOMAINS, domain_reference

    for config in DOMAINS:
        for spec in CONFIGS[config].splits:
            (reference,) = CONFIGS[domain_reference(spec.split)].splits
            assert (reference.confusion, reference.error_prob) == (spec.confusion, spec.error_prob), (config, spec)
