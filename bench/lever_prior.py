"""Lever probe (issue 12): a character-similarity prior at decoding, for errors the model never saw.

For every Han source character, the prior adds ``similarity_prior`` to the logits of the characters that sound or
look like it by character knowledge alone (``Corrector.similar_tokens``: ``csc_hf.confusion.similar_characters``
over the model's whole vocabulary: same or fuzzy-similar pinyin syllable of the first dictionary reading, up to 40
candidates; close strokes and glyphs, up to 12) — never the training pairs. The source keeps ``keep_bias``. The
library decodes so with ``Corrector(similarity_prior=..., keep_bias=...)``; this probe decodes every (keep_bias,
similarity_prior) cell from one forward pass per split (``Corrector.correct_each``, fp32, one thread) and scores
each with ``csc_hf.score`` (character-level correction F1, FPR). Cells are named ``keep_bias/similarity_prior``
(``csc_hf.evaluation.decoding_cell``), as ``csc_hf.evaluation.tune_decoding`` names them; ``0/0`` is the model's own
decoding.

    python bench/lever_prior.py MODEL_DIR --output prior.json [--splits train/validation test/test unseen_k/test ...]

Note that the benchmark's confusion set S was drawn by the same similarity criteria (within 3,500 characters and
the per-key caps), so the prior knows how S was made — not which pairs the division holds out.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import torch

from csc_hf import score
from csc_hf.benchmark.builder import load_dataset
from csc_hf.evaluation import decoding_cell
from csc_hf.pipeline import Corrector

SPLITS = ["train/validation", "test/test", "unseen_k/test", "unseen_v/test", "sighan15/test", "clean/test"]
PRIORS = (0.0, 1.0, 2.0, 3.0, 4.0, 6.0)
KEEP_BIASES = (0.0, 1.0, 2.0, 3.0, 4.0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("--output", required=True)
    parser.add_argument("--splits", nargs="+", default=SPLITS, help="CONFIG/SPLIT of the default benchmark")
    parser.add_argument("--validation-sentences", type=int, default=1000, help="as the study tunes keep_bias")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    corrector = Corrector.from_pretrained(args.model, precision="fp32")
    results = {}
    for spec in args.splits:
        config, split = spec.split("/")
        data = load_dataset("csc_bench", config, split=split)
        if split == "validation":
            data = data.select(range(min(args.validation_sentences, len(data))))
        sources, targets = list(data["source"]), list(data["target"])
        cells = [(keep_bias, prior) for keep_bias in KEEP_BIASES for prior in PRIORS]
        start = time.perf_counter()
        each = corrector.correct_each(sources, [{"keep_bias": b, "similarity_prior": p} for b, p in cells])
        seconds = round(time.perf_counter() - start, 1)
        grid = {}
        for cell, predictions in zip(cells, each):
            scores = score(sources, predictions, targets, bootstrap=0)
            grid[decoding_cell(*cell)] = {
                k: round(scores[k], 4) for k in ("char_cor_f1", "char_cor_p", "char_cor_r", "char_det_f1", "fpr")
            }
        results[spec] = {"sentences": len(sources), "decode_s": seconds, "grid": grid}
        best = max(grid, key=lambda cell: grid[cell]["char_cor_f1"])
        print(
            f"{spec}: keep_bias/similarity_prior 0/0 {grid[decoding_cell(0, 0)]}; best {best} {grid[best]}",
            file=sys.stderr,
            flush=True,
        )
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump({"model": args.model, "cells": "keep_bias/similarity_prior", "splits": results}, f, indent=1)


if __name__ == "__main__":
    main()
