"""`csc-bench push` writes a complete Hub model repository (issue 16 item 3): a card whose YAML holds the licence, base
model, datasets, pipeline tag, tags and a model-index; the decoding settings; the tokenizer's remote code; no pickles
and no machine-local fields. The folder loads in a clean interpreter without csc_hf."""

import ast
import json
import shutil
from pathlib import Path

import pytest
import torch
import yaml
from conftest import BERT_TINY, run_without_csc_hf

from csc_hf import hub
from csc_hf.cli import main
from csc_hf.files import OUTPUT_MARKER
from csc_hf.scoring import HEADLINE

TEXTS = ["我门今天去学校上课。", "他们在家里看书"]
SCORES = {
    "char_cor_f1": 0.5,
    "char_det_f1": 0.6,
    "sent_cor_f1": 0.4,
    "sent_det_f1": 0.45,
    "fpr": 0.1,
    "char_cor_f1_ci_low": 0.4,
    "char_cor_f1_ci_high": 0.6,
    "convention": "strict",
}


@pytest.fixture(scope="module")
def trained(tmp_path_factory, small_corpus):
    """A tiny bert trained a few steps on a TSV, as csc-bench train leaves it, plus what a run and a resume leave
    (a checkpoint, pickled states, done.json) and a re-saved tokenizer (``"is_local": true``)."""
    from csc_hf.modeling import CSCTokenizer
    from csc_hf.training import load_config, train

    tmp = tmp_path_factory.mktemp("hub")
    texts = small_corpus.read_text(encoding="utf-8").splitlines()[:24]
    (tmp / "pairs.tsv").write_text("".join(f"{t[:2]}门{t[3:]}\t{t}\n" for t in texts), encoding="utf-8")
    config = {
        "task": "correction",
        "variant": "bert",
        "use_benchmark": False,
        "train_files": [str(tmp / "pairs.tsv")],
        "model_overrides": BERT_TINY,
        "max_steps": 2,
        "per_device_train_batch_size": 8,
        "use_cpu": True,
        "report_to": "none",
        "save_strategy": "no",
        "eval_strategy": "no",
        "disable_tqdm": True,
        "output_dir": str(tmp / "model"),
    }
    (tmp / "c.yaml").write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    model = train(*load_config(tmp / "c.yaml"))
    CSCTokenizer.from_pretrained(model).save_pretrained(model)
    assert json.loads((model / "tokenizer_config.json").read_text())["is_local"] is True  # the case to clean
    assert (model / "training_args.bin").is_file()
    (model / "checkpoint-2").mkdir()
    (model / "checkpoint-2" / "optimizer.pt").write_bytes(b"pickle")
    for name in ("optimizer.pt", "scheduler.pt", "rng_state.pth"):
        (model / name).write_bytes(b"pickle")
    (model / "done.json").write_text("{}")
    (model / "csc_decoding.json").write_text(json.dumps({"keep_bias": 2.0, "threshold": 0.1, "similarity_prior": 3.0}))
    return model


def front_matter(card: str) -> dict:
    assert card.startswith("---\n")
    return yaml.safe_load(card.split("---\n", 2)[1])


def records_file(tmp_path: Path) -> Path:
    records = [
        {"model": "bert", "config": "test", "split": "test", "keep_bias": 2.0, "scores": SCORES},
        {"model": "bert", "config": "probs", "split": "pe10", "keep_bias": 2.0, "scores": SCORES},
        {"model": "bert", "config": "mixed", "split": "test", "keep_bias": 2.0, "alignment": True, "scores": SCORES},
        {"model": "plome", "config": "test", "split": "test", "keep_bias": 0.0, "scores": SCORES},
    ]
    path = tmp_path / "results.json"
    path.write_text(
        json.dumps({"params": {"bench_params": {"seed": 7, "corpus": "/home/me/corpus.txt"}}, "records": records})
    )
    return path


def test_pushed_folder_is_a_complete_hub_repository(trained, tmp_path, capsys):
    folder = tmp_path / "hub"
    assert (
        main(
            [
                "push",
                str(trained),
                "user/csc-tiny",
                "--folder",
                str(folder),
                "--results",
                str(records_file(tmp_path)),
                "--model-name",
                "bert",
                "--license",
                "mit",
            ]
        )
        == 0
    )
    assert "3 scored test sets" in capsys.readouterr().out
    names = sorted(p.name for p in folder.iterdir() if p.name != OUTPUT_MARKER)  # the marker is never uploaded
    assert (folder / OUTPUT_MARKER).is_file()
    assert names == [
        "README.md",
        "config.json",
        "configuration_csc.py",
        "csc_decoding.json",
        "csc_training.json",
        "model.safetensors",
        "modeling_csc.py",
        "tokenization_csc.py",
        "tokenizer.json",
        "tokenizer_config.json",
    ]  # no pickles, checkpoints or run bookkeeping
    for path in folder.glob("*.json"):
        text = path.read_text(encoding="utf-8")
        assert str(trained.parent) not in text and '"is_local"' not in text and "local_files_only" not in text, (
            path.name
        )
    tokenizer_config = json.loads((folder / "tokenizer_config.json").read_text())
    assert tokenizer_config["auto_map"] == {"AutoTokenizer": [None, "tokenization_csc.CSCTokenizer"]}
    assert json.loads((folder / "csc_training.json").read_text())["train_files"] == ["pairs.tsv"]

    card = (folder / "README.md").read_text(encoding="utf-8")
    meta = front_matter(card)
    assert meta["license"] == "mit" and meta["library_name"] == "transformers" and meta["pipeline_tag"] == "fill-mask"
    assert {"chinese-spelling-check", "csc_hf", "bert"} <= set(meta["tags"]) and "base_model" not in meta
    assert "datasets" not in meta  # trained on a local file alone: no Hub dataset to name
    ((result, probs, mixed),) = [entry["results"] for entry in meta["model-index"]]
    assert meta["model-index"][0]["name"] == "csc-tiny"
    assert result["task"]["type"] == "chinese-spelling-check"
    assert result["dataset"] == {
        "type": "csc_bench",
        "name": "csc_bench test/test",
        "config": "test",
        "split": "test",
        "args": {"seed": 7, "corpus": "corpus.txt"},
    }  # the run's parameters, no local path
    assert probs["dataset"]["split"] == "pe10"
    metrics = {m["type"]: m for m in result["metrics"]}
    assert set(metrics) == set(HEADLINE) and metrics["char_cor_f1"]["value"] == 0.5
    assert metrics["fpr"]["name"].endswith("(strict convention)") and metrics["fpr"]["args"]["keep_bias"] == 2.0
    assert "alignment" not in metrics["fpr"]["args"]  # a set of substitutions: scored position by position
    aligned = {m["type"]: m for m in mixed["metrics"]}["char_cor_f1"]  # insertions and deletions are edits there
    assert aligned["name"].endswith("(strict convention, by edit alignment)") and aligned["args"]["alignment"] is True
    assert "`keep_bias` = 2.0, `threshold` = 0.1, `similarity_prior` = 3.0 (saved with the model)" in card
    assert "| test/test | keep_bias 2 | 0.500 [0.400, 0.600] | 0.600 |" in card


def test_card_without_results_says_there_are_no_scores(trained, tmp_path, capsys):
    assert main(["push", str(trained), "user/csc-tiny", "--folder", str(tmp_path / "hub")]) == 0
    assert "no scores in its card yet" in capsys.readouterr().out
    card = (tmp_path / "hub" / "README.md").read_text(encoding="utf-8")
    meta = front_matter(card)
    assert meta["license"] == "apache-2.0" and "model-index" not in meta
    assert "No scores yet" in card and "| test set |" not in card


def test_push_replaces_only_its_own_folder_and_never_leaves_half_of_one(trained, tmp_path, capsys):
    """Issue 29, item 3: a second push to the same --folder replaces the first one's output (it holds the marker);
    a push that fails (a bad csc_decoding.json or tokenizer_config.json) leaves the earlier folder as it was, and
    makes no new one."""
    hub = tmp_path / "hub"
    assert main(["push", str(trained), "user/csc-tiny", "--folder", str(hub)]) == 0
    (hub / "stale.json").write_text("{}")  # what the earlier output held, and the new one does not
    assert main(["push", str(trained), "user/csc-tiny", "--folder", str(hub), "--license", "mit"]) == 0
    assert not (hub / "stale.json").exists() and "license: mit" in (hub / "README.md").read_text(encoding="utf-8")
    before = {p.name: p.read_bytes() for p in hub.iterdir()}
    for bad, text in (("csc_decoding.json", "keep_bias: 2"), ("tokenizer_config.json", '{"tokenizer_class": ')):
        model = tmp_path / "m"
        shutil.rmtree(model, ignore_errors=True)
        shutil.copytree(trained, model)
        (model / bad).write_text(text)
        for folder in (hub, tmp_path / "new"):
            assert main(["push", str(model), "user/csc-tiny", "--folder", str(folder)]) == 2
            assert f"{bad}: not JSON" in capsys.readouterr().err
        assert {p.name: p.read_bytes() for p in hub.iterdir()} == before
        assert sorted(p.name for p in tmp_path.iterdir()) == ["hub", "m"]  # no new folder, no staging left


def test_upload_takes_the_token_from_the_environment_or_the_login(trained, tmp_path, monkeypatch, capsys):
    """The token is read as huggingface_hub reads it (HF_TOKEN, else the stored login), never from the command
    line, where the process list shows it; without one, --upload fails before any work."""
    from huggingface_hub import constants

    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "hf_home" / "token"))  # no stored login
    assert main(["push", str(trained), "user/x", "--folder", str(tmp_path / "hub"), "--upload"]) == 2
    assert "--upload needs a Hub write token: set HF_TOKEN" in capsys.readouterr().err
    assert not (tmp_path / "hub").exists()
    uploads = []
    monkeypatch.setattr(hub, "push", lambda folder, repo, token: uploads.append((repo, token)) or "url")
    (tmp_path / "hf_home").mkdir()
    (tmp_path / "hf_home" / "token").write_text("hf_stored")  # what `hf auth login` writes
    assert main(["push", str(trained), "user/x", "--folder", str(tmp_path / "hub"), "--upload"]) == 0
    monkeypatch.setenv("HF_TOKEN", "hf_environment")
    assert main(["push", str(trained), "user/x", "--folder", str(tmp_path / "hub"), "--upload"]) == 0
    assert uploads == [("user/x", "hf_stored"), ("user/x", "hf_environment")]


def test_card_metadata_names_a_hub_base_model_and_hub_datasets():
    training = {
        "init_from": "bert-base-chinese",
        "variant": "bart",
        "use_benchmark": True,
        "train_files": ["datasets:user/real-pairs", "/data/mine.tsv"],
    }
    meta = hub.card_metadata("user/m", [], training, seq2seq=True)
    assert meta["base_model"] == "bert-base-chinese" and meta["datasets"] == ["csc_bench", "user/real-pairs"]
    assert meta["pipeline_tag"] == "text2text-generation"
    assert "base_model" not in hub.card_metadata("user/m", [], {"init_from": "runs/pretrain_mlm"})
    with pytest.raises(ValueError, match="--license 'apache' is not a Hub licence id"):
        hub.card_metadata("user/m", [], {}, license="apache")


def test_remote_tokenizer_file_is_self_contained():
    tree = ast.parse(hub.REMOTE_TOKENIZER.read_text(encoding="utf-8"))
    imported = {
        alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    }
    imported |= {
        node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level == 0
    }
    assert imported <= {"os", "collections", "tokenizers", "transformers"}, imported
    assert not any(isinstance(node, ast.ImportFrom) and node.level for node in ast.walk(tree))


REMOTE_CHECK = """
import sys, torch
from transformers import AutoModelForMaskedLM, AutoTokenizer
folder, expected = sys.argv[1], torch.load(sys.argv[2])
tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
assert type(tokenizer).__name__ == "CSCTokenizer", type(tokenizer)
assert type(tokenizer).__module__.startswith("transformers_modules"), type(tokenizer).__module__
inputs = tokenizer(expected["texts"], padding=True, return_tensors="pt")
assert inputs["input_ids"].tolist() == expected["input_ids"].tolist()
assert len(tokenizer.decode_correction("我门", inputs["input_ids"][0].tolist())) == 2
model = AutoModelForMaskedLM.from_pretrained(folder, trust_remote_code=True).eval()
with torch.no_grad():
    logits = model(**inputs).logits
torch.testing.assert_close(logits, expected["logits"], rtol=0, atol=1e-6)
assert "csc_hf" not in sys.modules
print("remote ok")
"""


def test_pushed_folder_loads_without_csc_hf(trained, tmp_path):
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    folder = hub.prepare(trained, "user/csc-tiny", tmp_path / "hub", [])
    tokenizer = AutoTokenizer.from_pretrained(trained)
    model = AutoModelForMaskedLM.from_pretrained(trained).eval()
    inputs = tokenizer(TEXTS, padding=True, return_tensors="pt")
    with torch.no_grad():
        logits = model(**inputs).logits
    torch.save({"texts": TEXTS, "input_ids": inputs["input_ids"], "logits": logits}, tmp_path / "expected.pt")
    result = run_without_csc_hf(REMOTE_CHECK, str(folder), str(tmp_path / "expected.pt"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "remote ok" in result.stdout


def test_benchmark_parameters_of_the_scores(trained, tmp_path, capsys):
    """An evaluation json does not say its parameters: the benchmark options say them; without them the card says
    they are not recorded (this model trained on a file alone, so its training parameters say nothing)."""
    records = [{"config": "unseen_k", "split": "test", "keep_bias": 0.0, "scores": SCORES}]
    (tmp_path / "eval.json").write_text(json.dumps(records))
    push = [
        "push",
        str(trained),
        "user/csc-tiny",
        "--folder",
        str(tmp_path / "hub"),
        "--results",
        str(tmp_path / "eval.json"),
    ]
    assert main(push) == 0
    card = (tmp_path / "hub" / "README.md").read_text(encoding="utf-8")
    assert "csc_bench parameters: not recorded" in card
    assert "args" not in front_matter(card)["model-index"][0]["results"][0]["dataset"]
    assert main([*push, "--seed", "3", "--probs", "0.1", "0.2"]) == 0
    meta = front_matter((tmp_path / "hub" / "README.md").read_text(encoding="utf-8"))
    assert meta["model-index"][0]["results"][0]["dataset"]["args"] == {"seed": 3, "probs": [0.1, 0.2]}
    capsys.readouterr()
    assert main(["push", str(trained), "user/csc-tiny", "--folder", str(tmp_path / "hub2"), "--seed", "3"]) == 2
    assert "give --results too" in capsys.readouterr().err


def test_a_path_given_as_the_repo_id_says_where_the_folder_goes(trained, tmp_path, capsys):
    """`push MODEL /path`: the error says that the second argument is the Hub id, that --folder chooses the local
    folder, where it goes by default, and that nothing is uploaded without --upload; nothing is written."""
    assert main(["push", str(trained), str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"repo '{tmp_path / 'out'}' is a path, not a Hub repository id" in err
    assert f"written locally to {trained}-hub (--folder DIR chooses another)" in err
    assert "nothing is uploaded without --upload" in err
    assert not (tmp_path / "out").exists() and not Path(f"{trained}-hub").exists()
    assert main(["push", str(trained), "user/x/y", "--folder", str(tmp_path / "h")]) == 2
    assert f"written locally to {tmp_path / 'h'} (--folder" in capsys.readouterr().err


def test_push_takes_the_models_own_records_from_a_runs_results(trained, tmp_path, capsys):
    """A run's results.json holds every model's records: push takes those of the model in the folder (its variant,
    seed and augmentation, from its training record), and without a record to say so it refuses and lists the
    models; a --model-name that is not the folder's variant is refused."""
    import shutil

    assert json.loads((trained / "csc_training.json").read_text())["seed"] == 42  # TrainingArguments' default
    models = [("bert", 42, None, 0.42), ("bert", 1, None, 0.1), ("plome", 42, None, 0.2), ("bert", 42, "sighan13", 0.3)]
    records = [
        {
            "model": model,
            "seed": seed,
            **({"augmentation": augmentation} if augmentation else {}),
            "config": config,
            "split": "test",
            "scores": {**SCORES, "char_cor_f1": value},
        }
        for model, seed, augmentation, value in models
        for config in ("test", "unseen_k")
    ]
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"params": {"bench_params": {}}, "records": records}))

    def push(model, *options):
        code = main(
            ["push", str(model), "user/x", "--folder", str(tmp_path / "hub"), "--results", str(results), *options]
        )
        return code, capsys.readouterr()

    code, out = push(trained)
    assert code == 0 and "(2 scored test sets in its card)" in out.out
    values = [
        m["value"]
        for entry in front_matter((tmp_path / "hub" / "README.md").read_text())["model-index"][0]["results"]
        for m in entry["metrics"]
        if m["type"] == "char_cor_f1"
    ]
    assert values == [0.42, 0.42]
    code, out = push(trained, "--model-name", "plome")
    assert code == 2 and "--model-name plome: the model folder holds a bert model" in out.err
    unrecorded = tmp_path / "unrecorded"
    shutil.copytree(trained, unrecorded)
    (unrecorded / "csc_training.json").unlink()
    code, out = push(unrecorded)
    assert (
        code == 2
        and "holds the records of 4 models" in out.err
        and "give --model-name VARIANT and --model-seed" in out.err
    )
    assert "bert (seed 42, augmentation sighan13)" in out.err and "plome (seed 42)" in out.err
    assert push(unrecorded, "--model-name", "bert", "--model-seed", "1")[0] == 0
    code, out = push(unrecorded, "--model-name", "bart")
    assert code == 2 and "holds no records of this model (model bart)" in out.err


def test_push_takes_the_records_of_the_folders_own_weights(trained, tmp_path, capsys):
    """Records that name the weights they scored (weights_sha256) are the model's only where those are the folder's:
    a run's records are told apart by it without --model-name, an eval.json of other weights is refused before
    anything is written, the pushed folder has the same digest, and a digest that is not a sha256 is named."""
    from csc_hf.model_folder import weights_digest

    own = weights_digest(trained)
    assert own and len(own) == 64 and weights_digest(trained) == own  # same bytes, same digest
    unrecorded = tmp_path / "unrecorded"  # no training record: only the weights can say which records are its own
    shutil.copytree(trained, unrecorded)
    (unrecorded / "csc_training.json").unlink()
    assert weights_digest(unrecorded) == own and weights_digest("user/model") is None

    def push(records, *options):
        results = tmp_path / "results.json"
        results.write_text(json.dumps(records))
        code = main(["push", str(unrecorded), "user/x", "--folder", str(tmp_path / "hub"), "--results", str(results)])
        return code, capsys.readouterr()

    def record(model, seed, digest, value):
        return {
            "model": model,
            "seed": seed,
            "config": "test",
            "split": "test",
            "weights_sha256": digest,
            "scores": {**SCORES, "char_cor_f1": value},
        }

    run = {"params": {"bench_params": {}}, "records": [record("bert", 1, "0" * 64, 0.1), record("bert", 2, own, 0.42)]}
    code, out = push(run)
    assert code == 0 and "(1 scored test sets in its card)" in out.out
    (entry,) = front_matter((tmp_path / "hub" / "README.md").read_text())["model-index"][0]["results"]
    assert [m["value"] for m in entry["metrics"] if m["type"] == "char_cor_f1"] == [0.42]
    assert weights_digest(tmp_path / "hub") == own  # the pushed weights are the scored ones
    shutil.rmtree(tmp_path / "hub")
    other = [{k: v for k, v in record("bert", 1, "ab" * 32, 0.1).items() if k not in ("model", "seed")}]
    code, out = push(other)  # an evaluation json of another model
    assert code == 2 and "holds the scores of other weights (sha256 abababababab)" in out.err
    assert f"not of this model folder's (sha256 {own[:12]})" in out.err and not (tmp_path / "hub").exists()
    code, out = push([{**other[0], "weights_sha256": "abc"}])
    assert code == 2 and "record 0 has weights_sha256 'abc', not a sha256" in out.err
