"""Benchmark: training throughput of the `cpu` preset's model (bert variant, 4 layers, hidden 256) in fp32 and in bf16
autocast (the ``precision`` key), with one process and with two gloo processes (`accelerate launch`,
trainer_configs/accelerate/cpu_2proc.yaml) at the same effective batch, all in the same run.

    python bench/bench_train.py [--steps 60] [--processes 1 2] [--precisions fp32 bf16] [--repeats 1] [--threads 1]

On a loaded machine compare the ratios it prints, which are measured side by side (the runs alternate), not the
absolute numbers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from transformers import HfArgumentParser

from csc_hf.run_layout import TRAINING_RECORD
from csc_hf.study import Preset

ROOT = Path(__file__).resolve().parents[1]
MODEL = Preset.load("cpu").model  # the encoder of the cpu preset (one home for its sizes)


@dataclass
class BenchArguments:
    steps: int = field(default=60, metadata={"help": "training steps of each run"})
    variant: str = field(default="bert", metadata={"help": "the model variant trained"})
    batch: int = field(default=32, metadata={"help": "effective batch (split over the processes)"})
    processes: list[int] = field(
        default_factory=lambda: [1, 2], metadata={"help": "process counts to run (1 and/or 2 gloo processes)"}
    )
    precisions: list[str] = field(
        default_factory=lambda: ["fp32", "bf16"],
        metadata={"help": "precisions to run (values of the precision key; the first is the baseline of the ratios)"},
    )
    repeats: int = field(default=1, metadata={"help": "runs of each setting, alternating; the fastest one counts"})
    threads: int | None = field(
        default=None,
        metadata={
            "help": "torch threads of each process (OMP_NUM_THREADS); "
            "default: torch's choice. 1 gives steady numbers on a machine other jobs load"
        },
    )


def run(config: dict, folder: Path, processes: int, threads: int | None) -> dict[str, float]:
    """Train with ``processes`` processes of ``threads`` threads each; returns the Trainer's
    train_samples_per_second and train_steps_per_second."""
    name = f"p{processes}-{config['precision']}"
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump({**config, "output_dir": str(folder / name)}), encoding="utf-8")
    launcher = (
        [
            sys.executable,
            "-m",
            "accelerate.commands.launch",
            "--config_file",
            str(ROOT / "trainer_configs/accelerate/cpu_2proc.yaml"),
        ]
        if processes == 2
        else [sys.executable]
    )
    env = {**os.environ, **({"OMP_NUM_THREADS": str(threads)} if threads else {})}
    subprocess.run([*launcher, "-m", "csc_hf.train", str(path)], check=True, cwd=ROOT, capture_output=True, env=env)
    history = json.loads((folder / name / TRAINING_RECORD).read_text())["log_history"]
    summary = next(h for h in history if "train_samples_per_second" in h)
    return {key: summary[f"train_{key}_per_second"] for key in ("samples", "steps")}


def main() -> None:
    (args,) = HfArgumentParser(BenchArguments, description=__doc__.split("\n\n")[0]).parse_args_into_dataclasses()
    config = {
        "task": "correction",
        "variant": args.variant,
        "model_overrides": MODEL,
        "max_steps": args.steps,
        "learning_rate": 0.001,
        "train_sampling_strategy": "group_by_length",
        "save_strategy": "no",
        "report_to": "none",
        "use_cpu": True,
        "disable_tqdm": True,
        "max_train_samples": args.steps * args.batch,
    }
    best: dict[tuple[int, str], dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeats):
            for processes in args.processes:
                for precision in args.precisions:
                    speed = run(
                        {**config, "per_device_train_batch_size": args.batch // processes, "precision": precision},
                        Path(tmp),
                        processes,
                        args.threads,
                    )
                    print(
                        f"  ({processes} process{'es' * (processes > 1)}, {precision}: {speed['samples']:.1f} "
                        "samples/s)",
                        flush=True,
                    )
                    if speed["samples"] > best.get((processes, precision), {"samples": 0.0})["samples"]:
                        best[processes, precision] = speed
    base = args.precisions[0]
    threads = f"{args.threads} thread{'s' * (args.threads > 1)} per process" if args.threads else "torch's threads"
    sizes = f"{MODEL['num_hidden_layers']} layers, hidden {MODEL['hidden_size']}"
    print(f"{args.variant} ({sizes}), {args.steps} steps of {args.batch} sentences, {threads}, best of {args.repeats}:")
    for processes in args.processes:
        for precision in args.precisions:
            speed = best[processes, precision]
            ratio = speed["samples"] / best[processes, base]["samples"]
            versus_one = (
                (
                    f", {speed['samples'] / best[args.processes[0], precision]['samples']:.2f}x "
                    f"{args.processes[0]} process"
                )
                if processes != args.processes[0]
                else ""
            )
            print(
                f"  {processes} process{'es' * (processes > 1)}, {precision}: {speed['samples']:7.1f} samples/s "
                f"{speed['steps']:6.2f} steps/s  ({ratio:.2f}x {base}{versus_one})"
            )


if __name__ == "__main__":
    main()
