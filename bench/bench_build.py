"""Benchmark: build every csc_bench config from a large corpus (the default corpus repeated), and compare the
vectorised substitution with a literal per-character Python loop of the paper's procedure, in the same run.

    python bench/bench_build.py                      # 2,000,000 sentences (the target: <= 60 s, <= 4 GB)
    python bench/bench_build.py --sentences 200000   # quicker
"""

from __future__ import annotations

import argparse
import random
import resource
import tempfile
import time
from pathlib import Path

from csc_hf.benchmark import CONFIGS, load_dataset, plan_for
from csc_hf.benchmark.plan import BenchParams
from csc_hf.corruption import pack, substitute


def literal_substitution(
    sentences: list[str], candidates: dict[str, list[str]], error_prob: float, seed: int
) -> list[str]:
    """The paper's procedure written as the obvious loop: for each character, maybe replace it by a random candidate."""
    rng = random.Random(seed)
    out = []
    for sentence in sentences:
        chars = []
        for ch in sentence:
            if ch in candidates and rng.random() < error_prob:
                ch = rng.choice(candidates[ch])
            chars.append(ch)
        out.append("".join(chars))
    return out


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=2_000_000, help="corpus size (default 2,000,000)")
    parser.add_argument("--loop-sentences", type=int, default=200_000, help="sentences for the literal-loop comparison")
    args = parser.parse_args()

    base = plan_for(BenchParams()).sentences
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.txt"
        repeats = -(-args.sentences // len(base))
        corpus.write_text("\n".join((base * repeats)[: args.sentences]) + "\n", encoding="utf-8")
        params = dict(corpus=str(corpus), dedupe=False)
        configs = [c for c in CONFIGS if c != "sighan15"]

        start = time.perf_counter()
        plan = plan_for(BenchParams(**params))
        stages = {}
        for name, step in [
            ("read + clean corpus", lambda: plan.sentences),
            ("pack + split", lambda: plan.pools),
            ("build S", lambda: plan.confusion),
            ("divide S", lambda: plan.division),
        ]:
            t = time.perf_counter()
            step()
            stages[name] = time.perf_counter() - t
        for name in configs:
            t = time.perf_counter()
            load_dataset("csc_bench", name, cache_dir=str(Path(tmp) / "cache"), **params)
            stages[f"config {name}"] = time.perf_counter() - t
        total = time.perf_counter() - start

        print(f"corpus: {len(plan.sentences):,} sentences ({len(plan.packed.codes):,} characters)")
        for name, seconds in stages.items():
            print(f"  {name:<24} {seconds:7.2f} s")
        print(
            f"all {len(configs)} configs: {total:.1f} s, {len(plan.sentences) / total:,.0f} sentences/s, "
            f"peak RSS {peak_rss_gb():.2f} GB"
        )

        # The substitution step alone against the literal loop, on the same sentences and confusion set.
        sample = plan.sentences[: args.loop_sentences]
        table = plan.division.train
        lists = {k: list(v) for k, v in table.items()}
        t = time.perf_counter()
        literal_substitution(sample, lists, 0.05, seed=0)
        loop = time.perf_counter() - t
        t = time.perf_counter()
        packed = pack(sample)
        substitute(packed, table.table, 0.05, seed=0)
        vectorised = time.perf_counter() - t
        print(
            f"substitution of {len(sample):,} sentences: literal loop {loop:.2f} s, vectorised (pack included) "
            f"{vectorised:.3f} s: {loop / vectorised:.1f}x faster"
        )


if __name__ == "__main__":
    main()
