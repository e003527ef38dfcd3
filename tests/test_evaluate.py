"""`csc-bench evaluate` scores a model on what it was not trained on (issue 28): the test sets are built with the
benchmark parameters of the model's training record (an option given wins, and the records say which were used), a
test set that shares sentences with the model's training sentences is refused (or, when allowed, counted), the card
states the parameters the scores were computed with; and the decoding is tuned on the user's own dev file while test
files are scored."""

import json

import pytest
import yaml
from conftest import train_tiny

from csc_hf import load_dataset
from csc_hf.benchmark import BenchParams
from csc_hf.cli import main
from csc_hf.model_folder import load_decoding


def bench_args(params: dict) -> list[str]:
    return [arg for name, value in params.items() for arg in (f"--{name.replace('_', '-')}", str(value))]


@pytest.fixture(scope="module")
def model(tmp_path_factory, small_params):
    """A tiny bert trained two steps on the benchmark built with the small parameters (csc-bench train's folder)."""
    out = tmp_path_factory.mktemp("evaluate") / "model"
    return train_tiny(small_params, out, task="correction", variant="bert", max_steps=2, save_strategy="no")


def evaluate(capsys, model, out, *args) -> tuple[int, list[dict] | None, str, str]:
    code = main(["evaluate", str(model), "--bootstrap", "0", "--output", str(out), *args])
    captured = capsys.readouterr()
    records = json.loads(out.read_text(encoding="utf-8")) if code == 0 else None
    return code, records, captured.out, captured.err


def test_test_sets_are_built_as_the_model_was_trained(model, small_params, tmp_path, capsys):
    """No benchmark option: the test sets of the model's training parameters (not the defaults), said in every
    record, on stdout and in the card's model-index; an option given wins and is named."""
    code, records, out, err = evaluate(capsys, model, tmp_path / "e.json", "--configs", "test", "scontext")
    assert code == 0, err
    trained = BenchParams.changed(small_params)
    assert [r["scores"]["n_sentences"] for r in records] == [80, 40]  # n_test and n_scontext of the training
    assert all(BenchParams.changed(r["bench_params"]) == trained for r in records)
    assert {r["bench_params_from"] for r in records} == {"the model's training record"}
    assert "(the model's training record)" in out and '"n_test": 80' in out
    assert (
        main(["push", str(model), "user/x", "--folder", str(tmp_path / "hub"), "--results", str(tmp_path / "e.json")])
        == 0
    )
    card = (tmp_path / "hub" / "README.md").read_text(encoding="utf-8")
    meta = yaml.safe_load(card.split("---\n", 2)[1])
    assert meta["model-index"][0]["results"][0]["dataset"]["args"]["n_test"] == 80
    assert "(the model's training record)" in card and "csc-bench export" in card
    # the same parameters given explicitly are still the model's; a changed one is named
    code, records, out, err = evaluate(capsys, model, tmp_path / "e2.json", "--n-test", "80", "--seed", "42")
    assert code == 0 and records[0]["bench_params_from"] == "the model's training record"
    more = {**small_params, "n_scontext": 20}
    code, records, out, err = evaluate(
        capsys, model, tmp_path / "e3.json", "--configs", "scontext", "--n-scontext", "20"
    )
    assert code == 0, err
    assert records[0]["scores"]["n_sentences"] == 20 and BenchParams.changed(records[0]["bench_params"]) == more
    assert records[0]["bench_params_from"] == "the model's training record, n_scontext from the command line"
    capsys.readouterr()
    # push: the records' own parameters; options that contradict them are refused
    push = ["push", str(model), "user/x", "--folder", str(tmp_path / "hub2"), "--results", str(tmp_path / "e.json")]
    assert main([*push, "--n-test", "200"]) == 2
    assert "was scored with the benchmark parameters" in capsys.readouterr().err


def test_a_test_set_of_training_sentences_is_refused_or_counted(model, small_params, tmp_path, capsys, caplog):
    """Test sets built with other parameters share sentences with the model's training split (its n_validation and
    n_test leave another train pool): refused before any correction with the count, or scored and counted with
    --allow-train-overlap (loudly, in each record and in the card)."""
    other = ["--n-test", "200", "--n-validation", "100"]
    out = tmp_path / "e.json"
    code, _, _, err = evaluate(capsys, model, out, *other)
    train = set(load_dataset("csc_bench", "train", split="train", **small_params)["target"])
    test = load_dataset("csc_bench", "test", split="test", **{**small_params, "n_test": 200, "n_validation": 100})
    shared = sum(t in train for t in test["target"])
    assert shared > 0 and code == 2 and not out.exists()
    assert f"test sentences that {model} trained on (test/test: {shared} of its 200 sentences)" in err
    assert "--allow-train-overlap" in err
    code, records, _, err = evaluate(capsys, model, out, *other, "--allow-train-overlap")
    assert code == 0 and records[0]["train_overlap"] == shared
    assert f"{shared} of its 200 sentences): THESE SCORES COUNT TRAINING SENTENCES" in caplog.text
    assert main(["push", str(model), "user/x", "--folder", str(tmp_path / "hub"), "--results", str(out)]) == 0
    card = (tmp_path / "hub" / "README.md").read_text(encoding="utf-8")
    assert f"**Some scores count sentences the model trained on** (how many): test/test ({shared})" in card
    # the seen-context set is made of training sentences by design: never refused
    assert evaluate(capsys, model, tmp_path / "s.json", "--configs", "scontext")[0] == 0


def test_tuning_on_a_dev_file_and_scoring_test_files(model, small_params, tmp_path, capsys):
    """--validation DATA tunes the decoding grid on the user's dev file (TSV or jsonl, as every data spec), --configs
    scores test files next to test configs; a test file holding a training sentence is refused too, and a test file
    without an error-free sentence shows its false-positive rate as n/a."""
    test = load_dataset("csc_bench", "test", split="test", **small_params)
    wrong = [(s, t) for s, t in zip(test["source"], test["target"]) if s != t]
    dev = tmp_path / "my_dev.jsonl"
    dev.write_text("".join(json.dumps({"source": s, "target": t}) + "\n" for s, t in wrong[:10]), encoding="utf-8")
    mine = tmp_path / "my_test.tsv"
    mine.write_text("".join(f"{s}\t{t}\n" for s, t in wrong[10:20]), encoding="utf-8")
    copy = tmp_path / "model"
    import shutil

    shutil.copytree(model, copy)
    args = ["--configs", str(mine), "test", "--keep-bias", "0", "1", "--validation", str(dev)]
    code, records, out, err = evaluate(
        capsys, copy, tmp_path / "e.json", *args, "--predictions-dir", str(tmp_path / "p")
    )
    assert code == 0, err
    # each split's predictions, the data file's too, which csc-bench score reads back to the same scores
    assert sorted(path.name for path in (tmp_path / "p").iterdir()) == ["my_test_tsv.test.txt", "test.test.txt"]
    scored = ["score", "--predictions", str(tmp_path / "p" / "my_test_tsv.test.txt"), "--references", str(mine)]
    assert main([*scored, "--bootstrap", "0", "--output", str(tmp_path / "s.json")]) == 0
    rescored = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))["scores"]["strict"]
    assert {k: rescored[k] for k in records[0]["scores"] if k in rescored} == {
        k: v for k, v in records[0]["scores"].items() if k in rescored
    }
    assert {"char_det_f1", "char_cor_f1", "sent_cor_f1"} <= rescored.keys() & records[0]["scores"].keys()
    assert [(r["config"], r.get("data")) for r in records] == [(str(mine), str(mine)), ("test", None)]
    assert records[0]["scores"]["n_sentences"] == 10 and records[0]["scores"]["fpr"] is None
    assert f"{mine}  " in out and " n/a" in out  # its row, and its undefined false-positive rate
    tuning = json.loads((copy / "csc_decoding.json").read_text(encoding="utf-8"))["tuning"]
    assert tuning["split"] == str(dev) and tuning["sentences"] == 10 and set(tuning["scores"]) == {"0/0", "1/0"}
    assert load_decoding(copy)["keep_bias"] == records[0]["keep_bias"]
    code, _, _, err = evaluate(capsys, copy, tmp_path / "x.json", "--validation", str(dev))
    assert code == 2 and "--validation tunes the decoding: give several --keep-bias" in err
    code, _, _, err = evaluate(capsys, copy, tmp_path / "x.json", "--configs", str(tmp_path / "missing.tsv"))
    assert code == 2 and "unknown test config" in err and "or a test data file or folder that exists" in err
    train = load_dataset("csc_bench", "train", split="train", **small_params)
    leaked = tmp_path / "leaked.tsv"
    leaked.write_text(f"{train['source'][0]}\t{train['target'][0]}\n{wrong[0][0]}\t{wrong[0][1]}\n", encoding="utf-8")
    code, _, _, err = evaluate(capsys, copy, tmp_path / "x.json", "--configs", str(leaked))
    assert code == 2 and f"({leaked}: 1 of its 2 sentences)" in err
    (copy / "csc_training.json").unlink()  # a model that records no training: nothing known to check against
    code, records, _, err = evaluate(capsys, copy, tmp_path / "x.json", "--configs", str(leaked))
    assert code == 0 and "train_overlap" not in records[0], err
