"""The CSC model family: the paper's unified paradigm as transformers classes.

    tokenizer = CSCTokenizer.from_texts(texts)            # or .from_bert_vocab("bert-base-chinese folder")
    model = build_model("all_gate", tokenizer, num_hidden_layers=4, hidden_size=256, num_attention_heads=4)
    model.save_pretrained(path); tokenizer.save_pretrained(path)
    AutoModelForMaskedLM.from_pretrained(path, trust_remote_code=True)   # also without csc_hf installed

Importing this package registers the classes with the transformers Auto classes (`register_auto`).
"""

import os
from collections.abc import Mapping, Sequence
from typing import Any

from transformers import AutoConfig, AutoModel, AutoModelForMaskedLM, AutoTokenizer, BartForConditionalGeneration

from ..logging import expected_load_report
from .bart import bart_config, bart_correct, bart_fields, bart_generate, build_bart
from .configuration_csc import (
    EDIT_OPS,
    VARIANTS,
    CSCConfig,
    can_change_length,
    is_seq2seq,
    variant_family,
    variant_sources,
)
from .kernels import FastDropout, use_fast_dropout, use_training_kernels
from .knowledge import Vectors, build_char_knowledge, context_pinyin_ids, load_vectors
from .masked_lm import SparseBertForMaskedLM
from .modeling_csc import CSCForCorrection, CSCModel, CSCPreTrainedModel
from .side_pretraining import SidePretrainingModel
from .tokenization_csc import CSCTokenizer


def register_auto() -> None:
    """Register CSCConfig / CSCModel / CSCForCorrection / CSCTokenizer with AutoConfig, AutoModel,
    AutoModelForMaskedLM and AutoTokenizer, and mark the model classes for `save_pretrained` to copy their code."""
    AutoConfig.register(CSCConfig.model_type, CSCConfig, exist_ok=True)
    AutoModel.register(CSCConfig, CSCModel, exist_ok=True)
    AutoModelForMaskedLM.register(CSCConfig, CSCForCorrection, exist_ok=True)
    AutoTokenizer.register(CSCConfig, fast_tokenizer_class=CSCTokenizer, exist_ok=True)
    CSCConfig.register_for_auto_class()
    CSCModel.register_for_auto_class("AutoModel")
    CSCForCorrection.register_for_auto_class("AutoModelForMaskedLM")


register_auto()


def _fields(variant: str | Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The config fields of `variant` (a `VARIANTS` name or a dict of them) with `overrides` over them."""
    return {**(VARIANTS[variant] if isinstance(variant, str) else variant), **overrides}


def build_model(
    variant: str | Mapping[str, Any],
    tokenizer: CSCTokenizer,
    *,
    init_from: str | None = None,
    init_sides_from: str | os.PathLike | None = None,
    fonts: Sequence[str] | None = None,
    phonetic_vectors: str | os.PathLike | Vectors | None = None,
    graphic_vectors: str | os.PathLike | Vectors | None = None,
    **overrides: Any,
) -> CSCForCorrection | BartForConditionalGeneration:
    """A model of `variant` (a `VARIANTS` name or a dict of config fields, plus `overrides`) for `tokenizer`'s
    vocabulary, with its character knowledge; `init_from` is a BERT (or, for `bart`, BART) checkpoint to start from
    (an encoder taken from a masked-LM checkpoint leaves its head out: that load report is a debug message);
    `init_sides_from` a `SidePretrainingModel` folder its side encoders start from."""
    fields = _fields(variant, overrides)
    if fields.pop("model_type", CSCConfig.model_type) == "bart":
        if init_sides_from is not None:
            raise ValueError(f"init_sides_from={init_sides_from}: {variant!r} is a seq2seq model without side encoders")
        with expected_load_report():
            return build_bart(tokenizer, init_from, **fields)
    config = CSCConfig(vocab_size=len(tokenizer), **fields)
    knowledge = build_char_knowledge(
        tokenizer.get_vocab(), config, fonts=fonts, phonetic_vectors=phonetic_vectors, graphic_vectors=graphic_vectors
    )
    if init_from is None:
        model = CSCForCorrection(config, knowledge)
    else:
        with expected_load_report():
            model = CSCForCorrection.from_bert(init_from, knowledge, **fields)
    if init_sides_from is not None:
        if not config.sources:
            raise ValueError(f"init_sides_from={init_sides_from}: {variant!r} has no side encoders to start from it")
        model.csc.load_side_encoders(init_sides_from)
    return model


def build_side_pretraining(
    variant: str | Mapping[str, Any],
    tokenizer: CSCTokenizer,
    init_from: str,
    *,
    fonts: Sequence[str] | None = None,
    **overrides: Any,
) -> SidePretrainingModel:
    """The side encoders of `variant`'s sources (or of `overrides["sources"]`) over the masked-LM checkpoint
    `init_from` (whose vocabulary is `tokenizer`'s), with the character knowledge they read."""
    fields = _fields(variant, overrides)
    if fields.pop("model_type", CSCConfig.model_type) == "bart" or not fields.get("sources"):
        raise ValueError(f"{variant!r} has no side sources to pretrain; give model_overrides: {{sources: [...]}}")
    config = CSCConfig(vocab_size=len(tokenizer), **fields)
    knowledge = build_char_knowledge(tokenizer.get_vocab(), config, fonts=fonts)
    with expected_load_report():
        return SidePretrainingModel.from_mlm(init_from, knowledge, **fields)


__all__ = [
    "EDIT_OPS",
    "FastDropout",
    "VARIANTS",
    "CSCConfig",
    "CSCForCorrection",
    "CSCModel",
    "CSCPreTrainedModel",
    "CSCTokenizer",
    "SidePretrainingModel",
    "SparseBertForMaskedLM",
    "bart_config",
    "bart_correct",
    "bart_fields",
    "bart_generate",
    "build_bart",
    "build_char_knowledge",
    "build_model",
    "build_side_pretraining",
    "can_change_length",
    "context_pinyin_ids",
    "load_vectors",
    "is_seq2seq",
    "register_auto",
    "use_fast_dropout",
    "use_training_kernels",
    "variant_family",
    "variant_sources",
]
