"""csc_hf: Chinese Spelling Check evaluation and analysis on the Hugging Face stack.

The public API is imported lazily, so ``import csc_hf`` stays light (the metric core never loads torch).
"""

from importlib import import_module

__version__ = "0.1.0"

_EXPORTS = {
    "load_dataset": "csc_hf.benchmark.builder",
    "CSCBench": "csc_hf.benchmark.builder",
    "BenchParams": "csc_hf.benchmark.plan",
    "CONFIGS": "csc_hf.benchmark.configs",
    "ConfusionSet": "csc_hf.confusion",
    "build_confusion_set": "csc_hf.confusion",
    "divide": "csc_hf.confusion",
    "score": "csc_hf.scoring",
    "Corrector": "csc_hf.pipeline",
    "LLMCorrector": "csc_hf.llm.corrector",
    "compare": "csc_hf.scoring",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'csc_hf' has no attribute {name!r}")
