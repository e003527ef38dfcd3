"""A training run: the model, the Trainer with csc_hf's callbacks, resuming from the last complete checkpoint, and the
saved model folder (with ``csc_training.json``, the record of how it was trained)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import (
    BertConfig,
    BertForMaskedLM,
    Trainer,
    TrainerCallback,
    TrainingArguments,
    set_seed,
)
from transformers.trainer_callback import PrinterCallback, ProgressCallback

from ..files import honour_umask
from ..hardware import cpu_has_bf16
from ..logging import get_logger
from ..model_folder import weights_problem
from ..modeling import (
    CSCTokenizer,
    SparseBertForMaskedLM,
    build_model,
    build_side_pretraining,
    is_seq2seq,
    use_training_kernels,
)
from ..run_layout import CHECKPOINT, TRAINER_STATE, TRAINING_RECORD
from ..scoring import make_compute_metrics, preprocess_logits_for_metrics
from .arguments import DataArguments, ModelArguments
from .config import check_pretrain_corpus, check_train_edit_shares, equal_length_targets, trains_on_cpu
from .data import CorrectionCollator, MaskedLMCollator, encode_sentences, training_data, training_tokenizer

logger = get_logger(__name__)
ELAPSED = "elapsed_seconds.json"  # in a checkpoint: the seconds of training up to it, over every piece of the run
EPOCH_STATE = "epoch_rng_state_{}.pth"  # in a checkpoint: the random state its epoch draws its order from, per process
KILL_ENV = "CSC_HF_KILL_AFTER_SAVE"  # tests of the resume: a step whose checkpoint, once saved, ends the process


def train(model_args: ModelArguments, data_args: DataArguments, training_args: TrainingArguments) -> Path:
    """Train as configured; save the model and tokenizer to ``output_dir`` and return it. A run whose output folder
    holds a checkpoint resumes from the last one."""
    out = Path(training_args.output_dir)
    check_pretrain_corpus(model_args, data_args)
    if model_args.task == "sides" and not model_args.init_from:
        raise ValueError("task=sides needs init_from: the masked-LM checkpoint the side encoders learn over")
    check_train_edit_shares(model_args, data_args)
    set_seed(training_args.seed)  # before the model is built: its initialisation is part of the run
    train_set, eval_set, pair_chars = training_data(data_args, equal_length_targets(model_args))
    tokenizer = training_tokenizer(model_args, data_args, train_set, pair_chars)
    model, encode, collator, extra_args = _task(model_args, data_args, training_args.seed, tokenizer)
    use_training_kernels(model, model_args.attn_implementation, model_args.fast_dropout)
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
    callbacks = _callbacks(model_args.save_every_seconds)
    if model_args.task == "mlm" and eval_set and training_args.eval_strategy != "no":  # only evaluations report it
        plateau = unigram_cross_entropy(train_set["input_ids"], eval_set["input_ids"], tokenizer.all_special_ids)
        callbacks.append(UnigramPlateau(plateau))
    trainer = CSCTrainer(
        model=model,
        args=training_args,
        train_dataset=train_set,
        eval_dataset=eval_set or None,
        data_collator=collator,
        processing_class=tokenizer,
        callbacks=callbacks,
        **extra_args,
    )
    _log_to_logger(trainer)
    last = last_complete_checkpoint(out, remove_incomplete=trainer.is_world_process_zero()) if out.is_dir() else None
    if start := training_args.resume_from_checkpoint or last:
        logger.info("resuming from %s", start)
    trainer.train(resume_from_checkpoint=start)
    trainer.save_model(str(out))
    if trainer.is_world_process_zero():
        honour_umask(out.glob("*.safetensors"))
        tokenizer.save_pretrained(str(out))
        record = {
            "task": model_args.task,
            "variant": model_args.variant,
            "seed": training_args.seed,
            "init_from": model_args.init_from,
            "init_sides_from": model_args.init_sides_from,
            "precision": precision,
            # the bytes of a seed's training depend on these too (CPU kernels reduce in a thread-dependent order)
            "torch_threads": torch.get_num_threads(),
            "processes": training_args.world_size,
            "use_benchmark": data_args.use_benchmark,
            "bench_params": data_args.bench_params,
            "pretrain_corpus": data_args.pretrain_corpus,
            "train_files": data_args.train_files,
            "validation_files": data_args.validation_files,
            "max_train_samples": data_args.max_train_samples,
            "log_history": trainer.state.log_history,
            # what the pieces before this one took, when it resumed from a checkpoint (TrainingClock)
            "earlier_seconds": next(c.earlier for c in callbacks if isinstance(c, TrainingClock)),
        }
        (out / TRAINING_RECORD).write_text(json.dumps(record, indent=1, default=str) + "\n", encoding="utf-8")
    return out


def _task(model_args: ModelArguments, data_args: DataArguments, seed: int, tokenizer: CSCTokenizer) -> tuple:
    """What the task trains: ``(model, encode, collator, CSCTrainer arguments: its metrics, and for masked fine-tuning
    the evaluations' collator)`` — a masked LM over the tokenizer's vocabulary (``mlm``), the side encoders of
    ``variant``'s sources over the masked LM ``init_from`` (``sides``; evaluated by its loss), or a model of
    ``variant`` (``correction``; a seq2seq one is evaluated by its loss alone)."""
    if model_args.task in ("mlm", "sides"):
        if model_args.task == "mlm":
            model = _mlm_model(model_args, tokenizer, data_args.max_length)
            metrics = {
                "compute_metrics": masked_lm_accuracy,
                "preprocess_logits_for_metrics": preprocess_logits_for_metrics,
            }
        else:  # the side encoders over the frozen masked LM: evaluated by their loss
            model = build_side_pretraining(
                model_args.variant,
                tokenizer,
                model_args.init_from,
                fonts=model_args.fonts,
                **model_args.model_overrides,
            )
            metrics = {}

        def encode(batch):
            return tokenizer(batch["target"], truncation=True, max_length=data_args.max_length)

        collator = MaskedLMCollator(
            tokenizer,
            seed,
            mlm_probability=data_args.mlm_probability,
            mask_replace_prob=data_args.mask_replace_prob,
            random_replace_prob=data_args.random_replace_prob,
        )
        return model, encode, collator, metrics
    model = build_model(
        model_args.variant,
        tokenizer,
        init_from=model_args.init_from,
        init_sides_from=model_args.init_sides_from,
        fonts=model_args.fonts,
        **model_args.model_overrides,
    )
    seq2seq = is_seq2seq(model_args.variant)
    if seq2seq:  # BART's loss is the mean over its own labels: not one the Trainer may take as normalised by
        model.accepts_loss_kwargs = False  # num_items_in_batch (it would skip the division by accumulated steps)
    edits = not seq2seq and model.config.edit_head  # the edit head's targets from each pair's alignment

    def encode(batch):
        return encode_sentences(tokenizer, batch["source"], batch["target"], data_args.max_length, seq2seq, edits)

    collator = CorrectionCollator(tokenizer, 0.0 if seq2seq else data_args.mask_rate, seed)
    metrics = (
        {}
        if seq2seq
        else {"compute_metrics": make_compute_metrics(), "preprocess_logits_for_metrics": preprocess_logits_for_metrics}
    )
    if collator.mask_rate > 0:  # the validation sentences are scored as they are, without the training's [MASK]s
        metrics["eval_collator"] = CorrectionCollator(tokenizer, 0.0, seed)
    return model, encode, collator, metrics


class CSCTrainer(Trainer):
    """A Trainer whose evaluations may collate otherwise than its training steps (``eval_collator``): masked
    fine-tuning replaces correct characters by ``[MASK]`` in the training batches only, and the validation scores
    read the validation sentences as they are."""

    def __init__(self, *args: Any, eval_collator: Any = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.eval_collator = eval_collator

    def get_eval_dataloader(self, eval_dataset: Any = None) -> Any:
        if self.eval_collator is None:
            return super().get_eval_dataloader(eval_dataset)
        training, self.data_collator = self.data_collator, self.eval_collator
        try:
            return super().get_eval_dataloader(eval_dataset)
        finally:
            self.data_collator = training


def precision_of(training_args: TrainingArguments) -> str:
    """The precision a Trainer with ``training_args`` computes in: bf16, fp16 (autocast) or fp32."""
    return "bf16" if training_args.bf16 else "fp16" if training_args.fp16 else "fp32"


def masked_lm_accuracy(prediction: Any) -> dict[str, float]:
    """Trainer metric of the mlm task: top-1 accuracy over the masked positions (labels other than -100), next to
    the evaluation loss; the predictions are argmax ids (``preprocess_logits_for_metrics``)."""
    predicted, labels = np.asarray(prediction.predictions), np.asarray(prediction.label_ids)
    masked = labels != -100
    return {"accuracy": float((predicted[masked] == labels[masked]).mean()) if masked.any() else 0.0}


def _mlm_model(model_args: ModelArguments, tokenizer: CSCTokenizer, max_length: int) -> BertForMaskedLM:
    """The masked LM to pretrain: a `SparseBertForMaskedLM` (the output layer only at the masked positions; its
    checkpoints are plain `BertForMaskedLM`'s), new or from ``init_from`` (any BertForMaskedLM checkpoint)."""
    if model_args.init_from:
        return SparseBertForMaskedLM.from_pretrained(model_args.init_from, **model_args.model_overrides)
    config = BertConfig(
        vocab_size=len(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
        max_position_embeddings=max(512, max_length),
        **model_args.model_overrides,
    )
    return SparseBertForMaskedLM(config)


def checkpoint_problem(checkpoint: Path) -> str | None:
    """What makes a ``checkpoint-N`` folder incomplete (a run killed while saving it), or None: an empty file, a
    ``trainer_state.json`` that is missing or does not parse, model weights that are missing or do not parse."""
    try:
        empty = sorted(p.name for p in checkpoint.iterdir() if p.is_file() and p.stat().st_size == 0)
        if empty:
            return f"empty files {empty}"
        state = checkpoint / TRAINER_STATE
        if not state.is_file():
            return f"no {TRAINER_STATE}"
        json.loads(state.read_text(encoding="utf-8"))
        if any(checkpoint.glob("*.safetensors")):
            return weights_problem(checkpoint)
        if not (checkpoint / "pytorch_model.bin").is_file():
            return "no model weights"
    except Exception as err:  # a half-written file fails in its own way (JSON, safetensors header, OS)
        return f"{type(err).__name__}: {err}"
    return None


def last_complete_checkpoint(folder: Path, remove_incomplete: bool = True) -> str | None:
    """The newest complete ``checkpoint-N`` in ``folder`` (see :func:`checkpoint_problem`), or None. Newer incomplete
    ones are logged and, with ``remove_incomplete``, removed (a later save of the same step starts clean)."""
    numbered = [p for p in folder.glob(f"{CHECKPOINT}*") if p.is_dir() and p.name.split("-", 1)[1].isdigit()]
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


class ShareCheckpoints(TrainerCallback):
    """A saved checkpoint's weights get the umask's mode (safetensors writes them 0600; see
    :func:`csc_hf.files.honour_umask`)."""

    def on_save(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            honour_umask(_checkpoint_folder(args, state).glob("*.safetensors"))


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


class EpochOrder(TrainerCallback):
    """A checkpoint keeps the random state its epoch's order of batches is drawn from, and a run resumed from it
    begins that epoch with that state.

    `group_by_length`'s sampler draws each epoch's order of batches from the global random state when the epoch begins,
    and the Trainer's checkpoint keeps the state of its own step only: a run resumed within a later epoch would draw
    another order, and train another model, than the uninterrupted run (the first epoch's order comes from the seed).
    A checkpoint that ends an epoch keeps the state of its step, which the next epoch draws from; any other keeps the
    state its epoch began with. The Trainer still restores the checkpoint's own state before the first step. Place it
    before any callback that ends the process on a save. Each process keeps its own (``EPOCH_STATE`` with its
    index)."""

    def __init__(self):
        self.begun: torch.Tensor | None = None

    def on_epoch_begin(self, args, state, control, **kwargs):
        if self.begun is None and state.global_step > 0:  # the first epoch of a resumed run
            saved = _checkpoint_folder(args, state) / EPOCH_STATE.format(args.process_index)
            if saved.is_file():
                torch.set_rng_state(torch.load(saved))
            elif not _ends_epoch(state):  # at an epoch's end the Trainer restores the state the epoch draws from
                logger.warning(
                    "%s does not exist (a checkpoint of an older csc_hf, or one resumed from elsewhere): the resumed "
                    "epoch's batches may come in another order than in the uninterrupted run",
                    saved,
                )
        self.begun = torch.get_rng_state()

    def on_save(self, args, state, control, **kwargs):
        kept = torch.get_rng_state() if _ends_epoch(state) else self.begun
        torch.save(kept, _checkpoint_folder(args, state) / EPOCH_STATE.format(args.process_index))


def _ends_epoch(state) -> bool:
    """Whether the state's step is its epoch's last (the Trainer counts ``epoch`` as the epochs done plus the share of
    the current one, a whole number exactly at an epoch's end)."""
    return float(state.epoch or 0).is_integer()


class TrainingClock(TrainerCallback):
    """The seconds a training has taken, over every piece of an interrupted run: each checkpoint keeps the seconds up to
    it (``ELAPSED``) and a run resumed from it counts on from there; ``earlier`` is what the pieces before this one took
    up to the checkpoint it resumed from. The time between that checkpoint and the interruption is not counted: the
    resumed run trains those steps again."""

    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self.earlier, self.started = 0.0, clock()

    def on_train_begin(self, args, state, control, **kwargs):
        self.started = self.clock()
        saved = _checkpoint_folder(args, state) / ELAPSED
        if state.global_step > 0 and saved.is_file():  # resumed from a checkpoint
            self.earlier = float(json.loads(saved.read_text(encoding="utf-8"))["seconds"])

    @property
    def seconds(self) -> float:
        return self.earlier + self.clock() - self.started

    def on_save(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            text = json.dumps({"seconds": round(self.seconds, 1)}) + "\n"
            (_checkpoint_folder(args, state) / ELAPSED).write_text(text, encoding="utf-8")


def _checkpoint_folder(args, state) -> Path:
    """The folder of the Trainer's checkpoint at the state's step."""
    return Path(args.output_dir) / f"{CHECKPOINT}{state.global_step}"


class SaveEvery(TrainerCallback):
    """Ask the Trainer for a checkpoint once ``seconds`` of training have passed since the last one (or since the
    start of training), on top of its own ``save_strategy``: ``save_steps`` alone sizes what an interruption loses in
    steps, and a step's time varies tenfold between a quiet AVX-512 CPU and a busy AVX2 one. A run that saves no
    checkpoints (``save_strategy: no``) stays so. With several processes the main process's clock decides for all (a
    checkpoint is a collective operation: processes that disagree would wait for each other forever)."""

    def __init__(self, seconds: float, clock=time.monotonic):
        if not seconds > 0:
            raise ValueError(f"SaveEvery: seconds={seconds} must be positive")
        self.seconds, self.clock = seconds, clock
        self.last = clock()

    def on_train_begin(self, args, state, control, **kwargs):
        self.last = self.clock()

    def on_step_end(self, args, state, control, **kwargs):
        if args.save_strategy == "no":
            return control
        due = self.clock() - self.last >= self.seconds
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            flag = torch.tensor([int(due)], device=args.device)  # NCCL takes tensors on the process's GPU only
            torch.distributed.broadcast(flag, src=0)
            due = bool(flag.item())
        if due:
            control.should_save = True
        return control

    def on_save(self, args, state, control, **kwargs):
        self.last = self.clock()


def unigram_cross_entropy(train_ids: list[list[int]], eval_ids: list[list[int]], special_ids: list[int]) -> float:
    """The mean loss (nats) on the validation tokens of a masked LM that predicts every masked token from the
    training text's token frequencies alone (add-one smoothed), special tokens left out: where a masked LM that has not
    learned to read the context stays."""
    size = 1 + max(max((max(row) for row in ids if row), default=0) for ids in (train_ids, eval_ids))
    special = np.zeros(size, dtype=bool)
    special[[i for i in special_ids if i < size]] = True
    counts = np.bincount(np.concatenate([np.asarray(row) for row in train_ids]), minlength=size) + 1.0
    counts[special] = 0.0
    tokens = np.concatenate([np.asarray(row) for row in eval_ids])
    tokens = tokens[~special[tokens]]
    return float(-np.log(counts[tokens] / counts.sum()).mean()) if len(tokens) else float("nan")


class UnigramPlateau(TrainerCallback):
    """A warning when a masked LM's validation loss is still within ``margin`` nats of ``unigram_loss``
    (:func:`unigram_cross_entropy`): it predicts character frequencies, not characters from their context, and every
    model fine-tuned from it starts from nothing. A learning rate too high for the encoder's size keeps a BERT there
    (the `cpu` recipe's 1e-3 with a 6-layer, hidden-384 encoder did for 6,000 steps)."""

    def __init__(self, unigram_loss: float, margin: float = 0.2):
        self.unigram_loss, self.margin = unigram_loss, margin

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        loss = (metrics or {}).get("eval_loss")
        if state.is_world_process_zero and loss is not None and loss > self.unigram_loss - self.margin:
            logger.warning(
                "step %d: the masked LM's validation loss %.3f is within %.1f of %.3f, the loss of predicting each "
                "character from its frequency alone: it has not learned to read the context (a learning rate too high "
                "for the encoder's size keeps it there: lower learning_rate or raise warmup_steps)",
                state.global_step,
                loss,
                self.margin,
                self.unigram_loss,
            )


def _callbacks(save_every_seconds: float = 0.0) -> list[TrainerCallback]:
    """csc_hf's callbacks of a run: its log lines, shared checkpoint files, each epoch's random state and the seconds
    trained so far in its checkpoints, checkpoints by time every ``save_every_seconds`` (0: by steps alone) and the
    tests' kill after a save (last: the checkpoint is whole by then)."""
    step = os.environ.get(KILL_ENV, "")
    if step and not step.isdigit():
        raise ValueError(f"{KILL_ENV}={step!r}: expected a step number")
    by_time = [SaveEvery(save_every_seconds)] if save_every_seconds > 0 else []
    return [
        LogToLogger(),
        ShareCheckpoints(),
        EpochOrder(),
        TrainingClock(),
        *by_time,
        *([KillAfterSave(int(step))] if step else []),
    ]


def _log_to_logger(trainer: Trainer) -> None:
    """Route the Trainer's log entries through ``LogToLogger``: without printer, and a progress bar that only shows
    progress, on a terminal only (a log file would keep each redraw of it: the step lines say as much)."""
    trainer.remove_callback(PrinterCallback)
    if any(isinstance(c, ProgressCallback) for c in trainer.callback_handler.callbacks):
        trainer.remove_callback(ProgressCallback)
        if sys.stderr.isatty():
            trainer.add_callback(QuietProgress)
