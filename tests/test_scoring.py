"""Tests of csc_hf.scoring: hand-computed cases for every number, properties, bad input."""

from __future__ import annotations

import ast
import codecs
import importlib.util
import json
import random
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import levenshtein
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from csc_hf import scoring
from csc_hf.edits import alignment as edit_alignment
from csc_hf.edits import slots
from csc_hf.scoring import align, compare, score, scores_from_totals, sentence_counts

MAIN_SCORES = (
    "sent_det_p",
    "sent_det_r",
    "sent_det_f1",
    "sent_cor_p",
    "sent_cor_r",
    "sent_cor_f1",
    "sent_det_acc",
    "sent_acc",
    "char_det_p",
    "char_det_r",
    "char_det_f1",
    "char_cor_p",
    "char_cor_r",
    "char_cor_f1",
    "fpr",
)

# One sentence of each kind (gold error at position 2, c -> X):
#   0 corrected exactly; 1 right position, wrong character; 2 corrected plus an extra change;
#   3 untouched; 4 error-free, unchanged; 5 error-free, changed.
SOURCES = ["abcd"] * 6
REFERENCES = ["abXd", "abXd", "abXd", "abXd", "abcd", "abcd"]
PREDICTIONS = ["abXd", "abYd", "ZbXd", "abcd", "abcd", "abcZ"]


def run(sources, predictions, references, **kwargs):
    return score(sources, predictions, references, bootstrap=0, **kwargs)


# --------------------------------------------------------------------------- hand-computed


def test_hand_computed_strict():
    r = run(SOURCES, PREDICTIONS, REFERENCES)
    assert r["convention"] == "strict"
    assert {k: r[k] for k in MAIN_SCORES} == pytest.approx(
        {
            # changed sentences: 0, 1, 2, 5; detection right: 0, 1; correction right: 0
            "sent_det_p": 2 / 4,
            "sent_det_r": 2 / 4,
            "sent_det_f1": 0.5,
            "sent_cor_p": 1 / 4,
            "sent_cor_r": 1 / 4,
            "sent_cor_f1": 0.25,
            # sentence accuracies: changed positions right in 0, 1, 4; prediction == reference in 0, 4
            "sent_det_acc": 3 / 6,
            "sent_acc": 2 / 6,
            # characters: 5 changes (1+1+2+0+0+1), 4 gold errors, 3 detected (0, 1, 2), 2 corrected (0, 2)
            "char_det_p": 3 / 5,
            "char_det_r": 3 / 4,
            "char_det_f1": 2 / 3,
            "char_cor_p": 2 / 5,
            "char_cor_r": 2 / 4,
            "char_cor_f1": 4 / 9,
            "fpr": 1 / 2,
        }
    )
    assert {k: r[k] for k in r if k.startswith("n_")} == {
        "n_sentences": 6,
        "n_error_sentences": 4,
        "n_errors": 4,
        "n_changed_sentences": 4,
        "n_changes": 5,
        "n_det_hits": 3,
        "n_cor_hits": 2,
        "n_length_mismatch": 0,
        "n_indels": 0,
        "n_implausible": 0,
    }
    assert r["nerr1_n_sentences"] == 4 and r["nerr2_n_sentences"] == 0 and r["nerr3plus_n_sentences"] == 0
    assert {k: r[f"nerr1_{k}"] for k in ("sent_det_r", "sent_cor_r", "char_det_r", "char_cor_r")} == pytest.approx(
        {"sent_det_r": 2 / 4, "sent_cor_r": 1 / 4, "char_det_r": 3 / 4, "char_cor_r": 2 / 4}
    )
    assert r["nerr2_sent_det_r"] == 0.0  # empty bucket: zero denominator reported as 0.0


def test_hand_computed_lenient():
    r = run(SOURCES, PREDICTIONS, REFERENCES, convention="lenient")
    assert r["convention"] == "lenient"
    # TP det = {0, 1}, TP cor = {0}; the only FP is sentence 5 (error-free, changed)
    sentence_level = {f"sent_{level}_{m}" for level in ("det", "cor") for m in ("p", "r", "f1")}
    assert {k: r[k] for k in sorted(sentence_level)} == pytest.approx(
        {
            "sent_det_p": 2 / 3,
            "sent_det_r": 1 / 2,
            "sent_det_f1": 4 / 7,
            "sent_cor_p": 1 / 2,
            "sent_cor_r": 1 / 4,
            "sent_cor_f1": 1 / 3,
        }
    )
    strict = run(SOURCES, PREDICTIONS, REFERENCES)
    assert {k: v for k, v in r.items() if k not in sentence_level | {"convention"}} == {
        k: v for k, v in strict.items() if k not in sentence_level | {"convention"}
    }


def pycorrector_sentence_eval():
    """pycorrector's own eval_sighan2015_by_model_batch, taken from the installed package.

    Importing pycorrector needs its many dependencies (CI installs it with --no-deps), so the
    function's source is compiled alone.
    """
    spec = importlib.util.find_spec("pycorrector")
    if spec is None:
        pytest.skip("pycorrector is not installed")
    path = Path(spec.submodule_search_locations[0]) / "utils" / "eval.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    (function,) = [n for n in tree.body if getattr(n, "name", None) == "eval_sighan2015_by_model_batch"]
    namespace = {"time": time, "open": codecs.open, "sighan_2015_path": None}
    exec(compile(ast.Module(body=[function], type_ignores=[]), str(path), "exec"), namespace)
    return namespace["eval_sighan2015_by_model_batch"]


def test_lenient_correction_equals_pycorrector(tmp_path, capsys):
    rnd = random.Random(1)
    sources, predictions, references = list(SOURCES), list(PREDICTIONS), list(REFERENCES)
    for _ in range(300):
        source = "".join(rnd.choice("天气很好今心") for _ in range(rnd.randint(2, 12)))
        reference = "".join(c if rnd.random() < 0.85 else "兴" for c in source)
        prediction = rnd.choice([source, reference, reference[:-1], "".join(rnd.sample(reference, len(reference)))])
        sources.append(source)
        predictions.append(prediction)
        references.append(reference)
    data = tmp_path / "sighan.tsv"
    data.write_text("".join(f"{s}\t{t}\n" for s, t in zip(sources, references)), encoding="utf-8")
    evaluate_batch = pycorrector_sentence_eval()
    acc, precision, recall, f1 = evaluate_batch(lambda _: [(p, []) for p in predictions], str(data), verbose=False)
    capsys.readouterr()
    r = run(sources, predictions, references, convention="lenient")
    assert (r["sent_acc"], r["sent_cor_p"], r["sent_cor_r"], r["sent_cor_f1"]) == pytest.approx(
        (acc, precision, recall, f1)
    )
    assert r["sent_cor_p"] > run(sources, predictions, references)["sent_cor_p"]


def test_length_mismatch_insertion_and_deletion():
    # insertion: "abcd" -> "abXdd" aligns as c->X plus one inserted d
    r = run(["abcd"], ["abXdd"], ["abXd"])
    assert (r["n_length_mismatch"], r["n_indels"], r["n_changes"]) == (1, 1, 2)
    assert (r["char_det_p"], r["char_det_r"], r["char_cor_p"], r["char_cor_r"]) == (0.5, 1.0, 0.5, 1.0)
    assert (r["sent_det_r"], r["sent_cor_r"], r["sent_det_p"], r["sent_acc"]) == (0.0, 0.0, 0.0, 0.0)
    # deletion of the erroneous character: a wrong change, never a hit
    r = run(["abcd"], ["abd"], ["abXd"])
    assert (r["n_indels"], r["n_changes"], r["char_det_r"], r["char_det_p"]) == (1, 1, 0.0, 0.0)
    # a deletion in an error-free sentence is a false positive
    r = run(["abcd", "abcd"], ["abc", "abXd"], ["abcd", "abXd"], convention="lenient")
    assert (r["fpr"], r["sent_cor_p"], r["sent_cor_r"]) == (1.0, 0.5, 1.0)


def test_empty_prediction_is_scored_as_deletions():
    r = run(["abc"], [""], ["aXc"])
    assert (r["n_indels"], r["n_changes"], r["char_det_r"], r["sent_acc"]) == (3, 3, 0.0, 0.0)


def test_align_examples():
    assert align("明天会下鱼吗", "明天会下雨") == ([(4, "雨")], 1)
    assert align("abcd", "axcd") == ([(1, "x")], 0)
    assert align("abc", "abxc") == ([], 1)
    assert align("ab", "") == ([], 2)
    assert align("", "ab") == ([], 2)
    assert align([1, 2, 3], [1, 9, 3, 4]) == ([(1, 9)], 1)
    assert align("", "") == ([], 0)


@settings(max_examples=300, deadline=None)
@given(st.text("abcd", max_size=14), st.text("abcd", max_size=14))
def test_align_is_a_minimum_edit_alignment(source, prediction):
    substitutions, indels = align(source, prediction)
    assert len(substitutions) + indels == levenshtein(source, prediction)
    positions = [p for p, _ in substitutions]
    assert positions == sorted(set(positions))
    assert all(0 <= p < len(source) and source[p] != c for p, c in substitutions)
    assert indels >= abs(len(source) - len(prediction))


def test_token_ids_match_strings_and_drop_ignore_index():
    as_ids = [[101] + [ord(c) for c in s] + [102, 0] for s in SOURCES]
    pred_ids = [[7] + [ord(c) for c in p] + [3, 3] for p in PREDICTIONS]
    ref_ids = [[-100] + [ord(c) for c in t] + [-100, -100] for t in REFERENCES]
    assert run(as_ids, pred_ids, ref_ids) == run(SOURCES, PREDICTIONS, REFERENCES)
    # 2-D padded arrays as Trainer gives them
    arrays = [np.array(x) for x in (as_ids, pred_ids, ref_ids)]
    assert run(*arrays) == run(SOURCES, PREDICTIONS, REFERENCES)
    # a prediction of another length only loses its ignore_index entries, then is aligned
    r = run([[1, 5, 6, 2]], [[5, 9, 7, -100, -100]], [[-100, 5, 8, -100]])
    assert (r["n_length_mismatch"], r["n_indels"], r["char_det_r"], r["char_cor_r"]) == (1, 1, 1.0, 0.0)


def test_custom_ignore_index():
    r = run([[9, 1, 2]], [[9, 1, 3]], [[0, 1, 3]], ignore_index=0)
    assert r["n_sentences"] == 1 and r["sent_cor_f1"] == 1.0 and r["n_changes"] == 1


# --------------------------------------------------------------------------- breakdowns

META_SOURCES = ["abcd", "abcd"]
META_REFERENCES = ["XbYd", "abcW"]
META_PREDICTIONS = ["XbZd", "abcd"]
META = [
    {"errors": [{"position": 0, "wrong": "a", "right": "X", "type": "phonetic"}, {"position": 2, "type": "graphic"}]},
    {"errors": [{"position": 3, "type": "both"}], "id": "ignored"},
]


def test_error_type_breakdown():
    r = run(META_SOURCES, META_PREDICTIONS, META_REFERENCES, metadata=META)
    expected = {
        "type_phonetic": (1, 1.0, 1.0),
        "type_graphic": (1, 1.0, 0.0),
        "type_both": (1, 0.0, 0.0),
        "type_other": (0, 0.0, 0.0),
    }
    for name, values in expected.items():
        assert (r[f"{name}_n_errors"], r[f"{name}_char_det_r"], r[f"{name}_char_cor_r"]) == values
    assert "seen_n_errors" not in r


def test_metadata_formats_agree():
    expected = run(META_SOURCES, META_PREDICTIONS, META_REFERENCES, metadata=META)
    columnar = {"errors": [m["errors"] for m in META]}
    per_example_columns = [
        {"errors": {"position": [0, 2], "type": ["phonetic", "graphic"]}},
        {"errors": {"position": [3], "type": ["both"]}},
    ]
    for metadata in (columnar, per_example_columns):
        assert run(META_SOURCES, META_PREDICTIONS, META_REFERENCES, metadata=metadata) == expected


def test_seen_unseen_breakdown():
    r = run(META_SOURCES, META_PREDICTIONS, META_REFERENCES, train_pairs={("X", "a"), ("Q", "q")})
    # gold (right, wrong) pairs: (X, a) seen and corrected; (Y, c) detected only; (W, d) missed
    assert (r["seen_n_errors"], r["seen_char_det_r"], r["seen_char_cor_r"]) == (1, 1.0, 1.0)
    assert (r["unseen_n_errors"], r["unseen_char_det_r"], r["unseen_char_cor_r"]) == (2, 0.5, 0.0)
    assert "type_phonetic_n_errors" not in r
    ids = run([[1, 2], [3, 4]], [[5, 2], [3, 4]], [[5, 2], [3, 6]], train_pairs=[(5, 1)])
    assert (ids["seen_n_errors"], ids["seen_char_cor_r"], ids["unseen_n_errors"]) == (1, 1.0, 1)


def test_errors_per_sentence_breakdown():
    r = run(META_SOURCES, META_PREDICTIONS, META_REFERENCES)
    assert (r["nerr2_n_sentences"], r["nerr2_sent_det_r"], r["nerr2_sent_cor_r"]) == (1, 1.0, 0.0)
    assert (r["nerr2_char_det_r"], r["nerr2_char_cor_r"]) == (1.0, 0.5)
    assert (r["nerr1_n_sentences"], r["nerr1_sent_det_r"], r["nerr1_char_det_r"]) == (1, 0.0, 0.0)
    r = run(["abcd"], ["XYZd"], ["XYZd"])
    assert (r["nerr3plus_n_sentences"], r["nerr3plus_sent_cor_r"], r["nerr3plus_char_cor_r"]) == (1, 1.0, 1.0)


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ([{"errors": []}, {"errors": [{"position": 3, "type": "both"}]}], r"metadata\[0\] lists 0 errors"),
        (
            [{"errors": [{"position": 1, "type": "phonetic"}]}, {"errors": []}],
            r"metadata\[0\]: position 1 is not a gold",
        ),
        ([{"errors": [{"position": 9, "type": "phonetic"}]}, {"errors": []}], r"metadata\[0\]: error position 9"),
        ([META[0], {"errors": [{"position": 3, "type": "typo"}]}], r"metadata\[1\]: error type 'typo'"),
        ([META[0]], "metadata has 1 examples"),
        ([META[0], {"no_errors": []}], r"metadata\[1\] must be a mapping"),
        ({"type": []}, "'errors' column"),
    ],
)
def test_bad_metadata(metadata, message):
    with pytest.raises(ValueError, match=message):
        run(META_SOURCES, META_PREDICTIONS, META_REFERENCES, metadata=metadata)


@pytest.mark.parametrize("pairs", [[("ab", "c")], [("a",)], ["ab"]])
def test_bad_train_pairs(pairs):
    with pytest.raises(ValueError, match="pair"):
        run(META_SOURCES, META_PREDICTIONS, META_REFERENCES, train_pairs=pairs)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("sources", "predictions", "references", "error", "message"),
    [
        (["ab", "cd"], ["ab"], ["ab", "cd"], ValueError, "predictions has 1"),
        ([], [], [], ValueError, "no examples"),
        ("abc", "abc", "abc", TypeError, "sources must be a sequence"),
        (["ab", "cd"], ["ab", None], ["ab", "cd"], TypeError, r"predictions\[1\] is NoneType"),
        (["ab", 5], ["ab", "cd"], ["ab", "cd"], TypeError, r"sources\[1\] is int"),
        (["ab", "cd"], ["ab", "cd"], ["ab", ["c", "d"]], TypeError, r"references\[1\] is list"),
        ([None, "cd"], ["ab", "cd"], ["ab", "cd"], TypeError, r"sources\[0\] is None"),
        (["ab", ""], ["ab", ""], ["ab", ""], ValueError, r"sources\[1\] is empty"),
        (
            ["ab", "cd"],
            ["ab", "cd"],
            ["ab", "cde"],
            ValueError,
            "example 1: source has length 2 but reference has length 3",
        ),
        ([[1, 2]], [[1, 2]], [[1, 2, 3]], ValueError, "example 0: source has length 2"),
        ([[1, 2]], [[1, 2]], [[-100, -100]], ValueError, r"sources\[0\] is empty after dropping"),
        ([[1, 2]], [None], [[1, 2]], TypeError, r"predictions\[0\] is NoneType"),
        ([[1, 2]], [[1.5, 2.0]], [[1, 2]], TypeError, r"predictions\[0\] must be a 1-D sequence of integer"),
        ([[1, 2]], [[[1, 2]]], [[1, 2]], TypeError, r"predictions\[0\] must be a 1-D"),
        ([[1, 2], "ab"], [[1, 2], [1, 2]], [[1, 2], [1, 2]], TypeError, r"sources\[1\] is str"),
    ],
)
def test_bad_input_names_the_index(sources, predictions, references, error, message):
    with pytest.raises(error, match=message):
        run(sources, predictions, references)


def test_bad_options():
    with pytest.raises(ValueError, match="convention"):
        run(["a"], ["a"], ["a"], convention="sighan")
    with pytest.raises(ValueError, match="n_resamples"):
        score(["a"], ["a"], ["a"], bootstrap=-1)
    with pytest.raises(ValueError, match="confidence"):
        score(["a"], ["a"], ["a"], bootstrap=10, confidence=1.5)


# --------------------------------------------------------------------------- bootstrap, compare


def test_bootstrap_intervals_for_every_score_seeded():
    r = score(SOURCES * 5, PREDICTIONS * 5, REFERENCES * 5, bootstrap=300, seed=1)
    scores = [k for k in run(SOURCES, PREDICTIONS, REFERENCES) if not k.startswith("n") or k.startswith("nerr")]
    scores = [k for k in scores if k != "convention" and not k.endswith("_n_sentences")]
    for key in scores:
        assert r[f"{key}_ci_low"] <= r[f"{key}_ci_high"], key
    assert r["sent_det_p_ci_low"] < r["sent_det_p"] < r["sent_det_p_ci_high"]
    assert (r["ci_resamples"], r["ci_confidence"]) == (300, 0.95)
    assert score(SOURCES * 5, PREDICTIONS * 5, REFERENCES * 5, bootstrap=300, seed=1) == r
    other = score(SOURCES * 5, PREDICTIONS * 5, REFERENCES * 5, bootstrap=300, seed=2)
    assert (
        other["sent_det_p_ci_low"] != r["sent_det_p_ci_low"] or other["char_det_p_ci_high"] != r["char_det_p_ci_high"]
    )
    assert not any(k.endswith("_ci_low") and k.startswith("n_") for k in r)


def test_compare_two_systems():
    sources, references = SOURCES * 20, REFERENCES * 20
    good, bad = REFERENCES * 20, SOURCES * 20
    result = compare(sources, good, bad, references, n_resamples=500)
    cor_f1 = result["sent_cor_f1"]
    assert (cor_f1["a"], cor_f1["b"], cor_f1["delta"]) == (1.0, 0.0, 1.0)
    assert cor_f1["p_value"] < 0.01 and cor_f1["ci_low"] > 0
    same = compare(sources, PREDICTIONS * 20, PREDICTIONS * 20, references, method="bootstrap", n_resamples=200)
    assert all(v["delta"] == 0.0 and v["p_value"] == 1.0 for v in same.values())


# --------------------------------------------------------------------------- Trainer helpers


def test_make_compute_metrics_with_logits_and_ids():
    inputs = np.array([[101, 5, 6, 102], [101, 7, 8, 102]])
    labels = np.array([[-100, 5, 9, -100], [-100, 7, 8, -100]])
    ids = np.array([[0, 5, 9, 0], [0, 7, 3, 0]])
    logits = np.eye(12)[ids]  # one-hot "logits" whose argmax is ids
    compute_metrics = scoring.make_compute_metrics(convention="lenient")
    expected = score(inputs, ids, labels, convention="lenient", bootstrap=0, numeric_only=True)
    for predictions in (ids, logits, (logits, np.zeros(3))):
        result = compute_metrics(SimpleNamespace(predictions=predictions, label_ids=labels, inputs=inputs))
        assert result == expected
        assert all(isinstance(v, (int, float)) for v in result.values())
    with pytest.raises(ValueError, match="include_for_metrics"):
        compute_metrics(SimpleNamespace(predictions=ids, label_ids=labels, inputs=None))


def test_preprocess_logits_for_metrics_uses_argmax_without_torch():
    class Logits:
        def argmax(self, dim):
            return ("argmax", dim)

    assert scoring.preprocess_logits_for_metrics((Logits(), None), None) == ("argmax", -1)


def test_scoring_does_not_import_torch():
    code = "import sys, csc_hf.scoring, csc_hf.stats; print('torch' in sys.modules)"
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
        == "False"
    )


def test_output_is_flat_and_json_serializable():
    r = score(SOURCES, PREDICTIONS, REFERENCES, bootstrap=20, metadata=None, train_pairs=[("X", "c")])
    assert json.loads(json.dumps(r)) == r
    assert all(isinstance(v, (int, float, str)) for v in r.values())
    numeric = score(SOURCES, PREDICTIONS, REFERENCES, bootstrap=0, numeric_only=True)
    assert "convention" not in numeric and all(isinstance(v, (int, float)) for v in numeric.values())


def test_scores_from_totals_is_vectorized():
    counts = sentence_counts(SOURCES, PREDICTIONS, REFERENCES)
    totals = {k: v.sum() for k, v in counts.items()}
    stacked = {k: np.array([v, 2 * v]) for k, v in totals.items()}
    single, double = scores_from_totals(totals), scores_from_totals(stacked)
    for key, value in single.items():
        assert np.allclose(double[key], [value, value]), key


# --------------------------------------------------------------------------- properties


@st.composite
def triples(draw, max_sentences=8):
    """Random (sources, predictions, references) over a small alphabet, some lengths differing."""
    n = draw(st.integers(1, max_sentences))
    sources, predictions, references = [], [], []
    for _ in range(n):
        source = draw(st.text("abcd", min_size=1, max_size=8))
        reference = "".join(draw(st.sampled_from([c, c, "x", "y"])) for c in source)
        kind = draw(st.sampled_from(["copy", "gold", "edit", "edit", "other"]))
        if kind == "copy":
            prediction = source
        elif kind == "gold":
            prediction = reference
        elif kind == "edit":
            prediction = "".join(draw(st.sampled_from([c, c, r, "y", "z"])) for c, r in zip(source, reference))
        else:
            prediction = draw(st.text("abcxy", max_size=10))
        sources.append(source)
        predictions.append(prediction)
        references.append(reference)
    return sources, predictions, references


def oracle(sources, predictions, references, convention):
    """The issue's definitions, literally, with sets of positions and edits."""
    s_tp = {"det": 0, "cor": 0}
    changed_sentences = clean_changed = error_sentences = det_right = cor_right = 0
    changes = gold_total = det_hits = cor_hits = 0
    for source, prediction, reference in zip(sources, predictions, references):
        gold = {(i, r) for i, (s, r) in enumerate(zip(source, reference)) if s != r}
        if len(prediction) == len(source):
            edits, indels = {(i, p) for i, (s, p) in enumerate(zip(source, prediction)) if s != p}, 0
        else:
            substitutions, indels = align(source, prediction)
            edits = set(substitutions)
        gold_positions, edit_positions = {i for i, _ in gold}, {i for i, _ in edits}
        changed = bool(edits) or indels > 0
        det_ok = indels == 0 and edit_positions == gold_positions
        cor_ok = indels == 0 and edits == gold
        error_sentences += bool(gold)
        changed_sentences += changed
        clean_changed += changed and not gold
        det_right += det_ok
        cor_right += cor_ok
        s_tp["det"] += det_ok and changed
        s_tp["cor"] += cor_ok and changed
        changes += len(edits) + indels
        gold_total += len(gold)
        det_hits += len(gold_positions & edit_positions)
        cor_hits += len(gold & edits)

    def ratio(a, b):
        return a / b if b else 0.0

    def f1(p, r):
        return 2 * p * r / (p + r) if p + r else 0.0

    out = {}
    for level in ("det", "cor"):
        claimed = changed_sentences if convention == "strict" else s_tp[level] + clean_changed
        p, r = ratio(s_tp[level], claimed), ratio(s_tp[level], error_sentences)
        out.update({f"sent_{level}_p": p, f"sent_{level}_r": r, f"sent_{level}_f1": f1(p, r)})
    for level, hits in (("det", det_hits), ("cor", cor_hits)):
        p, r = ratio(hits, changes), ratio(hits, gold_total)
        out.update({f"char_{level}_p": p, f"char_{level}_r": r, f"char_{level}_f1": f1(p, r)})
    n = len(sources)
    fpr = ratio(clean_changed, n - error_sentences) if n > error_sentences else None  # undefined: no clean sentence
    out.update(sent_det_acc=det_right / n, sent_acc=cor_right / n, fpr=fpr)
    return out


PROPERTY_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY_SETTINGS
@given(triples(), st.sampled_from(scoring.CONVENTIONS))
def test_matches_the_set_based_definitions(data, convention):
    result = run(*data, convention=convention)
    expected = oracle(*data, convention)
    assert {k: result[k] for k in expected} == pytest.approx(expected)


@PROPERTY_SETTINGS
@given(triples())
def test_copying_the_source_gives_zero_recall_and_fpr(data):
    sources, _, references = data
    r = run(sources, sources, references)
    assert all(r[k] == 0.0 for k in ("sent_det_r", "sent_cor_r", "char_det_r", "char_cor_r"))
    assert r["fpr"] == (0.0 if r["n_sentences"] > r["n_error_sentences"] else None)
    assert r["n_changes"] == 0


@PROPERTY_SETTINGS
@given(triples())
def test_gold_prediction_is_perfect_where_defined(data):
    sources, _, references = data
    r = run(sources, references, references, train_pairs=[("x", "a")])
    assert r["fpr"] == (0.0 if r["n_sentences"] > r["n_error_sentences"] else None)
    assert r["sent_acc"] == 1.0 and r["sent_det_acc"] == 1.0
    defined = r["n_errors"] > 0
    for key in MAIN_SCORES:
        if key not in ("fpr", "sent_acc", "sent_det_acc"):
            assert r[key] == (1.0 if defined else 0.0), key
    for prefix in ("nerr1", "nerr2", "nerr3plus"):
        if r[f"{prefix}_n_sentences"]:
            assert all(r[f"{prefix}_{k}"] == 1.0 for k in ("sent_det_r", "sent_cor_r", "char_det_r", "char_cor_r"))
    for prefix in ("seen", "unseen"):
        if r[f"{prefix}_n_errors"]:
            assert r[f"{prefix}_char_det_r"] == r[f"{prefix}_char_cor_r"] == 1.0


@PROPERTY_SETTINGS
@given(triples(), st.randoms(use_true_random=False))
def test_shuffling_examples_changes_nothing(data, rnd):
    order = list(range(len(data[0])))
    rnd.shuffle(order)
    shuffled = [[column[i] for i in order] for column in data]
    assert run(*shuffled, train_pairs=[("x", "a")]) == run(*data, train_pairs=[("x", "a")])


@PROPERTY_SETTINGS
@given(triples())
def test_strict_precision_never_exceeds_lenient(data):
    strict, lenient = run(*data), run(*data, convention="lenient")
    assert strict["sent_det_p"] <= lenient["sent_det_p"]
    assert strict["sent_cor_p"] <= lenient["sent_cor_p"]
    assert strict["sent_det_r"] == lenient["sent_det_r"] and strict["sent_cor_r"] == lenient["sent_cor_r"]


@PROPERTY_SETTINGS
@given(triples())
def test_token_ids_and_strings_agree(data):
    ids = [[[ord(c) for c in text] for text in column] for column in data]
    assert run(*ids) == run(*data)


def test_randomized_large_batch_matches_oracle():
    rnd = random.Random(7)
    sources, predictions, references = [], [], []
    for _ in range(2000):
        source = "".join(rnd.choice("abcdef") for _ in range(rnd.randint(1, 30)))
        reference = "".join(c if rnd.random() < 0.9 else "x" for c in source)
        prediction = "".join(r if rnd.random() < 0.7 else rnd.choice("abx") for r in reference)
        if rnd.random() < 0.05:
            prediction = prediction[:-1] if rnd.random() < 0.5 else prediction + "q"
        sources.append(source)
        predictions.append(prediction)
        references.append(reference)
    for convention in scoring.CONVENTIONS:
        result = run(sources, predictions, references, convention=convention)
        expected = oracle(sources, predictions, references, convention)
        assert {k: result[k] for k in expected} == pytest.approx(expected)


# ------------------------------------------------------------------ alignment: missing and redundant characters

KIND_KEYS = tuple(
    f"{kind}_{name}"
    for kind in scoring.EDIT_KINDS
    for name in (*(key for key in MAIN_SCORES if key.startswith("char_")), "n_errors", "n_changes")
)


def test_alignment_hand_computed():
    sources = ["我们去学", "我们们去学校", "我们去学效", "我们去学校", "他来了"]
    references = ["我们去学校", "我们去学校", "我们去学校", "我们去学校", "他来了"]
    predictions = [
        "我们去学校",  # missing 校 inserted: detected and corrected
        "我们们去学校",  # redundant 们 kept: missed
        "我们去学",  # 效 deleted instead of replaced: a wrong change (redundant), the substitution missed
        "我们去学校了",  # error-free, 了 inserted: a false positive
        "他来了",
    ]
    r = run(sources, predictions, references, alignment=True)
    # gold: missing 校 (0), redundant 们 (1), substitution 效 -> 校 (2); changes: 0 (1), 2 (1), 3 (1)
    assert (r["n_errors"], r["n_changes"], r["n_det_hits"], r["n_cor_hits"]) == (3, 3, 1, 1)
    assert (r["char_det_p"], r["char_det_r"], r["fpr"]) == (1 / 3, 1 / 3, 0.5)
    assert (r["sent_cor_p"], r["sent_cor_r"], r["sent_acc"]) == (1 / 3, 1 / 3, 2 / 5)
    assert run(sources, predictions, references, alignment=True, convention="lenient")["sent_cor_p"] == 0.5
    assert {k: r[k] for k in KIND_KEYS if k.endswith(("n_errors", "n_changes"))} == {
        "substitution_n_errors": 1,
        "substitution_n_changes": 0,
        "missing_n_errors": 1,
        "missing_n_changes": 2,
        "redundant_n_errors": 1,
        "redundant_n_changes": 1,
    }
    assert (r["missing_char_det_p"], r["missing_char_det_r"], r["missing_char_cor_r"]) == (0.5, 1.0, 1.0)
    assert (r["redundant_char_det_r"], r["redundant_char_det_p"], r["substitution_char_det_r"]) == (0.0, 0.0, 0.0)
    assert (r["n_indels"], r["n_length_mismatch"], r["n_implausible"]) == (3, 3, 0)


def test_a_missing_character_is_matched_by_its_order_at_a_position():
    r = run(["去学"], ["我们去学"], ["我门去学"], alignment=True)  # 我 right, 门 wrong in the second slot
    assert (r["n_det_hits"], r["n_cor_hits"], r["missing_char_cor_r"]) == (2, 1, 0.5)
    r = run(["去学"], ["们去学"], ["我们去学"], alignment=True)  # one of two inserted, in the first slot
    assert (r["n_det_hits"], r["n_cor_hits"]) == (1, 0)


def test_the_prediction_is_read_closest_to_the_gold():
    # "ABBC" -> "ABC" removes a B; "ABD" removes a B and replaces C: read so, not as B -> D plus C removed
    r = run(["ABBC"], ["ABD"], ["ABC"], alignment=True)
    assert (r["n_det_hits"], r["n_cor_hits"], r["n_changes"]) == (1, 1, 2)


def test_references_of_another_length_need_alignment():
    with pytest.raises(ValueError, match=r"example 1: source has length 4 but reference has length 5.*alignment=True"):
        run(["abcd", "abcd"], ["abcd", "abcd"], ["abcd", "abcde"])
    with pytest.raises(ValueError, match=r"example 0: source has length 2 but reference has length 1"):
        run([[5, 6]], [[5, 6]], [[5]])
    assert run(["abcd", "abcd"], ["abcd", "abcde"], ["abcd", "abcde"], alignment=True)["sent_acc"] == 1.0


@pytest.mark.parametrize("alignment", [False, True])
def test_implausible_predictions_are_scored_and_counted(alignment):
    sources, references = ["我们去学校", "他来了", "好"], ["我们去学校", "他来了", "好"]
    predictions = ["", "他来了" * 3, "好" * 2000]
    r = run(sources, predictions, references, alignment=alignment)
    assert (r["n_implausible"], r["n_changes"], r["fpr"]) == (3, 5 + 6 + 1999, 1.0)


@pytest.mark.parametrize("alignment", [False, True])
def test_empty_sources_and_references_are_named(alignment):
    with pytest.raises(ValueError, match=r"sources\[1\] is empty"):
        run(["ab", ""], ["ab", "a"], ["ab", "a"], alignment=alignment)
    with pytest.raises(ValueError, match=r"references\[0\] is empty"):
        run(["ab"], ["ab"], [""], alignment=alignment)


def test_alignment_metadata_names_kinds_and_positions():
    sources, references = ["去学校了了", "我们去学效"], ["我们去学校了", "我们去学校"]
    metadata = [
        {
            "errors": [
                {"position": 0, "kind": "missing", "type": "other"},
                {"position": 0, "kind": "missing", "type": "other"},
                {"position": 3, "kind": "redundant", "type": "other"},
            ]
        },
        {"errors": [{"position": 4, "type": "graphic"}]},
    ]
    r = run(sources, references, references, alignment=True, metadata=metadata, train_pairs=[("校", "效")])
    counts = (r["type_other_n_errors"], r["type_graphic_n_errors"], r["seen_n_errors"], r["unseen_n_errors"])
    assert counts == (3, 1, 1, 0)
    assert r["type_other_char_cor_r"] == r["seen_char_cor_r"] == 1.0
    wrong = [{"errors": metadata[0]["errors"][:2]}, metadata[1]]
    with pytest.raises(ValueError, match=r"metadata\[0\] lists 2 errors but the alignment .* has 3"):
        run(sources, references, references, alignment=True, metadata=wrong)
    moved = [metadata[0], {"errors": [{"position": 3, "type": "graphic"}]}]
    with pytest.raises(ValueError, match=r"metadata\[1\]: substitution at position 3 is not a gold error"):
        run(sources, references, references, alignment=True, metadata=moved)
    with pytest.raises(ValueError, match=r"metadata\[1\]: error kind 'deleted'"):
        run(
            sources,
            references,
            references,
            alignment=True,
            metadata=[metadata[0], {"errors": [{"position": 4, "kind": "deleted", "type": "graphic"}]}],
        )


def test_alignment_with_token_ids_bootstrap_and_compare():
    sources, references, predictions = (
        ["我们去学", "我们们去学校"],
        ["我们去学校", "我们去学校"],
        ["我们去学校", "我们们去学"],
    )
    ids = [[[ord(c) for c in text] for text in column] for column in (sources, predictions, references)]
    assert run(*ids, alignment=True) == run(sources, predictions, references, alignment=True)
    # lengths differ: only the reference's and the prediction's ignore_index entries are dropped
    padded = [[101] + ids[0][0] + [102]], [[101] + ids[1][0] + [102, -100]], [[101] + ids[2][0] + [102, -100, -100]]
    assert (run(*padded, alignment=True)["n_errors"], run(*padded, alignment=True)["sent_acc"]) == (1, 1.0)
    r = score(sources, predictions, references, alignment=True, bootstrap=50, seed=1)
    assert "missing_char_cor_r_ci_low" in r and r["missing_char_cor_r"] == 1.0
    test = compare(sources, predictions, references, references, alignment=True, n_resamples=50)
    assert test["redundant_char_det_r"]["b"] == 1.0 and test["redundant_char_det_r"]["a"] == 0.0


@st.composite
def substitution_triples(draw, max_sentences=8):
    """Substitution-only data, as any CSC data: predictions and references as long as their sources, each read
    position by position by a minimum alignment (a copy of the source where a random draw would not be)."""
    n = draw(st.integers(1, max_sentences))
    columns = [], [], []
    for _ in range(n):
        source = draw(st.text("abcdefgh", min_size=1, max_size=10))
        rows = [source]
        for _ in range(2):
            row = "".join(draw(st.sampled_from([c, c, c, "x", "y", "a"])) for c in source)
            hamming = sum(a != b for a, b in zip(source, row))
            rows.append(row if hamming == levenshtein(source, row) else source)
        for column, row in zip(columns, (rows[0], rows[1], rows[2])):
            column.append(row)
    return columns


@PROPERTY_SETTINGS
@given(substitution_triples(), st.sampled_from(scoring.CONVENTIONS), st.booleans())
def test_alignment_gives_todays_numbers_on_substitution_only_data(data, convention, as_ids):
    sources, _, references = data
    metadata = [
        {
            "errors": [
                {"position": i, "type": ["phonetic", "graphic"][i % 2]}
                for i, (s, r) in enumerate(zip(source, reference))
                if s != r
            ]
        }
        for source, reference in zip(sources, references)
    ]
    options = {"convention": convention, "metadata": metadata, "train_pairs": [("x", "a"), ("y", "b")]}
    if as_ids:
        data = [[[ord(c) for c in text] for text in column] for column in data]
        options["train_pairs"] = [(ord(r), ord(w)) for r, w in options["train_pairs"]]
    today, aligned = run(*data, **options), run(*data, alignment=True, **options)
    assert {k: aligned[k] for k in today} == today
    for name in ("char_det_p", "char_det_r", "char_cor_p", "char_cor_r"):
        assert aligned[f"substitution_{name}"] == today[name]
    assert all(aligned[f"{kind}_n_{what}"] == 0 for kind in ("missing", "redundant") for what in ("errors", "changes"))


def edit_oracle(sources, predictions, references):
    """Per-edit counts straight from the definitions: slots of the two alignments, compared as sets."""
    totals = {"gold": 0, "changes": 0, "det": 0, "cor": 0, "det_exact": 0, "cor_exact": 0}
    for source, prediction, reference in zip(sources, predictions, references):
        gold = edit_alignment(source, reference)
        guess = edit_alignment(source, prediction, gold)
        gold_slots = dict(zip(slots(gold), gold))
        hits = [(s, e) for s, e in zip(slots(guess), guess) if s in gold_slots]
        totals["gold"] += len(gold)
        totals["changes"] += len(guess)
        totals["det"] += len(hits)
        totals["cor"] += sum(gold_slots[s].right == e.right for s, e in hits)
        totals["det_exact"] += set(slots(gold)) == set(slots(guess))
        totals["cor_exact"] += prediction == reference
    return totals


@PROPERTY_SETTINGS
@given(
    st.lists(
        st.tuples(
            st.text("abcd", min_size=1, max_size=9),
            st.text("abcd", min_size=1, max_size=9),
            st.text("abcd", max_size=9),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_alignment_counts_match_the_edit_definitions(rows):
    sources, references, predictions = (list(column) for column in zip(*rows))
    r = run(sources, predictions, references, alignment=True)
    expected = edit_oracle(sources, predictions, references)
    assert (r["n_errors"], r["n_changes"], r["n_det_hits"], r["n_cor_hits"]) == (
        expected["gold"],
        expected["changes"],
        expected["det"],
        expected["cor"],
    )
    n = len(sources)
    assert r["sent_det_acc"] == expected["det_exact"] / n and r["sent_acc"] == expected["cor_exact"] / n
    assert sum(r[f"{kind}_n_errors"] for kind in scoring.EDIT_KINDS) == r["n_errors"]
