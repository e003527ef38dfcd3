"""The seq2seq baseline: BART over the same one-token-per-character vocabulary.

`[CLS]`/`[SEP]` serve as BART's bos/eos (`[SEP]` also starts the decoder, as `</s>` does in BART), so labels are
`tokenizer(targets)["input_ids"]` with padding set to -100.

Without a pretrained Chinese BART, `build_bart` warm-starts one from the BERT checkpoint that every other variant starts
from (`bart_from_bert`, after Rothe et al. 2020, "Leveraging Pre-trained Checkpoints for Sequence Generation Tasks"):
BERT and BART layers are both post-LayerNorm Transformer layers, so the encoder becomes the BERT encoder and the
decoder takes BERT's first layers, and only the cross-attention starts fresh.
"""

import re
from collections.abc import Sequence

import torch
from transformers import BartConfig, BartForConditionalGeneration, BertConfig, BertModel

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


# BART parameter name -> BERT parameter name (of `BertModel`); the layer index is filled in
_FROM_BERT = {
    "(shared|embed_tokens).weight": "embeddings.word_embeddings.weight",
    "layernorm_embedding.{p}": "embeddings.LayerNorm.{p}",
    "self_attn.q_proj.{p}": "encoder.layer.{i}.attention.self.query.{p}",
    "self_attn.k_proj.{p}": "encoder.layer.{i}.attention.self.key.{p}",
    "self_attn.v_proj.{p}": "encoder.layer.{i}.attention.self.value.{p}",
    "self_attn.out_proj.{p}": "encoder.layer.{i}.attention.output.dense.{p}",
    "self_attn_layer_norm.{p}": "encoder.layer.{i}.attention.output.LayerNorm.{p}",
    "fc1.{p}": "encoder.layer.{i}.intermediate.dense.{p}",
    "fc2.{p}": "encoder.layer.{i}.output.dense.{p}",
    "final_layer_norm.{p}": "encoder.layer.{i}.output.LayerNorm.{p}",
}


def _bert_name(name: str) -> str | None:
    """The BERT parameter a BART parameter is copied from; None for the cross-attention, which starts fresh, and the
    position embeddings, which `bart_from_bert` copies itself."""
    name = re.sub(r"^model\.((en|de)coder\.)?", "", name)
    layer = re.match(r"layers\.(\d+)\.(.*)", name)
    index, name = (layer.group(1), layer.group(2)) if layer else (None, name)
    for bart, bert in _FROM_BERT.items():
        if re.fullmatch(bart.format(p=r"(weight|bias)"), name) and ("{i}" in bert) == (index is not None):
            return bert.format(i=index, p=name.rsplit(".", 1)[1])
    return None


def bart_fields(bert: BertConfig) -> dict:
    """The BartConfig fields of a BART the size of `bert`, as `bart_from_bert` warm-starts it: BERT's width, heads,
    FFN, positions, activation and dropouts, and as many encoder and decoder layers as BERT has layers."""
    return dict(
        d_model=bert.hidden_size,
        encoder_layers=bert.num_hidden_layers,
        decoder_layers=bert.num_hidden_layers,
        encoder_attention_heads=bert.num_attention_heads,
        decoder_attention_heads=bert.num_attention_heads,
        encoder_ffn_dim=bert.intermediate_size,
        decoder_ffn_dim=bert.intermediate_size,
        max_position_embeddings=bert.max_position_embeddings,
        activation_function=bert.hidden_act,
        dropout=bert.hidden_dropout_prob,
        attention_dropout=bert.attention_probs_dropout_prob,
    )


def bart_from_bert(tokenizer: CSCTokenizer, path: str, **overrides) -> BartForConditionalGeneration:
    """BART warm-started from the BERT checkpoint at `path` (vocabulary: the tokenizer's): its size is BERT's unless
    `overrides` change it (e.g. ``decoder_layers=2``: the decoder takes BERT's first two layers); embeddings, encoder
    and decoder layers are BERT's, the cross-attention starts fresh and the output layer is tied to the embeddings."""
    bert = BertModel.from_pretrained(path, add_pooling_layer=False)
    b: BertConfig = bert.config
    if b.vocab_size != len(tokenizer):
        raise ValueError(f"{path} has {b.vocab_size} tokens, the tokenizer {len(tokenizer)}")
    model = BartForConditionalGeneration(bart_config(tokenizer, **{**bart_fields(b), **overrides}))
    weights = bert.state_dict()
    # BERT adds the segment-0 embedding to every position; BART's positions are offset by 2
    positions = weights["embeddings.position_embeddings.weight"] + weights["embeddings.token_type_embeddings.weight"][0]
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.endswith("embed_positions.weight"):
                source, target = positions, parameter[2 : 2 + len(positions)]
            elif (bert_name := _bert_name(name)) is None:
                continue
            elif bert_name not in weights:
                raise ValueError(
                    f"{path}: BART {name} would copy BERT {bert_name}, which the checkpoint lacks "
                    f"(it has {b.num_hidden_layers} layers; lower encoder_layers / decoder_layers)"
                )
            else:
                source, target = weights[bert_name], parameter
            if source.shape != target.shape:
                raise ValueError(
                    f"{path}: BERT's {tuple(source.shape)} does not fit BART {name} "
                    f"{tuple(target.shape)}; leave d_model and the ffn/position sizes to BERT"
                )
            target.copy_(source)
    return model


def build_bart(tokenizer: CSCTokenizer, init_from: str | None = None, **overrides) -> BartForConditionalGeneration:
    """BART from scratch (`bart_config(tokenizer, **overrides)`), warm-started from a BERT checkpoint
    (`bart_from_bert`), or loaded from a local or Hub BART checkpoint whose vocabulary is the tokenizer's (e.g. a
    Chinese BART with bert-base-chinese's vocab.txt)."""
    if init_from is None:
        return BartForConditionalGeneration(bart_config(tokenizer, **overrides))
    if BartConfig.get_config_dict(init_from)[0].get("model_type") == "bert":
        return bart_from_bert(tokenizer, init_from, **overrides)
    model = BartForConditionalGeneration.from_pretrained(init_from, **overrides)
    if model.config.vocab_size != len(tokenizer):
        raise ValueError(f"{init_from} has {model.config.vocab_size} tokens, the tokenizer {len(tokenizer)}")
    return model


@torch.no_grad()
def bart_generate(
    model: BartForConditionalGeneration,
    tokenizer: CSCTokenizer,
    texts: Sequence[str],
    batch_size: int = 32,
    free: bool = False,
    attn_implementation: str | None = None,
    **generate_kwargs,
) -> list[list[int]]:
    """The token ids BART generates for each text, from `[SEP] [CLS]` (the start of its training labels) up to the
    first `[SEP]`: as many tokens as the text's (`free=False`: read position by position), or up to twice as many
    plus 8, within the model's positions (`free=True`: the output may insert or drop characters).

    The decoder reads one new position a step, a query of length 1, for which eager attention is faster than
    SDPA's CPU kernel (bench/bench_attention.py): on a CPU the model generates with eager attention, elsewhere with
    its own; `attn_implementation` names the kernel instead. The model gets its own kernel back afterwards."""
    model.eval()
    own = model.config._attn_implementation
    model.set_attn_implementation(attn_implementation or ("eager" if model.device.type == "cpu" else own))
    start = [model.config.decoder_start_token_id, tokenizer.cls_token_id]
    positions = model.config.max_position_embeddings - len(start)
    generated = []
    try:
        for i in range(0, len(texts), batch_size):
            batch = list(texts[i : i + batch_size])
            inputs = tokenizer(batch, padding=True, return_tensors="pt").to(model.device)
            prompt = torch.tensor([start], device=model.device).expand(len(batch), -1)
            width = inputs["input_ids"].shape[1]
            outputs = model.generate(
                **inputs,
                decoder_input_ids=prompt,
                max_new_tokens=min(2 * width + 8, positions) if free else width - 1,
                **generate_kwargs,
            )
            for ids in outputs[:, len(start) :].tolist():
                ends = [k for k, token in enumerate(ids) if token in (tokenizer.sep_token_id, tokenizer.pad_token_id)]
                generated.append(ids[: ends[0]] if ends else ids)
    finally:
        model.set_attn_implementation(own)
    return generated


def bart_correct(
    model: BartForConditionalGeneration,
    tokenizer: CSCTokenizer,
    texts: Sequence[str],
    batch_size: int = 32,
    **generate_kwargs,
) -> list[str]:
    """One corrected text per input, of the input's length: generation (`bart_generate`) read position by position
    (`CSCTokenizer.decode_correction`); unknown, special or missing outputs keep the source character."""
    generated = bart_generate(model, tokenizer, texts, batch_size, **generate_kwargs)
    return [tokenizer.decode_correction(text, [tokenizer.cls_token_id, *ids]) for text, ids in zip(texts, generated)]


__all__ = ["bart_config", "bart_correct", "bart_fields", "bart_from_bert", "bart_generate", "build_bart"]
