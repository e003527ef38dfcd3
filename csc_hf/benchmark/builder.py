"""The `datasets` builder of the controlled CSC benchmark, and :func:`load_dataset` that routes ``"csc_bench"`` to it.

datasets >= 4 no longer runs loading scripts, so the builder is used as a class: ``CSCBench(config_name=...)`` or
``csc_hf.load_dataset("csc_bench", "unseen_k", seed=1)``; ``csc-bench export`` writes the Hub layout (parquet + card)
that plain ``datasets.load_dataset(folder, config)`` reads.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import datasets

from .cache import CACHE_NAME, code_hash
from .configs import CONFIGS, check_configs, splits_of
from .plan import BenchParams, input_fingerprint, params_of, plan_for
from .tables import FEATURES, examples_table

DATASET_NAME = "csc_bench"
BATCH_ROWS = 50_000  # rows per Arrow table; bounds memory, not the result
_CITATION = """\
@article{csc_evaluation_study,
  title={A Comprehensive Evaluation and Analysis Study for Chinese Spelling Check},
}
"""


@dataclass
class CSCBenchConfig(datasets.BuilderConfig, BenchParams):
    """One benchmark config (its ``name`` is a key of ``CONFIGS``) and every parameter of the generation."""

    def __post_init__(self):
        super().__post_init__()
        check_configs([self.name])
        self.validate()
        self.probs = tuple(float(p) for p in self.probs)
        self.train_edit_shares = tuple(float(p) for p in self.train_edit_shares)


class CSCBench(datasets.ArrowBasedBuilder):
    """Controlled CSC test sets generated from a corpus and a confusion set S = S_p ∪ S_g (see ``CONFIGS``)."""

    BUILDER_CONFIG_CLASS = CSCBenchConfig
    BUILDER_CONFIGS = [CSCBenchConfig(name=name, description=spec.description) for name, spec in CONFIGS.items()]
    DEFAULT_CONFIG_NAME = "test"
    DEFAULT_WRITER_BATCH_SIZE = BATCH_ROWS

    def __init__(self, *args, **kwargs):
        # The cache key: the parameters (datasets hashes the config) + the code + the content of the input files.
        params = BenchParams(**{f.name: kwargs[f.name] for f in fields(BenchParams) if f.name in kwargs})
        params.validate()
        for name in ("probs", "train_edit_shares"):  # datasets sets the kwargs on a copy of a predefined config:
            if name in kwargs:  # __post_init__ does not run
                kwargs[name] = tuple(float(p) for p in kwargs[name])
        self.input_fingerprint = input_fingerprint(params)
        kwargs.setdefault("dataset_name", CACHE_NAME)
        kwargs.setdefault("hash", code_hash() + self.input_fingerprint)
        super().__init__(*args, **kwargs)

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(description=self.config.description, features=FEATURES, citation=_CITATION)

    def _split_generators(self, dl_manager):
        plan = plan_for(params_of(self.config), self.input_fingerprint)
        generators = []
        for spec in splits_of(self.config.name, self.config.probs):
            n = len(plan.examples(spec, self.config.augmentation, self.config.train_edit_shares).target)
            batches = [(lo, min(lo + BATCH_ROWS, n)) for lo in range(0, n, BATCH_ROWS)]  # shards for num_proc
            generators.append(datasets.SplitGenerator(name=spec.split, gen_kwargs={"spec": spec, "batches": batches}))
        return generators

    def _generate_tables(self, spec, batches):
        plan = plan_for(params_of(self.config), self.input_fingerprint)
        examples = plan.examples(spec, self.config.augmentation, self.config.train_edit_shares)
        for lo, hi in batches:
            yield lo, examples_table(examples, lo, hi)


def columns(data, *names: str) -> tuple[list, ...]:
    """Columns of a loaded split (a `datasets.Dataset`, or a mapping of lists) as lists, each read at once: iterating
    a `datasets` column decodes it row by row, dozens of times slower, and a split's sentences are read many times."""
    return tuple(data[name][:] for name in names)


def load_dataset(path: str, name: str | None = None, split=None, **kwargs):
    """`datasets.load_dataset` that also knows ``"csc_bench"``: its configs take every field of :class:`BenchParams`.

    Any other ``path`` goes to `datasets.load_dataset` unchanged.
    """
    if path != DATASET_NAME:
        return datasets.load_dataset(path, name, split=split, **kwargs)
    loader_keys = {"cache_dir", "download_mode", "verification_mode", "keep_in_memory", "num_proc", "storage_options"}
    loader = {k: kwargs.pop(k) for k in list(kwargs) if k in loader_keys}
    if kwargs.pop("streaming", False):
        raise ValueError("csc_bench is generated locally; load it without streaming")
    builder = CSCBench(
        config_name=name or CSCBench.DEFAULT_CONFIG_NAME, cache_dir=loader.pop("cache_dir", None), **kwargs
    )
    keep_in_memory = loader.pop("keep_in_memory", None)
    builder.download_and_prepare(**loader)
    return builder.as_dataset(split=split, in_memory=bool(keep_in_memory))
