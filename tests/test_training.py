import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import BART_TINY, BERT_TINY

from csc_hf.training import load_config, read_config, train
from csc_hf.training import run as training_run
from csc_hf.training.data import CorrectionCollator, encode_sentences
from csc_hf.training.run import last_complete_checkpoint

ROOT = Path(__file__).resolve().parents[1]
TINY = {**BERT_TINY, "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}


def write_config(path: Path, **config) -> Path:
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return path


def base_config(small_params, out: Path, **extra) -> dict:
    return {
        "task": "mlm",
        "model_overrides": TINY,
        "bench_params": small_params,
        "output_dir": str(out),
        "max_steps": 12,
        "per_device_train_batch_size": 16,
        "learning_rate": 0.003,
        "use_cpu": True,
        "report_to": "none",
        "save_strategy": "no",
        "logging_steps": 4,
        "seed": 3,
        "disable_tqdm": True,
        "max_eval_samples": 32,
        "train_sampling_strategy": "sequential",
        "eval_strategy": "no",
        **extra,
    }


def run_train(
    config: Path, *launcher: str, timeout: int = 300, cwd: Path = ROOT, **env: str
) -> subprocess.CompletedProcess:
    command = (
        [*launcher, "-m", "csc_hf.train", str(config)]
        if launcher
        else [sys.executable, "-m", "csc_hf.train", str(config)]
    )
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", **env},
    )


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


def test_every_value_is_type_checked_before_any_work(tmp_path, small_params):
    bad = write_config(tmp_path / "bad.yaml", **base_config(small_params, tmp_path / "o", max_steps="abc"))
    with pytest.raises(ValueError, match=r"bad.yaml: max_steps='abc' must be an int"):
        load_config(bad)
    good = write_config(tmp_path / "good.yaml", **base_config(small_params, tmp_path / "o"))
    for override, message in (
        ("max_steps=1.5", "max_steps=1.5 must be an int"),
        ("use_cpu=maybe", "use_cpu='maybe' must be a bool"),
        ("model_overrides=[1]", "must be a mapping"),
        ("fonts=[1, 2]", "must be a list of strs or None"),
        ("bench_params={error_prob: 2}", "bench_params: error_prob=2"),
    ):
        with pytest.raises(ValueError) as info:
            load_config(good, [override])
        assert str(info.value).startswith(f"override {override}: ") and message in str(info.value)
    result = run_train(bad)  # python -m csc_hf.train: one line, no traceback
    assert result.returncode == 2 and result.stderr.strip().splitlines() == [
        f"csc_hf.train: error: {bad}: max_steps='abc' must be an int"
    ]


def test_overrides_keep_text_where_the_key_takes_text(tmp_path, small_params):
    good = write_config(tmp_path / "good.yaml", **base_config(small_params, tmp_path / "o"))
    _, data, training = load_config(
        good,
        [
            "eval_strategy=no",
            "output_dir=123",
            "max_steps=500",
            "save_strategy=steps",
            "max_eval_samples=null",
            "learning_rate=1e-3",
            "report_to=none",
        ],
    )
    assert training.eval_strategy == "no" and training.output_dir == "123" and training.save_strategy == "steps"
    assert training.max_steps == 500 and training.learning_rate == 0.001 and data.max_eval_samples is None


def test_base_configs(tmp_path, small_params):
    write_config(tmp_path / "base.yaml", **base_config(small_params, tmp_path / "o"))
    (tmp_path / "sub").mkdir()
    child = write_config(tmp_path / "sub" / "child.yaml", base="../base.yaml", max_steps=7, seed=9)
    model, data, training = load_config(child)
    assert training.max_steps == 7 and training.seed == 9 and model.task == "mlm" and data.bench_params == small_params
    write_config(tmp_path / "base.yaml", base="sub/child.yaml", max_steps=1)
    with pytest.raises(ValueError, match="leads back to itself"):
        load_config(child)
    write_config(tmp_path / "base.yaml", **base_config(small_params, tmp_path / "o", learning_rate="x"))
    with pytest.raises(
        ValueError, match=r"base.yaml: learning_rate='x' must be a number"
    ):  # the file the key comes from
        load_config(child, ["seed=1"])


def test_finetuning_config_is_the_cpu_presets_stage():
    """trainer_configs/finetune.yaml trains as the cpu preset's fine-tuning stage (less use_cpu: it runs on GPUs too);
    its other keys are a standalone run's own."""
    from csc_hf.study import Preset

    shipped, _ = read_config(ROOT / "trainer_configs" / "finetune.yaml")
    stage = {k: v for k, v in Preset.load("cpu").finetune.items() if k != "use_cpu"}
    assert {k: shipped.get(k) for k in stage} == stage and "use_cpu" not in shipped
    assert set(shipped) - set(stage) == {
        "task",
        "init_from",
        "tokenizer_path",
        "bench_params",
        "seed",
        "per_device_eval_batch_size",
        "eval_strategy",
        "eval_steps",
        "include_for_metrics",
        "dataloader_num_workers",
    }


def test_variant_configs_are_written_from_the_table(tmp_path, monkeypatch):
    """trainer_configs/variants/ holds what write_variant_configs writes from VARIANTS, nothing else: each file is its
    variant and output folder over finetune.yaml (bart: with the cpu preset's BART fields)."""
    from csc_hf.modeling import VARIANTS, CSCTokenizer
    from csc_hf.study import Preset
    from csc_hf.training.config import write_variant_configs

    shipped = ROOT / "trainer_configs" / "variants"
    written = write_variant_configs(tmp_path / "variants")
    assert {p.name: p.read_text() for p in written} == {p.name: p.read_text() for p in shipped.glob("*.yaml")}, (
        "trainer_configs/variants/ differs from csc_hf.modeling.VARIANTS: run "
        "python -c 'from csc_hf.training.config import write_variant_configs; write_variant_configs()'"
    )
    base = read_config(ROOT / "trainer_configs" / "finetune.yaml")[0]
    for variant in VARIANTS:
        config, _ = read_config(shipped / f"{variant.replace('+', '_')}.yaml")
        own = {"variant": variant, "output_dir": f"runs/variants/{variant.replace('+', '_')}"}
        if variant == "bart":
            own["model_overrides"] = Preset.load("cpu").bart
        assert config == {**base, **own}
    monkeypatch.chdir(tmp_path)  # the README's command in a checkout where the encoder is not pretrained yet
    with pytest.raises(
        FileNotFoundError,
        match=r"init_from=runs/pretrain_mlm: the folder does not exist; make it with "
        r"`csc-bench train trainer_configs/pretrain_mlm.yaml`",
    ):
        load_config(ROOT / "trainer_configs" / "variants" / "all_gate.yaml", ["max_steps=500", "seed=1"])
    (tmp_path / "runs" / "pretrain_mlm").mkdir(parents=True)
    (tmp_path / "runs" / "pretrain_mlm" / "config.json").write_text("{}")
    with pytest.raises(
        FileNotFoundError, match="tokenizer_path=runs/pretrain_mlm: the folder holds no tokenizer files"
    ):
        load_config(ROOT / "trainer_configs" / "variants" / "all_gate.yaml")
    CSCTokenizer.from_texts(["我们"]).save_pretrained(tmp_path / "runs" / "pretrain_mlm")
    model, _, training = load_config(
        ROOT / "trainer_configs" / "variants" / "all_gate.yaml", ["max_steps=500", "seed=1"]
    )
    assert model.variant == "all_gate" and training.max_steps == 500 and training.seed == 1


def test_missing_init_from_never_tries_the_hub(tmp_path, small_params):
    config = write_config(
        tmp_path / "c.yaml",
        **base_config(small_params, tmp_path / "o", task="correction", init_from="runs/pretrain_mlm"),
    )
    result = run_train(config, cwd=tmp_path, HF_HUB_OFFLINE="0", HF_ENDPOINT="http://127.0.0.1:9")
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.strip().splitlines() == [
        f"csc_hf.train: error: {config}: init_from=runs/pretrain_mlm: the folder does not exist; make it with "
        "`csc-bench train trainer_configs/pretrain_mlm.yaml`"
    ]


def test_a_bert_checkpoint_trains_over_its_own_vocabulary(tmp_path, small_params, small_corpus):
    """``init_from`` a plain BertForMaskedLM folder with a WordPiece ``vocab.txt`` (as bert-base-chinese or
    macbert4csc) and no ``tokenizer_path``: the model trains from its weights over its vocabulary, with its ids (the
    tokenizer was built from the training text, and the encoder's embeddings no longer fit it)."""
    import torch
    from transformers import BertConfig, BertForMaskedLM

    from csc_hf.modeling import CSCForCorrection

    chars = sorted(set(small_corpus.read_text(encoding="utf-8")) - {"\n"})
    tokens = ["[PAD]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "##的", "中国", *chars]  # WordPiece-like
    bert = tmp_path / "bert"
    BertForMaskedLM(BertConfig(vocab_size=len(tokens), **TINY)).save_pretrained(bert)
    (bert / "vocab.txt").write_text("\n".join(tokens) + "\n", encoding="utf-8")
    # bert-base-chinese also ships a WordPiece tokenizer.json, and a tokenizer_config.json without tokenizer_class
    from tokenizers import Tokenizer
    from tokenizers.models import WordPiece

    from csc_hf.model_folder import start_tokenizer_file

    Tokenizer(WordPiece({t: i for i, t in enumerate(tokens)}, unk_token="[UNK]")).save(str(bert / "tokenizer.json"))
    (bert / "tokenizer_config.json").write_text('{"do_lower_case": false, "model_max_length": 512}', encoding="utf-8")
    assert start_tokenizer_file(bert) == bert / "vocab.txt"  # the characters of its vocabulary, one per token
    config = write_config(
        tmp_path / "c.yaml",
        **base_config(
            small_params,
            tmp_path / "o",
            task="correction",
            variant="bert",
            init_from=str(bert),
            max_steps=2,
            learning_rate=0.0,
        ),
    )
    out = train(*load_config(config))
    vocabulary = json.loads((out / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"]
    assert all(vocabulary[t] == i for i, t in enumerate(tokens) if len(t) == 1) and len(vocabulary) == len(tokens)
    start = BertForMaskedLM.from_pretrained(bert).bert.embeddings.word_embeddings.weight
    trained = CSCForCorrection.from_pretrained(out)
    assert torch.equal(trained.csc.bert.embeddings.word_embeddings.weight, start)  # learning rate 0: as loaded
    (bert / "vocab.txt").unlink()
    with pytest.raises(
        FileNotFoundError,
        match=r"init_from=.*bert: the folder holds no tokenizer files .*give "
        r"tokenizer_path",
    ):
        load_config(config)


def test_local_model_names():
    from csc_hf.model_folder import is_local

    for name in ("runs/pretrain_mlm", "./m", "/abs/m", "~/m", "a/b/c", "bad name", "tests/nothing", "runs"):
        assert is_local(name) == (name != "runs" or Path("runs").exists()), name
    for name in ("bert-base-chinese", "hfl/chinese-bert-wwm", "user/csc-all-gate"):
        assert not is_local(name), name


def test_pretraining_config_is_the_cpu_presets_stage(tmp_path):
    from csc_hf.study import Preset

    preset = Preset.load("cpu")
    stage = {
        "task": "mlm",
        "model_overrides": preset.model,
        "bench_params": preset.bench_params,
        **preset.pretrain,
        "output_dir": "runs/pretrain_mlm",
    }
    assert load_config(ROOT / "trainer_configs" / "pretrain_mlm.yaml") == load_config(
        write_config(tmp_path / "s.yaml", **stage)
    )


def test_resume_skips_incomplete_checkpoints(tmp_path):
    import torch
    from safetensors.torch import save_file

    def checkpoint(step: int, state: bool = True, weights: bool = True) -> Path:
        folder = tmp_path / f"checkpoint-{step}"
        folder.mkdir()
        (folder / "training_args.bin").write_bytes(b"args")
        if weights:
            save_file({"w": torch.zeros(64)}, str(folder / "model.safetensors"))
        if state:
            (folder / "trainer_state.json").write_text(json.dumps({"global_step": step}))
        return folder

    checkpoint(5)
    checkpoint(10)
    (checkpoint(15, state=False) / "training_args.bin").write_bytes(b"")  # killed while saving (issue 14 item 12)
    truncated = checkpoint(20) / "model.safetensors"
    truncated.write_bytes(truncated.read_bytes()[:100])
    (checkpoint(25) / "trainer_state.json").write_text('{"global_st')
    checkpoint(30, weights=False)
    assert last_complete_checkpoint(tmp_path, remove_incomplete=False) == str(tmp_path / "checkpoint-10")
    assert len(list(tmp_path.glob("checkpoint-*"))) == 6
    assert last_complete_checkpoint(tmp_path) == str(tmp_path / "checkpoint-10")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-10", "checkpoint-5"]


def test_encode_and_collate(small_params):
    from csc_hf.modeling import CSCTokenizer

    tok = CSCTokenizer.from_texts(["我们今天去学校", "门"])
    enc = encode_sentences(tok, ["我门今天去学校"], ["我们今天去学校"], max_length=64)
    assert len(enc["input_ids"][0]) == 9 and enc["labels"][0][0] == enc["labels"][0][-1] == -100
    bart = encode_sentences(tok, ["我门今天去学校"], ["我们今天去学校"], max_length=64, seq2seq=True)["labels"][0]
    assert bart[0] == tok.cls_token_id and bart[-1] == tok.sep_token_id and bart[1:-1] == enc["labels"][0][1:-1]
    batch = CorrectionCollator(tok, mask_rate=0.999)(
        [
            {"input_ids": enc["input_ids"][0], "labels": enc["labels"][0]},
            {"input_ids": [2, 5, 3], "labels": [-100, 5, -100]},
        ]
    )
    assert batch["input_ids"].shape == batch["labels"].shape == (2, 9)
    masked = batch["input_ids"][0] == tok.mask_token_id
    assert masked[1:].sum() >= 5 and not masked[2]  # the wrong character (门) is never masked
    assert batch["attention_mask"][1].tolist() == [1, 1, 1] + [0] * 6


def test_masking_depends_on_the_batch_and_seed_only():
    """A resumed run collates its first batch before the Trainer restores the global random state: masks drawn from
    the batch and the seed are the same as in the uninterrupted run."""
    import torch

    from csc_hf.modeling import CSCTokenizer

    tok = CSCTokenizer.from_texts(["我们今天去学校上课，他们在家里看书"])
    enc = encode_sentences(
        tok, ["我们今天去学校上课，他们在家里看书"] * 4, ["我们今天去学校上课，他们在家里看书"] * 4, max_length=64
    )
    examples = [{"input_ids": i, "labels": la} for i, la in zip(enc["input_ids"], enc["labels"])]
    masks = []
    for seed, global_seed in ((0, 1), (0, 2), (1, 1)):
        torch.manual_seed(global_seed)
        masks.append(CorrectionCollator(tok, mask_rate=0.3, seed=seed)(examples)["input_ids"] == tok.mask_token_id)
    assert (
        torch.equal(masks[0], masks[1])
        and not torch.equal(masks[0], masks[2])
        and 0 < masks[0].sum() < masks[0].numel()
    )


def test_masked_fine_tuning_scores_the_validation_sentences_as_they_are(small_params, tmp_path):
    """The training batches carry [MASK]s (mask_rate); the evaluations do not: their gold errors are the validation
    set's own, not one per masked character."""
    from conftest import train_tiny

    from csc_hf import load_dataset

    keys = dict(task="correction", variant="bert", max_steps=1, mask_rate=0.5, include_for_metrics=["inputs"])
    out = train_tiny(small_params, tmp_path / "m", **keys, eval_strategy="steps", eval_steps=1, max_eval_samples=8)
    history = json.loads((out / "csc_training.json").read_text(encoding="utf-8"))["log_history"]
    validation = load_dataset("csc_bench", "train", split="validation", **small_params).select(range(8))
    gold = sum(a != b for s, t in zip(validation["source"], validation["target"]) for a, b in zip(s, t))
    assert 0 < gold < 20 and [e["eval_n_errors"] for e in history if "eval_n_errors" in e] == [gold]


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
    correction = dict(task="correction", variant="bert", mask_rate=0.0, precision="fp32")
    one = write_config(tmp_path / "one.yaml", **base_config(small_params, tmp_path / "one", **correction))
    two = write_config(
        tmp_path / "two.yaml",
        **base_config(small_params, tmp_path / "two", per_device_train_batch_size=8, **correction),
    )
    r1 = run_train(one)
    assert r1.returncode == 0, r1.stderr[-2000:]
    accelerate = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--config_file",
        str(ROOT / "trainer_configs" / "accelerate" / "cpu_2proc.yaml"),
    ]
    r2 = run_train(two, *accelerate)
    # a rank's own error stands above the launcher's long traceback: the lines that name an error, then the end
    why = [line for line in r2.stderr.splitlines() if re.search(r"rror|terminate|what\(\)|Exception", line)]
    assert r2.returncode == 0, "\n".join(why[:40]) + "\n...\n" + r2.stderr[-1500:]
    assert final_loss(tmp_path / "two") == pytest.approx(final_loss(tmp_path / "one"), rel=1e-3)
    a, b = logits_of(tmp_path / "one"), logits_of(tmp_path / "two")
    assert (a - b).abs().max().item() < 1e-3 * a.abs().max().item()
    records = [json.loads((tmp_path / run / "csc_training.json").read_text()) for run in ("one", "two")]
    assert [r["processes"] for r in records] == [1, 2]  # the record names the layout the bytes came from


@pytest.mark.parametrize("task", ["mlm", "bart"])
def test_accumulated_steps_are_one_batch_for_the_masked_lm_and_bart(small_params, tmp_path, task):
    """The Trainer passes num_items_in_batch to a model whose forward takes **kwargs and then leaves the loss as the
    model gives it: the masked LM divides its summed loss by it, and BART (a mean of its own) is marked as not
    normalising, so that two accumulated batches of 8 train, and log, as one of 16 (and two processes as one)."""
    from conftest import train_tiny

    keys = dict(task="mlm", model_overrides=TINY) if task == "mlm" else dict(task="correction", variant="bart")
    keys = dict(keys, max_steps=2, logging_steps=1, learning_rate=0.003, precision="fp32")
    if task == "bart":
        keys["model_overrides"] = BART_TINY
    losses = []
    for name, batch, steps in (("one", 16, 1), ("two", 8, 2)):
        out = train_tiny(
            small_params, tmp_path / name, **keys, per_device_train_batch_size=batch, gradient_accumulation_steps=steps
        )
        history = json.loads((out / "csc_training.json").read_text(encoding="utf-8"))["log_history"]
        losses.append([entry["loss"] for entry in history if "loss" in entry])
    # the same sentences; BART averages the means of its two batches, and the masked LM draws its masks per batch
    # (of 16 or of 8): the losses agree closely, not exactly
    assert losses[1] == pytest.approx(losses[0], rel=1e-3 if task == "bart" else 0.05)


@pytest.mark.slow
def test_killed_run_resumes_to_the_same_result(tmp_path, small_params):
    """The run kills itself (SIGKILL) right after checkpoint-10 is saved; a half-written checkpoint-15 (a kill while
    saving) is left on top; the resume starts from checkpoint-10 and ends where an uninterrupted run ends."""
    common = dict(
        max_steps=30,
        save_strategy="steps",
        save_steps=5,
        train_sampling_strategy="group_by_length",
        task="correction",
        variant="bert",
        mask_rate=0.0,
    )
    whole = write_config(tmp_path / "whole.yaml", **base_config(small_params, tmp_path / "whole", **common))
    assert run_train(whole).returncode == 0
    part = write_config(tmp_path / "part.yaml", **base_config(small_params, tmp_path / "part", **common))
    killed = run_train(part, CSC_HF_KILL_AFTER_SAVE="10")
    assert killed.returncode == -9, killed.stderr[-2000:]
    out = tmp_path / "part"
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-10", "checkpoint-5"]
    assert not (out / "csc_training.json").exists()
    half = out / "checkpoint-15"
    shutil.copytree(out / "checkpoint-10", half)
    (half / "trainer_state.json").unlink()
    (half / "training_args.bin").write_bytes(b"")
    (half / "model.safetensors").write_bytes((half / "model.safetensors").read_bytes()[:1000])
    resumed = run_train(part)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "checkpoint-15 is incomplete" in resumed.stderr
    a, b = logits_of(tmp_path / "whole"), logits_of(out)
    assert (a - b).abs().max().item() < 1e-4 * a.abs().max().item()


def test_mlm_logs_top1_accuracy_and_passes_the_replacement_shares(tmp_path, small_params, monkeypatch):
    """The mlm task's evaluation logs top-1 accuracy over the masked positions next to its loss, and the
    replacement shares reach the collator."""
    from types import SimpleNamespace

    import numpy as np

    predicted = np.array([[5, 6, 7], [8, 9, 0]])
    labels = np.array([[5, -100, 1], [-100, 9, -100]])  # masked: 5 (right), 1 (wrong), 9 (right)
    assert training_run.masked_lm_accuracy(SimpleNamespace(predictions=predicted, label_ids=labels)) == {
        "accuracy": 2 / 3
    }
    made = []
    collator = training_run.MaskedLMCollator
    monkeypatch.setattr(training_run, "MaskedLMCollator", lambda *a, **k: made.append(k) or collator(*a, **k))
    config = write_config(
        tmp_path / "c.yaml",
        **base_config(
            small_params,
            tmp_path / "o",
            max_steps=4,
            eval_strategy="steps",
            eval_steps=2,
            mask_replace_prob=0.5,
            random_replace_prob=0.4,
        ),
    )
    out = train(*load_config(config))
    assert made[0]["mask_replace_prob"] == 0.5 and made[0]["random_replace_prob"] == 0.4
    history = json.loads((out / "csc_training.json").read_text())["log_history"]
    accuracies = [h["eval_accuracy"] for h in history if "eval_accuracy" in h]
    assert len(accuracies) == 2 and all(0.0 <= a <= 1.0 for a in accuracies)


def test_missing_and_redundant_characters_train_bart_and_the_edit_head(tmp_path, small_params):
    """``train_edit_shares`` gives training pairs of other lengths: bart trains on them (its collator pads sources and
    targets to the longest of both), and a tagging variant with an edit head (on its targets from the alignment);
    another tagging variant is refused before any work."""
    params = {**small_params, "train_edit_shares": [0.5, 0.25, 0.25]}
    tagging = write_config(tmp_path / "tag.yaml", **base_config(params, tmp_path / "t", task="correction"))
    with pytest.raises(ValueError, match=r"tag.yaml: bench_params: train_edit_shares=\[0.5, 0.25, 0.25\] puts missing"):
        load_config(tagging)
    bart_tiny = {**BART_TINY, "max_position_embeddings": 256}
    config = base_config(
        params,
        tmp_path / "bart",
        task="correction",
        variant="bart",
        model_overrides=bart_tiny,
        max_steps=3,
        logging_steps=1,
    )
    out = train(*load_config(write_config(tmp_path / "bart.yaml", **config)))
    record = json.loads((out / "csc_training.json").read_text())
    assert record["bench_params"]["train_edit_shares"] == [0.5, 0.25, 0.25] and final_loss(out) > 0
    from csc_hf.modeling import CSCTokenizer

    tok = CSCTokenizer.from_texts(["我们去学校了"])
    pair = encode_sentences(tok, ["我去学校"], ["我们去学校了"], max_length=64, seq2seq=True)
    batch = CorrectionCollator(tok)([{"input_ids": pair["input_ids"][0], "labels": pair["labels"][0]}])
    assert batch["input_ids"].shape == batch["labels"].shape == (1, 8)  # the target is two characters longer
    assert batch["attention_mask"][0].tolist() == [1] * 6 + [0] * 2 and batch["labels"][0, -1] == tok.sep_token_id
    config = base_config(
        params, tmp_path / "edit", task="correction", variant="bert+edit_head", max_steps=3, logging_steps=1
    )
    out = train(*load_config(write_config(tmp_path / "edit.yaml", **config)))
    assert json.loads((out / "config.json").read_text())["edit_head"] is True and final_loss(out) > 0


def test_model_files_follow_the_umask(tmp_path, small_params):
    """Weights (safetensors writes them 0600), checkpoints and every whole write get the mode the umask gives a new
    file, as any other tool's output: a shared model folder is readable by the group; a replaced file keeps its
    mode."""
    from csc_hf import hub
    from csc_hf.files import write_atomic

    previous = os.umask(0o002)
    try:
        config = write_config(
            tmp_path / "c.yaml",
            **base_config(small_params, tmp_path / "o", max_steps=2, save_strategy="steps", save_steps=1),
        )
        out = train(*load_config(config))
        written = [out / "model.safetensors", out / "config.json", out / "csc_training.json"]
        written += sorted(out.glob("checkpoint-*/model.safetensors"))
        assert len(written) == 5 and {f.stat().st_mode & 0o777 for f in written} == {0o664}
        assert write_atomic(tmp_path / "new.json", "{}").stat().st_mode & 0o777 == 0o664
        (tmp_path / "private.json").write_text("{}")
        (tmp_path / "private.json").chmod(0o600)
        assert write_atomic(tmp_path / "private.json", "[]").stat().st_mode & 0o777 == 0o600
        (out / "model.safetensors").chmod(0o600)  # a model saved before: its Hub folder is written as new files
        folder = hub.prepare(out, "user/x", tmp_path / "hub", [])
        assert {f.stat().st_mode & 0o777 for f in folder.iterdir()} == {0o664}
    finally:
        os.umask(previous)


@pytest.mark.slow
def test_a_resume_in_a_later_epoch_trains_the_same_model(tmp_path, small_params):
    """Killed after a checkpoint at the end of its first epoch, resumed, killed again after one within its second epoch
    and resumed, a length-grouped training ends with the weights of the uninterrupted run: each epoch's batches come in
    the order that epoch drew at its start, whichever process began it."""
    config = base_config(
        small_params,
        tmp_path / "whole",
        task="correction",
        variant="bert",
        precision="fp32",
        per_device_train_batch_size=8,
        max_train_samples=32,  # 4 steps an epoch: step 4 ends the first, step 6 is the second's second
        max_steps=10,
        save_strategy="steps",
        save_steps=2,
        train_sampling_strategy="group_by_length",
    )
    whole = run_train(write_config(tmp_path / "whole.yaml", **config))
    assert whole.returncode == 0, whole.stderr[-2000:]
    part = write_config(tmp_path / "part.yaml", **{**config, "output_dir": str(tmp_path / "part")})
    for step in (4, 6):
        killed = run_train(part, CSC_HF_KILL_AFTER_SAVE=str(step), CSC_HF_VERBOSITY="info")
        assert killed.returncode == -9 and (tmp_path / "part" / f"checkpoint-{step}").is_dir(), killed.stderr[-2000:]
    assert f"resuming from {tmp_path / 'part' / 'checkpoint-4'}" in killed.stdout + killed.stderr
    resumed = run_train(part, CSC_HF_VERBOSITY="info")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"resuming from {tmp_path / 'part' / 'checkpoint-6'}" in resumed.stdout + resumed.stderr
    whole_weights = (tmp_path / "whole" / "model.safetensors").read_bytes()
    assert (tmp_path / "part" / "model.safetensors").read_bytes() == whole_weights
