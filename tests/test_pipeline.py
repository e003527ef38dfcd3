"""The Corrector and the `chinese-spelling-check` pipeline task: aligned outputs, options honoured, input order kept."""

import copy
import random

import pytest
import torch
from conftest import BART_TINY, torch_threads
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from transformers import BertTokenizerFast, pipeline

from csc_hf.chars.pinyin import is_han
from csc_hf.modeling import CSCConfig, CSCForCorrection, CSCTokenizer, build_model
from csc_hf.pipeline import ChineseSpellingCheckPipeline, Corrector, plan_windows

TARGETS = ["我们今天去北京天安门广场看升旗。", "他说的是对的，我觉得很好。"]
ERRORS = ["我门今天去北京天安门广场看生旗。", "他说的适对的，我觉的很好。"]
EDITS = [[(1, "门", "们"), (13, "生", "升")], [(3, "适", "是"), (9, "的", "得")]]
TINY = dict(
    hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, max_position_embeddings=32
)
BART_TINY = {**BART_TINY, "max_position_embeddings": 32}  # conftest's, with positions as TINY's
MIXED = "abcXYZ 019,.!?😀🎉𠀀𝌆\u3000\t\n，。é"  # Latin, digits, spaces, emoji, astral, punctuation


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    with torch_threads(1):
        yield


@pytest.fixture(scope="module")
def tokenizer() -> CSCTokenizer:
    return CSCTokenizer.from_texts(TARGETS + ERRORS, extra_chars="abc,1")


@pytest.fixture(scope="module")
def model(tokenizer) -> CSCForCorrection:
    """A random tiny model (32 positions: texts over 30 characters run in windows); it changes most characters."""
    torch.manual_seed(0)
    return CSCForCorrection(CSCConfig(vocab_size=len(tokenizer), **TINY)).eval()


@pytest.fixture(scope="module")
def trained(tokenizer) -> CSCForCorrection:
    """A tiny model trained to correct ERRORS into TARGETS and to copy TARGETS."""
    torch.manual_seed(0)
    model = build_model("bert+pinyin_gru", tokenizer, **TINY).train()
    inputs = tokenizer(ERRORS + TARGETS, padding=True, return_tensors="pt")
    labels = tokenizer(TARGETS + TARGETS, padding=True, return_tensors="pt")["input_ids"]
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-2)
    for _ in range(80):
        model(**inputs, labels=labels).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return model.eval()


def biased(model: CSCForCorrection, tokenizer: CSCTokenizer, bias: dict[str, float]) -> CSCForCorrection:
    """A copy of `model` whose correction head adds `bias` to the logits of some tokens."""
    clone = CSCForCorrection(model.config)
    clone.load_state_dict(model.state_dict())
    with torch.no_grad():
        for token, value in bias.items():
            clone.head.decoder.bias[tokenizer.convert_tokens_to_ids(token)] += value
    return clone.eval()


def vocab_text(tokenizer: CSCTokenizer, length: int, seed: int) -> str:
    chars = [t for t in tokenizer.get_vocab() if len(t) == 1]
    return "".join(random.Random(seed).choices(chars, k=length))


def check_result(result: dict) -> None:
    """Aligned, only Han -> Han edits, and the prediction is the source with the edits applied."""
    source, prediction = result["source"], result["prediction"]
    assert len(prediction) == len(source)
    changed = [i for i, (a, b) in enumerate(zip(source, prediction)) if a != b]
    assert [edit["position"] for edit in result["edits"]] == changed
    for edit in result["edits"]:
        assert edit["wrong"] == source[edit["position"]] and edit["right"] == prediction[edit["position"]]
        assert is_han(edit["wrong"]) and is_han(edit["right"])


def assert_same(results: list[dict], expected: list[dict]) -> None:
    """Equal results; probabilities equal up to float noise (padding changes the batch's arithmetic; under bf16
    autocast, the default on a CPU with bf16 in hardware, by about 1e-6)."""

    def split(results):
        texts = [(r["source"], r["prediction"]) for r in results]
        edits = [[(e["position"], e["wrong"], e["right"]) for e in r["edits"]] for r in results]
        return texts, edits, [e["probability"] for r in results for e in r["edits"]]

    (texts, edits, probabilities), (texts_, edits_, probabilities_) = split(results), split(expected)
    assert texts == texts_ and edits == edits_ and probabilities == pytest.approx(probabilities_, abs=1e-5)


@pytest.mark.parametrize(("length", "size", "overlap"), [(0, 5, 1), (5, 5, 1), (6, 5, 0), (100, 30, 7), (61, 30, 29)])
def test_windows_tile_the_text_from_the_most_central_window(length, size, overlap):
    windows = plan_windows(length, size, overlap)
    assert [i for _, _, low, high in windows for i in range(low, high)] == list(range(length))
    for (start, end, low, high), following in zip(windows, windows[1:] + [None]):
        assert start <= low < high <= end and end - start == min(size, length)
        if following is not None:
            assert end - following[0] >= overlap
    for position in range(length):
        distance = [abs(position + 0.5 - (start + end) / 2) for start, end, _, _ in windows]
        kept = next(k for k, (_, _, low, high) in enumerate(windows) if low <= position < high)
        assert distance[kept] == min(distance)
    with pytest.raises(ValueError, match="overlap"):
        plan_windows(10, 5, 5)


def test_trained_model_corrects_with_edits_and_probabilities(trained, tokenizer):
    corrector = Corrector(trained, tokenizer)
    results = corrector(ERRORS + TARGETS)
    assert [r["prediction"] for r in results] == TARGETS + TARGETS
    assert [[(e["position"], e["wrong"], e["right"]) for e in r["edits"]] for r in results] == EDITS + [[], []]
    probabilities = [e["probability"] for r in results for e in r["edits"]]
    assert all(0.5 < p <= 1.0 for p in probabilities)
    assert corrector.correct(ERRORS) == TARGETS and corrector.correct(ERRORS[0]) == TARGETS[0]
    # an edit survives a threshold up to its probability and nothing above it
    lowest = min(probabilities)
    assert sum(len(r["edits"]) for r in corrector.with_options(threshold=lowest)(ERRORS)) == 4
    assert sum(len(r["edits"]) for r in corrector.with_options(threshold=lowest + 1e-9)(ERRORS)) == 3
    assert corrector.with_options(keep_bias=100.0).correct(ERRORS) == ERRORS


def test_threshold_and_keep_bias_only_remove_edits(model, tokenizer):
    corrector = Corrector(model, tokenizer)
    texts = ERRORS + TARGETS
    count = {}
    for bias in (-2.0, 0.0, 0.5, 2.0, 1e4):
        count[bias] = sum(len(r["edits"]) for r in corrector.with_options(keep_bias=bias)(texts))
    assert count[-2.0] >= count[0.0] >= count[0.5] >= count[2.0] >= count[1e4] == 0 < count[0.0]
    assert corrector.with_options(threshold=1.0).correct(texts) == texts


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(st.sampled_from("我们今天去北京看生旗的了" + MIXED), max_size=70), max_size=6))
def test_outputs_aligned_and_only_han_changes_on_mixed_text(model, tokenizer, texts):
    corrector = Corrector(
        biased(model, tokenizer, {"，": 50.0, "[UNK]": 60.0, "a": 40.0, "他": 5.0}), tokenizer, batch_size=3
    )
    results = corrector(texts)
    assert [r["source"] for r in results] == texts
    for result in results:
        check_result(result)
        kept = [(a, b) for a, b in zip(result["source"], result["prediction"]) if not is_han(a)]
        assert all(a == b for a, b in kept)
    assert corrector.correct(texts) == [r["prediction"] for r in results]


def test_best_han_character_replaces_a_non_han_favourite(model, tokenizer):
    favours_comma = biased(model, tokenizer, {"，": 50.0, "他": 10.0})
    result = Corrector(favours_comma, tokenizer)("我们去1a，😀")
    assert result["prediction"] == "他他他1a，😀"  # never "，"; only Han positions move


def test_odd_characters_stay(model, tokenizer):
    texts = ["\ud800我们\udfff", "\x00们\r\n我", " ", "😀" * 40]
    for result in Corrector(biased(model, tokenizer, {"他": 10.0}), tokenizer)(texts):
        check_result(result)
        assert [a for a in result["prediction"] if not is_han(a)] == [a for a in result["source"] if not is_han(a)]


def test_protected_chars_and_terms_never_change(model, tokenizer):
    to_ta = biased(model, tokenizer, {"他": 10.0})
    text = "我们今天去北京，北京北京天安门。我们" * 3  # over one window
    corrector = Corrector(to_ta, tokenizer, protected_chars="门我", protected_terms=["北京北", "天安"])
    result = corrector(text)
    check_result(result)
    protected = {i for i, ch in enumerate(text) if ch in "门我"}
    for term in ("北京北", "天安"):
        protected |= {i + k for i in range(len(text)) if text.startswith(term, i) for k in range(len(term))}
    assert {e["position"] for e in result["edits"]} == {i for i, ch in enumerate(text) if is_han(ch)} - protected
    with pytest.raises(ValueError, match="single characters"):
        Corrector(model, tokenizer, protected_chars=["北京"])
    with pytest.raises(TypeError, match="not the str"):
        Corrector(model, tokenizer, protected_terms="北京")


def test_long_text_windows_equal_their_own_corrections(model, tokenizer):
    corrector = Corrector(model, tokenizer)
    assert (corrector.window, corrector.overlap) == (30, 7)
    text = vocab_text(tokenizer, 100, seed=1)
    result = corrector(text)
    check_result(result)
    assert result["edits"]
    for start, end, low, high in plan_windows(len(text), corrector.window, corrector.overlap):
        alone = corrector.correct(text[start:end])
        assert result["prediction"][low:high] == alone[low - start : high - start]


def test_results_in_input_order_whatever_the_batching(model, tokenizer):
    texts = [vocab_text(tokenizer, n, seed=n) for n in (3, 45, 0, 12, 1, 30, 7, 61)]
    single = [Corrector(model, tokenizer).correct(text) for text in texts]
    for batch_size in (1, 2, 5, 32):
        assert Corrector(model, tokenizer, batch_size=batch_size).correct(texts) == single
        assert Corrector(model, tokenizer, batch_size=batch_size).correct(iter(texts)) == single


def test_bad_inputs_name_the_index(model, tokenizer):
    corrector = Corrector(model, tokenizer)
    with pytest.raises(TypeError, match=r"texts\[1\] must be a str, got NoneType"):
        corrector(["我们", None])
    with pytest.raises(TypeError, match=r"texts\[2\] must be a str, got int"):
        corrector.correct(["我们", "", 3])
    with pytest.raises(TypeError, match="got NoneType"):
        corrector(None)
    assert corrector([]) == [] and corrector.correct([]) == []
    assert corrector("") == {"source": "", "prediction": "", "edits": []}
    checker = pipeline("chinese-spelling-check", model=model, tokenizer=tokenizer)
    with pytest.raises(TypeError, match=r"texts\[0\] must be a str, got bytes"):
        checker([b"x"])
    with pytest.raises(TypeError, match="must be a str, got NoneType"):
        checker(None)
    with pytest.raises(ValueError, match="threshold"):
        Corrector(model, tokenizer, threshold=1.5)
    with pytest.raises(TypeError, match="unknown options"):
        corrector.with_options(treshold=0.5)


def test_a_wordpiece_tokenizer_over_the_same_vocabulary_gives_the_same_corrections(model, tokenizer, tmp_path):
    """The corrector reads only the vocabulary: each character is its own token, whatever WordPiece would merge."""
    (tmp_path / "vocab.txt").write_text("\n".join(tokenizer.convert_ids_to_tokens(range(len(tokenizer)))) + "\n")
    wordpiece = BertTokenizerFast(vocab=str(tmp_path / "vocab.txt"))
    texts = ["我们 abc abc", "北京1111，他们", "[mask]我们😀", ""]  # no capitals: BERT would lower-case them
    assert len(wordpiece.tokenize(texts[0])) < len(texts[0])  # WordPiece drops the spaces
    to_ta = biased(model, tokenizer, {"他": 10.0})
    assert Corrector(to_ta, wordpiece)(texts) == Corrector(to_ta, tokenizer)(texts)


def test_pipeline_task_with_objects_and_saved_folder(trained, tokenizer, tmp_path):
    corrector = Corrector(trained, tokenizer)
    texts = ERRORS + TARGETS + ["", "北京 abc 😀"]
    expected = corrector(texts)
    checker = pipeline("chinese-spelling-check", model=trained, tokenizer=tokenizer)
    assert isinstance(checker, ChineseSpellingCheckPipeline)
    assert_same(checker(texts), expected)
    assert_same(checker(texts, batch_size=1), expected)
    assert_same(checker(tuple(texts), batch_size=4), expected)
    assert_same([checker(ERRORS[0])], expected[:1])
    assert_same(list(checker(text for text in texts)), expected)  # a generator streams
    assert checker([]) == []
    assert_same(checker(ERRORS, keep_bias=100.0), corrector.with_options(keep_bias=100.0)(ERRORS))
    assert checker(ERRORS, protected_terms=["我门"])[0]["prediction"] == "我门" + TARGETS[0][2:]
    strict = pipeline("chinese-spelling-check", model=trained, tokenizer=tokenizer, threshold=1.0)
    assert_same(strict(ERRORS), corrector.with_options(threshold=1.0)(ERRORS))

    trained.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    loaded = pipeline("chinese-spelling-check", model=str(tmp_path), device="cpu")
    assert type(loaded.model) is CSCForCorrection and type(loaded.tokenizer) is CSCTokenizer
    assert_same(loaded(texts), expected)
    assert_same(Corrector.from_pretrained(str(tmp_path))(texts), expected)


def test_bart_baseline_keeps_lengths_and_reports_no_probabilities(tokenizer, tmp_path):
    torch.manual_seed(0)
    bart = build_model("bart", tokenizer, **BART_TINY).eval()
    corrector = Corrector(bart, tokenizer, batch_size=2)
    assert corrector.window == 29  # 32 positions: [SEP] [CLS] chars [SEP] in the decoder
    texts = ["我们😀去北京 abc", "", vocab_text(tokenizer, 70, seed=2), ERRORS[0]]
    results = corrector(texts)
    for result in results:
        check_result(result)
        assert all(edit["probability"] is None for edit in result["edits"])
    assert any(result["edits"] for result in results)
    assert corrector.correct(texts) == [r["prediction"] for r in results]
    with pytest.raises(ValueError, match="no probabilities"):
        corrector.with_options(threshold=0.5)
    bart.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    assert Corrector.from_pretrained(str(tmp_path), batch_size=2).correct(texts) == corrector.correct(texts)
    assert pipeline("chinese-spelling-check", model=str(tmp_path))(texts) == results


def test_precision_autocasts_the_forward_and_decodes_fp32_logits(trained, tokenizer, monkeypatch):
    """`precision` decides the forward's dtype (a hook sees the head's output); the decoding reads fp32 logits; the
    trained model's corrections survive bf16; `auto` follows the CPU's bf16 support; a bad value is named."""
    import csc_hf.precision

    seen = []
    hook = trained.head.decoder.register_forward_hook(lambda module, args, output: seen.append(output.dtype))
    try:
        for precision, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
            corrector = Corrector(trained, tokenizer, precision=precision)
            assert corrector.correct(ERRORS) == TARGETS
            assert seen[-1] == dtype
    finally:
        hook.remove()
    monkeypatch.setattr(csc_hf.precision, "cpu_has_bf16", lambda: False)
    assert not Corrector(trained, tokenizer).bf16
    monkeypatch.setattr(csc_hf.precision, "cpu_has_bf16", lambda: True)
    assert Corrector(trained, tokenizer).bf16
    with pytest.raises(ValueError, match=r"precision='fp16': choose one of \('auto', 'bf16', 'fp32'\)"):
        Corrector(trained, tokenizer, precision="fp16")


def test_bf16_weights_convert_the_model_and_drop_autocast(trained, tokenizer, monkeypatch, tmp_path):
    """`bf16_weights`: the model's weights in bf16, no autocast, the trained model's corrections kept; where `auto`
    resolves to fp32 nothing changes; with `fp32`, or not a bool, it is an error before any loading."""
    import csc_hf.precision

    model = copy.deepcopy(trained)
    autocast = []
    model.register_forward_hook(lambda module, args, output: autocast.append(torch.is_autocast_enabled("cpu")))
    corrector = Corrector(model, tokenizer, precision="bf16", bf16_weights=True)
    assert corrector.bf16 and corrector.bf16_weights
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}
    assert corrector.correct(ERRORS) == TARGETS
    assert autocast == [False]
    assert {p.dtype for p in trained.parameters()} == {torch.float32}  # the copy converted, not the model it copied
    monkeypatch.setattr(csc_hf.precision, "cpu_has_bf16", lambda: False)
    kept = Corrector(trained, tokenizer, bf16_weights=True)  # auto: fp32 here, the weights untouched
    assert not kept.bf16 and not kept.bf16_weights
    assert {p.dtype for p in trained.parameters()} == {torch.float32}
    with pytest.raises(ValueError, match="bf16_weights=True holds the weights in bf16: it contradicts precision=fp32"):
        Corrector(trained, tokenizer, precision="fp32", bf16_weights=True)
    with pytest.raises(TypeError, match="bf16_weights must be True or False, not 'yes'"):
        Corrector(trained, tokenizer, bf16_weights="yes")
    with pytest.raises(ValueError, match="contradicts precision=fp32"):
        Corrector.from_pretrained(str(tmp_path / "absent"), precision="fp32", bf16_weights=True)
    trained.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    loaded = Corrector.from_pretrained(str(tmp_path / "model"), precision="bf16", bf16_weights=True)
    assert loaded.model.dtype == torch.bfloat16 and loaded.correct(ERRORS) == TARGETS


def test_bart_keeps_insertions_and_deletions_only_when_asked(tokenizer, monkeypatch):
    """csc_hf's BART generates freely when edit_kinds allows missing or redundant characters; its output is aligned to
    the source's tokens and only Han insertions and deletions (outside protected characters and terms) are kept."""
    torch.manual_seed(0)
    bart = build_model("bart", tokenizer, **BART_TINY).eval()
    texts = ["我们们今天去北京。", "我今天去北京天安门广场看升旗。", "他说的是对", "他说的适对的，我觉的很好。" * 3]

    def rewrite(text: str) -> str:  # the doubled 们 goes, 们 comes after 我, 的 after 是对 (at the end), 。 goes
        return text.replace("们们", "们").replace("我今", "我们今").replace("是对", "是对的").replace("。", "")

    def generate(input_ids, attention_mask=None, decoder_input_ids=None, max_new_tokens=0, **kwargs):
        rows = [
            [
                *decoder_input_ids[0].tolist(),
                *tokenizer(rewrite(tokenizer.decode(row, skip_special_tokens=True)))["input_ids"][1:],
            ]
            for row in input_ids.tolist()
        ]
        width = max(map(len, rows))
        return torch.tensor([row + [tokenizer.pad_token_id] * (width - len(row)) for row in rows])

    monkeypatch.setattr(bart, "generate", generate)
    corrector = Corrector(bart, tokenizer, batch_size=2)
    assert corrector.can_change_length and corrector.edit_kinds == ("substitution",)
    every = corrector.with_options(edit_kinds=["redundant", "missing", "substitution"])
    assert every.edit_kinds == ("substitution", "missing", "redundant")
    assert every.correct(texts) == ["我们今天去北京。", "我们今天去北京天安门广场看升旗。", "他说的是对的", texts[3]]
    assert every(texts[0])["edits"] == [
        {"position": 2, "wrong": "们", "right": "", "probability": None, "kind": "redundant"}
    ]
    assert every(texts[2])["edits"] == [
        {"position": 5, "wrong": "", "right": "的", "probability": None, "kind": "missing"}  # appended at the end
    ]
    only_missing = corrector.with_options(edit_kinds=["missing"])
    assert only_missing.correct(texts[:3]) == [texts[0], "我们今天去北京天安门广场看升旗。", "他说的是对的"]
    protected = every.with_options(protected_chars="们", protected_terms=["的是对"])
    assert protected.correct(texts[:3]) == [texts[0], "我们今天去北京天安门广场看升旗。", "他说的是对的"]
    assert every.with_options(protected_terms=["我今天"]).correct(texts[1]) == texts[1]  # nothing goes in inside one
    options = [{"edit_kinds": ["substitution"]}, {"edit_kinds": ["substitution", "missing", "redundant"]}]
    assert corrector.correct_each(texts, options) == [corrector.correct(texts), every.correct(texts)]


def test_a_tagging_model_cannot_insert_or_delete(tokenizer, model):
    corrector = Corrector(model, tokenizer)
    assert not corrector.can_change_length and corrector.edit_kinds == ("substitution",)
    with pytest.raises(ValueError, match="a tagging model predicts one character per source character"):
        corrector.with_options(edit_kinds=["substitution", "missing"])
    with pytest.raises(ValueError, match=r"edit_kinds: \['insertion'\] are not edit kinds"):
        Corrector(model, tokenizer, edit_kinds=["insertion"])
