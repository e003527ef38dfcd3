"""LLM correctors (csc_hf.llm): templates, answer parsing, the length policy, generation with tiny causal LMs built
here (a random 2-layer Qwen2, and a "scripted" Granite whose greedy output is a chosen answer), contamination flags
and the vLLM backend's calls (against a stand-in module). Everything runs offline on a CPU in seconds."""

from __future__ import annotations

import itertools
import sys
import types

import pytest
import torch
from conftest import torch_threads
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import (
    BertConfig,
    BertForMaskedLM,
    GraniteConfig,
    GraniteForCausalLM,
    PreTrainedTokenizerFast,
    Qwen2Config,
    Qwen2ForCausalLM,
)

from csc_hf.llm import (
    LLMCorrector,
    PromptTemplate,
    apply_length_policy,
    benchmark_sources,
    check_causal_lm,
    contamination_flags,
    describe_flag,
    is_causal_lm,
    load_template,
    parse_answer,
    shipped_templates,
    source_edits,
)
from csc_hf.scoring import score

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
NO_SYSTEM = (
    "{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
    "{% endif %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
TEXTS = ["我门去公园。", "他是个好人。", "今天很高心。", "我们去", "公园公园公园公园公园公园", "好"]
ANSWER = "我们去公园。"


def char_tokenizer(chat_template: str | None = CHATML) -> PreTrainedTokenizerFast:
    """One token per character (templates, test texts, ASCII), ChatML special tokens, an optional chat template."""
    chars = {
        c
        for name in shipped_templates()
        for t in [load_template(name)]
        for c in t.system + t.user + t.answer_prefix + "".join(s + g for s, g in t.examples)
    }
    chars |= set("".join(TEXTS) + "改正后：“”修改了```解释门应为们（）<>/thinkabcdefghijklmnopqrstuvwxyz \n")
    vocab = {token: i for i, token in enumerate(["<pad>", "<unk>", "<|im_start|>", "<|im_end|>", *sorted(chars)])}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    backend.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        unk_token="<unk>",
        pad_token="<pad>",
        eos_token="<|im_end|>",
        additional_special_tokens=["<|im_start|>"],
        chat_template=chat_template,
    )


def tiny_qwen2(tokenizer, **config) -> Qwen2ForCausalLM:
    torch.manual_seed(0)
    config = (
        dict(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=1,
            max_position_embeddings=1024,
        )
        | config
    )
    return Qwen2ForCausalLM(
        Qwen2Config(
            vocab_size=len(tokenizer),
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
            **config,
        )
    ).eval()


def scripted_lm(tokenizer, answer: str, end: str | None = "<|im_end|>", starts: str = "\n：") -> GraniteForCausalLM:
    """A Granite (a Llama; transformers loads its saved tokenizer as saved, unlike a Qwen2's) whose attention and MLP
    outputs are zero and whose embeddings are one-hot, so that its next token depends on the last one only (a bigram
    table in ``lm_head``): after any of ``starts`` (the end of a chat or a plain prompt) it writes ``answer``
    (distinct characters), then ``end`` (None: ``answer`` again, forever)."""
    size = len(tokenizer) + len(tokenizer) % 2
    torch.manual_seed(0)
    model = GraniteForCausalLM(
        GraniteConfig(
            vocab_size=len(tokenizer),
            hidden_size=size,
            intermediate_size=8,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=1,
            max_position_embeddings=1024,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
        )
    ).eval()
    ids = tokenizer.convert_tokens_to_ids
    chain = [*answer, end if end is not None else answer[0]]
    with torch.no_grad():
        model.model.layers[0].self_attn.o_proj.weight.zero_()
        model.model.layers[0].mlp.down_proj.weight.zero_()
        model.model.embed_tokens.weight.copy_(torch.eye(len(tokenizer), size))
        model.lm_head.weight.zero_()
        for start in starts:
            model.lm_head.weight[ids(chain[0]), ids(start)] = 1.0
        for a, b in itertools.pairwise(chain):
            model.lm_head.weight[ids(b), ids(a)] = 1.0
    return model


@pytest.fixture(scope="module")
def tokenizer():
    return char_tokenizer()


@pytest.fixture(autouse=True)
def one_thread():
    with torch_threads(1):
        yield


# ---- templates -----------------------------------------------------------------------------------------------------


def test_shipped_templates_are_versioned_and_frozen():
    """Each shipped (name, version) means one text for ever: its hash is pinned here (a new wording is a new file
    with the next version, never an edit)."""
    assert {name: sorted(versions) for name, versions in shipped_templates().items()} == {
        "zh_few_shot": [1],
        "zh_zero_shot": [1],
    }
    zero, few = load_template("zh_zero_shot@1"), load_template("zh_few_shot")
    assert zero.sha256 == "c2de2621efa0e8c843d9611693e3c5b14ee7671562e091134562cbcdadfe701f"
    assert few.sha256 == "203ad05539bc53807331cecbfdf4b0b52916c94516bb74d3258adc29bc0569a4"
    assert (few.user, few.system, few.answer_prefix) == (zero.user, zero.system, zero.answer_prefix)  # base
    assert len(few.examples) == 4 and any(source == target for source, target in few.examples)  # one error-free
    assert all(len(source) == len(target) for source, target in few.examples)
    assert few.record() == {"name": "zh_few_shot", "version": 1, "sha256": few.sha256} and few.label == "zh_few_shot@1"
    messages = few.messages("我门去公园。")
    assert [m["role"] for m in messages] == ["system"] + ["user", "assistant"] * 4 + ["user"]
    assert messages[-1]["content"].endswith("句子：我门去公园。")
    plain = zero.plain_prompt("我门去公园。")
    assert plain.startswith(zero.system + "\n\n") and plain.endswith("句子：我门去公园。\n改正后：")


def test_user_templates_and_their_errors(tmp_path):
    text = tmp_path / "mine.txt"
    text.write_text("纠正这句话：{text}\n", encoding="utf-8")
    mine = load_template(str(text))
    assert (mine.name, mine.version, mine.user, mine.system) == ("mine", None, "纠正这句话：{text}", "")
    assert mine.record()["file"] == str(text) and mine.user_message("我门") == "纠正这句话：我门"
    braces = tmp_path / "braces.yaml"
    braces.write_text(
        "name: json_answer\nversion: 2\nbase: zh_few_shot@1\nuser: '以 {\"answer\": ...} 回答：{text}'\n",
        encoding="utf-8",
    )
    custom = load_template(braces)
    assert custom.label == "json_answer@2" and len(custom.examples) == 4  # the base's examples, its own message
    assert custom.user_message("我门") == '以 {"answer": ...} 回答：我门'  # other braces are kept as written
    bad = tmp_path / "bad.txt"
    bad.write_text("请改正错别字。\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"template .*bad.txt: the user message has no \{text\} placeholder"):
        load_template(bad)
    for body, message in [
        ("user: '{text}'\nsystem: '{text}'\n", r"\{text\} belongs in the user message"),
        ("usr: '{text}'\n", r"unknown keys \['usr'\]"),
        ("user: '{text}'\nexamples: [{source: 我门}]\n", r"examples\[0\] must be a mapping"),
        ("user: '{text}'\nversion: 0\n", "version must be a positive integer"),
        ("base: zh_zero_shot\n", "base 'zh_zero_shot' must be a shipped template as NAME@VERSION"),
        ("- a list\n", "expected a mapping"),
    ]:
        bad = tmp_path / "bad.yaml"
        bad.write_text(body, encoding="utf-8")
        with pytest.raises(ValueError, match=message):
            load_template(bad)
    with pytest.raises(ValueError, match="no shipped prompt template 'zh_zeroshot'; shipped: zh_few_shot, zh_zero"):
        load_template("zh_zeroshot")
    with pytest.raises(ValueError, match="template zh_zero_shot has no version '7'; versions: 1"):
        load_template("zh_zero_shot@7")
    with pytest.raises(FileNotFoundError, match="template .*missing.yaml does not exist"):
        load_template(tmp_path / "missing.yaml")
    with pytest.raises(ValueError, match="no {text} placeholder"):
        PromptTemplate(name="x", version=1, user="no placeholder")


# ---- reading the answer --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "output, source, answer",
    [
        ("我们去公园。", "我门去公园。", "我们去公园。"),
        ("  我们去公园。\n", "我门去公园。", "我们去公园。"),
        ("改正后：我们去公园。", "我门去公园。", "我们去公园。"),
        ("修改后的句子为：\n我们去公园。", "我门去公园。", "我们去公园。"),
        ("好的，以下是改正后的句子：\n\n“我们去公园。”", "我门去公园。", "我们去公园。"),
        ("原句：我门去公园。\n改正后：我们去公园。\n解释：“门”应为“们”。", "我门去公园。", "我们去公园。"),
        ("```\n我们去公园。\n```", "我门去公园。", "我们去公园。"),
        ("```text\n我们去公园。", "我门去公园。", "我们去公园。"),  # an unclosed fence
        ("**我们去公园。**", "我门去公园。", "我们去公园。"),
        ("我们去公园。（“门”应为“们”）", "我门去公园。", "我们去公园。"),
        ("我们去公园。 解释：门改为们", "我门去公园。", "我们去公园。"),
        ("<think>门应为们</think>\n我们去公园。", "我门去公园。", "我们去公园。"),
        ("<think>门应为们……", "我门去公园。", ""),  # still thinking: no answer
        ("", "我门去公园。", ""),
        ("Corrected: 我们去公园。", "我门去公园。", "我们去公园。"),
        # what the source itself has is kept
        ("“我们去公园。”", "“我门去公园。”", "“我们去公园。”"),
        ("答：我们去公园。", "答：我门去公园。", "答：我们去公园。"),
        ("正确的做法是：先洗手。", "正确的作法是：先洗手。", "正确的做法是：先洗手。"),  # corrected inside the "label"
        ("我们去公园（北京）", "我门去公园（北京）", "我们去公园（北京）"),
        # a label after a few words
        ("这句话应改为：我们去公园。", "我门去公园。", "我们去公园。"),
        ("我认为正确的句子是：\n“我们去公园。”", "我门去公园。", "我们去公园。"),
        ("他说：我们去公园。", "他说：我门去公园。", "他说：我们去公园。"),  # the source's own colon
        # a reply that there is no error gives the source
        ("这个句子没有错误。", "我们去公园。", "我们去公园。"),
        ("原句正确无误，无需修改。", "我们去公园。", "我们去公园。"),
        ("没有错别字。", "我们去公园。", "我们去公园。"),
        ("No errors found.", "我们去公园。", "我们去公园。"),
        ("**该句子不存在错误。**", "我们去公园。", "我们去公园。"),
        ("他们没有错误地理解题意。", "他门没有错误地理解题意。", "他们没有错误地理解题意。"),  # a corrected sentence
        ("无需修改", "无需修该", "无需修改"),  # the source says it too: a correction
    ],
)
def test_parse_answer_strips_wrappers(output, source, answer):
    assert parse_answer(output, source, "改正后：") == answer


# ---- the length policy ---------------------------------------------------------------------------------------------


def test_length_policies_and_edits_at_source_positions():
    sources = ["我门去公园。", "我门去公园。", "他是个好人。"]
    answers = ["我们去了公园。", "我们去园。", "他是个好人。"]
    assert apply_length_policy(sources, answers, "strict") == ["我门去公园。", "我门去公园。", "他是个好人。"]
    assert apply_length_policy(sources, answers, "substitutions") == ["我们去公园。", "我们去公园。", "他是个好人。"]
    assert apply_length_policy(sources, answers, "edits") == answers
    with pytest.raises(ValueError, match="length_policy 'loose' is not a length policy; choose strict, substitutions"):
        apply_length_policy(sources, answers, "loose")
    with pytest.raises(ValueError, match="2 answers for 3 sources"):
        apply_length_policy(sources, answers[:2], "edits")
    assert source_edits("我门去公园。", "我们去了公园。") == [
        {"position": 1, "wrong": "门", "right": "们"},
        {"position": 3, "wrong": "", "right": "了"},
    ]
    assert source_edits("我门去公园。", "我们去园。") == [
        {"position": 1, "wrong": "门", "right": "们"},
        {"position": 3, "wrong": "公", "right": ""},
    ]
    assert source_edits("我们去", "我们去了个公园") == [{"position": 3, "wrong": "", "right": "了个公园"}]
    assert source_edits("他是个好人。", "他是个好人。") == []
    references = ["我们去公园。", "我们去公园。", "他是个好人。"]
    edits = score(sources, apply_length_policy(sources, answers, "edits"), references, bootstrap=0)
    kept = score(sources, apply_length_policy(sources, answers, "substitutions"), references, bootstrap=0)
    assert (edits["n_length_mismatch"], edits["n_indels"], edits["sent_cor_r"]) == (2, 2, 0.0)
    assert (kept["n_length_mismatch"], kept["n_indels"], kept["sent_cor_r"]) == (0, 0, 1.0)


# ---- generation ----------------------------------------------------------------------------------------------------


def test_scripted_model_end_to_end_under_each_policy(tokenizer):
    corrector = LLMCorrector(scripted_lm(tokenizer, ANSWER), tokenizer, template="zh_few_shot", batch_size=4)
    result = corrector("我门去公园。")
    assert result == {
        "source": "我门去公园。",
        "prediction": ANSWER,
        "output": ANSWER,
        "answer": ANSWER,
        "status": "ok",
        "length_changed": False,
        "edits": [{"position": 1, "wrong": "门", "right": "们", "probability": None}],
    }
    assert corrector.correct(["我门去公园。", "他是个好人。"]) == [ANSWER, ANSWER]  # same length: read as written
    for policy, prediction, status in [
        ("strict", "我门去公园了。", "rejected"),
        ("substitutions", "我们去公园了。", "ok"),
        ("edits", ANSWER, "ok"),
    ]:
        result = corrector.with_options(length_policy=policy)("我门去公园了。")
        assert (result["prediction"], result["status"], result["length_changed"]) == (prediction, status, True)
    run = corrector.with_options(length_policy="strict").run(["我门去公园。", "我门去公园了。"])
    summary = run.summary()
    assert summary["failed"] == {"empty": 0, "unfinished": 0, "rejected": 1} and summary["length_policy"] == "strict"
    assert (summary["length_changed"], summary["length_changed_share"], summary["sentences"]) == (1, 0.5, 2)
    assert summary["sentences_per_s"] > 0 and summary["new_tokens"] == 2 * (len(ANSWER) + 1)
    assert run.settings["prompt"]["name"] == "zh_few_shot" and run.settings["prompt"]["chat_template"] is True


def test_wrapped_answers_and_plain_prompts(tokenizer):
    wrapped = LLMCorrector(scripted_lm(tokenizer, "改正后：“我们去公园。”", starts="\n"), tokenizer)
    assert wrapped("我门去公园。")["prediction"] == ANSWER
    plain_tokenizer = char_tokenizer(chat_template=None)  # no chat template: a plain prompt, the answer ends its line
    plain = LLMCorrector(scripted_lm(plain_tokenizer, ANSWER, end="\n"), plain_tokenizer)
    assert not plain.use_chat_template and plain.tokenizer.decode(plain.prompts(["我门"])[0]).endswith(
        "句子：我门\n改正后："
    )
    result = plain("我门去公园。")
    assert (result["prediction"], result["status"], result["output"]) == (ANSWER, "ok", ANSWER)
    with pytest.raises(ValueError, match="use_chat_template=True, but the tokenizer of .* has no chat template"):
        LLMCorrector(scripted_lm(plain_tokenizer, ANSWER), plain_tokenizer, use_chat_template=True)


def test_chat_template_without_a_system_role(tokenizer):
    no_system = char_tokenizer(NO_SYSTEM)
    corrector = LLMCorrector(scripted_lm(no_system, ANSWER), no_system)
    prompt = no_system.decode(corrector.prompts(["我门"])[0])
    assert "system" not in prompt and "<|im_start|>user\n你是一名中文拼写纠错专家。\n\n请改正" in prompt
    assert corrector("我门去公园。")["prediction"] == ANSWER


def test_failures_are_counted_not_raised(tokenizer):
    empty = LLMCorrector(scripted_lm(tokenizer, ""), tokenizer)  # the end token at once
    endless = LLMCorrector(scripted_lm(tokenizer, "我们", end=None), tokenizer, max_new_tokens_extra=3)
    result = empty("我门去公园。")
    assert (result["status"], result["prediction"], result["answer"], result["output"]) == (
        "empty",
        "我门去公园。",
        "",
        "",
    )
    run = endless.run(["我门去公园。", "好"])
    assert [r["status"] for r in run.results] == ["unfinished", "unfinished"]
    assert [r["prediction"] for r in run.results] == ["我门去公园。", "好"] and run.results[0]["answer"] is None
    assert run.results[1]["output"] == "我们我们我" and run.new_tokens == (2 * 6 + 3) + (2 * 1 + 3)  # its own budget
    assert run.summary()["failed"] == {"empty": 0, "unfinished": 2, "rejected": 0}


def test_blank_texts_are_not_prompted_and_an_opened_reasoning_is_read_as_one(tokenizer):
    """A text of white space only is its own answer (a model asked to correct nothing writes something); a chat
    template that ends its prompt inside <think> (QwQ, DeepSeek-R1 distills) leaves the reasoning without an opening
    tag, and the answer is what follows </think>."""
    corrector = LLMCorrector(scripted_lm(tokenizer, ANSWER), tokenizer)
    run = corrector.run(["我门去公园。", "", "  "])
    assert [(r["status"], r["prediction"], r["output"]) for r in run.results[1:]] == [("ok", "", ""), ("ok", "  ", "")]
    assert run.results[0]["prediction"] == ANSWER and run.new_tokens == len(ANSWER) + 1  # one generation only
    thinking = char_tokenizer(CHATML.replace("assistant\n{% endif %}", "assistant\n<think>\n{% endif %}"))
    reasoning = LLMCorrector(scripted_lm(thinking, "门应改</think>" + ANSWER), thinking)
    result = reasoning("我门去公园。")
    assert result["output"] == "门应改</think>" + ANSWER and (result["answer"], result["status"]) == (ANSWER, "ok")


@pytest.mark.parametrize("chat", [True, False])
def test_batched_results_equal_single_sentence_results(tokenizer, chat):
    """Left padding, per-row budgets and stops: a sentence's generation is the same in any batch, and the same seed
    gives the same bytes; a random model, so that every sentence gets its own output."""
    model = tiny_qwen2(tokenizer, initializer_range=2.0)
    corrector = LLMCorrector(model, tokenizer, batch_size=4, use_chat_template=chat, max_new_tokens_extra=4)
    batched = corrector(TEXTS)
    single = [corrector(text) for text in TEXTS]
    assert batched == single
    assert len({result["output"] for result in batched}) > 2  # the outputs differ: the inputs reach the model
    assert corrector.with_options().run(TEXTS).results == batched  # the same bytes again


def test_sampling_is_seeded(tokenizer):
    """Sampled, a sentence's output depends on the seed and the sentence alone: not on the batch size, the order or
    the other sentences (each row draws from its own generator)."""
    model = tiny_qwen2(tokenizer, initializer_range=2.0)
    sampled = LLMCorrector(model, tokenizer, temperature=1.0, seed=3, max_new_tokens_extra=4)
    first, again = sampled.run(TEXTS), sampled.run(TEXTS)
    outputs = [r["output"] for r in first.results]
    assert outputs == [r["output"] for r in again.results]
    for size in (1, 4, 16):
        alone = LLMCorrector(model, tokenizer, temperature=1.0, seed=3, max_new_tokens_extra=4, batch_size=size)
        assert [r["output"] for r in alone.run(TEXTS[::-1]).results] == outputs[::-1], size
    assert [sampled.run(text).results[0]["output"] for text in TEXTS[:3]] == outputs[:3]
    greedy = LLMCorrector(model, tokenizer, max_new_tokens_extra=4).run(TEXTS)
    other_seed = sampled.with_options(seed=4).run(TEXTS)
    assert outputs != [r["output"] for r in greedy.results] and outputs != [r["output"] for r in other_seed.results]
    other = sampled.with_options(seed=4).run(TEXTS)
    assert [r["output"] for r in other.results] != [r["output"] for r in first.results]
    assert first.settings["generation"]["temperature"] == 1.0 and first.settings["generation"]["seed"] == 3


# ---- bad input -----------------------------------------------------------------------------------------------------


def test_bad_models_templates_and_prompts(tokenizer, tmp_path):
    bert = BertForMaskedLM(
        BertConfig(
            vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64
        )
    )
    with pytest.raises(ValueError, match="BertForMaskedLM is not a causal language model"):
        LLMCorrector(bert, tokenizer)
    with pytest.raises(TypeError, match="model must be a causal language model"):
        LLMCorrector(object(), tokenizer)
    no_eos = tiny_qwen2(tokenizer)
    no_eos.generation_config.eos_token_id = None
    eosless = char_tokenizer()
    eosless.eos_token = None
    with pytest.raises(ValueError, match="has no end-of-sequence token"):
        LLMCorrector(no_eos, eosless)
    bad = tmp_path / "bad.txt"
    bad.write_text("改错别字", encoding="utf-8")
    with pytest.raises(ValueError, match=r"no \{text\} placeholder"):
        LLMCorrector(tiny_qwen2(tokenizer), tokenizer, template=bad)
    for options, message in [
        ({"length_policy": "any"}, "is not a length policy"),
        ({"temperature": -1}, "need temperature >= 0"),
        ({"max_new_tokens_extra": 1.5}, "max_new_tokens_extra must be an integer"),
    ]:
        with pytest.raises(ValueError, match=message):
            LLMCorrector(tiny_qwen2(tokenizer), tokenizer, **options)
    short = LLMCorrector(tiny_qwen2(tokenizer, max_position_embeddings=200), tokenizer)
    with pytest.raises(
        ValueError,
        match=r"^sentence 3: its prompt \(\d+ tokens\) and its answer budget \(\d+\) exceed the 200 positions",
    ):
        short.run(["好", "", "好" * 100])  # counted from 1, blank texts too (they are not prompted)
    with pytest.raises(ValueError, match=r"^my.tsv, line 2: its prompt"):
        short.check_lengths(["好", "好" * 100], "my.tsv, line")
    with pytest.raises(TypeError, match=r"texts\[1\] must be a str"):
        short.run(["好", 3])


def test_from_pretrained_checks_before_loading_and_reads_the_card(tokenizer, tmp_path):
    folder = tmp_path / "llm"
    scripted_lm(tokenizer, ANSWER).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    card = "---\nlicense: mit\ndatasets:\n- shibing624/CSC\n---\n# A model\n"
    (folder / "README.md").write_text(card, encoding="utf-8")
    corrector = LLMCorrector.from_pretrained(folder, template="zh_zero_shot@1", training_data=["peoples_daily"])
    assert corrector("我门去公园。")["prediction"] == ANSWER
    assert corrector.settings["training_data"] == [
        {"name": "shibing624/CSC", "from": "model card"},
        {"name": "peoples_daily", "from": "declared"},
    ]
    assert corrector.settings["model"] == str(folder)
    with pytest.raises(ValueError, match="no shipped prompt template 'nope'"):  # before any loading
        LLMCorrector.from_pretrained(tmp_path / "missing", template="nope")
    with pytest.raises(FileNotFoundError, match="missing does not exist"):
        LLMCorrector.from_pretrained(tmp_path / "missing")
    bert_folder = tmp_path / "bert"
    BertForMaskedLM(
        BertConfig(
            vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64
        )
    ).save_pretrained(bert_folder)
    (bert_folder / "model.safetensors").write_bytes(b"not read")  # the config alone decides, before the weights
    with pytest.raises(ValueError, match=r"bert is a BertForMaskedLM model, not a causal language model"):
        LLMCorrector.from_pretrained(bert_folder)
    with pytest.raises(ValueError, match="backend 'tgi': choose transformers, vllm"):
        LLMCorrector.from_pretrained(folder, backend="tgi")


def test_is_causal_lm():
    from transformers import BartConfig, GPT2Config

    assert is_causal_lm(Qwen2Config()) and is_causal_lm(GPT2Config())
    assert not is_causal_lm(BertConfig()) and not is_causal_lm(BartConfig())
    assert not is_causal_lm(BertConfig(architectures=["BertForMaskedLM"]))
    assert is_causal_lm(BertConfig(architectures=["BertLMHeadModel"]))
    assert is_causal_lm(BertConfig(auto_map={"AutoModelForCausalLM": "modeling_x.XForCausalLM"}))
    with pytest.raises(ValueError, match="csc_hf.pipeline.Corrector"):
        check_causal_lm(BartConfig(), "facebook/bart-base")


# ---- contamination -------------------------------------------------------------------------------------------------


def test_contamination_flags():
    sources = benchmark_sources(["test", "clean", "sighan15"], "peoples_daily+reviews")
    assert sources == {
        "test": ["peoples_daily", "reviews"],
        "clean": ["peoples_daily", "reviews"],
        "sighan15": ["sighan15"],
    }
    assert benchmark_sources(["test"], "my_corpus.txt") == {"test": []}
    # a domain config's sentences come from its own corpus, whatever the main corpus is
    assert benchmark_sources(["domain_hsk", "domain_reviews"], "my_corpus.txt") == {
        "domain_hsk": ["hsk"],
        "domain_reviews": ["reviews"],
    }
    assert [f["level"] for f in contamination_flags(["HSK"], benchmark_sources(["domain_hsk"], "peoples_daily"))] == [
        "contaminated"
    ]
    assert contamination_flags(["人民日报"], benchmark_sources(["domain_hsk"], "peoples_daily")) == []
    flags = contamination_flags(
        [("shibing624/CSC", "model card"), "SIGHAN-2015:train", "sighan15 test", "人民日报"], sources
    )
    found = {(f["test"], f["training_data"], f["level"]) for f in flags}
    assert found == {
        ("sighan15", "shibing624/CSC", "possible"),
        ("sighan15", "sighan15 test", "contaminated"),
        ("test", "人民日报", "contaminated"),
        ("clean", "人民日报", "contaminated"),
    }
    possible = next(f for f in flags if f["level"] == "possible")
    assert describe_flag(possible) == (
        "sighan15: the training data shibing624/CSC (model card) includes the "
        "SIGHAN-2015 test set in one of its splits, and which split the model trained "
        "on is not stated: possibly contaminated"
    )
    assert contamination_flags(["wang271k"], sources) == []
    with pytest.raises(ValueError, match="unknown source 'nowhere'"):
        contamination_flags(["x"], {"mine": ["nowhere"]})
    with pytest.raises(ValueError, match="give a dataset name"):
        contamination_flags([":test"], sources)


# ---- the vLLM backend (a stand-in module: vLLM needs a GPU) ----------------------------------------------------------


def test_vllm_backend_calls_and_missing_install(tokenizer, tmp_path, monkeypatch):
    from csc_hf.llm import VLLMBackend

    monkeypatch.setitem(sys.modules, "vllm", None)  # not installed
    with pytest.raises(ImportError, match="backend 'vllm' needs vLLM, which is not installed"):
        VLLMBackend(str(tmp_path), tokenizer)
    calls = {}

    class SamplingParams:
        def __init__(self, **kwargs):
            self.kwargs = kwargs

    class LLM:
        def __init__(self, **kwargs):
            calls["engine"] = kwargs
            self.llm_engine = types.SimpleNamespace(model_config=types.SimpleNamespace(max_model_len=4096))

        def generate(self, prompts, params, use_tqdm):
            calls["prompts"], calls["params"] = prompts, [p.kwargs for p in params]
            done = types.SimpleNamespace(text=f"改正后：{ANSWER}", finish_reason="stop", token_ids=[1] * 11)
            cut = types.SimpleNamespace(text="我们我们", finish_reason="length", token_ids=[1] * 4)
            return [types.SimpleNamespace(outputs=[done]), types.SimpleNamespace(outputs=[cut])]

    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(LLM=LLM, SamplingParams=SamplingParams))
    backend = VLLMBackend(str(tmp_path), tokenizer, seed=5, dtype=torch.bfloat16, tensor_parallel_size=2)
    assert calls["engine"] == {
        "model": str(tmp_path),
        "trust_remote_code": False,
        "dtype": "bfloat16",
        "seed": 5,
        "tensor_parallel_size": 2,
    }
    corrector = LLMCorrector(backend, tokenizer, seed=5)
    run = corrector.run(["我门去公园。", "好"])
    assert [r["status"] for r in run.results] == ["ok", "unfinished"] and run.predictions == [ANSWER, "好"]
    assert calls["prompts"] == [{"prompt_token_ids": ids} for ids in corrector.prompts(["我门去公园。", "好"])]
    assert [p["max_tokens"] for p in calls["params"]] == corrector.budgets(["我门去公园。", "好"]) == [28, 18]
    assert calls["params"][0] == {
        "temperature": 0.0,
        "top_p": 1.0,
        "seed": 5,
        "max_tokens": 28,
        "stop": None,
        "stop_token_ids": [tokenizer.eos_token_id],
        "skip_special_tokens": True,
    }
    assert run.settings["backend"] == "vllm" and backend.max_length == 4096


# ---- wiring: Corrector.from_pretrained, evaluate_model, the command line ------------------------------------------


@pytest.fixture(scope="module")
def llm_dir(tokenizer, tmp_path_factory):
    """A saved scripted LM (it answers ANSWER to every prompt) and its tokenizer."""
    folder = tmp_path_factory.mktemp("llm") / "scripted"
    scripted_lm(tokenizer, ANSWER).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def byte_level_gpt2(folder):
    """A tiny GPT-2 saved as many LLMs ship: vocab.json and merges.txt (no tokenizer.json, no vocab.txt), no chat
    template."""
    import json

    from transformers import GPT2Config, GPT2LMHeadModel
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    folder.mkdir()
    vocab = {char: i for i, char in enumerate(bytes_to_unicode().values())}
    vocab["<|endoftext|>"] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
    (folder / "tokenizer_config.json").write_text('{"tokenizer_class": "GPT2Tokenizer"}', encoding="utf-8")
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(vocab), n_positions=1024, n_embd=16, n_layer=1, n_head=2)
    GPT2LMHeadModel(config).save_pretrained(folder)
    return folder


def test_corrector_from_pretrained_loads_a_causal_lm_as_an_llm_corrector(llm_dir, tokenizer, tmp_path):
    import shutil

    import csc_hf
    from csc_hf.pipeline import Corrector

    assert csc_hf.LLMCorrector is LLMCorrector
    folder = tmp_path / "llm"
    shutil.copytree(llm_dir, folder)
    (folder / "csc_decoding.json").write_text("not json", encoding="utf-8")  # an LLM reads no decoding file
    corrector = Corrector.from_pretrained(folder, precision="fp32", template="zh_few_shot", batch_size=2)
    assert isinstance(corrector, LLMCorrector) and corrector.backend.batch_size == 2
    assert corrector.template.label == "zh_few_shot@1" and corrector.backend.model.dtype == torch.float32
    assert corrector("我门去公园。")["prediction"] == ANSWER
    assert Corrector.from_pretrained(folder, precision="bf16").backend.model.dtype == torch.bfloat16  # weights_dtype
    with pytest.raises(ValueError, match="loads as an LLM corrector: keep_bias, protected_terms belong to a tagging"):
        Corrector.from_pretrained(folder, keep_bias=1.0, protected_terms=["公园"])
    bert = tmp_path / "bert"
    BertForMaskedLM(
        BertConfig(
            vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64
        )
    ).save_pretrained(bert)
    with pytest.raises(ValueError, match="bert is a BertForMaskedLM model, not a causal language model"):
        Corrector.from_pretrained(bert, template="zh_zero_shot")  # an LLM option, a masked LM
    gpt2 = LLMCorrector.from_pretrained(byte_level_gpt2(tmp_path / "gpt2"), max_new_tokens_extra=2)
    result = Corrector.from_pretrained(tmp_path / "gpt2", max_new_tokens_extra=2)("我门去公园。")
    assert not gpt2.use_chat_template and result["status"] in ("ok", "empty", "unfinished")  # random: any outcome


def sighan15_params(small_params, tmp_path) -> dict:
    """The small benchmark with a three-sentence SIGHAN-2015 file: an error the scripted LM corrects, an error-free
    sentence it rewrites (a false positive) and an error it answers at another length."""
    path = tmp_path / "s15.tsv"
    path.write_text(
        "我门去公园。\t我们去公园。\n他是个好人。\t他是个好人。\n我门去了公园。\t我们去了公园。\n", encoding="utf-8"
    )
    return {**small_params, "sighan15_path": str(path)}


def test_evaluate_model_runs_an_llm_under_its_protocol(llm_dir, small_params, tmp_path):
    from csc_hf.evaluation import EvaluationOptions, evaluate_model
    from csc_hf.files import iter_jsonl, read_lines
    from csc_hf.system_scores import score_files

    params = sighan15_params(small_params, tmp_path)
    llm = {"template": "zh_few_shot", "training_data": ["sighan15 test"]}
    options = EvaluationOptions(params, bootstrap=0, predictions_dir=tmp_path / "predictions", llm=llm)
    clean, sighan = evaluate_model(llm_dir, ["clean", "sighan15"], options)
    assert (sighan["config"], sighan["split"], sighan["llm"]["length_policy"]) == ("sighan15", "test", "edits")
    assert "keep_bias" not in sighan and sighan["sentences_per_s"] > 0 and sighan["seconds"] > 0
    assert sighan["llm"]["settings"]["prompt"]["name"] == "zh_few_shot" and sighan["llm"]["new_tokens"] > 0
    assert (sighan["llm"]["length_changed"], sighan["llm"]["failed"]["rejected"]) == (1, 0)
    assert sighan["scores"]["fpr"] == 1.0 and sighan["scores"]["n_length_mismatch"] == 1
    assert [(f["test"], f["level"]) for f in sighan["llm"]["contamination"]] == [("sighan15", "contaminated")]
    assert clean["llm"]["contamination"] == [] and clean["llm"]["length_changed_share"] > 0.5
    saved = tmp_path / "predictions" / "sighan15.test.jsonl"
    rows = [row for _, row in iter_jsonl(saved, read_lines(saved))]
    assert [sorted(row) for row in rows] == [["answer", "id", "output", "prediction", "status"]] * 3
    assert [row["prediction"] for row in rows] == [ANSWER] * 3
    report = score_files(saved, "sighan15", params=params, bootstrap=0)  # csc-bench score reads them: the same scores
    assert report["scores"]["strict"]["char_cor_f1"] == sighan["scores"]["char_cor_f1"]
    strict = EvaluationOptions(
        params, bootstrap=0, predictions_dir=tmp_path / "strict", llm={"length_policy": "strict"}
    )
    (record,) = evaluate_model(llm_dir, ["sighan15"], strict)
    assert record["llm"]["failed"]["rejected"] == 1 and record["scores"]["n_length_mismatch"] == 0
    rescored = score_files(
        tmp_path / "strict" / "sighan15.test.jsonl", "sighan15", params=params, bootstrap=0, length_policy="strict"
    )
    assert rescored["scores"]["strict"]["char_cor_f1"] == record["scores"]["char_cor_f1"]
    with pytest.raises(ValueError, match="is an LLM corrector: it has no keep_bias or similarity_prior to tune"):
        evaluate_model(llm_dir, ["sighan15"], EvaluationOptions(params, keep_bias_grid=[0.0, 1.0]))


def test_csc_bench_evaluate_and_correct_with_an_llm(llm_dir, small_params, tmp_path, capsys):
    from csc_hf.cli import main

    params = sighan15_params(small_params, tmp_path)
    bench = [arg for key, value in params.items() for arg in ("--" + key.replace("_", "-"), str(value))]
    argv = [
        "evaluate",
        str(llm_dir),
        "--configs",
        "sighan15",
        "--bootstrap",
        "0",
        *bench,
        "--template",
        "zh_few_shot",
        "--length-policy",
        "strict",
        "--training-data",
        "sighan15:test",
        "--output",
        str(tmp_path / "out.json"),
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    sha = load_template("zh_few_shot").sha256[:8]
    assert f"(template zh_few_shot@1 {sha}, chat template, greedy, seed 0, length policy strict, transformers)" in out
    header = next(line for line in out.splitlines() if "char_cor_f1" in line).split()
    assert header[-3:] == ["length_changed", "failed", "sentences/s"] and "fpr" in header
    row = next(line for line in out.splitlines() if line.startswith("sighan15/test")).split()
    assert row[-3:-1] == ["0.3333", "1"]  # one answer of another length: rejected
    assert "sighan15: the training data sighan15:test (declared) includes the SIGHAN-2015 test set: contaminated" in out
    predictions = tmp_path / "predictions"
    assert main(["-q", *argv[:-2], "--predictions-dir", str(predictions), "--length-policy", "substitutions"]) == 0
    capsys.readouterr()
    saved = str(predictions / "sighan15.test.jsonl")
    assert main(["score", "--predictions", saved, "--references", "sighan15", *bench, "--length-policy", "strict"]) == 0
    assert "Length changes: 1 predictions (33.3%) differ" in capsys.readouterr().out  # the answers as written
    correct = ["correct", str(llm_dir), "我门去公园。", "--template", "zh_zero_shot@1", "--generation-seed", "3"]
    assert main(correct) == 0
    assert capsys.readouterr().out == ANSWER + "\n"
    assert main(["correct", str(llm_dir), "我门去公园。", "--keep-bias", "1"]) == 2
    assert "keep_bias belong to a tagging or seq2seq model's Corrector" in capsys.readouterr().err
    assert main(["evaluate", str(llm_dir), "--keep-bias", "0", "1", "--bootstrap", "0", *bench]) == 2
    assert "it has no keep_bias or similarity_prior to tune" in capsys.readouterr().err
    assert main(["correct", str(llm_dir), "我门去公园。", "--bf16-weights"]) == 2
    assert "bf16_weights belong to a tagging or seq2seq model's Corrector" in capsys.readouterr().err
    assert main(["evaluate", str(llm_dir), "--bf16-weights", "--bootstrap", "0", *bench]) == 2
    assert "an LLM corrector: its weights load in the dtype its precision gives" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["correct", str(llm_dir), "好", "--chat-template-kwargs", "[1]"])
    assert "expected a JSON object" in capsys.readouterr().err


def test_readme_llm_examples(llm_dir):
    """The README's LLM examples as written, a local model in place of the Hub's: the Python block runs, and the GPU
    command parses with a template that loads."""
    import re
    import shlex
    from pathlib import Path

    from csc_hf.cli import build_parser

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Large language models as correctors\n", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"```python\n(.+?)\n```", section, re.S)
    (command,) = [line for line in re.findall(r"```bash\n(.+?)\n```", section, re.S) if "csc-bench evaluate" in line]
    hub_id = "Qwen/Qwen2.5-7B-Instruct"
    assert hub_id in code and hub_id in command
    found = {}
    exec(code.replace(hub_id, str(llm_dir)) + "\nfound.update(run=run, corrector=corrector)", {"found": found})
    assert found["run"].results[0]["prediction"] == ANSWER and found["corrector"].template.label == "zh_few_shot@1"
    args = build_parser().parse_args(shlex.split(command)[1:])
    assert load_template(args.template).label == "zh_few_shot@1" and args.length_policy == "edits"
    assert args.training_data == ["shibing624/CSC"] and args.predictions_dir and args.batch_size == 32
