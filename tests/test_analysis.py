"""Dataset statistics, coverage and context overlap (hand-computed), the loaders, and `csc-bench analyze`."""

import json

import pytest

from csc_hf.cli import main
from csc_hf.corruption import pack
from csc_hf.data import analyze_data, read_data
from csc_hf.dataset_stats import (
    context_overlap,
    coverage,
    dataset_stats,
    error_pairs,
    errors_per_sentence,
    gold_errors,
    split_stats,
)

# Four sentences, five errors: 们→门 twice (phonetic), 气→汽 (phonetic), 他→她 (both), 已→己 (graphic).
SOURCES = ["我门去学校", "他是個好人", "今天天汽很好。", "她门己经走了"]
TARGETS = ["我们去学校", "他是個好人", "今天天气很好。", "他们已经走了"]


def test_statistics_match_hand_computed_values():
    stats = dataset_stats(SOURCES, TARGETS, t2s=lambda text: text.replace("個", "个"))
    assert stats == {
        "sentences": 4,
        "avg_length": 5.75,  # 23 characters
        "sentences_with_errors": 3,
        "errors": 5,
        "errors_per_sentence": 1.25,
        "avg_source_length": 5.75,
        "substitution_errors": 5,
        "missing_errors": 0,
        "redundant_errors": 0,
        "pairs": 4,
        "phonetic_pair_share": 0.5,
        "graphic_pair_share": 0.25,
        "both_pair_share": 0.25,
        "other_pair_share": 0.0,
        "phonetic_error_share": 0.6,
        "graphic_error_share": 0.2,
        "both_error_share": 0.2,
        "other_error_share": 0.0,
        "traditional_share": round(1 / 22, 4),  # 個 among the 22 Han characters (。 is not Han)
    }
    assert dataset_stats(SOURCES, TARGETS)["traditional_share"] is None
    kinds = dataset_stats(SOURCES, TARGETS, judge=lambda right, wrong: "other")
    assert kinds["other_pair_share"] == kinds["other_error_share"] == 1.0


def test_one_split_statistics_function(small_params):
    """``csc-bench build``'s table (``Examples.stats``) and Table 9 (``dataset_stats``) count with ``split_stats``."""
    from csc_hf.benchmark import BenchParams, plan_for
    from csc_hf.benchmark.configs import splits_of
    from csc_hf.corruption import unpack

    plan = plan_for(BenchParams(**small_params))
    examples = plan.examples(splits_of("test", plan.params.probs)[0])
    counts = split_stats(examples.target, errors_per_sentence(examples.target, examples.corruption.error_mask))
    assert counts["errors"] > 0 and counts["sentences"] == 80
    built = examples.stats()
    table9 = dataset_stats(
        unpack(examples.corruption.source), unpack(examples.target), judge=lambda right, wrong: "other"
    )
    assert {k: built[k] for k in counts} == {k: table9[k] for k in counts} == counts
    # an empty sentence counts as one without errors (np.add.reduceat gave it its neighbour's errors)
    assert split_stats(pack(["ab", "", "cd"]), errors_per_sentence(pack(["ab", "", "cd"]), [1, 0, 0, 0])) == {
        "sentences": 3,
        "avg_length": 1.33,
        "sentences_with_errors": 1,
        "errors": 1,
        "errors_per_sentence": 0.3333,
    }


def test_coverage_and_context_overlap_match_hand_computed_values():
    pairs = error_pairs(SOURCES, TARGETS)
    assert pairs == {("们", "门"): 2, ("气", "汽"): 1, ("他", "她"): 1, ("已", "己"): 1}
    # covered: 们→门 (2 errors) and 他→她 (1); key 气 is misspelt in the reference, as another pair
    assert coverage(pairs, [("们", "门"), ("他", "她"), ("气", "汔"), ("天", "夫")]) == {
        "error_coverage": 0.6,
        "pair_coverage": 0.5,
        "key_coverage": 0.8,
    }
    assert coverage({}, [("们", "门")])["error_coverage"] is None
    # bigrams holding an error: 我们 们去 | 天气 气很 | 他们 | 们已 他们 | 已经 们已 -> 7 of 9 occur in training
    overlap = context_overlap(SOURCES, TARGETS, ["我们去学校", "他们已经来了"], n=2)
    assert overlap == {"sentence_overlap": 0.25, "ngram_overlap": round(7 / 9, 4)}
    assert context_overlap(SOURCES, TARGETS, ["x"], n=4)["ngram_overlap"] == 0.0


def test_training_ngrams_are_the_distinct_sorted_hashes_and_membership_is_isins():
    import numpy as np

    from csc_hf.dataset_stats import _in_sorted, _ngram_hashes, training_ngrams

    train = ["我们去学校", "他们已经来了", "我们去学校", "好"]  # a repeated sentence and one shorter than n
    hashes, inside = _ngram_hashes(pack(train), 2)
    distinct = training_ngrams(train, 2)
    assert distinct.tolist() == sorted(set(hashes[inside].tolist())) and len(distinct) == 4 + 5
    rng = np.random.default_rng(0)
    for n in (0, 1, 5, 1000):
        values = rng.integers(0, 3000, 4000).astype(np.uint64)
        reference = np.sort(np.unique(rng.integers(0, 3000, n).astype(np.uint64)))
        assert np.array_equal(_in_sorted(values, reference), np.isin(values, reference))
    assert _in_sorted(np.array([], dtype=np.uint64), distinct).shape == (0,)
    assert training_ngrams(["好"], 2).shape == (0,)


def test_missing_and_redundant_characters_are_counted_by_kind():
    # 们 missing, 去 replaced by 取 (a substitution), 的 doubled (redundant), 了 missing at the end
    sources, targets = ["我去学校", "我们取学校", "我的的书", "走"], ["我们去学校", "我们去学校", "我的书", "走了"]
    errors = gold_errors(sources, targets)
    assert errors.per_sentence.tolist() == [1, 1, 1, 1]
    assert errors.kinds == {"substitution": 1, "missing": 2, "redundant": 1}
    assert errors.pairs == {("去", "取"): 1} == error_pairs(sources, targets)
    # in the packed targets: 们 (1), 去 (5 + 2), the 书 after the removed 的 (10 + 2), 了 (13 + 1)
    assert errors.target_positions.tolist() == [1, 7, 12, 14]
    stats = dataset_stats(sources, targets, judge=lambda right, wrong: "phonetic")
    assert stats["errors"] == 4 and stats["sentences_with_errors"] == 4
    assert (stats["substitution_errors"], stats["missing_errors"], stats["redundant_errors"]) == (1, 2, 1)
    assert stats["avg_length"] == 3.75 and stats["avg_source_length"] == 3.5
    assert stats["phonetic_error_share"] == 1.0  # of the substitutions
    # the bigrams holding an error: 我们 们去 | 们去 去学 | 的书 | 走了
    overlap = context_overlap(sources, targets, ["我们去学校"], n=2)
    assert overlap["ngram_overlap"] == round(4 / 6, 4)


def test_bad_inputs_are_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="sentence 1: source has 4 characters, target 0"):
        dataset_stats(["我们去", "他是好人"], ["我们去", ""])
    with pytest.raises(ValueError, match="no sentence"):
        dataset_stats([], [])
    tsv = tmp_path / "bad.tsv"
    tsv.write_text("我门去\t我们去\n他是好人\t他是个好人\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.tsv, line 2: source has 4 characters, target 5"):
        read_data(str(tsv))
    jsonl = tmp_path / "bad.jsonl"
    jsonl.write_text('{"source": "我门", "target": "我们"}\n{"source": "我门"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.jsonl, line 2: expected an object with string 'source' and 'target'"):
        read_data(str(jsonl))
    jsonl.write_text('{"source": "我门", "target": "我们"\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.jsonl, line 1: invalid JSON"):
        read_data(str(jsonl))
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(ValueError, match="empty.jsonl: no sentence pair"):
        read_data(str(tmp_path / "empty.jsonl"))
    with pytest.raises(FileNotFoundError, match="nope: not a file, a folder, FOLDER:CONFIG or a csc_bench config"):
        read_data("nope")
    with pytest.raises(ValueError, match=r"probs/pe07: no split pe07; it has probs/pe01, .*probs/pe05"):
        read_data("probs/pe07")  # a split the config lacks: an error before anything is built, not no data


def test_analyze_tsv_and_jsonl_from_the_command_line(tmp_path, capsys):
    tsv, jsonl, conf = tmp_path / "test.tsv", tmp_path / "train.jsonl", tmp_path / "S.json"
    tsv.write_text("".join(f"{s}\t{t}\n" for s, t in zip(SOURCES, TARGETS)), encoding="utf-8")
    jsonl.write_text(
        "".join(
            json.dumps({"source": s, "target": s}, ensure_ascii=False) + "\n" for s in ["我门去学校", "他们已经来了"]
        ),
        encoding="utf-8",
    )
    conf.write_text(json.dumps({"气": {"汽": "phonetic"}}, ensure_ascii=False), encoding="utf-8")
    out = tmp_path / "analysis.json"
    code = main(
        ["analyze", str(tsv), "--train", str(jsonl), "--confusion", str(conf), "--ngram", "2", "--output", str(out)]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "## Statistics" in printed and "| errors_per_sentence | 1.25 |" in printed and "## Coverage" in printed
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["statistics"][str(tsv)]["errors"] == 5
    # the training jsonl has no errors (source = target): no pair covered, but its targets give context
    # (the bigrams of sentence 4's errors, 5 of 9; its first target is 我门去学校, not 我们去学校)
    assert result["coverage"][str(tsv)][str(jsonl)] == {
        "error_coverage": 0.0,
        "pair_coverage": 0.0,
        "key_coverage": 0.0,
        "sentence_overlap": 0.0,
        "ngram_overlap": round(5 / 9, 4),
    }
    assert result["coverage"][str(tsv)][str(conf)] == {
        "error_coverage": 0.2,
        "pair_coverage": 0.25,
        "key_coverage": 0.2,
    }
    assert main(["analyze", str(tmp_path / "missing.tsv")]) == 2
    assert "missing.tsv: not a file" in capsys.readouterr().err


@pytest.fixture(scope="module")
def bench_cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("cache"))


def test_analyze_benchmark_configs(small_params, bench_cache):
    result = analyze_data(
        ["test", "unseen_k", "scontext"],
        train=["train"],
        confusion=["S_train"],
        params=small_params,
        cache_dir=bench_cache,
    )
    stats, cov = result["statistics"], result["coverage"]
    assert stats["test"]["sentences"] == 80 and stats["test"]["errors"] > 0
    assert cov["test"]["S_train"]["error_coverage"] == 1.0  # the test set is made with S_train
    assert cov["unseen_k"]["train"]["key_coverage"] == cov["unseen_k"]["S_train"]["pair_coverage"] == 0.0
    assert cov["scontext"]["train"]["sentence_overlap"] == 1.0  # training sentences, re-substituted
    assert cov["test"]["train"]["sentence_overlap"] == 0.0


def test_analyze_exported_folder(small_params, bench_cache, tmp_path):
    from csc_hf.benchmark.export import export

    folder = export(tmp_path / "hub", ["unseen_k", "probs"], cache_dir=bench_cache, **small_params)
    every = analyze_data([str(folder)])["statistics"]
    assert f"{folder}:unseen_k" in every and f"{folder}:probs/pe05" in every
    one = analyze_data([f"{folder}:unseen_k"])["statistics"]
    assert list(one) == [f"{folder}:unseen_k"]
    direct = analyze_data(["unseen_k"], params=small_params, cache_dir=bench_cache)["statistics"]["unseen_k"]
    assert one[f"{folder}:unseen_k"] == direct


def test_analyze_length_changing_configs(small_params, bench_cache):
    from csc_hf.benchmark import CONFIGS, BenchParams, plan_for

    stats = analyze_data(["missing", "mixed"], params=small_params, cache_dir=bench_cache)["statistics"]
    missing, mixed = stats["missing"], stats["mixed"]
    assert missing["missing_errors"] == missing["errors"] > 0 and missing["avg_source_length"] < missing["avg_length"]
    built = plan_for(BenchParams(**small_params)).examples(CONFIGS["mixed"].splits[0]).stats()
    assert mixed["errors"] == built["errors"] and mixed["sentences_with_errors"] == built["sentences_with_errors"]
    for kind in ("substitution", "missing", "redundant"):  # the rows' edits are the alignment's reading
        assert mixed[f"{kind}_errors"] == round(built[f"{kind}_share"] * built["errors"])
