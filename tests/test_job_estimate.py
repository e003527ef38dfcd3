"""csc_hf.job_estimate: the forecast of a study's stage times from a few steps timed here."""

from collections.abc import Mapping

import pytest
import torch
from conftest import BART_TINY, BERT_TINY
from torch import nn
from transformers import BertConfig, BertModel

from csc_hf import job_estimate
from csc_hf.job_estimate import StepProbe, bart_sizes
from csc_hf.modeling import CSCTokenizer, FastDropout, build_model
from csc_hf.modeling.kernels import EAGER_FAST_DROPOUT


def test_probe_times_every_stage_and_forecasts_the_plan():
    probe = StepProbe.measure(
        BERT_TINY,
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
        BERT_TINY, vocab_size=300, variants=["bert"], precision="fp32", sides=["pinyin_gru", "glyph_cnn"],
        sides_batch=4, pretrain_batch=4, finetune_batch=4, eval_batch=4, steps=1, threads=1,
    )  # fmt: skip
    assert probe.sides_step > 0 and "side encoders' pretraining" in probe.summary()
    assert probe.stage_seconds(10, {}, 0, sides_steps=20)["pretrain-sides"] == pytest.approx(20 * probe.sides_step)
    assert "pretrain-sides" not in probe.stage_seconds(10, {}, 0)


def test_bart_takes_the_encoders_sizes_then_its_own(tmp_path):
    sizes = bart_sizes(BERT_TINY, {"decoder_layers": 1})
    assert {key: sizes[key] for key in BART_TINY} == BART_TINY
    # the BART it times is the one the study warm-starts from a pretrained encoder of those sizes
    tokenizer = CSCTokenizer.from_texts(["我们今天去学校"])
    BertModel(BertConfig(vocab_size=len(tokenizer), **BERT_TINY)).save_pretrained(tmp_path / "encoder")
    study = build_model("bart", tokenizer, init_from=str(tmp_path / "encoder"), decoder_layers=1).config
    probe = build_model("bart", tokenizer, **sizes).config
    assert probe.to_diff_dict() == study.to_diff_dict()


def test_probe_trains_as_the_presets_blocks_say_and_evaluates_as_a_saved_model(monkeypatch):
    """The steps it times use the `pretrain:` / `finetune:` blocks' attention kernel and dropout; the evaluation it
    times uses the model's default attention, as a saved model loads, and the evaluations' `bf16_weights`."""
    trained, corrected = [], []
    monkeypatch.setattr(job_estimate, "_train_seconds", lambda model, *_: trained.append(_kernels(model)) or 1.0)

    def correct_seconds(model, tokenizer, texts, precision, passes, clock, bf16_weights):
        corrected.append((model.config._attn_implementation, bf16_weights, passes))
        return 1.0

    monkeypatch.setattr(job_estimate, "_correct_seconds", correct_seconds)
    StepProbe.measure(
        BERT_TINY,
        vocab_size=300,
        variants=["bert"],
        steps=1,
        passes=3,
        threads=1,
        pretrain_keys={"attn_implementation": "eager"},
        finetune_keys={"attn_implementation": "eager", "fast_dropout": True},
        bf16_weights=True,
    )
    assert trained == [("eager", "nn.Dropout"), (EAGER_FAST_DROPOUT, "FastDropout")] and corrected == [
        ("sdpa", True, 3)
    ]


def _kernels(model) -> tuple[str, str]:
    """The attention kernel of ``model`` and the one kind of dropout module it has."""
    (dropout,) = {type(m) for m in model.modules() if isinstance(m, (nn.Dropout, FastDropout))}
    return model.config._attn_implementation, "FastDropout" if dropout is FastDropout else "nn.Dropout"


SENTENCES = [
    "今天天气很好",
    "我们一起去公园散步吧",
    "他说明天会下雨所以我们要带伞",
    "这本书的作者是一位很有名的历史学家他写了很多关于古代中国的书",
    "好",
    "银行门口停着一辆车",
]


def test_probe_on_texts_trains_on_batches_of_them_over_their_characters():
    probe = StepProbe.measure(
        BERT_TINY, None, ["bert", "bert+pinyin_gru"], precision="fp32", pretrain_batch=2, finetune_batch=2,
        eval_batch=2, sides=["glyph_cnn"], sides_batch=2, steps=3, threads=1, texts=SENTENCES,
    )  # fmt: skip
    assert probe.pretrain_step > 0 and probe.sides_step > 0 and list(probe.finetune_step) == ["bert", "bert+pinyin_gru"]
    assert all(s > 0 for s in [*probe.finetune_step.values(), *probe.sentence.values()])
    with pytest.raises(ValueError, match="one of vocab_size"):
        StepProbe.measure(BERT_TINY, 300, ["bert"], texts=SENTENCES)
    with pytest.raises(ValueError, match="one of vocab_size"):
        StepProbe.measure(BERT_TINY, None, ["bert"])


def test_the_timed_batches_span_the_group_and_weigh_as_all_of_it():
    """Ranks from the shortest batch to the longest; weights that give the mean over every width of the group where
    a step's seconds are linear in its width between the timed ones (the longest batches are timed, not guessed)."""
    assert job_estimate.spread(6) == [0, 10, 20, 29, 39, 49] and job_estimate.spread(1) == [25]
    widths = sorted([3, 5, 5, 8, 12, 13, 20, 21, 30, 47, 90, 91])
    kept = job_estimate.spread(4, len(widths))
    weights = job_estimate.interpolation_weights(widths, kept)
    assert kept[0] == 0 and kept[-1] == len(widths) - 1 and sum(weights) == pytest.approx(1.0)
    seconds = [0.2 + 0.01 * widths[k] for k in kept]  # linear in the width
    mean = sum(0.2 + 0.01 * w for w in widths) / len(widths)
    assert sum(w * s for w, s in zip(weights, seconds)) == pytest.approx(mean)
    only_ends = job_estimate.interpolation_weights(widths, [0, len(widths) - 1])
    assert only_ends[1] == pytest.approx((sum(widths) / len(widths) - 3) / (91 - 3))  # the share of the longest
    middle = job_estimate.interpolation_weights(widths, [4])  # one batch, the rest extrapolated: it stands for all
    assert middle == [pytest.approx(1.0)]


def test_the_probe_weighs_each_timed_step():
    """The step time is the weighted mean of the timed batches' steps, the warm-up step left out."""
    ticks = iter([0.0, 10.0, 10.0, 11.0, 11.0, 14.0])  # a warm-up step of 10 s, then steps of 1 s and 3 s
    tokenizer = CSCTokenizer.from_texts(SENTENCES)
    batches = job_estimate._text_batches(tokenizer, SENTENCES, 2, 2, torch.Generator(), masked=None)
    assert len(batches.batches) == 2 and sum(batches.weights) == pytest.approx(1.0)
    model = build_model("bert", tokenizer, **BERT_TINY)
    seconds = job_estimate._train_seconds(model, batches, False, lambda: next(ticks))
    assert seconds == pytest.approx(batches.weights[0] * 1.0 + batches.weights[1] * 3.0)


def test_the_masked_lm_batches_label_the_share_the_pretraining_masks(monkeypatch):
    """The pretraining step is timed on batches labelled as the `pretrain:` block's ``mlm_probability`` masks them
    (the training's default without it); the fine-tuning's label every character."""
    labelled = []

    def train_seconds(model, batches, *_):
        labelled.append([float((b["labels"] != -100).sum() / b["attention_mask"].sum()) for b in batches.batches])
        return 1.0

    monkeypatch.setattr(job_estimate, "_train_seconds", train_seconds)
    monkeypatch.setattr(job_estimate, "_correct_seconds", lambda *_: 1.0)
    options = {"pretrain_batch": 4, "finetune_batch": 2, "eval_batch": 2, "steps": 2, "threads": 1}
    StepProbe.measure(BERT_TINY, None, ["bert"], texts=SENTENCES, pretrain_keys={"mlm_probability": 1.0}, **options)
    assert labelled == [[1.0, 1.0], [1.0, 1.0]]
    labelled.clear()
    StepProbe.measure(BERT_TINY, None, ["bert"], texts=SENTENCES, **options)
    assert all(share < 1.0 for share in labelled[0]) and labelled[1] == [1.0, 1.0]


def test_the_probe_reads_only_the_timed_keys_of_a_recipe(monkeypatch):
    """A forecast takes another preset's step times where its `TIMED_KEYS` are the same (`Study.forecast`), so the
    probe may read no other training key: here it is given every key of the `cpu-tiny` recipe and reads only those."""
    from csc_hf.study import Preset

    read = set()

    class Keys(Mapping):  # records each key read; iterating reads them all
        def __init__(self, keys):
            self.keys_ = dict(keys)

        def __getitem__(self, key):
            read.add(key)
            return self.keys_[key]

        def __iter__(self):
            read.update(self.keys_)
            return iter(self.keys_)

        def __len__(self):
            return len(self.keys_)

    monkeypatch.setattr(job_estimate, "_train_seconds", lambda *_: 1.0)
    monkeypatch.setattr(job_estimate, "_correct_seconds", lambda *_: 1.0)
    preset = Preset.load("cpu-tiny")
    options = {"pretrain_batch": 4, "finetune_batch": 2, "eval_batch": 2, "steps": 2, "threads": 1}
    keys = {"pretrain_keys": Keys(preset.pretrain), "finetune_keys": Keys(preset.finetune)}
    StepProbe.measure(BERT_TINY, None, ["bert", "plome"], texts=SENTENCES, **keys, **options)
    assert read and read <= set(job_estimate.TIMED_KEYS)
    assert job_estimate.timed_keys(preset.finetune) == {k: preset.finetune[k] for k in read & set(preset.finetune)}
