"""How far each stage of the study runs from what this CPU can compute: its time against its GEMM floor, in one run.

    python bench/bench_limit.py [--rounds 5] [--precision auto] [--levers] [--compile] [--contention] [--profile]
    python bench/bench_limit.py --preset cpu-small --threads 1   # another preset's sizes, as its processes run them
    python bench/bench_limit.py --batch-scaling 16 32 64 128 --threads 1
    python bench/bench_limit.py --isa avx2 ...   # the same with MKL, oneDNN and ATen held to AVX2 (a Zen 3-like ISA)

1. The CPU: its flags that matter (avx2, avx512f, avx512_bf16, amx_bf16, ...), torch's kernel level, threads, load.
2. GEMM throughput (GFLOP/s) at the preset's own shapes (`cpu` unless `--preset` names another: tokens x hidden x
   hidden, x the FFN's width, the output layer over the vocabulary), fp32 and, where the CPU has it, bf16.
3. Each stage of the preset as the study runs it, on the benchmark's real sentences in length-grouped batches
   (the Trainer's `group_by_length`): the pretraining step (masked LM, 64 sentences), the fine-tuning step of `bert`
   and of `all_gate` (32 sentences, masked fine-tuning), the evaluation forward pass and `Corrector.correct` (64
   sentences, sorted by length). A training step is what `Trainer` does per step: forward under autocast, backward,
   gradient clipping, AdamW, the scheduler (the collator is timed apart). Its **GEMM floor** is the time of its
   matrix multiplications alone: every mm / addmm / bmm / convolution the step dispatched (recorded with a
   `TorchDispatchMode`, at its shapes, strides and dtype; attention kernels as their batched products) replayed in
   isolation, in the same run, between the stage's own timings. `x floor` = stage time / floor and `GFLOP/s` = the
   step's GEMM FLOPs / its time, both in CPU time with one torch thread and in wall time with more (`floor_clock`).
4. `--levers`: the speed levers, each against its stage's reference in the same rounds (same batches, alternating).
   `--compile` adds the recipe's step with `torch.compile` of its encoder (minutes of compilation first).
5. `--profile`: where a stage's time goes beyond its floor: each reference step under `torch.profiler`, its self CPU
   time by operator kind (the GEMMs, attention, normalisation, activations, dropout, casts, the optimizer, the rest)
   and the operators that take most of it.
6. `--contention`: a pretraining step with 2 and 1 torch threads (and other OpenMP wait policies), each alone and
   beside a competing CPU-bound process that the script starts, in separate processes.
7. `--batch-scaling 16 32 64 128`: `bert`'s fine-tuning step with the recipe's kernels at each batch size, in CPU
   time per token: whether the time beyond the floor is a cost per operator call (it would shrink with the batch) or
   work per element.

Every figure is the median over rounds that visit every configuration in turn, so load from other processes hits all
alike; record `uptime` beside it. Times are per step (training) or per pass over the sentences (evaluation).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from csc_hf import hardware  # no torch: it reads /proc and the environment

if (
    "--isa" in sys.argv
    and sys.argv[sys.argv.index("--isa") + 1] == "avx2"
    and os.environ.get("ATEN_CPU_CAPABILITY") != "avx2"
):
    # before torch loads its kernels
    os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **hardware.HOLD_TO_AVX2})

import torch  # noqa: E402 (after --isa's re-execution)
from bench_model import with_edit_rate  # bench/, the script's folder  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402
from torch.utils.flop_counter import flop_registry  # noqa: E402
from transformers import BertConfig, BertForMaskedLM, DataCollatorForLanguageModeling  # noqa: E402
from transformers.models.bert.modeling_bert import BertEncoder  # noqa: E402
from transformers.trainer_pt_utils import LengthGroupedSampler  # noqa: E402

from csc_hf.benchmark.builder import load_dataset  # noqa: E402
from csc_hf.modeling import (  # noqa: E402
    CSCTokenizer,
    SparseBertForMaskedLM,
    build_model,
    modeling_csc,
    use_training_kernels,
)
from csc_hf.pipeline import Corrector  # noqa: E402
from csc_hf.precision import resolved  # noqa: E402
from csc_hf.study.preset import Preset  # noqa: E402
from csc_hf.training.data import CorrectionCollator, encode_sentences  # noqa: E402

aten = torch.ops.aten
PRESET: dict = {}  # the study's recipe, as data: `--preset`'s (`cpu` unless named), set by `main`
MODEL: dict = {}  # its encoder's sizes
GEMMS = {aten.mm.default, aten.addmm.default, aten.bmm.default, aten.baddbmm.default}
CONVOLUTIONS = {aten.convolution.default, aten.convolution_backward.default}
ATTENTION = {
    aten._scaled_dot_product_flash_attention_for_cpu.default: 2,  # its batched products: QK^T, PV
    aten._scaled_dot_product_flash_attention_for_cpu_backward.default: 4,
}  # dP, dS K, dS^T Q, P^T dO


# ---- the GEMM floor -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Spec:
    """A tensor argument as the replay needs it."""

    size: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: torch.dtype

    def make(self) -> torch.Tensor:
        return torch.empty_strided(self.size, self.stride, dtype=self.dtype).normal_()


def freeze(value):
    """A hashable record of an op's argument: tensors as `Spec`, lists as tuples."""
    if isinstance(value, torch.Tensor):
        return Spec(tuple(value.shape), tuple(value.stride()), value.dtype)
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value):
    if isinstance(value, Spec):
        return value.make()
    return tuple(thaw(v) for v in value) if isinstance(value, tuple) else value


def bmm_key(heads: int, m: int, k: int, n: int, dtype: torch.dtype) -> tuple:
    """The record of a batched product (heads x m x k) @ (heads x k x n), both contiguous."""
    return (
        aten.bmm.default,
        (Spec((heads, m, k), (m * k, k, 1), dtype), Spec((heads, k, n), (k * n, n, 1), dtype)),
        (),
    )


class GemmRecorder(TorchDispatchMode):
    """Counts the matrix products dispatched under it (with their FLOPs); attention kernels are recorded as their
    batched products (a `bmm` per product, at the attention's shapes and dtype)."""

    def __init__(self):
        super().__init__()
        self.calls: Counter[tuple] = Counter()
        self.flops: dict[tuple, int] = {}
        self.other: Counter[str] = Counter()  # ops that look like products but are not replayed (reported)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func in GEMMS or func in CONVOLUTIONS:
            key = (func, freeze(args), tuple(sorted((k, freeze(v)) for k, v in kwargs.items())))
            self.calls[key] += 1
            if key not in self.flops:
                self.flops[key] = int(flop_registry[func._overloadpacket](*args, **kwargs, out_val=out))
        elif func in ATTENTION:
            query, key_, value = args[:3] if ATTENTION[func] == 2 else args[1:4]
            (batch, heads, length, width), keys = query.shape, key_.shape[2]
            products = (
                bmm_key(batch * heads, length, width, keys, query.dtype),  # Q K^T
                bmm_key(batch * heads, length, keys, value.shape[3], query.dtype),
            )  # P V
            for key in products * (ATTENTION[func] // 2):
                self.calls[key] += 1
                self.flops[key] = 2 * batch * heads * length * keys * width
        elif any(word in func.__name__ for word in ("mm", "conv", "rnn", "gru", "attention", "linear")):
            self.other[func.__name__] += 1
        return out

    def gflop(self) -> float:
        return sum(self.flops[key] * n for key, n in self.calls.items()) / 1e9


def floor_clock() -> Callable[[], float]:
    """The clock of the floor and of every ratio to it: CPU time with one torch thread (load from other processes
    does not count), the wall clock with more. A process's CPU clock read around a product of a millisecond misses
    what its other threads did (their time is added at the scheduler's next tick): a 2-thread product of 0.5 ms wall
    reads as 0.5 ms of CPU, and the fastest of a few tries picks such a reading."""
    return time.process_time if torch.get_num_threads() == 1 else time.perf_counter


def replay(calls: Counter[tuple], tries: int = 5) -> float:
    """Seconds (`floor_clock`) the recorded products take in isolation: each signature run `tries` times after one
    warm-up call; its fastest time counts, times how often the step ran it."""
    clock, total = floor_clock(), 0.0
    for (func, args, kwargs), count in calls.items():
        real, real_kwargs = thaw(args), {name: thaw(value) for name, value in kwargs}
        func(*real, **real_kwargs)
        best = math.inf
        for _ in range(tries):
            start = clock()
            func(*real, **real_kwargs)
            best = min(best, clock() - start)
        total += best * count
    return total


# ---- the stages ------------------------------------------------------------------------------------------------------


def length_grouped(lengths: list[int], batch: int, n: int, seed: int = 0) -> list[list[int]]:
    """`n` batches of indices spread evenly over an epoch as the Trainer's `group_by_length` sampler orders it (its
    first batch is the longest one)."""
    order = list(LengthGroupedSampler(batch, lengths=lengths, generator=torch.Generator().manual_seed(seed)))
    batches = [order[i : i + batch] for i in range(0, len(order) - batch + 1, batch)]
    return [batches[(2 * i + 1) * len(batches) // (2 * n)] for i in range(n)]


@dataclass
class Data:
    """The benchmark's training pairs and test sentences, the study's vocabulary."""

    tokenizer: CSCTokenizer
    sources: list[str]
    targets: list[str]
    test: list[str]

    @classmethod
    def load(cls, test_sentences: int) -> Data:
        train = load_dataset("csc_bench", "train")["train"]
        test = load_dataset("csc_bench", "test")["test"]
        extra = "".join(sorted({c for text in train["source"] for c in text}))  # the confusion set's characters
        tokenizer = CSCTokenizer.from_texts(list(train["target"]), extra_chars=[extra])
        return cls(tokenizer, list(train["source"]), list(train["target"]), list(test["source"][:test_sentences]))


def optimizer_for(model: torch.nn.Module, recipe: dict, fused: bool = True):
    """AdamW and the linear schedule as the Trainer builds them (no weight decay on biases and LayerNorm weights)."""
    decay = [
        p for n, p in model.named_parameters() if p.requires_grad and not n.endswith("bias") and "LayerNorm" not in n
    ]
    rest = [p for n, p in model.named_parameters() if p.requires_grad and (n.endswith("bias") or "LayerNorm" in n)]
    groups = [{"params": decay, "weight_decay": recipe["weight_decay"]}, {"params": rest, "weight_decay": 0.0}]
    optimizer = torch.optim.AdamW(groups, lr=recipe["learning_rate"], fused=fused, foreach=None if fused else True)
    warmup, total = recipe["warmup_steps"], recipe["max_steps"]
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: s / max(1, warmup) if s < warmup else max(0.0, (total - s) / max(1, total - warmup))
    )
    return optimizer, schedule


@dataclass
class Config:
    """One way to run a stage: `run(batch)` does one step (or one pass over the sentences)."""

    name: str
    run: Callable[[dict], object]
    record: bool = True  # False: a compiled model, whose products are those of its reference (`floor_of`)
    floor_of: str | None = None
    calls: list[Counter] = field(default_factory=list)  # the recorded products, per batch
    gflop: float = 0.0  # per batch
    samples: dict[tuple[int, int], tuple[float, float, float]] = field(default_factory=dict)  # (round, batch) ->
    # (wall s, CPU s, floor CPU s)


@contextlib.contextmanager
def bf16_matmuls(enabled: bool):
    """fp32 tensors whose matrix products oneDNN computes from bf16 inputs (AMX) with fp32 results: no autocast and
    none of its casts, every other op in fp32 (a lever candidate: numerics between fp32 and bf16 autocast)."""
    if not enabled:
        yield
        return
    before = torch.backends.mkldnn.matmul.fp32_precision
    torch.backends.mkldnn.matmul.fp32_precision = "bf16"
    try:
        yield
    finally:
        torch.backends.mkldnn.matmul.fp32_precision = before


def plain_cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The correction models' loss before its CPU row chunks: one cross_entropy over every row."""
    return torch.nn.functional.cross_entropy(
        logits.flatten(0, -2).float(), targets.flatten(), ignore_index=-100, reduction="sum"
    )


@contextlib.contextmanager
def plain_loss(enabled: bool):
    chunked = modeling_csc.summed_cross_entropy
    if enabled:
        modeling_csc.summed_cross_entropy = plain_cross_entropy
    try:
        yield
    finally:
        modeling_csc.summed_cross_entropy = chunked


def train_step(
    model, optimizer, schedule, bf16: bool, bf16_math: bool = False, plain: bool = False
) -> Callable[[dict], float]:
    def run(batch: dict) -> float:
        model.train()
        items = int((batch["labels"] != -100).sum())
        with bf16_matmuls(bf16_math), plain_loss(plain):
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16 and not bf16_math):
                loss = model(**batch, num_items_in_batch=items).loss
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.item()

    return run


def master_weights_step(model, optimizer, schedule) -> Callable[[dict], float]:
    """A step of a bf16 copy of `model` (forward and backward in bf16, no autocast, LayerNorm, softmax and loss in bf16
    too) whose gradients update `model`, its fp32 master weights (`optimizer` steps them), copied back after each
    step: no casts inside the step, the optimizer's arithmetic in fp32."""
    working = copy.deepcopy(model).to(torch.bfloat16)

    def run(batch: dict) -> float:
        working.train()
        items = int((batch["labels"] != -100).sum())
        loss = working(**batch, num_items_in_batch=items).loss
        loss.backward()
        for master, weight in zip(model.parameters(), working.parameters()):
            master.grad = None if weight.grad is None else weight.grad.float()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        working.zero_grad(set_to_none=True)
        with torch.no_grad():
            for master, weight in zip(model.parameters(), working.parameters()):
                weight.copy_(master)
        return loss.item()

    return run


@dataclass
class Stage:
    name: str
    batches: list
    configs: list[Config]
    unit: str = "step"
    collate_ms: float = 0.0
    tokens: float = 0.0  # mean tokens per batch (padding included)
    padding: float = 0.0  # share of padding tokens


LEVERS = {  # name: how the model or the step differs from the stage's reference (`lever_model`)
    "output layer at masked positions": {"sparse": True},
    "masked positions + eager attention": {"sparse": True, "attention": "eager"},
    "masked + eager + FastDropout": {"sparse": True, "attention": "eager", "fast_dropout": True},
    "eager attention": {"attention": "eager"},
    "eager attention + FastDropout": {"attention": "eager", "fast_dropout": True},
    "no attention dropout (recipe change)": {"config": {"attention_probs_dropout_prob": 0.0}},
    "AdamW foreach (not fused)": {"fused": False},
    # inductor over the encoder alone, with symbolic widths: the whole model breaks its graph (FastDropout's key, read
    # from torch's generator as a Python int, the chunked loss's autograd.grad) and recompiles for every batch (the
    # logits' rows, num_items_in_batch) until dynamo's limit leaves it eager; dropout stays nn.Dropout, which inductor
    # fuses with its own generator
    "eager attention, encoder compiled": {"attention": "eager", "compile": True},
    "masked + eager, encoder compiled": {
        "sparse": True,
        "attention": "eager",
        "compile": True,
        "floor_of": "masked + eager + FastDropout",
    },
    "one cross-entropy over all rows": {"plain_loss": True},  # the correction loss before its CPU row chunks
    # recorded products would be replayed in fp32: the floor is the reference's (or the lever's named in floor_of)
    "fp32, bf16 matmuls (no autocast)": {"bf16_math": True},
    "masked positions, fp32, bf16 matmuls": {
        "sparse": True,
        "bf16_math": True,
        "floor_of": "output layer at masked positions",
    },
    # the recipe's kernels, then the step in bf16 throughout with fp32 master weights (bf16 CPUs only)
    "masked + eager + FastDropout, bf16 weights + fp32 master": {
        "sparse": True,
        "attention": "eager",
        "fast_dropout": True,
        "master_weights": True,
    },
    "eager + FastDropout, bf16 weights + fp32 master": {
        "attention": "eager",
        "fast_dropout": True,
        "master_weights": True,
    },
}
STAGE_LEVERS = {
    "pretrain": [
        "output layer at masked positions",
        "masked positions + eager attention",
        "masked + eager + FastDropout",
        "no attention dropout (recipe change)",
        "AdamW foreach (not fused)",
        "masked positions, fp32, bf16 matmuls",
        "masked + eager + FastDropout, bf16 weights + fp32 master",
    ],
    "finetune": [
        "one cross-entropy over all rows",
        "eager attention",
        "eager attention + FastDropout",
        "fp32, bf16 matmuls (no autocast)",
        "eager + FastDropout, bf16 weights + fp32 master",
    ],
}


def lever_model(
    reference: torch.nn.Module,
    sparse: bool = False,
    attention: str | None = None,
    fast_dropout: bool = False,
    config: dict | None = None,
    **_,
) -> torch.nn.Module:
    """A copy of `reference` (same weights) with a lever's model changes."""
    if config:
        changed = copy.deepcopy(reference.config)
        changed.update(config)
        model = type(reference)(changed)
        model.load_state_dict(reference.state_dict())
    elif sparse:
        model = SparseBertForMaskedLM(copy.deepcopy(reference.config))
        model.load_state_dict(reference.state_dict())
    else:
        model = copy.deepcopy(reference)
    return use_training_kernels(model, attention, fast_dropout)


def training_configs(
    reference: torch.nn.Module, name: str, levers: list[str], recipe: dict, bf16: bool
) -> list[Config]:
    configs = []
    for lever in [None, *levers]:
        options = LEVERS.get(lever, {})
        if options.get("master_weights") and not bf16:
            continue  # a bf16 step: nothing to compare on an fp32 path
        model = lever_model(reference, **options)
        optimizer, schedule = optimizer_for(model, recipe, options.get("fused", True))
        if options.get("compile"):
            next(m for m in model.modules() if isinstance(m, BertEncoder)).compile(dynamic=True)
        bf16_math = options.get("bf16_math", False)
        record = not options.get("compile") and not bf16_math
        if options.get("master_weights"):
            step = master_weights_step(model, optimizer, schedule)
        else:
            step = train_step(model, optimizer, schedule, bf16, bf16_math, options.get("plain_loss", False))
        configs.append(
            Config(lever or name, step, record=record, floor_of=None if record else options.get("floor_of", name))
        )
    return configs


def pretrain_batches(data: Data, n: int) -> tuple[list[dict], float]:
    """`n` masked-LM batches of the benchmark's training targets (the collator's draws from seed 0) and the
    collation's milliseconds per batch."""
    encoded = data.tokenizer(data.targets, truncation=True, max_length=128)["input_ids"]
    collator = DataCollatorForLanguageModeling(data.tokenizer, mlm_probability=0.15)
    groups = length_grouped([len(x) for x in encoded], PRESET["pretrain"]["per_device_train_batch_size"], n)
    torch.manual_seed(0)
    start = time.perf_counter()
    batches = [collator([{"input_ids": encoded[i]} for i in group]) for group in groups]
    return batches, 1000 * (time.perf_counter() - start) / n


def pretrain_model(data: Data) -> BertForMaskedLM:
    """The `cpu` preset's masked-LM model, as `csc_hf.training` builds it (seed 0)."""
    torch.manual_seed(0)
    return BertForMaskedLM(
        BertConfig(
            vocab_size=len(data.tokenizer),
            pad_token_id=data.tokenizer.pad_token_id,
            max_position_embeddings=512,
            **MODEL,
        )
    )


def pretrain_stage(data: Data, n: int, bf16: bool, levers: list[str]) -> Stage:
    batches, collate_ms = pretrain_batches(data, n)
    configs = training_configs(pretrain_model(data), "BertForMaskedLM", levers, PRESET["pretrain"], bf16)
    return Stage("pretraining (masked LM)", batches, configs, collate_ms=collate_ms, **shape_stats(batches))


def finetune_stage(
    data: Data, variant: str, n: int, bf16: bool, levers: list[str], batch_size: int | None = None
) -> Stage:
    recipe = PRESET["finetune"]
    encoded = encode_sentences(data.tokenizer, data.sources, data.targets, 128)
    collator = CorrectionCollator(data.tokenizer, recipe["mask_rate"], 0)
    groups = length_grouped(encoded["length"], batch_size or recipe["per_device_train_batch_size"], n, seed=1)
    start = time.perf_counter()
    batches = [
        collator([{"input_ids": encoded["input_ids"][i], "labels": encoded["labels"][i]} for i in group])
        for group in groups
    ]
    collate_ms = 1000 * (time.perf_counter() - start) / n
    torch.manual_seed(0)
    configs = training_configs(build_model(variant, data.tokenizer, **MODEL), variant, levers, recipe, bf16)
    return Stage(f"fine-tuning `{variant}`", batches, configs, collate_ms=collate_ms, **shape_stats(batches))


def evaluate_stage(data: Data, bf16: bool, levers: bool) -> Stage:
    size = PRESET["eval_batch_size"]
    torch.manual_seed(0)
    model = build_model("bert", data.tokenizer, **MODEL).eval()
    precision = "bf16" if bf16 else "fp32"

    def forward_pass(
        batch_size: int, model: torch.nn.Module = model, autocast: bool = bf16, bf16_math: bool = False
    ) -> Callable[[dict], None]:
        texts = sorted(data.test, key=len, reverse=True)
        batches = [
            data.tokenizer(texts[i : i + batch_size], padding=True, return_tensors="pt")
            for i in range(0, len(texts), batch_size)
        ]

        @torch.no_grad()
        def run(_) -> None:
            with bf16_matmuls(bf16_math), torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                for batch in batches:
                    model(**batch)

        return run

    # the model is random: keep_bias leaves about one edit per sentence, as a trained model does on a test set
    keep_bias = with_edit_rate(
        Corrector(model, data.tokenizer, batch_size=size, precision=precision), data.test[:128]
    ).keep_bias

    def correct(batch_size: int) -> Callable[[dict], None]:
        corrector = Corrector(model, data.tokenizer, batch_size=batch_size, precision=precision, keep_bias=keep_bias)
        return lambda _: corrector.correct(data.test)

    configs = [Config(f"forward, batch {size}", forward_pass(size)), Config(f"correct(), batch {size}", correct(size))]
    if levers:
        configs += [Config(f"forward, batch {b}", forward_pass(b)) for b in (32, 128)]
        configs.append(Config("forward, eager attention", forward_pass(size, lever_model(model, attention="eager"))))
        if bf16:
            weights = copy.deepcopy(model).to(torch.bfloat16)
            configs.append(Config("forward, bf16 weights (no autocast)", forward_pass(size, weights, False)))
            held = Corrector(
                copy.deepcopy(model),
                data.tokenizer,
                batch_size=size,
                precision=precision,
                bf16_weights=True,
                keep_bias=keep_bias,
            )  # the library's bf16_weights (the `cpu` preset's eval_bf16_weights)
            configs.append(Config(f"correct(), batch {size}, bf16 weights", lambda _: held.correct(data.test)))
            fp32_math = forward_pass(size, model, False, True)  # its floor: the autocast forward pass's
            configs.append(Config("forward, fp32, bf16 matmuls", fp32_math, record=False, floor_of=configs[0].name))
        configs.append(Config("correct(), batch 32", correct(32)))
    return Stage(f"evaluation ({len(data.test)} test sentences)", [None], configs, unit="pass")


def shape_stats(batches: list[dict]) -> dict[str, float]:
    tokens = [b["input_ids"].numel() for b in batches]
    real = [int(b["attention_mask"].sum()) if "attention_mask" in b else n for b, n in zip(batches, tokens)]
    return {"tokens": statistics.mean(tokens), "padding": 1 - sum(real) / sum(tokens)}


def timed(run: Callable, *args) -> tuple[float, float]:
    """Wall and CPU seconds of `run(*args)`. With one thread, CPU time is the step's cost as if its core were its own:
    other processes that take the core stretch the wall time, not the CPU time."""
    wall, cpu = time.perf_counter(), time.process_time()
    run(*args)
    return time.perf_counter() - wall, time.process_time() - cpu


def measure(stage: Stage, rounds: int) -> None:
    """Record each configuration's products on every batch, then `rounds` rounds: for each batch, each
    configuration's step on it (in turn, the order reversed every other round) and, right after it, the replay of
    that step's products."""
    for config in stage.configs:
        if config.record:
            other: Counter[str] = Counter()
            for batch in stage.batches:
                recorder = GemmRecorder()
                with recorder:
                    config.run(batch)
                config.calls.append(recorder.calls)
                config.gflop += recorder.gflop() / len(stage.batches)
                other += recorder.other
            if other:
                print(f"  ({config.name}: not replayed: {dict(other)})")
        else:  # compiled (compiled first, by its warm-up) or not recordable: its floor is `floor_of`'s
            dynamo = torch._dynamo.utils.counters
            dynamo.clear()
            wall, _ = timed(lambda batches, run: [run(batch) for batch in batches], stage.batches, config.run)
            graphs = f"{dynamo['stats']['unique_graphs']} graphs, {sum(dynamo['graph_break'].values())} graph breaks; "
            print(f"  ({config.name}: warmed up in {wall:.0f} s; {graphs}floor of {config.floor_of})", flush=True)
    by_name = {c.name: c for c in stage.configs}
    for config in stage.configs:
        if config.floor_of:
            config.calls, config.gflop = by_name[config.floor_of].calls, by_name[config.floor_of].gflop
    for r in range(rounds):
        for i, batch in enumerate(stage.batches):
            for config in stage.configs if r % 2 == 0 else stage.configs[::-1]:
                wall, cpu = timed(config.run, batch)
                config.samples[r, i] = (wall, cpu, replay(config.calls[i]))


def report(stage: Stage) -> None:
    """Per configuration: the median step (or pass) in wall and CPU time, its GEMM FLOPs and their rate, its floor,
    and the ratios taken per sample (the same batch, measured side by side), then their median; the rate and the
    ratios on the floor's clock (`floor_clock`)."""
    n = len(stage.batches)
    extra = (
        (
            f"; {stage.tokens:.0f} tokens per batch ({100 * stage.padding:.1f}% padding); collation "
            f"{stage.collate_ms:.1f} ms per batch (not in the step times)"
        )
        if stage.unit == "step"
        else ""
    )
    print(f"\n{stage.name}: {n if stage.unit == 'step' else 1} {stage.unit}(s) per round{extra}")
    print(f"  {'configuration':36} {'wall ms':>8} {'CPU ms':>8} {'GFLOP':>7} {'GFLOP/s':>8} {'floor ms':>9} "
          f"{'x floor':>8} {'x ref':>6}")  # fmt: skip
    reference = stage.configs[0]
    cpu_clock = floor_clock() is time.process_time
    on = 1 if cpu_clock else 0  # a sample is (wall, CPU, floor): its time on the floor's clock
    for config in stage.configs:
        keys = sorted(config.samples)
        wall = statistics.median(sum(config.samples[r, i][0] for i in range(n)) for r in {r for r, _ in keys}) / n
        cpu = statistics.median(sum(config.samples[r, i][1] for i in range(n)) for r in {r for r, _ in keys}) / n
        floor = statistics.median(sum(config.samples[r, i][2] for i in range(n)) for r in {r for r, _ in keys}) / n
        to_floor = statistics.median(config.samples[k][on] / config.samples[k][2] for k in keys)
        speedup = statistics.median(reference.samples[k][on] / config.samples[k][on] for k in keys)
        rate = config.gflop / (cpu if cpu_clock else wall)
        print(f"  {config.name:36} {1000 * wall:8.1f} {1000 * cpu:8.1f} {config.gflop:7.1f} {rate:8.0f} "
              f"{1000 * floor:9.1f} {to_floor:8.2f} {speedup:6.2f}")  # fmt: skip


# ---- GEMM throughput at the model's shapes ---------------------------------------------------------------------------


def gemm_table(vocab: int, tokens: int, bf16: bool, tries: int = 5) -> None:
    hidden, inner = MODEL["hidden_size"], MODEL["intermediate_size"]
    shapes = {f"{tokens} x {hidden} -> {hidden} (Q, K, V, O)": (tokens, hidden, hidden),
              f"{tokens} x {hidden} -> {inner} (FFN in)": (tokens, hidden, inner),
              f"{tokens} x {inner} -> {hidden} (FFN out)": (tokens, inner, hidden),
              f"{tokens} x {hidden} -> {vocab} (output layer)": (tokens, hidden, vocab),
              f"{tokens // 7} x {hidden} -> {vocab} (15% of the positions)": (tokens // 7, hidden, vocab),
              "2048 x 2048 -> 2048": (2048, 2048, 2048)}  # fmt: skip
    dtypes = [torch.float32, *([torch.bfloat16] if bf16 else [])]
    clock = floor_clock()
    per = "CPU second" if clock is time.process_time else "second (wall clock)"
    print(f"\nGEMM throughput, GFLOP/s per {per} (x @ W.T + b as nn.Linear computes it; fastest of {tries}):")
    print(f"  {'shape':48} " + " ".join(f"{str(d).split('.')[1]:>9}" for d in dtypes))
    for name, (m, k, n) in shapes.items():
        rates = []
        for dtype in dtypes:
            x, w, b = torch.randn(m, k, dtype=dtype), torch.randn(n, k, dtype=dtype), torch.randn(n, dtype=dtype)
            torch.nn.functional.linear(x, w, b)
            best = math.inf
            for _ in range(tries):
                start = clock()
                torch.nn.functional.linear(x, w, b)
                best = min(best, clock() - start)
            rates.append(2 * m * k * n / best / 1e9)
        print(f"  {name:48} " + " ".join(f"{r:9.0f}" for r in rates))


# ---- numerics -------------------------------------------------------------------------------------------------------

NUMERICS = [
    "output layer at masked positions",
    "masked positions + eager attention",
    "masked + eager + FastDropout",
    "no attention dropout (recipe change)",
]


def numerics(data: Data, steps: int, bf16: bool) -> None:
    """Pretraining from the same weights on the same batches (the same masks), the reference against each lever
    that can change the numbers, and against the reference with other dropout draws (the spread that any change of
    the random draws brings): the largest logit difference on the first batch (same weights, same dropout draws,
    the labelled positions), then the loss over `steps` steps, by quarters."""
    batches, _ = pretrain_batches(data, steps)
    reference = pretrain_model(data)
    runs: dict[str, list[float]] = {}
    diffs: dict[str, float] = {}
    first: torch.Tensor | None = None
    for name in ["BertForMaskedLM", "BertForMaskedLM, other dropout draws", *NUMERICS]:
        model = lever_model(reference, **LEVERS.get(name, {}))
        torch.manual_seed(1)
        model.train()
        labels = batches[0]["labels"]
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = model(**batches[0]).logits.float()
        logits = logits if logits.dim() == 2 else logits[labels != -100]
        first = logits if first is None else first
        diffs[name] = float((logits - first).abs().max() / first.abs().max())
        optimizer, schedule = optimizer_for(model, PRESET["pretrain"])
        run = train_step(model, optimizer, schedule, bf16)
        torch.manual_seed(2 if "other dropout" in name else 1)
        runs[name] = [run(batch) for batch in batches]
        print(f"  ({name}: {steps} steps done)", flush=True)
    quarter = max(1, steps // 4)
    spans = [(i, min(i + quarter, steps)) for i in range(0, steps, quarter)]
    print(
        f"\nnumerics: {steps} pretraining steps from the same weights on the same batches "
        f"({'bf16 autocast' if bf16 else 'fp32'})"
    )
    print(
        f"  {'configuration':40} {'max |dlogit|':>12} "
        + " ".join(f"{f'loss {a + 1}-{b}':>12}" for a, b in spans)
        + f" {'max |dloss|':>11}"
    )
    base = runs["BertForMaskedLM"]
    for name, losses in runs.items():
        means = [statistics.mean(losses[a:b]) for a, b in spans]
        worst = max(abs(x - y) for x, y in zip(losses, base))
        print(f"  {name:40} {diffs[name]:12.2e} " + " ".join(f"{m:12.4f}" for m in means) + f" {worst:11.4f}")


# ---- encoder sizes --------------------------------------------------------------------------------------------------


def batch_scaling(data: Data, sizes: list[int], steps: int, rounds: int, bf16: bool) -> None:
    """`bert`'s fine-tuning step with the recipe's attention kernel and dropout, at each batch size of `sizes`
    (`steps` length-grouped batches, `rounds` rounds after a warm-up step): median CPU microseconds per token."""
    keys = PRESET["finetune"]
    print("\n`bert` fine-tuning step by batch size (CPU time per token, padding included)")
    print("  batch  tokens/batch  us/token  x batch " + str(sizes[0]))
    first = None
    for size in sizes:
        stage = finetune_stage(data, "bert", steps, bf16, [], batch_size=size)
        torch.manual_seed(0)
        model = use_training_kernels(
            build_model("bert", data.tokenizer, **MODEL),
            keys.get("attn_implementation"),
            bool(keys.get("fast_dropout")),
        )
        step = train_step(model, *optimizer_for(model, keys), bf16)
        step(stage.batches[0])
        per_token = []
        for _ in range(rounds):
            for batch in stage.batches:
                per_token.append(timed(step, batch)[1] / batch["input_ids"].numel())
        micro = 1e6 * statistics.median(per_token)
        first = first or micro
        print(f"  {size:5d}  {stage.tokens:12.0f}  {micro:8.1f}  {first / micro:7.2f}", flush=True)


def evaluation_sentences() -> int:
    """Sentences one evaluation of the study corrects: every split of the `cpu` preset's test configs, plus the
    validation sentences its decoding is tuned on."""
    splits = [load_dataset("csc_bench", name) for name in PRESET["tests"]]
    return sum(len(split) for dataset in splits for split in dataset.values()) + PRESET["finetune"]["max_eval_samples"]


def sizes(data: Data, shapes: list[str], attention: str | None, precision: str) -> None:
    """Per encoder size (LAYERSxHIDDEN; heads of 64, FFN 4x hidden): `csc_hf.job_estimate.StepProbe` with one thread
    in CPU time, and the `cpu` grid it gives when two processes (one per seed) share the two cores: the pretraining
    alone, then every fine-tuning, the augmentation stage's and every evaluation split over the two processes."""
    from csc_hf.job_estimate import StepProbe

    variants, seeds = PRESET["variants"], len(PRESET["seeds"])
    augmented = PRESET.get("augmentation", {}).get("variants", [])
    steps, pre_steps = PRESET["finetune"]["max_steps"], PRESET["pretrain"]["max_steps"]
    sentences = evaluation_sentences()
    print(
        f"\nencoder sizes ({attention or 'default'} attention in training; 1 thread; the grid: {pre_steps} pretraining "
        f"steps, {len(variants)} variants x {seeds} seeds x {steps} steps, {len(augmented)} augmented x {seeds} x "
        f"{2 * steps}, {(len(variants) + len(augmented)) * seeds} evaluations of {sentences} sentences; CPU time; "
        f"s/step: fine-tuning; ms/sent: evaluation; fine-tune h, evaluate h: CPU hours, which the grid halves)"
    )
    print(
        f"  {'encoder':10} {'params M':>8} {'pre s/step':>10} {'bert s/step':>11} {'all_gate':>8} {'bart':>8} "
        f"{'ms/sent':>8} {'bart':>8} {'pretrain h':>10} {'fine-tune h':>11} {'evaluate h':>10} {'grid h':>7}"
    )
    for shape in shapes:
        layers, hidden = (int(x) for x in shape.split("x"))
        model = {
            "hidden_size": hidden,
            "num_hidden_layers": layers,
            "num_attention_heads": hidden // 64,
            "intermediate_size": 4 * hidden,
        }
        probe = StepProbe.measure(
            model,
            len(data.tokenizer),
            variants,
            precision,
            bart=PRESET["bart"],
            threads=1,
            steps=5,
            pretrain_keys={"attn_implementation": attention},
            finetune_keys={"attn_implementation": attention},
            clock=time.process_time,
            pretrain_batch=PRESET["pretrain"]["per_device_train_batch_size"],
            finetune_batch=PRESET["finetune"]["per_device_train_batch_size"],
            eval_batch=PRESET["eval_batch_size"],
        )
        params = sum(
            p.numel() for p in BertForMaskedLM(BertConfig(vocab_size=len(data.tokenizer), **model)).parameters()
        )
        pretrain = pre_steps * probe.pretrain_step
        finetune = sum(seeds * steps * probe.finetune_step[v] for v in variants)
        finetune += sum(seeds * 2 * steps * probe.finetune_step[v] for v in augmented)
        evaluate = sum(seeds * sentences * probe.sentence[v] for v in [*variants, *augmented])
        grid = pretrain + (finetune + evaluate) / 2
        print(
            f"  {shape:10} {params / 1e6:8.1f} {probe.pretrain_step:10.3f} {probe.finetune_step['bert']:11.3f} "
            f"{probe.finetune_step['all_gate']:8.3f} {probe.finetune_step['bart']:8.3f} "
            f"{1000 * probe.sentence['bert']:8.2f} {1000 * probe.sentence['bart']:8.2f} {pretrain / 3600:10.2f} "
            f"{finetune / 3600:11.2f} {evaluate / 3600:10.2f} {grid / 3600:7.2f}",
            flush=True,
        )


# ---- contention ------------------------------------------------------------------------------------------------------

LAYOUTS = {  # name: (torch threads, 0: the advice of hardware.thread_choice at the start; extra environment)
    "2 threads": (2, {}),
    "2 threads, OMP_WAIT_POLICY=passive": (2, {"OMP_WAIT_POLICY": "PASSIVE"}),
    # libgomp's idle threads spin this many times before they sleep (default 300,000, about 3 ms; passive: 0)
    "2 threads, GOMP_SPINCOUNT=1000": (2, {"GOMP_SPINCOUNT": "1000"}),
    "2 threads, GOMP_SPINCOUNT=3000": (2, {"GOMP_SPINCOUNT": "3000"}),
    "2 threads, GOMP_SPINCOUNT=10000": (2, {"GOMP_SPINCOUNT": "10000"}),
    "1 thread": (1, {}),
    "hardware.threads_for (the advice)": (0, {}),
}
LAYOUT_VARIABLES = {"OMP_NUM_THREADS", *(name for _, env in LAYOUTS.values() for name in env)}  # each cell sets its own
BUSY = "while True: pass"


def worker(steps: int, threads: int) -> None:
    """One timing in a fresh process: the pretraining reference step, `steps` times; prints its median seconds."""
    if threads == 0:
        threads = hardware.threads_for(hardware.usable_cpus(), hardware.busy_cpus())
    torch.set_num_threads(threads)
    data = Data.load(0)
    stage = pretrain_stage(data, steps + 2, resolved("auto") == "bf16", [])
    run = stage.configs[0].run
    times = []
    for batch in stage.batches:
        start = time.perf_counter()
        run(batch)
        times.append(time.perf_counter() - start)
    print(json.dumps({"seconds": statistics.median(times[2:]), "threads": threads}))


def contention(steps: int, rounds: int, preset: str) -> None:
    """Each layout alone and beside one competing CPU-bound process (a Python busy loop that this script starts)."""
    results: dict[tuple[str, bool], list[float]] = {}
    threads: dict[tuple[str, bool], int] = {}
    for _ in range(rounds):
        for name, (n, env) in LAYOUTS.items():
            for competitor in (False, True):
                busy = subprocess.Popen([sys.executable, "-c", BUSY]) if competitor else None
                try:
                    base = {k: v for k, v in os.environ.items() if k not in LAYOUT_VARIABLES}
                    out = subprocess.run(
                        [sys.executable, __file__, "--worker", str(n), "--steps", str(steps), "--preset", preset],
                        env={**base, **env},
                        capture_output=True,
                        text=True,
                        check=True,
                    )
                finally:
                    if busy:
                        busy.kill()
                        busy.wait()
                result = json.loads(out.stdout.strip().splitlines()[-1])
                results.setdefault((name, competitor), []).append(result["seconds"])
                threads[name, competitor] = result["threads"]
    quiet = statistics.median(results["2 threads", False])
    print(f"\ncontention: the pretraining step ({steps} steps per process, median of {rounds} processes per cell), "
          f"alone and beside one busy process")  # fmt: skip
    print(f"  {'layout':38} {'alone s':>8} {'busy s':>8} {'slowdown':>9} {'x 2 thr. alone':>15}")
    for name in LAYOUTS:
        alone, busy = (statistics.median(results[name, c]) for c in (False, True))
        label = name + (f" ({threads[name, False]} / {threads[name, True]})" if LAYOUTS[name][0] == 0 else "")
        print(f"  {label:38} {alone:8.3f} {busy:8.3f} {busy / alone:9.2f} {busy / quiet:15.2f}")


# ---- where the time beyond the floor goes ---------------------------------------------------------------------------

OP_KINDS = {  # the first kind whose words an operator's name holds (aten::addmm -> GEMM)
    "GEMM (mm, addmm, bmm, linear)": ("mm", "linear", "matmul", "bmm", "baddbmm"),
    "attention (softmax, SDPA)": ("softmax", "attention", "sdpa"),
    "LayerNorm": ("layer_norm",),
    "GELU / tanh": ("gelu", "tanh"),
    "dropout (bernoulli, masks)": ("dropout", "bernoulli", "native_dropout"),
    "casts and copies (autocast)": ("to_copy", "copy_", "_to", "clone", "contiguous"),
    "optimizer (AdamW, clipping, norms)": ("adam", "foreach", "norm", "clip"),
    "embedding": ("embedding",),
    "loss (cross entropy)": ("cross_entropy", "nll_loss", "log_softmax"),
    "element-wise (add, mul, where, fill)": ("add", "mul", "div", "sub", "where", "fill", "zero", "masked", "rsub"),
}


def profile(stage: Stage, batches: int = 4) -> None:
    """Each configuration of `stage` under `torch.profiler` over `batches` batches after one step to warm up: its
    self CPU time per operator kind (`OP_KINDS`), share of the whole, and the operators that take most."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    n = min(batches, len(stage.batches))
    for config in stage.configs:
        config.run(stage.batches[0])
        with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
            for batch in stage.batches[:n]:
                config.run(batch)
        events = [e for e in prof.key_averages() if e.self_cpu_time_total > 0]
        total = sum(e.self_cpu_time_total for e in events)
        kinds: Counter[str] = Counter()
        for e in events:
            name = e.key.lower()
            kinds[next((k for k, words in OP_KINDS.items() if any(w in name for w in words)), "other")] += (
                e.self_cpu_time_total
            )
        print(f"\n{stage.name}, {config.name}: self CPU time per {stage.unit} by operator kind ({n} profiled)")
        print(f"  {'kind':40} {'ms':>8} {'share':>7}")
        for kind, us in kinds.most_common():
            print(f"  {kind:40} {us / 1e3 / n:8.1f} {100 * us / total:6.1f}%")
        print(f"  {'operators that take most':40} {'ms':>8} {'share':>7} {'calls':>7}")
        for e in sorted(events, key=lambda e: -e.self_cpu_time_total)[:12]:
            print(f"  {e.key[:40]:40} {e.self_cpu_time_total / 1e3 / n:8.1f} "
                  f"{100 * e.self_cpu_time_total / total:6.1f}% {e.count // n:7d}")  # fmt: skip
        print(flush=True)


# ---- main ------------------------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batches", type=int, default=6, help="training batches per round")
    parser.add_argument("--sentences", type=int, default=1000, help="test sentences of the evaluation stage")
    parser.add_argument("--precision", default="auto", choices=["auto", "bf16", "fp32"])
    parser.add_argument("--stages", nargs="*", default=["pretrain", "bert", "all_gate", "evaluate"])
    parser.add_argument("--levers", action="store_true", help="measure the speed levers against each reference")
    parser.add_argument(
        "--compile", action="store_true", help="add the recipe's step with its encoder compiled (compiles first)"
    )
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--preset", default="cpu", help="the study preset whose model sizes and recipe are measured")
    parser.add_argument(
        "--isa",
        choices=["native", "avx2"],
        default="native",
        help="avx2: MKL, oneDNN and ATen kernels held to AVX2 (re-executes with their variables)",
    )
    parser.add_argument(
        "--numerics",
        type=int,
        default=0,
        metavar="STEPS",
        help="only the numerics table: STEPS pretraining steps of the reference and each lever",
    )
    parser.add_argument("--contention", action="store_true", help="only the contention table")
    parser.add_argument(
        "--profile", action="store_true", help="only where each stage's time goes: self CPU time by operator kind"
    )
    parser.add_argument("--sizes", nargs="*", metavar="LxH", help="only the encoder-size table (e.g. 4x256 6x384)")
    parser.add_argument("--attention", default=None, help="--sizes: attention implementation of the training models")
    parser.add_argument("--steps", type=int, default=12, help="steps per process of the contention table")
    parser.add_argument(
        "--batch-scaling", nargs="*", type=int, metavar="N", help="only bert's fine-tuning step at these batch sizes"
    )
    parser.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    global PRESET, MODEL
    PRESET = dataclasses.asdict(Preset.load(args.preset))
    MODEL = PRESET["model"]
    if args.worker is not None:
        return worker(args.steps, args.worker)
    if args.threads:
        torch.set_num_threads(args.threads)
    print(hardware.describe())  # it names the flags that --isa avx2 holds the kernels from
    print(
        f"torch {torch.__version__}, kernels {torch.backends.cpu.get_cpu_capability()}, {torch.get_num_threads()} "
        f"threads; load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}"
    )
    if args.contention:
        return contention(args.steps, args.rounds, args.preset)
    bf16 = resolved(args.precision) == "bf16"
    print(f"precision: {args.precision} -> {'bf16 autocast' if bf16 else 'fp32'}")
    data = Data.load(args.sentences)
    if args.numerics:
        return numerics(data, args.numerics, bf16)
    if args.sizes:
        return sizes(data, args.sizes, args.attention, args.precision)
    if args.batch_scaling:
        return batch_scaling(data, args.batch_scaling, args.batches, args.rounds, bf16)
    if not args.profile:
        gemm_table(len(data.tokenizer), PRESET["pretrain"]["per_device_train_batch_size"] * 43, bf16)
    chosen = STAGE_LEVERS if args.levers else {"pretrain": [], "finetune": []}
    if args.compile:  # each compiled step beside the recipe's eager one (its floor)
        compiled = {
            "pretrain": ["masked + eager + FastDropout", "masked + eager, encoder compiled"],
            "finetune": ["eager attention + FastDropout", "eager attention, encoder compiled"],
        }
        chosen = {kind: list(dict.fromkeys(chosen[kind] + compiled[kind])) for kind in chosen}
    builders = {
        "pretrain": lambda: pretrain_stage(data, args.batches, bf16, chosen["pretrain"]),
        "bert": lambda: finetune_stage(data, "bert", args.batches, bf16, chosen["finetune"]),
        "all_gate": lambda: finetune_stage(data, "all_gate", args.batches, bf16, chosen["finetune"]),
        "evaluate": lambda: evaluate_stage(data, bf16, args.levers),
    }
    for name in args.stages:
        stage = builders[name]()
        if args.profile:
            profile(stage, args.batches)
            continue
        measure(stage, args.rounds)
        report(stage)
        print(f"  (load average {os.getloadavg()[0]:.2f})", flush=True)


if __name__ == "__main__":
    main()
