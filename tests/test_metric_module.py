"""Tests of the `evaluate` module metrics/csc: loading offline, compute, add_batch, Trainer."""

from __future__ import annotations

import doctest
import inspect
import re
import uuid
from pathlib import Path

import evaluate
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from csc_hf import scoring

REPO = Path(__file__).resolve().parents[1]
SOURCES = ["我今天很高心", "他们在学校里", "明天会下鱼吗", "今天天汽很好"]
PREDICTIONS = ["我今天很高兴", "他们在学校理", "明天会下鱼马", "今天天气很好"]
REFERENCES = ["我今天很高兴", "他们在学校里", "明天会下雨吗", "今天天气很好"]


@pytest.fixture(scope="module")
def csc(tmp_path_factory):
    """The module loaded by its path relative to the repository root, as users load it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(REPO)
        patch.setenv("HF_HUB_OFFLINE", "1")
        return evaluate.load(
            "metrics/csc", experiment_id=uuid.uuid4().hex, cache_dir=str(tmp_path_factory.mktemp("csc_cache"))
        )


def test_loads_offline_and_wraps_scoring(csc):
    assert isinstance(csc, evaluate.Metric)
    assert "Chinese Spelling Check" in csc.description and "tseng-etal-2015" in csc.citation
    for convention in scoring.CONVENTIONS:
        result = csc.compute(sources=SOURCES, predictions=PREDICTIONS, references=REFERENCES, convention=convention)
        assert result == scoring.score(SOURCES, PREDICTIONS, REFERENCES, convention=convention, bootstrap=0)
        assert result["convention"] == convention


def test_module_runs_from_the_evaluate_cache_copy(csc):
    # evaluate imports a copy of csc.py from its modules cache; that copy must still reach csc_hf
    module_file = Path(inspect.getfile(type(csc))).resolve()
    assert module_file.name == "csc.py"
    assert module_file.is_relative_to(Path(evaluate.config.HF_MODULES_CACHE).resolve())
    assert module_file.read_text(encoding="utf-8") == (REPO / "metrics/csc/csc.py").read_text(encoding="utf-8")


def test_docstring_examples(csc, monkeypatch):
    monkeypatch.chdir(REPO)
    module = __import__(type(csc).__module__, fromlist=["_KWARGS_DESCRIPTION"])
    test = doctest.DocTestParser().get_doctest(
        module._KWARGS_DESCRIPTION, {}, "csc", str(REPO / "metrics/csc/csc.py"), 0
    )
    runner = doctest.DocTestRunner()
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


def test_kwargs_pass_through(csc):
    metadata = [{"errors": [{"position": 5, "type": "phonetic"}]}, {"errors": []}]
    metadata += [{"errors": [{"position": 4, "type": "both"}]}, {"errors": [{"position": 3, "type": "graphic"}]}]
    pairs = [("兴", "心")]
    result = csc.compute(
        sources=SOURCES,
        predictions=PREDICTIONS,
        references=REFERENCES,
        metadata=metadata,
        train_pairs=pairs,
        bootstrap=100,
        seed=3,
        numeric_only=True,
    )
    expected = scoring.score(
        SOURCES, PREDICTIONS, REFERENCES, metadata=metadata, train_pairs=pairs, bootstrap=100, seed=3, numeric_only=True
    )
    assert result == expected
    assert result["type_phonetic_char_cor_r"] == 1.0 and result["seen_n_errors"] == 1
    assert all(isinstance(v, (int, float)) for v in result.values())


def test_token_id_arrays_with_padding(csc):
    sources = np.array([[101, 5, 6, 7, 102, 0], [101, 8, 9, 102, 0, 0]])
    predictions = np.array([[0, 5, 4, 7, 0, 0], [0, 8, 9, 3, 3, 3]])
    references = np.array([[-100, 5, 4, 7, -100, -100], [-100, 8, 2, -100, -100, -100]])
    result = csc.compute(sources=sources, predictions=predictions, references=references)
    assert result == scoring.score(sources, predictions, references, bootstrap=0)
    assert (result["n_sentences"], result["n_errors"], result["sent_cor_r"]) == (2, 2, 0.5)


def test_add_and_add_batch(csc):
    for s, p, r in zip(SOURCES, PREDICTIONS, REFERENCES):
        csc.add(sources=s, prediction=p, reference=r)
    assert csc.compute() == scoring.score(SOURCES, PREDICTIONS, REFERENCES, bootstrap=0)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(1, 3), min_size=1, max_size=4), st.sampled_from(scoring.CONVENTIONS))
def test_add_batch_in_pieces_equals_one_compute(csc, pieces, convention):
    n = len(SOURCES)
    cuts = sorted({min(sum(pieces[: i + 1]), n) for i in range(len(pieces))} | {n})
    start = 0
    for stop in cuts:
        if stop > start:
            csc.add_batch(
                sources=SOURCES[start:stop], predictions=PREDICTIONS[start:stop], references=REFERENCES[start:stop]
            )
        start = stop
    in_pieces = csc.compute(convention=convention, bootstrap=50)
    at_once = csc.compute(
        sources=SOURCES, predictions=PREDICTIONS, references=REFERENCES, convention=convention, bootstrap=50
    )
    assert in_pieces == at_once


def test_bad_input_is_reported(csc):
    with pytest.raises(TypeError, match=r"predictions\[1\] is NoneType"):
        csc.compute(sources=SOURCES[:2], predictions=[PREDICTIONS[0], None], references=REFERENCES[:2])
    with pytest.raises(ValueError, match="example 0"):
        csc.compute(sources=["ab"], predictions=["ab"], references=["abc"])


@pytest.mark.parametrize("bad", [[1, 2], 123])
@pytest.mark.parametrize("column", ["sources", "predictions", "references"])
def test_mixed_items_are_rejected_as_scoring_rejects_them(csc, column, bad):
    inputs = {"sources": SOURCES[:2], "predictions": PREDICTIONS[:2], "references": REFERENCES[:2]}
    inputs[column] = [inputs[column][0], bad]
    with pytest.raises(TypeError) as expected:
        scoring.score(**inputs)
    with pytest.raises(TypeError, match=re.escape(str(expected.value))):
        csc.compute(**inputs)
    with pytest.raises(TypeError, match=re.escape(str(expected.value))):
        csc.add_batch(**inputs)
    assert csc.compute(sources=SOURCES, predictions=PREDICTIONS, references=REFERENCES)["n_sentences"] == 4


def test_a_missing_column_is_named(csc):
    with pytest.raises(ValueError, match="csc: missing sources: give sources, predictions and references"):
        csc.compute(sources=None, predictions=PREDICTIONS, references=REFERENCES)
    with pytest.raises(ValueError, match="csc: missing sources, predictions, references"):
        csc.compute(sources=None)
    with pytest.raises(TypeError, match=r"predictions\[0\] is int, expected str like sources\[0\]"):
        csc.add(sources=SOURCES[0], prediction=5, reference=REFERENCES[0])


# --------------------------------------------------------------------------- Trainer


def test_trainer_compute_metrics(tmp_path, csc):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from datasets import Dataset

    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=40,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=32,
    )
    model = transformers.BertForMaskedLM(config).eval()
    rng = np.random.default_rng(0)
    rows = []
    for length in (3, 6, 4, 7, 5):  # batches of 2 get different lengths: Trainer pads across them with -100
        text = rng.integers(5, 40, length)
        target = np.where(rng.random(length) < 0.3, rng.integers(5, 40, length), text)
        rows.append({"input_ids": [1, *text.tolist(), 2], "labels": [-100, *target.tolist(), -100]})

    def collate(batch):
        width = max(len(row["input_ids"]) for row in batch)

        def pad(key, value):
            return torch.tensor([row[key] + [value] * (width - len(row[key])) for row in batch])

        mask = torch.tensor([[1] * len(row["input_ids"]) + [0] * (width - len(row["input_ids"])) for row in batch])
        return {"input_ids": pad("input_ids", 0), "labels": pad("labels", -100), "attention_mask": mask}

    def evaluate_csc(eval_pred):
        return csc.compute(
            sources=eval_pred.inputs,
            predictions=eval_pred.predictions,
            references=eval_pred.label_ids,
            numeric_only=True,
        )

    expected_predictions = [
        model(input_ids=torch.tensor([row["input_ids"]])).logits.argmax(-1)[0].tolist() for row in rows
    ]
    expected = scoring.score(
        [row["input_ids"] for row in rows],
        expected_predictions,
        [row["labels"] for row in rows],
        bootstrap=0,
        numeric_only=True,
    )
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path),
        per_device_eval_batch_size=2,
        include_for_metrics=["inputs"],
        report_to="none",
        use_cpu=True,
        disable_tqdm=True,
    )
    for compute_metrics in (scoring.make_compute_metrics(), evaluate_csc):
        trainer = transformers.Trainer(
            model=model,
            args=args,
            eval_dataset=Dataset.from_list(rows),
            data_collator=collate,
            compute_metrics=compute_metrics,
            preprocess_logits_for_metrics=scoring.preprocess_logits_for_metrics,
        )
        metrics = trainer.evaluate()
        assert {k: metrics[f"eval_{k}"] for k in expected} == pytest.approx(expected)
        assert metrics["eval_n_sentences"] == len(rows)


def test_metric_card_examples(csc):
    """Every `>>>` example of the metric card (metrics/csc/README.md), run with the loaded module as `csc`."""
    card = (REPO / "metrics/csc/README.md").read_text(encoding="utf-8")
    blocks = [block for block in re.findall(r"```python\n(.+?)```", card, re.S) if ">>>" in block]
    test = doctest.DocTestParser().get_doctest("\n".join(blocks), {"csc": csc}, "card", "metrics/csc/README.md", 0)
    assert len(test.examples) >= 10
    runner = doctest.DocTestRunner()
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


def test_alignment_and_the_fast_paths_give_scorings_numbers(csc):
    sources, predictions, references = (
        ["我们去学", "我们们去学校", "我们去学效"],
        ["我们去学校", "我们们去学校", "我们去学"],
        ["我们去学校", "我们去学校", "我们去学校"],
    )
    expected = scoring.score(sources, predictions, references, alignment=True, bootstrap=0)
    assert csc.compute(sources=sources, predictions=predictions, references=references, alignment=True) == expected
    csc.add_batch(sources=sources[:1], predictions=predictions[:1], references=references[:1])
    csc.add_batch(sources=sources[1:], predictions=predictions[1:], references=references[1:])
    assert csc.compute(alignment=True) == expected
    csc.add_batch(sources=[[1, 2]], predictions=[[1, 2]], references=[[1, 2]])
    with pytest.raises(ValueError, match="this batch holds strings, the batches before it did not"):
        csc.add_batch(sources=sources, predictions=predictions, references=references)
    assert csc.compute()["n_sentences"] == 1
