"""The analysis of a run's results.json and its report, on synthetic results with realistic values."""

import json

import pytest

from csc_hf.cli import main
from csc_hf.report import write_report
from csc_hf.results import Comparison, analyze_results, load_results, model_family, verdict

# character-level correction F1 of each model on the in-distribution test set
BASE = {"bert": 0.78, "bert+pinyin_gru": 0.80, "plome": 0.82, "all_gate": 0.84, "bart": 0.70}
# (config, split, P_e, char F1 offset, sentence F1 offset, interval half-widths char / sentence)
TEST_SETS = [
    ("test", "test", 0.05, 0.0, -0.15, 0.012, 0.025),
    ("unseen_k", "test", 0.15, -0.45, -0.50, 0.015, 0.030),
    ("unseen_v", "test", 0.05, -0.35, -0.45, 0.015, 0.030),
    ("seen", "test", 0.05, 0.03, -0.12, 0.012, 0.025),
    ("scontext", "test", None, 0.08, -0.05, 0.010, 0.020),
    ("probs", "pe01", 0.01, -0.02, -0.10, 0.030, 0.040),
    ("probs", "pe05", 0.05, 0.0, -0.15, 0.012, 0.025),
    ("probs", "pe20", 0.20, 0.03, -0.40, 0.008, 0.030),
    ("sighan15", "test", None, -0.30, -0.40, 0.035, 0.050),
    ("clean", "test", 0.0, None, None, 0.0, 0.0),
]
SEED_SHIFT = {1: (0.004, 0.010), 2: (-0.004, -0.010)}  # char / sentence F1 shift of each seed


def scores(char: float, sent: float, half_char: float, half_sent: float, n_errors: int) -> dict:
    out = {"n_sentences": 1000, "n_errors": n_errors, "fpr": 0.08}
    for key, value, half in (("char_cor_f1", char, half_char), ("sent_cor_f1", sent, half_sent)):
        out.update({key: value, f"{key}_ci_low": max(value - half, 0.0), f"{key}_ci_high": min(value + half, 1.0)})
    return out


def synthetic_results(models=tuple(BASE), seeds=(1, 2)) -> dict:
    records = []
    for model in models:
        for seed in seeds:
            shift_char, shift_sent = SEED_SHIFT[seed]
            for config, split, pe, d_char, d_sent, half_char, half_sent in TEST_SETS:
                clean = d_char is None
                char = 0.0 if clean else BASE[model] + d_char + shift_char
                sent = 0.0 if clean else BASE[model] + d_sent + shift_sent
                s = scores(char, sent, half_char, half_sent, 0 if clean else 1500)
                if config == "sighan15":
                    s.update(
                        {"seen_char_cor_r": 0.7, "unseen_char_cor_r": 0.3, "seen_n_errors": 300, "unseen_n_errors": 400}
                    )
                records.append(
                    {"model": model, "seed": seed, "config": config, "split": split, "error_prob": pe, "scores": s}
                )
    return {"preset": "synthetic", "params": {}, "records": records}


def write_run(folder, results) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.json").write_text(json.dumps(results), encoding="utf-8")
    return str(folder)


def test_report_states_the_four_conclusions_with_numbers(tmp_path, capsys):
    run = write_run(tmp_path / "run", synthetic_results())
    assert main(["report", run]) == 0
    printed = capsys.readouterr().out
    assert printed.count("supported") == 4 and "not supported" not in printed
    text = (tmp_path / "run" / "report.md").read_text(encoding="utf-8")
    for claim in (
        "1. Fusing phonetic and graphic information helps. **supported**",
        "2. Models are sensitive to the error distribution of the test set. **supported**",
        "3. Whether the errors and contexts have been seen matters. **supported**",
        "4. The character-level metric is more stable than the sentence-level metric. **supported**",
    ):
        assert claim in text
    # conclusion 1: all_gate (best phonetic+graphic) against bert on test: 84.0 vs 78.0, intervals over both seeds
    assert "| test, char_cor_f1 | all_gate: 84.0 (82.4-85.6) | bert: 78.0 (76.4-79.6) | +6.0 | expected |" in text
    assert "| all_gate | 84.0 ± 0.6 (82.4-85.6) |" in text  # mean ± std over seeds (interval)
    assert "| 1 | gate | all_gate | 73.1 | 58.2 | all_gate |" in text  # fusion ranking: mean over the 9 test sets
    for png in ("f1_per_test_set.png", "f1_against_pe.png", "seen_unseen.png"):
        assert f"(report_plots/{png})" in text
        assert (tmp_path / "run" / "report_plots" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_analysis_of_results():
    analysis = analyze_results(synthetic_results())
    assert analysis.error_test_sets[:3] == ["test", "unseen_k", "unseen_v"] and "clean" not in analysis.error_test_sets
    assert list(analysis.pe_series.values()) == [0.01, 0.05, 0.2]
    assert analysis.seen_unseen == [("seen", "unseen_k"), ("seen", "unseen_v"), ("scontext", "test")]
    assert [row.group for row in analysis.ranking["fusion"]] == ["gate", "input-sum", "concat", "none", "seq2seq"]
    both = next(row for row in analysis.ranking["information"] if row.group == "phonetic+graphic")
    assert both.models == ["plome", "all_gate"] and both.best == "all_gate"
    cell = analysis.cells["char_cor_f1"]["bert", "test"]
    assert cell.values == (0.784, 0.776) and cell.std == pytest.approx(0.005657, abs=1e-6)
    stability = analysis.stability["test"]
    for metric in ("char_cor_f1", "sent_cor_f1"):
        test_cells = [c for (_, t), c in analysis.cells[metric].items() if t == "test"]
        relative = [w / c.mean for c in test_cells for w in c.widths]
        assert stability[f"{metric}_rel_ci_width"] == pytest.approx(sum(relative) / len(relative))
    assert stability["char_cor_f1_rel_ci_width"] < stability["sent_cor_f1_rel_ci_width"]
    assert analysis.pair_recall["bert", "sighan15"]["unseen_char_cor_r"] == 0.3


def test_paired_differences_decide_when_every_seed_has_one(tmp_path):
    """all_gate (0.84) against bert (0.78) on test: the intervals do not overlap, yet a paired interval that holds
    zero decides; bert+pinyin_gru (0.80) overlaps bert, yet a paired interval above zero decides."""
    results = synthetic_results()

    def entry(a, seed, low, high):
        return {
            "model": a,
            "baseline": "bert",
            "seed": seed,
            "config": "test",
            "split": "test",
            "metric": "char_cor_f1",
            "delta": (low + high) / 2,
            "ci_low": low,
            "ci_high": high,
            "p_value": 0.5,
        }

    results["paired"] = [
        entry("all_gate", 1, -0.01, 0.02),
        entry("all_gate", 2, 0.01, 0.03),
        entry("bert+pinyin_gru", 1, 0.01, 0.03),
        entry("bert+pinyin_gru", 2, 0.005, 0.02),
    ]
    analysis = analyze_results(results)
    comparison = next(c for c in analysis.conclusions[1].comparisons if c.label == "test, char_cor_f1")
    assert comparison.a == "all_gate" and comparison.outcome == "none"
    assert comparison.paired == (pytest.approx(0.0125), (-0.01, 0.03))
    unseen = next(c for c in analysis.conclusions[1].comparisons if c.label == "unseen_k, char_cor_f1")
    assert unseen.paired is None and unseen.outcome == "expected"  # no predictions: the intervals decide
    results["paired"] = results["paired"][1:]  # one seed only: the intervals decide
    assert next(c for c in analyze_results(results).conclusions[1].comparisons).outcome == "expected"
    results["paired"] = [
        entry("all_gate", 1, -0.01, 0.02),
        entry("all_gate", 2, 0.01, 0.03),
        entry("bert+pinyin_gru", 1, 0.01, 0.03),
        entry("bert+pinyin_gru", 2, 0.005, 0.02),
    ]
    write_report(write_run(tmp_path / "run", results))
    text = (tmp_path / "run" / "report.md").read_text(encoding="utf-8")
    assert "+1.2 (paired -1.0 to +3.0) | none |" in text
    assert "| bert+pinyin_gru | **+1.6 (+0.5 to +3.0)** |" in text and "| all_gate | +1.2 (-1.0 to +3.0) |" in text


def test_inconclusive_when_the_run_lacks_models_or_test_sets(tmp_path):
    from csc_hf.scoring import score

    sources, targets = ["我门去学校", "今天天汽很好", "他是好人"] * 10, ["我们去学校", "今天天气很好", "他是好人"] * 10
    predictions = ["我们去学校", "今天天汽很好", "他是好人"] * 10
    record = {
        "model": "bert",
        "seed": 1,
        "config": "test",
        "split": "test",
        "error_prob": 0.05,
        "scores": score(sources, predictions, targets, bootstrap=100),
    }
    path = write_report(write_run(tmp_path / "small", {"preset": "smoke", "params": {}, "records": [record]}))
    text = path.read_text(encoding="utf-8")
    for number in (1, 2, 3):
        assert f"{number}. " in text and text.split(f"### {number}. ")[1].split("\n")[0].endswith("**inconclusive**")
    assert "needs a BERT-only model and a model fusing phonetic and graphic information" in text
    assert "needs the probs series" in text

    close = synthetic_results(models=("bert", "all_gate"), seeds=(1,))
    for r in close["records"]:
        if r["model"] == "all_gate":  # within the intervals of bert everywhere
            r["scores"].update(
                scores(
                    r["scores"]["char_cor_f1"] - 0.055,
                    r["scores"]["sent_cor_f1"] - 0.055,
                    0.012,
                    0.025,
                    r["scores"]["n_errors"],
                )
            )
    first = analyze_results(close).conclusions[1]
    assert first.verdict == "inconclusive" and {c.outcome for c in first.comparisons} == {"none"}


def test_verdict_rule():
    def outcomes(*names):
        return [Comparison("x", "a", "b", 0.0, 0.0, None, None, name) for name in names]

    assert verdict(outcomes("expected", "none")) == "supported"
    assert verdict(outcomes("expected", "none", "none")) == "inconclusive"
    assert verdict(outcomes("opposite", "none", "expected", "opposite")) == "not supported"
    assert verdict([]) == "inconclusive"


def test_bad_results_are_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="results.json does not exist"):
        load_results(tmp_path)
    (tmp_path / "results.json").write_text('{"records": [\n{"model": "bert"\n', encoding="utf-8")
    with pytest.raises(ValueError, match="results.json, line 3: invalid JSON"):
        load_results(tmp_path)
    results = synthetic_results(models=("bert",), seeds=(1,))
    del results["records"][2]["scores"]
    write_run(tmp_path, results)
    with pytest.raises(ValueError, match="results.json: record 2 lacks scores"):
        load_results(tmp_path)
    results = synthetic_results(models=("bert",), seeds=(1,))
    results["records"].append(results["records"][0])
    write_run(tmp_path, results)
    with pytest.raises(ValueError, match="record 10 repeats model bert, seed 1 on test"):
        load_results(tmp_path)
    assert main(["report", str(tmp_path / "nowhere")]) == 2


def test_model_family_reads_the_variant_table():
    assert model_family("bert") == ("none", ())
    assert model_family("bart") == ("seq2seq", ())
    assert model_family("plome") == ("input-sum", ("pinyin", "stroke"))
    assert model_family("pinyin+glyph_gate") == ("gate", ("pinyin", "glyph"))
    assert model_family("all_concat") == ("concat", ("pinyin", "stroke", "glyph"))
    assert model_family("bert+pinyin_transformer") == ("concat", ("pinyin",))
    assert model_family("my_own_model") == ("other", ())


def floor_results(preset="synthetic") -> dict:
    """Every F1 and interval 0 (as a smoke run's models score)."""
    results = synthetic_results(models=("bert", "plome", "bart"))
    for r in results["records"]:
        r["scores"].update(scores(0.0, 0.0, 0.0, 0.0, r["scores"]["n_errors"]))
    results["preset"] = preset
    return results


def test_report_shows_the_false_positive_rate_on_clean_for_every_model(tmp_path):
    results = synthetic_results()
    for r in results["records"]:
        if r["config"] == "clean":
            r["scores"].update(fpr=0.05 if r["model"] == "bert" else 0.1, fpr_ci_low=0.03, fpr_ci_high=0.12)
    analysis = analyze_results(results)
    assert analysis.clean_test_sets == ["clean"] and analysis.false_positives["bert", "clean"].mean == 0.05
    text = write_report(write_run(tmp_path / "run", results)).read_text(encoding="utf-8")
    table = text.split("### False-positive rate on error-free sentences (%)")[1]
    assert "| model | clean |" in table and "| bert | 5.0 ± 0.0 (3.0-12.0) |" in table
    for model in BASE:
        assert f"| {model} | " in table
    f1_table = text.split("### Character-level correction F1 (%)")[1].split("###")[0]
    assert "clean" not in f1_table  # its F1 is 0 by definition


def test_conclusion_2_compares_two_different_points_of_the_series():
    analysis = analyze_results(floor_results())
    comparisons = analysis.conclusions[2].comparisons + analysis.conclusions[2].reference
    assert comparisons and all(c.a != c.b for c in comparisons)  # not probs/pe01 against probs/pe01
    assert {c.outcome for c in comparisons} == {"none"}


def test_all_zero_panels_keep_a_readable_axis_and_show_every_model():
    from csc_hf.report import bars_figure, pe_figure

    analysis = analyze_results(floor_results())
    fig = bars_figure(analysis, analysis.error_test_sets, "F1")
    for ax in fig.axes:
        low, high = ax.get_ylim()
        assert low == 0.0 and high >= 1.0  # not -0.04..0.04
        labels = [t.get_text() for t in ax.texts]
        assert labels.count("0") == len(analysis.models) * len(analysis.error_test_sets)  # every zero bar marked
    for ax in pe_figure(analysis).axes:
        assert ax.get_ylim()[0] == 0.0 and ax.get_ylim()[1] >= 1.0
    some = analyze_results(synthetic_results(models=("bert", "plome")))
    fig = bars_figure(some, some.error_test_sets, "F1")
    assert fig.axes[0].get_ylim()[1] > 80 and not [t for t in fig.axes[0].texts if t.get_text()]


def test_report_shows_the_tuned_decoding_settings(tmp_path):
    results = synthetic_results(models=("bert", "plome", "bart"))
    results["params"] = {"keep_bias_grid": [0.0, 2.0, 4.0]}
    for r in results["records"]:
        r["keep_bias"] = 0.0 if r["model"] == "bart" else 2.0 if r["seed"] == 1 else 4.0
    analysis = analyze_results(results)
    assert analysis.keep_bias["plome", 2] == 4.0 and analysis.keep_bias_grid == [0.0, 2.0, 4.0]
    text = write_report(write_run(tmp_path / "run", results)).read_text(encoding="utf-8")
    decoding = text.split("## Decoding")[1].split("\n## ")[0]
    assert "among 0, 2, 4" in decoding and "| model | seed 1 | seed 2 |" in decoding
    assert "| bert | 2 | 4 |" in decoding and "| bart | - (seq2seq) | - (seq2seq) |" in decoding


@pytest.mark.parametrize(
    "preset, reason",
    [("smoke", "preset `smoke` only checks that every stage runs"), ("synthetic", "below the floor of 5%")],
)
def test_a_meaningless_run_says_its_verdicts_are_not_evidence(tmp_path, capsys, preset, reason):
    run = write_run(tmp_path / "run", floor_results(preset))
    assert main(["report", run]) == 0
    assert "the numbers mean nothing" in capsys.readouterr().out
    text = (tmp_path / "run" / "report.md").read_text(encoding="utf-8")
    head, conclusions = text.split("## The paper's conclusions")[:2]
    for part in (head, conclusions.split("###")[0]):
        assert "These numbers mean nothing, and the verdicts below are not evidence" in part and reason in part
    assert analyze_results(synthetic_results()).not_evidence is None  # real scores: no warning
    write_report(write_run(tmp_path / "real", synthetic_results()))
    assert "mean nothing" not in (tmp_path / "real" / "report.md").read_text(encoding="utf-8")


def augmentation_results(intervals: dict[str, tuple[float, float]], seeds=(1, 2)) -> dict:
    """``results.json``'s ``augmentation`` for bert: per test set, the paired interval of augmented − plain."""
    paired, records = [], []
    for seed in seeds:
        for t, (low, high) in intervals.items():
            records.append(
                {
                    "model": "bert",
                    "seed": seed,
                    "config": t,
                    "split": "test",
                    "augmentation": "sighan13",
                    "scores": {"char_cor_f1": 0.5, "sent_cor_f1": 0.4},
                }
            )
            paired += [
                {
                    "model": "bert",
                    "seed": seed,
                    "config": t,
                    "split": "test",
                    "metric": metric,
                    "b": 0.3,
                    "a": 0.3 + (low + high) / 2,
                    "delta": (low + high) / 2,
                    "ci_low": low,
                    "ci_high": high,
                    "p_value": 0.01,
                }
                for metric in ("char_cor_f1", "sent_cor_f1")
            ]
    coverage = {
        t: {
            "S_train": {"error_coverage": 0.551, "pair_coverage": 0.402},
            "augmented": {"error_coverage": 0.934, "pair_coverage": 0.9},
        }
        for t in intervals
    }
    return {
        "confusion": "sighan13",
        "coverage": coverage,
        "records": records,
        "paired": paired,
        "leaks": {
            "pairs": 444606,
            "removed_unseen_k": 9000,
            "removed_unseen_v": 800,
            "kept": 434806,
            "kept_new": 420000,
        },
    }


def test_report_judges_sighan_credibility_with_its_numbers(tmp_path):
    results = synthetic_results(models=("bert", "plome"))
    results["augmentation"] = augmentation_results(
        {
            "sighan15": (0.10, 0.20),
            "test": (-0.02, 0.01),
            "unseen_k": (-0.01, 0.01),
            "unseen_v": (-0.02, 0.0),
            "scontext": (-0.01, 0.02),
        }
    )
    analysis = analyze_results(results)
    assert analysis.credibility.verdict == "supported" and analysis.credibility.effects[0].outcome == "expected"
    text = write_report(write_run(tmp_path / "run", results)).read_text(encoding="utf-8")
    assert "| 4b | SIGHAN test sets cannot reflect a model's performance reliably. | supported |" in text
    section = text.split("## SIGHAN's credibility (conclusion 4b)")[1].split("\n## ")[0]
    assert "removed: key of S_unseen^k: 9000; removed: pair of S_unseen^v: 800" in section
    assert "| sighan15 | 55.1 | 40.2 | 93.4 | 90.0 |" in section
    assert "| bert | 30.0 → 45.0: **+15.0 (+10.0 to +20.0)** | 30.0 → 29.5: -0.5 (-2.0 to +1.0) |" in section
    assert section.count("| expected |") == 1 and "Verdict: **supported**" in section
    results["augmentation"] = augmentation_results(
        {t: (0.01, 0.05) for t in ("sighan15", "test", "unseen_k", "unseen_v", "scontext")}
    )
    assert analyze_results(results).credibility.verdict == "not supported"
    del results["augmentation"]
    assert analyze_results(results).credibility is None
    assert "SIGHAN's credibility" not in write_report(write_run(tmp_path / "plain", results)).read_text(
        encoding="utf-8"
    )


def test_a_smoke_report_warns_in_the_credibility_section_too(tmp_path):
    results = floor_results("smoke")
    results["augmentation"] = augmentation_results({"sighan15": (0.10, 0.20), "test": (-0.02, 0.01)})
    text = write_report(write_run(tmp_path / "run", results)).read_text(encoding="utf-8")
    section = text.split("## SIGHAN's credibility (conclusion 4b)")[1]
    assert section.lstrip().startswith("**These numbers mean nothing, and the verdicts below are not evidence")


def test_bad_augmentation_records_are_clear_errors(tmp_path):
    results = synthetic_results(models=("bert",))
    results["augmentation"] = {
        "records": [{"model": "bert", "seed": 1, "config": "test", "split": "test", "scores": {"char_cor_f1": 0.5}}]
    }
    with pytest.raises(ValueError, match="results.json: augmentation record 0 has no score sent_cor_f1"):
        load_results(write_run(tmp_path / "run", results))
    results["augmentation"] = []
    with pytest.raises(ValueError, match="'augmentation' must be an object with a 'records' list"):
        load_results(write_run(tmp_path / "run", results))


def test_report_shows_a_tuned_similarity_prior_beside_keep_bias(tmp_path):
    results = synthetic_results(models=("bert", "bart"))
    results["params"] = {"keep_bias_grid": [0.0, 2.0], "similarity_prior_grid": [0.0, 3.0]}
    for r in results["records"]:
        r["keep_bias"], r["similarity_prior"] = (
            (0.0, 0.0) if r["model"] == "bart" else (2.0, 3.0 if r["seed"] == 1 else 0.0)
        )
    analysis = analyze_results(results)
    assert analysis.similarity_prior["bert", 1] == 3.0 and analysis.similarity_prior_grid == [0.0, 3.0]
    text = write_report(write_run(tmp_path / "run", results)).read_text(encoding="utf-8")
    decoding = text.split("## Decoding")[1].split("\n## ")[0]
    assert "`keep_bias / similarity_prior`" in decoding and "among 0, 3." in decoding
    assert "| bert | 2 / 3 | 2 / 0 |" in decoding and "| bart | - (seq2seq) | - (seq2seq) |" in decoding


def with_length_changing_sets(results: dict) -> dict:
    """The synthetic results plus the missing, redundant and mixed test sets: bart inserts and deletes, the tagging
    models correct only the substitutions of mixed."""
    records = list(results["records"])
    for model, seed in {(r["model"], r["seed"]) for r in results["records"]}:
        kinds = ["substitution", "missing", "redundant"] if model == "bart" else ["substitution"]
        for config, present in (
            ("missing", ("missing",)),
            ("redundant", ("redundant",)),
            ("mixed", ("substitution", "missing", "redundant")),
        ):
            s = scores(0.2, 0.1, 0.02, 0.03, 1200)
            for kind in ("substitution", "missing", "redundant"):
                recall = (
                    (0.6 if kind == "substitution" else 0.5 if model == "bart" else 0.0) if kind in present else 0.0
                )
                s.update(
                    {
                        f"{kind}_n_errors": 400 if kind in present else 0,
                        f"{kind}_char_cor_r": recall,
                        f"{kind}_char_cor_r_ci_low": max(recall - 0.05, 0.0),
                        f"{kind}_char_cor_r_ci_high": min(recall + 0.05, 1.0) if recall else 0.0,
                    }
                )
            s["n_implausible"] = 1 if model == "bart" else 0
            records.append(
                {
                    "model": model,
                    "seed": seed,
                    "config": config,
                    "split": "test",
                    "error_prob": 0.05,
                    "edit_kinds": kinds,
                    "scores": s,
                }
            )
    return {**results, "records": records}


def test_report_says_which_models_handle_which_edit_kind(tmp_path):
    plain = analyze_results(synthetic_results())
    results = with_length_changing_sets(synthetic_results())
    bart = [r for r in results["records"] if r["model"] == "bart"]
    results["training_sets"] = {
        "sets": {"edits": {"train_edit_shares": [0.5, 0.25, 0.25]}},
        "variants": ["bart"],
        "records": [{**r, "training_set": "edits"} for r in bart],
        "paired": [],
    }
    analysis = analyze_results(results)
    # the paper's conclusions are judged on the substitution test sets only: the same as without the new sets
    assert analysis.substitution_test_sets == plain.error_test_sets and analysis.ranking == plain.ranking
    assert {n: c.verdict for n, c in analysis.conclusions.items()} == {
        n: c.verdict for n, c in plain.conclusions.items()
    }
    kinds = analysis.edit_kinds
    assert kinds.test_sets == ["missing", "redundant", "mixed"]
    assert kinds.columns == [
        ("missing", "missing"),
        ("redundant", "redundant"),
        ("mixed", "substitution"),
        ("mixed", "missing"),
        ("mixed", "redundant"),
    ]
    rows = {row.model: row for row in kinds.rows}
    assert rows["bert"].can_change_length is False and rows["bart"].can_change_length is True
    assert rows["bart (set edits)"].recall["mixed", "missing"].mean == 0.5 and rows["bart"].implausible == 6
    write_run(tmp_path / "run", results)
    text = write_report(tmp_path / "run").read_text(encoding="utf-8")
    section = text.split("## Missing and redundant characters")[1].split("\n## ")[0]
    assert (
        "| bert | no (tagging) | 0.0 ± 0.0 (0.0-0.0) | 0.0 ± 0.0 (0.0-0.0) | 60.0 ± 0.0 (55.0-65.0) | 0.0 ± 0.0"
        in section
    )
    assert "| bart | yes | 50.0 ± 0.0 (45.0-55.0) |" in section and "| mixed: redundant recall |" in section
    assert "| bart (set edits) | yes |" in section
    assert (
        "## Missing and redundant characters"
        not in write_report(write_run(tmp_path / "old", synthetic_results())).read_text()
    )


def test_intervals_of_differences_read_unambiguously():
    from csc_hf.markdown import percent_range

    assert percent_range(0.698, 0.725) == "(69.8-72.5)"
    assert percent_range(-0.042, -0.028) == "(-4.2 to -2.8)"
    assert percent_range(-0.017, 0.007) == "(-1.7 to 0.7)"


def test_report_says_where_the_time_went_and_on_which_machines(tmp_path):
    """The run's ``stages`` (kind, wall time, machine) and its ``processes``: the report sums the time per kind of
    stage, in the order the run met them, and names each machine with its stages (one that did not record it too)."""
    results = synthetic_results()
    zen4 = "AMD EPYC, 2 usable CPUs; flags: avx2 fma avx512f avx512_bf16; compute path: bf16 (AVX512-BF16)"
    spr = "Intel Xeon, 2 usable CPUs; flags: avx2 amx_bf16; compute path: bf16 (AMX)"
    results["stages"] = {
        "build-1": {"kind": "build", "seconds": 30.0, "cpu": None},
        "pretrain-2": {"kind": "pretrain", "seconds": 1800.0, "cpu": zen4},
        "train-bert-3": {"kind": "train", "seconds": 600.0, "cpu": zen4},
        "eval-train-bert-4": {"kind": "evaluate", "seconds": 150.0, "cpu": zen4},
        "train-plome-5": {"kind": "train", "seconds": 900.0, "cpu": spr},
    }
    results["processes"] = 2
    times = analyze_results(results).stage_times
    assert times.kinds == {"build": (1, 30.0), "pretrain": (1, 1800.0), "train": (2, 1500.0), "evaluate": (1, 150.0)}
    assert times.machines == {None: 1, zen4: 3, spr: 1} and times.seconds == 3480.0 and times.processes == 2
    text = open(write_report(write_run(tmp_path, results)), encoding="utf-8").read()
    section = text[text.index("## Time") :]
    assert "| train | 2 | 0.42 | 12.5 |" in section and "| all | 5 | 0.97 |" in section
    assert "ran in 2 processes side by side" in section
    assert f"- 3 stage(s): {zen4}" in section and f"- 1 stage(s): {spr}" in section
    assert "- 1 stage(s): not recorded (finished before csc_hf recorded it)" in section
    del results["stages"]  # results of a run before stages were recorded: no section
    assert "## Time" not in open(write_report(write_run(tmp_path, results)), encoding="utf-8").read()
