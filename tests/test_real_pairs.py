"""Training on real pairs (issue 16 item 2): train_files / validation_files / use_benchmark, the length rule of the
variants, the vocabulary of the pairs, and a pair file given as a corpus."""

import json
from pathlib import Path

import pytest
import yaml
from conftest import BART_TINY, BERT_TINY

import csc_hf.training.data
from csc_hf.training import load_config, train
from csc_hf.training.data import training_data


def sentences(small_corpus: Path, n: int) -> list[str]:
    return small_corpus.read_text(encoding="utf-8").splitlines()[:n]


def misspell(text: str, wrong: str = "龘") -> str:
    """``text`` with its third character replaced by ``wrong`` (a character the corpus lacks)."""
    return text[:2] + wrong + text[3:]


def write_config(path: Path, **config) -> Path:
    config = {
        "task": "correction",
        "variant": "bert",
        "model_overrides": BERT_TINY,
        "max_steps": 3,
        "per_device_train_batch_size": 8,
        "use_cpu": True,
        "report_to": "none",
        "save_strategy": "no",
        "eval_strategy": "no",
        "disable_tqdm": True,
        "seed": 1,
        **config,
    }
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return path


def test_train_on_a_tsv_alone(tmp_path, small_corpus, monkeypatch):
    texts = sentences(small_corpus, 40)
    (tmp_path / "pairs.tsv").write_text("".join(f"{misspell(t)}\t{t}\n" for t in texts), encoding="utf-8")
    config = write_config(
        tmp_path / "c.yaml",
        use_benchmark=False,
        train_files=[str(tmp_path / "pairs.tsv")],
        output_dir=str(tmp_path / "out"),
    )
    monkeypatch.setattr(csc_hf.training.data, "load_dataset", lambda *a, **k: pytest.fail("the benchmark was built"))
    monkeypatch.setattr(csc_hf.training.data, "plan_for", lambda *a, **k: pytest.fail("the benchmark was planned"))
    out = train(*load_config(config))
    from csc_hf.modeling import CSCTokenizer

    tokenizer = CSCTokenizer.from_pretrained(out)
    assert set("".join(texts)) | {"龘"} <= set(tokenizer.get_vocab())  # the pairs' characters, wrong ones too
    record = json.loads((out / "csc_training.json").read_text(encoding="utf-8"))
    assert record["train_files"] == [str(tmp_path / "pairs.tsv")] and record["use_benchmark"] is False
    assert [h["step"] for h in record["log_history"] if "train_runtime" in h] == [3]


def test_jsonl_mixed_with_the_benchmark(tmp_path, small_corpus, small_params):
    texts = sentences(small_corpus, 30)
    rows = [{"source": misspell(t, "鱻"), "target": t} for t in texts]
    (tmp_path / "pairs.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    (tmp_path / "val.tsv").write_text(f"{misspell(texts[0], '靐')}\t{texts[0]}\n", encoding="utf-8")
    config = write_config(
        tmp_path / "c.yaml",
        bench_params=small_params,
        train_files=[str(tmp_path / "pairs.jsonl")],
        validation_files=[str(tmp_path / "val.tsv")],
        output_dir=str(tmp_path / "out"),
        eval_strategy="steps",
        eval_steps=3,
        include_for_metrics=["inputs"],
        max_eval_samples=20,
    )
    model_args, data_args, training_args = load_config(config)
    train_set, eval_set, chars = training_data(data_args)
    from csc_hf.benchmark import load_dataset

    bench = load_dataset("csc_bench", "train", **small_params)
    assert len(train_set) == 30 + len(bench["train"]) and train_set[0] == rows[0]  # the files first
    assert train_set[30]["source"] == bench["train"][0]["source"]
    assert len(eval_set) == 20 and eval_set[0]["source"] == misspell(texts[0], "靐")
    assert {"鱻", "靐"} <= set(chars)
    out = train(model_args, data_args, training_args)
    from csc_hf.modeling import CSCTokenizer

    assert {"鱻", "靐"} <= set(CSCTokenizer.from_pretrained(out).get_vocab())
    history = json.loads((out / "csc_training.json").read_text(encoding="utf-8"))["log_history"]
    assert any("eval_char_cor_f1" in h for h in history)


def test_unequal_lengths_are_an_error_for_bert_and_train_bart_and_an_edit_head(tmp_path, small_corpus):
    texts = sentences(small_corpus, 24)
    lines = [f"{misspell(t)}\t{t}" for t in texts]
    lines[3] = f"{texts[3]}了\t{texts[3]}"  # one character too many (line 4)
    (tmp_path / "pairs.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = write_config(
        tmp_path / "c.yaml",
        use_benchmark=False,
        train_files=[str(tmp_path / "pairs.tsv")],
        output_dir=str(tmp_path / "out"),
    )
    for variant in ("bert", "all_gate"):
        with pytest.raises(ValueError) as info:
            load_config(config, [f"variant={variant}"])
        message = str(info.value)
        assert message.startswith(
            f"{config}: train_files: {tmp_path / 'pairs.tsv'}, line 4: source has "
            f"{len(texts[3]) + 1} characters, target {len(texts[3])}"
        ), message
        assert f"the {variant} variant" in message and "only bart" in message
    out = train(*load_config(config, ["variant=bart", f"model_overrides={json.dumps(BART_TINY)}"]))
    assert (out / "model.safetensors").is_file()
    out = train(*load_config(config, ["variant=bert+edit_head", f"output_dir={tmp_path / 'edit'}"]))
    assert json.loads((out / "config.json").read_text(encoding="utf-8"))["edit_head"] is True


def test_saved_datasets_folder_gives_its_splits(tmp_path, small_corpus):
    import datasets

    texts = sentences(small_corpus, 12)
    make = lambda part: datasets.Dataset.from_dict({"source": [misspell(t) for t in part], "target": part})  # noqa: E731
    datasets.DatasetDict({"train": make(texts[:8]), "validation": make(texts[8:])}).save_to_disk(str(tmp_path / "ds"))
    config = write_config(
        tmp_path / "c.yaml",
        use_benchmark=False,
        train_files=[str(tmp_path / "ds")],
        validation_files=[f"datasets:{tmp_path / 'ds'}"],
        output_dir=str(tmp_path / "out"),
    )
    train_set, eval_set, _ = training_data(load_config(config)[1])
    assert train_set["target"] == texts[:8] and eval_set["target"] == texts[8:]


def test_data_keys_are_checked_before_any_work(tmp_path, small_corpus, small_params, monkeypatch):
    monkeypatch.setattr(csc_hf.training.data, "load_dataset", lambda *a, **k: pytest.fail("data loaded"))
    texts = sentences(small_corpus, 4)
    (tmp_path / "pairs.tsv").write_text("".join(f"{misspell(t)}\t{t}\n" for t in texts), encoding="utf-8")
    config = write_config(tmp_path / "c.yaml", output_dir=str(tmp_path / "out"))
    cases = {
        "use_benchmark=false": "use_benchmark=false needs train_files",
        f"train_files=[{tmp_path / 'none.tsv'}]": f"train_files: {tmp_path / 'none.tsv'}: not a file",
        f"train_files={tmp_path / 'pairs.tsv'}": "must be a list of str",
    }
    for override, message in cases.items():
        with pytest.raises((ValueError, OSError), match=message):
            load_config(config, [override])
    files = f"train_files=[{tmp_path / 'pairs.tsv'}]"
    with pytest.raises(ValueError, match=r"eval_strategy=steps needs validation pairs.*give validation_files"):
        load_config(config, [files, "use_benchmark=false", "eval_strategy=steps"])
    with pytest.raises(ValueError, match="drop bench_params or set use_benchmark: true"):
        load_config(config, [files, "use_benchmark=false", f"bench_params={json.dumps(small_params)}"])
    # the metric scores predictions against the sources, which the Trainer passes only when asked: an error before
    # training, not at the first evaluation (a seq2seq model is scored by its own loss and needs none)
    evaluating = [files, f"validation_files=[{tmp_path / 'pairs.tsv'}]", "use_benchmark=false", "eval_strategy=steps"]
    with pytest.raises(ValueError, match=r"eval_strategy=steps: include_for_metrics=\[\]: a correction run that eval"):
        load_config(config, evaluating)
    assert load_config(config, [*evaluating, "include_for_metrics=[inputs]"])[2].include_for_metrics == ["inputs"]
    assert load_config(config, [*evaluating, "variant=bart", "model_overrides={}"])[0].variant == "bart"


def test_a_pair_file_as_corpus_is_refused(tmp_path, small_corpus):
    from csc_hf.corpus import corpus_lines

    texts = sentences(small_corpus, 10)
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("".join(f"{misspell(t)}\t{t}\n" for t in texts), encoding="utf-8")
    with pytest.raises(
        ValueError,
        match=r"pairs.tsv holds wrong<TAB>correct sentence pairs \(10 of its first 10 "
        r"lines\).*train_files",
    ):
        next(corpus_lines(str(pairs)))
    config = write_config(tmp_path / "c.yaml", output_dir=str(tmp_path / "out"))
    with pytest.raises(ValueError, match=r"c.yaml: corpus file .*pairs.tsv holds wrong<TAB>correct.*train_files=\["):
        load_config(config, [f"bench_params={{corpus: {pairs}}}"])
    ids = tmp_path / "ids.tsv"  # id<TAB>text lines are no pairs: read as text
    ids.write_text("".join(f"{i}\t{t}\n" for i, t in enumerate(texts)), encoding="utf-8")
    assert len(list(corpus_lines(str(ids)))) == 10


def test_help_lists_the_data_keys(capsys):
    from csc_hf.cli import main as cli_main
    from csc_hf.train import main as train_main

    with pytest.raises(SystemExit) as info:
        cli_main(["train", "--keys"])
    assert info.value.code == 0
    keys = capsys.readouterr().out
    assert train_main(["--help"]) == 0
    assert keys in capsys.readouterr().out
    for key in (
        "train_files: a list of strs (default: [])",
        "validation_files:",
        "use_benchmark: a bool (true or false) (default: True)",
    ):
        assert key in keys
    assert "wrong<TAB>correct .tsv" in keys and "datasets:PATH" in keys
