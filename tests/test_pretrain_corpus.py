"""Masked-LM pretraining text (``pretrain_corpus``) never holds the benchmark's validation or test sentences, and the
fine-tuning text (the benchmark's train pool) is disjoint from them."""

import json
from pathlib import Path

import pytest
import yaml
from conftest import BERT_TINY

from csc_hf.benchmark import BenchParams
from csc_hf.benchmark.plan import plan_for
from csc_hf.corpus import TEXT_SOURCES, TextSource, overlaps
from csc_hf.corruption import unpack
from csc_hf.modeling import CSCTokenizer
from csc_hf.training import DataArguments, ModelArguments, load_config, train
from csc_hf.training.config import check_pretrain_corpus
from csc_hf.training.data import pretraining_text, training_data

NEW = ["新的句子里有一个从来没有出现过的字：龘。", "这是另一段只在预训练文本里出现的新闻句子。"]


def write_config(path: Path, small_params, out: Path, **extra) -> Path:
    """A tiny mlm run on the small benchmark."""
    config = {
        "task": "mlm",
        "bench_params": small_params,
        "output_dir": str(out),
        "max_steps": 2,
        "use_cpu": True,
        "model_overrides": BERT_TINY,
        "per_device_train_batch_size": 8,
        "report_to": "none",
        "save_strategy": "no",
        "eval_strategy": "no",
        "disable_tqdm": True,
        **extra,
    }
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def pools(small_params):
    plan = plan_for(BenchParams(**small_params))
    return {name: unpack(plan.pools[name]) for name in ("train", "validation", "test")}


@pytest.fixture(scope="module")
def pretrain_file(tmp_path_factory, small_corpus, pools):
    """The small corpus, a validation and a test sentence written otherwise, one inside a longer sentence, new text."""
    validation, test = pools["validation"][0], pools["test"][0]
    lines = [
        *small_corpus.read_text(encoding="utf-8").splitlines(),
        validation.replace("，", ",").replace("。", " 。"),  # equal on its Han characters
        "据本报消息" + test,  # contains a test sentence
        *NEW,
    ]
    path = tmp_path_factory.mktemp("pretrain") / "text.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_pretraining_text_excludes_the_held_out_pools(small_params, pools, pretrain_file):
    text, counts = pretraining_text(DataArguments(bench_params=small_params, pretrain_corpus=str(pretrain_file)))
    held_out = pools["validation"] + pools["test"]
    assert not set(text) & set(held_out) and not any(overlaps(text, held_out))
    assert set(NEW) <= set(text) and not any(s.startswith("据本报消息") for s in text)
    kept_train = [s for s, o in zip(pools["train"], overlaps(pools["train"], held_out)) if not o]
    assert set(kept_train) <= set(text)  # the train pool stays, less its near-duplicates of held-out sentences
    (name,) = counts
    assert counts[name] == {"kept": len(text), "dropped": len(held_out) + 2 + len(pools["train"]) - len(kept_train)}


def test_fine_tuning_text_is_the_train_pool_and_pretraining_text_replaces_it(small_params, pools, pretrain_file):
    train_set, eval_set, _ = training_data(DataArguments(bench_params=small_params))
    assert sorted(train_set["target"]) == sorted(pools["train"])
    assert not set(train_set["target"]) & set(pools["validation"] + pools["test"])  # disjoint by construction
    data = DataArguments(bench_params=small_params, pretrain_corpus=str(pretrain_file))
    mlm_train, mlm_eval, _ = training_data(data)
    assert mlm_train["target"] == pretraining_text(data)[0] and mlm_train["source"] == mlm_train["target"]
    assert mlm_eval["target"] == eval_set["target"]  # validation stays the benchmark's


def test_pretrain_corpus_is_checked_before_any_work(tmp_path, small_params, pretrain_file, monkeypatch):
    config = write_config(tmp_path / "c.yaml", small_params, tmp_path / "o")
    for override, error, message in [
        (
            ["task=correction", f"pretrain_corpus={pretrain_file}"],
            ValueError,
            "is the text of the mlm and sides tasks; task=correction",
        ),
        ([f"pretrain_corpus={tmp_path / 'nope.txt'}"], FileNotFoundError, "nope.txt is neither a file or folder nor"),
    ]:
        with pytest.raises(error, match=f"override pretrain_corpus=.*: pretrain_corpus.*{message}"):
            load_config(config, override)
    monkeypatch.setitem(
        TEXT_SOURCES, "gone", TextSource("no_such_corpus_package", "no-such==1", ("x",), "lines", "CC0", "g")
    )
    with pytest.raises(ImportError, match="pretrain_corpus: the corpus 'gone' needs .* pip install no-such==1"):
        load_config(config, ["pretrain_corpus=gone"])
    with pytest.raises(ValueError, match="needs the benchmark: set use_benchmark: true"):
        check_pretrain_corpus(
            ModelArguments(task="mlm"),
            DataArguments(use_benchmark=False, train_files=["x.tsv"], pretrain_corpus="peoples_daily"),
        )


def test_mlm_trains_on_the_pretraining_text(tmp_path, small_params, pretrain_file):
    config = write_config(tmp_path / "c.yaml", small_params, tmp_path / "o", pretrain_corpus=str(pretrain_file))
    out = train(*load_config(config))
    assert "龘" in CSCTokenizer.from_pretrained(out).get_vocab()  # a character of the pretraining text alone
    assert json.loads((out / "csc_training.json").read_text(encoding="utf-8"))["pretrain_corpus"] == str(pretrain_file)


def test_pretraining_text_excludes_the_domain_pools(small_params, tmp_path):
    """A sentence of a domain config's test pool (here HSK's) never reaches pretraining, as the test pool's do not."""
    plan = plan_for(BenchParams(**small_params))
    domain = unpack(plan.domain("domain_hsk"))
    path = tmp_path / "text.txt"
    path.write_text("\n".join([*domain[:5], *NEW]) + "\n", encoding="utf-8")
    text, _ = pretraining_text(DataArguments(bench_params=small_params, pretrain_corpus=str(path)))
    assert set(NEW) <= set(text) and not set(domain) & set(text)
