"""bench/bench_forecast.py: a run's finished stages against its start's forecast."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "bench_forecast.py"


def test_rows_and_sums_of_a_runs_stages_against_its_forecast(tmp_path):
    machine = "AMD EPYC (family 23, model 1), 2 usable CPUs; flags: avx2 fma; compute path: fp32 (AVX2)"
    run = tmp_path / "run"
    forecast = {"train-bert-seed0-aa": 100.0, "eval-train-bert-seed0-aa-bb": 50.0, "train-plome-seed0-cc": 80.0}
    (run / "workers").mkdir(parents=True)
    (run / "workers" / "forecast.json").write_text(
        json.dumps({"machine": f"{machine}; 2/1 threads", "stages": forecast})
    )
    done = {
        "train-bert-seed0-aa": {"seconds": 120.0, "cpu": machine},
        "eval-train-bert-seed0-aa-bb": {"seconds": 45.0, "cpu": "Intel Xeon, 2 usable CPUs", "earlier_seconds": 5.0},
    }  # plome has not finished
    for name, marker in done.items():
        (run / "stages" / name).mkdir(parents=True)
        (run / "stages" / name / "done.json").write_text(json.dumps(marker))
    spec = importlib.util.spec_from_file_location("bench_forecast", SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    shown, rows = bench.stage_rows(run)
    assert shown == f"{machine}; 2/1 threads" and [r["stage"] for r in rows] == list(done)
    assert [(r["kind"], r["forecast"], r["measured"], r["resumed"]) for r in rows] == [
        ("train", 100.0, 120.0, False),
        ("eval", 50.0, 45.0, True),
    ]
    out = subprocess.run([sys.executable, str(SCRIPT), str(run)], capture_output=True, text=True, check=True).stdout
    assert "train: 1 stages, forecast 100 s, measured 120 s, 1.20x" in out
    assert "all: 2 stages, forecast 150 s, measured 165 s, 1.10x" in out
    assert "0.90  resumed  (another machine)" in out and "1.20\n" in out


def test_the_progress_lines_eta_against_the_runs_end(tmp_path):
    """``--log``: each stage line's promised end (its time plus its ETA, read across midnight), against the time of
    the run's last line; lines without an ETA and other messages are left out."""
    run = tmp_path / "run"
    (run / "workers").mkdir(parents=True)
    (run / "workers" / "forecast.json").write_text(json.dumps({"machine": "m", "stages": {}}))
    log = tmp_path / "study.log"
    log.write_text(
        "[csc_hf 22:00:00] stage 1/3: build the training and 17 test configs · elapsed 0:00:00\n"
        "Generating test split: 2500 examples\n"
        "[csc_hf 22:02:00] stage 2/3: pretrain the encoder (6000 steps of masked LM) · elapsed 0:02:00 · ETA ~2:00:00\n"
        "[csc_hf 23:30:00] step 5000/6000: {'loss': 3.1}\n"
        "[csc_hf 23:50:00] stage 3/3: train bert (seed 0) · elapsed 1:50:00 · ETA ≥ 0:40:00\n"
        "[csc_hf 23:51:00] stage 3/3: train bert (seed 1) · elapsed 1 day, 1:51:00 · ETA 1 day, 0:39:00\n"
        "[csc_hf 00:20:00] all 3 stages finished (elapsed 2:20:00)\n",
        encoding="utf-8",
    )
    spec = importlib.util.spec_from_file_location("bench_forecast", SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows, end = bench.eta_rows(log.read_text(encoding="utf-8"), bench.FIRST_DAY)
    assert [(r["stage"], r["eta"]) for r in rows] == [
        ("2/3", "~2:00:00"),
        ("3/3", "≥ 0:40:00"),
        ("3/3", "1 day, 0:39:00"),
    ]
    assert [(r["promised"] - end).total_seconds() / 60 for r in rows] == [-18.0, 10.0, 1440.0 + 10.0]
    out = subprocess.run(
        [sys.executable, str(SCRIPT), str(run), "--log", str(log)], capture_output=True, text=True, check=True
    ).stdout
    assert "00:30:00 +1d          +10 min" in out and "end: 00:20:00 +1d" in out
    log.write_text(log.read_text(encoding="utf-8").rsplit("[csc_hf 00:20", 1)[0], encoding="utf-8")
    assert bench.eta_rows(log.read_text(encoding="utf-8"), bench.FIRST_DAY)[1] is None
