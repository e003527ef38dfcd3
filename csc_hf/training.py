"""Trainer glue: one YAML file holds a run (model + data + `TrainingArguments`), read with `HfArgumentParser`.

    python -m csc_hf.train trainer_configs/variants/all_gate.yaml [key=value ...]
    accelerate launch --config_file trainer_configs/accelerate/cpu_2proc.yaml -m csc_hf.train CONFIG.yaml
    csc-bench train CONFIG.yaml

``task: mlm`` pretrains the semantic encoder (a `BertForMaskedLM` over the character vocabulary) on the training
targets, or on the text of ``pretrain_corpus`` less the benchmark's held-out sentences; ``task: correction``
fine-tunes a model of `csc_hf.modeling.VARIANTS` on the ``train`` config of csc_bench, on real pairs
(``train_files`` / ``validation_files``: a ``wrong<TAB>correct`` TSV, a jsonl with ``source``/``target``, an exported
folder, a `datasets` dataset) or on both (``use_benchmark: false``: the files alone).
``base: FILE`` takes the keys of another YAML (a path relative to this one) under this file's keys: the variant
configs are their variant and output folder over ``trainer_configs/finetune.yaml``. The whole config (every key's
type, the values, the local folders it starts from) is checked before any work. ``precision: auto`` (the default)
trains under bf16 autocast on a CPU with bf16 in hardware and in fp32 elsewhere (`precision_keys`).
"""

from __future__ import annotations

import enum
import hashlib
import json
import os
import re
import shutil
import signal
import types
import typing
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import torch
import yaml
from transformers import (
    BertConfig,
    BertForMaskedLM,
    DataCollatorForLanguageModeling,
    HfArgumentParser,
    Trainer,
    TrainerCallback,
    TrainingArguments,
    set_seed,
)
from transformers.trainer_callback import PrinterCallback, ProgressCallback

from . import hub, resources
from .benchmark.builder import load_dataset
from .benchmark.plan import BenchParams, plan_for
from .corpus import CORPORA, MIXES, SOURCES, check_installed, check_not_pairs, corpus_sentences, overlaps
from .corruption import unpack
from .dataset_stats import PAIR_KINDS, Pairs, load_pairs, training_part
from .logging import get_logger
from .modeling import VARIANTS, CSCTokenizer, build_model, is_seq2seq
from .precision import PRECISIONS, check_precision, cpu_has_bf16
from .scoring import make_compute_metrics, preprocess_logits_for_metrics

logger = get_logger(__name__)
TASKS = ("correction", "mlm")
KILL_ENV = "CSC_HF_KILL_AFTER_SAVE"  # tests of the resume: a step whose checkpoint, once saved, ends the process
DATA_KINDS = f"each {PAIR_KINDS}"
NO_TOKENIZER = "no tokenizer files (a saved CSCTokenizer's tokenizer.json or a BERT vocab.txt)"


@dataclass
class ModelArguments:
    """What to train."""

    task: str = field(default="correction", metadata={"help": "correction (a VARIANTS model) or mlm (pretraining)"})
    variant: str = field(default="bert", metadata={"help": f"one of {', '.join(VARIANTS)}"})
    model_overrides: dict = field(default_factory=dict, metadata={"help": "CSCConfig / BartConfig / BertConfig fields"})
    init_from: str | None = field(default=None, metadata={"help": "a BERT (or BART) checkpoint folder or Hub name"})
    tokenizer_path: str | None = field(
        default=None,
        metadata={
            "help": "a saved CSCTokenizer, or a BERT checkpoint's vocab.txt folder (default: init_from's, else built from "
            "the training text)"
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

    def __post_init__(self):
        if self.task not in TASKS:
            raise ValueError(f"task={self.task!r}: choose one of {TASKS}")
        check_precision(self.precision)
        if self.task == "correction" and self.variant not in VARIANTS:
            raise ValueError(f"variant={self.variant!r}: choose one of {', '.join(VARIANTS)}")


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
            f"(or instead of it: use_benchmark: false): {DATA_KINDS}; of a folder or dataset "
            "with a train split, that split"
        },
    )
    validation_files: list[str] = field(
        default_factory=list,
        metadata={
            "help": "validation pairs, added to the "
            f"benchmark's validation split (or instead of it): {DATA_KINDS}; of a folder "
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
    mlm_probability: float = field(default=0.15, metadata={"help": "masking rate of the mlm task"})
    mask_replace_prob: float = field(
        default=0.8, metadata={"help": "mlm task: share of the chosen tokens replaced by [MASK] (BERT: 0.8)"}
    )
    random_replace_prob: float = field(
        default=0.1,
        metadata={
            "help": "mlm task: share of the chosen tokens replaced "
            "by a random token (BERT: 0.1); the rest keep their token"
        },
    )
    pretrain_corpus: str | None = field(
        default=None,
        metadata={
            "help": "the mlm task's training text: this corpus "
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
        unknown = set(self.bench_params) - {f.name for f in fields(BenchParams)}
        if unknown:
            raise ValueError(f"bench_params: unknown keys {sorted(unknown)}")
        try:
            BenchParams(**self.bench_params).validate()
        except (TypeError, ValueError) as err:
            raise ValueError(f"bench_params: {err}") from None
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
            check_not_pairs(corpus)  # a pair file given as the corpus: refused with a pointer to train_files


ARGUMENTS = (ModelArguments, DataArguments, TrainingArguments)


def keys_help() -> str:
    """Every key of ModelArguments and DataArguments with its type, default and help, for ``--help``; the keys of
    ``transformers.TrainingArguments`` are documented there."""
    lines = []
    for dc in ARGUMENTS[:2]:
        hints = typing.get_type_hints(dc)
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


def field_types() -> dict[str, Any]:
    """The type of every config key: the init fields of ModelArguments, DataArguments and TrainingArguments."""
    types_ = {}
    for dc in ARGUMENTS:
        hints = typing.get_type_hints(dc)
        types_.update({f.name: hints[f.name] for f in fields(dc) if f.init})
    return types_


def accepts(hint: Any, value: Any) -> bool:
    """Whether ``value`` (as YAML reads it) fits the type ``hint``: an int is no bool, a float may be an int, an enum
    takes its values; classes YAML cannot give (a config object) are left to their dataclass."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(accepts(a, value) for a in args)
    if origin is typing.Literal:
        return any(value is a or (type(value) is type(a) and value == a) for a in args)
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if (origin or hint) in (list, tuple):
        return isinstance(value, list) and (not args or all(accepts(args[0], v) for v in value))
    if (origin or hint) is dict:
        return isinstance(value, dict)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return isinstance(value, hint) or value in {m.value for m in hint}
    return True


def type_name(hint: Any) -> str:
    """``hint`` in words, for an error message."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(type_name(a) for a in args)
    if origin is typing.Literal:
        return " or ".join(map(repr, args))
    if hint is type(None):
        return "null"
    if (origin or hint) in (list, tuple):
        return f"a list of {type_name(args[0])}" if args else "a list"
    if (origin or hint) is dict:
        return "a mapping"
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return "one of " + ", ".join(repr(m.value) for m in hint)
    return getattr(hint, "__name__", str(hint))


def read_config(path: str | Path, _seen: tuple[Path, ...] = ()) -> tuple[dict, dict[str, str]]:
    """A training YAML's keys with its ``base`` (and the base's base) resolved, and the file each key comes from."""
    path = Path(path)
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(
            f"training config {path} does not exist" + (f" (base of {_seen[-1]})" if _seen else "")
        ) from None
    except yaml.YAMLError as err:
        raise ValueError(f"{path}: invalid YAML ({err})") from None
    if not isinstance(config, dict) or not config:
        raise ValueError(f"{path}: expected a non-empty mapping of options")
    origins = dict.fromkeys(config, str(path))
    base = config.pop("base", None)
    origins.pop("base", None)
    if base is None:
        return config, origins
    if not isinstance(base, str):
        raise ValueError(f"{path}: base={base!r} must be the path of another training config")
    base_path = Path(os.path.normpath(path.parent / base))
    if base_path.resolve() in [p.resolve() for p in (*_seen, path)]:
        raise ValueError(f"{path}: base={base} leads back to itself")
    base_config, base_origins = read_config(base_path, (*_seen, path))
    return {**base_config, **config}, {**base_origins, **origins}


def coerce(hint: Any, value: Any) -> Any:
    """A number that YAML left as text (``1e-3``: YAML 1.1 wants ``1.0e-3``) as the number its key takes; any
    other value as it is."""
    if isinstance(value, str) and not accepts(hint, value):
        for number in (int, float):
            try:
                if accepts(hint, number(value)):
                    return number(value)
            except ValueError:
                continue
    return value


def parse_override(item: str, kinds: dict[str, Any]) -> tuple[str, Any]:
    """``key=value``: the value read as YAML, except where the key takes text and YAML reads another type, e.g.
    ``eval_strategy=no`` (YAML: false) or ``output_dir=123``: then the text is the value."""
    key, sep, text = item.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ValueError(f"override {item!r}: expected key=value")
    hint = kinds.get(key, Any)
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as err:
        if hint is not Any and accepts(hint, text):
            return key, text
        raise ValueError(f"override {item!r}: invalid YAML ({err})") from None
    if not accepts(hint, value) and accepts(hint, text):
        return key, text
    return key, value


def load_config(path: str | Path, overrides: list[str] = ()) -> tuple[ModelArguments, DataArguments, TrainingArguments]:
    """Read a run's YAML (with its ``base``); ``overrides`` are ``key=value`` strings (see :func:`parse_override`).
    Everything is checked before any work: unknown keys, each value's type, the values themselves, and that a local
    ``init_from`` / ``tokenizer_path`` exists; an error names the key and the file (or the override). A relative
    ``path`` that does not exist names a shipped config (``trainer_configs/variants/bert.yaml``)."""
    path = resources.trainer_config(path)
    config, origins = read_config(path)
    kinds = field_types()
    for item in overrides:
        key, value = parse_override(item, kinds)
        config[key], origins[key] = value, f"override {item}"
    unknown = sorted(set(config) - set(kinds))
    if unknown:
        where = sorted({origins[k] for k in unknown})
        raise ValueError(
            f"{', '.join(where)}: unknown keys {unknown} (not a field of ModelArguments, DataArguments or "
            "TrainingArguments)"
        )
    for key, value in config.items():
        config[key] = value = coerce(kinds[key], value)
        if not accepts(kinds[key], value):
            raise ValueError(f"{origins[key]}: {key}={value!r} must be {type_name(kinds[key])}")
    config.update(precision_keys(config, origins))
    try:
        model_args, data_args, training_args = HfArgumentParser(ARGUMENTS).parse_dict(config)
    except (TypeError, ValueError) as err:  # a value the dataclasses reject: named by the file (or override) of its key
        key = re.match(r"\w*", str(err)).group()
        raise ValueError(f"{origins.get(key, path)}: {err}") from None
    check_start_folders(model_args, origins)
    check_data(model_args, data_args, training_args, origins)
    return model_args, data_args, training_args


def trains_on_cpu(use_cpu: bool) -> bool:
    """Whether the Trainer runs on the CPU: ``use_cpu``, or no accelerator (CUDA, MPS, XPU, ...) is present."""
    accelerator = getattr(torch, "accelerator", None)  # torch >= 2.6
    return use_cpu or not (accelerator.is_available() if accelerator else torch.cuda.is_available())


def precision_keys(config: dict[str, Any], origins: dict[str, str]) -> dict[str, Any]:
    """The `TrainingArguments` keys that carry ``config``'s ``precision`` (see `ModelArguments`): ``bf16``, and
    ``use_cpu`` where bf16 runs on the CPU (TrainingArguments asks for it). ``auto`` chooses bf16 on a CPU with bf16
    in hardware and leaves explicit ``bf16`` / ``fp16`` keys (the paper preset's GPUs) as they are; a forced
    precision that contradicts them is an error naming both keys; an unknown precision is left to `ModelArguments`."""
    precision, on_cpu = config.get("precision", "auto"), trains_on_cpu(bool(config.get("use_cpu", False)))
    explicit = [key for key in ("bf16", "fp16") if key in config]
    if precision == "auto" and explicit or precision not in PRECISIONS:
        return {}
    if precision == "auto":
        bf16 = on_cpu and cpu_has_bf16()
    else:
        bf16 = precision == "bf16"
        for key in explicit:
            if config[key] != (key == precision):
                raise ValueError(
                    f"{origins['precision']}: precision={precision} contradicts {key}={config[key]} "
                    f"({origins[key]}); drop one of the two keys"
                )
    return {"bf16": bf16, "use_cpu": True} if bf16 and on_cpu else {"bf16": bf16}


def precision_of(training_args: TrainingArguments) -> str:
    """The precision a Trainer with ``training_args`` computes in: bf16, fp16 (autocast) or fp32."""
    return "bf16" if training_args.bf16 else "fp16" if training_args.fp16 else "fp32"


def maker_of(folder: str) -> str | None:
    """The command that makes ``folder``: ``csc-bench train`` of the shipped training config whose ``output_dir``
    it is, if any."""
    target, shipped = os.path.normpath(folder), resources.shipped_dir("trainer_configs")
    for path in [*sorted(shipped.glob("*.yaml")), *sorted((shipped / "variants").glob("*.yaml"))]:
        try:
            output_dir = read_config(path)[0].get("output_dir")
        except (OSError, ValueError):
            continue
        if output_dir and os.path.normpath(str(output_dir)) == target:
            return f"csc-bench train {path.relative_to(shipped.parent)}"
    return None


def check_start_folders(model_args: ModelArguments, origins: dict[str, str]) -> None:
    """A local ``init_from`` (see :func:`csc_hf.hub.is_local`) must be a saved model folder, and the folder the
    tokenizer comes from (``tokenizer_path``, else ``init_from``) must hold one (:func:`start_tokenizer_file`): a
    missing one is an error that says which command makes it, and the Hub is never tried."""
    for key in ("init_from", "tokenizer_path"):
        value = getattr(model_args, key)
        if not value or not hub.is_local(value):
            continue
        origin, folder = origins.get(key, "config"), Path(value)
        if not folder.is_dir():
            maker = maker_of(value)
            fix = (
                f"make it with `{maker}`"
                if maker
                else "train a model into it first, or give a saved model folder or a Hub name"
            )
            raise FileNotFoundError(f"{origin}: {key}={value}: the folder does not exist; {fix}")
        if key == "init_from" and not (folder / "config.json").is_file():
            raise FileNotFoundError(f"{origin}: {key}={value}: the folder holds no saved model (config.json)")
        if (key == "tokenizer_path" or not model_args.tokenizer_path) and start_tokenizer_file(folder) is None:
            raise FileNotFoundError(
                f"{origin}: {key}={value}: the folder holds {NO_TOKENIZER}"
                + ("; give tokenizer_path" if key == "init_from" else "")
            )


def start_tokenizer_file(path: str | Path) -> Path | None:
    """The tokenizer file a checkpoint holds: ``tokenizer.json`` of a saved CSCTokenizer, ``vocab.txt`` of a BERT
    checkpoint (another tokenizer.json, e.g. bert-base-chinese's WordPiece one, is not a character tokenizer), or
    None."""
    config_file = hub.model_file(path, "tokenizer_config.json")
    config = hub.read_json_object(config_file) if config_file else {}
    found = hub.model_file(path, "tokenizer.json")
    if found and config.get("tokenizer_class", "CSCTokenizer") == "CSCTokenizer":
        return found
    return hub.model_file(path, "vocab.txt")


def start_tokenizer(path: str) -> CSCTokenizer:
    """The tokenizer of a start checkpoint or ``tokenizer_path`` (a local folder or a Hub name): its saved
    CSCTokenizer, or one character per token over its BERT ``vocab.txt`` with the same ids, so that it fits the
    checkpoint's embeddings (bert-base-chinese, macbert4csc)."""
    file = start_tokenizer_file(path)
    if file is None:
        raise FileNotFoundError(f"{path} holds {NO_TOKENIZER}")
    return CSCTokenizer.from_pretrained(path) if file.name == "tokenizer.json" else CSCTokenizer.from_bert_vocab(file)


def pairs_equal_length(model_args: ModelArguments) -> bool:
    """Whether the training pairs must have a target as long as its source: a tagging model's output is aligned with
    its input; a seq2seq model (``bart``) generates its target, and the ``mlm`` task reads only targets."""
    return model_args.task == "correction" and not is_seq2seq(model_args.variant)


def read_pairs(specs: list[str], split: str, equal_lengths: bool) -> Pairs:
    """The pairs of ``train_files`` (``split="train"``) or ``validation_files`` (``"validation"``), in order: of a spec
    with splits of that name, those splits; else all of it (see :func:`csc_hf.dataset_stats.load_pairs`)."""
    sources, targets = [], []
    for spec in specs:
        splits = load_pairs(spec, equal_lengths=equal_lengths)
        if split == "train":
            part = training_part(splits)
        else:
            chosen = [pairs for name, pairs in splits.items() if name.endswith(f"/{split}")] or list(splits.values())
            part = [s for src, _ in chosen for s in src], [t for _, tgt in chosen for t in tgt]
        sources += part[0]
        targets += part[1]
    return sources, targets


def check_data(
    model_args: ModelArguments, data_args: DataArguments, training_args: TrainingArguments, origins: dict[str, str]
) -> None:
    """Read ``train_files`` and ``validation_files`` once before any work: each must exist and hold pairs, of equal
    lengths unless the model is seq2seq (an error names the file and line and which variants take other pairs); and a
    run that evaluates must have validation data."""
    equal = pairs_equal_length(model_args)
    for key, split in (("train_files", "train"), ("validation_files", "validation")):
        for spec in getattr(data_args, key):
            try:
                read_pairs([spec], split, equal)
            except (ValueError, OSError) as err:
                hint = ""
                if equal and "characters, target" in str(err):
                    hint = (
                        f"; the {model_args.variant} variant corrects character by character, so a target must be "
                        "as long as its source (only bart, a seq2seq model, trains on pairs of other lengths)"
                    )
                raise type(err)(f"{origins.get(key, 'config')}: {key}: {err}{hint}") from None
    check_pretrain_corpus(model_args, data_args, origins.get("pretrain_corpus", "config"))
    evaluates = training_args.eval_strategy != "no" or training_args.load_best_model_at_end
    if evaluates and not data_args.use_benchmark and not data_args.validation_files:
        raise ValueError(
            f"{origins.get('use_benchmark', 'config')}: eval_strategy={training_args.eval_strategy.value} "
            "needs validation pairs, and use_benchmark=false leaves none: give validation_files, or set "
            "eval_strategy: 'no'"
        )


def check_pretrain_corpus(model_args: ModelArguments, data_args: DataArguments, origin: str = "config") -> None:
    """``pretrain_corpus`` is for the mlm task, with the benchmark (whose held-out sentences it excludes), and names a
    corpus that can be read: an installed one of ``CORPORA`` (else the error names the pip command), an existing text
    file or folder (not a file of sentence pairs), or ``datasets:PATH``."""
    corpus = data_args.pretrain_corpus
    if corpus is None:
        return
    if model_args.task != "mlm":
        raise ValueError(
            f"{origin}: pretrain_corpus={corpus} is the mlm task's text; task={model_args.task} trains "
            "on pairs: drop pretrain_corpus or set task: mlm"
        )
    if not data_args.use_benchmark:
        raise ValueError(
            f"{origin}: pretrain_corpus={corpus} excludes the benchmark's validation and test sentences "
            "and needs the benchmark: set use_benchmark: true"
        )
    try:
        if corpus in SOURCES or corpus in MIXES:
            check_installed(corpus)
        elif not corpus.startswith("datasets:"):
            if not Path(corpus).exists():
                raise FileNotFoundError(
                    f"{corpus} is neither a file or folder nor a corpus name ({', '.join(CORPORA)})"
                )
            if Path(corpus).is_file():
                check_not_pairs(corpus)
    except (ImportError, OSError, ValueError) as err:
        raise type(err)(f"{origin}: pretrain_corpus: {err}") from None


def pretraining_text(data_args: DataArguments) -> tuple[list[str], dict[str, dict[str, int]]]:
    """The mlm task's training sentences from ``pretrain_corpus``, cleaned with the benchmark's parameters
    (``min_len``, ``max_len``, ``min_han_ratio``, ``to_simplified``) and de-duplicated across its sources, less every
    sentence that overlaps (:func:`csc_hf.corpus.overlaps`) a sentence of the benchmark's validation or test pool or a
    SIGHAN-2015 target (when the benchmark has that config); and per source, the sentences kept and dropped."""
    params = BenchParams(**data_args.bench_params)
    plan = plan_for(params)
    held_out = [*unpack(plan.pools["validation"]), *unpack(plan.pools["test"])]
    if "sighan15" in params.available_configs():
        held_out += unpack(plan.sighan15.target)
    by_source = corpus_sentences(
        data_args.pretrain_corpus,
        params.corpus_column,
        params.min_len,
        params.max_len,
        params.min_han_ratio,
        params.to_simplified,
    )
    flags = iter(overlaps([s for sentences in by_source.values() for s in sentences], held_out))
    text, counts = [], {}
    for name, sentences in by_source.items():
        kept = [s for s in sentences if not next(flags)]
        text += kept
        counts[name] = {"kept": len(kept), "dropped": len(sentences) - len(kept)}
        logger.info(
            "pretraining text: %s gives %d sentences (%d dropped: they overlap held-out ones)",
            name,
            len(kept),
            len(sentences) - len(kept),
        )
    return text, counts


def build_tokenizer(targets: list[str], extra_chars: str, min_freq: int = 1) -> CSCTokenizer:
    """A character vocabulary over the training targets plus the confusion set's characters."""
    return CSCTokenizer.from_texts(targets, min_freq=min_freq, extra_chars=[extra_chars])


def encode_pairs(
    tokenizer: CSCTokenizer, sources: list[str], targets: list[str], max_length: int, seq2seq: bool = False
) -> dict[str, list]:
    """Input ids of the sources and label ids of the targets, one per character: ``-100`` on ``[CLS]``/``[SEP]`` for
    a tagging model, whose source and target must have equal length; kept for a ``seq2seq`` one, whose decoder reads
    the labels shifted right (``[SEP] [CLS] ...``, the start of its generation) and must learn to end with ``[SEP]``,
    and whose target may be longer or shorter than its source."""
    inputs = tokenizer(sources, truncation=True, max_length=max_length)["input_ids"]
    labels = tokenizer(targets, truncation=True, max_length=max_length)["input_ids"]
    for source, label in zip(inputs, labels):
        if seq2seq:
            continue
        if len(source) != len(label):
            raise ValueError("a source and its target tokenize to different lengths; they must have equal length")
        label[0] = label[-1] = -100
    return {"input_ids": inputs, "labels": labels, "length": [len(x) for x in inputs]}


@dataclass
class CorrectionCollator:
    """Pads a batch; with ``mask_rate`` > 0 replaces that share of the correct characters of the input by
    ``[MASK]`` (masked fine-tuning: the model must predict them from context, which helps unseen errors). Which
    characters are masked is drawn from the batch and ``seed`` alone, not from the global random state, so a run
    resumed from a checkpoint masks its batches as the uninterrupted run did (the Trainer restores the global state
    only after it has collated the first batch)."""

    tokenizer: CSCTokenizer
    mask_rate: float = 0.0
    seed: int = 0

    def _generator(self, input_ids: torch.Tensor) -> torch.Generator:
        digest = hashlib.blake2b(input_ids.numpy().tobytes(), digest_size=8, key=str(self.seed).encode()).digest()
        return torch.Generator().manual_seed(int.from_bytes(digest, "little") >> 1)

    def __call__(self, examples: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        width = max(len(e[key]) for e in examples for key in ("input_ids", "labels"))  # a seq2seq target may be longer
        pad = self.tokenizer.pad_token_id
        input_ids = torch.full((len(examples), width), pad, dtype=torch.long)
        labels = torch.full((len(examples), width), -100, dtype=torch.long)
        for i, e in enumerate(examples):
            input_ids[i, : len(e["input_ids"])] = torch.tensor(e["input_ids"])
            labels[i, : len(e["labels"])] = torch.tensor(e["labels"])
        attention_mask = (input_ids != pad).long()
        if self.mask_rate > 0:
            correct = (labels != -100) & (labels == input_ids)
            chosen = correct & (torch.rand(input_ids.shape, generator=self._generator(input_ids)) < self.mask_rate)
            input_ids = input_ids.masked_fill(chosen, self.tokenizer.mask_token_id)
        return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}


def _select(dataset, n: int | None):
    return dataset.select(range(min(n, len(dataset)))) if n else dataset


def training_data(
    data_args: DataArguments, equal_lengths: bool = True
) -> tuple[datasets.Dataset, datasets.Dataset, str]:
    """The training and validation pairs (``source``/``target``): ``train_files`` / ``validation_files`` in order,
    then the benchmark's train config (with ``use_benchmark``; with ``pretrain_corpus``, its text as both source and
    target instead of the benchmark's training pairs: see :func:`pretraining_text`), each cut to ``max_train_samples`` /
    ``max_eval_samples``; and every character of the files' pairs (for the vocabulary)."""
    train_pairs = read_pairs(data_args.train_files, "train", equal_lengths)
    eval_pairs = read_pairs(data_args.validation_files, "validation", equal_lengths)
    parts: dict[str, list[datasets.Dataset]] = {"train": [], "validation": []}
    for split, (sources, targets) in (("train", train_pairs), ("validation", eval_pairs)):
        if targets:
            parts[split].append(datasets.Dataset.from_dict({"source": sources, "target": targets}))
    if data_args.use_benchmark:
        bench = load_dataset("csc_bench", "train", **data_args.bench_params)
        if data_args.pretrain_corpus:
            text = pretraining_text(data_args)[0]
            parts["train"].append(datasets.Dataset.from_dict({"source": text, "target": text}))
        else:
            parts["train"].append(bench["train"].select_columns(["source", "target"]))
        parts["validation"].append(bench["validation"].select_columns(["source", "target"]))
    empty = datasets.Dataset.from_dict({"source": [], "target": []})
    train_set, eval_set = (
        datasets.concatenate_datasets(parts[s]) if parts[s] else empty for s in ("train", "validation")
    )
    chars = {c for texts in (*train_pairs, *eval_pairs) for text in texts for c in text}
    return (
        _select(train_set, data_args.max_train_samples),
        _select(eval_set, data_args.max_eval_samples),
        "".join(sorted(chars)),
    )


def checkpoint_problem(checkpoint: Path) -> str | None:
    """What makes a ``checkpoint-N`` folder incomplete (a run killed while saving it), or None: an empty file, a
    ``trainer_state.json`` that is missing or does not parse, model weights that are missing or do not parse."""
    try:
        empty = sorted(p.name for p in checkpoint.iterdir() if p.is_file() and p.stat().st_size == 0)
        if empty:
            return f"empty files {empty}"
        state = checkpoint / "trainer_state.json"
        if not state.is_file():
            return "no trainer_state.json"
        json.loads(state.read_text(encoding="utf-8"))
        if (checkpoint / "model.safetensors").is_file():
            from safetensors import safe_open

            with safe_open(str(checkpoint / "model.safetensors"), framework="pt") as weights:
                weights.keys()
        elif not any(checkpoint.glob("*.safetensors.index.json")) and not (checkpoint / "pytorch_model.bin").is_file():
            return "no model weights"
    except Exception as err:  # a half-written file fails in its own way (JSON, safetensors header, OS)
        return f"{type(err).__name__}: {err}"
    return None


def last_complete_checkpoint(folder: Path, remove_incomplete: bool = True) -> str | None:
    """The newest complete ``checkpoint-N`` in ``folder`` (see :func:`checkpoint_problem`), or None. Newer incomplete
    ones are logged and, with ``remove_incomplete``, removed (a later save of the same step starts clean)."""
    numbered = [p for p in folder.glob("checkpoint-*") if p.is_dir() and p.name.split("-", 1)[1].isdigit()]
    for checkpoint in sorted(numbered, key=lambda p: int(p.name.split("-", 1)[1]), reverse=True):
        problem = checkpoint_problem(checkpoint)
        if problem is None:
            return str(checkpoint)
        logger.warning(
            "%s is incomplete (%s); %s",
            checkpoint,
            problem,
            "removed it" if remove_incomplete else "resuming from an older one",
        )
        if remove_incomplete:
            shutil.rmtree(checkpoint, ignore_errors=True)
    return None


class KillAfterSave(TrainerCallback):
    """The process kills itself (SIGKILL, as a crash or an OOM kill would) once the checkpoint of ``step`` is saved:
    a deterministic interruption for the tests of the resume. Enabled by ``CSC_HF_KILL_AFTER_SAVE=STEP``."""

    def __init__(self, step: int):
        self.step = step

    def on_save(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            os.kill(os.getpid(), signal.SIGKILL)


class LogToLogger(TrainerCallback):
    """The Trainer's log entries (loss, learning rate, evaluation scores) as ``csc_hf`` log lines on stderr, not on
    stdout (which carries results)."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.is_world_process_zero and logs:
            shown = {k: round(v, 4) if isinstance(v, float) else v for k, v in logs.items()}
            logger.info("step %d/%d: %s", state.global_step, state.max_steps, shown)


class QuietProgress(ProgressCallback):
    """The Trainer's progress bar without its stdout copy of each log entry (``LogToLogger`` logs them)."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        pass


def _callbacks() -> list[TrainerCallback]:
    step = os.environ.get(KILL_ENV, "")
    if step and not step.isdigit():
        raise ValueError(f"{KILL_ENV}={step!r}: expected a step number")
    return [LogToLogger(), *([KillAfterSave(int(step))] if step else [])]


def _log_to_logger(trainer: Trainer) -> None:
    """Route the Trainer's log entries through ``LogToLogger``: without printer, and a progress bar that only shows
    progress."""
    trainer.remove_callback(PrinterCallback)
    if any(isinstance(c, ProgressCallback) for c in trainer.callback_handler.callbacks):
        trainer.remove_callback(ProgressCallback)
        trainer.add_callback(QuietProgress)


def train(model_args: ModelArguments, data_args: DataArguments, training_args: TrainingArguments) -> Path:
    """Train as configured; save the model and tokenizer to ``output_dir`` and return it. A run whose output folder
    holds a checkpoint resumes from the last one."""
    out = Path(training_args.output_dir)
    check_pretrain_corpus(model_args, data_args)
    set_seed(training_args.seed)  # before the model is built: its initialisation is part of the run
    train_set, eval_set, pair_chars = training_data(data_args, pairs_equal_length(model_args))
    if start := model_args.tokenizer_path or model_args.init_from:  # a checkpoint's embeddings fit its own vocabulary
        tokenizer = start_tokenizer(start)
        unknown = sorted(set(pair_chars) - set(tokenizer.get_vocab()))
        if unknown:
            logger.warning(
                "%d characters of train_files / validation_files are not in the tokenizer %s and become [UNK]: %s",
                len(unknown),
                start,
                "".join(unknown[:50]),
            )
    else:
        extra = pair_chars
        if data_args.use_benchmark:
            confusion = plan_for(BenchParams(**data_args.bench_params)).confusion
            extra += "".join(sorted({c for k, cands in confusion.items() for c in (k, *cands)}))
        tokenizer = build_tokenizer(train_set["target"], extra, model_args.vocab_min_freq)
    tokenizer.model_max_length = data_args.max_length

    if model_args.task == "mlm":
        model = _mlm_model(model_args, tokenizer, data_args.max_length)
        encode = lambda batch: tokenizer(batch["target"], truncation=True, max_length=data_args.max_length)  # noqa: E731
        collator = DataCollatorForLanguageModeling(
            tokenizer,
            mlm_probability=data_args.mlm_probability,
            mask_replace_prob=data_args.mask_replace_prob,
            random_replace_prob=data_args.random_replace_prob,
        )
        extra_args: dict[str, Any] = {
            "compute_metrics": masked_lm_accuracy,
            "preprocess_logits_for_metrics": preprocess_logits_for_metrics,
        }
    else:
        model = build_model(
            model_args.variant,
            tokenizer,
            init_from=model_args.init_from,
            fonts=model_args.fonts,
            **model_args.model_overrides,
        )
        is_bart = is_seq2seq(model_args.variant)
        encode = lambda batch: encode_pairs(tokenizer, batch["source"], batch["target"], data_args.max_length, is_bart)  # noqa: E731
        collator = CorrectionCollator(tokenizer, 0.0 if is_bart else data_args.mask_rate, training_args.seed)
        extra_args = (
            {}
            if is_bart
            else {
                "compute_metrics": make_compute_metrics(),
                "preprocess_logits_for_metrics": preprocess_logits_for_metrics,
            }
        )
    columns = train_set.column_names
    with training_args.main_process_first(desc="tokenize"):
        train_set = train_set.map(encode, batched=True, remove_columns=columns, desc="tokenize train")
        eval_set = eval_set.map(encode, batched=True, remove_columns=columns, desc="tokenize validation")
    if "length" not in train_set.column_names:
        train_set = train_set.map(lambda b: {"length": [len(x) for x in b["input_ids"]]}, batched=True)
    precision = precision_of(training_args)
    if precision == "bf16" and trains_on_cpu(training_args.use_cpu) and not cpu_has_bf16():
        logger.warning(
            "bf16 autocast on a CPU without bf16 in hardware: torch emulates it, slower than fp32 "
            "(precision: auto or fp32 trains in fp32 here)"
        )
    logger.info("training in %s (weights in fp32)", precision)
    trainer = Trainer(
        model=model,
        args=training_args,
        train_dataset=train_set,
        eval_dataset=eval_set or None,
        data_collator=collator,
        processing_class=tokenizer,
        callbacks=_callbacks(),
        **extra_args,
    )
    _log_to_logger(trainer)
    last = last_complete_checkpoint(out, remove_incomplete=trainer.is_world_process_zero()) if out.is_dir() else None
    trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint or last)
    trainer.save_model(str(out))
    if trainer.is_world_process_zero():
        tokenizer.save_pretrained(str(out))
        record = {
            "task": model_args.task,
            "variant": model_args.variant,
            "init_from": model_args.init_from,
            "precision": precision,
            "use_benchmark": data_args.use_benchmark,
            "bench_params": data_args.bench_params,
            "pretrain_corpus": data_args.pretrain_corpus,
            "train_files": data_args.train_files,
            "validation_files": data_args.validation_files,
            "log_history": trainer.state.log_history,
        }
        (out / hub.TRAINING_RECORD).write_text(json.dumps(record, indent=1, default=str) + "\n", encoding="utf-8")
    return out


def masked_lm_accuracy(prediction: Any) -> dict[str, float]:
    """Trainer metric of the mlm task: top-1 accuracy over the masked positions (labels other than -100), next to
    the evaluation loss; the predictions are argmax ids (``preprocess_logits_for_metrics``)."""
    predicted, labels = np.asarray(prediction.predictions), np.asarray(prediction.label_ids)
    masked = labels != -100
    return {"accuracy": float((predicted[masked] == labels[masked]).mean()) if masked.any() else 0.0}


def _mlm_model(model_args: ModelArguments, tokenizer: CSCTokenizer, max_length: int) -> BertForMaskedLM:
    if model_args.init_from:
        return BertForMaskedLM.from_pretrained(model_args.init_from)
    config = BertConfig(
        vocab_size=len(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
        max_position_embeddings=max(512, max_length),
        **model_args.model_overrides,
    )
    return BertForMaskedLM(config)
