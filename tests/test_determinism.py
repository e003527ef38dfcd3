"""Same seed, same bytes: every variant trained twice from the same seed ends with identical weights, in fp32 and
(bert and the fusion variants of the smoke preset) under the bf16 autocast that `precision: auto` trains in on a
CPU with bf16 in hardware (`csc_hf.training.config.precision_keys`; the Trainer's accelerate wraps the forward in it).

The batch is large enough (tokens x hidden size above torch's parallel grain of 32,768 elements) that CPU kernels
which reduce in a thread-dependent order run in parallel, as they do in real training.
"""

import contextlib
import random

import pytest
import torch
from conftest import torch_threads

from csc_hf.modeling import (
    VARIANTS,
    CSCConfig,
    CSCForCorrection,
    CSCTokenizer,
    build_char_knowledge,
    build_model,
)
from csc_hf.modeling.configuration_csc import SOURCE_KINDS, is_seq2seq

SIZES = dict(
    hidden_size=64,
    num_hidden_layers=1,
    num_attention_heads=2,
    intermediate_size=64,
    max_position_embeddings=64,
    side_size=16,
    glyph_channels=[8, 16],
    glyph_size=16,
    max_strokes=16,
)
BART_SIZES = dict(
    d_model=64,
    encoder_layers=1,
    decoder_layers=1,
    encoder_attention_heads=2,
    decoder_attention_heads=2,
    encoder_ffn_dim=64,
    decoder_ffn_dim=64,
    max_position_embeddings=64,
)
CHARS = (
    "的一是在不了有和人这中大为上们个国我以要他时来用生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定"
)
BATCH, LENGTH, STEPS = 16, 40, 3
BF16_VARIANTS = ["bert", "pinyin+glyph_gate", "plome"]


@pytest.fixture(scope="module", autouse=True)
def two_threads():
    with torch_threads(2):
        yield


@pytest.fixture(scope="module")
def texts() -> list[str]:
    rng = random.Random(0)
    return ["".join(rng.choices(CHARS, k=LENGTH)) for _ in range(BATCH)]


@pytest.fixture(scope="module")
def tokenizer(texts) -> CSCTokenizer:
    return CSCTokenizer.from_texts(texts)


@pytest.fixture(scope="module")
def knowledge(tokenizer) -> dict[str, torch.Tensor]:
    config = CSCConfig(sources=[s for s in SOURCE_KINDS if not s.endswith("_vectors")], **SIZES)
    return build_char_knowledge(tokenizer.get_vocab(), config)


def trained_weights(variant: str, tokenizer, knowledge, texts, bf16: bool = False) -> dict[str, torch.Tensor]:
    """The state dict after STEPS AdamW steps from seed 0 (inputs: `texts` with every third character replaced), the
    forward under bf16 autocast with ``bf16``."""
    torch.manual_seed(0)
    if is_seq2seq(variant):
        model = build_model(variant, tokenizer, **BART_SIZES)
    else:
        model = CSCForCorrection(CSCConfig(vocab_size=len(tokenizer), **SIZES, **VARIANTS[variant]), knowledge)
    sources = ["".join("我" if i % 3 == 0 else ch for i, ch in enumerate(text)) for text in texts]
    inputs = tokenizer(sources, padding=True, return_tensors="pt")
    labels = tokenizer(texts, padding=True, return_tensors="pt")["input_ids"]
    labels = labels.masked_fill(labels == tokenizer.pad_token_id, -100)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    autocast = torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
    for _ in range(STEPS):
        with autocast:
            loss = model(**inputs, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return {name: tensor.clone() for name, tensor in model.state_dict().items()}


@pytest.mark.parametrize("variant, bf16", [(v, False) for v in VARIANTS] + [(v, True) for v in BF16_VARIANTS])
def test_same_seed_same_weights(variant, bf16, tokenizer, knowledge, texts):
    first = trained_weights(variant, tokenizer, knowledge, texts, bf16)
    second = trained_weights(variant, tokenizer, knowledge, texts, bf16)
    assert first.keys() == second.keys()
    assert {t.dtype for t in first.values() if t.is_floating_point()} == {torch.float32}
    differ = [name for name in first if not torch.equal(first[name], second[name])]
    assert not differ, f"{variant}{' (bf16)' * bf16}: retraining changed {differ}"


def test_bf16_autocast_changes_the_result(tokenizer, knowledge, texts):
    """The bf16 runs above compute in bf16 (else they would repeat the fp32 ones)."""
    fp32 = trained_weights("bert", tokenizer, knowledge, texts)
    bf16 = trained_weights("bert", tokenizer, knowledge, texts, bf16=True)
    assert any(not torch.equal(fp32[name], bf16[name]) for name in fp32)
