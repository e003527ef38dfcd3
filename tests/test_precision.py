"""bf16 autocast on the CPU: which precision a config trains in, that the Trainer really computes in it, and that a
tiny model trains to the fp32 loss in bf16."""

import json
from pathlib import Path

import datasets
import pytest
import torch
import yaml
from safetensors import safe_open
from transformers import BertConfig, BertForMaskedLM, Trainer

from csc_hf.training import config as training_config
from csc_hf.training import load_config, train

TINY = {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 128,
    "hidden_dropout_prob": 0.0,
    "attention_probs_dropout_prob": 0.0,
}
# bf16 rounds a matmul's inputs to 8 bits of mantissa (0.4%), but the roundings are unbiased and average out over
# the tokens of a batch and the 10 steps a logged loss averages (the loss itself is computed in fp32): the logged
# losses of TINY's 40 steps agree to 3e-5 here. 2e-3 leaves room for other CPUs' kernels and still catches any
# systematic difference (a lost update, a wrong loss scale, an overflow), which moves a loss by the 0.03-0.6 that one
# ten-step window changes it.
LOSS_TOLERANCE = 2e-3


def write_config(path: Path, **config) -> Path:
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return path


def test_precision_sets_the_trainers_bf16_key(tmp_path, monkeypatch):
    config = write_config(
        tmp_path / "c.yaml", task="mlm", output_dir=str(tmp_path / "o"), use_cpu=True, report_to="none"
    )
    monkeypatch.setattr(training_config, "cpu_has_bf16", lambda: True)
    assert load_config(config)[2].bf16  # auto, on a CPU with bf16 in hardware
    assert not load_config(config, ["precision=fp32"])[2].bf16
    assert not load_config(config, ["bf16=false"])[2].bf16  # auto keeps an explicit bf16 key
    monkeypatch.setattr(training_config, "cpu_has_bf16", lambda: False)
    assert not load_config(config)[2].bf16  # auto elsewhere: fp32
    assert load_config(config, ["precision=bf16"])[2].bf16
    assert load_config(config, ["bf16=true"])[2].bf16  # the paper preset's GPU key
    monkeypatch.setattr(training_config, "trains_on_cpu", lambda use_cpu: True)  # no accelerator: bf16 needs use_cpu
    args = load_config(config, ["precision=bf16", "use_cpu=false"])[2]
    assert args.bf16 and args.use_cpu
    model_args = load_config(config, ["precision=bf16"])[0]
    assert model_args.precision == "bf16"
    with pytest.raises(
        ValueError,
        match=r"override precision=fp32: precision=fp32 contradicts bf16=True \(override "
        r"bf16=true\); drop one of the two keys",
    ):
        load_config(config, ["bf16=true", "precision=fp32"])
    with pytest.raises(
        ValueError,
        match=r"override precision=fp16: precision='fp16': choose one of \('auto', 'bf16', "
        r"'fp32'\)",
    ):
        load_config(config, ["precision=fp16"])


@pytest.mark.parametrize("precision, dtype", [("bf16", torch.bfloat16), ("fp32", torch.float32)])
def test_the_trainer_computes_in_the_precision_and_keeps_fp32_weights(tmp_path, precision, dtype):
    """The Trainer (through accelerate) autocasts the forward on the CPU: a linear layer's output is bf16 while the
    weights and the optimizer's updates stay fp32."""
    config = write_config(
        tmp_path / "c.yaml",
        task="mlm",
        output_dir=str(tmp_path / "o"),
        use_cpu=True,
        report_to="none",
        max_steps=2,
        per_device_train_batch_size=4,
        save_strategy="no",
        disable_tqdm=True,
        precision=precision,
    )
    args = load_config(config)[2]
    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig(vocab_size=40, **TINY))
    seen = []
    model.bert.encoder.layer[0].intermediate.dense.register_forward_hook(lambda m, i, out: seen.append(out.dtype))
    ids = torch.randint(5, 40, (8, 12))
    data = datasets.Dataset.from_dict({"input_ids": ids.tolist(), "labels": ids.tolist()})
    before = model.bert.embeddings.word_embeddings.weight.clone()
    Trainer(model=model, args=args, train_dataset=data).train()
    assert seen and set(seen) == {dtype}
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    assert not torch.equal(before, model.bert.embeddings.word_embeddings.weight)


def test_bf16_trains_a_tiny_model_to_the_fp32_loss(tmp_path, small_params):
    """40 masked-LM steps from the same seed in bf16 and in fp32 log the same losses within LOSS_TOLERANCE (relative);
    the saved bf16 model is fp32 and its training record says bf16."""
    losses = {}
    for precision in ("fp32", "bf16"):
        out = tmp_path / precision
        config = write_config(
            tmp_path / f"{precision}.yaml",
            task="mlm",
            model_overrides=TINY,
            bench_params=small_params,
            output_dir=str(out),
            max_steps=40,
            per_device_train_batch_size=16,
            learning_rate=0.003,
            use_cpu=True,
            report_to="none",
            save_strategy="no",
            logging_steps=10,
            seed=3,
            disable_tqdm=True,
            eval_strategy="no",
            train_sampling_strategy="sequential",
            precision=precision,
        )
        train(*load_config(config))
        record = json.loads((out / "csc_training.json").read_text(encoding="utf-8"))
        assert record["precision"] == precision
        assert (record["torch_threads"], record["processes"]) == (torch.get_num_threads(), 1)
        losses[precision] = [h["loss"] for h in record["log_history"] if "loss" in h]
        with safe_open(str(out / "model.safetensors"), framework="pt") as weights:
            assert {weights.get_tensor(name).dtype for name in weights.keys()} == {torch.float32}
    fp32, bf16 = losses["fp32"], losses["bf16"]
    assert len(fp32) == len(bf16) == 4 and fp32[-1] < fp32[0] - 0.5  # it learned something
    assert bf16 == pytest.approx(fp32, rel=LOSS_TOLERANCE)
    assert bf16 != fp32  # bf16 really computed differently
