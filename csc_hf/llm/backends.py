"""How an LLM corrector's prompts become generations: :class:`Generation` (what one prompt gave), the :class:`Backend`
protocol, and :class:`TransformersBackend`, the default (the optional vLLM one is :mod:`csc_hf.llm.vllm_backend`).
Every backend gets token ids and a budget of new tokens per prompt, and stops at the model's end tokens (or, for a
plain prompt, at the end of the answer's line)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from tqdm.auto import tqdm
from transformers import (
    GenerationConfig,
    LogitsProcessor,
    LogitsProcessorList,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    StoppingCriteria,
    StoppingCriteriaList,
    TemperatureLogitsWarper,
    TopPLogitsWarper,
)

from csc_hf.logging import get_verbosity

LINE_END = "\n"  # where a plain prompt's answer ends


def eos_token_ids(generation_config: GenerationConfig | None, tokenizer: PreTrainedTokenizerBase) -> list[int]:
    """The tokens that end a generation: the generation config's ``eos_token_id`` (one or several: a chat model's
    end-of-turn token) and the tokenizer's end-of-sequence token."""
    found = getattr(generation_config, "eos_token_id", None)
    ids = [found] if isinstance(found, int) else list(found or [])
    if tokenizer.eos_token_id is not None:
        ids.append(tokenizer.eos_token_id)
    return list(dict.fromkeys(ids))


@dataclass(frozen=True)
class Generation:
    """What a backend generated for one prompt: the new text (special tokens skipped; for a plain prompt, up to its
    line end), whether the model stopped by itself within the budget, and how many tokens it generated."""

    text: str
    finished: bool
    new_tokens: int


@dataclass(frozen=True)
class Sampling:
    """How a backend decodes: greedy at ``temperature`` 0, else sampled with ``top_p`` from ``seed``; ``stop``: the
    text that ends an answer besides the end tokens (a plain prompt's line end), or None."""

    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0
    stop: str | None = None


class Backend(Protocol):
    """What runs the model: `TransformersBackend` (the default) or :class:`csc_hf.llm.vllm_backend.VLLMBackend`."""

    name: str
    model_name: str
    eos_ids: list[int]
    max_length: int | None  # prompt + new tokens, or None: no stated limit

    def generate(
        self, prompts: Sequence[list[int]], budgets: Sequence[int], sampling: Sampling
    ) -> list[Generation]: ...


class _RowLimits(StoppingCriteria):
    """Stops each row of a batch at its own budget of new tokens, or (``stop``) once it has generated a line end."""

    def __init__(self, start: int, budgets: torch.Tensor, line_end: torch.Tensor | None):
        self.start, self.budgets, self.line_end = start, budgets, line_end

    def __call__(self, input_ids: torch.LongTensor, scores: Any, **kwargs: Any) -> torch.BoolTensor:
        done = (input_ids.shape[1] - self.start) >= self.budgets
        if self.line_end is not None:
            done |= self.line_end[input_ids[:, -1]]
        return done


class _RowSampler(LogitsProcessor):
    """Sampling as greedy decoding of Gumbel-perturbed scores (the Gumbel-max trick): the scores at ``temperature``,
    cut to the ``top_p`` nucleus, plus one Gumbel draw per token from each row's own generator, seeded by the seed and
    the row's prompt. The argmax is then a sample of the nucleus's softmax, and a sentence's sample is the same in any
    batch, in any order and beside any other sentence (one random stream for a whole batch would tie them)."""

    def __init__(self, prompts: Sequence[list[int]], seed: int, temperature: float, top_p: float):
        self.seeds = [_row_seed(prompt, seed) for prompt in prompts]
        self.warpers = [TemperatureLogitsWarper(temperature), *([TopPLogitsWarper(top_p)] if top_p < 1.0 else [])]
        self.generators: list[torch.Generator] = []

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        if not self.generators:  # on the scores' device, at the first step
            self.generators = [torch.Generator(scores.device).manual_seed(seed) for seed in self.seeds]
        for warper in self.warpers:
            scores = warper(input_ids, scores)
        draws = [torch.rand(scores.shape[-1], generator=g, device=scores.device) for g in self.generators]
        gumbel = -torch.log(-torch.log(torch.stack(draws).clamp(1e-12, 1 - 1e-7)))
        return scores.float() + gumbel


def _row_seed(prompt: Sequence[int], seed: int) -> int:
    """A generator seed drawn from a prompt's tokens and the run's seed alone."""
    digest = hashlib.blake2b(str(list(prompt)).encode(), digest_size=8, key=str(seed).encode()).digest()
    return int.from_bytes(digest, "little") >> 1


class TransformersBackend:
    """Generation with a transformers model, in batches of ``batch_size`` prompts sorted by length (longest first),
    padded on the left; results come back in input order. Sampling draws each sentence from its own generator
    (:class:`_RowSampler`), so that its output does not depend on the batch."""

    name = "transformers"

    def __init__(self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, batch_size: int = 16):
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.model, self.tokenizer, self.batch_size = model, tokenizer, batch_size
        self.model_name = model.name_or_path or type(model).__name__
        self.eos_ids = eos_token_ids(model.generation_config, tokenizer)
        config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
        self.max_length = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)
        self._line_end: torch.Tensor | None = None

    def _line_end_tokens(self) -> torch.Tensor:
        """Which tokens of the vocabulary hold a line end (once per backend)."""
        if self._line_end is None:
            size = max(self.model.config.get_text_config().vocab_size, len(self.tokenizer))
            self._line_end = torch.zeros(size, dtype=torch.bool)
            texts = self.tokenizer.batch_decode([[i] for i in range(len(self.tokenizer))])
            self._line_end[: len(texts)] = torch.tensor([LINE_END in text for text in texts])
        return self._line_end

    @torch.no_grad()
    def generate(self, prompts: Sequence[list[int]], budgets: Sequence[int], sampling: Sampling) -> list[Generation]:
        stop = sampling.stop
        if stop not in (None, LINE_END):
            raise ValueError(f"the transformers backend stops at a line end or at the end of the turn, not at {stop!r}")
        device = self.model.device
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.eos_ids[0]
        # greedy decoding, with the generation config's defaults so that no warning names ignored flags; sampling is
        # greedy decoding of per-row perturbed scores (_RowSampler)
        decoding = dict(do_sample=False, temperature=1.0, top_p=1.0, top_k=50)
        line_end = self._line_end_tokens().to(device) if stop else None
        order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]), reverse=True)
        found: dict[int, Generation] = {}
        self.model.eval()
        with tqdm(
            total=len(prompts), desc="generate", unit="sentence", disable=get_verbosity() > 20, leave=False
        ) as progress:
            for b in range(0, len(order), self.batch_size):
                rows = order[b : b + self.batch_size]
                width = max(len(prompts[i]) for i in rows)
                input_ids = torch.full((len(rows), width), pad, dtype=torch.long)
                attention_mask = torch.zeros((len(rows), width), dtype=torch.long)
                for r, i in enumerate(rows):
                    input_ids[r, width - len(prompts[i]) :] = torch.tensor(prompts[i], dtype=torch.long)
                    attention_mask[r, width - len(prompts[i]) :] = 1
                limits = torch.tensor([budgets[i] for i in rows], device=device)
                config = GenerationConfig(
                    max_new_tokens=int(limits.max()),
                    num_beams=1,
                    repetition_penalty=1.0,
                    no_repeat_ngram_size=0,
                    min_length=0,
                    eos_token_id=self.eos_ids,
                    pad_token_id=self.eos_ids[0],
                    **decoding,
                )
                stops = StoppingCriteriaList([_RowLimits(width, limits, line_end)])
                sampler = (
                    [_RowSampler([prompts[i] for i in rows], sampling.seed, sampling.temperature, sampling.top_p)]
                    if sampling.temperature
                    else []
                )
                output = self.model.generate(
                    input_ids=input_ids.to(device),
                    attention_mask=attention_mask.to(device),
                    generation_config=config,
                    stopping_criteria=stops,
                    logits_processor=LogitsProcessorList(sampler),
                )
                for r, i in enumerate(rows):
                    found[i] = self._read(output[r, width : width + budgets[i]].tolist(), budgets[i], stop)
                progress.update(len(rows))
        return [found[i] for i in range(len(prompts))]

    def _read(self, tokens: list[int], budget: int, stop: str | None) -> Generation:
        """One row's new tokens (at most its budget) as a `Generation`: up to the first end token, or the line end."""
        ends = set(self.eos_ids)
        end = next((k for k, token in enumerate(tokens) if token in ends), len(tokens))
        text = self.tokenizer.decode(tokens[:end], skip_special_tokens=True)
        finished = end < budget
        if stop and stop in text:
            text, finished = text[: text.index(stop)], True
        return Generation(text, finished, min(end + 1, budget))
