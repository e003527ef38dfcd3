"""Inference: the `Corrector` and the `chinese-spelling-check` transformers pipeline task, for csc_hf's models and any
other Hugging Face checkpoint (the README's "Decoding, and models from elsewhere" shows how to use them).

Routes, picked from the model's config:
- a tagging model (`CSCForCorrection`, or any masked LM whose logits are aligned with its input) reads `[CLS]`, one
  token per character and `[SEP]`: each character is looked up in the vocabulary as its own token (else as the
  tokenizer's normalizer writes it, else `[UNK]`), never given to the tokenizer as text;
- csc_hf's BART (`CSCTokenizer`) generates with `csc_hf.modeling.bart_generate` and is read position by position, or,
  when `edit_kinds` allows missing or redundant characters, generates freely and is aligned to the source's tokens;
- any other seq2seq model generates; its output is aligned to the source (`csc_hf.edits.aligned_edits`) and the
  substitutions at a source position are kept, and its insertions and deletions when `edit_kinds` allows them. It
  gives no probabilities: `threshold`, `keep_bias` and `similarity_prior` must stay 0.

Rules, for every model:
- Only Han characters (`csc_hf.chars.is_han`) change, and only into Han characters; a seq2seq model, and a tagging
  model with an edit head (`CSCConfig.edit_head`), may also insert (a missing character) or delete (a redundant one) a
  Han character when `edit_kinds` names that kind (default: substitutions only, so a prediction has its source's
  length). Any other tagging model keeps its source's length by construction: its `edit_kinds` is substitution only
  (`can_change_length` is False).
- `protected_chars` never change or go, nor does any character inside an occurrence of one of `protected_terms`, and
  nothing is inserted inside such an occurrence.
- A tagging model adds `keep_bias` to the source character's logit before the argmax, and `similarity_prior` to the
  logits of the characters similar to the source (`csc_hf.confusion.similar_characters`, or the model folder's
  `csc_similar.json`); an edit is kept when its probability (the softmax without either bias) reaches `threshold`
  (`decode_edits`). With an edit head, `keep_bias` is added to the keep op's logit too, and an insertion or a deletion
  is kept when its probability (the op's, times the inserted character's) reaches `threshold` (`decode_length_edits`).
- Texts longer than the model's maximum length run in overlapping windows of characters; each character is predicted
  by the window where it is most central (`plan_windows`).
- Texts are corrected in batches of similar length; results come back in input order.
- The decoding saved with the model (`csc_hf.model_folder`: `csc_decoding.json`, `csc_similar.json`) is the default;
  an explicit argument wins.
"""

import copy
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from transformers import (
    AutoConfig,
    AutoModelForMaskedLM,
    AutoModelForSeq2SeqLM,
    AutoTokenizer,
    Pipeline,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)
from transformers.pipelines import PIPELINE_REGISTRY

from csc_hf.chars.pinyin import is_han
from csc_hf.edits import EDIT_KINDS, MISSING, REDUNDANT, SUBSTITUTION, aligned_edits, alignment, apply
from csc_hf.edits import Edit as SourceEdit
from csc_hf.files import check_texts, write_atomic
from csc_hf.logging import get_logger
from csc_hf.model_folder import DECODING_DEFAULTS, check_decoding, check_model_folder, is_local, saved_options
from csc_hf.modeling import EDIT_OPS, CSCTokenizer, bart_generate
from csc_hf.precision import check_bf16_weights, inference_bf16
from csc_hf.run_layout import SIMILAR_FILE

if TYPE_CHECKING:
    from csc_hf.llm.corrector import LLMCorrector

logger = get_logger(__name__)
TASK = "chinese-spelling-check"
UNBOUNDED = 1_000_000  # a tokenizer's model_max_length above this means "no limit" (transformers' huge default)
DEFAULT_LENGTH = 512  # the window, in tokens, of a model and tokenizer that state no limit
Edit = tuple[int, str, float | None, str]
"""A kept correction: position in the text, the right character ("" for a deletion), its probability (None for a
seq2seq model), its kind (`csc_hf.edits.EDIT_KINDS`: substitution, missing: inserted before the position, redundant:
the character at the position deleted)."""
OPTIONS = ("threshold", "keep_bias", "protected_chars", "protected_terms", "similarity_prior", "edit_kinds")
"""The Corrector's options that a copy may change (`Corrector.with_options`)."""
TAGGING_OPTIONS = (*OPTIONS, "similar_characters", "overlap", "bf16_weights")
"""The options of a tagging or seq2seq model's Corrector that an LLM corrector does not take."""
Candidate = tuple[int, int, str, float | None, str]  # an edit of a batch: (row, column, right, probability, kind)
_SURROGATE = re.compile("[\ud800-\udfff]")  # lone surrogates cannot be encoded; they stand in as U+FFFD (unknown)


def plan_windows(length: int, size: int, overlap: int) -> list[tuple[int, int, int, int]]:
    """Windows `(start, end, keep_start, keep_end)` over a text of `length` characters: `size` characters each (one
    window if the text fits), consecutive windows overlapping by at least `overlap`. A window's prediction is kept
    for `keep_start:keep_end`, the characters nearer its centre than any other window's; these ranges tile the text."""
    if not 0 <= overlap < size:
        raise ValueError(f"need 0 <= overlap < window size, got overlap={overlap}, size={size}")
    if length <= size:
        return [(0, length, 0, length)] if length else []
    starts = [*range(0, length - size, size - overlap), length - size]
    bounds = [0, *((a + b + size) // 2 for a, b in zip(starts, starts[1:])), length]
    return [(start, start + size, low, high) for start, low, high in zip(starts, bounds, bounds[1:])]


def protected_positions(text: str, terms: Iterable[str]) -> set[int]:
    """Positions of `text` covered by an occurrence (overlapping ones included) of one of `terms`."""
    positions = set()
    for term in terms:
        start = text.find(term)
        while start >= 0:
            positions.update(range(start, start + len(term)))
            start = text.find(term, start + 1)
    return positions


def decode_edits(
    input_ids: torch.Tensor,
    logits: torch.Tensor,
    han: torch.Tensor,
    editable: torch.Tensor,
    keep_bias: float = 0.0,
    threshold: float = 0.0,
    similar: torch.Tensor | None = None,
    similarity_prior: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The decoding rule of a tagging model: the edits of a batch as `(rows, columns, predicted ids, probabilities)`.

    `han` marks the Han tokens of the vocabulary, `editable` the positions that may change (shaped as `input_ids`).
    `similar` (`[vocab, K]`, each token's similar tokens, padded with the token itself) gets `similarity_prior` added
    to their logits at every position of their source token. An edit is made where the position is editable, the
    best Han token after adding `keep_bias` to the source's logit is not the source (of equal logits, the first), and
    its probability (softmax of the logits without either bias) reaches `threshold`. `logits` come back as they were
    (the search for the best token writes into them and puts back what it wrote): the biases go to an fp32 copy, and
    without them the logits are read in their own dtype (bf16 and fp16 values are exact in fp32, so the edits and
    probabilities are those of the fp32 logits)."""
    source_ids = input_ids.unsqueeze(-1)
    boosted = similar[input_ids] if similar is not None and similarity_prior else None
    # a positive keep_bias alone raises one logit per position: the best token follows from the unbiased logits and
    # the raised source logit, without a biased copy of the whole [batch, length, vocab] tensor
    source_only = keep_bias > 0 and boosted is None
    biased = (bool(keep_bias) or boosted is not None) and not source_only
    if biased:
        logits = logits.float() if logits.dtype != torch.float32 else logits.clone()
    logits = logits.contiguous()  # written into below: an expanded or strided view is copied first
    source = logits.gather(-1, source_ids)
    raised = source.float() + keep_bias  # the source's logit as the rule reads it
    if boosted is not None:  # the padding points at the source, whose logit is written below
        unboosted = logits.gather(-1, boosted)
        logits.scatter_add_(-1, boosted, logits.new_full(boosted.shape, similarity_prior))
    held = raised if biased else source  # the source's logit in the tensor searched, written after the maximum
    # Most positions keep their source, and one maximum over the other tokens (the source's logit set to -inf for
    # it, then put back) finds every position where the raised source beats them all. Only the other editable
    # positions take a maximum with its index (which costs about five such maxima on the CPU): ties (the first
    # index wins) and NaN (torch's max picks it) go there too. The writes index the flat tensor: `scatter_` on a
    # bf16 tensor costs as much as a pass over all of it on the CPU.
    at = torch.arange(input_ids.numel(), device=logits.device) * logits.shape[-1] + input_ids.flatten()
    with torch.no_grad(), torch.inference_mode(logits.is_inference()):
        flat = logits.view(-1)
        flat[at] = float("-inf")
        others = logits.amax(-1, keepdim=True)
        flat[at] = held.flatten()
    predicted = input_ids.clone()
    search = editable & ~(raised > others).squeeze(-1)
    if search.any():
        rows_logits = logits[search]  # a copy of those rows only
        if source_only:
            rows_logits = rows_logits.float().scatter_(-1, source_ids[search], raised[search])
        predicted[search] = rows_logits.max(-1).indices  # max's indices are argmax's (the first of equal values)
    retry = editable & ~han[predicted]  # the best token is not Han: take the best Han one
    if retry.any():
        rows_logits = logits[retry].float()  # a copy of those rows only
        if source_only:
            rows_logits.scatter_(-1, source_ids[retry], raised[retry])
        predicted[retry] = rows_logits.masked_fill(~han, float("-inf")).max(-1).indices
    rows, columns = (editable & (predicted != input_ids)).nonzero(as_tuple=True)
    ids = predicted[rows, columns]
    scores = logits[rows, columns].double()
    if boosted is not None:  # the model's own logits back
        scores.scatter_(-1, boosted[rows, columns], unboosted[rows, columns].double())
    scores.scatter_(-1, source_ids[rows, columns], source[rows, columns].double())
    probabilities = (scores.gather(-1, ids.unsqueeze(-1)).squeeze(-1) - scores.logsumexp(-1)).exp()
    kept = probabilities >= threshold
    return rows[kept], columns[kept], ids[kept], probabilities[kept]


def decode_length_edits(
    edit_logits: torch.Tensor,
    insert_logits: torch.Tensor | None,
    han: torch.Tensor,
    deletable: torch.Tensor,
    insertable: torch.Tensor,
    keep_bias: float = 0.0,
    threshold: float = 0.0,
) -> tuple[tuple[torch.Tensor, ...], tuple[torch.Tensor, ...]]:
    """The decoding rule of an edit head (scores over `EDIT_OPS` per token, and over the vocabulary for the character
    inserted after it): the deletions `(rows, columns, probabilities)` and the insertions `(rows, columns, ids,
    probabilities)` of a batch, a column naming the token after which the character goes.

    At each position the best op after adding `keep_bias` to the keep op's logit is taken; a deletion is made where
    the position is `deletable` (an editable character), an insertion where it is `insertable` (`[CLS]` or a
    character), of the best Han token. Its probability (the op's softmax without the bias, times the inserted token's)
    must reach `threshold`. Without `insert_logits` nothing is inserted."""
    keep, delete, insert = (EDIT_OPS.index(op) for op in ("keep", "delete", "insert"))
    ops = edit_logits.float()
    probabilities = ops.softmax(-1)
    if keep_bias:
        ops = ops.clone()
        ops[..., keep] += keep_bias
    best = ops.max(-1).indices
    deleted = deletable & (best == delete) & (probabilities[..., delete] >= threshold)
    rows, columns = deleted.nonzero(as_tuple=True)
    deletions = rows, columns, probabilities[rows, columns, delete]
    if insert_logits is None:
        none = rows.new_zeros(0)
        return deletions, (none, none, none, probabilities.new_zeros(0))
    rows, columns = (insertable & (best == insert)).nonzero(as_tuple=True)
    scores = insert_logits[rows, columns].float()
    ids = scores.masked_fill(~han, float("-inf")).max(-1).indices
    chosen = (scores.gather(-1, ids.unsqueeze(-1)).squeeze(-1) - scores.logsumexp(-1)).exp()
    insert_probabilities = probabilities[rows, columns, insert] * chosen
    kept = insert_probabilities >= threshold
    return deletions, (rows[kept], columns[kept], ids[kept], insert_probabilities[kept])


def apply_edits(text: str, edits: Sequence[Edit]) -> str:
    """`text` with its edits (sorted by position, insertions at a position first) applied."""
    if not edits:
        return text
    if all(kind == SUBSTITUTION for *_, kind in edits):
        chars = list(text)
        for position, right, _, _ in edits:
            chars[position] = right
        return "".join(chars)
    return "".join(apply(text, (SourceEdit(kind, position, None, right) for position, right, _, kind in edits)))


def check_edit_kinds(edit_kinds: Iterable[str]) -> tuple[str, ...]:
    """`edit_kinds` as a tuple in the order of `csc_hf.edits.EDIT_KINDS`, or a ValueError naming what is not a kind."""
    if isinstance(edit_kinds, str):
        raise TypeError(f"edit_kinds must be a list of edit kinds, not the str {edit_kinds!r}")
    given = list(edit_kinds)
    if bad := [kind for kind in given if kind not in EDIT_KINDS]:
        raise ValueError(f"edit_kinds: {bad} are not edit kinds; choose from {', '.join(EDIT_KINDS)}")
    return tuple(kind for kind in EDIT_KINDS if kind in given)


@torch.no_grad()
def generate_corrections(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, texts: Sequence[str], max_length: int
) -> list[str]:
    """Each text as a seq2seq model rewrites it (`generate` with the model's generation settings, at most twice the
    input's tokens), decoded without special tokens; inputs longer than `max_length` tokens are cut."""
    if tokenizer.pad_token is None and len(texts) > 1:  # nothing to pad with: one text at a time
        return [
            prediction for text in texts for prediction in generate_corrections(model, tokenizer, [text], max_length)
        ]
    inputs = tokenizer(
        list(texts),
        padding=True,
        truncation=True,
        max_length=max_length,
        return_tensors="pt",
        return_token_type_ids=False,
    ).to(model.device)
    outputs = model.generate(**inputs, max_new_tokens=2 * inputs["input_ids"].shape[1] + 8)
    return tokenizer.batch_decode(outputs, skip_special_tokens=True)


def _model_config(path: str | os.PathLike, trust_remote_code: bool) -> tuple[str, Any]:
    """The path (a local folder's expanded) and the config of a model, read before anything else of it: a local folder
    must exist and hold a config.json (its tokenizer files are checked once the kind of model is known: an LLM's come
    in other files, tokenizer.model, ...)."""
    path = str(path)
    if is_local(path):
        path = os.path.expanduser(path)
        check_model_folder(path, tokenizer=False, trust_remote_code=trust_remote_code, weights=False)
    return path, AutoConfig.from_pretrained(path, trust_remote_code=trust_remote_code)


def _is_llm(config: Any, options: Iterable[str]) -> bool:
    from csc_hf.llm.corrector import LLM_OPTIONS, is_causal_lm

    return is_causal_lm(config) or bool(set(options) & set(LLM_OPTIONS))


def loads_as_llm(path: str | os.PathLike, options: Iterable[str] = (), trust_remote_code: bool = False) -> bool:
    """Whether ``Corrector.from_pretrained(path, **options)`` gives an LLM corrector (a causal LM, or an option only
    an LLM corrector takes), from the model's config alone: no weights load."""
    return _is_llm(_model_config(path, trust_remote_code)[1], options)


def loads_as_seq2seq(path: str | os.PathLike, trust_remote_code: bool = False) -> bool:
    """Whether ``Corrector.from_pretrained(path)`` gives a seq2seq corrector (no logits per character to bias), from
    the model's config alone: no weights load."""
    return bool(_model_config(path, trust_remote_code)[1].is_encoder_decoder)


class Corrector:
    """Corrects raw strings with a CSC model, a masked LM or a seq2seq model (see the module docstring).

    Args:
        model: a tagging model (logits aligned with the input) or a seq2seq model; set to eval mode on each call.
        tokenizer: the model's tokenizer: a `CSCTokenizer` or any other (a tagging model reads only its vocabulary,
            one token per character, and its `[CLS]`, `[SEP]`, `[UNK]` and `[PAD]` tokens).
        batch_size: windows per forward pass.
        threshold: minimum probability of a kept edit, in [0, 1].
        keep_bias: added to the source character's logit before the argmax (larger: fewer edits); finite.
        similarity_prior: added to the logits of the characters similar to the source (see the module docstring);
            finite, at least 0; 0 (the default) turns the prior off.
        similar_characters: the prior's candidates, each character mapped to a string of its similar characters
            (default: `csc_hf.confusion.similar_characters` over the vocabulary, built on first use).
        protected_chars: characters never changed or deleted.
        protected_terms: strings whose every occurrence is left as is.
        edit_kinds: the kinds of edit kept (`csc_hf.edits.EDIT_KINDS`): substitution (the default), and for a seq2seq
            model or a tagging model with an edit head also missing (an inserted character) and redundant (a deleted
            one); another tagging model cannot change the length (`can_change_length`).
        overlap: characters shared by consecutive windows of a long text (default: a quarter of the window).
        device: where to move the model (default: where it is).
        precision: `auto` (bf16 autocast on a CPU with bf16 in hardware or a CUDA device that supports it, else
            fp32), `bf16` or `fp32` (`csc_hf.precision`); the weights are not converted unless `bf16_weights`.
        bf16_weights: where the forward passes compute in bf16, convert the model's floating-point weights to bf16 in
            place (as `device` moves it) and run without autocast: no casts, LayerNorm and softmax in bf16 too, and
            faster on a CPU; the predictions may differ from autocast's in a few sentences. Where `precision` `auto`
            resolves to fp32 nothing changes; with `fp32` it is a ValueError (`csc_hf.precision.check_bf16_weights`).

    `threshold`, `keep_bias` and `similarity_prior` are read on every call, so they may be reassigned between calls
    (e.g. to tune keep_bias on a validation set); the protected sets change through `with_options`.
    """

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        *,
        batch_size: int = 32,
        threshold: float = DECODING_DEFAULTS["threshold"],
        keep_bias: float = DECODING_DEFAULTS["keep_bias"],
        protected_chars: Iterable[str] = (),
        protected_terms: Iterable[str] = (),
        similarity_prior: float = DECODING_DEFAULTS["similarity_prior"],
        similar_characters: Mapping[str, str] | None = None,
        edit_kinds: Iterable[str] = (SUBSTITUTION,),
        overlap: int | None = None,
        device: str | torch.device | None = None,
        precision: str = "auto",
        bf16_weights: bool = False,
    ):
        check_bf16_weights(precision, bf16_weights)
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if len(tokenizer) > model.config.vocab_size:
            raise ValueError(f"the tokenizer has {len(tokenizer)} tokens, the model {model.config.vocab_size}")
        self.model = model if device is None else model.to(device)
        self.bf16 = inference_bf16(precision, self.model.device)
        self.bf16_weights = bf16_weights and self.bf16
        if self.bf16_weights:
            self.model.to(torch.bfloat16)
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.seq2seq = bool(model.config.is_encoder_decoder)
        self.edit_head = bool(getattr(model.config, "edit_head", False))  # a tagging model that inserts and deletes
        self.per_character = isinstance(tokenizer, CSCTokenizer) or not self.seq2seq  # else: generate, then align
        positions = getattr(model.config, "max_position_embeddings", None) or getattr(model.config, "n_positions", None)
        limit = min(positions or UNBOUNDED, tokenizer.model_max_length or UNBOUNDED)
        self.max_length = DEFAULT_LENGTH if limit >= UNBOUNDED else limit
        # [CLS] [SEP]; csc_hf's BART decoder also starts with [SEP]
        self.window = self.max_length - (3 if self.seq2seq and self.per_character else 2)
        self.overlap = self.window // 4 if overlap is None else overlap
        plan_windows(0, self.window, self.overlap)  # validates
        self._tokens = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
        self._han = torch.zeros(model.config.vocab_size, dtype=torch.bool)
        self._han[: len(self._tokens)] = torch.tensor([is_han(token) for token in self._tokens])
        self._special = {name: getattr(tokenizer, f"{name}_token_id") for name in ("cls", "sep", "unk", "pad")}
        if not self.seq2seq and (missing := [name for name in ("cls", "sep", "unk") if self._special[name] is None]):
            raise ValueError(
                f"the tokenizer has no {' / '.join(t + '_token' for t in missing)}: a masked LM reads "
                "[CLS], one token per character ([UNK] for characters outside the vocabulary) and [SEP]"
            )
        self._char_ids = {token: i for i, token in enumerate(self._tokens) if len(token) == 1}
        backend = getattr(tokenizer, "backend_tokenizer", None)
        self._normalizer = getattr(backend, "normalizer", None)
        self._similar: dict[str, Any] = {"characters": similar_characters, "tables": {}}  # the prior; copies share it
        self._set_options(threshold, keep_bias, protected_chars, protected_terms, similarity_prior, edit_kinds)

    def _set_options(
        self,
        threshold: float,
        keep_bias: float,
        protected_chars: Iterable[str],
        protected_terms: Iterable[str],
        similarity_prior: float = 0.0,
        edit_kinds: Iterable[str] = (SUBSTITUTION,),
    ) -> None:
        threshold, keep_bias = check_decoding("threshold", threshold), check_decoding("keep_bias", keep_bias)
        similarity_prior = check_decoding("similarity_prior", similarity_prior)
        if self.seq2seq and (threshold or keep_bias or similarity_prior):
            raise ValueError(
                "a seq2seq (BART) model gives no probabilities or logits per character: "
                "threshold, keep_bias and similarity_prior must be 0"
            )
        edit_kinds = check_edit_kinds(edit_kinds)
        if not self.can_change_length and edit_kinds not in ((), (SUBSTITUTION,)):
            raise ValueError(
                f"edit_kinds={list(edit_kinds)}: a tagging model predicts one character per source character and "
                "cannot insert or delete; only a seq2seq model (bart) or a tagging model with an edit head "
                "(bert+edit_head) takes missing or redundant"
            )
        if isinstance(protected_terms, str):
            raise TypeError(f"protected_terms must be a list of str, not the str {protected_terms!r}")
        protected_chars, protected_terms = frozenset(protected_chars), list(protected_terms)
        if bad := [ch for ch in protected_chars if not (isinstance(ch, str) and len(ch) == 1)]:
            raise ValueError(f"protected_chars must be single characters, got {bad}")
        if bad := [term for term in protected_terms if not isinstance(term, str)]:
            raise TypeError(f"protected_terms must be str, got {bad}")
        self.threshold, self.keep_bias, self.similarity_prior = threshold, keep_bias, similarity_prior
        self.edit_kinds = edit_kinds
        self.protected_chars = protected_chars
        self.protected_terms = tuple(term for term in protected_terms if term)
        self._editable = self._han.clone()  # source ids that may change: Han, not protected ([UNK] never is)
        protected_ids = [self._char_id(char) for char in sorted(protected_chars)]
        self._editable[[i for i in protected_ids if i is not None]] = False  # None: a tokenizer without [UNK]

    @property
    def can_change_length(self) -> bool:
        """Whether the model can insert and delete characters (a seq2seq model, a tagging model with an edit head) or
        keeps its source's length by construction (any other tagging model)."""
        return self.seq2seq or self.edit_head

    def with_options(self, **options: Any) -> "Corrector":
        """A copy with other `threshold`, `keep_bias`, `protected_chars`, `protected_terms`, `similarity_prior` or
        `edit_kinds`; shares the model."""
        current = {name: getattr(self, name) for name in OPTIONS}
        if unknown := set(options) - set(current):
            raise TypeError(f"unknown options {sorted(unknown)}; choose from {sorted(current)}")
        corrector = copy.copy(self)
        corrector._set_options(**{**current, **options})
        return corrector

    @classmethod
    def from_pretrained(
        cls, path: str | os.PathLike, *, trust_remote_code: bool = False, **kwargs: Any
    ) -> "Corrector | LLMCorrector":
        """A corrector for the model and tokenizer saved at `path`: a local folder (`csc_hf.model_folder.is_local`: one
        that exists, a path starting with `/`, `.` or `~`, `runs/...`; a missing one is an error, the Hub is never
        tried) or a Hub id. Encoder-decoder models load as `AutoModelForSeq2SeqLM`, every other as
        `AutoModelForMaskedLM`; `trust_remote_code` runs the model's own code from its folder. The decoding saved with
        the model (`csc_hf.model_folder.saved_options`) gives the defaults of `keep_bias`, `threshold`,
        `similarity_prior` and `similar_characters`; `kwargs` go to `Corrector` and win.

        A causal language model, or a call with an option only an LLM corrector takes
        (`csc_hf.llm.corrector.LLM_OPTIONS`: `template`, `length_policy`, ...), returns
        `csc_hf.llm.LLMCorrector.from_pretrained(path, ...)` instead: `precision` sets the dtype its weights load in
        (`csc_hf.llm.weights_dtype`), no decoding is read from the folder, and a tagging option (`TAGGING_OPTIONS`)
        is a ValueError."""
        from csc_hf.llm.corrector import LLM_OPTIONS, LLMCorrector, weights_dtype

        check_bf16_weights(kwargs.get("precision", "auto"), kwargs.get("bf16_weights", False))  # before any loading
        path, config = _model_config(path, trust_remote_code)
        if _is_llm(config, kwargs):
            if tagging := [name for name in TAGGING_OPTIONS if name in kwargs]:
                raise ValueError(
                    f"{path} loads as an LLM corrector: {', '.join(tagging)} belong to a tagging or seq2seq model's "
                    f"Corrector; an LLM corrector takes {', '.join(LLM_OPTIONS)}, batch_size, device and precision"
                )
            precision = kwargs.pop("precision", "auto")
            kwargs.setdefault("dtype", weights_dtype(precision))
            return LLMCorrector.from_pretrained(path, trust_remote_code=trust_remote_code, **kwargs)
        if is_local(path):
            check_model_folder(path, trust_remote_code=trust_remote_code)
        auto = AutoModelForSeq2SeqLM if config.is_encoder_decoder else AutoModelForMaskedLM
        try:
            model = auto.from_pretrained(path, config=config, trust_remote_code=trust_remote_code)
        except RuntimeError as err:
            if "mismatched" not in str(err):
                raise
            raise ValueError(
                f"the weights of {path} do not fit its config.json: some tensors have other shapes than the config "
                "makes (the load report above lists them); save the model and its config together again"
            ) from None
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
        return cls(model, tokenizer, **{**saved_options(path), **kwargs})

    def __call__(self, texts: str | Iterable[str]) -> dict[str, Any] | list[dict[str, Any]]:
        """`{"source", "prediction", "edits": [{"position", "wrong", "right", "probability", "kind"}]}` for a str, a
        list of them for several texts. A missing character's edit has `wrong` "" (`right` goes in before
        `position`), a redundant one's `right` "" (the character at `position` goes)."""
        batch = [texts] if isinstance(texts, str) else check_texts(texts)
        results = [
            {
                "source": text,
                "prediction": apply_edits(text, edits),
                "edits": [
                    {
                        "position": position,
                        "wrong": "" if kind == MISSING else text[position],
                        "right": right,
                        "probability": probability,
                        "kind": kind,
                    }
                    for position, right, probability, kind in edits
                ],
            }
            for text, edits in zip(batch, self._edits(batch))
        ]
        return results[0] if isinstance(texts, str) else results

    def correct(self, texts: str | Iterable[str]) -> str | list[str]:
        """The predictions only: a str for a str, else a list."""
        batch = [texts] if isinstance(texts, str) else check_texts(texts)
        predictions = [apply_edits(text, edits) for text, edits in zip(batch, self._edits(batch))]
        return predictions[0] if isinstance(texts, str) else predictions

    def correct_each(self, texts: Iterable[str], options: Sequence[Mapping[str, Any]]) -> list[list[str]]:
        """The predictions of ``self.with_options(**o).correct(texts)`` for each ``o`` of ``options``, from one forward
        pass over ``texts``: tuning a decoding (``keep_bias`` × ``similarity_prior``) costs one pass, not one per
        setting."""
        batch = check_texts(texts)
        each = self._edits_each(batch, [self.with_options(**option) for option in options])
        return [[apply_edits(text, edits) for text, edits in zip(batch, found)] for found in each]

    def _edits(self, texts: list[str]) -> list[list[Edit]]:
        """The kept edits of each text, by position."""
        return self._edits_each(texts, [self])[0]

    @torch.no_grad()
    def _edits_each(self, texts: list[str], decoders: Sequence["Corrector"]) -> list[list[list[Edit]]]:
        """The kept edits of each text, by position, for each of ``decoders`` (this corrector or copies with other
        options), from one forward pass. Windows run longest first, in batches of `batch_size`."""
        plan = [
            (i, *window) for i, text in enumerate(texts) for window in plan_windows(len(text), *self._window_of(text))
        ]
        plan.sort(key=lambda window: window[2] - window[1], reverse=True)
        self.model.eval()
        each: list[list[list[Edit]]] = [[[] for _ in texts] for _ in decoders]
        for b in range(0, len(plan), self.batch_size):
            batch = plan[b : b + self.batch_size]
            chunks = [texts[i][start:end] for i, start, end, _, _ in batch]
            for edits, candidates in zip(each, self._predict(chunks, decoders)):
                for row, column, right, probability, kind in candidates:
                    i, start, _, keep_start, keep_end = batch[row]
                    at_end = kind == MISSING and start + column == keep_end == len(texts[i])  # appended at the end
                    if keep_start <= start + column < keep_end or at_end:
                        edits[i].append((start + column, right, probability, kind))
        for decoder, edits in zip(decoders, each):
            for i, text in enumerate(texts):
                if decoder.protected_terms and edits[i]:
                    protected = protected_positions(text, decoder.protected_terms)
                    edits[i] = [
                        edit
                        for edit in edits[i]
                        if not (edit[0] in protected and (edit[3] != MISSING or edit[0] - 1 in protected))
                    ]
                edits[i].sort(key=lambda edit: (edit[0], edit[3] != MISSING))  # stable: insertions keep their order
        return each

    def _window_of(self, text: str) -> tuple[int, int]:
        """The window and overlap, in characters, for `text`: `window` and `overlap` for a model that reads one token
        per character; for another tokenizer, both scaled by the text's characters per token (at most 1), so that a
        window's tokens fit the model (a window that still does not is cut: its tail keeps its characters)."""
        if self.per_character or not text:
            return self.window, self.overlap
        tokens = len(self.tokenizer(_SURROGATE.sub("\ufffd", text), add_special_tokens=False)["input_ids"])
        size = max(1, min(self.window, self.window * len(text) // max(tokens, 1)))
        return size, min(self.overlap * size // self.window, size - 1)

    def _char_id(self, char: str) -> int:
        """The vocabulary id of one character: its own token, else the token the tokenizer's normalizer makes of it
        (`A` -> `a` for an uncased BERT), else `[UNK]`. Remembered per character."""
        found = self._char_ids.get(char)
        if found is None:
            normalized = self._normalizer.normalize_str(char).strip() if self._normalizer is not None else char
            found = self._char_ids.get(normalized, self._special["unk"])
            self._char_ids[char] = found
        return found

    def similar_tokens(self, device: str | torch.device = "cpu") -> torch.Tensor:
        """`[vocab, K]` on `device`: the ids of each Han token's similar characters, padded with the token's own id;
        every other token lists only itself. The characters are those given to the Corrector (a model folder's
        `csc_similar.json`), else `csc_hf.confusion.similar_characters` over the vocabulary's single-character Han
        tokens, built on first use (seconds to a minute, by vocabulary size, from pypinyin and the glyph fonts found:
        `save_similar` keeps them). Shared by `with_options` copies."""
        tables, key = self._similar["tables"], str(torch.device(device))
        if key in tables:
            return tables[key]
        if "cpu" not in tables:
            from csc_hf.confusion import similar_characters

            ids = {token: i for i, token in enumerate(self._tokens) if len(token) == 1 and self._han[i]}
            if self._similar["characters"] is None:
                self._similar["characters"] = {c: "".join(o) for c, o in similar_characters(list(ids)).items()}
            similar = {
                c: list(dict.fromkeys(o for o in others if o in ids and o != c))
                for c, others in self._similar["characters"].items()
                if c in ids
            }
            width = max(map(len, similar.values()), default=0) or 1
            table = torch.arange(self.model.config.vocab_size).unsqueeze(1).repeat(1, width)
            for char, others in similar.items():
                table[ids[char], : len(others)] = torch.tensor([ids[c] for c in others], dtype=torch.long)
            tables["cpu"] = table
        tables[key] = tables["cpu"].to(device)
        return tables[key]

    def save_similar(self, folder: str | os.PathLike) -> Path:
        """Write the prior's similar characters to `folder`'s `csc_similar.json` (whole or not at all), so that the
        model decodes with the same prior where pypinyin or the fonts differ; returns its path."""
        self.similar_tokens()
        text = json.dumps(self._similar["characters"], indent=0, ensure_ascii=False, sort_keys=True)
        return write_atomic(Path(folder) / SIMILAR_FILE, text + "\n")

    def _encode(self, chunks: list[str]) -> dict[str, torch.Tensor]:
        """`input_ids` (`[CLS]`, one id per character, `[SEP]`, padding) and `attention_mask` of a batch."""
        width = max(map(len, chunks)) + 2
        pad = self._special["pad"] if self._special["pad"] is not None else self._special["unk"]
        input_ids = torch.full((len(chunks), width), pad, dtype=torch.long)
        attention_mask = torch.zeros((len(chunks), width), dtype=torch.long)
        cls_id, sep_id = self._special["cls"], self._special["sep"]
        for row, chunk in enumerate(chunks):
            input_ids[row, : len(chunk) + 2] = torch.tensor([cls_id, *map(self._char_id, chunk), sep_id])
            attention_mask[row, : len(chunk) + 2] = 1
        device = self.model.device
        return {"input_ids": input_ids.to(device), "attention_mask": attention_mask.to(device)}

    def _predict(self, chunks: list[str], decoders: Sequence["Corrector"]) -> list[list[Candidate]]:
        """Candidate edits `(row, column, right, probability)` of a batch of texts that fit the model, for each of
        `decoders` (this corrector or copies with other options: one forward pass), computed under bf16 autocast when
        `self.bf16` and the weights are not bf16 already (the decoding reads the logits' values exactly and adds its
        biases in fp32)."""
        autocast = self.bf16 and not self.bf16_weights
        with torch.autocast(self.model.device.type, dtype=torch.bfloat16, enabled=autocast):
            return self._predict_in_precision([_SURROGATE.sub("\ufffd", chunk) for chunk in chunks], decoders)

    def _predict_in_precision(self, chunks: list[str], decoders: Sequence["Corrector"]) -> list[list[Candidate]]:
        if self.seq2seq:
            free = [decoder.edit_kinds not in ((), (SUBSTITUTION,)) or not self.per_character for decoder in decoders]
            changes = {way: self._seq2seq_edits(chunks, way) for way in set(free)}  # one generation per way of reading
            return [
                [
                    (row, e.position, e.right or "", None, e.kind)
                    for row, (chunk, edits) in enumerate(zip(chunks, changes[way]))
                    for e in edits
                    if e.kind in decoder.edit_kinds and _keeps(e, chunk, decoder.protected_chars)
                ]
                for decoder, way in zip(decoders, free)
            ]
        device = self.model.device
        encoding = self._encode(chunks)
        if self.edit_head:  # the inserted characters' scores only when kept
            encoding["return_insert_logits"] = any(MISSING in decoder.edit_kinds for decoder in decoders)
        outputs = self.model(**encoding)
        logits, edit_logits = outputs.logits, getattr(outputs, "edit_logits", None)
        input_ids = encoding["input_ids"]
        han = self._han.to(device)
        insertable = encoding["attention_mask"].bool() & (input_ids != self._special["sep"])  # [CLS] and characters
        each = []
        for decoder in decoders:
            editable = decoder._editable.to(device)[input_ids]
            similar = decoder.similar_tokens(device) if decoder.similarity_prior else None
            rows, columns, ids, probabilities = decode_edits(
                input_ids,
                logits,
                han,
                editable,
                decoder.keep_bias,
                decoder.threshold,
                similar,
                decoder.similarity_prior,
            )
            rights = [self._tokens[i] for i in ids.tolist()]
            found = zip(rows.tolist(), (columns - 1).tolist(), rights, probabilities.tolist())  # column 0: [CLS]
            candidates = [(*candidate, SUBSTITUTION) for candidate in found]
            if edit_logits is not None and set(decoder.edit_kinds) & {MISSING, REDUNDANT}:
                candidates = self._length_candidates(
                    decoder, candidates, edit_logits, outputs.insert_logits, han, editable, insertable
                )
            each.append(candidates)
        return each

    def _length_candidates(
        self,
        decoder: "Corrector",
        candidates: list[Candidate],
        edit_logits: torch.Tensor,
        insert_logits: torch.Tensor | None,
        han: torch.Tensor,
        editable: torch.Tensor,
        insertable: torch.Tensor,
    ) -> list[Candidate]:
        """A tagging model's substitution `candidates` with the edit head's deletions (each replacing a substitution
        at its position) and insertions, of the kinds `decoder` keeps (`decode_length_edits`)."""
        deletions, insertions = decode_length_edits(
            edit_logits, insert_logits, han, editable, insertable, decoder.keep_bias, decoder.threshold
        )
        out = candidates
        if REDUNDANT in decoder.edit_kinds:
            deleted = {(row, column - 1): p for row, column, p in zip(*(t.tolist() for t in deletions))}
            out = [c for c in out if c[:2] not in deleted]
            out += [(row, column, "", p, REDUNDANT) for (row, column), p in deleted.items()]
        if MISSING in decoder.edit_kinds:
            rows, columns, ids, probabilities = (t.tolist() for t in insertions)
            # inserted after token `column`: before the character at `column` (`column - 1` is the one it follows)
            out += [(r, c, self._tokens[i], p, MISSING) for r, c, i, p in zip(rows, columns, ids, probabilities)]
        return out

    def _seq2seq_edits(self, chunks: list[str], free: bool) -> list[list[SourceEdit]]:
        """A seq2seq model's edits of each chunk at its positions, before any rule: csc_hf's BART read position by
        position, or (``free``: insertions and deletions wanted) generated freely and aligned to the chunk's tokens;
        any other model generated and aligned (`csc_hf.edits.aligned_edits`)."""
        if not self.per_character:
            predictions = generate_corrections(self.model, self.tokenizer, chunks, self.max_length)
            return [aligned_edits(chunk, prediction) for chunk, prediction in zip(chunks, predictions)]
        generated = bart_generate(self.model, self.tokenizer, chunks, batch_size=len(chunks), free=free)
        found = []
        for chunk, ids in zip(chunks, generated):
            source = [self._char_id(char) for char in chunk]
            pairs = (
                alignment(source, ids)
                if free
                else [SourceEdit(SUBSTITUTION, j, s, t) for j, (s, t) in enumerate(zip(source, ids)) if s != t]
            )
            unknown = self._special["unk"]  # the model never saw such a character: it stays
            found.append(
                [
                    SourceEdit(
                        e.kind, e.position, None if e.kind == MISSING else chunk[e.position], self._character(e.right)
                    )
                    for e in pairs
                    if e.kind == MISSING or e.wrong != unknown
                ]
            )
        return found

    def _character(self, token_id: int | None) -> str | None:
        """The character a generated token stands for, or None (a deletion, or a token that is no single character:
        special, [UNK], a word piece)."""
        token = self._tokens[token_id] if token_id is not None and token_id < len(self._tokens) else None
        return token if token is not None and len(token) == 1 and token_id != self._special["unk"] else None


def _keeps(edit: SourceEdit, chunk: str, protected_chars: frozenset[str]) -> bool:
    """Whether a seq2seq model's edit passes the rules: Han characters only, never a protected one, never into
    nothing (an unknown or special token)."""
    if edit.kind == MISSING:
        return edit.right is not None and is_han(edit.right)
    wrong = chunk[edit.position]
    if not is_han(wrong) or wrong in protected_chars:
        return False
    return edit.kind == REDUNDANT or (edit.right is not None and edit.right != wrong and is_han(edit.right))


class ChineseSpellingCheckPipeline(Pipeline):
    """The `chinese-spelling-check` task: `pipeline("chinese-spelling-check", model=..., tokenizer=...)` with model
    objects, a saved folder or a Hub id. Each text gives the `Corrector`'s dict.

    Options, at construction or per call: `threshold`, `keep_bias`, `protected_chars`, `protected_terms`,
    `similarity_prior`, `edit_kinds`. The defaults of `threshold`, `keep_bias` and `similarity_prior` (and the prior's
    characters) are the decoding saved with the model (`csc_hf.model_folder.saved_options` of its `name_or_path`: the
    folder or Hub id it was loaded from), else 0.
    `batch_size` (default 32) is the number of texts per forward step; a list is corrected in length-sorted batches
    and returned in input order; a dataset or generator streams.
    """

    _load_tokenizer = True
    _load_processor = False
    _load_image_processor = False
    _load_video_processor = False
    _load_feature_extractor = False

    def __init__(self, *args: Any, **kwargs: Any):
        kwargs.setdefault("batch_size", 32)
        super().__init__(*args, **kwargs)
        saved = saved_options(self.model.name_or_path) if self.model.name_or_path else {}
        self.corrector = Corrector(
            self.model, self.tokenizer, batch_size=self._batch_size, **{**saved, **self._forward_params}
        )

    def _sanitize_parameters(
        self,
        threshold: float | None = None,
        keep_bias: float | None = None,
        protected_chars: Iterable[str] | None = None,
        protected_terms: Iterable[str] | None = None,
        similarity_prior: float | None = None,
        edit_kinds: Iterable[str] | None = None,
    ) -> tuple[dict, dict, dict]:
        values = (threshold, keep_bias, protected_chars, protected_terms, similarity_prior, edit_kinds)  # as OPTIONS
        return {}, {name: value for name, value in zip(OPTIONS, values) if value is not None}, {}

    def __call__(self, inputs: str | Iterable[str], **kwargs: Any) -> Any:
        """A dict for a str, a list of dicts for a list or tuple, an iterator of dicts for a dataset or generator."""
        if not isinstance(inputs, (list, tuple)):
            return super().__call__(inputs, **kwargs)
        texts = check_texts(inputs)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
        results = dict(zip(order, super().__call__([texts[i] for i in order], **kwargs) if texts else []))
        return [results[i] for i in range(len(texts))]

    def preprocess(self, text: str) -> dict[str, str]:
        if not isinstance(text, str):
            raise TypeError(f"the input must be a str, got {type(text).__name__}")
        return {"text": text}

    def _forward(self, inputs: dict[str, str | list[str]], **options: Any) -> dict[str, Any]:
        corrector = self.corrector.with_options(**options) if options else self.corrector
        return {"result": corrector(inputs["text"])}  # one text, or a list when batched

    def postprocess(self, outputs: dict[str, Any]) -> dict[str, Any]:
        return outputs["result"]


PIPELINE_REGISTRY.register_pipeline(
    TASK, pipeline_class=ChineseSpellingCheckPipeline, pt_model=AutoModelForMaskedLM, type="text"
)

__all__ = [
    "TASK",
    "ChineseSpellingCheckPipeline",
    "Corrector",
    "Edit",
    "check_edit_kinds",
    "decode_edits",
    "generate_corrections",
    "plan_windows",
]
