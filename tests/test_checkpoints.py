"""Outside checkpoints: `Corrector`, `csc-bench correct` and `csc-bench evaluate` take any HF checkpoint folder (a plain
`BertForMaskedLM` with a WordPiece vocabulary, a seq2seq model with any tokenizer, a model with remote code), keep
every output aligned with its input, change only Han characters, and score."""

import json

import pytest
import torch
from conftest import torch_threads
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import (
    BartConfig,
    BartForConditionalGeneration,
    BertConfig,
    BertForMaskedLM,
    BertTokenizerFast,
    PreTrainedTokenizerFast,
    T5Config,
    T5ForConditionalGeneration,
    pipeline,
)

from csc_hf.chars.pinyin import is_han
from csc_hf.cli import main
from csc_hf.edits import aligned_substitutions
from csc_hf.evaluation import EvaluationOptions, evaluate_model
from csc_hf.files import read_lines, read_predictions
from csc_hf.model_folder import weights_digest
from csc_hf.pipeline import Corrector

SENTENCES = [
    "今年接收720余名转业干部。",
    "他用iPhone拍照。",
    "我们今天去北京天安门广场看升旗。",
    "他说的是对的，我觉得很好。",
]
ODD = [  # Latin and digits; emoji; astral, rare; literal specials; full width; surrogates; empty, blank, long
    "今年接收720余名转业干部。",
    "他用iPhone拍照。",
    "我们 abc ABC\t123，。😀🎉",
    "𠀀𝌆鿿龘我们\u3000é",
    "[MASK][CLS]我们",
    "ＡＢＣ１２３我们",
    "\ud800我们\udfff",
    "",
    " ",
    "我" * 80,
]
WORDPIECE = [
    "720",
    "2015",
    "##0",
    "##20",
    "iphone",
    "ip",
    "##hone",
    "##one",
    "##ab",
    "ab",
    "##c",
    "北京",
    "##们",
    "##天",
    "今年",
]
SPECIAL = ["[PAD]", *(f"[unused{i}]" for i in range(1, 10)), "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
TINY_BERT = dict(
    hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32, max_position_embeddings=40
)


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    with torch_threads(1):
        yield


def expected_by_rule(text: str, vocab: dict[str, int], char: str) -> str:
    """What a model that always predicts `char` must give: every Han character in the vocabulary becomes `char`,
    everything else stays."""
    return "".join(char if is_han(c) and c in vocab else c for c in text)


def check_aligned(sources: list[str], predictions: list[str]) -> None:
    """Same lengths, non-Han characters untouched, changes only Han -> Han."""
    for source, prediction in zip(sources, predictions, strict=True):
        assert len(prediction) == len(source), (source, prediction)
        for a, b in zip(source, prediction):
            assert a == b or (is_han(a) and is_han(b)), (source, prediction)


@pytest.fixture(scope="module")
def vocab_file(tmp_path_factory, small_corpus):
    """A bert-base-chinese-style `vocab.txt`: special and unused tokens, punctuation, digits, Latin letters, the
    corpus's characters, and WordPiece pieces that merge digits, Latin and Han ("720", "iphone", "##们")."""
    chars = sorted({c for line in [*read_lines(small_corpus), *SENTENCES] for c in line if not c.isspace()})
    latin = [*"0123456789abcdefghijklmnopqrstuvwxyz", "，", "。"]
    tokens = list(dict.fromkeys([*SPECIAL, *latin, *chars, *WORDPIECE]))
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(tokens) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory, vocab_file):
    """A plain random `BertForMaskedLM` with a `BertTokenizerFast` over `vocab_file`, its output bias pushing every
    position towards "他" (so the rule of every prediction is known)."""
    tokenizer = BertTokenizerFast(vocab=str(vocab_file))
    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig(vocab_size=len(tokenizer), **TINY_BERT))
    with torch.no_grad():
        model.cls.predictions.bias[tokenizer.convert_tokens_to_ids("他")] += 100.0
    folder = tmp_path_factory.mktemp("bert") / "model"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def bpe_tokenizer(texts: list[str], special: list[str], template: str, **tokens: str) -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer trained here on `texts` (multi-character tokens, any character encodable)."""
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    backend.train_from_iterator(
        texts,
        trainers.BpeTrainer(
            vocab_size=600, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
        ),
    )
    backend.post_processor = processors.TemplateProcessing(
        single=template, special_tokens=[(t, backend.token_to_id(t)) for t in special if t in template]
    )
    return PreTrainedTokenizerFast(tokenizer_object=backend, model_max_length=64, **tokens)


@pytest.fixture(scope="module", params=["t5-bpe", "bart-wordpiece"])
def seq2seq_dir(request, tmp_path_factory, small_corpus, vocab_file):
    """A tiny random seq2seq checkpoint: T5 with a byte-level BPE tokenizer built here, or BART with the WordPiece
    vocabulary (the layout of the Chinese BARTs, whose decoded text has spaces between characters)."""
    texts = [*read_lines(small_corpus)[:300], *SENTENCES]
    torch.manual_seed(0)
    if request.param == "t5-bpe":
        tokenizer = bpe_tokenizer(
            texts, ["<pad>", "</s>", "<unk>"], "$A </s>", pad_token="<pad>", eos_token="</s>", unk_token="<unk>"
        )
        model = T5ForConditionalGeneration(
            T5Config(
                vocab_size=len(tokenizer),
                d_model=16,
                d_kv=8,
                d_ff=32,
                num_layers=1,
                num_heads=2,
                n_positions=64,
                pad_token_id=tokenizer.pad_token_id,
                eos_token_id=tokenizer.eos_token_id,
                decoder_start_token_id=tokenizer.pad_token_id,
            )
        )
    else:
        tokenizer = BertTokenizerFast(vocab=str(vocab_file), model_max_length=64)
        ids = dict(
            pad_token_id=tokenizer.pad_token_id,
            bos_token_id=tokenizer.cls_token_id,
            eos_token_id=tokenizer.sep_token_id,
            decoder_start_token_id=tokenizer.sep_token_id,
            forced_eos_token_id=tokenizer.sep_token_id,
        )
        model = BartForConditionalGeneration(
            BartConfig(
                vocab_size=len(tokenizer),
                d_model=16,
                encoder_layers=1,
                decoder_layers=1,
                encoder_attention_heads=2,
                decoder_attention_heads=2,
                encoder_ffn_dim=32,
                decoder_ffn_dim=32,
                max_position_embeddings=64,
                **ids,
            )
        )
    folder = tmp_path_factory.mktemp(request.param) / "model"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_plain_bert_checkpoint_corrects_character_by_character(bert_dir, vocab_file):
    vocab = BertTokenizerFast(vocab=str(vocab_file)).get_vocab()
    tokenizer = BertTokenizerFast.from_pretrained(bert_dir)
    assert len(tokenizer.tokenize(SENTENCES[0])) < len(SENTENCES[0])  # WordPiece merges "720"...
    assert "iphone" in tokenizer.tokenize(SENTENCES[1])  # ... and "iPhone"
    corrector = Corrector.from_pretrained(bert_dir, batch_size=3)
    assert corrector.window == 38  # 40 positions: texts over 38 characters run in windows
    predictions = corrector.correct(ODD)
    assert predictions == [expected_by_rule(text, vocab, "他") for text in ODD]
    assert predictions[:2] == ["他他他他720他他他他他他。", "他他iPhone他他。"]
    assert corrector(ODD[2])["edits"][0] == {
        "position": 0,
        "wrong": "我",
        "right": "他",
        "probability": pytest.approx(1.0),
        "kind": "substitution",
    }


def test_plain_bert_checkpoint_through_the_cli_and_the_pipeline(bert_dir, capsys):
    assert main(["correct", str(bert_dir), *SENTENCES[:2]]) == 0
    assert capsys.readouterr().out.splitlines() == ["他他他他720他他他他他他。", "他他iPhone他他。"]
    checker = pipeline("chinese-spelling-check", model=str(bert_dir))
    assert [r["prediction"] for r in checker(SENTENCES[:2])] == ["他他他他720他他他他他他。", "他他iPhone他他。"]


def test_seq2seq_checkpoint_is_aligned_to_the_source(seq2seq_dir):
    corrector = Corrector.from_pretrained(seq2seq_dir, batch_size=4)
    assert not corrector.per_character and corrector.window == 62
    results = corrector(ODD + SENTENCES)
    check_aligned(ODD + SENTENCES, [r["prediction"] for r in results])
    assert all(edit["probability"] is None for r in results for edit in r["edits"])
    assert corrector.correct(ODD + SENTENCES) == [r["prediction"] for r in results]
    protected = corrector.with_options(protected_chars="我们他")
    assert all(e["wrong"] not in "我们他" for r in protected(ODD + SENTENCES) for e in r["edits"])
    with pytest.raises(ValueError, match="no probabilities"):
        corrector.with_options(keep_bias=1.0)
    with pytest.raises(ValueError, match="similarity_prior must be 0"):
        corrector.with_options(similarity_prior=1.0)


def rewrite(text: str) -> str:
    """A seq2seq model's output with a known correction (门 -> 们) amid a change of case, an insertion, a deletion."""
    return text.replace("门", "们").replace("去", "去了").replace("，", "").replace("a", "A")


def test_seq2seq_output_keeps_only_same_position_han_substitutions(seq2seq_dir, monkeypatch):
    corrector = Corrector.from_pretrained(seq2seq_dir, batch_size=2)
    tokenizer = corrector.tokenizer

    def generate(input_ids, attention_mask=None, **kwargs):  # decodes to the source's rewrite (spaced for WordPiece)
        texts = tokenizer.batch_decode(input_ids, skip_special_tokens=True)
        return tokenizer([rewrite(text) for text in texts], padding=True, return_tensors="pt")["input_ids"]

    monkeypatch.setattr(corrector.model, "generate", generate)
    texts = ["我门去北京，abc 720。", "他们门口有iPhone。", "门" * 150, "abc，去"]
    assert corrector.correct(texts) == [text.replace("门", "们") for text in texts]


def test_seq2seq_output_keeps_han_insertions_and_deletions_when_asked(seq2seq_dir, monkeypatch):
    import csc_hf.pipeline

    def generate(model, tokenizer, texts, max_length):  # a rewrite: 们 missing after 我, 的 doubled, a comma dropped
        return [t.replace("我去", "我们去").replace("的的", "的").replace("，", "").replace("a", "A") for t in texts]

    monkeypatch.setattr(csc_hf.pipeline, "generate_corrections", generate)
    corrector = Corrector.from_pretrained(seq2seq_dir, batch_size=2)
    texts = ["我去北京，abc 的的 720。", "好的的"]
    assert corrector.correct(texts) == texts  # substitutions only: the rewrite has none
    every = corrector.with_options(edit_kinds=["substitution", "missing", "redundant"])
    assert every.correct(texts) == ["我们去北京，abc 的 720。", "好的"]  # only Han characters go in or out
    assert [e["kind"] for e in every(texts[0])["edits"]] == ["missing", "redundant"]


def test_aligned_substitutions_keep_only_same_position_changes():
    assert aligned_substitutions("我门去北京", "我 们 去 北 京") == [(1, "们")]  # a decoder's spaces
    assert aligned_substitutions("我门去北京", "我们去了北京") == [(1, "们")]  # an insertion is dropped
    assert aligned_substitutions("我门去 北京。", "我们北京") == [(1, "们")]  # deletions too; the space stays put
    assert aligned_substitutions("我们 去北京", "他们去北景") == [(0, "他"), (5, "景")]
    assert aligned_substitutions("", "多余的话") == [] and aligned_substitutions("我们", "") == []


def check_evaluation(folder, small_params, tmp_path, caplog) -> None:
    """`evaluate_model` scores the test split, logs it, and saves aligned predictions."""
    caplog.set_level("INFO", logger="csc_hf.evaluation")
    records = evaluate_model(folder, ["test"], EvaluationOptions(small_params, bootstrap=0, predictions_dir=tmp_path))
    assert [(r["config"], r["split"]) for r in records] == [("test", "test")]
    assert 0.0 <= records[0]["scores"]["char_cor_f1"] <= 1.0 and 0.0 <= records[0]["scores"]["fpr"] <= 1.0
    assert "test/test: 80 sentences" in caplog.text  # one line per split: counts and time
    assert records[0]["sentences_per_s"] > 0 and records[0]["seconds"] > 0  # the throughput beside the scores
    assert records[0]["weights_sha256"] == weights_digest(folder) and len(weights_digest(folder)) == 64
    from csc_hf import load_dataset

    sources = load_dataset("csc_bench", "test", split="test", **small_params)["source"]
    check_aligned(sources, read_predictions(tmp_path / "test.test.txt", sources))


def test_evaluate_scores_a_bert_checkpoint(bert_dir, small_params, tmp_path, caplog):
    check_evaluation(bert_dir, small_params, tmp_path, caplog)


def test_evaluate_scores_a_seq2seq_checkpoint(seq2seq_dir, small_params, tmp_path, caplog):
    check_evaluation(seq2seq_dir, small_params, tmp_path, caplog)


def test_evaluate_command_on_a_bert_checkpoint_shows_progress(bert_dir, small_params, tmp_path, capsys):
    args = [a for k, v in small_params.items() for a in (f"--{k.replace('_', '-')}", str(v))]
    assert main(["evaluate", str(bert_dir), "--bootstrap", "0", "--output", str(tmp_path / "e.json"), *args]) == 0
    captured = capsys.readouterr()
    assert "test/test" in captured.out and "evaluate model" in captured.err  # the table, and the bar per split
    assert json.loads((tmp_path / "e.json").read_text(encoding="utf-8"))[0]["keep_bias"] == 0.0


REMOTE_CODE = """from transformers import BertConfig, BertForMaskedLM


class TinyRemoteConfig(BertConfig):
    model_type = "tiny-remote-bert"


class TinyRemoteForMaskedLM(BertForMaskedLM):
    config_class = TinyRemoteConfig
"""


def test_remote_code_model_needs_trust_remote_code(bert_dir, tmp_path, capsys):
    folder = tmp_path / "remote"
    model = BertForMaskedLM.from_pretrained(bert_dir)
    model.save_pretrained(folder)
    BertTokenizerFast.from_pretrained(bert_dir).save_pretrained(folder)
    (folder / "modeling_tiny.py").write_text(REMOTE_CODE, encoding="utf-8")
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config.update(
        model_type="tiny-remote-bert",
        architectures=["TinyRemoteForMaskedLM"],
        auto_map={
            "AutoConfig": "modeling_tiny.TinyRemoteConfig",
            "AutoModelForMaskedLM": "modeling_tiny.TinyRemoteForMaskedLM",
        },
    )
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(ValueError, match="trust_remote_code"):
        Corrector.from_pretrained(folder)
    corrector = Corrector.from_pretrained(folder, trust_remote_code=True)
    assert type(corrector.model).__name__ == "TinyRemoteForMaskedLM"
    assert corrector.correct(SENTENCES[1]) == "他他iPhone他他。"
    assert main(["correct", str(folder), SENTENCES[1]]) == 2
    assert "trust_remote_code" in capsys.readouterr().err
    assert main(["correct", str(folder), SENTENCES[1], "--trust-remote-code"]) == 0
    assert capsys.readouterr().out.strip() == "他他iPhone他他。"
