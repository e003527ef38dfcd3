"""A tagging model that inserts and deletes (issue 27 item 3): the edit head's targets from each pair's alignment,
its loss, its decoding rule, and a model that learns missing and redundant characters and corrects them."""

import random

import pytest
import torch
from test_modeling import TINY

from csc_hf.edits import EDIT_KINDS, MISSING, REDUNDANT, SUBSTITUTION
from csc_hf.evaluation import tune_decoding
from csc_hf.modeling import EDIT_OPS, VARIANTS, CSCTokenizer, build_model, can_change_length
from csc_hf.pipeline import Corrector, decode_length_edits
from csc_hf.training.data import CorrectionCollator, encode_sentences

KEEP, DELETE, INSERT = (EDIT_OPS.index(op) for op in ("keep", "delete", "insert"))
TARGETS = ["我们今天去北京天安门广场看升旗。", "他说的是对的，我觉得很好。", "我们去学校", "银行在中国科学院旁边。"]
SOURCES = ["我们今天去北京天安门广场看旗。", "他说的的是对的，我觉得很好。", "我门去学", "银行在中国科学院旁边。"]


@pytest.fixture(scope="module")
def tokenizer() -> CSCTokenizer:
    return CSCTokenizer.from_texts(TARGETS + SOURCES)


def rebuilt(ids: list[int], labels: list[int], ops: list[int], inserted: list[int]) -> list[int]:
    """The target ids that an edit head's targets describe (the decoding rule read backwards)."""
    out = []
    for position, (label, op, insert) in enumerate(zip(labels, ops, inserted)):
        if 0 < position < len(ids) - 1 and op != DELETE:
            out.append(label)
        if op == INSERT:
            out.append(insert)
    return out


def test_edit_targets_describe_each_target(tokenizer):
    """Random pairs with substitutions, missing and redundant characters (one per place): the targets rebuild the
    target exactly, [SEP] is never an op and [CLS] never deleted."""
    rng = random.Random(0)
    chars = [t for t in tokenizer.get_vocab() if len(t) == 1 and "\u4e00" <= t <= "\u9fff"]
    sources, targets = [], []
    for _ in range(200):
        target = "".join(rng.choice(chars) for _ in range(rng.randint(1, 12)))
        source = []
        for i, char in enumerate(target):
            draw = rng.random()
            if draw < 0.15 and (not source or source[-1] != "") and i:  # missing: never two in a row
                source.append("")
            elif draw < 0.3:
                source.append(char + char)  # redundant: doubled
            elif draw < 0.4:
                source.append(rng.choice(chars))
            else:
                source.append(char)
        sources.append("".join(source) or target)
        targets.append(target)
    encoded = encode_sentences(tokenizer, sources, targets, 64, edits=True)
    for i, target in enumerate(targets):
        ids, labels, ops, inserted = (encoded[k][i] for k in ("input_ids", "labels", "edit_targets", "insert_targets"))
        assert len(ids) == len(labels) == len(ops) == len(inserted) == len(sources[i]) + 2 == encoded["length"][i]
        assert ops[-1] == -100 and ops[0] in (KEEP, INSERT) and labels[0] == labels[-1] == -100
        assert all((op == INSERT) == (insert != -100) for op, insert in zip(ops, inserted))
        assert rebuilt(ids, labels, ops, inserted) == tokenizer(target, add_special_tokens=False)["input_ids"], i


def test_edit_targets_by_hand_and_cut(tokenizer):
    vocab = tokenizer.get_vocab()
    encoded = encode_sentences(tokenizer, ["我门去学", "他说的的是"], ["我们去学校", "他说的是"], 64, edits=True)
    assert encoded["labels"][0][1:-1] == [vocab[c] for c in "我们去学"]  # the substitution
    assert encoded["edit_targets"][0] == [KEEP, KEEP, KEEP, KEEP, INSERT, -100]  # 校 after 学
    assert encoded["insert_targets"][0][4] == vocab["校"]
    assert encoded["edit_targets"][1].count(DELETE) == 1 and encoded["labels"][1].count(-100) == 3
    # cut to 4 tokens: [CLS] 我 门 [SEP]; the insertion after 学 is gone with 学
    cut = encode_sentences(tokenizer, ["我门去学"], ["我们去学校"], 4, edits=True)
    assert cut["input_ids"][0] == [tokenizer.cls_token_id, vocab["我"], vocab["门"], tokenizer.sep_token_id]
    assert cut["edit_targets"][0] == [KEEP, KEEP, KEEP, -100] and set(cut["insert_targets"][0]) == {-100}
    with pytest.raises(ValueError, match="different lengths"):  # a tagging model without the head keeps the rule
        encode_sentences(tokenizer, ["我门去学"], ["我们去学校"], 64)


def test_collator_pads_the_edit_targets(tokenizer):
    encoded = encode_sentences(tokenizer, SOURCES, TARGETS, 64, edits=True)
    rows = [{k: encoded[k][i] for k in ("input_ids", "labels", "edit_targets", "insert_targets")} for i in range(4)]
    batch = CorrectionCollator(tokenizer)(rows)
    assert set(batch) == {"input_ids", "attention_mask", "labels", "edit_targets", "insert_targets"}
    width = max(map(len, encoded["input_ids"]))
    for key in ("edit_targets", "insert_targets"):
        assert batch[key].shape == (4, width)
        assert batch[key][2, len(encoded[key][2]) :].eq(-100).all()  # padding is ignored
    assert "edit_targets" not in CorrectionCollator(tokenizer)([{"input_ids": [2, 5, 3], "labels": [-100, 5, -100]}])


def test_the_head_is_a_variant_that_changes_length():
    assert VARIANTS["bert+edit_head"] == {"edit_head": True}
    assert can_change_length("bert+edit_head") and can_change_length("bart") and not can_change_length("bert")
    assert can_change_length("plome", edit_head=True)


def test_decode_length_edits():
    han = torch.tensor([False, True, True, True])  # id 0 is not Han
    edit_logits = torch.zeros(1, 5, 3)
    edit_logits[0, 1, DELETE] = 5.0  # delete token 1
    edit_logits[0, 2, DELETE] = 5.0  # token 2 is protected (not deletable)
    edit_logits[0, 0, INSERT] = 5.0  # insert after [CLS]
    edit_logits[0, 4, INSERT] = 5.0  # [SEP] is not insertable
    edit_logits[0, 3, INSERT] = 1.0  # weak: a keep_bias of 2 keeps it
    insert_logits = torch.zeros(1, 5, 4)
    insert_logits[0, :, 0] = 10.0  # the best token is not Han: the best Han one is taken
    insert_logits[0, :, 2] = 3.0
    deletable = torch.tensor([[False, True, False, True, False]])
    insertable = torch.tensor([[True, True, True, True, False]])
    deletions, insertions = decode_length_edits(edit_logits, insert_logits, han, deletable, insertable)
    assert deletions[0].tolist() == [0] and deletions[1].tolist() == [1]
    assert insertions[1].tolist() == [0, 3] and insertions[2].tolist() == [2, 2]
    op = torch.softmax(edit_logits[0, 0], -1)[INSERT]
    assert torch.isclose(insertions[3][0], op * torch.softmax(insert_logits[0, 0], -1)[2])
    deletions, insertions = decode_length_edits(edit_logits, insert_logits, han, deletable, insertable, keep_bias=2.0)
    assert insertions[1].tolist() == [0] and deletions[1].tolist() == [1]
    deletions, insertions = decode_length_edits(edit_logits, insert_logits, han, deletable, insertable, threshold=0.5)
    assert deletions[1].tolist() == [1] and insertions[1].tolist() == []  # 0.99 x 0.05 < 0.5
    deletions, insertions = decode_length_edits(edit_logits, None, han, deletable, insertable)
    assert deletions[1].tolist() == [1] and all(t.numel() == 0 for t in insertions)  # no insert scores: no insertions


def test_a_model_learns_to_insert_and_delete(tokenizer, tmp_path):
    """A tiny model trained on the pairs corrects them; it keeps their length unless told the kinds, and saves and
    loads as every other variant."""
    torch.manual_seed(0)
    model = build_model("bert+edit_head", tokenizer, **{k: v for k, v in TINY.items() if "glyph" not in k})
    encoded = encode_sentences(tokenizer, SOURCES, TARGETS, 64, edits=True)
    rows = [{k: encoded[k][i] for k in ("input_ids", "labels", "edit_targets", "insert_targets")} for i in range(4)]
    batch = CorrectionCollator(tokenizer)(rows)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for _ in range(80):
        model(**batch).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.eval()
    with torch.no_grad():
        out = model(**batch)
    assert out.insert_logits is None and out.edit_logits.shape == (4, batch["input_ids"].shape[1], len(EDIT_OPS))
    with torch.no_grad():
        inputs = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}
        assert model(**inputs).insert_logits.shape == (*batch["input_ids"].shape, len(tokenizer))
        assert model(**inputs, return_insert_logits=False).insert_logits is None
    corrector = Corrector(model, tokenizer, precision="fp32")
    assert corrector.can_change_length
    assert [len(p) for p in corrector.correct(SOURCES)] == list(map(len, SOURCES))  # substitutions only by default
    free = corrector.with_options(edit_kinds=EDIT_KINDS)
    assert free.correct(SOURCES) == TARGETS
    kinds = [e["kind"] for e in free(SOURCES[2])["edits"]]
    assert kinds == [SUBSTITUTION, MISSING]
    assert [e["kind"] for e in free(SOURCES[1])["edits"]] == [REDUNDANT]
    assert corrector.with_options(edit_kinds=[MISSING]).correct(SOURCES[1]) == SOURCES[1]  # no deletions asked for
    assert corrector.with_options(edit_kinds=[REDUNDANT]).correct(SOURCES[1:3]) == [TARGETS[1], "我们去学"]
    assert free.with_options(protected_chars="的").correct(SOURCES[1]) == SOURCES[1]  # a protected one never goes
    # a validation set with missing and redundant characters tunes the decoding with them (scored by alignment)
    chosen, validation_f1 = tune_decoding(corrector, {"source": SOURCES, "target": TARGETS}, [0.0, 50.0])
    assert chosen["keep_bias"] == 0.0 and sorted(validation_f1.values()) == [0.0, 1.0]
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    loaded = Corrector.from_pretrained(tmp_path, edit_kinds=EDIT_KINDS, precision="fp32")
    assert loaded.model.config.edit_head and loaded.correct(SOURCES) == TARGETS
