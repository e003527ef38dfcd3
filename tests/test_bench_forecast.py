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
