"""Large language models as Chinese spelling correctors, run and scored under one declared protocol.

- :mod:`~csc_hf.llm.prompts`: versioned prompt templates (shipped in ``templates/``, or a user's file) and the parser
  that reads the corrected sentence out of a generation.
- :mod:`~csc_hf.llm.policy`: the length policy (``strict``, ``substitutions``, ``edits``) for answers whose length
  differs from the source.
- :mod:`~csc_hf.llm.corrector`: :class:`LLMCorrector`, any causal LM with the call interface of
  :class:`csc_hf.pipeline.Corrector`, and :class:`LLMRun` (results, throughput, failures).
- :mod:`~csc_hf.llm.backends`: what a backend returns, and the transformers backend (the default);
  :mod:`~csc_hf.llm.vllm_backend`: the optional vLLM backend.
- :mod:`~csc_hf.llm.contamination`: whether a model's training data includes a test set's source.

The corrector (torch, transformers) is imported on first use, so the policy and the templates stay light.
"""

from importlib import import_module

_EXPORTS = {
    "LLMCorrector": "corrector",
    "LLMRun": "corrector",
    "Generation": "backends",
    "TransformersBackend": "backends",
    "LLM_OPTIONS": "corrector",
    "BACKENDS": "corrector",
    "STATUSES": "corrector",
    "is_causal_lm": "corrector",
    "check_causal_lm": "corrector",
    "weights_dtype": "corrector",
    "describe_settings": "corrector",
    "VLLMBackend": "vllm_backend",
    "PromptTemplate": "prompts",
    "DEFAULT_TEMPLATE": "prompts",
    "load_template": "prompts",
    "shipped_templates": "prompts",
    "parse_answer": "prompts",
    "LENGTH_POLICIES": "policy",
    "DEFAULT_LENGTH_POLICY": "policy",
    "apply_length_policy": "policy",
    "check_length_policy": "policy",
    "policy_prediction": "policy",
    "source_edits": "policy",
    "TEST_SOURCES": "contamination",
    "benchmark_sources": "contamination",
    "card_training_data": "contamination",
    "contamination_flags": "contamination",
    "describe_flag": "contamination",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
