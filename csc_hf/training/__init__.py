"""Trainer glue: one YAML file holds a run (model + data + `TrainingArguments`), read with `HfArgumentParser`.

    python -m csc_hf.train trainer_configs/variants/all_gate.yaml [key=value ...]
    accelerate launch --config_file trainer_configs/accelerate/cpu_2proc.yaml -m csc_hf.train CONFIG.yaml
    csc-bench train CONFIG.yaml

``task: mlm`` pretrains the semantic encoder (a `BertForMaskedLM` over the character vocabulary, trained as
`csc_hf.modeling.SparseBertForMaskedLM`: the output layer only where the loss is) on the training
targets, or on the text of ``pretrain_corpus`` less the benchmark's held-out sentences; ``task: correction``
fine-tunes a model of `csc_hf.modeling.VARIANTS` on the ``train`` config of csc_bench, on real pairs
(``train_files`` / ``validation_files``: a ``wrong<TAB>correct`` TSV, a jsonl with ``source``/``target``, an exported
folder, a `datasets` dataset) or on both (``use_benchmark: false``: the files alone).
``base: FILE`` takes the keys of another YAML (a path relative to this one) under this file's keys: the variant
configs are their variant and output folder over ``trainer_configs/finetune.yaml``. The whole config (every key's
type, the values, the local folders it starts from) is checked before any work. ``precision: auto`` (the default)
trains under bf16 autocast on a CPU with bf16 in hardware and in fp32 elsewhere (`config.precision_keys`).

The package: ``arguments`` (the keys), ``config`` (reading and checking a config), ``data`` (pairs, pretraining text,
tokenizer, batches), ``run`` (the Trainer run and its checkpoints).
"""

from .arguments import ARGUMENTS, TASKS, DataArguments, ModelArguments, keys_help
from .config import check_config, load_config, read_config
from .run import train

__all__ = [
    "ARGUMENTS",
    "TASKS",
    "DataArguments",
    "ModelArguments",
    "check_config",
    "keys_help",
    "load_config",
    "read_config",
    "train",
]
