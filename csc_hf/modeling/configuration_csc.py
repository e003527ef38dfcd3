"""CSC model configuration: the paper's unified paradigm as data.

semantic (a BERT encoder) + phonetic and graphic sources -> fusion -> generation (the correct character, optionally
its pinyin, its first strokes and an error/no-error flag per character). A variant is a dict of overrides, see
`VARIANTS`. Self-contained (remote code): imports only the standard library and transformers.
"""

from dataclasses import field
from typing import Any

from transformers import BertConfig, PreTrainedConfig

FUSION_NAMES = ("concat", "gate", "sum")
EDIT_OPS = ("keep", "delete", "insert")
"""The edit head's classes at a position: keep the character (or replace it: the correction head says with what),
delete it, or insert one character after it (after `[CLS]`: before the first character)."""
SOURCE_KINDS = {
    "pinyin_gru": "pinyin",
    "pinyin_transformer": "pinyin",
    "pinyin_vectors": "pinyin",
    "stroke_gru": "stroke",
    "glyph_cnn": "glyph",
    "glyph_vectors": "glyph",
}
"""The kind of information each source encodes (phonetic: ``pinyin``; graphic: ``stroke``, ``glyph``)."""
AUTO_MAP = {
    "AutoConfig": "configuration_csc.CSCConfig",
    "AutoModel": "modeling_csc.CSCModel",
    "AutoModelForMaskedLM": "modeling_csc.CSCForCorrection",
}
"""Every Auto class that loads a saved CSC model with trust_remote_code (transformers lists only the saved one)."""
BERT_FIELDS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "hidden_act",
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "max_position_embeddings",
    "type_vocab_size",
    "initializer_range",
    "layer_norm_eps",
    "pad_token_id",
)


class CSCConfig(PreTrainedConfig):
    r"""
    Configuration of [`CSCModel`] and [`CSCForCorrection`].

    The BERT fields (`vocab_size` ... `pad_token_id`) configure the semantic encoder exactly as in [`BertConfig`].

    Args:
        sources (`list[str]`): side information, any of `pinyin_gru` (GRU over the letters + tone of each
            character's syllable), `pinyin_transformer` (Transformer over them), `pinyin_vectors` (a pretrained vector
            per syllable, e.g. from Tacotron2), `stroke_gru` (GRU over the stroke sequence), `glyph_cnn` (strided
            residual CNN over glyph bitmaps, one channel per font), `glyph_vectors` (a pretrained vector per
            character, e.g. VGG features of its font images).
        fusion (`str`): `concat` (concatenation + projection), `gate` (a learned sigmoid gate per source) or `sum`
            (PLOME-style: side features are added to BERT's input embeddings). Each starts as the semantic encoder
            alone: the sides enter through layers initialised at zero.
        side_size (`int`): width of the side encoders; their output is projected to `hidden_size`.
        glyph_channels (`list[int]`): channels of the glyph CNN's stride-2 stages.
        pinyin_layers (`int`): layers of the `pinyin_transformer` encoder.
        freeze_sources (`bool`): freeze the side encoders (their projections still train); their features are then
            computed once per table and cached.
        pinyin_head / stroke_head / detection_head (`bool`): auxiliary heads predicting the correct character's
            syllable id, its first `stroke_head_length` strokes (6 classes each: none, 1..5) and whether the input
            character is wrong; each loss is added with its `*_loss_weight`.
        edit_head (`bool`): a head that lets the tagging model change the sentence's length: at each position one of
            `EDIT_OPS` (keep the character, or replace it with the correction head's; delete it; insert one character
            after it, where `[CLS]` stands for the start), and the inserted character (the correction head's output
            layer over its own transform). Its losses are added with `edit_loss_weight`.
        num_syllables, pinyin_length, max_strokes, glyph_fonts, glyph_size, phonetic_vector_size,
        graphic_vector_size (`int`): shapes of the character-knowledge buffers; set from the knowledge tensors
            when a model is built with them.
    """

    model_type = "csc"

    vocab_size: int = 21128
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    pad_token_id: int | None = 0
    tie_word_embeddings: bool = True

    sources: list[str] = field(default_factory=list)
    fusion: str = "gate"
    side_size: int = 64
    glyph_channels: list[int] = field(default_factory=lambda: [16, 32, 64])
    pinyin_layers: int = 1
    freeze_sources: bool = False

    pinyin_head: bool = False
    stroke_head: bool = False
    stroke_head_length: int = 4
    detection_head: bool = False
    edit_head: bool = False
    pinyin_loss_weight: float = 1.0
    stroke_loss_weight: float = 1.0
    detection_loss_weight: float = 1.0
    edit_loss_weight: float = 1.0

    num_syllables: int = 1
    pinyin_length: int = 7
    max_strokes: int = 24
    glyph_fonts: int = 1
    glyph_size: int = 32
    phonetic_vector_size: int = 0
    graphic_vector_size: int = 0

    def __post_init__(self, **kwargs):
        super().__post_init__(**kwargs)
        self.sources = list(self.sources)
        self.glyph_channels = list(self.glyph_channels)
        self.auto_map = {**AUTO_MAP, **(getattr(self, "auto_map", None) or {})}
        if self.stroke_head and self.stroke_head_length > self.max_strokes:
            raise ValueError(f"stroke_head_length {self.stroke_head_length} exceeds max_strokes {self.max_strokes}")
        if unknown := set(self.sources) - set(SOURCE_KINDS):
            raise ValueError(f"unknown sources {sorted(unknown)}; choose from {tuple(SOURCE_KINDS)}")
        if self.fusion not in FUSION_NAMES:
            raise ValueError(f"unknown fusion {self.fusion!r}; choose from {FUSION_NAMES}")

    @classmethod
    def from_bert(cls, path: str, **overrides: Any) -> "CSCConfig":
        """The BERT fields of a local or Hub BERT checkpoint, plus `overrides`."""
        bert = BertConfig.from_pretrained(path)
        return cls(**{**{name: getattr(bert, name) for name in BERT_FIELDS}, **overrides})


_ALL = ["pinyin_gru", "stroke_gru", "glyph_cnn"]
VARIANTS: dict[str, dict[str, Any]] = {
    "bert": {},
    "bert+pinyin_gru": {"sources": ["pinyin_gru"], "fusion": "concat"},
    "bert+pinyin_transformer": {"sources": ["pinyin_transformer"], "fusion": "concat"},
    "bert+stroke_gru": {"sources": ["stroke_gru"], "fusion": "concat"},
    "bert+glyph_cnn": {"sources": ["glyph_cnn"], "fusion": "concat"},
    "pinyin+stroke_concat": {"sources": ["pinyin_gru", "stroke_gru"], "fusion": "concat"},
    "pinyin+glyph_gate": {"sources": ["pinyin_gru", "glyph_cnn"], "fusion": "gate"},
    "all_gate": {"sources": _ALL, "fusion": "gate"},
    "all_concat": {"sources": _ALL, "fusion": "concat"},
    "plome": {"sources": ["pinyin_gru", "stroke_gru"], "fusion": "sum", "pinyin_head": True},
    "all_gate+heads": {"sources": _ALL, "fusion": "gate", "pinyin_head": True, "stroke_head": True},
    "bert+edit_head": {"edit_head": True},
    "bart": {"model_type": "bart"},
}
"""The paper's model grid: name -> `CSCConfig` overrides (`bart`: the seq2seq baseline, see `csc_hf.modeling.bart`)."""


def variant_sources(variant: str, **overrides: Any) -> list[str]:
    """The side sources the `VARIANTS` entry `variant` (with config field `overrides`) fuses: none for a seq2seq
    model."""
    return [] if is_seq2seq(variant) else list({**VARIANTS[variant], **overrides}.get("sources", []))


def can_change_length(variant: str, **overrides: Any) -> bool:
    """Whether the `VARIANTS` entry `variant` (with config field `overrides`) can insert and delete characters: a
    seq2seq model, or a tagging model with an edit head; every other tagging model keeps its source's length."""
    return is_seq2seq(variant) or bool({**VARIANTS[variant], **overrides}.get("edit_head", False))


def is_seq2seq(variant: str) -> bool:
    """Whether the `VARIANTS` entry `variant` is a sequence-to-sequence model (not a `CSCConfig`)."""
    return VARIANTS[variant].get("model_type", CSCConfig.model_type) != CSCConfig.model_type


def variant_family(variant: str) -> tuple[str, tuple[str, ...]]:
    """A variant's fusion (``none``, ``concat``, ``gate``, ``input-sum``, ``seq2seq``) and the kinds of information
    it fuses (``pinyin``, ``stroke``, ``glyph``, in that order), read from its `VARIANTS` entry."""
    if is_seq2seq(variant):
        return "seq2seq", ()
    fields = VARIANTS[variant]
    kinds = {SOURCE_KINDS[s] for s in fields.get("sources", ())}
    used = tuple(k for k in ("pinyin", "stroke", "glyph") if k in kinds)
    if not used:
        return "none", ()
    fusion = fields.get("fusion", CSCConfig.fusion)
    return ("input-sum" if fusion == "sum" else fusion), used


__all__ = ["EDIT_OPS", "CSCConfig", "VARIANTS", "can_change_length", "is_seq2seq", "variant_family"]
