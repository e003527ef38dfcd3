"""How long a study will take here: a few steps of each of its stages timed on this machine, now, at the study's own
sizes and precision, times the work the plan holds.

    probe = StepProbe.measure(preset.model, vocab_size=4467, variants=preset.variants, precision="auto",
                              pretrain_batch=64, finetune_batch=32, eval_batch=64)
    logger.info("%s", probe.summary())              # the CPU, its compute path (bf16 or fp32), the step times
    probe.stage_seconds({"pretrain": 6000}, {"bert": 2400, ...}, sentences=76000)   # seconds per progress kind

Timed on random ids of the benchmark's mean length, with the Trainer's step (forward under autocast where the
precision resolves to bf16, backward, clipping, fused AdamW) and the evaluation's `Corrector.correct`;
`hardware.torch_threads` decides the threads unless ``threads`` is given. A probe costs a few seconds per variant; it is a forecast, and the progress line replaces it
with the times of finished stages as soon as there are some.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import torch
from transformers import BertConfig

from . import hardware
from .modeling import CSCTokenizer, SparseBertForMaskedLM, build_model, is_seq2seq
from .precision import resolved

MEAN_TOKENS = 43
"""Tokens of a mean sentence of the benchmark ([CLS], 41 characters, [SEP]): the probe's batches."""


def _ids(batch: int, vocab_size: int, generator: torch.Generator) -> torch.Tensor:
    return torch.randint(5, vocab_size, (batch, MEAN_TOKENS), generator=generator)


def _train_seconds(model: torch.nn.Module, batch: dict, bf16: bool, steps: int) -> float:
    """Median seconds of a Trainer-like step after one warm-up step."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    model.train()
    times = []
    for _ in range(steps + 1):
        start = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = model(**batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times[1:])


def _correct_seconds(model: torch.nn.Module, tokenizer: CSCTokenizer, texts: list[str], precision: str,
                     passes: int) -> float:
    """Median seconds of `Corrector.correct` over `texts` (the evaluation's path: forward pass and decoding), after
    one warm-up pass; a large keep_bias keeps nearly every character, as a trained model does."""
    from .pipeline import Corrector

    corrector = Corrector(model.eval(), tokenizer, batch_size=len(texts), precision=precision, keep_bias=8.0)
    times = []
    for _ in range(passes + 1):
        start = time.perf_counter()
        corrector.correct(texts)
        times.append(time.perf_counter() - start)
    return statistics.median(times[1:])


@dataclass
class StepProbe:
    """Seconds per pretraining step, per fine-tuning step of each variant and per evaluated sentence, measured
    here with `threads` torch threads in `precision` (``bf16`` or ``fp32``)."""

    path: str
    precision: str
    threads: int
    pretrain_step: float
    finetune_step: dict[str, float] = field(default_factory=dict)
    sentence: float = 0.0

    @classmethod
    def measure(cls, model: Mapping, vocab_size: int, variants: Iterable[str], precision: str = "auto",
                pretrain_batch: int = 64, finetune_batch: int = 32, eval_batch: int = 64, steps: int = 2,
                threads: int | None = None, attention: str | None = None) -> StepProbe:
        """Time `steps` steps of each stage (after a warm-up step) with the encoder sizes `model` (BertConfig
        fields) over a `vocab_size` vocabulary, the training models with `attention` (an attention implementation;
        default: the model's). Seq2seq variants are timed as `bert` (a forecast, not a measure)."""
        used, before = threads or hardware.torch_threads(), torch.get_num_threads()
        torch.set_num_threads(used)
        try:
            bf16 = resolved(precision) == "bf16"
            generator = torch.Generator().manual_seed(0)
            tokenizer = CSCTokenizer.from_vocab(chr(0x4E00 + i) for i in range(vocab_size - 5))
            ids = _ids(pretrain_batch, vocab_size, generator)
            labels = torch.where(torch.rand(ids.shape, generator=generator) < 0.15, ids, -100)
            mlm = SparseBertForMaskedLM(BertConfig(vocab_size=vocab_size, **model))
            if attention:
                mlm.set_attn_implementation(attention)
            pretrain = _train_seconds(mlm, {"input_ids": ids, "labels": labels}, bf16, steps)
            ids = _ids(finetune_batch, vocab_size, generator)
            finetune = {}
            for variant in dict.fromkeys(variants):
                timed = "bert" if is_seq2seq(variant) else variant
                if timed not in finetune:
                    csc = build_model(timed, tokenizer, **model)
                    if attention:
                        csc.set_attn_implementation(attention)
                    finetune[timed] = _train_seconds(csc, {"input_ids": ids, "labels": ids}, bf16, steps)
                finetune[variant] = finetune[timed]
            chars = "".join(tokenizer.convert_ids_to_tokens(range(5, len(tokenizer))))
            texts = ["".join(chars[i] for i in row) for row in _ids(eval_batch, len(chars), generator)[:, 2:].tolist()]
            correct = _correct_seconds(build_model("bert", tokenizer, **model), tokenizer, texts, precision, steps)
            return cls(hardware.compute_path(), "bf16" if bf16 else "fp32", used, pretrain,
                       {v: finetune[v] for v in dict.fromkeys(variants)}, correct / eval_batch)
        finally:
            torch.set_num_threads(before)

    def stage_seconds(self, pretrain_steps: int, finetune_steps: Mapping[str, int], sentences: int) -> dict[str, float]:
        """Forecast seconds of the study's stages: the pretraining, each variant's fine-tuning
        (``train VARIANT``: its steps per model) and an evaluation of `sentences` sentences (``evaluate``)."""
        seconds = {"pretrain": pretrain_steps * self.pretrain_step, "evaluate": sentences * self.sentence}
        for variant, steps in finetune_steps.items():
            seconds[f"train {variant}"] = steps * self.finetune_step[variant]
        return seconds

    def summary(self) -> str:
        steps = ", ".join(f"{v} {s:.2f}" for v, s in self.finetune_step.items())
        return (f"{hardware.describe()}; {self.precision} with {self.threads} torch thread(s): pretraining "
                f"{self.pretrain_step:.2f} s/step, fine-tuning s/step: {steps}; evaluation "
                f"{1000 * self.sentence:.1f} ms/sentence")


__all__ = ["MEAN_TOKENS", "StepProbe"]
