"""The optional vLLM backend of :class:`csc_hf.llm.LLMCorrector` (GPU machines): the same prompt token ids, the same
budgets and end tokens, the same parsing and policy; only the generation runs in vLLM (continuous batching, so
``batch_size`` does not apply). vLLM is imported when this backend is asked for, never otherwise.

Kept thin on purpose: it cannot be run where vLLM is not installed (csc_hf's tests check its calls against a stand-in
module). Greedy outputs can differ from the transformers backend's in floating-point ties, as between any two
kernels; scores are comparable, bytes are not promised.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from transformers import GenerationConfig, PreTrainedTokenizerBase

from .backends import Generation, Sampling, eos_token_ids


class VLLMBackend:
    """A ``vllm.LLM`` engine for the model at ``path``; ``engine_kwargs`` go to it (``tensor_parallel_size``,
    ``gpu_memory_utilization``, ``max_model_len``, ...)."""

    name = "vllm"

    def __init__(
        self,
        path: str,
        tokenizer: PreTrainedTokenizerBase,
        *,
        trust_remote_code: bool = False,
        dtype: Any = "auto",
        seed: int = 0,
        **engine_kwargs: Any,
    ):
        try:
            import vllm
        except ImportError:
            raise ImportError(
                "backend 'vllm' needs vLLM, which is not installed (pip install vllm, on a GPU machine); "
                "the default backend 'transformers' needs nothing more"
            ) from None
        self._vllm = vllm
        self.model_name = path
        self.engine = vllm.LLM(
            model=path,
            trust_remote_code=trust_remote_code,
            dtype=str(dtype).removeprefix("torch."),
            seed=seed,
            **engine_kwargs,
        )
        try:
            generation_config = GenerationConfig.from_pretrained(path)
        except OSError:  # the model has no generation_config.json
            generation_config = None
        self.eos_ids = eos_token_ids(generation_config, tokenizer)
        self.max_length = getattr(getattr(self.engine.llm_engine, "model_config", None), "max_model_len", None)

    def generate(self, prompts: Sequence[list[int]], budgets: Sequence[int], sampling: Sampling) -> list[Generation]:
        params = [
            self._vllm.SamplingParams(
                temperature=sampling.temperature,
                top_p=sampling.top_p,
                seed=sampling.seed,
                max_tokens=budget,
                stop=[sampling.stop] if sampling.stop else None,
                stop_token_ids=self.eos_ids,
                skip_special_tokens=True,
            )
            for budget in budgets
        ]
        requests = [{"prompt_token_ids": list(prompt)} for prompt in prompts]
        outputs = self.engine.generate(requests, params, use_tqdm=False)
        return [
            Generation(
                output.outputs[0].text, output.outputs[0].finish_reason == "stop", len(output.outputs[0].token_ids)
            )
            for output in outputs
        ]
