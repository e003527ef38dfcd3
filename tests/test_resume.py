"""A smoke study killed during a training (by its own PID, right after a checkpoint is saved: a deterministic point)
and resumed ends with the same scores as an uninterrupted run (issue 14, item 1)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def study(preset: Path, run_dir: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "csc_hf", "run", "--preset", str(preset), "--output", str(run_dir)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", **env},
    )


def scores(run_dir: Path) -> list[tuple]:
    records = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))["records"]
    return sorted(
        (r["model"], r["seed"], r["config"], r["split"], r["keep_bias"], json.dumps(r["scores"], sort_keys=True))
        for r in records
    )


@pytest.mark.slow
def test_killed_study_resumes_to_the_same_scores(tmp_path):
    preset = yaml.safe_load((ROOT / "trainer_configs" / "presets" / "smoke.yaml").read_text(encoding="utf-8"))
    preset.update(variants=["bert"], tests=["test"], bootstrap=20)  # bert only: deterministic on CPU
    preset.pop("augmentation", None)
    preset["pretrain"].update(max_steps=20)
    preset["finetune"].update(save_strategy="steps", save_steps=10)
    path = tmp_path / "resume.yaml"
    path.write_text(yaml.safe_dump(preset, allow_unicode=True), encoding="utf-8")

    whole = study(path, tmp_path / "whole")
    assert whole.returncode == 0, whole.stderr[-2000:]
    killed = study(path, tmp_path / "part", CSC_HF_KILL_AFTER_SAVE="20")  # SIGKILL after bert's checkpoint-20
    assert killed.returncode == -9, killed.stderr[-2000:]
    [stage] = (tmp_path / "part" / "stages").glob("train-bert-seed0-*")
    assert (stage / "checkpoint-20").is_dir() and not (stage / "done.json").exists()
    assert not (tmp_path / "part" / "results.json").exists()
    [pretrained] = (tmp_path / "part" / "stages").glob("pretrain-*")
    finished = (pretrained / "done.json").stat().st_mtime_ns
    resumed = study(path, tmp_path / "part")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert (pretrained / "done.json").stat().st_mtime_ns == finished  # the finished pretraining is not redone
    assert "resuming" in resumed.stderr
    assert scores(tmp_path / "part") == scores(tmp_path / "whole")
