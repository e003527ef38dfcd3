"""Inference: the `Corrector` and the `chinese-spelling-check` transformers pipeline task.

    corrector = Corrector.from_pretrained("path/to/model", keep_bias=1.0, protected_terms=["微软"])
    corrector("我门去北京。")
    # {"source": "我门去北京。", "prediction": "我们去北京。",
    #  "edits": [{"position": 1, "wrong": "门", "right": "们", "probability": 0.93}]}
    corrector.correct(texts)                      # predictions only: the fast path for evaluation

    import csc_hf.pipeline                        # registers the task with transformers
    checker = pipeline("chinese-spelling-check", model="path/to/model")
    checker(["我门去北京。", "..."], threshold=0.5)

Rules, for every model:
- Only Han characters (`csc_hf.chars.is_han`) change, and only into Han characters; everything else (Latin, digits,
  spaces, emoji, characters outside the BMP or the vocabulary) is kept, so a prediction always has its source's length.
- `protected_chars` never change, nor any character inside an occurrence of one of `protected_terms`.
- Tagging models (`CSCForCorrection`, any masked LM over a one-token-per-character tokenizer): `keep_bias` is added
  to the source character's logit before the argmax; an edit is kept when the predicted character's probability
  (the model's softmax, without the bias) is at least `threshold`.
- The BART baseline (`BartForConditionalGeneration` + `CSCTokenizer`) generates with `csc_hf.modeling.bart_correct`;
  it gives no probabilities (`probability` is None), so `threshold` and `keep_bias` must stay 0.
- Texts longer than the model's maximum length run in overlapping windows; each character is predicted once, by the
  window where it is most central (`plan_windows`).
- Texts are corrected in batches of similar length; results come back in input order.
"""

import copy
import math
import numbers
import os
import re
from collections.abc import Iterable, Sequence
from typing import Any

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
from csc_hf.modeling import bart_correct

TASK = "chinese-spelling-check"
Edit = tuple[int, str, float | None]
"""A kept correction: position in the text, the right character, its probability (None for BART)."""
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


def check_texts(texts: Iterable[str]) -> list[str]:
    """`texts` as a list, or a TypeError naming the first item that is not a str."""
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Iterable):
        raise TypeError(f"texts must be a str or an iterable of str, got {type(texts).__name__}")
    texts = list(texts)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"texts[{i}] must be a str, got {type(text).__name__}")
    return texts


def protected_positions(text: str, terms: Iterable[str]) -> set[int]:
    """Positions of `text` covered by an occurrence (overlapping ones included) of one of `terms`."""
    positions = set()
    for term in terms:
        start = text.find(term)
        while start >= 0:
            positions.update(range(start, start + len(term)))
            start = text.find(term, start + 1)
    return positions


def check_number(name: str, value: Any) -> float:
    """`value` as a float, or an error naming the parameter `name` if it is not a finite real number."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def decode_edits(
    input_ids: torch.Tensor,
    logits: torch.Tensor,
    han: torch.Tensor,
    editable: torch.Tensor,
    keep_bias: float = 0.0,
    threshold: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The decoding rule of a tagging model: the edits of a batch as `(rows, columns, predicted ids, probabilities)`.

    `han` marks the Han tokens of the vocabulary, `editable` the positions that may change (shaped as `input_ids`).
    An edit is made where the position is editable, the best Han token after adding `keep_bias` to the source's
    logit is not the source, and its probability (softmax of the logits without the bias) reaches `threshold`.
    `logits` are changed in place."""
    source_ids = input_ids.unsqueeze(-1)
    source = logits.gather(-1, source_ids)
    if keep_bias:
        logits.scatter_(-1, source_ids, source + keep_bias)
    predicted = logits.argmax(-1)
    retry = editable & ~han[predicted]  # the best token is not Han: take the best Han one
    if retry.any():
        predicted[retry] = logits[retry].masked_fill(~han, float("-inf")).argmax(-1)
    rows, columns = (editable & (predicted != input_ids)).nonzero(as_tuple=True)
    ids = predicted[rows, columns]
    scores = logits[rows, columns].double().scatter_(-1, source_ids[rows, columns], source[rows, columns].double())
    probabilities = (scores.gather(-1, ids.unsqueeze(-1)).squeeze(-1) - scores.logsumexp(-1)).exp()
    kept = probabilities >= threshold
    return rows[kept], columns[kept], ids[kept], probabilities[kept]


def apply_edits(text: str, edits: Sequence[Edit]) -> str:
    """`text` with each edit's character at its position."""
    if not edits:
        return text
    chars = list(text)
    for position, right, _ in edits:
        chars[position] = right
    return "".join(chars)


class Corrector:
    """Corrects raw strings with a CSC model and its one-token-per-character tokenizer (see the module docstring).

    Args:
        model: a tagging model (logits aligned with the input) or the BART baseline; set to eval mode on each call.
        tokenizer: a `CSCTokenizer` (one token per character between `[CLS]` and `[SEP]`).
        batch_size: windows per forward pass.
        threshold: minimum probability of a kept edit, in [0, 1].
        keep_bias: added to the source character's logit before the argmax (larger: fewer edits); finite.
        protected_chars: characters never changed.
        protected_terms: strings whose every occurrence is left as is.
        overlap: characters shared by consecutive windows of a long text (default: a quarter of the window).
        device: where to move the model (default: where it is).

    `threshold` and `keep_bias` are read on every call, so they may be reassigned between calls (e.g. to tune
    keep_bias on a validation set); the protected sets change through `with_options`.
    """

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        *,
        batch_size: int = 32,
        threshold: float = 0.0,
        keep_bias: float = 0.0,
        protected_chars: Iterable[str] = (),
        protected_terms: Iterable[str] = (),
        overlap: int | None = None,
        device: str | torch.device | None = None,
    ):
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if len(tokenizer) > model.config.vocab_size:
            raise ValueError(f"the tokenizer has {len(tokenizer)} tokens, the model {model.config.vocab_size}")
        self.model = model if device is None else model.to(device)
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.seq2seq = bool(model.config.is_encoder_decoder)
        limit = min(getattr(model.config, "max_position_embeddings", tokenizer.model_max_length),
                    tokenizer.model_max_length)  # fmt: skip
        self.window = limit - (3 if self.seq2seq else 2)  # [CLS] [SEP]; BART's decoder also starts with [SEP]
        self.overlap = self.window // 4 if overlap is None else overlap
        plan_windows(0, self.window, self.overlap)  # validates
        self._tokens = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
        self._han = torch.zeros(model.config.vocab_size, dtype=torch.bool)
        self._han[: len(self._tokens)] = torch.tensor([is_han(token) for token in self._tokens])
        self._set_options(threshold, keep_bias, protected_chars, protected_terms)

    def _set_options(
        self, threshold: float, keep_bias: float, protected_chars: Iterable[str], protected_terms: Iterable[str]
    ) -> None:
        threshold, keep_bias = check_number("threshold", threshold), check_number("keep_bias", keep_bias)
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be in [0, 1], got {threshold}")
        if self.seq2seq and (threshold or keep_bias):
            raise ValueError("a seq2seq (BART) model gives no probabilities or logits per character: "
                             "threshold and keep_bias must be 0")  # fmt: skip
        if isinstance(protected_terms, str):
            raise TypeError(f"protected_terms must be a list of str, not the str {protected_terms!r}")
        protected_chars, protected_terms = frozenset(protected_chars), list(protected_terms)
        if bad := [ch for ch in protected_chars if not (isinstance(ch, str) and len(ch) == 1)]:
            raise ValueError(f"protected_chars must be single characters, got {bad}")
        if bad := [term for term in protected_terms if not isinstance(term, str)]:
            raise TypeError(f"protected_terms must be str, got {bad}")
        self.threshold, self.keep_bias = threshold, keep_bias
        self.protected_chars = protected_chars
        self.protected_terms = tuple(term for term in protected_terms if term)
        self._editable = self._han.clone()  # source ids that may change: Han, not protected ([UNK] never is)
        self._editable[self.tokenizer.convert_tokens_to_ids(sorted(protected_chars))] = False

    def with_options(self, **options: Any) -> "Corrector":
        """A copy with other `threshold`, `keep_bias`, `protected_chars` or `protected_terms`; shares the model."""
        current = dict(threshold=self.threshold, keep_bias=self.keep_bias, protected_chars=self.protected_chars,
                       protected_terms=self.protected_terms)  # fmt: skip
        if unknown := set(options) - set(current):
            raise TypeError(f"unknown options {sorted(unknown)}; choose from {sorted(current)}")
        corrector = copy.copy(self)
        corrector._set_options(**{**current, **options})
        return corrector

    @classmethod
    def from_pretrained(cls, path: str, **kwargs: Any) -> "Corrector":
        """A corrector for the model and tokenizer saved at `path` (a folder or a Hub id): CSC models load as
        `AutoModelForMaskedLM`, the BART baseline as `AutoModelForSeq2SeqLM`; `kwargs` go to `Corrector`."""
        local = os.path.isabs(path) or path.startswith(".") or path.count("/") > 1
        if local and not os.path.isdir(path):
            raise FileNotFoundError(f"model folder {path} does not exist")
        config = AutoConfig.from_pretrained(path)
        auto = AutoModelForSeq2SeqLM if config.is_encoder_decoder else AutoModelForMaskedLM
        return cls(auto.from_pretrained(path, config=config), AutoTokenizer.from_pretrained(path), **kwargs)

    def __call__(self, texts: str | Iterable[str]) -> dict[str, Any] | list[dict[str, Any]]:
        """`{"source", "prediction", "edits": [{"position", "wrong", "right", "probability"}]}` for a str, a list
        of them for several texts."""
        batch = [texts] if isinstance(texts, str) else check_texts(texts)
        results = [
            {
                "source": text,
                "prediction": apply_edits(text, edits),
                "edits": [
                    {"position": position, "wrong": text[position], "right": right, "probability": probability}
                    for position, right, probability in edits
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

    @torch.no_grad()
    def _edits(self, texts: list[str]) -> list[list[Edit]]:
        """The kept edits of each text, by position. Windows run longest first, in batches of `batch_size`."""
        plan = [
            (i, *window)
            for i, text in enumerate(texts)
            for window in plan_windows(len(text), self.window, self.overlap)
        ]
        plan.sort(key=lambda window: window[2] - window[1], reverse=True)
        self.model.eval()
        edits: list[list[Edit]] = [[] for _ in texts]
        for b in range(0, len(plan), self.batch_size):
            batch = plan[b : b + self.batch_size]
            chunks = [texts[i][start:end] for i, start, end, _, _ in batch]
            for row, column, right, probability in self._predict(chunks):
                i, start, _, keep_start, keep_end = batch[row]
                if keep_start <= start + column < keep_end:
                    edits[i].append((start + column, right, probability))
        for i, text in enumerate(texts):
            if self.protected_terms and edits[i]:
                protected = protected_positions(text, self.protected_terms)
                edits[i] = [edit for edit in edits[i] if edit[0] not in protected]
            edits[i].sort()
        return edits

    def _predict(self, chunks: list[str]) -> list[tuple[int, int, str, float | None]]:
        """Candidate edits `(row, column, right, probability)` of a batch of texts that fit the model."""
        chunks = [_SURROGATE.sub("\ufffd", chunk) for chunk in chunks]
        if self.seq2seq:
            predictions = bart_correct(self.model, self.tokenizer, chunks, batch_size=len(chunks))
            return [
                (row, column, right, None)
                for row, (chunk, prediction) in enumerate(zip(chunks, predictions))
                for column, (wrong, right) in enumerate(zip(chunk, prediction))
                if wrong != right and is_han(wrong) and is_han(right) and wrong not in self.protected_chars
            ]
        device = self.model.device
        encoding = self.tokenizer(chunks, padding=True, return_tensors="pt", return_token_type_ids=False).to(device)
        lengths = torch.tensor([len(chunk) + 2 for chunk in chunks], device=device)
        if not torch.equal(encoding["attention_mask"].sum(1), lengths):
            raise ValueError("the tokenizer must give one token per character between [CLS] and [SEP] (CSCTokenizer)")
        logits = self.model(**encoding).logits
        input_ids = encoding["input_ids"]
        editable = self._editable.to(device)[input_ids]
        edits = decode_edits(input_ids, logits, self._han.to(device), editable, self.keep_bias, self.threshold)
        rows, columns, ids, probabilities = edits
        rights = [self._tokens[i] for i in ids.tolist()]
        return list(zip(rows.tolist(), (columns - 1).tolist(), rights, probabilities.tolist()))  # column 0 is [CLS]


class ChineseSpellingCheckPipeline(Pipeline):
    """The `chinese-spelling-check` task: `pipeline("chinese-spelling-check", model=..., tokenizer=...)` with model
    objects, a saved folder or a Hub id. Each text gives the `Corrector`'s dict.

    Options, at construction or per call: `threshold`, `keep_bias`, `protected_chars`, `protected_terms`.
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
        self.corrector = Corrector(self.model, self.tokenizer, batch_size=self._batch_size, **self._forward_params)

    def _sanitize_parameters(
        self,
        threshold: float | None = None,
        keep_bias: float | None = None,
        protected_chars: Iterable[str] | None = None,
        protected_terms: Iterable[str] | None = None,
    ) -> tuple[dict, dict, dict]:
        options = dict(threshold=threshold, keep_bias=keep_bias, protected_chars=protected_chars,
                       protected_terms=protected_terms)  # fmt: skip
        return {}, {name: value for name, value in options.items() if value is not None}, {}

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
    "TASK", "ChineseSpellingCheckPipeline", "Corrector", "Edit", "check_number", "check_texts", "decode_edits",
    "plan_windows",
]  # fmt: skip
