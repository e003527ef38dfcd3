"""Benchmark: training samples/s of the `cpu` preset's model (bert variant, 4 layers, hidden 256) with one process
and with two gloo processes (`accelerate launch`, trainer_configs/accelerate/cpu_2proc.yaml) at the same effective
batch, in the same run.

    python bench/bench_train.py [--steps 60] [--variant bert]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from csc_hf.study import Preset

ROOT = Path(__file__).resolve().parents[1]
MODEL = Preset.load("cpu").model  # the encoder of the cpu preset (one home for its sizes)


def run(config: dict, folder: Path, processes: int) -> float:
    """Train with ``processes`` processes; returns the Trainer's train_samples_per_second."""
    path = folder / f"p{processes}.yaml"
    path.write_text(yaml.safe_dump({**config, "output_dir": str(folder / f"p{processes}")}), encoding="utf-8")
    launcher = [sys.executable, "-m", "accelerate.commands.launch", "--config_file",
                str(ROOT / "trainer_configs/accelerate/cpu_2proc.yaml")] if processes == 2 else [sys.executable]
    subprocess.run([*launcher, "-m", "csc_hf.train", str(path)], check=True, cwd=ROOT, capture_output=True)
    history = json.loads((folder / f"p{processes}" / "csc_training.json").read_text())["log_history"]
    return next(h["train_samples_per_second"] for h in history if "train_samples_per_second" in h)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--variant", default="bert")
    parser.add_argument("--batch", type=int, default=32, help="effective batch (split over the processes)")
    args = parser.parse_args()
    config = {"task": "correction", "variant": args.variant, "model_overrides": MODEL, "max_steps": args.steps,
              "learning_rate": 0.001, "train_sampling_strategy": "group_by_length", "save_strategy": "no",
              "report_to": "none", "use_cpu": True, "disable_tqdm": True, "max_train_samples": args.steps * args.batch}
    with tempfile.TemporaryDirectory() as tmp:
        one = run({**config, "per_device_train_batch_size": args.batch}, Path(tmp), 1)
        two = run({**config, "per_device_train_batch_size": args.batch // 2}, Path(tmp), 2)
    print(f"{args.variant} (4 layers, hidden 256), {args.steps} steps of {args.batch} sentences:")
    print(f"  1 process:   {one:7.1f} samples/s")
    print(f"  2 processes: {two:7.1f} samples/s  ({two / one:.2f}x)")


if __name__ == "__main__":
    main()
