"""CSCTokenizer: one token per character, whatever the character, and a standard saved form."""

import pytest
from transformers import AutoTokenizer, PreTrainedTokenizerFast

from csc_hf.modeling import CSCTokenizer

TEXTS = ["我们今天去北京。", "他说的是对的，我觉得很好。", "我们 ab 12"]
MIXED = "我们 ab12 x\n😀[MASK]，\u200b我"  # spaces, Latin, digits, newline, emoji, a literal special token


@pytest.fixture(scope="module")
def tokenizer() -> CSCTokenizer:
    return CSCTokenizer.from_texts(TEXTS)


def test_one_token_per_character(tokenizer):
    encoding = tokenizer(MIXED, return_offsets_mapping=True)
    ids, offsets = encoding["input_ids"], encoding["offset_mapping"]
    assert len(ids) == len(MIXED) + 2
    assert (ids[0], ids[-1]) == (tokenizer.cls_token_id, tokenizer.sep_token_id)
    assert offsets[1:-1] == [(i, i + 1) for i in range(len(MIXED))]
    vocab = tokenizer.get_vocab()
    assert ids[1:-1] == [vocab.get(ch, tokenizer.unk_token_id) for ch in MIXED]
    assert tokenizer.tokenize("ab 12") == ["a", "b", " ", "1", "2"]  # no Latin runs merged, spaces kept


def test_out_of_vocabulary_and_special_strings(tokenizer):
    ids = tokenizer("😀[MASK]")["input_ids"][1:-1]
    assert ids[0] == tokenizer.unk_token_id  # outside the BMP: one [UNK]
    assert len(ids) == 7 and tokenizer.mask_token_id not in ids  # a literal "[MASK]" is six characters


def test_empty_and_bad_input(tokenizer):
    assert tokenizer("")["input_ids"] == [tokenizer.cls_token_id, tokenizer.sep_token_id]
    batch = tokenizer(["", "我们"], padding=True)
    assert [sum(mask) for mask in batch["attention_mask"]] == [2, 4]
    with pytest.raises((TypeError, ValueError)):
        tokenizer(None)
    with pytest.raises(TypeError):
        tokenizer.decode_correction(None, [])


def test_vocabulary_from_texts():
    tokenizer = CSCTokenizer.from_texts(["aab", "ac"], min_freq=2, extra_chars=["我"])
    assert tokenizer.convert_ids_to_tokens(list(range(len(tokenizer)))) == [
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        "a",
        "我",
    ]
    assert len(CSCTokenizer.from_texts(["abcdef"], max_size=7)) == 7


def test_bert_vocabulary(tmp_path):
    tokens = ["[PAD]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "我", "们", "##们", "the"]
    (tmp_path / "vocab.txt").write_text("\n".join(tokens) + "\n", encoding="utf-8")
    tokenizer = CSCTokenizer.from_bert_vocab(tmp_path)
    assert tokenizer.get_vocab() == {token: i for i, token in enumerate(tokens)}  # same ids as the checkpoint
    assert tokenizer("我们the")["input_ids"] == [3, 6, 7, 2, 2, 2, 4]  # "##x" and words never match a character
    (tmp_path / "vocab.txt").write_text("我\n们\n", encoding="utf-8")
    with pytest.raises(ValueError, match="special tokens"):
        CSCTokenizer.from_bert_vocab(tmp_path / "vocab.txt")


def test_saved_folder_is_a_standard_tokenizer(tokenizer, tmp_path):
    tokenizer.save_pretrained(tmp_path)
    auto = AutoTokenizer.from_pretrained(tmp_path)
    plain = PreTrainedTokenizerFast.from_pretrained(tmp_path)  # what a user without csc_hf gets
    assert isinstance(auto, CSCTokenizer)
    for loaded in (auto, plain):
        assert loaded(MIXED)["input_ids"] == tokenizer(MIXED)["input_ids"]
        assert loaded(TEXTS, padding=True)["input_ids"] == tokenizer(TEXTS, padding=True)["input_ids"]


def test_decode_correction_keeps_length_and_unknown_characters(tokenizer):
    text = "我们😀去北京"
    ids = tokenizer(text)["input_ids"]
    vocab = tokenizer.get_vocab()
    predicted = [vocab["他"]] * len(ids)  # a model that answers 他 everywhere, specials included
    assert tokenizer.decode_correction(text, predicted) == "他他😀他他他"
    assert tokenizer.decode_correction(text, predicted[:3]) == "他他😀去北京"  # short output: source kept
    assert tokenizer.decode_correction(text, [tokenizer.pad_token_id] * len(ids)) == text
    assert tokenizer.decode_correction("", []) == ""
