"""`csc-bench score`: any system's predictions file against one split of any CSC data (csc_hf.system_scores)."""

import json

import datasets
import pytest

from csc_hf import system_scores
from csc_hf.cli import main
from csc_hf.files import write_predictions
from csc_hf.scoring import score

SOURCES = ["我门今天去公园。", "他说的很对。", "天气很好。", "今天的天汽不错。"]
TARGETS = ["我们今天去公园。", "他说得很对。", "天气很好。", "今天的天气不错。"]
PREDICTIONS = ["我们今天去公园。", "他说地很对。", "天气真好。", "今天的天气不错。"]  # right, wrong, false alarm, right


def small_args(params: dict) -> list[str]:
    return [arg for key, value in params.items() for arg in ("--" + key.replace("_", "-"), str(value))]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["score", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def tsv(tmp_path):
    path = tmp_path / "ref.tsv"
    path.write_text("".join(f"{s}\t{t}\n" for s, t in zip(SOURCES, TARGETS)), encoding="utf-8")
    return path


def write_lines(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def scored(path, references, *options):
    out = path.with_suffix(".out.json")
    assert (
        main(
            [
                "score",
                "--predictions",
                str(path),
                "--references",
                str(references),
                "--output",
                str(out),
                "--bootstrap",
                "20",
                *options,
            ]
        )
        == 0
    )
    return json.loads(out.read_text(encoding="utf-8"))


# ---- predictions formats ---------------------------------------------------------------------------------------------


def test_text_predictions_print_tables_and_write_json(tsv, tmp_path, capsys):
    pred = write_lines(tmp_path / "pred.txt", PREDICTIONS)
    out = tmp_path / "report.json"
    code, stdout, _ = run(
        capsys, "--predictions", str(pred), "--references", str(tsv), "--output", str(out), "--bootstrap", "50"
    )
    assert code == 0
    assert "| score | strict | lenient |" in stdout and "| sentence-level correction F1 |" in stdout
    assert "| phonetic |" in stdout and f"wrote {out}" in stdout
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["format"] == "text" and report["references"] == str(tsv) and report["n_sentences"] == 4
    assert set(report["scores"]) == {"strict", "lenient"}
    expected = score(SOURCES, PREDICTIONS, TARGETS, convention="lenient", bootstrap=0)
    assert report["scores"]["lenient"]["sent_cor_p"] == expected["sent_cor_p"] == 2 / 3  # a wrong edit costs recall
    assert report["scores"]["strict"]["sent_cor_p"] == 2 / 4  # strict: every changed sentence
    assert report["scores"]["strict"]["fpr"] == 1.0 and report["scores"]["strict"]["char_cor_r"] == 2 / 3
    assert report["scores"]["strict"]["ci_resamples"] == 50 and "char_cor_f1_ci_low" in report["scores"]["strict"]
    assert report["error_types"] == "judged by character knowledge"
    assert sum(report["scores"]["strict"][f"type_{t}_n_errors"] for t in ("phonetic", "graphic", "both", "other")) == 3
    assert report["length_changes"] == {"sentences": 0, "inserted": 0, "deleted": 0}
    assert "train_pairs_from" in report and report["train_pairs_from"] is None
    assert "seen_n_errors" not in report["scores"]["strict"]
    assert not list(tmp_path.glob(".*partial")), "the json is written through a temporary file"


def test_jsonl_predictions_match_row_numbers_in_any_order(tsv, tmp_path):
    text = scored(write_lines(tmp_path / "pred.txt", PREDICTIONS), tsv)
    records = [json.dumps({"id": i, "prediction": p}, ensure_ascii=False) for i, p in enumerate(PREDICTIONS)]
    path = write_lines(tmp_path / "pred.jsonl", [records[2], "", records[0], records[3], records[1]])
    jsonl = scored(path, tsv)
    assert jsonl["format"] == "jsonl" and jsonl["scores"] == text["scores"]
    renamed = write_lines(tmp_path / "pred_jsonl.txt", records)  # detected by content too
    assert scored(renamed, tsv)["format"] == "jsonl"


@pytest.mark.parametrize(
    "lines, fragment",
    [
        (['{"id": 0, "prediction": "a"}', '{"prediction": "b"}'], "line 2: expected an object with 'id'"),
        (
            [
                '{"id": 0, "prediction": "a"}',
                '{"id": 0, "prediction": "b"}',
                '{"id": 2, "prediction": "c"}',
                '{"id": 3, "prediction": "d"}',
            ],
            "line 2: id 0 was already given on line 1",
        ),
        (
            [
                '{"id": 0, "prediction": "a"}',
                '{"id": 1, "prediction": "b"}',
                '{"id": 2, "prediction": "c"}',
                '{"id": 7, "prediction": "d"}',
            ],
            "line 4: id 7 is not in the row numbers",
        ),
        (['{"id": 0, "prediction": "a"}', "{oops"], "line 2: invalid JSON"),
        (['{"id": 0, "prediction": "a"}'], "has 1 records but the references"),
    ],
)
def test_jsonl_errors_name_the_line(tsv, tmp_path, capsys, lines, fragment):
    path = write_lines(tmp_path / "pred.jsonl", lines)
    code, _, err = run(capsys, "--predictions", str(path), "--references", str(tsv))
    assert code == 2 and f"{path}" in err and fragment in err, err


def test_study_edits_are_read_as_predictions(tsv, tmp_path):
    path = tmp_path / "test.test.txt"
    write_predictions(path, SOURCES, PREDICTIONS)
    edits = scored(path, tsv)
    assert edits["format"] == "edits"
    assert edits["scores"] == scored(write_lines(tmp_path / "pred.txt", PREDICTIONS), tsv)["scores"]
    unchanged = write_lines(tmp_path / "nothing.txt", [""] * 4)  # a system that changes nothing
    assert scored(unchanged, tsv)["scores"]["strict"]["n_changes"] == 0


def test_format_detection_and_forcing(tmp_path):
    assert system_scores.detect_format("p.jsonl", []) == "jsonl"
    assert system_scores.detect_format("p.txt", ['{"id": 1, "prediction": "我们"}']) == "jsonl"
    assert system_scores.detect_format("p.txt", ["1:们 3:的", "", "12:在"]) == "edits"
    assert system_scores.detect_format("p.txt", ["我们去", "1:们"]) == "text"
    assert system_scores.detect_format("p.txt", ["{不是 json"]) == "text"
    refs = system_scores.References("r", ["1:2"], ["1:3"], None, [{"errors": []}], False)
    path = write_lines(tmp_path / "p.txt", ["1:3"])
    assert system_scores.parse_predictions(path, ["1:3"], refs) == (["132"], "edits")  # position 1 becomes "3"
    assert system_scores.parse_predictions(path, ["1:3"], refs, "text") == (["1:3"], "text")


# ---- length changes, counts, the paired test, training pairs ---------------------------------------------------------


def test_length_changing_predictions_are_aligned_and_counted(tsv, tmp_path, capsys):
    llm = ["我们今天去了公园。", "他说得对。", "天气好", "今天的天气不错。"]  # 1 insertion, 1 + 2 deletions
    assert system_scores.length_changes(SOURCES, llm) == {"sentences": 3, "inserted": 1, "deleted": 3}
    path = write_lines(tmp_path / "llm.txt", llm)
    code, stdout, _ = run(capsys, "--predictions", str(path), "--references", str(tsv), "--bootstrap", "0")
    assert code == 0 and "Length changes: 3 predictions (75.0%) differ in length" in stdout
    assert "1 characters inserted, 3 deleted" in stdout and "no bootstrap intervals" in stdout
    assert "Length policy edits: such a prediction is scored as written" in stdout
    report = scored(path, tsv)
    assert (
        report["length_changes"] == {"sentences": 3, "inserted": 1, "deleted": 3} and report["length_policy"] == "edits"
    )
    assert report["scores"]["strict"]["n_length_mismatch"] == 3 and report["scores"]["strict"]["n_indels"] == 4
    assert report["scores"]["strict"]["char_cor_r"] == 3 / 3  # substitutions scored at their source positions
    assert report["scores"]["strict"]["sent_cor_r"] == 1 / 3  # a sentence with an indel is never right


def test_length_policies_of_csc_bench_score(tsv, tmp_path, capsys):
    """--length-policy: the length changes are those of the predictions as given; the scores are of the predictions
    under the policy (substitutions: only same-position substitutions; strict: such sentences unchanged), the
    baseline's too."""
    llm = write_lines(tmp_path / "llm.txt", ["我们今天去了公园。", "他说得对。", "天气好", "今天的天气不错。"])
    kept = scored(llm, tsv, "--length-policy", "substitutions", "--baseline", str(llm))
    strict = scored(llm, tsv, "--length-policy", "strict")
    for report, policy in ((kept, "substitutions"), (strict, "strict")):
        assert report["length_policy"] == policy and report["length_changes"]["sentences"] == 3
        assert report["scores"]["strict"]["n_length_mismatch"] == 0
    assert kept["baseline"]["length_changes"]["sentences"] == 3
    assert kept["baseline"]["paired"]["strict"]["sent_cor_f1"]["delta"] == 0  # the same file, the same policy
    assert kept["scores"]["strict"]["sent_cor_r"] == 3 / 3 and kept["scores"]["strict"]["fpr"] == 0
    assert strict["scores"]["strict"]["sent_cor_r"] == 1 / 3 and strict["scores"]["strict"]["fpr"] == 0
    code, stdout, _ = run(capsys, "--predictions", str(llm), "--references", str(tsv), "--length-policy", "strict")
    assert code == 0 and "Length policy strict: such a prediction is rejected" in stdout
    with pytest.raises(SystemExit):
        run(capsys, "--predictions", str(llm), "--references", str(tsv), "--length-policy", "loose")
    assert "invalid choice: 'loose'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="--length-policy 'loose' is not a length policy"):
        system_scores.score_files(llm, str(tsv), length_policy="loose")


def test_text_lines_split_at_newlines_only(tsv, tmp_path):
    lines = [*PREDICTIONS[:2], "天气很好。\u2028", PREDICTIONS[3]]  # a U+2028 inside a line stays in it
    path = tmp_path / "crlf.txt"
    path.write_bytes("".join(line + "\r\n" for line in lines).encode("utf-8"))
    report = scored(path, tsv)
    assert report["format"] == "text" and report["n_sentences"] == 4
    assert report["length_changes"] == {"sentences": 1, "inserted": 1, "deleted": 0}


def test_line_count_mismatch_names_both_counts_and_the_file(tsv, tmp_path, capsys):
    path = write_lines(tmp_path / "short.txt", PREDICTIONS[:3])
    code, _, err = run(capsys, "--predictions", str(path), "--references", str(tsv))
    assert code == 2
    assert f"{path} has 3 lines but the references {tsv} have 4 sentences" in err


def test_baseline_gives_the_paired_test(tsv, tmp_path, capsys):
    pred = write_lines(tmp_path / "pred.txt", TARGETS)
    base = write_lines(tmp_path / "base.txt", SOURCES)  # a system that changes nothing
    out = tmp_path / "paired.json"
    code, stdout, _ = run(
        capsys,
        "--predictions",
        str(pred),
        "--references",
        str(tsv),
        "--baseline",
        str(base),
        "--bootstrap",
        "200",
        "--output",
        str(out),
    )
    assert code == 0 and "### Paired test against the baseline" in stdout
    assert "| character-level correction F1 | 100.0 | 0.0 | +100.0" in stdout
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["baseline"]["predictions"] == str(base) and report["baseline"]["format"] == "text"
    for convention in ("strict", "lenient"):
        entry = report["baseline"]["paired"][convention]["char_cor_f1"]
        assert set(entry) == {"a", "b", "delta", "ci_low", "ci_high", "p_value"}
        assert entry["a"] == 1.0 and entry["b"] == 0.0 and entry["delta"] == 1.0 and 0 < entry["p_value"] <= 1
    assert (
        main(
            ["score", "--predictions", str(pred), "--references", str(tsv), "--baseline", str(base), "--bootstrap", "0"]
        )
        == 2
    )
    assert "needs bootstrap resamples" in capsys.readouterr().err


def test_train_data_gives_the_seen_unseen_breakdown(tsv, tmp_path, capsys):
    train = tmp_path / "train.jsonl"  # teaches 门 for 们 only
    train.write_text(
        json.dumps({"source": "他门来了", "target": "他们来了"}, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    pred = write_lines(tmp_path / "pred.txt", PREDICTIONS)
    report = scored(pred, tsv, "--train", str(train))
    strict = report["scores"]["strict"]
    assert report["train_pairs_from"] == str(train)
    assert strict["seen_n_errors"] == 1 and strict["unseen_n_errors"] == 2
    assert strict["seen_char_cor_r"] == 1.0 and strict["unseen_char_cor_r"] == 0.5
    code, stdout, _ = run(capsys, "--predictions", str(pred), "--references", str(tsv), "--train", str(train))
    assert "| seen pairs | 1 |" in stdout and "| unseen pairs | 2 |" in stdout


def test_every_check_comes_before_any_work(tsv, tmp_path, monkeypatch, capsys):
    def fail(*args, **kwargs):
        raise AssertionError("work started before the arguments were checked")

    monkeypatch.setattr(system_scores, "load_references", fail)
    pred = write_lines(tmp_path / "pred.txt", PREDICTIONS)
    for argv, fragment in [
        (["--predictions", str(tmp_path / "none.txt")], "predictions"),
        (["--predictions", str(pred), "--format", "csv"], "not a predictions format"),
        (["--predictions", str(pred), "--baseline", str(tmp_path / "none.txt")], "baseline"),
        (["--predictions", str(pred), "--output", str(tmp_path / "no" / "r.json")], "does not exist"),
        (["--predictions", str(pred), "--bootstrap", "-1"], "--bootstrap"),
    ]:
        code, _, err = run(capsys, *argv, "--references", "test")
        assert code == 2 and fragment in err, err
    monkeypatch.undo()
    monkeypatch.setattr(system_scores, "score", fail)
    code, _, err = run(capsys, "--predictions", str(pred), "--references", str(tsv), "--train", str(tmp_path / "x"))
    assert code == 2 and "x: not a file" in err, err


# ---- references: a benchmark config, an export, a folder with ids ---------------------------------------------------


@pytest.fixture(scope="module")
def bench(small_params, tmp_path_factory):
    """Small benchmark parameters as CLI options (with a cache folder of their own), the cache and the test split."""
    from csc_hf.benchmark import load_dataset

    cache = str(tmp_path_factory.mktemp("bench-cache"))
    test = load_dataset("csc_bench", "test", split="test", cache_dir=cache, **small_params)
    return [*small_args(small_params), "--cache-dir", cache], cache, test


def test_benchmark_config_uses_its_typed_rows_and_training_pairs(bench, small_params, tmp_path):
    from csc_hf.benchmark import load_dataset
    from csc_hf.dataset_stats import error_pairs

    options, cache, test = bench
    pred = write_lines(tmp_path / "pred.txt", test["target"])
    report = scored(pred, "test", *options)
    strict = report["scores"]["strict"]
    assert report["references"] == "test" and report["n_sentences"] == len(test)
    assert report["error_types"] == "from the rows' errors"
    assert strict["char_cor_f1"] == 1.0 and strict["n_errors"] > 0
    row_types = [e["type"] for errors in test["errors"] for e in errors]
    assert [strict[f"type_{t}_n_errors"] for t in ("phonetic", "graphic", "both", "other")] == [
        row_types.count(code) for code in range(4)
    ]
    assert report["train_pairs_from"] == "the benchmark's training set"
    train = load_dataset("csc_bench", "train", split="train", cache_dir=cache, **small_params)
    seen = set(error_pairs(train["source"], train["target"]))
    test_pairs = error_pairs(test["source"], test["target"])
    assert strict["seen_n_errors"] == sum(n for pair, n in test_pairs.items() if pair in seen) > 0
    assert strict["seen_n_errors"] + strict["unseen_n_errors"] == strict["n_errors"]


def test_benchmark_config_splits_are_chosen_by_name(bench, small_params, tmp_path, capsys):
    from csc_hf.benchmark import load_dataset

    options, cache, _ = bench
    pe20 = load_dataset("csc_bench", "probs", split="pe20", cache_dir=cache, probs=(0.05, 0.2), **small_params)
    sources = write_lines(tmp_path / "sources.txt", pe20["source"])
    report = scored(sources, "probs/pe20", *options, "--probs", "0.05", "0.2")
    assert report["references"] == "probs/pe20" and report["scores"]["strict"]["n_changes"] == 0
    code, _, err = run(
        capsys, "--predictions", str(sources), "--references", "probs", *options, "--probs", "0.05", "0.2"
    )
    assert code == 2 and "references probs must be one split; it has 2: probs/pe05, probs/pe20" in err


def test_exported_folder_config_and_split(bench, small_params, tmp_path, capsys):
    from csc_hf.benchmark.export import export

    _, cache, test = bench
    folder = export(tmp_path / "export", ["test", "train"], cache_dir=cache, **small_params)
    pred = write_lines(tmp_path / "pred.txt", test["target"])
    report = scored(pred, f"{folder}:test")
    assert report["references"] == f"{folder}:test" and report["error_types"] == "from the rows' errors"
    assert report["scores"]["strict"]["char_cor_f1"] == 1.0 and report["train_pairs_from"] is None
    code, _, err = run(capsys, "--predictions", str(pred), "--references", f"{folder}:train")
    assert code == 2 and f"it has 2: {folder}:train/train, {folder}:train/validation" in err
    validation = datasets.load_dataset(str(folder), "train", split="validation")
    sources = write_lines(tmp_path / "validation.txt", validation["source"])
    assert scored(sources, f"{folder}:train/validation", "--train", f"{folder}:train")["n_sentences"] == len(validation)


def test_folder_with_an_id_column_matches_jsonl_ids(tmp_path):
    folder = tmp_path / "data"
    (folder / "data").mkdir(parents=True)
    rows = {"id": [10, 20, 30, 40], "source": SOURCES, "target": TARGETS}
    datasets.Dataset.from_dict(rows).to_parquet(str(folder / "data" / "train-00000-of-00001.parquet"))
    records = [json.dumps({"id": i, "prediction": p}, ensure_ascii=False) for i, p in zip(rows["id"], PREDICTIONS)]
    report = scored(write_lines(tmp_path / "pred.jsonl", records[::-1]), folder)
    assert report["references"] == f"{folder}:default/train"
    assert report["error_types"] == "judged by character knowledge"
    expected = score(SOURCES, PREDICTIONS, TARGETS, bootstrap=0)
    assert report["scores"]["strict"]["char_cor_f1"] == expected["char_cor_f1"]
    refs = system_scores.load_references(f"{folder}:default")
    with pytest.raises(ValueError, match=r"line 1: id 3 is not in the references' id column"):
        system_scores.parse_predictions("p.jsonl", [records[0].replace("10", "3"), *records[1:]], refs)


# ---- missing and redundant characters: scoring by alignment ----------------------------------------------------------

GAP_SOURCES = ["我去学校。", "我们们去公园。", "今天天汽不错。", "天气很好。"]  # 们 missing, 们 doubled, 气, none
GAP_TARGETS = ["我们去学校。", "我们去公园。", "今天天气不错。", "天气很好。"]


def test_references_of_other_lengths_are_scored_by_alignment(tmp_path, capsys):
    refs = write_lines(tmp_path / "gaps.tsv", [f"{s}\t{t}" for s, t in zip(GAP_SOURCES, GAP_TARGETS)])
    # right, right, wrong character, an implausible (over twice as long) rewrite of an error-free sentence
    predictions = ["我们去学校。", "我们去公园。", "今天天器不错。", "天气很好。" * 3]
    pred = write_lines(tmp_path / "pred.txt", predictions)
    report = scored(pred, refs)
    strict = report["scores"]["strict"]
    assert report["alignment"] is True and strict["n_implausible"] == 1
    assert (strict["missing_n_errors"], strict["redundant_n_errors"], strict["substitution_n_errors"]) == (1, 1, 1)
    assert strict["missing_char_cor_r"] == strict["redundant_char_cor_r"] == 1.0
    assert strict["substitution_char_det_r"] == 1.0 and strict["substitution_char_cor_r"] == 0.0
    assert strict == {**score(GAP_SOURCES, predictions, GAP_TARGETS, alignment=True, bootstrap=20), **strict}
    code, stdout, _ = run(capsys, "--predictions", str(pred), "--references", str(refs), "--bootstrap", "0")
    assert (
        code == 0 and "### Breakdown by edit kind" in stdout and "| missing | 1 | 11 |" in stdout
    )  # the rewrite inserts 10
    assert "Implausible predictions (empty, or longer than twice their source), scored as they are: 1." in stdout
    code, _, err = run(capsys, "--predictions", str(pred), "--references", str(refs), "--alignment", "off")
    assert code == 2 and f"{refs}, line 1: source has 5 characters, target 6" in err and "--alignment auto" in err


def test_substitution_only_references_score_the_same_by_alignment(tsv, tmp_path):
    pred = write_lines(tmp_path / "pred.txt", PREDICTIONS)
    auto, on = scored(pred, tsv), scored(pred, tsv, "--alignment", "on")
    assert auto["alignment"] is False and on["alignment"] is True
    assert {k: v for k, v in on["scores"]["strict"].items() if k in auto["scores"]["strict"]} == auto["scores"][
        "strict"
    ]
    assert on["scores"]["strict"]["substitution_n_errors"] == 3 and on["scores"]["strict"]["missing_n_errors"] == 0


def test_an_empty_prediction_is_counted_not_a_crash(tmp_path):
    refs = write_lines(tmp_path / "gaps.tsv", [f"{s}\t{t}" for s, t in zip(GAP_SOURCES, GAP_TARGETS)])
    report = scored(write_lines(tmp_path / "pred.txt", ["", *GAP_TARGETS[1:]]), refs)
    strict = report["scores"]["strict"]
    assert (
        strict["n_implausible"] == 1 and strict["missing_char_cor_r"] == 0.0 and strict["redundant_char_cor_r"] == 1.0
    )


def test_length_changing_benchmark_config_uses_its_typed_edits(bench, small_params, tmp_path, capsys):
    from csc_hf.benchmark import load_dataset

    options, cache, _ = bench
    mixed = load_dataset("csc_bench", "mixed", split="test", cache_dir=cache, **small_params)
    report = scored(write_lines(tmp_path / "pred.txt", mixed["target"]), "mixed", *options)
    strict = report["scores"]["strict"]
    assert report["alignment"] is True and report["error_types"] == "from the rows' errors"
    assert strict["char_cor_f1"] == 1.0 and strict["n_errors"] == sum(map(len, mixed["errors"]))
    kinds = mixed.features["errors"].feature["kind"].names
    for kind in ("substitution", "missing", "redundant"):
        assert strict[f"{kind}_n_errors"] == sum(kinds[e["kind"]] == kind for row in mixed["errors"] for e in row) > 0
    sources = write_lines(tmp_path / "sources.txt", mixed["source"])
    code, _, err = run(capsys, "--predictions", str(sources), "--references", "mixed", *options, "--alignment", "off")
    assert code == 2 and "mixed: sentence" in err and "characters, target" in err


def test_false_positive_rate_is_na_where_no_sentence_is_error_free(tmp_path, capsys):
    """A set whose every sentence has an error has no false-positive rate: None in the scores, their intervals and
    the paired test, n/a in every table (`csc-bench score`, a model card's), no entry in a
    card's model-index or in numeric-only metrics; never a rate of 0. One error-free sentence defines it."""
    from csc_hf import hub

    sources, targets = [SOURCES[0], SOURCES[3]], [TARGETS[0], TARGETS[3]]
    scores = score(sources, sources, targets, bootstrap=20)
    assert scores["fpr"] is None and scores["fpr_ci_low"] is None and scores["fpr_ci_high"] is None
    assert "fpr" not in score(sources, sources, targets, bootstrap=0, numeric_only=True)
    assert score([*sources, SOURCES[2]], [*sources, SOURCES[2]], [*targets, TARGETS[2]], bootstrap=0)["fpr"] == 0.0
    ref = tmp_path / "all_wrong.tsv"
    ref.write_text("".join(f"{s}\t{t}\n" for s, t in zip(sources, targets)), encoding="utf-8")
    system, baseline = write_lines(tmp_path / "p.txt", targets), write_lines(tmp_path / "b.txt", sources)
    code, out, err = run(capsys, "--predictions", str(system), "--references", str(ref), "--baseline", str(baseline))
    assert code == 0, err
    assert "| false positive rate | n/a | n/a |" in out
    assert "| false positive rate | n/a | n/a | n/a | n/a |" in out
    assert "| false positive rate | 0.0" not in out
    record = {"config": "unseen_k", "split": "test", "keep_bias": 0.0, "scores": scores}
    card = hub.model_card("user/x", [record], {})
    assert "| unseen_k/test | keep_bias 0 |" in card and card.count(" n/a |") == 1
    metrics = hub.card_metadata("user/x", [record], {})["model-index"][0]["results"][0]["metrics"]
    assert [m["type"] for m in metrics] == ["char_cor_f1", "char_det_f1", "sent_cor_f1", "sent_det_f1"]
