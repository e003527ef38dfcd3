"""SparseBertForMaskedLM: BertForMaskedLM's loss and gradients with the output layer run only where labels are."""

import json
import logging
import math

import pytest
import torch
from conftest import train_tiny
from transformers import AutoModelForMaskedLM, BertConfig, BertForMaskedLM

from csc_hf.modeling import SparseBertForMaskedLM

CONFIG = {
    "vocab_size": 97,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 64,
    "max_position_embeddings": 64,
    "hidden_dropout_prob": 0.0,
    "attention_probs_dropout_prob": 0.0,
}


@pytest.fixture()
def models():
    torch.manual_seed(0)
    dense = BertForMaskedLM(BertConfig(**CONFIG))
    sparse = SparseBertForMaskedLM(BertConfig(**CONFIG))
    sparse.load_state_dict(dense.state_dict())
    return dense, sparse


def batch():
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(5, 97, (4, 12), generator=g)
    mask = torch.ones_like(ids)
    mask[2, 9:] = 0  # padding
    labels = torch.where(torch.rand(ids.shape, generator=g) < 0.25, ids, -100).masked_fill(mask == 0, -100)
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def test_training_loss_logits_and_gradients_are_bert_for_masked_lms(models):
    dense, sparse = models
    inputs = batch()
    out_dense, out_sparse = dense.train()(**inputs), sparse.train()(**inputs)
    labelled = inputs["labels"] != -100
    assert out_sparse.logits.shape == (int(labelled.sum()), CONFIG["vocab_size"])
    torch.testing.assert_close(out_sparse.logits, out_dense.logits[labelled])
    torch.testing.assert_close(out_sparse.loss, out_dense.loss)
    out_dense.loss.backward()
    out_sparse.loss.backward()
    for (name, a), (_, b) in zip(dense.named_parameters(), sparse.named_parameters()):
        torch.testing.assert_close(b.grad, a.grad, msg=name)


def test_eval_mode_and_no_labels_give_every_position(models):
    dense, sparse = models
    inputs = batch()
    full = dense.eval()(**inputs)
    torch.testing.assert_close(sparse.eval()(**inputs).logits, full.logits)  # evaluation: compute_metrics' logits
    torch.testing.assert_close(sparse.eval()(**inputs).loss, full.loss)
    without = {k: v for k, v in inputs.items() if k != "labels"}
    torch.testing.assert_close(sparse.train()(**without).logits, dense.train()(**without).logits)


def test_checkpoint_is_a_plain_bert_for_masked_lm(models, tmp_path):
    _, sparse = models
    sparse.save_pretrained(tmp_path)
    loaded = BertForMaskedLM.from_pretrained(tmp_path).eval()
    inputs = batch()
    torch.testing.assert_close(loaded(**inputs).logits, sparse.eval()(**inputs).logits)
    assert json.loads((tmp_path / "config.json").read_text(encoding="utf-8"))["architectures"] == ["BertForMaskedLM"]
    assert type(AutoModelForMaskedLM.from_pretrained(tmp_path)) is BertForMaskedLM


class _Tokenizer:
    pad_token_id = 0

    def __len__(self):
        return 50


def test_pretraining_trains_the_sparse_model_and_saves_a_plain_one(tmp_path, small_params):
    """The mlm task trains a SparseBertForMaskedLM (same seed, same bytes) and saves a folder that loads as a plain
    BertForMaskedLM; a plain BertForMaskedLM checkpoint (as bert-base-chinese) starts a pretraining too."""
    from csc_hf.training import check_config
    from csc_hf.training.run import _mlm_model

    def run(out):
        return train_tiny(small_params, out, task="mlm", max_steps=4, save_strategy="no")

    one, two = run(tmp_path / "one"), run(tmp_path / "two")
    assert (one / "model.safetensors").read_bytes() == (two / "model.safetensors").read_bytes()
    assert json.loads((one / "config.json").read_text(encoding="utf-8"))["architectures"] == ["BertForMaskedLM"]
    assert type(AutoModelForMaskedLM.from_pretrained(one)) is BertForMaskedLM
    bert = tmp_path / "bert"
    BertForMaskedLM(BertConfig(**CONFIG)).save_pretrained(bert)
    (bert / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "中"]), encoding="utf-8")
    model_args = check_config({"task": "mlm", "output_dir": "x", "init_from": str(bert), "max_length": 64})[0]
    assert type(_mlm_model(model_args, None, 64)) is SparseBertForMaskedLM
    model_args = check_config({"task": "mlm", "output_dir": "x"})[0]
    assert type(_mlm_model(model_args, _Tokenizer(), 128)) is SparseBertForMaskedLM


def test_unigram_cross_entropy_scores_the_validation_tokens_by_training_frequencies():
    from csc_hf.training.run import unigram_cross_entropy

    train, validation = [[2, 5, 5, 6, 3], [2, 5, 3]], [[2, 6, 5, 3]]  # special: 0, 2, 3, 4
    # add-one counts of the other ids 1, 5, 6: 0 + 1, 3 + 1, 1 + 1 (7 in all); validation scores 6 and 5
    expected = -(math.log(2 / 7) + math.log(4 / 7)) / 2
    assert unigram_cross_entropy(train, validation, [0, 2, 3, 4]) == pytest.approx(expected)
    assert math.isnan(unigram_cross_entropy(train, [[2, 3]], [0, 2, 3, 4]))


def test_a_masked_lm_at_the_unigram_plateau_is_reported(tmp_path, small_params, caplog):
    """Four steps of a tiny masked LM leave it predicting character frequencies: its evaluation says so."""
    from csc_hf.training.run import UnigramPlateau

    plateau = UnigramPlateau(6.5)
    state = type("State", (), {"is_world_process_zero": True, "global_step": 1000})()
    with caplog.at_level(logging.WARNING, logger="csc_hf"):
        plateau.on_evaluate(None, state, None, metrics={"eval_loss": 5.7})  # reads its context: 0.8 below
        assert "has not learned to read the context" not in caplog.text
        plateau.on_evaluate(None, state, None, metrics={"eval_loss": 6.6})
        assert "step 1000: the masked LM's validation loss 6.600 is within 0.2 of 6.500" in caplog.text
        caplog.clear()
        train_tiny(small_params, tmp_path / "m", task="mlm", max_steps=4, save_strategy="no", eval_strategy="steps",
                   eval_steps=4)  # fmt: skip
    assert "has not learned to read the context" in caplog.text
