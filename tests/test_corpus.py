import numpy as np
import pytest

from csc_hf.corpus import (
    Line,
    clean_sentences,
    corpus_lines,
    dataset_lines,
    normalize,
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
    lines = [Line("x", 1, "今天天气很好，我们出去玩吧。今天天气很好，我们出去玩吧。短句。"), Line("x", 2, "abcdefghijklmn中文。")]
    assert clean_sentences(lines, min_len=5) == ["今天天气很好，我们出去玩吧。"]
    assert clean_sentences(lines, min_len=5, dedupe=False) == ["今天天气很好，我们出去玩吧。"] * 2


def test_to_simplified():
    pytest.importorskip("opencc")
    assert clean_sentences([Line("x", 1, "這是一個測試句子，說得很對。")], min_len=5, to_simplified=True) == ["这是一个测试句子，说得很对。"]


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
    assert [l.text for l in corpus_lines(str(tmp_path))] == ["第一个文件", "第二个文件"]
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
