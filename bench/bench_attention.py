"""Attention kernels at inference: transformers' default (SDPA) against eager attention, as the evaluations run them
(`csc_hf.modeling.bart_generate` generates with eager attention on a CPU: here each kernel is named to it).

A preset's models at its sizes (random weights), in bf16 weights where the CPU computes bf16 (as the study's
evaluations hold them), else fp32, on People's Daily sentences sorted by length in batches of the preset's
evaluation batch size: `bart`'s generation (`csc_hf.modeling.bart_generate`, read position by position; with random
weights a batch runs to its longest row) and the tagging model's forward pass (`bert`). Each time is the fastest of
rounds that visit both kernels in turn, so load from other processes hits both alike; the generated ids are compared.

With ``--model DIR`` (a trained model's folder, such as a study's `train-bart-...` stage) it times that model instead,
as the study's evaluation runs it (`csc_hf.pipeline.Corrector` with the decoding saved with the model, bf16 weights
where the CPU computes bf16), on the first ``--sentences`` sources of the preset's ``--split`` (sorted by length), and
compares the corrections and their sentence- and character-level correction F1 under each kernel (paired: the
difference with its bootstrap interval and permutation p-value, `csc_hf.compare`).

    python bench/bench_attention.py [--preset cpu-small] [--sentences 512] [--rounds 3]
    python bench/bench_attention.py --model runs/cpu-small/stages/train-bart-seed0-... [--split test]
"""

import argparse
import time
from functools import partial
from unittest import mock

import torch

from csc_hf import compare, hardware, load_dataset, pipeline
from csc_hf.corpus import clean_sentences, peoples_daily_lines
from csc_hf.job_estimate import bart_sizes
from csc_hf.modeling import CSCTokenizer, bart_generate, build_model
from csc_hf.precision import resolved
from csc_hf.study import Preset

KERNELS = ("sdpa", "eager")


def fastest(run, rounds: int) -> dict[str, float]:
    """The fastest wall time of `run(kernel)` for each kernel, over `rounds` rounds that alternate them."""
    best = dict.fromkeys(KERNELS, float("inf"))
    for _ in range(rounds):
        for kernel in KERNELS:
            start = time.perf_counter()
            run(kernel)
            best[kernel] = min(best[kernel], time.perf_counter() - start)
    return best


def trained(args: argparse.Namespace, preset: Preset, bf16: bool) -> None:
    """The trained model at ``args.model`` under each kernel, on the preset's ``args.split`` sources."""
    data = load_dataset("csc_bench", args.split, split="test", **preset.bench_params)
    rows = sorted(zip(data["source"], data["target"]), key=lambda row: len(row[0]), reverse=True)[: args.sentences]
    sources, targets = map(list, zip(*rows))
    corrector = pipeline.Corrector.from_pretrained(args.model, batch_size=preset.eval_batch_size, bf16_weights=bf16)
    print(
        f"{hardware.describe()}; torch {torch.__version__}, {torch.get_num_threads()} thread(s); {args.model} "
        f"({type(corrector.model).__name__}), {'bf16 weights' if bf16 else 'fp32'}; {len(sources)} sentences of "
        f"{args.split}, mean {sum(map(len, sources)) / len(sources):.1f} characters, batch {preset.eval_batch_size}"
    )
    corrected = {}

    def correct(kernel: str) -> None:
        corrector.model.set_attn_implementation(kernel)  # a tagging model's forward pass
        with mock.patch.object(pipeline, "bart_generate", partial(bart_generate, attn_implementation=kernel)):
            corrected[kernel] = corrector.correct(sources)

    best = fastest(correct, args.rounds)
    print(f"{'':32} {'sdpa':>8} {'eager':>8} {'sdpa / eager':>13}")
    print(f"{'correction, s':32} {best['sdpa']:8.2f} {best['eager']:8.2f} {best['sdpa'] / best['eager']:12.2f}x")
    paired = compare(sources, corrected["eager"], corrected["sdpa"], targets)
    for key, name in (("sent_cor_f1", "sentence correction F1"), ("char_cor_f1", "character correction F1")):
        d = paired[key]
        print(
            f"{name:32} {d['b']:8.4f} {d['a']:8.4f}   eager - sdpa {d['delta']:+.4f} "
            f"({d['ci_low']:+.4f} to {d['ci_high']:+.4f}, p {d['p_value']:.2f})"
        )
    same = sum(a == b for a, b in zip(corrected["sdpa"], corrected["eager"]))
    print(f"the same correction for {same} of {len(sources)} sentences")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="cpu-small", help="the preset whose sizes and batch size to use")
    parser.add_argument("--sentences", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model", help="a trained model's folder: time it on the preset's test sentences")
    parser.add_argument("--split", default="test", help="with --model: the test config whose sources it corrects")
    args = parser.parse_args()
    preset = Preset.load(args.preset)
    bf16 = resolved(preset.finetune.get("precision", "auto")) == "bf16"
    if args.model:
        return trained(args, preset, bf16)
    dtype = torch.bfloat16 if bf16 else torch.float32
    corpus = clean_sentences(peoples_daily_lines())
    tokenizer = CSCTokenizer.from_texts(corpus)
    texts = sorted(corpus[: args.sentences], key=len, reverse=True)
    batch = preset.eval_batch_size
    print(
        f"{hardware.describe()}; torch {torch.__version__}, {torch.get_num_threads()} thread(s); preset "
        f"{args.preset}, {'bf16 weights' if bf16 else 'fp32'}; {len(texts)} sentences, mean "
        f"{sum(map(len, texts)) / len(texts):.1f} characters, batch {batch}"
    )
    torch.manual_seed(0)
    bart = build_model("bart", tokenizer, **bart_sizes(preset.model, preset.bart)).to(dtype).eval()
    bert = build_model("bert", tokenizer, **preset.model).to(dtype).eval()
    generated = {}

    def generate(kernel: str) -> None:
        generated[kernel] = bart_generate(bart, tokenizer, texts, batch, attn_implementation=kernel)

    encoded = [tokenizer(texts[i : i + batch], padding=True, return_tensors="pt") for i in range(0, len(texts), batch)]

    @torch.no_grad()
    def forward(kernel: str) -> None:
        bert.set_attn_implementation(kernel)
        for inputs in encoded:
            bert(**inputs)

    print(f"{'':32} {'sdpa s':>8} {'eager s':>8} {'sdpa / eager':>13}")
    for name, run in (("bart generation", generate), ("bert forward pass", forward)):
        best = fastest(run, args.rounds)
        print(f"{name:32} {best['sdpa']:8.2f} {best['eager']:8.2f} {best['sdpa'] / best['eager']:12.2f}x")
    same = sum(a == b for a, b in zip(generated["sdpa"], generated["eager"]))
    print(f"bart: the same generated ids for {same} of {len(texts)} sentences")


if __name__ == "__main__":
    main()
