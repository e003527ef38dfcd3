"""`LLMCorrector`: any causal language model (``AutoModelForCausalLM``, a local folder or a Hub id) as a Chinese
spelling corrector, with the call interface of :class:`csc_hf.pipeline.Corrector`.

    corrector = LLMCorrector.from_pretrained("Qwen/Qwen2.5-7B-Instruct", template="zh_few_shot")
    corrector(["我门去公园。"])
    # [{"source": "我门去公园。", "prediction": "我们去公园。",
    #   "edits": [{"position": 1, "wrong": "门", "right": "们", "probability": None}],
    #   "output": "我们去公园。", "answer": "我们去公园。", "status": "ok", "length_changed": False}]
    run = corrector.run(texts)                     # the results, the time taken and the settings
    run.predictions, run.summary()                 # sentences/s, length changes, failures by kind

How a sentence is corrected:
- The prompt is a template (:mod:`csc_hf.llm.prompts`: shipped and versioned, or a user's file) put through the
  tokenizer's chat template when it has one (a template without a system role gets the system message at the start
  of the first user turn), else written as a plain prompt whose answer ends at the end of its line.
- Decoding is greedy unless ``temperature`` > 0 (then sampled with ``top_p``, from ``seed``); no repetition penalty
  or other model default changes it (the model's own saved sampling settings are overridden). Each sentence may
  generate at most ``max_new_tokens_ratio`` × its own tokens + ``max_new_tokens_extra`` new tokens.
- Sentences run in batches of ``batch_size`` prompts of similar length, padded on the left, each with its own budget,
  so that a sentence's output does not depend on its batch (greedy decoding; up to floating-point ties).
- The answer is read out of the generation (:func:`csc_hf.llm.prompts.parse_answer`) and its length handled by the
  length policy (:mod:`csc_hf.llm.policy`).

Every sentence gets a ``status``: ``ok``; ``empty`` (no answer in the generation), ``unfinished`` (the budget ran
out before the model stopped) or ``rejected`` (``strict``: an answer of another length). The three failures keep the
source as the prediction and are counted in :meth:`LLMRun.summary`, never raised.
"""

from __future__ import annotations

import math
import os
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoTokenizer,
    PretrainedConfig,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)
from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, MODEL_FOR_MASKED_LM_MAPPING_NAMES

from csc_hf.files import check_texts
from csc_hf.logging import get_logger
from csc_hf.model_folder import check_model_folder, check_number, check_weights, is_local
from csc_hf.precision import check_precision

from .backends import LINE_END, Backend, Generation, Sampling, TransformersBackend
from .contamination import card_training_data, check_training_data
from .policy import DEFAULT_LENGTH_POLICY, check_length_policy, policy_prediction, source_edits
from .prompts import DEFAULT_TEMPLATE, PromptTemplate, load_template, parse_answer

logger = get_logger(__name__)
BACKENDS = ("transformers", "vllm")
STATUSES = ("ok", "empty", "unfinished", "rejected")
COPY_OPTIONS = (
    "template",
    "length_policy",
    "temperature",
    "top_p",
    "seed",
    "max_new_tokens_ratio",
    "max_new_tokens_extra",
    "use_chat_template",
    "chat_template_kwargs",
    "training_data",
)
"""The options that a copy may change (:meth:`LLMCorrector.with_options`)."""
LLM_OPTIONS = (*COPY_OPTIONS, "backend", "dtype", "model_kwargs")
"""The options only an LLM corrector takes (`Corrector.from_pretrained` sends a call with one of them here)."""


def is_causal_lm(config: PretrainedConfig) -> bool:
    """Whether a checkpoint's config describes a causal language model: a decoder-only model whose architecture (or,
    when the config names none, whose model type) is one of transformers' causal LMs and not a masked LM, or whose own
    code registers an ``AutoModelForCausalLM``."""
    if getattr(config, "is_encoder_decoder", False):
        return False
    if "AutoModelForCausalLM" in (getattr(config, "auto_map", None) or {}):
        return True
    causal = set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values())
    if config.architectures:
        return any(name in causal for name in config.architectures)
    model_type = config.model_type
    return model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and model_type not in MODEL_FOR_MASKED_LM_MAPPING_NAMES


def check_causal_lm(config: PretrainedConfig, where: str) -> None:
    """A ValueError naming ``where`` when ``config`` is not a causal LM's (:func:`is_causal_lm`)."""
    if not is_causal_lm(config):
        kind = ", ".join(config.architectures or ()) or config.model_type
        raise ValueError(
            f"{where} is a {kind} model, not a causal language model (AutoModelForCausalLM); a masked LM "
            "or a seq2seq model corrects with csc_hf.pipeline.Corrector"
        )


def weights_dtype(precision: str) -> str | torch.dtype:
    """The dtype an LLM's weights load in for a csc-bench ``--precision``: ``auto`` the checkpoint's own (``"auto"``:
    bf16 for most instruction models), ``bf16`` or ``fp32``. (csc_hf's own models keep fp32 weights and compute in
    the precision; an LLM's weights are too large for that.)"""
    return {"auto": "auto", "bf16": torch.bfloat16, "fp32": torch.float32}[check_precision(precision)]


def describe_settings(settings: Mapping[str, Any]) -> str:
    """An LLM corrector's :attr:`LLMCorrector.settings` in a line, for a table's title: ``template zh_few_shot@1
    203ad055, chat template, greedy, seed 0, length policy edits, transformers``."""
    prompt, generation = settings["prompt"], settings["generation"]
    label = prompt["name"] if prompt["version"] is None else f"{prompt['name']}@{prompt['version']}"
    decoding = (
        f"temperature {generation['temperature']:g}, top-p {generation['top_p']:g}"
        if generation["temperature"]
        else "greedy"
    )
    return (
        f"template {label} {prompt['sha256'][:8]}, {'chat template' if prompt['chat_template'] else 'plain prompt'}, "
        f"{decoding}, seed {generation['seed']}, length policy {settings['length_policy']}, {settings['backend']}"
    )


@dataclass
class LLMRun:
    """One call of an `LLMCorrector`: the result of each sentence, the seconds the generation took (prompts and
    parsing excluded), the new tokens generated and the corrector's settings."""

    results: list[dict[str, Any]]
    seconds: float
    new_tokens: int
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def predictions(self) -> list[str]:
        return [result["prediction"] for result in self.results]

    @property
    def answers(self) -> list[str]:
        """Each sentence's answer as the model wrote it, before the length policy (the source where it gave none:
        an empty or unfinished generation): what a predictions file holds, so that scoring applies any policy
        (:func:`csc_hf.llm.policy.apply_length_policy` of these gives `predictions` under the run's policy)."""
        return [r["answer"] if r["status"] in ("ok", "rejected") else r["source"] for r in self.results]

    def summary(self) -> dict[str, Any]:
        """The numbers every report states with the scores: sentences, seconds and sentences (and tokens) per second;
        the answers whose length differs from the source (count and share); the failures by kind; the policy."""
        n = len(self.results)
        statuses = Counter(result["status"] for result in self.results)
        changed = sum(result["length_changed"] for result in self.results)
        return {
            "sentences": n,
            "seconds": self.seconds,
            "sentences_per_s": n / self.seconds if self.seconds > 0 else None,
            "new_tokens": self.new_tokens,
            "new_tokens_per_s": self.new_tokens / self.seconds if self.seconds > 0 else None,
            "length_changed": changed,
            "length_changed_share": changed / n if n else 0.0,
            "failed": {status: statuses[status] for status in STATUSES[1:]},
            "length_policy": self.settings.get("length_policy"),
        }


class LLMCorrector:
    """Corrects raw strings with a causal language model (see the module docstring).

    Args:
        model: a causal LM (``model.can_generate()``, not an encoder-decoder), or a backend (``VLLMBackend``).
        tokenizer: its tokenizer.
        template: a prompt template: a shipped one (``zh_zero_shot``, ``zh_few_shot``, ``NAME@VERSION``), a file
            (``.yaml``, ``.txt``) or a `PromptTemplate`.
        length_policy: ``strict``, ``substitutions`` or ``edits`` (default) (:mod:`csc_hf.llm.policy`).
        batch_size: prompts per generation step (the transformers backend).
        temperature: 0 (default): greedy; above 0: sampling at that temperature, with ``top_p``, from ``seed``.
        top_p, seed: see ``temperature``.
        max_new_tokens_ratio, max_new_tokens_extra: each sentence's budget of new tokens is ratio × its own tokens
            (without the prompt) + extra; a generation that reaches it without stopping is ``unfinished``.
        use_chat_template: None (default): the tokenizer's chat template when it has one, else a plain prompt; True
            requires one; False always writes a plain prompt.
        chat_template_kwargs: more variables for the chat template (``{"enable_thinking": False}`` for Qwen3).
        training_data: what the model was trained on, ``NAME[:SPLIT]`` each (a model card's ``datasets`` and the
            user's word), for the contamination check (:mod:`csc_hf.llm.contamination`); recorded in `settings`.
        device: where to move a transformers model (default: where it is).
    """

    def __init__(
        self,
        model: PreTrainedModel | Backend,
        tokenizer: PreTrainedTokenizerBase,
        *,
        template: str | os.PathLike | PromptTemplate = DEFAULT_TEMPLATE,
        length_policy: str = DEFAULT_LENGTH_POLICY,
        batch_size: int = 16,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int = 0,
        max_new_tokens_ratio: float = 2.0,
        max_new_tokens_extra: int = 16,
        use_chat_template: bool | None = None,
        chat_template_kwargs: Mapping[str, Any] | None = None,
        training_data: Iterable[str | tuple[str, str]] = (),
        device: str | torch.device | None = None,
    ):
        self.template = load_template(template)
        self.length_policy = check_length_policy(length_policy)
        self.temperature = check_number("temperature", temperature)
        self.top_p = check_number("top_p", top_p)
        self.max_new_tokens_ratio = check_number("max_new_tokens_ratio", max_new_tokens_ratio)
        if self.temperature < 0 or not 0 < self.top_p <= 1 or self.max_new_tokens_ratio <= 0:
            raise ValueError(
                f"need temperature >= 0, 0 < top_p <= 1 and max_new_tokens_ratio > 0, got {temperature}, "
                f"{top_p} and {max_new_tokens_ratio}"
            )
        for name, value in (("seed", seed), ("max_new_tokens_extra", max_new_tokens_extra)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an integer of at least 0, got {value!r}")
        self.seed, self.max_new_tokens_extra = seed, max_new_tokens_extra
        self.training_data = check_training_data(training_data)
        if isinstance(model, PreTrainedModel):
            if model.config.is_encoder_decoder or not model.can_generate():
                raise ValueError(
                    f"{type(model).__name__} is not a causal language model that generates "
                    "(AutoModelForCausalLM); a masked LM or a seq2seq model corrects with "
                    "csc_hf.pipeline.Corrector"
                )
            self.backend: Backend = TransformersBackend(
                model if device is None else model.to(device), tokenizer, batch_size
            )
        elif all(hasattr(model, name) for name in ("generate", "eos_ids", "max_length", "name", "model_name")):
            self.backend = model
        else:
            raise TypeError(
                f"model must be a causal language model (PreTrainedModel) or a backend (VLLMBackend), got "
                f"{type(model).__name__}"
            )
        if not self.backend.eos_ids:
            raise ValueError(
                f"{self.backend.model_name} has no end-of-sequence token (neither its generation config "
                "nor its tokenizer names one): its generations could never stop"
            )
        self.tokenizer = tokenizer
        has_chat = bool(getattr(tokenizer, "chat_template", None))
        if use_chat_template and not has_chat:
            raise ValueError(
                f"use_chat_template=True, but the tokenizer of {self.backend.model_name} has no chat template"
            )
        self.use_chat_template = has_chat if use_chat_template is None else bool(use_chat_template)
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self._system_role: bool | None = None  # whether the chat template takes a system message (found on first use)

    @classmethod
    def from_pretrained(
        cls,
        path: str | os.PathLike,
        *,
        trust_remote_code: bool = False,
        backend: str = "transformers",
        dtype: str | torch.dtype = "auto",
        device: str | torch.device | None = None,
        model_kwargs: Mapping[str, Any] | None = None,
        training_data: Iterable[str] = (),
        **kwargs: Any,
    ) -> LLMCorrector:
        """An LLM corrector for the causal LM saved at ``path`` (a local folder, :func:`csc_hf.model_folder.is_local`,
        or a Hub id). The template, the length policy and the training data are checked, and the config read, before any
        weights load; a config that is not a causal LM's is a ValueError. ``backend``: ``transformers`` (the model on
        ``device``, default the GPU when there is one, in ``dtype``; ``model_kwargs`` go to ``from_pretrained``, e.g.
        ``device_map="auto"`` or a quantization config) or ``vllm`` (``model_kwargs`` go to ``vllm.LLM``). The model
        card's ``datasets`` join ``training_data``. ``kwargs`` go to `LLMCorrector`."""
        path = str(path)
        load_template(kwargs.get("template", DEFAULT_TEMPLATE))
        check_length_policy(kwargs.get("length_policy", DEFAULT_LENGTH_POLICY))
        declared = check_training_data(training_data)
        if backend not in BACKENDS:
            raise ValueError(f"backend {backend!r}: choose {', '.join(BACKENDS)}")
        if is_local(path):
            path = os.path.expanduser(path)
            # LLM tokenizers come in several files (tokenizer.model, ...); the weights are checked once the config
            # says the model is a causal LM
            check_model_folder(path, tokenizer=False, trust_remote_code=trust_remote_code, weights=False)
        config = AutoConfig.from_pretrained(path, trust_remote_code=trust_remote_code)
        check_causal_lm(config, path)
        if is_local(path):
            check_weights(path)
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
        model_kwargs = dict(model_kwargs or {})
        if backend == "vllm":
            from .vllm_backend import VLLMBackend

            model: PreTrainedModel | Backend = VLLMBackend(
                path,
                tokenizer,
                trust_remote_code=trust_remote_code,
                dtype=dtype,
                seed=kwargs.get("seed", 0),
                **model_kwargs,
            )
        else:
            model = AutoModelForCausalLM.from_pretrained(
                path, config=config, dtype=dtype, trust_remote_code=trust_remote_code, **model_kwargs
            )
            if device is None and "device_map" not in model_kwargs:
                device = "cuda" if torch.cuda.is_available() else None
        return cls(model, tokenizer, training_data=[*card_training_data(path), *declared], device=device, **kwargs)

    # ---- prompts -----------------------------------------------------------------------------------------------

    def _chat(self, text: str) -> str:
        """The chat template applied to the template's conversation for ``text``, ready for the answer."""

        def render(system: bool) -> str:
            return self.tokenizer.apply_chat_template(
                self.template.messages(text, system=system),
                tokenize=False,
                add_generation_prompt=True,
                **self.chat_template_kwargs,
            )

        if self._system_role is None and self.template.system:
            try:
                rendered, self._system_role = render(True), True
            except Exception as err:  # a chat template that refuses a system turn (jinja's raise_exception)
                logger.info("the chat template refused the system message (%s); it opens the first user turn", err)
                self._system_role = False
            else:
                return rendered
        try:
            return render(self._system_role is not False)
        except Exception as err:
            raise ValueError(
                f"the chat template of {self.backend.model_name} cannot render the prompt of template "
                f"{self.template.label}: {err}"
            ) from err

    def prompts(self, texts: Sequence[str]) -> list[list[int]]:
        """The prompt token ids of each text: the chat template's text (which writes its own special tokens), or the
        plain prompt with the tokenizer's special tokens (a BOS)."""
        if self.use_chat_template:
            return self.tokenizer([self._chat(text) for text in texts], add_special_tokens=False)["input_ids"]
        return self.tokenizer([self.template.plain_prompt(text) for text in texts])["input_ids"]

    def budgets(self, texts: Sequence[str]) -> list[int]:
        """Each text's budget of new tokens: ``max_new_tokens_ratio`` × its tokens + ``max_new_tokens_extra``."""
        counts = self.tokenizer(list(texts), add_special_tokens=False)["input_ids"] if texts else []
        return [math.ceil(self.max_new_tokens_ratio * len(ids)) + self.max_new_tokens_extra for ids in counts]

    # ---- correcting --------------------------------------------------------------------------------------------

    @property
    def settings(self) -> dict[str, Any]:
        """Everything a result records to say how its predictions were made."""
        return {
            "model": self.backend.model_name,
            "backend": self.backend.name,
            "prompt": {
                **self.template.record(),
                "chat_template": self.use_chat_template,
                **({"chat_template_kwargs": self.chat_template_kwargs} if self.chat_template_kwargs else {}),
            },
            "length_policy": self.length_policy,
            "generation": {
                "temperature": self.temperature,
                "top_p": self.top_p,
                "seed": self.seed,
                "max_new_tokens": {"ratio": self.max_new_tokens_ratio, "extra": self.max_new_tokens_extra},
                "repetition_penalty": 1.0,
            },
            "training_data": [{"name": name, "from": origin} for name, origin in self.training_data],
        }

    def check_lengths(self, texts: Sequence[str], where: str = "sentence") -> None:
        """That each text's prompt and answer budget fit the model's positions, else a ValueError that names the first
        that does not (``WHERE N``, N counted from 1: ``sentence 3``, ``test.tsv, line 3``): what :meth:`run` checks,
        for a caller with several runs to make (the splits of an evaluation) that checks them all before the first
        generation."""
        asked = [text for text in texts if text.strip()]
        self._check_lengths(self.prompts(asked) if asked else [], self.budgets(asked), where, texts)

    def _check_lengths(
        self, prompts: Sequence[list[int]], budgets: Sequence[int], where: str, texts: Sequence[str]
    ) -> None:
        if not (limit := self.backend.max_length):
            return
        numbers = [number for number, text in enumerate(texts, 1) if text.strip()]  # the prompted texts' numbers
        for number, prompt, budget in zip(numbers, prompts, budgets):
            if len(prompt) + budget > limit:
                raise ValueError(
                    f"{where} {number}: its prompt ({len(prompt)} tokens) and its answer budget ({budget}) "
                    f"exceed the {limit} positions of {self.backend.model_name}; shorten the text or the template"
                )

    def run(self, texts: str | Iterable[str], where: str = "sentence") -> LLMRun:
        """Correct ``texts``; every prompt is built and checked against the model's length before any generation
        (an error names the text as :meth:`check_lengths` does). A text of white space only is its own answer: no
        model is asked to correct nothing."""
        batch = [texts] if isinstance(texts, str) else check_texts(texts)
        asked = [text for text in batch if text.strip()]
        prompts, budgets = self.prompts(asked) if asked else [], self.budgets(asked)
        self._check_lengths(prompts, budgets, where, batch)
        started = time.perf_counter()
        stop = None if self.use_chat_template else LINE_END
        generations = self.backend.generate(prompts, budgets, Sampling(self.temperature, self.top_p, self.seed, stop))
        seconds = time.perf_counter() - started
        if len(generations) != len(asked):
            raise RuntimeError(
                f"backend {self.backend.name} returned {len(generations)} generations for {len(asked)} prompts"
            )
        opened = bool(asked) and self.use_chat_template and self._chat(asked[0]).rstrip().endswith("<think>")
        answered = iter(generations)
        results = [self._result(text, next(answered), opened) if text.strip() else self._blank(text) for text in batch]
        return LLMRun(results, seconds, sum(g.new_tokens for g in generations), self.settings)

    @staticmethod
    def _blank(source: str) -> dict[str, Any]:
        """The result of a text of white space only, which is not generated for."""
        return {
            "source": source,
            "prediction": source,
            "edits": [],
            "output": "",
            "answer": source,
            "status": "ok",
            "length_changed": False,
        }

    def _result(self, source: str, generation: Generation, opened: bool = False) -> dict[str, Any]:
        """``opened``: the chat template ends its prompt inside a ``<think>`` (QwQ, DeepSeek-R1 distills, Qwen3.5):
        the generation's reasoning has no opening tag of its own, and is read as if it had one."""
        text = "<think>" + generation.text if opened else generation.text
        answer = parse_answer(text, source, self.template.answer_prefix) if generation.finished else None
        if answer is None:
            status = "unfinished"
        elif not answer:  # (a source of white space only is never generated for: `_blank`)
            status = "empty"
        elif len(answer) != len(source) and self.length_policy == "strict":
            status = "rejected"
        else:
            status = "ok"
        prediction = policy_prediction(source, answer, self.length_policy) if status == "ok" else source
        return {
            "source": source,
            "prediction": prediction,
            "edits": [{**edit, "probability": None} for edit in source_edits(source, prediction)],
            "output": generation.text,
            "answer": answer,
            "status": status,
            "length_changed": bool(answer) and len(answer) != len(source),
        }

    def __call__(self, texts: str | Iterable[str]) -> dict[str, Any] | list[dict[str, Any]]:
        """The result dict of a str (a list of them for several texts): the `Corrector`'s ``source``, ``prediction``
        and ``edits`` (at source positions; ``probability`` None), plus the raw ``output``, the parsed ``answer``
        (None when unfinished), the ``status`` and whether the answer's length differs from the source's."""
        results = self.run(texts).results
        return results[0] if isinstance(texts, str) else results

    def correct(self, texts: str | Iterable[str]) -> str | list[str]:
        """The predictions only: a str for a str, else a list."""
        predictions = self.run(texts).predictions
        return predictions[0] if isinstance(texts, str) else predictions

    def with_options(self, **options: Any) -> LLMCorrector:
        """A copy with other ``template``, ``length_policy``, sampling or budget options; shares the model."""
        current = {name: getattr(self, name) for name in COPY_OPTIONS}
        if unknown := set(options) - set(current):
            raise TypeError(f"unknown options {sorted(unknown)}; choose from {sorted(current)}")
        return type(self)(self.backend, self.tokenizer, **{**current, **options})
