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
from .bart import bart_config, bart_correct, bart_generate, build_bart
from .configuration_csc import EDIT_OPS, VARIANTS, CSCConfig, can_change_length, is_seq2seq, variant_family
from .knowledge import Vectors, build_char_knowledge, context_pinyin_ids, load_vectors
from .masked_lm import SparseBertForMaskedLM
from .modeling_csc import CSCForCorrection, CSCModel, CSCPreTrainedModel
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


def build_model(
    variant: str | Mapping[str, Any],
    tokenizer: CSCTokenizer,
    *,
    init_from: str | None = None,
    fonts: Sequence[str] | None = None,
    phonetic_vectors: str | os.PathLike | Vectors | None = None,
    graphic_vectors: str | os.PathLike | Vectors | None = None,
    **overrides: Any,
) -> CSCForCorrection | BartForConditionalGeneration:
    """A model of `variant` (a `VARIANTS` name or a dict of config fields, plus `overrides`) for `tokenizer`'s
    vocabulary, with its character knowledge; `init_from` is a BERT (or, for `bart`, BART) checkpoint to start from
    (an encoder taken from a masked-LM checkpoint leaves its head out: that load report is a debug message)."""
    fields = {**(VARIANTS[variant] if isinstance(variant, str) else variant), **overrides}
    if fields.pop("model_type", CSCConfig.model_type) == "bart":
        with expected_load_report():
            return build_bart(tokenizer, init_from, **fields)
    config = CSCConfig(vocab_size=len(tokenizer), **fields)
    knowledge = build_char_knowledge(
        tokenizer.get_vocab(), config, fonts=fonts, phonetic_vectors=phonetic_vectors, graphic_vectors=graphic_vectors
    )
    if init_from is None:
        return CSCForCorrection(config, knowledge)
    with expected_load_report():
        return CSCForCorrection.from_bert(init_from, knowledge, **fields)


__all__ = [
    "EDIT_OPS",
    "VARIANTS",
    "CSCConfig",
    "CSCForCorrection",
    "CSCModel",
    "CSCPreTrainedModel",
    "CSCTokenizer",
    "SparseBertForMaskedLM",
    "bart_config",
    "bart_correct",
    "bart_generate",
    "build_bart",
    "build_char_knowledge",
    "build_model",
    "can_change_length",
    "context_pinyin_ids",
    "load_vectors",
    "is_seq2seq",
    "register_auto",
    "variant_family",
]
