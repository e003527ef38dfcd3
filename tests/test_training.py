import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from csc_hf.training import CorrectionCollator, encode_pairs, load_config

ROOT = Path(__file__).resolve().parents[1]
TINY = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64,
        "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}


def write_config(path: Path, **config) -> Path:
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return path


def base_config(small_params, out: Path, **extra) -> dict:
    return {"task": "mlm", "model_overrides": TINY, "bench_params": small_params, "output_dir": str(out),
            "max_steps": 12, "per_device_train_batch_size": 16, "learning_rate": 0.003, "use_cpu": True,
            "report_to": "none", "save_strategy": "no", "logging_steps": 4, "seed": 3, "disable_tqdm": True,
            "max_eval_samples": 32, "train_sampling_strategy": "sequential", "eval_strategy": "no", **extra}


def run_train(config: Path, *launcher: str, timeout: int = 300) -> subprocess.CompletedProcess:
    command = [*launcher, "-m", "csc_hf.train", str(config)] if launcher else [sys.executable, "-m", "csc_hf.train", str(config)]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"})


def final_loss(out: Path) -> float:
    history = json.loads((out / "csc_training.json").read_text())["log_history"]
    return [h["loss"] for h in history if "loss" in h][-1]


def test_unknown_key_and_bad_values_are_clear_errors(tmp_path, small_params):
    bad = write_config(tmp_path / "bad.yaml", **base_config(small_params, tmp_path / "o"), learnin_rate=0.1)
    with pytest.raises(ValueError, match=r"bad.yaml: unknown keys \['learnin_rate'\]"):
        load_config(bad)
    with pytest.raises(FileNotFoundError, match="nope.yaml does not exist"):
        load_config(tmp_path / "nope.yaml")
    (tmp_path / "empty.yaml").write_text("# nothing yet\n", encoding="utf-8")
    with pytest.raises(ValueError, match="empty.yaml: expected a non-empty mapping"):
        load_config(tmp_path / "empty.yaml")
    good = write_config(tmp_path / "good.yaml", **base_config(small_params, tmp_path / "o"))
    with pytest.raises(ValueError, match="variant='bertt'"):
        load_config(good, ["task=correction", "variant=bertt"])
    with pytest.raises(ValueError, match=r"bench_params: unknown keys \['seeed'\]"):
        load_config(good, ["bench_params={seeed: 1}"])
    result = run_train(bad)
    assert result.returncode == 2 and "unknown keys ['learnin_rate']" in result.stderr


def test_encode_and_collate(small_params):
    from csc_hf.modeling import CSCTokenizer

    tok = CSCTokenizer.from_texts(["我们今天去学校", "门"])
    enc = encode_pairs(tok, ["我门今天去学校"], ["我们今天去学校"], max_length=64)
    assert len(enc["input_ids"][0]) == 9 and enc["labels"][0][0] == enc["labels"][0][-1] == -100
    bart = encode_pairs(tok, ["我门今天去学校"], ["我们今天去学校"], max_length=64, seq2seq=True)["labels"][0]
    assert bart[0] == tok.cls_token_id and bart[-1] == tok.sep_token_id and bart[1:-1] == enc["labels"][0][1:-1]
    batch = CorrectionCollator(tok, mask_rate=0.999)([{"input_ids": enc["input_ids"][0], "labels": enc["labels"][0]},
                                                       {"input_ids": [2, 5, 3], "labels": [-100, 5, -100]}])
    assert batch["input_ids"].shape == batch["labels"].shape == (2, 9)
    masked = batch["input_ids"][0] == tok.mask_token_id
    assert masked[1:].sum() >= 5 and not masked[2]  # the wrong character (门) is never masked
    assert batch["attention_mask"][1].tolist() == [1, 1, 1] + [0] * 6


def logits_of(folder: Path):
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    import csc_hf.modeling  # noqa: F401  (registers the Auto classes)

    model = AutoModelForMaskedLM.from_pretrained(folder).eval()
    ids = AutoTokenizer.from_pretrained(folder)(["我们今天去学校上课。"], return_tensors="pt")["input_ids"]
    with torch.no_grad():
        return model(input_ids=ids).logits


@pytest.mark.slow
def test_two_processes_match_one(tmp_path, small_params):
    """Two gloo processes with batch 8 each = one process with batch 16: same data, same updates, same model."""
    correction = dict(task="correction", variant="bert", mask_rate=0.0)
    one = write_config(tmp_path / "one.yaml", **base_config(small_params, tmp_path / "one", **correction))
    two = write_config(tmp_path / "two.yaml", **base_config(small_params, tmp_path / "two", per_device_train_batch_size=8, **correction))
    r1 = run_train(one)
    assert r1.returncode == 0, r1.stderr[-2000:]
    accelerate = [sys.executable, "-m", "accelerate.commands.launch", "--config_file",
                  str(ROOT / "trainer_configs" / "accelerate" / "cpu_2proc.yaml")]
    r2 = run_train(two, *accelerate)
    assert r2.returncode == 0, r2.stderr[-2000:]
    assert final_loss(tmp_path / "two") == pytest.approx(final_loss(tmp_path / "one"), rel=1e-3)
    a, b = logits_of(tmp_path / "one"), logits_of(tmp_path / "two")
    assert (a - b).abs().max().item() < 1e-3 * a.abs().max().item()


@pytest.mark.slow
def test_killed_run_resumes_to_the_same_result(tmp_path, small_params):
    common = dict(max_steps=30, save_strategy="steps", save_steps=5, train_sampling_strategy="group_by_length",
                  task="correction", variant="bert", mask_rate=0.0)
    whole = write_config(tmp_path / "whole.yaml", **base_config(small_params, tmp_path / "whole", **common))
    assert run_train(whole).returncode == 0
    part = write_config(tmp_path / "part.yaml", **base_config(small_params, tmp_path / "part", **common))
    process = subprocess.Popen([sys.executable, "-m", "csc_hf.train", str(part)], cwd=ROOT, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    deadline = time.time() + 240
    while not list((tmp_path / "part").glob("checkpoint-10")) and time.time() < deadline and process.poll() is None:
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert list((tmp_path / "part").glob("checkpoint-*")) and not (tmp_path / "part" / "csc_training.json").exists()
    assert run_train(part).returncode == 0
    a, b = logits_of(tmp_path / "whole"), logits_of(tmp_path / "part")
    assert (a - b).abs().max().item() < 1e-4 * a.abs().max().item()
