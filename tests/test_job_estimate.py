"""csc_hf.job_estimate: the forecast of a study's stage times from a few steps timed here."""

import pytest
from conftest import BART_TINY
from torch import nn

from csc_hf import job_estimate
from csc_hf.job_estimate import StepProbe, bart_sizes
from csc_hf.modeling import FastDropout

TINY = {
    "hidden_size": 32,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "intermediate_size": 64,
}  # a preset's `model`


def test_probe_times_every_stage_and_forecasts_the_plan():
    probe = StepProbe.measure(
        TINY,
        vocab_size=300,
        variants=["bert", "bart", "bert", "bert+pinyin_gru"],
        precision="fp32",
        bart={"decoder_layers": 1},
        pretrain_batch=4,
        finetune_batch=4,
        eval_batch=4,
        steps=1,
        threads=1,
        pretrain_keys={"attn_implementation": "eager", "fast_dropout": True},
        finetune_keys={"attn_implementation": "eager", "fast_dropout": True},
    )
    assert probe.precision == "fp32" and probe.threads == 1 and probe.pretrain_step > 0
    assert list(probe.finetune_step) == list(probe.sentence) == ["bert", "bart", "bert+pinyin_gru"]
    assert all(s > 0 for s in [*probe.finetune_step.values(), *probe.sentence.values()])
    seconds = probe.stage_seconds(100, {"bert": 10, "bart": 20}, sentences=1000)
    assert seconds == {
        "pretrain": pytest.approx(100 * probe.pretrain_step),
        "train bert": pytest.approx(10 * probe.finetune_step["bert"]),
        "evaluate bert": pytest.approx(1000 * probe.sentence["bert"]),
        "train bart": pytest.approx(20 * probe.finetune_step["bart"]),
        "evaluate bart": pytest.approx(1000 * probe.sentence["bart"]),
    }
    assert "fp32 with 1 torch thread(s)" in probe.summary() and probe.sides_step is None


def test_probe_times_the_side_encoders_pretraining():
    probe = StepProbe.measure(
        TINY, vocab_size=300, variants=["bert"], precision="fp32", sides=["pinyin_gru", "glyph_cnn"], sides_batch=4,
        pretrain_batch=4, finetune_batch=4, eval_batch=4, steps=1, threads=1,
    )  # fmt: skip
    assert probe.sides_step > 0 and "side encoders' pretraining" in probe.summary()
    assert probe.stage_seconds(10, {}, 0, sides_steps=20)["pretrain-sides"] == pytest.approx(20 * probe.sides_step)
    assert "pretrain-sides" not in probe.stage_seconds(10, {}, 0)


def test_bart_takes_the_encoders_sizes_then_its_own():
    sizes = bart_sizes(TINY, {"decoder_layers": 1})
    assert sizes == BART_TINY


def test_probe_trains_as_the_presets_blocks_say_and_evaluates_as_a_saved_model(monkeypatch):
    """The steps it times use the `pretrain:` / `finetune:` blocks' attention kernel and dropout; the evaluation it
    times uses the model's default attention, as a saved model loads, and the evaluations' `bf16_weights`."""
    trained, corrected = [], []
    monkeypatch.setattr(job_estimate, "_train_seconds", lambda model, *_: trained.append(_kernels(model)) or 1.0)

    def correct_seconds(model, tokenizer, texts, precision, passes, clock, bf16_weights):
        corrected.append((model.config._attn_implementation, bf16_weights))
        return 1.0

    monkeypatch.setattr(job_estimate, "_correct_seconds", correct_seconds)
    StepProbe.measure(
        TINY,
        vocab_size=300,
        variants=["bert"],
        steps=1,
        threads=1,
        pretrain_keys={"attn_implementation": "eager"},
        finetune_keys={"attn_implementation": "eager", "fast_dropout": True},
        bf16_weights=True,
    )
    assert trained == [("eager", "nn.Dropout"), ("eager", "FastDropout")] and corrected == [("sdpa", True)]


def _kernels(model) -> tuple[str, str]:
    """The attention kernel of ``model`` and the one kind of dropout module it has."""
    (dropout,) = {type(m) for m in model.modules() if isinstance(m, (nn.Dropout, FastDropout))}
    return model.config._attn_implementation, "FastDropout" if dropout is FastDropout else "nn.Dropout"
