"""How long a study will take here: a few steps of each of its stages timed on this machine, now, at the study's own
sizes and precision, times the work its plan holds.

    probe = StepProbe.measure(preset.model, vocab_size=4467, variants=preset.variants, bart=preset.bart,
                              pretrain_batch=64, finetune_batch=32, eval_batch=64)
    logger.info("%s", probe.summary())              # the CPU, its compute path (bf16 or fp32), the step times
    probe.stage_seconds(6000, {"bert": 2400, "bart": 2400}, sentences=72100)   # seconds per kind of stage

With ``sides`` (side sources, as a preset's ``pretrain_sides`` stage trains them), it also times a step of the
side encoders' pretraining (`csc_hf.modeling.SidePretrainingModel`) over a masked LM of the same sizes.

With ``texts`` (the study passes its training sentences), the training steps run on batches of those sentences as a
length-grouped sampler makes them, from its shortest batch to its longest, each timed once after a warm-up step and
weighted to stand for every width (`_text_batches`), over a vocabulary of their characters (the side encoders' inputs
are those characters' pinyin, strokes and glyphs): a step's cost grows faster than its width, so batches of the mean
width are cheaper than the steps a training runs. Without them, and for the evaluation, the batches are random
characters drawn by Zipf's law (as many distinct characters per batch as running text has: the
side encoders run once per distinct character) at the benchmark's mean length. A training step is the
Trainer's (forward under autocast where the precision resolves to bf16, backward, clipping, fused AdamW), an
evaluated sentence costs what `Corrector.correct` takes for it (generation for a seq2seq variant).
`hardware.torch_threads` decides the threads unless ``threads`` is given. A probe costs a few seconds per variant;
it is a forecast, which the progress line replaces with the times of finished stages as they come.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from transformers import BertConfig

from . import hardware
from .modeling import (
    CSCConfig,
    CSCTokenizer,
    SidePretrainingModel,
    SparseBertForMaskedLM,
    bart_fields,
    build_char_knowledge,
    build_model,
    is_seq2seq,
    use_training_kernels,
)
from .precision import resolved
from .training.arguments import DataArguments

MEAN_TOKENS = 43
"""Tokens of a mean sentence of the benchmark ([CLS], 41 characters, [SEP]): the probe's batches."""


def _ids(batch: int, vocab_size: int, generator: torch.Generator) -> torch.Tensor:
    """Ids 5.. (after the special tokens) drawn by Zipf's law over the vocabulary, as characters occur in text."""
    weights = 1.0 / torch.arange(1, vocab_size - 4, dtype=torch.float64)
    return 5 + torch.multinomial(weights, batch * MEAN_TOKENS, replacement=True, generator=generator).view(batch, -1)


def bart_sizes(model: Mapping, bart: Mapping) -> dict:
    """BartConfig fields of the study's BART over an encoder of BertConfig fields `model` (the BART that
    `csc_hf.modeling.bart_from_bert` warm-starts from the pretrained encoder: `bart_fields`), then `bart`'s own."""
    return {**bart_fields(BertConfig(**model)), **bart}


GROUP = 50
"""Batches a length-grouped sampler sorts together (transformers' ``LengthGroupedSampler``'s megabatch)."""


@dataclass
class Batches:
    """Training batches to time and the weight of each in the mean step (weights summing to 1)."""

    batches: list[dict]
    weights: list[float]


def spread(count: int, group: int = GROUP) -> list[int]:
    """``count`` evenly spaced ranks among ``group`` batches sorted by width, the first and the last among them."""
    return [group // 2] if count == 1 else sorted({round(i * (group - 1) / (count - 1)) for i in range(count)})


def interpolation_weights(widths: Sequence[int], kept: Sequence[int]) -> list[float]:
    """The weight of each of the batches ``kept`` (ranks in ``widths``, sorted) in the mean step over all ``widths``:
    each width is shared between the two kept widths around it by linear interpolation (extrapolation beyond the
    widest kept), so that a step's seconds that were linear in its width would give that mean exactly."""
    edges, weights = [widths[k] for k in kept], [0.0] * len(kept)
    for width in widths:
        right = next((i for i, edge in enumerate(edges) if edge >= width), len(edges) - 1)
        left = max(right - 1, 0)
        share = 1.0 if edges[right] == edges[left] else (width - edges[left]) / (edges[right] - edges[left])
        weights[right] += share / len(widths)
        weights[left] += (1.0 - share) / len(widths)
    return weights


def _text_batches(
    tokenizer: CSCTokenizer,
    texts: Sequence[str],
    batch: int,
    count: int,
    generator: torch.Generator,
    masked: float | None,
) -> Batches:
    """``count`` padded training batches of ``texts`` as a length-grouped sampler makes them, weighted to stand for
    all it makes: `GROUP` x ``batch`` texts drawn at random, sorted by length and cut in that order into `GROUP`
    batches, of which ``count`` at evenly spaced ranks (`spread`) are timed and weighted by `interpolation_weights`.
    A step's cost grows faster than its width, so the few longest batches weigh more than their share of the
    characters. Labels on every character (a correction's: ``masked`` None) or on a ``masked`` share of them (a
    masked LM's)."""
    picks = torch.randint(len(texts), (GROUP * batch,), generator=generator).tolist()
    drawn = sorted((texts[i] for i in picks), key=len)
    chunks = [drawn[k * batch : (k + 1) * batch] for k in range(GROUP)]
    kept = spread(count)
    batches = []
    for k in kept:
        encoded = tokenizer(chunks[k], padding=True, truncation=True, max_length=tokenizer.model_max_length)
        ids, mask = torch.tensor(encoded["input_ids"]), torch.tensor(encoded["attention_mask"])
        chosen = mask.bool() if masked is None else mask.bool() & (torch.rand(ids.shape, generator=generator) < masked)
        batches.append({"input_ids": ids, "attention_mask": mask, "labels": torch.where(chosen, ids, -100)})
    return Batches(batches, interpolation_weights([len(chunk[-1]) for chunk in chunks], kept))


def _train_seconds(model: torch.nn.Module, batches: Batches, bf16: bool, clock) -> float:
    """Seconds of a Trainer-like step: each of ``batches`` timed once after a warm-up step on the middle one,
    weighted."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    model.train()
    times = []
    for batch in [batches.batches[len(batches.batches) // 2], *batches.batches]:
        start = clock()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = model(**batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        times.append(clock() - start)
    return sum(weight * seconds for weight, seconds in zip(batches.weights, times[1:]))


def _correct_seconds(
    model: torch.nn.Module,
    tokenizer: CSCTokenizer,
    texts: list[str],
    precision: str,
    passes: int,
    clock,
    bf16_weights: bool = False,
) -> float:
    """Median seconds of `Corrector.correct` over `texts` (the evaluation's path: forward pass or generation, and
    decoding) after one warm-up pass; a tagging model keeps nearly every character (large keep_bias), as a trained
    model does. `bf16_weights`: the Corrector's (it converts `model` in place)."""
    from .pipeline import Corrector

    options = {} if is_seq2seq_model(model) else {"keep_bias": 8.0}
    corrector = Corrector(
        model.eval(), tokenizer, batch_size=len(texts), precision=precision, bf16_weights=bf16_weights, **options
    )
    times = []
    for _ in range(passes + 1):
        start = clock()
        corrector.correct(texts)
        times.append(clock() - start)
    return statistics.median(times[1:])


TIMED_KEYS = ("attn_implementation", "fast_dropout", "mlm_probability")
"""The training keys (a preset's ``pretrain:`` and ``finetune:`` blocks) that `StepProbe.measure` applies to the steps
it times; it reads no other (the steps' counts, the learning rate, the checkpoints; the pretraining is timed in the
fine-tuning's precision and cut, which the study passes apart), so its step times serve any recipe that differs from
the one probed only in keys it does not read (`timed_keys`)."""


def timed_keys(keys: Mapping[str, Any] | None) -> dict[str, Any]:
    """The `TIMED_KEYS` of the training keys ``keys``: all that `StepProbe.measure` reads of them."""
    return {key: keys[key] for key in TIMED_KEYS if key in (keys or {})}


def _as_trained(model: torch.nn.Module, keys: Mapping[str, Any] | None) -> torch.nn.Module:
    """``model`` (changed in place) as the training keys ``keys`` train it: their attention kernel and dropout."""
    keys = keys or {}
    return use_training_kernels(model, keys.get("attn_implementation"), bool(keys.get("fast_dropout")))


def is_seq2seq_model(model: torch.nn.Module) -> bool:
    return bool(getattr(model.config, "is_encoder_decoder", False))


@dataclass
class StepProbe:
    """Seconds per pretraining step, per fine-tuning step of each variant and per evaluated sentence of each
    variant, measured here with `threads` torch threads in `precision` (``bf16`` or ``fp32``) on `path`
    (`hardware.compute_path`)."""

    path: str
    precision: str
    threads: int
    pretrain_step: float
    finetune_step: dict[str, float] = field(default_factory=dict)
    sentence: dict[str, float] = field(default_factory=dict)
    sides_step: float | None = None

    @classmethod
    def measure(
        cls,
        model: Mapping,
        vocab_size: int | None,
        variants: Iterable[str],
        precision: str = "auto",
        bf16_weights: bool = False,
        bart: Mapping | None = None,
        pretrain_batch: int = 64,
        finetune_batch: int = 32,
        eval_batch: int = 64,
        sides: Sequence[str] = (),
        sides_batch: int = 64,
        steps: int = 2,
        passes: int = 2,
        threads: int | None = None,
        pretrain_keys: Mapping[str, Any] | None = None,
        finetune_keys: Mapping[str, Any] | None = None,
        texts: Sequence[str] | None = None,
        clock=time.perf_counter,
    ) -> StepProbe:
        """Time `steps` training steps of each kind (after a warm-up step) and `passes` evaluation passes of each
        variant (their median, after a warm-up pass) with the encoder sizes `model` (BertConfig
        fields; `bart`: the seq2seq variant's BartConfig fields over them, `bart_sizes`) over a `vocab_size`
        vocabulary of made-up characters, or, with `texts` instead (the training sentences, cut as the training cuts
        them), over their characters and the training steps on batches of them (`_text_batches`).
        `pretrain_keys` / `finetune_keys`: the training keys of the pretraining and of the fine-tunings (a preset's
        `pretrain:` and `finetune:` blocks), of which only the `TIMED_KEYS` are read: the attention kernel and dropout
        of the models the steps train, and the masked share of the pretraining's batches; `bf16_weights`: the
        evaluations', as `csc_hf.pipeline.Corrector` takes it.
        `sides`: the side sources whose pretraining step (batches of `sides_batch`) is timed too (`sides_step`).
        `clock`: wall time (what a run here and now takes); `time.process_time` with one thread gives what the steps
        cost a core of their own."""
        if (vocab_size is None) == (texts is None):
            raise ValueError("StepProbe.measure takes one of vocab_size (made-up characters) and texts (sentences)")
        used, before = threads or hardware.torch_threads(), torch.get_num_threads()
        torch.set_num_threads(used)
        try:
            bf16 = resolved(precision) == "bf16"
            generator = torch.Generator().manual_seed(0)
            if texts is None:
                tokenizer = CSCTokenizer.from_vocab(chr(0x4E00 + i) for i in range(vocab_size - 5))
            else:
                tokenizer = CSCTokenizer.from_texts(texts)
            vocab_size = len(tokenizer)

            def batches(batch: int, masked: float | None) -> Batches:
                if texts is not None:
                    return _text_batches(tokenizer, texts, batch, steps, generator, masked)
                ids = _ids(batch, vocab_size, generator)
                labels = (
                    ids
                    if masked is None
                    else torch.where(torch.rand(ids.shape, generator=generator) < masked, ids, -100)
                )
                return Batches([{"input_ids": ids, "labels": labels}] * steps, [1.0 / steps] * steps)

            mlm = _as_trained(SparseBertForMaskedLM(BertConfig(vocab_size=vocab_size, **model)), pretrain_keys)
            share = (pretrain_keys or {}).get("mlm_probability", DataArguments.mlm_probability)  # masked characters
            pretrain = _train_seconds(mlm, batches(pretrain_batch, share), bf16, clock)
            sides_step = None
            if sides:
                config = CSCConfig(vocab_size=vocab_size, sources=list(sides), **model)
                side_model = SidePretrainingModel(config, build_char_knowledge(tokenizer.get_vocab(), config))
                drawn = batches(sides_batch, share)
                masked = [
                    {**b, "input_ids": torch.where(b["labels"] == -100, b["input_ids"], tokenizer.mask_token_id)}
                    for b in drawn.batches
                ]
                sides_step = _train_seconds(side_model, Batches(masked, drawn.weights), bf16, clock)
            finetune_batches = batches(finetune_batch, None)
            eval_texts = [
                tokenizer.decode(row, skip_special_tokens=True).replace(" ", "")
                for row in _ids(eval_batch, vocab_size, generator)[:, 2:].tolist()
            ]
            finetune, sentence = {}, {}
            for variant in dict.fromkeys(variants):
                seq2seq = is_seq2seq(variant)
                built = build_model(variant, tokenizer, **(bart_sizes(model, bart or {}) if seq2seq else model))
                default_attention = built.config._attn_implementation
                trained = _as_trained(built, finetune_keys)
                finetune[variant] = _train_seconds(trained, finetune_batches, bf16, clock)
                built.set_attn_implementation(default_attention)  # inference: as a saved model loads
                seconds = _correct_seconds(built, tokenizer, eval_texts, precision, passes, clock, bf16_weights)
                sentence[variant] = seconds / eval_batch
            precision_used = "bf16" if bf16 else "fp32"
            return cls(hardware.compute_path(), precision_used, used, pretrain, finetune, sentence, sides_step)
        finally:
            torch.set_num_threads(before)

    def stage_seconds(
        self, pretrain_steps: int, finetune_steps: Mapping[str, int], sentences: int, sides_steps: int = 0
    ) -> dict[str, float]:
        """Forecast seconds of the study's stages, keyed as its progress names their kinds: ``pretrain``,
        ``pretrain-sides`` (`sides_steps` steps, where the probe timed one), ``train VARIANT`` (one fine-tuning of
        `finetune_steps[VARIANT]` steps) and ``evaluate VARIANT`` (an evaluation of `sentences` sentences)."""
        seconds = {"pretrain": pretrain_steps * self.pretrain_step}
        if sides_steps and self.sides_step is not None:
            seconds["pretrain-sides"] = sides_steps * self.sides_step
        for variant, steps in finetune_steps.items():
            seconds[f"train {variant}"] = steps * self.finetune_step[variant]
            seconds[f"evaluate {variant}"] = sentences * self.sentence[variant]
        return seconds

    def summary(self) -> str:
        steps = ", ".join(f"{v} {s:.2f}" for v, s in self.finetune_step.items())
        sentences = ", ".join(f"{v} {1000 * s:.1f}" for v, s in self.sentence.items())
        sides = "" if self.sides_step is None else f"; side encoders' pretraining {self.sides_step:.2f} s/step"
        return (
            f"{hardware.describe()}; {self.precision} with {self.threads} torch thread(s): pretraining "
            f"{self.pretrain_step:.2f} s/step{sides}; fine-tuning s/step: {steps}; evaluation ms/sentence: {sentences}"
        )


__all__ = ["MEAN_TOKENS", "TIMED_KEYS", "StepProbe", "bart_sizes", "timed_keys"]
