"""The CSC model family: every variant trains, round-trips, loads through the Auto classes and as remote code."""

import copy
import os

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import BART_TINY, run_without_csc_hf
from transformers import (
    AutoConfig,
    AutoModel,
    AutoModelForMaskedLM,
    AutoTokenizer,
    BertConfig,
    BertForMaskedLM,
    BertModel,
)

from csc_hf.chars.pinyin import char_readings, is_han
from csc_hf.edits import EDIT_KINDS
from csc_hf.modeling import (
    VARIANTS,
    CSCConfig,
    CSCForCorrection,
    CSCModel,
    CSCTokenizer,
    bart_correct,
    bart_generate,
    build_char_knowledge,
    build_model,
    context_pinyin_ids,
    load_vectors,
    modeling_csc,
)
from csc_hf.modeling.configuration_csc import SOURCE_KINDS
from csc_hf.pipeline import Corrector, decode_edits

TARGETS = ["我们今天去北京天安门广场看升旗。", "他说的是对的，我觉得很好。", "银行在中国科学院旁边，行走十分钟。"]
ERRORS = ["我门今天去北京天安门广场看生旗。", "他说的适对的，我觉的很好。", "银行在中国科学院旁边，行走十分中。"]
TINY = dict(
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=64,
    max_position_embeddings=64,
    side_size=16,
    glyph_channels=[8, 16],
    glyph_size=16,
    max_strokes=16,
)
BART_TINY = {**BART_TINY, "max_position_embeddings": 64}  # conftest's, with positions as TINY's
EXTRA_VARIANTS = {
    "vectors_concat": {"sources": ["pinyin_vectors", "glyph_vectors"], "fusion": "concat"},
    "pinyin_transformer_sum": {"sources": ["pinyin_transformer"], "fusion": "sum"},
    "frozen_gate+detection": {"sources": ["pinyin_gru", "glyph_cnn"], "freeze_sources": True, "detection_head": True},
}
ALL_VARIANTS = {**VARIANTS, **EXTRA_VARIANTS}
SAME = dict(rtol=0, atol=1e-6)  # loaded weights sit at other memory alignments: float sums may differ in the last bit


@pytest.fixture(scope="module")
def tokenizer() -> CSCTokenizer:
    return CSCTokenizer.from_texts(TARGETS + ERRORS)


@pytest.fixture(scope="module")
def vectors(tokenizer) -> dict[str, dict[str, np.ndarray]]:
    rng = np.random.default_rng(0)
    chars = [t for t in tokenizer.get_vocab() if len(t) == 1]
    return {
        "phonetic_vectors": {ch: rng.normal(size=6).astype(np.float32) for ch in chars[::2]} | {"hang2": np.ones(6)},
        "graphic_vectors": {ch: rng.normal(size=10).astype(np.float32) for ch in chars},
    }


@pytest.fixture(scope="module")
def knowledge(tokenizer, vectors) -> dict[str, torch.Tensor]:
    config = CSCConfig(sources=list(SOURCE_KINDS), stroke_head=True, **TINY)
    return build_char_knowledge(tokenizer.get_vocab(), config, **vectors)


def make_model(tokenizer, knowledge, **fields) -> CSCForCorrection:
    torch.manual_seed(0)
    return CSCForCorrection(CSCConfig(vocab_size=len(tokenizer), **TINY, **fields), knowledge)


def batch(tokenizer) -> dict[str, torch.Tensor]:
    """ERRORS -> TARGETS, padding ignored."""
    inputs = tokenizer(ERRORS, padding=True, return_tensors="pt")
    labels = tokenizer(TARGETS, padding=True, return_tensors="pt")["input_ids"]
    return {**inputs, "labels": labels.masked_fill(inputs["attention_mask"] == 0, -100)}


@pytest.mark.parametrize("variant", list(ALL_VARIANTS))
def test_every_variant_trains(variant, tokenizer, vectors):
    torch.manual_seed(0)
    sizes = BART_TINY if variant == "bart" else TINY
    model = build_model(ALL_VARIANTS[variant], tokenizer, **vectors, **sizes)
    data = batch(tokenizer)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(10):
        loss = model(**data).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    assert losses[-1] < 0.7 * losses[0], losses


@pytest.mark.parametrize("variant", list(ALL_VARIANTS))
def test_every_variant_corrects_with_bf16_weights(variant, tokenizer, vectors):
    """`Corrector(bf16_weights=True)` converts every floating-point weight to bf16 and runs without autocast: each
    variant's code computes in bf16 throughout (no fp32 tensor of its own meets a bf16 one), with every edit kind it
    takes, and its logits stay within bf16's rounding of the fp32 model's (differences of 0.005 at most against
    logits of scale 0.1 on the machines tried; 0.02 allowed)."""
    torch.manual_seed(0)
    model = build_model(ALL_VARIANTS[variant], tokenizer, **vectors, **(BART_TINY if variant == "bart" else TINY))
    reference = copy.deepcopy(model).eval()
    kinds = EDIT_KINDS if variant in ("bart", "bert+edit_head") else ("substitution",)
    corrector = Corrector(model, tokenizer, precision="bf16", bf16_weights=True, edit_kinds=kinds)
    floating = [t.dtype for t in [*model.parameters(), *model.buffers()] if t.is_floating_point()]
    assert floating and set(floating) == {torch.bfloat16}
    autocast = []
    model.register_forward_hook(lambda module, args, output: autocast.append(torch.is_autocast_enabled("cpu")))
    assert len(corrector.correct(ERRORS)) == len(ERRORS)
    assert autocast and not any(autocast)
    inputs = tokenizer(ERRORS, padding=True, return_tensors="pt")
    if variant == "bart":
        inputs["decoder_input_ids"] = inputs["input_ids"]
    with torch.no_grad():
        logits, expected = model(**inputs).logits, reference(**inputs).logits
    assert logits.dtype == torch.bfloat16
    torch.testing.assert_close(logits.float(), expected, rtol=0, atol=0.02)
    assert not torch.equal(logits.float(), expected)


def test_knowledge_tensors(tokenizer, knowledge, vectors):
    vocab = tokenizer.get_vocab()
    syllables = ["", *sorted({s for ch in vocab if len(ch) == 1 for s in char_readings(ch)})]
    model = make_model(tokenizer, knowledge, sources=["pinyin_gru", "stroke_gru", "glyph_cnn"])
    assert model.csc.syllables == syllables
    assert model.config.num_syllables == len(syllables) and model.config.glyph_fonts == 1
    k = model.csc.knowledge
    assert not k.is_char[vocab["[CLS]"]] and k.is_char[vocab["我"]]
    assert syllables[k.char_syllable[vocab["我"]]] == "wo3" and k.char_syllable[vocab["，"]] == 0
    assert "".join(map(str, k.char_strokes[vocab["中"]][:4].tolist())) == "2512"
    assert k.char_glyphs[vocab["我"]].float().mean() > 10 and not k.char_glyphs[vocab["[PAD]"]].any()
    hang2 = syllables.index("hang2")
    assert torch.equal(knowledge["syllable_vectors"][hang2], torch.ones(6))  # a syllable key wins over characters
    assert torch.allclose(knowledge["char_vectors"][vocab["我"]], torch.tensor(vectors["graphic_vectors"]["我"]))
    assert context_pinyin_ids("银行行走", model.csc.syllables)[1:3] == [hang2, syllables.index("xing2")]


def test_the_callers_config_is_not_changed(tokenizer, knowledge):
    config = CSCConfig(vocab_size=len(tokenizer), **TINY, **VARIANTS["all_gate+heads"])
    before = config.to_dict()
    model = CSCForCorrection(config, knowledge)
    assert config.to_dict() == before and config.num_syllables == 1
    assert model.config.num_syllables == len(model.csc.syllables) > 1
    assert model.csc.config is model.config  # one config for the model and its encoder
    assert model.pinyin_head.out_features == model.config.num_syllables


def test_knowledge_must_match_the_vocabulary(tokenizer, knowledge):
    with pytest.raises(ValueError, match="knowledge covers"):
        CSCForCorrection(CSCConfig(vocab_size=len(tokenizer) + 1, **TINY), knowledge)
    with pytest.raises(KeyError, match="needs the knowledge tensor 'syllable_vectors'"):
        without = {name: tensor for name, tensor in knowledge.items() if name != "syllable_vectors"}
        make_model(tokenizer, without, sources=["pinyin_vectors"])
    with pytest.raises(ValueError, match="needs phonetic_vectors"):
        build_char_knowledge(tokenizer.get_vocab(), CSCConfig(sources=["pinyin_vectors"]))


@pytest.mark.parametrize("suffix", [".npz", ".safetensors", ".pt", ".txt"])
def test_load_vectors(tmp_path, suffix):
    keys, values = ["shi4", "我"], np.arange(6, dtype=np.float32).reshape(2, 3)
    path = tmp_path / f"v{suffix}"
    if suffix == ".npz":
        np.savez(path, keys=np.array(keys), vectors=values)
    elif suffix == ".safetensors":
        from safetensors.numpy import save_file

        save_file(dict(zip(keys, values)), str(path))
    elif suffix == ".pt":
        torch.save({"keys": keys, "vectors": torch.from_numpy(values)}, path)
    else:
        path.write_text("2 3\n" + "".join(f"{k} {' '.join(map(str, v))}\n" for k, v in zip(keys, values)), "utf-8")
    loaded = load_vectors(path)
    assert sorted(loaded) == sorted(keys) and all(np.array_equal(loaded[k], v) for k, v in zip(keys, values))


class Payload:
    """A pickle that makes the folder ``marker`` when it is loaded (what a config's vectors file could run)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return os.mkdir, (self.marker,)


def test_vectors_files_are_never_unpickled(tmp_path):
    """Issue 29, item 1: a vectors file named in a training config runs no code: a pickled .npy, an .npz with an
    object array or a .pt with a pickled object is an error, and the payload never runs."""
    marker = tmp_path / "payload-ran"
    np.save(tmp_path / "v.npy", np.array([Payload(marker)], dtype=object), allow_pickle=True)
    np.savez(tmp_path / "v.npz", keys=np.array(["shi4"]), vectors=np.array([Payload(marker)], dtype=object))
    torch.save({"shi4": Payload(marker)}, tmp_path / "v.pt")
    for name, message in (("v.npy", "save the vectors as .npz"), ("v.npz", "v.npz"), ("v.pt", "v.pt")):
        with pytest.raises(ValueError, match=message):
            load_vectors(tmp_path / name)
        assert not marker.exists(), name
    with pytest.raises(FileNotFoundError, match="vectors file .*none.npz does not exist"):
        load_vectors(tmp_path / "none.npz")


def test_save_load_and_auto_classes(tokenizer, knowledge, tmp_path):
    model = make_model(tokenizer, knowledge, **VARIANTS["all_gate+heads"], detection_head=True).eval()
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    data = batch(tokenizer)
    with torch.no_grad():
        expected = model(**data)
        for auto in (AutoModelForMaskedLM, CSCForCorrection):
            loaded = auto.from_pretrained(tmp_path).eval()
            assert type(loaded) is CSCForCorrection
            output = loaded(**data)
            for name in ("loss", "logits", "pinyin_logits", "stroke_logits", "detection_logits"):
                torch.testing.assert_close(output[name], expected[name], **SAME, msg=name)
        encoder = AutoModel.from_pretrained(tmp_path).eval()
        assert type(encoder) is CSCModel
        inputs = (data["input_ids"], data["attention_mask"])
        torch.testing.assert_close(encoder(*inputs).last_hidden_state, model.csc(*inputs).last_hidden_state, **SAME)
    assert type(AutoConfig.from_pretrained(tmp_path)) is CSCConfig
    assert type(AutoTokenizer.from_pretrained(tmp_path)) is CSCTokenizer
    assert loaded.head.decoder.weight is loaded.csc.bert.embeddings.word_embeddings.weight  # tied after loading


REMOTE_CHECK = """
import sys, torch
from transformers import AutoConfig, AutoModel, AutoModelForMaskedLM, AutoTokenizer
folder, expected = sys.argv[1], torch.load(sys.argv[2])
tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)  # a standard fast tokenizer
assert type(tokenizer).__name__ == "TokenizersBackend"
assert tokenizer(expected["texts"], padding=True)["input_ids"] == expected["input_ids"].tolist()
assert type(AutoConfig.from_pretrained(folder, trust_remote_code=True)).__name__ == "CSCConfig"
assert type(AutoModel.from_pretrained(folder, trust_remote_code=True)).__name__ == "CSCModel"
model = AutoModelForMaskedLM.from_pretrained(folder, trust_remote_code=True).eval()
with torch.no_grad():
    logits = model(expected["input_ids"], expected["attention_mask"]).logits
torch.testing.assert_close(logits, expected["logits"], rtol=0, atol=1e-6)
assert "csc_hf" not in sys.modules
print("remote ok", type(model).__module__)
"""


def test_remote_code_loads_without_csc_hf(tokenizer, knowledge, tmp_path):
    folder = tmp_path / "model"
    model = make_model(tokenizer, knowledge, **VARIANTS["all_gate+heads"]).eval()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    assert sorted(p.name for p in folder.glob("*.py")) == ["configuration_csc.py", "modeling_csc.py"]
    inputs = tokenizer(TARGETS, padding=True, return_tensors="pt")
    with torch.no_grad():
        logits = model(**inputs).logits
    torch.save({"texts": TARGETS, **inputs, "logits": logits}, tmp_path / "expected.pt")
    result = run_without_csc_hf(REMOTE_CHECK, str(folder), str(tmp_path / "expected.pt"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "remote ok transformers_modules" in result.stdout


def test_from_bert_checkpoint(tokenizer, knowledge, tmp_path):
    torch.manual_seed(0)
    sizes = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")
    bert = BertForMaskedLM(BertConfig(vocab_size=len(tokenizer), **{name: TINY[name] for name in sizes}))
    bert.save_pretrained(tmp_path)
    tokens = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    (tmp_path / "vocab.txt").write_text("\n".join(tokens) + "\n", encoding="utf-8")
    assert CSCTokenizer.from_bert_vocab(tmp_path).get_vocab() == tokenizer.get_vocab()
    model = CSCForCorrection.from_bert(str(tmp_path), knowledge, sources=["pinyin_gru"], fusion="sum").eval()
    assert model.config.hidden_size == TINY["hidden_size"] and model.config.sources == ["pinyin_gru"]
    plain = CSCForCorrection.from_bert(str(tmp_path), knowledge).eval()  # the bert variant is BertForMaskedLM
    data = tokenizer(TARGETS, padding=True, return_tensors="pt")
    with torch.no_grad():
        assert torch.allclose(plain(**data).logits, bert.eval()(**data).logits, atol=1e-5)
        assert torch.equal(model.csc.get_input_embeddings().weight, bert.get_input_embeddings().weight)
        for variant, fields in ALL_VARIANTS.items():  # every fusion starts as the checkpoint: sides enter at zero
            if variant != "bart":
                fused = CSCForCorrection.from_bert(str(tmp_path), knowledge, **fields).eval()
                assert torch.allclose(fused(**data).logits, bert(**data).logits, atol=1e-5), variant


def test_bart_warm_starts_from_a_bert_checkpoint(tokenizer, tmp_path):
    torch.manual_seed(0)
    sizes = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")
    config = BertConfig(vocab_size=len(tokenizer), layer_norm_eps=1e-5, **{name: TINY[name] for name in sizes})
    BertForMaskedLM(config).save_pretrained(tmp_path)  # BART's LayerNorms have eps 1e-5
    bert = BertModel.from_pretrained(tmp_path, add_pooling_layer=False).eval()
    bart = build_model("bart", tokenizer, init_from=str(tmp_path), decoder_layers=1).eval()
    assert (bart.config.d_model, bart.config.encoder_layers, bart.config.decoder_layers) == (32, 2, 1)
    data = tokenizer(TARGETS, padding=True, return_tensors="pt")
    with torch.no_grad():  # the encoder is BERT; the decoder layer is BERT's first; its cross-attention is new
        encoded = bart.model.encoder(input_ids=data["input_ids"], attention_mask=data["attention_mask"])
        assert torch.allclose(encoded.last_hidden_state, bert(**data).last_hidden_state, atol=1e-5)
        decoder = bart.model.decoder.layers[0]
        assert torch.equal(decoder.fc1.weight, bert.encoder.layer[0].intermediate.dense.weight)
        assert torch.equal(decoder.self_attn.q_proj.weight, bert.encoder.layer[0].attention.self.query.weight)
        assert not torch.equal(decoder.encoder_attn.q_proj.weight, bert.encoder.layer[0].attention.self.query.weight)
        assert torch.equal(bart.lm_head.weight, bert.embeddings.word_embeddings.weight)
    assert len(bart_correct(bart, tokenizer, ERRORS[:2])[1]) == len(ERRORS[1])
    with pytest.raises(ValueError, match="encoder.layers.2.*encoder.layer.2.*lower encoder_layers"):
        build_model("bart", tokenizer, init_from=str(tmp_path), encoder_layers=3)
    with pytest.raises(ValueError, match="does not fit BART model.encoder.layers.0.fc1.weight"):
        build_model("bart", tokenizer, init_from=str(tmp_path), encoder_ffn_dim=48)


def test_output_aligned_and_unknown_characters_kept(tokenizer, knowledge):
    model = make_model(tokenizer, knowledge, **VARIANTS["all_gate"]).eval()
    texts = ["我们😀去北京Zq", "", "行"]
    inputs = tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        logits = model(**inputs).logits
    logits[..., tokenizer.unk_token_id] = 1e4  # even a model that prefers [UNK] everywhere ...
    logits[..., tokenizer.get_vocab()["他"]] = 1e3
    assert logits.shape[:2] == inputs["input_ids"].shape
    han = torch.tensor([is_han(token) for token in tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))])
    rows, columns, ids, _ = decode_edits(inputs["input_ids"], logits, han, han[inputs["input_ids"]])
    predicted = inputs["input_ids"].clone()
    predicted[rows, columns] = ids
    assert torch.equal(predicted[~han[inputs["input_ids"]]], inputs["input_ids"][~han[inputs["input_ids"]]])
    corrected = [tokenizer.decode_correction(text, row.tolist()) for text, row in zip(texts, predicted)]
    assert corrected == ["他他😀他他他Zq", "", "他"]  # ... keeps [UNK], specials, padding and non-Han characters


def test_loss_normalised_by_num_items_in_batch(tokenizer, knowledge):
    model = make_model(tokenizer, knowledge, **VARIANTS["all_gate+heads"], detection_head=True).eval()
    data = batch(tokenizer)
    count = int((data["labels"] != -100).sum())
    with torch.no_grad():
        mean = model(**data).loss
        assert torch.allclose(model(**data, num_items_in_batch=torch.tensor(count)).loss, mean)
        assert torch.allclose(model(**data, num_items_in_batch=2 * count).loss, mean / 2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_chunked_cross_entropy_gives_the_same_bytes(monkeypatch, dtype):
    """The CPU training loss runs in row chunks (the correction head scores the whole vocabulary at every position):
    the same loss and gradient bytes as one cross_entropy over all rows, with ignored rows, a last partial chunk and
    the chunk's own cast of bf16 logits."""
    monkeypatch.setattr(modeling_csc, "CHUNK_ELEMENTS", 7 * 300)  # 7 rows a chunk: 103 rows, 15 chunks
    generator = torch.Generator().manual_seed(0)
    values = (torch.randn(103, 300, generator=generator) * 4).to(dtype)
    targets = torch.randint(0, 300, (103,), generator=generator)
    targets[::5] = -100
    results = []
    for chunked in (True, False):
        logits = values.clone().requires_grad_()
        if chunked:
            loss = modeling_csc.summed_cross_entropy(logits, targets)
        else:
            loss = F.cross_entropy(logits.float(), targets, ignore_index=-100, reduction="sum")
        (loss / 91).backward()
        results.append((loss.detach(), logits.grad))
    (loss, grad), (reference, reference_grad) = results
    assert torch.equal(loss, reference) and grad.dtype == dtype and torch.equal(grad, reference_grad)
    assert torch.count_nonzero(grad[::5]) == 0 and torch.count_nonzero(grad) > 0
    empty = values[:0].clone().requires_grad_()  # no rows (an edit head's insert scores where nothing is inserted)
    modeling_csc.summed_cross_entropy(empty, targets[:0]).backward()
    assert empty.grad.shape == (0, 300)


def test_a_training_step_is_the_same_with_the_chunked_loss(monkeypatch, tokenizer, knowledge):
    """A step of a model with every head (correction, pinyin, strokes) under bf16 autocast: the same weights."""
    weights = []
    for chunk in (64, None):
        if chunk is None:  # the plain loss: every cross-entropy in one call
            monkeypatch.setattr(
                modeling_csc,
                "summed_cross_entropy",
                lambda x, y: F.cross_entropy(x.flatten(0, -2).float(), y.flatten(), ignore_index=-100, reduction="sum"),
            )
        else:
            monkeypatch.setattr(modeling_csc, "CHUNK_ELEMENTS", chunk)
        torch.manual_seed(0)
        model = make_model(tokenizer, knowledge, **VARIANTS["all_gate+heads"]).train()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
        for _ in range(2):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = model(**batch(tokenizer)).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        weights.append(torch.cat([p.detach().flatten().float() for p in model.parameters()]))
    assert torch.equal(*weights)


def test_side_encoders_run_once_per_distinct_key(tokenizer, knowledge):
    model = make_model(tokenizer, knowledge, sources=["stroke_gru", "pinyin_gru"], fusion="gate")
    rows, names = {}, {side.encoder: name for name, side in model.csc.sources.items()}

    def count(encoder, args, output):
        rows.setdefault(names[encoder], []).append(len(args[0]))

    for encoder in names:
        encoder.register_forward_hook(count)
    data = batch(tokenizer)
    model.train()(**data)
    syllables = model.csc.knowledge.char_syllable[data["input_ids"]]
    assert rows == {"stroke_gru": [len(data["input_ids"].unique())], "pinyin_gru": [len(syllables.unique())]}
    rows.clear()
    with torch.no_grad():
        model(**data)
        model(**data)  # cached: the table is encoded once, in one chunk here
    assert rows == {"stroke_gru": [len(tokenizer)], "pinyin_gru": [model.config.num_syllables]}
    rows.clear()
    with torch.no_grad():
        model.csc.sources["stroke_gru"].encoder.embed.weight.add_(1.0)  # weights changed: cache rebuilt
        model(**data)
    assert rows == {"stroke_gru": [len(tokenizer)]}
    rows.clear()
    with torch.no_grad():
        model.csc.knowledge.char_strokes[5, 0] += 1  # the table changed in place: rebuilt
        model(**data)
        model.load_state_dict(model.state_dict())  # copied onto itself: nothing changed, cache kept
        model(**data)
    assert rows == {"stroke_gru": [len(tokenizer)]}


def test_frozen_sources_are_cached_while_training(tokenizer, knowledge):
    model = make_model(tokenizer, knowledge, sources=["glyph_cnn"], freeze_sources=True).train()
    side = model.csc.sources["glyph_cnn"]
    assert not any(p.requires_grad for p in side.encoder.parameters()) and side.project.weight.requires_grad
    model(**batch(tokenizer)).loss.backward()
    assert side._cache is not None and side.project.weight.grad is not None


def test_glyph_cnn_pads_its_rows_to_a_few_shapes():
    torch.manual_seed(0)
    cnn = modeling_csc.GlyphCNN(1, 16, [8, 16], 32)
    seen = []
    cnn.down.register_forward_hook(lambda module, args, output: seen.append(len(args[0])))
    glyphs = torch.randint(0, 256, (cnn.ROWS + 5, 1, 16, 16), dtype=torch.uint8)
    out = cnn(glyphs)
    assert out.shape == (cnn.ROWS + 5, 32) and seen == [2 * cnn.ROWS]  # blank rows added, cut from the output
    # each row comes out as it does in a batch of other rows (those of a different padding)
    torch.testing.assert_close(cnn(glyphs[:3]), out[:3], rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(cnn(glyphs[-2:]), out[-2:], rtol=1e-6, atol=1e-6)
    out.square().sum().backward()  # the blank rows give no gradient: the one of the real rows alone
    grads = [p.grad.clone() for p in cnn.parameters()]
    cnn.zero_grad()
    torch.cat([cnn(glyphs[: cnn.ROWS]), cnn(glyphs[cnn.ROWS :])]).square().sum().backward()
    for grad, p in zip(grads, cnn.parameters()):
        torch.testing.assert_close(p.grad, grad, rtol=1e-5, atol=1e-6)


def test_context_pinyin_ids_change_the_phonetic_input(tokenizer, knowledge):
    model = make_model(tokenizer, knowledge, sources=["pinyin_gru"], fusion="sum").eval()
    torch.nn.init.normal_(model.csc.sources["pinyin_gru"].project.weight)  # as after training: it starts at zero
    inputs = tokenizer(["银行"], return_tensors="pt")
    pinyin_ids = torch.tensor([[0, *context_pinyin_ids("银行", model.csc.syllables), 0]])
    default = model.csc.knowledge.char_syllable[inputs["input_ids"]]
    with torch.no_grad():
        assert torch.equal(model(**inputs, pinyin_ids=default).logits, model(**inputs).logits)
        assert not torch.equal(model(**inputs, pinyin_ids=pinyin_ids).logits, model(**inputs).logits)


def test_bart_generates_with_eager_attention_on_a_cpu_and_gets_its_own_back(tokenizer):
    """Decoding reads one position a step, where eager attention beats SDPA's CPU kernel (bench/bench_attention.py);
    a named kernel wins, and either gives the same ids here."""
    torch.manual_seed(0)
    model = build_model("bart", tokenizer, **BART_TINY)
    seen = []
    attention = model.model.decoder.layers[0].self_attn
    attention.register_forward_hook(lambda module, *_: seen.append(module.config._attn_implementation))
    generated = bart_generate(model, tokenizer, ["他说的适对的", "我们去北京"])
    assert set(seen) == {"eager"} and model.config._attn_implementation == "sdpa"
    seen.clear()
    assert bart_generate(model, tokenizer, ["他说的适对的", "我们去北京"], attn_implementation="sdpa") == generated
    assert set(seen) == {"sdpa"} and model.config._attn_implementation == "sdpa"


def test_bart_generates_one_aligned_output_per_input(tokenizer):
    torch.manual_seed(0)
    model = build_model("bart", tokenizer, **BART_TINY)
    texts = ["我们😀去北京", "", "他说的适对的"]
    corrected = bart_correct(model, tokenizer, texts, batch_size=2)
    assert [len(c) for c in corrected] == [len(t) for t in texts]
    assert corrected[0][2] == "😀"
