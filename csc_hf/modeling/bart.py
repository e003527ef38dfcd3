"""The seq2seq baseline: BART over the same one-token-per-character vocabulary.

`[CLS]`/`[SEP]` serve as BART's bos/eos (`[SEP]` also starts the decoder, as `</s>` does in BART), so labels are
`tokenizer(targets)["input_ids"]` with padding set to -100.
"""

from collections.abc import Sequence

import torch
from transformers import BartConfig, BartForConditionalGeneration

from .tokenization_csc import CSCTokenizer


def bart_config(tokenizer: CSCTokenizer, **overrides) -> BartConfig:
    """A BART-base-sized configuration for `tokenizer`'s vocabulary; `overrides` change any field."""
    fields = dict(
        vocab_size=len(tokenizer),
        d_model=768,
        encoder_layers=6,
        decoder_layers=6,
        encoder_attention_heads=12,
        decoder_attention_heads=12,
        encoder_ffn_dim=3072,
        decoder_ffn_dim=3072,
        max_position_embeddings=512,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.cls_token_id,
        eos_token_id=tokenizer.sep_token_id,
        decoder_start_token_id=tokenizer.sep_token_id,
        forced_eos_token_id=tokenizer.sep_token_id,
    )
    return BartConfig(**{**fields, **overrides})


def build_bart(tokenizer: CSCTokenizer, init_from: str | None = None, **overrides) -> BartForConditionalGeneration:
    """BART from scratch (`bart_config(tokenizer, **overrides)`) or from a local or Hub checkpoint whose vocabulary
    is the tokenizer's (e.g. a Chinese BART with bert-base-chinese's vocab.txt)."""
    if init_from is None:
        return BartForConditionalGeneration(bart_config(tokenizer, **overrides))
    model = BartForConditionalGeneration.from_pretrained(init_from, **overrides)
    if model.config.vocab_size != len(tokenizer):
        raise ValueError(f"{init_from} has {model.config.vocab_size} tokens, the tokenizer {len(tokenizer)}")
    return model


@torch.no_grad()
def bart_correct(
    model: BartForConditionalGeneration,
    tokenizer: CSCTokenizer,
    texts: Sequence[str],
    batch_size: int = 32,
    **generate_kwargs,
) -> list[str]:
    """One corrected text per input, of the input's length: generation starts from `[SEP] [CLS]` and is read
    position by position (`CSCTokenizer.decode_correction`); unknown, special or missing outputs keep the source
    character."""
    model.eval()
    start = [model.config.decoder_start_token_id, tokenizer.cls_token_id]
    corrected = []
    for i in range(0, len(texts), batch_size):
        batch = list(texts[i : i + batch_size])
        inputs = tokenizer(batch, padding=True, return_tensors="pt").to(model.device)
        prompt = torch.tensor([start], device=model.device).expand(len(batch), -1)
        outputs = model.generate(
            **inputs, decoder_input_ids=prompt, max_new_tokens=inputs["input_ids"].shape[1] - 1, **generate_kwargs
        )
        corrected += [tokenizer.decode_correction(text, ids[1:].tolist()) for text, ids in zip(batch, outputs)]
    return corrected


__all__ = ["bart_config", "bart_correct", "build_bart"]
