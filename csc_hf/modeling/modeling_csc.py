"""CSC models: semantic (BERT) + phonetic + graphic sources -> fusion -> generation.

The model carries its character knowledge (each vocabulary character's syllable, stroke sequence and glyph bitmaps)
as buffers saved in the checkpoint, so inference needs neither pypinyin nor fonts. Side encoders run once per
distinct character (or syllable) of a batch, never once per token, and once per table when no gradient reaches them.
Self-contained (remote code): imports only torch, transformers and the sibling configuration file.
"""

import copy
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence
from transformers import BertConfig, BertForMaskedLM, BertModel, PreTrainedModel
from transformers import initialization as init
from transformers.modeling_outputs import BaseModelOutput
from transformers.models.bert.modeling_bert import BertPredictionHeadTransform
from transformers.utils import SAFE_WEIGHTS_NAME, ModelOutput

from .configuration_csc import BERT_FIELDS, EDIT_OPS, CSCConfig

LETTERS = "abcdefghijklmnopqrstuvwxyzê12345"
"""Symbols of a TONE3 syllable ("zhong1"); symbol id = index + 1, 0 pads."""
NUM_STROKES = 5
"""Stroke kinds (horizontal, vertical, left-falling, dot/right-falling, turning): ids 1..5, 0 pads."""

KNOWLEDGE: dict[str, tuple[tuple[str, ...], torch.dtype]] = {
    "is_char": (("vocab_size",), torch.bool),
    "char_syllable": (("vocab_size",), torch.long),
    "syllable_letters": (("num_syllables", "pinyin_length"), torch.long),
    "syllable_vectors": (("num_syllables", "phonetic_vector_size"), torch.float),
    "char_strokes": (("vocab_size", "max_strokes"), torch.long),
    "char_glyphs": (("vocab_size", "glyph_fonts", "glyph_size", "glyph_size"), torch.uint8),
    "char_vectors": (("vocab_size", "graphic_vector_size"), torch.float),
}
"""Character-knowledge buffers: name -> (the config fields giving its shape, dtype). Syllable 0 is "no reading"."""


def with_start(seqs: torch.Tensor, start: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded symbol sequences behind a start symbol (so none is empty), cut to the longest; and lengths."""
    seqs = F.pad(seqs, (1, 0), value=start)
    lengths = (seqs != 0).sum(-1)
    return seqs[:, : int(lengths.max())], lengths


class SequenceGRU(nn.Module):
    """GRU state after the last symbol of each sequence."""

    def __init__(self, num_symbols: int, size: int):
        super().__init__()
        self.start = num_symbols + 1
        self.embed = nn.Embedding(num_symbols + 2, size, padding_idx=0)
        self.gru = nn.GRU(size, size, batch_first=True)

    def forward(self, seqs: torch.Tensor) -> torch.Tensor:
        seqs, lengths = with_start(seqs, self.start)
        packed = pack_padded_sequence(self.embed(seqs), lengths.cpu(), batch_first=True, enforce_sorted=False)
        return self.gru(packed)[1][-1]


class SequenceTransformer(nn.Module):
    """Transformer encoder over each sequence; its output at the start symbol."""

    def __init__(self, num_symbols: int, size: int, max_length: int, layers: int):
        super().__init__()
        self.start = num_symbols + 1
        self.embed = nn.Embedding(num_symbols + 2, size, padding_idx=0)
        self.position = nn.Embedding(max_length + 1, size)
        heads = size // 32 if size % 32 == 0 else 1  # heads 32 wide
        layer = nn.TransformerEncoderLayer(size, heads, 2 * size, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, seqs: torch.Tensor) -> torch.Tensor:
        seqs, _ = with_start(seqs, self.start)
        x = self.embed(seqs) + self.position.weight[: seqs.shape[1]]
        return self.encoder(x, src_key_padding_mask=seqs == 0)[:, 0]


class GlyphCNN(nn.Module):
    """Glyph bitmaps (one channel per font) -> vector: stride-2 3x3 convolutions, a residual block, a linear map.

    A training batch has a different number of distinct characters at nearly every step; the rows are padded with
    blank glyphs to a multiple of `ROWS` (and cut from the output), so the convolutions meet a few shapes, whose
    kernels oneDNN compiles once and keeps, instead of a new one per step. Each row is computed alone, so the output
    is the same; the weights' gradient sums the blank rows' zeros too."""

    ROWS = 64

    def __init__(self, fonts: int, glyph_size: int, channels: list[int], size: int):
        super().__init__()
        stages = []
        for c_in, c_out in zip([fonts, *channels], channels):
            stages += [nn.Conv2d(c_in, c_out, 3, stride=2, padding=1), nn.ReLU()]
            glyph_size = (glyph_size + 1) // 2
        self.down = nn.Sequential(*stages)
        width = channels[-1]
        self.residual = nn.Sequential(
            nn.Conv2d(width, width, 3, padding=1), nn.ReLU(), nn.Conv2d(width, width, 3, padding=1)
        )
        self.out = nn.Linear(width * glyph_size * glyph_size, size)

    def forward(self, glyphs: torch.Tensor) -> torch.Tensor:
        rows = glyphs.shape[0]
        glyphs = torch.cat([glyphs, glyphs.new_zeros((-rows % self.ROWS, *glyphs.shape[1:]))])
        x = self.down(glyphs.to(self.out.weight.dtype) / 255)
        return self.out(torch.relu(x + self.residual(x)).flatten(1))[:rows]


@dataclass(frozen=True)
class Source:
    """A side source: the key it runs once per, the knowledge table it reads, and its encoder."""

    key: str  # "char" (input ids) or "syllable" (each character's syllable id, or `pinyin_ids`)
    table: str
    build: Callable[[CSCConfig], nn.Module]


SOURCES: dict[str, Source] = {
    "pinyin_gru": Source("syllable", "syllable_letters", lambda c: SequenceGRU(len(LETTERS), c.side_size)),
    "pinyin_transformer": Source(
        "syllable",
        "syllable_letters",
        lambda c: SequenceTransformer(len(LETTERS), c.side_size, c.pinyin_length, c.pinyin_layers),
    ),
    "pinyin_vectors": Source("syllable", "syllable_vectors", lambda c: nn.Linear(c.phonetic_vector_size, c.side_size)),
    "stroke_gru": Source("char", "char_strokes", lambda c: SequenceGRU(NUM_STROKES, c.side_size)),
    "glyph_cnn": Source(
        "char", "char_glyphs", lambda c: GlyphCNN(c.glyph_fonts, c.glyph_size, c.glyph_channels, c.side_size)
    ),
    "glyph_vectors": Source("char", "char_vectors", lambda c: nn.Linear(c.graphic_vector_size, c.side_size)),
}


def required_knowledge(config: CSCConfig) -> list[str]:
    """The knowledge buffers a configuration needs."""
    syllables = {"char_syllable", "syllable_letters"}  # each character's syllable id, each syllable's spelling
    names = {"is_char"}
    for source in map(SOURCES.__getitem__, config.sources):
        names |= {source.table, *(syllables if source.key == "syllable" else ())}
    if config.pinyin_head:
        names |= syllables
    if config.stroke_head:
        names.add("char_strokes")
    return [name for name in KNOWLEDGE if name in names]


def knowledge_shapes(config: CSCConfig, knowledge: Mapping[str, torch.Tensor]) -> dict[str, int]:
    """The config's shape fields as given by the knowledge tensors that `config` needs."""
    shapes: dict[str, int] = {}
    for name in required_knowledge(config):
        if name not in knowledge:
            raise KeyError(f"the configuration needs the knowledge tensor {name!r}; got {sorted(knowledge)}")
        fields, _ = KNOWLEDGE[name]
        for field, size in zip(fields, knowledge[name].shape, strict=True):
            if shapes.setdefault(field, size) != size:
                raise ValueError(f"knowledge tensors disagree on {field}: {shapes[field]} vs {size} ({name})")
    if shapes["vocab_size"] != config.vocab_size:
        raise ValueError(f"knowledge covers {shapes['vocab_size']} tokens, the config {config.vocab_size}")
    return shapes


def with_knowledge_shapes(config: CSCConfig, knowledge: Mapping[str, torch.Tensor] | None) -> CSCConfig:
    """`config` with its shape fields set from `knowledge`: `config` itself when they already agree (or there is no
    knowledge), else a copy; the caller's config is never changed."""
    if knowledge is None:
        return config
    shapes = knowledge_shapes(config, knowledge)
    if all(getattr(config, field) == size for field, size in shapes.items()):
        return config
    config = copy.deepcopy(config)
    config.update(shapes)
    return config


def syllable_strings(letters: torch.Tensor) -> list[str]:
    """Syllable id -> TONE3 string, read back from the `syllable_letters` table ("" for id 0)."""
    return ["".join(LETTERS[i - 1] for i in row if i) for row in letters.tolist()]


class CharKnowledge(nn.Module):
    """The character knowledge of the vocabulary, as buffers: zeros until given or loaded from a checkpoint
    (`is_char` defaults to all true)."""

    def __init__(self, config: CSCConfig, knowledge: Mapping[str, torch.Tensor] | None = None):
        super().__init__()
        for name in required_knowledge(config):
            fields, dtype = KNOWLEDGE[name]
            shape = tuple(getattr(config, field) for field in fields)
            value = knowledge[name] if knowledge is not None else torch.full(shape, name == "is_char")
            self.register_buffer(name, value.to(dtype).reshape(shape).clone())


class ZeroLinear(nn.Linear):
    """A linear layer that starts at zero (weight and bias; see `CSCPreTrainedModel._init_weights`)."""


class IdentityLinear(nn.Linear):
    """A linear layer that starts as `[I 0 ... 0]` with zero bias: it passes its first `out_features` inputs through
    and ignores the rest (see `CSCPreTrainedModel._init_weights`)."""


def same_tensors(a: tuple[torch.Tensor, ...], b: tuple[torch.Tensor, ...]) -> bool:
    """Whether two tuples of tensors agree in length, device, dtype, shape and every value."""
    return len(a) == len(b) and all(
        x.device == y.device and x.dtype == y.dtype and x.shape == y.shape and torch.equal(x, y) for x, y in zip(a, b)
    )


class SideEncoder(nn.Module):
    """One side source: features of each distinct key of the batch, projected to the hidden size and gathered back
    to the tokens. When no gradient reaches the encoder (eval, `torch.no_grad`, frozen), it encodes the whole table
    once and caches it until its weights or the table change.

    The gather back to the tokens is an embedding lookup, not `features[inverse]`: on CPU the backward of advanced
    indexing adds the rows of repeated keys with parallel atomic adds (`index_put_(accumulate=True)` over several
    threads), in an order that changes from run to run; the embedding backward adds them in token order."""

    def __init__(self, source: Source, config: CSCConfig):
        super().__init__()
        self.key, self.table = source.key, source.table
        self.encoder = source.build(config)
        # under gate and sum fusion the side enters through this projection: it starts at zero
        self.project = (nn.Linear if config.fusion == "concat" else ZeroLinear)(config.side_size, config.hidden_size)
        self.encoder.requires_grad_(not config.freeze_sources)
        self._cache: tuple[tuple[torch.Tensor, ...], torch.Tensor] | None = None

    def forward(self, keys: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        unique, inverse = keys.unique(return_inverse=True)
        if torch.is_grad_enabled() and any(p.requires_grad for p in self.encoder.parameters()):
            features = self.encoder(table[unique])
        else:
            features = self.table_features(table)[unique]
        return F.embedding(inverse, self.project(features))

    def table_features(self, table: torch.Tensor, chunk: int = 4096) -> torch.Tensor:
        """Encoder output for every row of `table`, cached with a copy of its inputs (the table and the encoder's
        weights), and computed again when any of them differs."""
        inputs = tuple(t.detach() for t in (table, *self.encoder.parameters()))
        if self._cache is None or not same_tensors(self._cache[0], inputs):
            with torch.no_grad():
                features = torch.cat([self.encoder(rows) for rows in table.split(chunk)])
            self._cache = (tuple(t.clone() for t in inputs), features)
        return self._cache[1]


class ConcatFusion(nn.Module):
    """Concatenation of the semantic and side features, projected back to the hidden size (initialised to pass the
    semantic features through unchanged)."""

    def __init__(self, config: CSCConfig):
        super().__init__()
        self.project = IdentityLinear((len(config.sources) + 1) * config.hidden_size, config.hidden_size)

    def forward(self, hidden: torch.Tensor, sides: list[torch.Tensor]) -> torch.Tensor:
        return self.project(torch.cat([hidden, *sides], dim=-1))


class GateFusion(nn.Module):
    """h + sum_k sigmoid(W_k [h; x_k]) * x_k: a learned gate per source and dimension."""

    def __init__(self, config: CSCConfig):
        super().__init__()
        hidden = config.hidden_size
        self.gates = nn.ModuleList(nn.Linear(2 * hidden, hidden) for _ in config.sources)

    def forward(self, hidden: torch.Tensor, sides: list[torch.Tensor]) -> torch.Tensor:
        fused = hidden
        for gate, side in zip(self.gates, sides):
            fused = fused + torch.sigmoid(gate(torch.cat([hidden, side], dim=-1))) * side
        return fused


FUSIONS = {"concat": ConcatFusion, "gate": GateFusion}  # "sum" adds the sides to BERT's input embeddings


class CSCPreTrainedModel(PreTrainedModel):
    config_class = CSCConfig
    base_model_prefix = "csc"
    supports_gradient_checkpointing = True
    _supports_sdpa = True

    def _init_weights(self, module: nn.Module):
        """Standard BERT init, except that every variant starts as its semantic encoder alone: the last layer through
        which a side source reaches the semantic features starts at zero (the side blocks of the concat projection,
        whose semantic block starts as the identity; the side projection under gate and sum fusion)."""
        super()._init_weights(module)
        if isinstance(module, nn.Conv2d):
            init.kaiming_normal_(module.weight, nonlinearity="relu")
        elif isinstance(module, (ZeroLinear, IdentityLinear)):
            (init.eye_ if isinstance(module, IdentityLinear) else init.zeros_)(module.weight)
            init.zeros_(module.bias)

    @classmethod
    def from_bert(cls, path: str, knowledge: Mapping[str, torch.Tensor] | None = None, **overrides):
        """A model whose semantic encoder is the local or Hub BERT checkpoint at `path` (its vocabulary must be the
        tokenizer's, e.g. `CSCTokenizer.from_bert_vocab(path)`); `overrides` are further config fields."""
        model = cls(CSCConfig.from_bert(path, **overrides), knowledge)
        model.load_bert(path)
        return model


class CSCModel(CSCPreTrainedModel):
    """The encoder: BERT, side encoders and fusion; returns the fused hidden states.

    `knowledge` (from `csc_hf.modeling.build_char_knowledge`) fills the knowledge buffers and sets the shape fields
    of the model's config (a copy where they change: `config` itself is left as it is); without it they stay zero
    until loaded from a checkpoint.
    """

    def __init__(self, config: CSCConfig, knowledge: Mapping[str, torch.Tensor] | None = None):
        config = with_knowledge_shapes(config, knowledge)
        super().__init__(config)
        self.knowledge = CharKnowledge(config, knowledge)
        bert_config = BertConfig(**{name: getattr(config, name) for name in BERT_FIELDS})
        bert_config._attn_implementation = config._attn_implementation
        self.bert = BertModel(bert_config, add_pooling_layer=False)
        self.sources = nn.ModuleDict({name: SideEncoder(SOURCES[name], config) for name in config.sources})
        self.fusion = FUSIONS[config.fusion](config) if config.sources and config.fusion in FUSIONS else None
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.bert.embeddings.word_embeddings

    def set_input_embeddings(self, embeddings: nn.Embedding):
        self.bert.embeddings.word_embeddings = embeddings

    @property
    def syllables(self) -> list[str]:
        """Syllable id -> TONE3 string: the ids of `pinyin_ids` and of the pinyin head."""
        return syllable_strings(self.knowledge.syllable_letters)

    def load_bert(self, path: str):
        """Copy the weights of the BERT checkpoint at `path` into the semantic encoder."""
        self.bert.load_state_dict(BertModel.from_pretrained(path, add_pooling_layer=False).state_dict())

    def load_side_encoders(self, path: str | os.PathLike):
        """Start each side encoder from the one pretrained in the `SidePretrainingModel` folder at `path` (its
        `encoder` weights; the projection to the hidden size keeps its initialisation). The folder must have every
        source of this model, at the same sizes."""
        from safetensors.torch import load_file

        file = Path(path) / SAFE_WEIGHTS_NAME
        if not file.is_file():
            raise FileNotFoundError(f"{path}: no {SAFE_WEIGHTS_NAME}: not a saved side-encoder pretraining")
        weights = load_file(file)
        found = sorted({key.split(".")[1] for key in weights if key.startswith("sources.")})
        for name, side in self.sources.items():
            prefix = f"sources.{name}.encoder."
            state = {key[len(prefix) :]: value for key, value in weights.items() if key.startswith(prefix)}
            if not state:
                raise ValueError(f"{file}: no pretrained encoder for the source {name!r}; it has {found}")
            try:
                side.encoder.load_state_dict(state)
            except RuntimeError as err:
                raise ValueError(f"{file}: the source {name!r} does not fit this model's: {err}") from None

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        pinyin_ids: torch.Tensor | None = None,
        **kwargs,
    ) -> BaseModelOutput:
        r"""
        pinyin_ids (`torch.LongTensor` of shape `(batch_size, sequence_length)`, *optional*):
            Syllable id of each token read in context (ids index `self.syllables`, 0 for none), e.g. from
            `csc_hf.modeling.knowledge.context_pinyin_ids`; default: each character's most common reading.
        """
        keys = {"char": input_ids}
        if any(side.key == "syllable" for side in self.sources.values()):
            keys["syllable"] = self.knowledge.char_syllable[input_ids] if pinyin_ids is None else pinyin_ids
        sides = [side(keys[side.key], getattr(self.knowledge, side.table)) for side in self.sources.values()]
        if sides and self.config.fusion == "sum":
            embeds = self.bert.embeddings.word_embeddings(input_ids) + sum(sides)
            outputs = self.bert(None, attention_mask, token_type_ids, position_ids, inputs_embeds=embeds, **kwargs)
        else:
            outputs = self.bert(input_ids, attention_mask, token_type_ids, position_ids, **kwargs)
        hidden = outputs.last_hidden_state
        if self.fusion is not None:
            hidden = self.fusion(hidden, sides)
        return BaseModelOutput(
            last_hidden_state=hidden, hidden_states=outputs.hidden_states, attentions=outputs.attentions
        )


class CorrectionHead(nn.Module):
    """Fused hidden states -> scores over the vocabulary: BERT's masked-LM head (decoder optionally tied to the input
    embeddings)."""

    def __init__(self, config: CSCConfig):
        super().__init__()
        self.transform = BertPredictionHeadTransform(config)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.transform(hidden))


class EditHead(nn.Module):
    """Fused hidden states -> scores over `EDIT_OPS` at each position, and the features from which the correction
    head's output layer scores the character inserted after it."""

    def __init__(self, config: CSCConfig):
        super().__init__()
        self.ops = nn.Linear(config.hidden_size, len(EDIT_OPS))
        self.insert = BertPredictionHeadTransform(config)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.ops(hidden)


@dataclass
class CSCCorrectionOutput(ModelOutput):
    """Outputs of [`CSCForCorrection`]: the summed weighted loss, the correction scores and the auxiliary heads'
    scores (detection: one logit per token; pinyin: over syllable ids; strokes: (..., stroke_head_length, 6); edit:
    over `EDIT_OPS`, and insert: over the vocabulary, the character inserted after each token, computed when no
    `labels` are given)."""

    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    detection_logits: torch.Tensor | None = None
    edit_logits: torch.Tensor | None = None
    insert_logits: torch.Tensor | None = None
    pinyin_logits: torch.Tensor | None = None
    stroke_logits: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


CHUNK_ELEMENTS = 1 << 18
"""Logits per row chunk of the CPU cross-entropy (1 MiB in fp32: a chunk's passes stay in the core's cache)."""


class _ChunkedCrossEntropy(torch.autograd.Function):
    """``F.cross_entropy(logits.float(), targets, ignore_index=-100, reduction="sum")`` over `logits` ``(rows,
    classes)``, a chunk of rows at a time: the same kernels on each chunk, so the same loss and gradient bytes, but
    each chunk's cast, log-softmax and their backward run in cache instead of streaming the whole fp32
    ``(rows, classes)`` tensor through memory several times (the correction head scores the vocabulary at every
    position). The backward recomputes a chunk's log-softmax rather than keeping it from the forward pass."""

    @staticmethod
    def forward(ctx, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        rows = max(1, CHUNK_ELEMENTS // logits.shape[-1])
        picked = torch.cat(
            [
                torch.log_softmax(logits[start : start + rows].float(), -1).gather(
                    1, targets[start : start + rows].clamp(min=0).unsqueeze(1)
                )
                for start in range(0, len(logits), rows)
            ]
        )
        ctx.save_for_backward(logits, targets)
        # the sum of the picked log-probabilities as cross_entropy's nll_loss adds them up (one class per row)
        return F.nll_loss(picked, targets.clamp(max=0), ignore_index=-100, reduction="sum")

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        logits, targets = ctx.saved_tensors
        rows = max(1, CHUNK_ELEMENTS // logits.shape[-1])
        grads = torch.empty_like(logits)
        with torch.enable_grad():
            for start in range(0, len(logits), rows):
                chunk = logits[start : start + rows].detach().requires_grad_()
                loss = F.cross_entropy(chunk.float(), targets[start : start + rows], ignore_index=-100, reduction="sum")
                (grads[start : start + rows],) = torch.autograd.grad(loss, chunk, grad)
        return grads, None


def summed_cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy summed over the targets that are not -100 (computed in fp32; on the CPU in row chunks, with the
    same result)."""
    logits, targets = logits.flatten(0, -2), targets.flatten()
    if logits.device.type == "cpu" and logits.requires_grad and torch.is_grad_enabled() and len(logits):
        return _ChunkedCrossEntropy.apply(logits, targets)
    return F.cross_entropy(logits.float(), targets, ignore_index=-100, reduction="sum")


class CSCForCorrection(CSCPreTrainedModel):
    """The CSC model: predicts the correct character at every position (output length == input length), with
    optional auxiliary heads for its pinyin, its first strokes and error detection.

    Loss: the per-token losses are summed and divided by `num_items_in_batch` when given (the Trainer passes the
    number of label tokens across devices and accumulation steps), else by the number of label tokens here.
    `labels` are the target ids with -100 where ignored; the auxiliary targets derive from them (pinyin: the
    label's syllable id, strokes: its first strokes, detection: input != label). `pinyin_targets` /
    `detection_targets` override them; they are not named `*labels` so that the Trainer's default `label_names`
    stays `["labels"]`. The edit head learns from `edit_targets` (an `EDIT_OPS` index per token, -100 where
    ignored) and `insert_targets` (the id inserted after a token whose op is insert, else -100); its insert scores
    are computed only at those positions while training, and at every position without `labels`.
    """

    _tied_weights_keys = {"head.decoder.weight": "csc.bert.embeddings.word_embeddings.weight"}

    def __init__(self, config: CSCConfig, knowledge: Mapping[str, torch.Tensor] | None = None):
        config = with_knowledge_shapes(config, knowledge)  # shared with `self.csc`, which finds nothing to change
        super().__init__(config)
        self.csc = CSCModel(config, knowledge)
        hidden, strokes = config.hidden_size, config.stroke_head_length * (NUM_STROKES + 1)
        self.head = CorrectionHead(config)
        self.pinyin_head = nn.Linear(hidden, config.num_syllables) if config.pinyin_head else None
        self.stroke_head = nn.Linear(hidden, strokes) if config.stroke_head else None
        self.detection_head = nn.Linear(hidden, 1) if config.detection_head else None
        self.edit_head = EditHead(config) if config.edit_head else None
        self.post_init()

    def get_output_embeddings(self) -> nn.Linear:
        return self.head.decoder

    def set_output_embeddings(self, embeddings: nn.Linear):
        self.head.decoder = embeddings

    def load_bert(self, path: str):
        """Copy a BERT checkpoint into the semantic encoder and, where it has one, its masked-LM head into the
        correction head."""
        mlm = BertForMaskedLM.from_pretrained(path)
        self.csc.bert.load_state_dict(mlm.bert.state_dict())
        self.head.transform.load_state_dict(mlm.cls.predictions.transform.state_dict())
        with torch.no_grad():
            self.head.decoder.bias.copy_(mlm.cls.predictions.bias)
            if not self.config.tie_word_embeddings:
                self.head.decoder.weight.copy_(mlm.cls.predictions.decoder.weight)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        labels: torch.Tensor | None = None,
        detection_targets: torch.Tensor | None = None,
        pinyin_targets: torch.Tensor | None = None,
        edit_targets: torch.Tensor | None = None,
        insert_targets: torch.Tensor | None = None,
        return_insert_logits: bool = True,
        num_items_in_batch: int | torch.Tensor | None = None,
        **inputs,
    ) -> CSCCorrectionOutput:
        r"""
        return_insert_logits (`bool`): without `labels`, whether the edit head scores the inserted character at every
            position (a vocabulary-sized output layer more: a caller that inserts nothing leaves it out).
        inputs: the further inputs of [`CSCModel.forward`] (`token_type_ids`, `position_ids`, `pinyin_ids`, ...).
        """
        outputs = self.csc(input_ids, attention_mask, **inputs)
        hidden = outputs.last_hidden_state
        logits = self.head(hidden)
        pinyin_logits = self.pinyin_head(hidden) if self.pinyin_head is not None else None
        stroke_logits = None
        if self.stroke_head is not None:
            stroke_logits = self.stroke_head(hidden).unflatten(-1, (self.config.stroke_head_length, NUM_STROKES + 1))
        detection_logits = self.detection_head(hidden).squeeze(-1) if self.detection_head is not None else None
        edit_logits = insert_logits = None
        if self.edit_head is not None:
            edit_logits = self.edit_head(hidden)
            if labels is None and return_insert_logits:
                insert_logits = self.head.decoder(self.edit_head.insert(hidden))

        loss = None
        if labels is not None:
            ignored = labels == -100
            label_ids = labels.masked_fill(ignored, 0)  # for the knowledge lookups
            loss = summed_cross_entropy(logits, labels)
            if pinyin_logits is not None:
                if pinyin_targets is None:
                    pinyin_targets = self.csc.knowledge.char_syllable[label_ids].masked_fill(ignored, -100)
                loss = loss + self.config.pinyin_loss_weight * summed_cross_entropy(pinyin_logits, pinyin_targets)
            if stroke_logits is not None:
                strokes = self.csc.knowledge.char_strokes[label_ids][..., : self.config.stroke_head_length]
                strokes = strokes.masked_fill(ignored.unsqueeze(-1), -100)
                stroke_loss = summed_cross_entropy(stroke_logits, strokes) / self.config.stroke_head_length
                loss = loss + self.config.stroke_loss_weight * stroke_loss
            if detection_logits is not None:
                if detection_targets is None:
                    detection_targets = (input_ids != labels).long().masked_fill(ignored, -100)
                known = detection_targets != -100
                detection_loss = F.binary_cross_entropy_with_logits(
                    detection_logits[known].float(), detection_targets[known].float(), reduction="sum"
                )
                loss = loss + self.config.detection_loss_weight * detection_loss
            if edit_logits is not None and edit_targets is not None:
                edit_loss = summed_cross_entropy(edit_logits, edit_targets)
                if insert_targets is not None:  # the insert scores at the inserting positions only (maybe none)
                    inserted = insert_targets != -100
                    scores = self.head.decoder(self.edit_head.insert(hidden[inserted]))
                    edit_loss = edit_loss + summed_cross_entropy(scores, insert_targets[inserted])
                loss = loss + self.config.edit_loss_weight * edit_loss
            count = (~ignored).sum() if num_items_in_batch is None else num_items_in_batch
            loss = loss / torch.as_tensor(count, device=loss.device).clamp(min=1)

        return CSCCorrectionOutput(
            loss=loss,
            logits=logits,
            detection_logits=detection_logits,
            edit_logits=edit_logits,
            insert_logits=insert_logits,
            pinyin_logits=pinyin_logits,
            stroke_logits=stroke_logits,
            hidden_states=outputs.hidden_states,
            attentions=outputs.attentions,
        )


__all__ = ["CSCForCorrection", "CSCModel", "CSCPreTrainedModel"]
