"""oneDNN's primitive cache against batches whose shape changes at every step: the glyph CNN's training steps.

A glyph side encoder (`csc_hf.modeling.modeling_csc.GlyphCNN`, at `CSCConfig`'s default sizes) encodes one row per
distinct character of a batch, so a fine-tuning step hands its convolutions a new batch size at nearly every step.
oneDNN compiles a primitive (a kernel and its buffers) for each shape and keeps ``ONEDNN_PRIMITIVE_CACHE_CAPACITY`` of
them (1,024 by default). Each capacity runs in a process of its own (oneDNN reads the variable once): training steps
(forward under bf16 autocast where the CPU computes bf16, backward, AdamW) over every batch size of each block of
``--sizes``, each once (new shapes), then every fourth of them again (shapes it has just seen), with the process's
resident memory after each block and each run's time against the first run's. The CNN pads its rows with blank glyphs
to a multiple of `GlyphCNN.ROWS` (64), so that a few shapes serve every step; ``--pad`` sets that multiple for each
run in turn, 1 for none (how the CNN ran before).

    python bench/bench_primitive_cache.py [--capacities 1024 16384] [--pad 1 64] [--sizes 200:1400:200] [--threads 1]
"""

import argparse
import json
import os
import subprocess
import sys
import time


def resident_mb() -> int:
    with open("/proc/self/status", encoding="utf-8") as status:
        return int(status.read().split("VmRSS:")[1].split()[0]) // 1024


def child(start: int, stop: int, block: int, threads: int, pad: int) -> None:
    """Run the steps in this process and print one JSON line per block of batch sizes."""
    import torch

    from csc_hf.modeling import CSCConfig
    from csc_hf.modeling.modeling_csc import GlyphCNN
    from csc_hf.precision import resolved

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    config = CSCConfig()
    model = GlyphCNN(config.glyph_fonts, config.glyph_size, config.glyph_channels, config.side_size)
    model.ROWS = pad  # its rows padded to a multiple of this (1: not padded)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    bf16 = resolved("auto") == "bf16"
    shape = (config.glyph_fonts, config.glyph_size, config.glyph_size)

    def step(rows: int) -> None:
        glyphs = torch.randint(0, 256, (rows, *shape), dtype=torch.uint8)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            out = model(glyphs)
        out.float().square().mean().backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for low in range(start, stop, block):
        sizes = range(low, min(low + block, stop))
        timed = {}
        for name, rows in (("new", sizes), ("seen", sizes[::4])):
            begin = time.perf_counter()
            for n in rows:
                step(n)
            timed[name] = (time.perf_counter() - begin) / len(rows)
        print(json.dumps({"sizes": [sizes[0], sizes[-1]], **timed, "rss_mb": resident_mb()}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--capacities", type=int, nargs="+", default=[1024, 16384], help="primitive cache sizes")
    parser.add_argument("--sizes", default="200:1400:200", help="START:STOP:BLOCK, the batch sizes (rows) stepped")
    parser.add_argument(
        "--pad", type=int, nargs="+", default=[1, 64], help="pad the rows to a multiple of each (1: none)"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    try:
        start, stop, block = (int(part) for part in args.sizes.split(":"))
    except ValueError:
        parser.error(f"--sizes {args.sizes!r}: expected START:STOP:BLOCK, three integers")
    if not 0 < start < stop or block < 4:
        parser.error(f"--sizes {args.sizes!r}: expected 0 < START < STOP and BLOCK >= 4")
    if min(args.pad) < 1:
        parser.error(f"--pad {args.pad}: expected numbers >= 1")
    if args.child:
        child(start, stop, block, args.threads, args.pad[0])
        return
    from csc_hf import hardware

    print(f"{hardware.describe()}; {args.threads} torch thread(s); the glyph CNN's training step, each batch size once")
    rows = {}
    for pad in args.pad:
        for capacity in args.capacities:
            env = {**os.environ, "ONEDNN_PRIMITIVE_CACHE_CAPACITY": str(capacity), "OMP_NUM_THREADS": str(args.threads)}
            command = [sys.executable, __file__, "--child", "--sizes", args.sizes, "--threads", str(args.threads)]
            out = subprocess.run([*command, "--pad", str(pad)], env=env, capture_output=True, text=True, check=True)
            rows[capacity, pad] = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    reference = (args.capacities[0], args.pad[0])
    header = f"{'capacity':>8} {'pad':>4} {'batch sizes':>12} {'new s/step':>11} {'seen s/step':>12} {'RSS MB':>7}"
    print(f"{header}  new against capacity {reference[0]}, pad {reference[1]}")
    for (capacity, pad), blocks in rows.items():
        for block, base in zip(blocks, rows[reference]):
            span = f"{block['sizes'][0]}-{block['sizes'][1]}"
            times = f"{block['new']:11.4f} {block['seen']:12.4f} {block['rss_mb']:7d}"
            print(f"{capacity:>8} {pad:>4} {span:>12} {times}  {block['new'] / base['new']:.2f}x")


if __name__ == "__main__":
    main()
