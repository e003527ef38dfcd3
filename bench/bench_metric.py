"""Benchmark csc_hf.scoring.score and the evaluate module against a straightforward per-sentence Python loop.

Synthesizes N deterministic sentence triples (random CJK characters U+4E00..U+9FA5, lengths
30..62, mean 46; about half with 1-3 errors; a simulated system that fixes most errors, makes
some false changes and changes the length of 1% of the predictions), then times

* ``score(..., bootstrap=0)`` on all N triples (vectorized path),
* the plain loop on the first ``--loop-n`` triples, extrapolated linearly to N,
* ``evaluate.load("metrics/csc").compute`` on the first ``--evaluate-n`` triples (one call, and ten
  ``add_batch`` calls then ``compute``) against the plain loop measured on the same triples, and
  ``score(..., alignment=True)`` on them,
* ``score(..., bootstrap=1000)`` on the first ``--bootstrap-n`` triples,

and checks that the loop, the vectorized scorer and the evaluate module agree exactly.

    python bench/bench_metric.py            # 1M triples
    python bench/bench_metric.py --n 20000  # quick run
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import time
from collections import Counter
from pathlib import Path

import numpy as np

from csc_hf import hardware
from csc_hf.scoring import align, score, scores_from_totals

METRIC = str(Path(__file__).resolve().parents[1] / "metrics" / "csc")

CJK_FIRST, CJK_LAST = 0x4E00, 0x9FA5


def synthesize(n: int, seed: int = 0) -> tuple[list[str], list[str], list[str]]:
    """Deterministic (sources, predictions, references) with the properties described above."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(30, 63, n)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    total = int(lengths.sum())
    span = CJK_LAST - CJK_FIRST + 1

    def shifted(chars: np.ndarray) -> np.ndarray:  # a different CJK character
        return (chars - CJK_FIRST + rng.integers(1, span, len(chars))) % span + CJK_FIRST

    reference = rng.integers(CJK_FIRST, CJK_LAST + 1, total).astype(np.uint32)
    n_errors = np.where(rng.random(n) < 0.5, rng.choice([1, 2, 3], n, p=[0.7, 0.2, 0.1]), 0)
    owner = np.repeat(np.arange(n), n_errors)
    errors = starts[owner] + (rng.random(len(owner)) * lengths[owner]).astype(np.int64)
    source = reference.copy()
    source[errors] = shifted(reference[errors])

    prediction = source.copy()
    outcome = rng.random(len(errors))
    fixed, miscorrected = errors[outcome < 0.8], errors[(outcome >= 0.8) & (outcome < 0.9)]
    prediction[fixed] = reference[fixed]
    prediction[miscorrected] = shifted(reference[miscorrected])
    noisy = np.flatnonzero(rng.random(n) < 0.1)
    false_changes = starts[noisy] + (rng.random(len(noisy)) * lengths[noisy]).astype(np.int64)
    prediction[false_changes] = shifted(source[false_changes])

    def split(chars: np.ndarray) -> list[str]:
        text = chars.astype("<u4").tobytes().decode("utf-32-le")
        return [text[a:b] for a, b in zip(starts.tolist(), (starts + lengths).tolist())]

    sources, predictions, references = split(source), split(prediction), split(reference)
    for i in np.flatnonzero(rng.random(n) < 0.01).tolist():  # seq2seq-style length changes
        cut = int(rng.integers(0, lengths[i]))
        p = predictions[i]
        predictions[i] = p[:cut] + p[cut + 1 :] if rng.random() < 0.5 else p[:cut] + chr(CJK_FIRST) + p[cut:]
    return sources, predictions, references


def cpu_line() -> str:
    """The CPU's model, the flags that matter for speed (`csc_hf.hardware.describe`), and the load (other jobs share
    the machine)."""
    return f"{hardware.describe()}; load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}"


def loop_totals(sources: list[str], predictions: list[str], references: list[str]) -> Counter:
    """The scorer's count definitions, one sentence at a time in plain Python."""
    totals: Counter = Counter()
    for source, prediction, reference in zip(sources, predictions, references):
        gold = {i: r for i, (s, r) in enumerate(zip(source, reference)) if s != r}
        if len(prediction) == len(source):
            edits, indels = {i: p for i, (s, p) in enumerate(zip(source, prediction)) if s != p}, 0
        else:
            substitutions, indels = align(source, prediction)
            edits = dict(substitutions)
        changes = len(edits) + indels
        det_exact = indels == 0 and edits.keys() == gold.keys()
        cor_exact = indels == 0 and edits == gold
        row = {
            "sentences": 1,
            "error_sentences": bool(gold),
            "changed_sentences": changes > 0,
            "clean_changed": changes > 0 and not gold,
            "det_exact": det_exact,
            "cor_exact": cor_exact,
            "det_tp": det_exact and changes > 0,
            "cor_tp": cor_exact and changes > 0,
            "gold_errors": len(gold),
            "changes": changes,
            "det_hits": sum(i in edits for i in gold),
            "cor_hits": sum(edits.get(i) == r for i, r in gold.items()),
            "indels": indels,
            "length_mismatch": len(prediction) != len(source),
        }
        bucket = "nerr1" if len(gold) == 1 else "nerr2" if len(gold) == 2 else "nerr3plus" if gold else None
        for name in ("nerr1", "nerr2", "nerr3plus"):
            for column in ("error_sentences", "det_tp", "cor_tp", "gold_errors", "det_hits", "cor_hits"):
                totals[f"{name}_{column}"] += row[column] if name == bucket else 0
        totals.update({key: int(value) for key, value in row.items()})
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000, help="sentence triples to score (default 1M)")
    parser.add_argument("--loop-n", type=int, default=50_000, help="triples for the Python loop (extrapolated)")
    parser.add_argument("--evaluate-n", type=int, default=100_000, help="triples for the evaluate module and its loop")
    parser.add_argument("--bootstrap-n", type=int, default=10_000, help="triples for the bootstrap timing")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    loop_n, bootstrap_n, evaluate_n = (min(k, args.n) for k in (args.loop_n, args.bootstrap_n, args.evaluate_n))

    started = time.perf_counter()
    sources, predictions, references = synthesize(args.n, args.seed)
    synth_s = time.perf_counter() - started
    n_chars = sum(map(len, sources))
    machine = platform.processor() or platform.machine()
    print(f"machine: {machine}, numpy {np.__version__}, python {platform.python_version()}; {cpu_line()}")
    mean_length = n_chars / args.n
    print(
        f"data: {args.n:,} triples, {n_chars:,} source chars (mean length {mean_length:.1f}), "
        f"synthesized in {synth_s:.1f} s"
    )

    started = time.perf_counter()
    result = score(sources, predictions, references, bootstrap=0)
    vector_s = time.perf_counter() - started
    print(
        f"score(bootstrap=0), {args.n:,} triples: {vector_s:.2f} s "
        f"({result['n_error_sentences']:,} with errors, {result['n_length_mismatch']:,} length mismatches; "
        f"sent_cor_f1={result['sent_cor_f1']:.4f}, char_cor_f1={result['char_cor_f1']:.4f}, fpr={result['fpr']:.4f})"
    )

    started = time.perf_counter()
    totals = loop_totals(sources[:loop_n], predictions[:loop_n], references[:loop_n])
    loop_s = time.perf_counter() - started
    loop_scores = scores_from_totals(totals)
    subset = score(sources[:loop_n], predictions[:loop_n], references[:loop_n], bootstrap=0)
    assert all(subset[key] == value for key, value in loop_scores.items()), "loop and vectorized scores differ"
    extrapolated = loop_s * args.n / loop_n
    note = "measured" if loop_n == args.n else f"measured on {loop_n:,}, extrapolated linearly"
    print(f"python loop, {args.n:,} triples: {extrapolated:.1f} s ({note}); identical scores on the loop subset")
    print(f"speed-up of score() over the loop: {extrapolated / vector_s:.1f}x")

    evaluate_module(sources[:evaluate_n], predictions[:evaluate_n], references[:evaluate_n])

    started = time.perf_counter()
    score(sources[:bootstrap_n], predictions[:bootstrap_n], references[:bootstrap_n], bootstrap=1000)
    print(f"score(bootstrap=1000), {bootstrap_n:,} triples: {time.perf_counter() - started:.2f} s")
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


def evaluate_module(sources: list[str], predictions: list[str], references: list[str]) -> None:
    """Time the evaluate module (one compute call; ten add_batch calls and a compute) against the plain loop on the
    same triples, each the best of three runs, and check that all give the same scores."""
    import evaluate

    n = len(sources)
    csc = evaluate.load(METRIC)

    def best(run) -> tuple[float, object]:
        times, result = [], None
        for _ in range(3):
            started = time.perf_counter()
            result = run()
            times.append(time.perf_counter() - started)
        return min(times), result

    loop_s, totals = best(lambda: loop_totals(sources, predictions, references))
    compute_s, result = best(lambda: csc.compute(sources=sources, predictions=predictions, references=references))

    def batches():
        step = -(-n // 10)
        for start in range(0, n, step):
            part = slice(start, start + step)
            csc.add_batch(sources=sources[part], predictions=predictions[part], references=references[part])
        return csc.compute()

    batches_s, batched = best(batches)
    aligned_s, _ = best(lambda: score(sources, predictions, references, bootstrap=0, alignment=True))
    expected = scores_from_totals(totals)
    assert all(result[k] == v and batched[k] == v for k, v in expected.items()), "scores differ"
    # alignment=True reads a prediction of another length closest to the gold: on a tie it may differ from the loop
    same = [i for i, (s, p) in enumerate(zip(sources, predictions)) if len(s) == len(p)]
    subset = [[column[i] for i in same] for column in (sources, predictions, references)]
    aligned = score(*subset, bootstrap=0, alignment=True)
    assert all(aligned[k] == v for k, v in scores_from_totals(loop_totals(*subset)).items()), "alignment differs"
    print(f"python loop, {n:,} triples: {loop_s:.2f} s (measured, best of 3)")
    print(
        f"evaluate compute, {n:,} triples: {compute_s:.3f} s; {loop_s / compute_s:.1f}x the loop's speed "
        "(identical scores)"
    )
    print(
        f"evaluate add_batch x10 + compute, {n:,} triples: {batches_s:.3f} s; "
        f"{loop_s / batches_s:.1f}x the loop's speed"
    )
    print(
        f"score(alignment=True), {n:,} triples: {aligned_s:.3f} s; {loop_s / aligned_s:.1f}x the loop's speed "
        f"(identical scores on the {len(same):,} predictions of the source's length)"
    )


if __name__ == "__main__":
    main()
