"""A smoke study killed during its trainings (by its own PID, right after a checkpoint is saved: a deterministic point),
once while it pretrains and once while it fine-tunes, and resumed each time, ends with the same weights, byte for
byte, and the same scores as an uninterrupted run (issue 14, item 1; issue 29, item 7). The kill leaves the stage's
lock behind, with the dead pid: the resumed run takes it over (issue 29, item 8). A resumed stage's time counts its
earlier pieces."""

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
        [sys.executable, "-m", "csc_hf", "run", "--preset", str(preset), "--output", str(run_dir), "--no-estimate"],
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


def weights(run_dir: Path, stage: str) -> bytes:
    [folder] = (run_dir / "stages").glob(f"{stage}-*")
    return (folder / "model.safetensors").read_bytes()


@pytest.mark.slow
def test_killed_study_resumes_to_the_same_weights_and_scores(tmp_path):
    preset = yaml.safe_load((ROOT / "trainer_configs" / "presets" / "smoke.yaml").read_text(encoding="utf-8"))
    preset.update(variants=["bert"], tests=["test"], bootstrap=20)  # bert only: deterministic on CPU
    preset.pop("augmentation", None)
    preset.pop("training_sets", None)  # the grid's bert alone: one train-bert-seed0 stage
    preset["pretrain"].update(max_steps=20, save_strategy="steps", save_steps=7)  # checkpoints 7, 14, 20
    preset["finetune"].update(save_strategy="steps", save_steps=10)  # checkpoints 10, 20, 30
    path = tmp_path / "resume.yaml"
    path.write_text(yaml.safe_dump(preset, allow_unicode=True), encoding="utf-8")

    whole = study(path, tmp_path / "whole")
    assert whole.returncode == 0, whole.stderr[-2000:]
    part = tmp_path / "part"
    killed = study(path, part, CSC_HF_KILL_AFTER_SAVE="7")  # SIGKILL after the pretraining's checkpoint-7
    assert killed.returncode == -9, killed.stderr[-2000:]
    [pretrained] = (part / "stages").glob("pretrain-*")
    assert (pretrained / "checkpoint-7").is_dir() and not (pretrained / "done.json").exists()
    assert (pretrained / "stage.lock").is_file()  # left by the killed process: taken over below
    killed = study(path, part, CSC_HF_KILL_AFTER_SAVE="10")  # resumes the pretraining; SIGKILL after bert's 10
    assert killed.returncode == -9, killed.stderr[-2000:]
    assert f"resuming from {pretrained / 'checkpoint-7'}" in killed.stderr and (pretrained / "done.json").is_file()
    [stage] = (part / "stages").glob("train-bert-seed0-*")
    assert (stage / "checkpoint-10").is_dir() and not (stage / "done.json").exists()
    assert not (part / "results.json").exists()
    finished = (pretrained / "done.json").stat().st_mtime_ns
    resumed = study(path, part)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert (pretrained / "done.json").stat().st_mtime_ns == finished  # the finished pretraining is not redone
    assert f"resuming from {stage / 'checkpoint-10'}" in resumed.stderr
    assert not list((part / "stages").glob("*/stage.lock"))  # every lock released
    for trained in ("pretrain", "train-bert-seed0"):
        assert weights(part, trained) == weights(tmp_path / "whole", trained), trained
        # a resumed stage's time counts its earlier pieces up to the checkpoint it resumed from
        [done] = (part / "stages").glob(f"{trained}-*/done.json")
        [whole_done] = (tmp_path / "whole" / "stages").glob(f"{trained}-*/done.json")
        record = json.loads(done.read_text(encoding="utf-8"))
        assert 0 < record["earlier_seconds"] < record["seconds"], trained
        assert "earlier_seconds" not in json.loads(whole_done.read_text(encoding="utf-8")), trained
    assert scores(part) == scores(tmp_path / "whole")
