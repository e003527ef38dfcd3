"""Reading a training config: one YAML (with ``base: FILE`` taking another config's keys under its own) and
``key=value`` overrides, every key and value checked before any work (:func:`load_config`); a config already in memory
(the study's) is checked the same way (:func:`check_config`). ``precision: auto`` chooses the TrainingArguments keys
that carry it (:func:`precision_keys`)."""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

import torch
import yaml
from transformers import HfArgumentParser, TrainingArguments
from transformers.utils import SAFE_WEIGHTS_NAME

from .. import resources
from ..benchmark.plan import BenchParams
from ..corpus import CORPORA, MIXES, TEXT_SOURCES, check_installed, check_not_sentence_pairs
from ..fields import accepts, check_fields, check_known, check_range, field_types
from ..files import check_output_folder, parse_yaml, read_yaml, write_atomic
from ..hardware import cpu_has_bf16
from ..model_folder import NO_TOKENIZER, check_model_folder, is_local, read_json_object, start_tokenizer_file
from ..modeling import can_change_length, is_seq2seq
from ..precision import PRECISIONS
from ..run_layout import RUNS_DIR, variant_file_name
from .arguments import ARGUMENTS, RANGES, DataArguments, ModelArguments
from .data import read_sentences


def read_config(path: str | Path, _seen: tuple[Path, ...] = ()) -> tuple[dict, dict[str, str]]:
    """A training YAML's keys with its ``base`` (and the base's base) resolved, and the file each key comes from."""
    path = Path(path)
    try:
        config = read_yaml(path)  # UTF-8, no key twice: errors name the file (and the line)
    except (FileNotFoundError, IsADirectoryError) as err:
        raise type(err)(f"training config {err}" + (f" (base of {_seen[-1]})" if _seen else "")) from None
    except ValueError as err:
        raise ValueError(f"{err}" + (f" (base of {_seen[-1]})" if _seen else "")) from None
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
        value = parse_yaml(text, f"override {item}")  # no key given twice in a mapping
    except ValueError:
        if hint is not Any and accepts(hint, text):
            return key, text
        raise
    if not accepts(hint, value) and accepts(hint, text):
        return key, text
    return key, value


Arguments = tuple[ModelArguments, DataArguments, TrainingArguments]


def load_config(path: str | Path, overrides: list[str] = ()) -> Arguments:
    """Read a run's YAML (with its ``base``); ``overrides`` are ``key=value`` strings (see :func:`parse_override`);
    then :func:`check_config`. An error names the key and the file (or the override). A relative ``path`` that does
    not exist names a shipped config (``trainer_configs/variants/bert.yaml``)."""
    path = resources.trainer_config(path)
    config, origins = read_config(path)
    kinds = field_types(*ARGUMENTS)
    for item in overrides:
        key, value = parse_override(item, kinds)
        config[key], origins[key] = value, f"override {item}"
    return check_config(config, origins, str(path))


def check_config(config: dict[str, Any], origins: dict[str, str] | None = None, source: str = "config") -> Arguments:
    """The arguments of a training config (its keys as a mapping), everything checked before any work: unknown keys,
    each value's type, the values themselves, that a local ``init_from`` / ``tokenizer_path`` exists and that the
    pair files can be read. ``origins`` names where each key comes from (default: ``source``), for the errors."""
    config, kinds = dict(config), field_types(*ARGUMENTS)
    origins = {key: source for key in config} | dict(origins or {})
    config = {key: coerce(kinds.get(key, Any), value) for key, value in config.items()}
    check_fields(config, kinds, source, origins)  # every key known, every value of its type
    config.update(precision_keys(config, origins))
    try:
        model_args, data_args, training_args = HfArgumentParser(ARGUMENTS).parse_dict(config)
    except (TypeError, ValueError) as err:  # a value the dataclasses reject: named by the file (or override) of its key
        key = re.match(r"\w*", str(err)).group()
        raise ValueError(f"{origins.get(key, source)}: {err}") from None
    for key, allowed in RANGES.items():
        holder = next(args for args in (model_args, data_args, training_args) if hasattr(args, key))
        check_range(key, getattr(holder, key), allowed, origins.get(key, source))
    check_output_dir(config.get("output_dir"), model_args, origins.get("output_dir", source))
    check_model_overrides(model_args, origins.get("model_overrides", source))
    check_start_folders(model_args, origins, data_args.max_length)
    check_data(model_args, data_args, training_args, origins)
    return model_args, data_args, training_args


def check_output_dir(output_dir: Any, model_args: ModelArguments, origin: str) -> None:
    """``output_dir`` is given (transformers would write to ./trainer_output), can be written, and is neither
    inside nor around a folder the run starts from (``init_from``, ``tokenizer_path``): a run never trains over its
    own start."""
    if not output_dir:
        raise ValueError(f"{origin}: output_dir={output_dir!r}: give the folder the model is saved to")
    starts = [
        value
        for value in (model_args.init_from, model_args.init_sides_from, model_args.tokenizer_path)
        if value and is_local(value)
    ]
    check_output_folder(output_dir, f"{origin}: output_dir", inputs=starts)


def model_config_class(model_args: ModelArguments) -> type:
    """The transformers configuration of the model a run trains: BertConfig (mlm), BartConfig (a seq2seq variant) or
    CSCConfig."""
    from transformers import BartConfig, BertConfig

    from ..modeling import CSCConfig

    if model_args.task == "mlm":
        return BertConfig
    if model_args.task == "sides":
        return CSCConfig
    return BartConfig if is_seq2seq(model_args.variant) else CSCConfig


SET_BY_TOKENIZER = {"vocab_size", "pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id"}
"""Configuration fields a run sets from its tokenizer: not ``model_overrides`` keys."""
VECTOR_KEYS = ("phonetic_vectors", "graphic_vectors")  # build_model's files of pretrained vectors (CSC variants)


def check_model_overrides(model_args: ModelArguments, origin: str) -> None:
    """Every ``model_overrides`` key is a field of the model's configuration (:func:`model_config_class`; a CSC
    variant also takes the vector files ``phonetic_vectors`` / ``graphic_vectors``, which are read now) with a value of
    its type, and the configuration builds: a misspelt key is an error naming the closest field, never ignored."""
    from ..modeling import VARIANTS
    from ..modeling.knowledge import load_vectors

    config_class, overrides = model_config_class(model_args), dict(model_args.model_overrides)
    if fixed := sorted(SET_BY_TOKENIZER & set(overrides)):
        raise ValueError(f"{origin}: model_overrides: {fixed} are set from the tokenizer; drop them")
    kinds = {k: v for k, v in field_types(config_class).items() if k not in SET_BY_TOKENIZER}
    vector_keys = VECTOR_KEYS if config_class.model_type == "csc" else ()
    check_known(overrides, [*kinds, *vector_keys], f"{origin}: model_overrides", f"{config_class.__name__} fields")
    for key in vector_keys:
        if key in overrides:
            if not isinstance(overrides[key], str):
                raise ValueError(f"{origin}: model_overrides: {key}={overrides[key]!r} must be a file path")
            load_vectors(overrides.pop(key))  # a bad file fails now, with its name
    check_fields(overrides, kinds, f"{origin}: model_overrides")
    base = VARIANTS.get(model_args.variant, {}) if config_class.model_type == "csc" else {}
    try:
        config_class(**{**base, **overrides})
    except (TypeError, ValueError) as err:
        raise ValueError(f"{origin}: model_overrides: {err}") from None


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


def check_start_folders(model_args: ModelArguments, origins: dict[str, str], max_length: int | None = None) -> None:
    """A local ``init_from`` (see :func:`csc_hf.model_folder.is_local`) must be a saved model folder with positions
    for ``max_length`` tokens, and the folder the tokenizer comes from (``tokenizer_path``, else ``init_from``) must
    hold one (:func:`start_tokenizer_file`) with the special tokens a run needs, each its own id inside the model's
    vocabulary (:func:`check_special_tokens`): a missing one is an error that says which command makes it, and the Hub
    is never tried."""
    if value := model_args.init_sides_from:
        origin = origins.get("init_sides_from", "config")
        if not (Path(value) / SAFE_WEIGHTS_NAME).is_file():
            raise FileNotFoundError(
                f"{origin}: init_sides_from={value}: no {SAFE_WEIGHTS_NAME} there; give the folder a run of "
                "task: sides saved"
            )
    for key in ("init_from", "tokenizer_path"):
        value = getattr(model_args, key)
        if not value or not is_local(value):
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
        if key == "init_from":  # its config.json and weights, read before any work
            check_model_folder(folder, f"{origin}: {key}", tokenizer=False)
        config = read_json_object(folder / "config.json") if key == "init_from" else {}
        positions = config.get("max_position_embeddings")
        if isinstance(positions, int) and max_length and max_length > positions:
            raise ValueError(
                f"{origin}: max_length={max_length}, but {key}={value} has {positions} positions: give "
                f"max_length <= {positions}"
            )
        if key == "tokenizer_path" or not model_args.tokenizer_path:
            if start_tokenizer_file(folder) is None:
                raise FileNotFoundError(
                    f"{origin}: {key}={value}: the folder holds {NO_TOKENIZER}"
                    + ("; give tokenizer_path" if key == "init_from" else "")
                )
            start = model_args.init_from if model_args.init_from and is_local(model_args.init_from) else None
            vocab_size = read_json_object(Path(start) / "config.json").get("vocab_size") if start else None
            check_special_tokens(value, vocab_size, f"{origin}: {key}")


REQUIRED_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
"""The special tokens a run uses (padding, unknown characters, the BERT template, masking), each its own id."""


def check_special_tokens(path: str, vocab_size: int | None, where: str) -> None:
    """The tokenizer of ``path`` holds every token of :data:`REQUIRED_TOKENS`, each with its own id below the
    model's ``vocab_size`` (when known): a missing ``[MASK]`` would be given an id the model already uses for a
    character, and masked training would feed that character."""
    from .data import start_tokenizer

    try:
        tokenizer = start_tokenizer(path)
    except Exception as err:  # a tokenizer file another program wrote fails in its own way
        raise ValueError(f"{where}={path}: its tokenizer does not load ({type(err).__name__}: {err})") from None
    vocab = tokenizer.backend_tokenizer.get_vocab(with_added_tokens=False)  # an added token has no row of its own
    uses = Counter(vocab.values())
    missing = [t for t in REQUIRED_TOKENS if t not in vocab]
    shared = [t for t in REQUIRED_TOKENS if t in vocab and uses[vocab[t]] > 1]
    outside = [t for t in REQUIRED_TOKENS if t in vocab and vocab_size is not None and vocab[t] >= vocab_size]
    problem = (
        f"lacks the special tokens {missing}"
        if missing
        else f"gives {shared} an id another token has"
        if shared
        else f"gives {outside} ids past the model's {vocab_size} embeddings"
        if outside
        else None
    )
    if problem:
        raise ValueError(
            f"{where}={path}: its tokenizer {problem}; a run needs {', '.join(REQUIRED_TOKENS)} in the vocabulary, "
            "each with its own id and embedding row (add them and resize the model's embeddings)"
        )


def equal_length_targets(model_args: ModelArguments) -> bool:
    """Whether the training pairs must have a target as long as its source: a tagging model's output is aligned with
    its input; a seq2seq model (``bart``) generates its target, a tagging model with an edit head (``bert+edit_head``,
    or ``edit_head: true`` in ``model_overrides``) learns insertions and deletions, and the ``mlm`` task reads only
    targets."""
    return model_args.task == "correction" and not can_change_length(model_args.variant, **model_args.model_overrides)


def check_data(
    model_args: ModelArguments, data_args: DataArguments, training_args: TrainingArguments, origins: dict[str, str]
) -> None:
    """Read ``train_files`` and ``validation_files`` once before any work: each must exist and hold pairs, of equal
    lengths unless the model is seq2seq (an error names the file and line and which variants take other pairs); and a
    run that evaluates must have validation data."""
    equal = equal_length_targets(model_args)
    check_train_edit_shares(model_args, data_args, origins.get("bench_params", "config"))
    for key, split in (("train_files", "train"), ("validation_files", "validation")):
        for spec in getattr(data_args, key):
            try:
                read_sentences([spec], split, equal)
            except (ValueError, OSError) as err:
                hint = ""
                if equal and "characters, target" in str(err):
                    hint = (
                        f"; the {model_args.variant} variant corrects character by character, so a target must be "
                        "as long as its source (only bart, a seq2seq model, and a variant with an edit head, "
                        "bert+edit_head, train on pairs of other lengths)"
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
    scores = evaluates and model_args.task == "correction" and not is_seq2seq(model_args.variant)
    if scores and "inputs" not in training_args.include_for_metrics:
        raise ValueError(
            f"{origins.get('include_for_metrics', origins.get('eval_strategy', 'config'))}: include_for_metrics="
            f"{training_args.include_for_metrics}: a correction run that evaluates scores its predictions against the "
            "sources, which the Trainer passes only with include_for_metrics: [inputs] (as finetune.yaml sets it)"
        )


def check_train_edit_shares(model_args: ModelArguments, data_args: DataArguments, origin: str = "config") -> None:
    """The benchmark's train and validation splits with missing or redundant characters (``bench_params``'
    ``train_edit_shares``) have targets of other lengths than their sources: only a seq2seq variant (bart) trains on
    them, and a tagging variant with an edit head; another tagging variant, which predicts one character per source
    character, is refused before any work."""
    if not (data_args.use_benchmark and equal_length_targets(model_args)):
        return
    shares = BenchParams(**data_args.bench_params).train_edit_shares
    if BenchParams(train_edit_shares=shares).train_changes_length:
        raise ValueError(
            f"{origin}: bench_params: train_edit_shares={list(shares)} puts missing and redundant characters in the "
            f"training pairs, whose targets then differ in length from their sources; the {model_args.variant} "
            "variant corrects character by character and cannot learn to insert or delete: only bart (seq2seq) and "
            "a variant with an edit head (bert+edit_head) train on them (or give train_edit_shares: [1, 0, 0])"
        )


def check_pretrain_corpus(model_args: ModelArguments, data_args: DataArguments, origin: str = "config") -> None:
    """``pretrain_corpus`` is for the mlm task, with the benchmark (whose held-out sentences it excludes), and names a
    corpus that can be read: an installed one of ``CORPORA`` (else the error names the pip command), an existing text
    file or folder (not a file of sentence pairs), or ``datasets:PATH``."""
    corpus = data_args.pretrain_corpus
    if corpus is None:
        return
    if model_args.task == "correction":
        raise ValueError(
            f"{origin}: pretrain_corpus={corpus} is the text of the mlm and sides tasks; task=correction trains "
            "on pairs: drop pretrain_corpus or set task: mlm"
        )
    if not data_args.use_benchmark:
        raise ValueError(
            f"{origin}: pretrain_corpus={corpus} excludes the benchmark's validation and test sentences "
            "and needs the benchmark: set use_benchmark: true"
        )
    try:
        if corpus in TEXT_SOURCES or corpus in MIXES:
            check_installed(corpus)
        elif not corpus.startswith("datasets:"):
            if not Path(corpus).exists():
                raise FileNotFoundError(
                    f"{corpus} is neither a file or folder nor a corpus name ({', '.join(CORPORA)})"
                )
            if Path(corpus).is_file():
                check_not_sentence_pairs(corpus)
    except (ImportError, OSError, ValueError) as err:
        raise type(err)(f"{origin}: pretrain_corpus: {err}") from None


# ---- the shipped variant configs -----------------------------------------------------------------------------------

VARIANT_CONFIGS = "variants"  # the folder of trainer_configs/ that holds one training config per variant


def variant_config(variant: str) -> str:
    """The text of the shipped training config of ``variant`` (``trainer_configs/variants/NAME.yaml``, written by
    :func:`write_variant_configs`): the variant and its output folder over ``finetune.yaml`` (the `cpu` preset's
    fine-tuning stage); a seq2seq variant adds the preset's BART fields."""
    name = variant_file_name(variant)
    lines = [
        "# Written from csc_hf.modeling.VARIANTS by csc_hf.training.config.write_variant_configs.",
        "base: ../finetune.yaml",
        f"variant: {variant}",
        f"output_dir: {RUNS_DIR}/{VARIANT_CONFIGS}/{name}",
    ]
    if is_seq2seq(variant):
        bart = yaml.safe_load(resources.preset_path("cpu").read_text(encoding="utf-8"))["bart"]
        lines.append(f"model_overrides: {yaml.safe_dump(bart, default_flow_style=True).strip()}")
    return "\n".join(lines) + "\n"


def write_variant_configs(folder: str | Path | None = None) -> list[Path]:
    """Write :func:`variant_config` of every variant of ``csc_hf.modeling.VARIANTS`` to ``folder`` (default: the
    shipped ``trainer_configs/variants``), removing configs of variants no longer in the table; returns the paths."""
    from ..modeling import VARIANTS

    folder = Path(folder) if folder else resources.shipped_dir("trainer_configs") / VARIANT_CONFIGS
    written = [
        write_atomic(folder / f"{variant_file_name(v)}.yaml", variant_config(v), make_parents=True) for v in VARIANTS
    ]
    for stale in set(folder.glob("*.yaml")) - set(written):
        stale.unlink()
    return written
