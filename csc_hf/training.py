"""Trainer glue: one YAML file holds a run (model + data + `TrainingArguments`), read with `HfArgumentParser`.

    python -m csc_hf.train trainer_configs/variants/all_gate.yaml [key=value ...]
    accelerate launch --config_file trainer_configs/accelerate/cpu_2proc.yaml -m csc_hf.train CONFIG.yaml
    csc-bench train CONFIG.yaml

``task: mlm`` pretrains the semantic encoder (a `BertForMaskedLM` over the character vocabulary) on the training
targets; ``task: correction`` fine-tunes a model of `csc_hf.modeling.VARIANTS` on the ``train`` config of csc_bench.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import torch
import yaml
from transformers import (
    BertConfig,
    BertForMaskedLM,
    DataCollatorForLanguageModeling,
    HfArgumentParser,
    Trainer,
    TrainingArguments,
    set_seed,
)
from transformers.trainer_utils import get_last_checkpoint

from . import resources
from .benchmark.builder import load_dataset
from .benchmark.plan import BenchParams, plan_for
from .modeling import VARIANTS, CSCTokenizer, build_model, is_seq2seq
from .scoring import make_compute_metrics, preprocess_logits_for_metrics

TASKS = ("correction", "mlm")


@dataclass
class ModelArguments:
    """What to train."""

    task: str = field(default="correction", metadata={"help": "correction (a VARIANTS model) or mlm (pretraining)"})
    variant: str = field(default="bert", metadata={"help": f"one of {', '.join(VARIANTS)}"})
    model_overrides: dict = field(default_factory=dict, metadata={"help": "CSCConfig / BartConfig / BertConfig fields"})
    init_from: str | None = field(default=None, metadata={"help": "a BERT (or BART) checkpoint folder or Hub name"})
    tokenizer_path: str | None = field(default=None, metadata={"help": "a saved CSCTokenizer (default: build one)"})
    vocab_min_freq: int = field(default=1, metadata={"help": "characters seen fewer times stay out of a new vocabulary"})
    fonts: list[str] | None = field(default=None, metadata={"help": "font files for glyphs (file.ttc#2 for a face)"})

    def __post_init__(self):
        if self.task not in TASKS:
            raise ValueError(f"task={self.task!r}: choose one of {TASKS}")
        if self.task == "correction" and self.variant not in VARIANTS:
            raise ValueError(f"variant={self.variant!r}: choose one of {', '.join(VARIANTS)}")


@dataclass
class DataArguments:
    """Which data, and how it is fed."""

    bench_params: dict = field(default_factory=dict, metadata={"help": "csc_bench parameters (BenchParams fields)"})
    max_length: int = field(default=128, metadata={"help": "longest input in characters (longer ones are cut)"})
    max_train_samples: int | None = field(default=None, metadata={"help": "use the first N training sentences"})
    max_eval_samples: int | None = field(default=None, metadata={"help": "use the first N validation sentences"})
    mask_rate: float = field(default=0.0, metadata={"help": "masked fine-tuning: share of correct characters masked"})
    mlm_probability: float = field(default=0.15, metadata={"help": "masking rate of the mlm task"})

    def __post_init__(self):
        unknown = set(self.bench_params) - {f.name for f in fields(BenchParams)}
        if unknown:
            raise ValueError(f"bench_params: unknown keys {sorted(unknown)}")
        for name in ("mask_rate", "mlm_probability"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"{name}={getattr(self, name)} must be in [0, 1)")


def load_config(path: str | Path, overrides: list[str] = ()) -> tuple[ModelArguments, DataArguments, TrainingArguments]:
    """Read a run's YAML; ``overrides`` are ``key=value`` strings (values parsed as YAML). Unknown keys are errors.
    A relative ``path`` that does not exist names a shipped config (``trainer_configs/variants/bert.yaml``)."""
    path = resources.trainer_config(path)
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"training config {path} does not exist") from None
    except yaml.YAMLError as err:
        raise ValueError(f"{path}: invalid YAML ({err})") from None
    if not isinstance(config, dict) or not config:
        raise ValueError(f"{path}: expected a non-empty mapping of options")
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"override {item!r}: expected key=value")
        config[key.strip()] = yaml.safe_load(value)
    parser = HfArgumentParser((ModelArguments, DataArguments, TrainingArguments))
    known = {f.name for dc in (ModelArguments, DataArguments, TrainingArguments) for f in fields(dc)}
    unknown = sorted(set(config) - known)
    if unknown:
        raise ValueError(f"{path}: unknown keys {unknown} (not a field of ModelArguments, DataArguments or TrainingArguments)")
    return parser.parse_dict(config)


def build_tokenizer(targets: list[str], extra_chars: str, min_freq: int = 1) -> CSCTokenizer:
    """A character vocabulary over the training targets plus the confusion set's characters."""
    return CSCTokenizer.from_texts(targets, min_freq=min_freq, extra_chars=[extra_chars])


def encode_pairs(
    tokenizer: CSCTokenizer, sources: list[str], targets: list[str], max_length: int, seq2seq: bool = False
) -> dict[str, list]:
    """Input ids of the sources and label ids of the targets, one per character: ``-100`` on ``[CLS]``/``[SEP]`` for
    a tagging model; kept for a ``seq2seq`` one, whose decoder reads the labels shifted right (``[SEP] [CLS] ...``,
    the start of its generation) and must learn to end with ``[SEP]``."""
    inputs = tokenizer(sources, truncation=True, max_length=max_length)["input_ids"]
    labels = tokenizer(targets, truncation=True, max_length=max_length)["input_ids"]
    for source, label in zip(inputs, labels):
        if len(source) != len(label):
            raise ValueError("a source and its target tokenize to different lengths; they must have equal length")
        if not seq2seq:
            label[0] = label[-1] = -100
    return {"input_ids": inputs, "labels": labels, "length": [len(x) for x in inputs]}


@dataclass
class CorrectionCollator:
    """Pads a batch; with ``mask_rate`` > 0 replaces that share of the correct characters of the input by
    ``[MASK]`` (masked fine-tuning: the model must predict them from context, which helps unseen errors)."""

    tokenizer: CSCTokenizer
    mask_rate: float = 0.0

    def __call__(self, examples: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        width = max(len(e["input_ids"]) for e in examples)
        pad = self.tokenizer.pad_token_id
        input_ids = torch.full((len(examples), width), pad, dtype=torch.long)
        labels = torch.full((len(examples), width), -100, dtype=torch.long)
        for i, e in enumerate(examples):
            input_ids[i, : len(e["input_ids"])] = torch.tensor(e["input_ids"])
            labels[i, : len(e["labels"])] = torch.tensor(e["labels"])
        attention_mask = (input_ids != pad).long()
        if self.mask_rate > 0:
            correct = (labels != -100) & (labels == input_ids)
            chosen = correct & (torch.rand(input_ids.shape) < self.mask_rate)
            input_ids = input_ids.masked_fill(chosen, self.tokenizer.mask_token_id)
        return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}


def _select(dataset, n: int | None):
    return dataset.select(range(min(n, len(dataset)))) if n else dataset


def train(model_args: ModelArguments, data_args: DataArguments, training_args: TrainingArguments) -> Path:
    """Train as configured; save the model and tokenizer to ``output_dir`` and return it. A run whose output folder
    holds a checkpoint resumes from the last one."""
    out = Path(training_args.output_dir)
    set_seed(training_args.seed)  # before the model is built: its initialisation is part of the run
    data = load_dataset("csc_bench", "train", **data_args.bench_params)
    train_set = _select(data["train"], data_args.max_train_samples)
    eval_set = _select(data["validation"], data_args.max_eval_samples)
    if model_args.tokenizer_path:
        tokenizer = CSCTokenizer.from_pretrained(model_args.tokenizer_path)
    else:
        confusion = plan_for(BenchParams(**data_args.bench_params)).confusion
        extra = "".join(sorted({c for k, cands in confusion.items() for c in (k, *cands)}))
        tokenizer = build_tokenizer(train_set["target"], extra, model_args.vocab_min_freq)
    tokenizer.model_max_length = data_args.max_length

    if model_args.task == "mlm":
        model = _mlm_model(model_args, tokenizer, data_args.max_length)
        encode = lambda batch: tokenizer(batch["target"], truncation=True, max_length=data_args.max_length)  # noqa: E731
        collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=data_args.mlm_probability)
        extra_args: dict[str, Any] = {}
    else:
        model = build_model(model_args.variant, tokenizer, init_from=model_args.init_from, fonts=model_args.fonts,
                            **model_args.model_overrides)
        is_bart = is_seq2seq(model_args.variant)
        encode = lambda batch: encode_pairs(tokenizer, batch["source"], batch["target"], data_args.max_length, is_bart)  # noqa: E731
        collator = CorrectionCollator(tokenizer, 0.0 if is_bart else data_args.mask_rate)
        extra_args = {} if is_bart else {
            "compute_metrics": make_compute_metrics(),
            "preprocess_logits_for_metrics": preprocess_logits_for_metrics,
        }
    columns = train_set.column_names
    with training_args.main_process_first(desc="tokenize"):
        train_set = train_set.map(encode, batched=True, remove_columns=columns, desc="tokenize train")
        eval_set = eval_set.map(encode, batched=True, remove_columns=columns, desc="tokenize validation")
    if "length" not in train_set.column_names:
        train_set = train_set.map(lambda b: {"length": [len(x) for x in b["input_ids"]]}, batched=True)
    trainer = Trainer(model=model, args=training_args, train_dataset=train_set, eval_dataset=eval_set,
                      data_collator=collator, processing_class=tokenizer, **extra_args)
    last = get_last_checkpoint(str(out)) if out.is_dir() else None
    trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint or last)
    trainer.save_model(str(out))
    if trainer.is_world_process_zero():
        tokenizer.save_pretrained(str(out))
        record = {"task": model_args.task, "variant": model_args.variant, "log_history": trainer.state.log_history}
        (out / "csc_training.json").write_text(json.dumps(record, indent=1, default=str) + "\n", encoding="utf-8")
    return out


def _mlm_model(model_args: ModelArguments, tokenizer: CSCTokenizer, max_length: int) -> BertForMaskedLM:
    if model_args.init_from:
        return BertForMaskedLM.from_pretrained(model_args.init_from)
    config = BertConfig(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                        max_position_embeddings=max(512, max_length), **model_args.model_overrides)
    return BertForMaskedLM(config)


def main(argv: list[str] | None = None) -> int:
    """``python -m csc_hf.train CONFIG.yaml [key=value ...]``."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        print("keys: the fields of ModelArguments, DataArguments and transformers.TrainingArguments")
        return 0 if args else 2
    try:
        model_args, data_args, training_args = load_config(args[0], args[1:])
    except (ValueError, FileNotFoundError) as err:
        print(f"csc_hf.train: error: {err}", file=sys.stderr)
        return 2
    train(model_args, data_args, training_args)
    return 0
