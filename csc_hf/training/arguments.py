"""What a training config holds: ``ModelArguments`` (what to train), ``DataArguments`` (which data, how it is fed) and
transformers' ``TrainingArguments``, read together by ``HfArgumentParser`` (see :mod:`csc_hf.training.config`)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path

from transformers import TrainingArguments

from ..benchmark.plan import BenchParams
from ..corpus import check_not_sentence_pairs
from ..data import DATA_KINDS
from ..fields import Range, field_types, type_name
from ..modeling import VARIANTS, variant_sources
from ..precision import check_precision

TASKS = ("correction", "mlm", "sides")
ATTN_IMPLEMENTATIONS = (None, "sdpa", "eager")


@dataclass
class ModelArguments:
    """What to train."""

    task: str = field(
        default="correction",
        metadata={
            "help": "correction (a VARIANTS model), mlm (pretraining) or sides (the side encoders of the variant's "
            "sources, or of model_overrides' sources, pretrained over the masked LM init_from: "
            "csc_hf.modeling.SidePretrainingModel)"
        },
    )
    variant: str = field(default="bert", metadata={"help": f"one of {', '.join(VARIANTS)}"})
    model_overrides: dict = field(default_factory=dict, metadata={"help": "CSCConfig / BartConfig / BertConfig fields"})
    init_from: str | None = field(default=None, metadata={"help": "a BERT (or BART) checkpoint folder or Hub name"})
    init_sides_from: str | None = field(
        default=None,
        metadata={"help": "correction: a folder of the sides task whose side encoders the variant starts from"},
    )
    tokenizer_path: str | None = field(
        default=None,
        metadata={
            "help": "a saved CSCTokenizer, or a BERT checkpoint's vocab.txt folder (default: init_from's, else built "
            "from the training text)"
        },
    )
    vocab_min_freq: int = field(
        default=1,
        metadata={
            "help": "characters seen fewer times in the training targets stay "
            "out of a new vocabulary (the confusion set's and the pair files' characters are in)"
        },
    )
    fonts: list[str] | None = field(default=None, metadata={"help": "font files for glyphs (file.ttc#2 for a face)"})
    precision: str = field(
        default="auto",
        metadata={
            "help": "auto: bf16 autocast when training on a CPU with bf16 in "
            "hardware (AVX512-BF16 or AMX), else as the bf16/fp16 keys say (fp32 by default); bf16 or "
            "fp32 forces one (the weights and the saved model stay fp32 either way)"
        },
    )

    attn_implementation: str | None = field(
        default=None,
        metadata={
            "help": "the attention kernel while training: sdpa or eager (null: the model's default, sdpa); not saved "
            "with the model, which evaluates with its default"
        },
    )
    fast_dropout: bool = field(
        default=False,
        metadata={
            "help": "dropout masks from 16 bits per element of splitmix64 words that every thread computes, instead of "
            "bernoulli_ (csc_hf.modeling.FastDropout; with attn_implementation eager, the attention probabilities' "
            "masks too): the same distribution, other random draws, faster on the CPU"
        },
    )

    save_every_seconds: float = field(
        default=300.0,
        metadata={
            "help": "a checkpoint at least every this many seconds of training, on top of save_steps (a restart loses "
            "minutes, not a stage, on a slow CPU); 0: by save_steps alone; save_strategy: no saves none"
        },
    )

    def __post_init__(self):
        if self.save_every_seconds < 0:
            raise ValueError(f"save_every_seconds={self.save_every_seconds} must be 0 (off) or positive")
        if self.task not in TASKS:
            raise ValueError(f"task={self.task!r}: choose one of {TASKS}")
        check_precision(self.precision)
        if self.attn_implementation not in ATTN_IMPLEMENTATIONS:
            raise ValueError(f"attn_implementation={self.attn_implementation!r}: choose one of {ATTN_IMPLEMENTATIONS}")
        if self.task != "mlm" and self.variant not in VARIANTS:
            raise ValueError(f"variant={self.variant!r}: choose one of {', '.join(VARIANTS)}")
        if self.task == "sides" and not variant_sources(self.variant, **self.model_overrides):
            raise ValueError(
                f"task=sides: variant={self.variant!r} has no side sources; name one that has, or give "
                "model_overrides: {sources: [...]}"
            )
        if self.init_sides_from and self.task != "correction":
            raise ValueError(f"init_sides_from={self.init_sides_from} is for task=correction, not task={self.task}")


@dataclass
class DataArguments:
    """Which data, and how it is fed."""

    bench_params: dict = field(default_factory=dict, metadata={"help": "csc_bench parameters (BenchParams fields)"})
    use_benchmark: bool = field(
        default=True,
        metadata={
            "help": "train (and validate) on the generated benchmark's "
            "train config; false: on train_files (and validation_files) alone"
        },
    )
    train_files: list[str] = field(
        default_factory=list,
        metadata={
            "help": "training pairs, added to the benchmark's "
            f"(or instead of it: use_benchmark: false): each {DATA_KINDS}; of a folder or dataset "
            "with a train split, that split"
        },
    )
    validation_files: list[str] = field(
        default_factory=list,
        metadata={
            "help": "validation pairs, added to the "
            f"benchmark's validation split (or instead of it): each {DATA_KINDS}; of a folder "
            "or dataset with a validation split, that split"
        },
    )
    max_length: int = field(default=128, metadata={"help": "longest input in characters (longer ones are cut)"})
    max_train_samples: int | None = field(
        default=None, metadata={"help": "use the first N training pairs (train_files' in order, then the benchmark's)"}
    )
    max_eval_samples: int | None = field(
        default=None,
        metadata={"help": "use the first N validation pairs (validation_files' in order, then the benchmark's)"},
    )
    mask_rate: float = field(default=0.0, metadata={"help": "masked fine-tuning: share of correct characters masked"})
    mlm_probability: float = field(default=0.15, metadata={"help": "masking rate of the mlm and sides tasks"})
    mask_replace_prob: float = field(
        default=0.8, metadata={"help": "mlm and sides tasks: share of the chosen tokens replaced by [MASK] (BERT: 0.8)"}
    )
    random_replace_prob: float = field(
        default=0.1,
        metadata={
            "help": "mlm and sides tasks: share of the chosen tokens replaced "
            "by a random token (BERT: 0.1); the rest keep their token"
        },
    )
    pretrain_corpus: str | None = field(
        default=None,
        metadata={
            "help": "the training text of the mlm and sides tasks: this corpus "
            "(a name of csc_hf.corpus.CORPORA such as pretrain_mix, a text file or folder, "
            "datasets:PATH) cleaned as bench_params clean the benchmark's, less every "
            "sentence that overlaps a validation or test sentence of the benchmark "
            "(csc_hf.corpus.overlaps); null: the benchmark's training targets"
        },
    )

    def __post_init__(self):
        if not self.use_benchmark and not self.train_files:
            raise ValueError("use_benchmark=false needs train_files: the training pairs")
        if not self.use_benchmark and self.bench_params:
            raise ValueError(
                f"bench_params={self.bench_params}: the benchmark is not used (use_benchmark=false); "
                "drop bench_params or set use_benchmark: true"
            )
        BenchParams.of(self.bench_params)
        for name in ("mask_rate", "mlm_probability"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"{name}={getattr(self, name)} must be in [0, 1)")
        shares = {"mask_replace_prob": self.mask_replace_prob, "random_replace_prob": self.random_replace_prob}
        if not all(0.0 <= share <= 1.0 for share in shares.values()) or sum(shares.values()) > 1.0:
            raise ValueError(
                f"mask_replace_prob={self.mask_replace_prob}, random_replace_prob="
                f"{self.random_replace_prob}: each must be in [0, 1] and their sum at most 1"
            )
        corpus = BenchParams(**self.bench_params).corpus
        if self.use_benchmark and Path(corpus).is_file():
            check_not_sentence_pairs(corpus)  # a pair file given as the corpus: refused with a pointer to train_files


ARGUMENTS = (ModelArguments, DataArguments, TrainingArguments)

AT_LEAST_1, POSITIVE, NOT_NEGATIVE, SHARE = Range(1), Range(0, low_open=True), Range(0), Range(0, 1, high_open=True)
RANGES: dict[str, Range] = {
    # ModelArguments and DataArguments
    "vocab_min_freq": AT_LEAST_1,
    "max_length": Range(3),  # [CLS], a character, [SEP]
    "max_train_samples": Range(1, also=(None,)),
    "max_eval_samples": Range(1, also=(None,)),
    # TrainingArguments (transformers checks none of these before training)
    "per_device_train_batch_size": AT_LEAST_1,
    "per_device_eval_batch_size": AT_LEAST_1,
    "gradient_accumulation_steps": AT_LEAST_1,
    "eval_accumulation_steps": Range(1, also=(None,)),
    "learning_rate": NOT_NEGATIVE,  # 0: the weights stay (a check of what training keeps)
    "num_train_epochs": POSITIVE,
    "max_steps": Range(1, also=(-1,)),  # -1: num_train_epochs decides
    "warmup_steps": NOT_NEGATIVE,
    "weight_decay": NOT_NEGATIVE,
    "max_grad_norm": NOT_NEGATIVE,
    "adam_beta1": SHARE,
    "adam_beta2": SHARE,
    "adam_epsilon": POSITIVE,
    "label_smoothing_factor": SHARE,
    "seed": NOT_NEGATIVE,
    "data_seed": Range(0, also=(None,)),
    "save_steps": POSITIVE,
    "eval_steps": Range(0, low_open=True, also=(None,)),
    "logging_steps": POSITIVE,
    "save_total_limit": Range(1, also=(None,)),
    "dataloader_num_workers": NOT_NEGATIVE,
    "eval_delay": NOT_NEGATIVE,
    "neftune_noise_alpha": Range(0, low_open=True, also=(None,)),
    "ddp_timeout": POSITIVE,
    "ddp_bucket_cap_mb": Range(1, also=(None,)),
}
"""The values each number of a training config may take; every value is checked before any work."""


def keys_help() -> str:
    """Every key of ModelArguments and DataArguments with its type, default and help, for ``--help``; the keys of
    ``transformers.TrainingArguments`` are documented there."""
    lines = []
    for dc in ARGUMENTS[:2]:
        hints = field_types(dc)
        lines.append(f"{dc.__name__} ({dc.__doc__.strip()}):")
        for f in fields(dc):
            default = f.default_factory() if callable(f.default_factory) else f.default
            lines.append(
                f"  {f.name}: {type_name(hints[f.name])} (default: {default!r})\n      {f.metadata.get('help', '')}"
            )
    lines.append(
        "TrainingArguments: every field of transformers.TrainingArguments (output_dir, max_steps, "
        "learning_rate, eval_strategy, ...)"
    )
    return "\n".join(lines)
