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

_MODULES = {
    "corrector": (
        "LLMCorrector",
        "LLMRun",
        "LLM_OPTIONS",
        "BACKENDS",
        "STATUSES",
        "is_causal_lm",
        "check_causal_lm",
        "weights_dtype",
        "describe_settings",
    ),
    "backends": ("Generation", "Sampling", "TransformersBackend"),
    "vllm_backend": ("VLLMBackend",),
    "prompts": ("PromptTemplate", "DEFAULT_TEMPLATE", "load_template", "shipped_templates", "parse_answer"),
    "policy": (
        "LENGTH_POLICIES",
        "DEFAULT_LENGTH_POLICY",
        "apply_length_policy",
        "check_length_policy",
        "policy_prediction",
        "source_edits",
    ),
    "contamination": (
        "TEST_SOURCES",
        "benchmark_sources",
        "card_training_data",
        "contamination_flags",
        "describe_flag",
    ),
}
_EXPORTS = {name: module for module, names in _MODULES.items() for name in names}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
