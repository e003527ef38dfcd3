"""Side encoders pretrained over a frozen masked LM (task: sides), and variants that start from them."""

import json

import pytest
import torch
from conftest import BERT_TINY, train_tiny
from safetensors.torch import load_file
from torch.nn import functional as F
from transformers import BertForMaskedLM

from csc_hf.modeling import CSCConfig, CSCTokenizer, SidePretrainingModel, build_char_knowledge, build_model
from csc_hf.training import check_config

SOURCES = ["pinyin_gru", "glyph_cnn"]


@pytest.fixture(scope="module")
def tiny():
    """A SidePretrainingModel over a tiny random masked LM, and a masked batch of its vocabulary."""
    chars = list("中国人民银行大小上下天地日月水火山石")
    tokenizer = CSCTokenizer.from_texts(["".join(chars)])
    config = CSCConfig(vocab_size=len(tokenizer), sources=SOURCES, max_position_embeddings=32, **BERT_TINY)
    torch.manual_seed(0)
    model = SidePretrainingModel(config, build_char_knowledge(tokenizer.get_vocab(), config))
    ids = torch.tensor([tokenizer.convert_tokens_to_ids(chars[:8]), tokenizer.convert_tokens_to_ids(chars[8:16])])
    labels = torch.full_like(ids, -100)
    labels[:, [1, 4]] = ids[:, [1, 4]]
    masked = ids.masked_fill(labels != -100, tokenizer.mask_token_id)
    return model, {"input_ids": masked, "attention_mask": torch.ones_like(ids), "labels": labels}


def test_it_starts_as_the_masked_lm_and_trains_only_the_sides(tiny):
    """The side projections start at zero, so the first loss is the frozen masked LM's own cross-entropy at the
    masked positions; the gradient reaches the sides alone, and the masked LM stays in eval mode (no dropout)."""
    model, batch = tiny
    model.train()
    assert not model.mlm.training and model.sources.training
    out = model(**batch)
    assert out.logits.shape == (len(SOURCES), 4, model.config.vocab_size)
    with torch.no_grad():
        alone = model.mlm(batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    labelled = batch["labels"] != -100
    torch.testing.assert_close(out.loss, F.cross_entropy(alone[labelled], batch["labels"][labelled]))
    out.loss.backward()
    assert all(p.grad is None for p in model.mlm.parameters())
    assert all(side.project.weight.grad.abs().sum() > 0 for side in model.sources.values())
    model.zero_grad()


def test_sides_pretrained_in_the_training_task_start_a_variant(tmp_path, small_params):
    """mlm, then task: sides over it for all_gate's sources (same seed, same bytes; the masked LM unchanged), then
    that variant starting from those side encoders (learning rate 0: what it starts from is what it saves), its
    projections at their own initialisation."""
    mlm = train_tiny(small_params, tmp_path / "mlm", task="mlm", max_steps=3, save_strategy="no")
    keys = dict(task="sides", variant="all_gate", init_from=str(mlm), max_steps=3, save_strategy="no")
    keys.update(mask_replace_prob=1.0, random_replace_prob=0.0)
    one, two = (train_tiny(small_params, tmp_path / name, **keys) for name in ("one", "two"))
    assert (one / "model.safetensors").read_bytes() == (two / "model.safetensors").read_bytes()
    sides, before = load_file(one / "model.safetensors"), BertForMaskedLM.from_pretrained(mlm).state_dict()
    frozen = SidePretrainingModel.from_pretrained(one).mlm.state_dict()
    for name, value in before.items():
        torch.testing.assert_close(frozen[name], value, msg=name)
    assert json.loads((one / "csc_training.json").read_text(encoding="utf-8"))["task"] == "sides"

    start = {"init_from": str(mlm), "tokenizer_path": str(mlm), "learning_rate": 0.0, "save_strategy": "no"}
    model_dir = train_tiny(
        small_params, tmp_path / "gate", variant="all_gate", init_sides_from=str(one), max_steps=1, **start
    )
    model = load_file(model_dir / "model.safetensors")
    for name in ("pinyin_gru", "stroke_gru", "glyph_cnn"):  # all_gate's sources, pretrained in its sides run
        prefix = f"sources.{name}.encoder."
        got = {k[len("csc.") :]: v for k, v in model.items() if k.startswith(f"csc.{prefix}")}
        assert got, name
        for key, value in got.items():
            torch.testing.assert_close(value, sides[key], msg=key)
        assert model[f"csc.sources.{name}.project.weight"].abs().sum() == 0  # gate fusion: starts at zero


def test_bad_side_starts_are_named_before_any_work(tmp_path, small_params):
    mlm = train_tiny(small_params, tmp_path / "mlm", task="mlm", max_steps=1, save_strategy="no")
    with pytest.raises(ValueError, match="task=sides needs init_from"):
        train_tiny(small_params, tmp_path / "s", task="sides", variant="all_gate", max_steps=1)
    assert not (tmp_path / "s").exists()
    with pytest.raises(FileNotFoundError, match="init_sides_from=.*nowhere.*no model.safetensors"):
        check_config({"variant": "all_gate", "output_dir": str(tmp_path / "x"), "init_sides_from": "nowhere"})
    with pytest.raises(ValueError, match="task=sides: variant='bert' has no side sources"):
        check_config({"task": "sides", "output_dir": str(tmp_path / "x"), "init_from": str(mlm)})
    with pytest.raises(ValueError, match="init_sides_from=.* is for task=correction"):
        check_config({"task": "mlm", "output_dir": str(tmp_path / "x"), "init_sides_from": str(mlm)})
    sides = train_tiny(
        small_params,
        tmp_path / "sides",
        task="sides",
        init_from=str(mlm),
        max_steps=1,
        save_strategy="no",
        model_overrides={"sources": ["pinyin_gru"]},
    )
    tokenizer = CSCTokenizer.from_pretrained(mlm)
    with pytest.raises(ValueError, match="no pretrained encoder for the source 'stroke_gru'.*pinyin_gru"):
        build_model("all_gate", tokenizer, init_from=str(mlm), init_sides_from=sides)
    with pytest.raises(ValueError, match="'bert' has no side encoders"):
        build_model("bert", tokenizer, init_from=str(mlm), init_sides_from=sides)
    with pytest.raises(ValueError, match="does not fit"):
        build_model("bert+pinyin_gru", tokenizer, init_from=str(mlm), init_sides_from=sides, side_size=16)
