"""The decoding a model was evaluated with travels with it: the study and `csc-bench evaluate` save the tuned
`keep_bias` in the model folder (`csc_decoding.json`), and every way of loading the model decodes with it unless an
explicit argument says otherwise."""

import dataclasses
import functools
import json
import shutil

import pytest
import torch
from transformers import pipeline

from csc_hf import load_dataset
from csc_hf.cli import main
from csc_hf.evaluation import EvaluationOptions, decoding_cell, evaluate_model
from csc_hf.files import read_predictions
from csc_hf.model_folder import load_decoding, load_similar, save_decoding
from csc_hf.modeling import CSCConfig, CSCForCorrection, CSCTokenizer
from csc_hf.pipeline import Corrector, decode_edits
from csc_hf.run_layout import DECODING_FILE, PREDICTIONS, RECORDS, SIMILAR_FILE
from csc_hf.study import Preset, Study

GRID = [1.0, 3.0]  # no 0: a route that fell back to keep_bias 0 would give other predictions


@pytest.fixture(scope="module")
def studied(tmp_path_factory):
    """The smoke preset's bert, trained and evaluated by the study on the test config (keep_bias tuned over GRID):
    ``(preset, model folder, evaluation folder)``."""
    preset = dataclasses.replace(
        Preset.load("smoke"), variants=["bert"], tests=["test"], bootstrap=0, keep_bias_grid=GRID
    )
    study = Study(preset, tmp_path_factory.mktemp("runs") / "decoding")
    build, pretrained = study.build(), study.pretrain()
    model = study.finetune("bert", 0, pretrained)
    evaluation = study.evaluate(model, "bert", 0, build)
    return preset, model.directory, evaluation.directory


@pytest.fixture(scope="module")
def split(studied):
    """The test split's sources and the study's predictions for them."""
    preset, _, evaluation = studied
    sources = list(load_dataset("csc_bench", "test", split="test", **preset.bench_params)["source"])
    return sources, read_predictions(evaluation / PREDICTIONS / "test.test.txt", sources)


def bench_args(params: dict) -> list[str]:
    return [arg for name, value in params.items() for arg in (f"--{name.replace('_', '-')}", str(value))]


def test_the_study_saves_the_tuned_decoding_with_the_model(studied):
    _, model_dir, evaluation = studied
    records = json.loads((evaluation / RECORDS).read_text(encoding="utf-8"))
    saved = json.loads((model_dir / DECODING_FILE).read_text(encoding="utf-8"))
    assert saved["keep_bias"] == records[0]["keep_bias"] in GRID and saved["threshold"] == 0.0
    assert saved["tuning"]["grid"] == {"keep_bias": GRID, "similarity_prior": [0.0]}
    assert set(saved["tuning"]["scores"]) == {f"{b:g}/0" for b in GRID}
    assert load_decoding(model_dir) == {"keep_bias": saved["keep_bias"], "threshold": 0.0, "similarity_prior": 0.0}


def test_every_route_reproduces_the_studys_predictions_without_arguments(studied, split, tmp_path, capsys):
    preset, model_dir, evaluation = studied
    sources, expected = split
    corrector = Corrector.from_pretrained(model_dir)
    assert corrector.keep_bias in GRID and corrector.correct(sources) == expected
    assert Corrector.from_pretrained(model_dir, keep_bias=0.0).correct(sources) != expected  # an argument wins
    checker = pipeline("chinese-spelling-check", model=str(model_dir))
    assert [r["prediction"] for r in checker(sources)] == expected
    assert [r["prediction"] for r in checker(sources, keep_bias=0.0)] != expected

    (tmp_path / "in.txt").write_text("\n".join(sources) + "\n", encoding="utf-8")
    assert (
        main(["correct", str(model_dir), "--file", str(tmp_path / "in.txt"), "--output", str(tmp_path / "out.txt")])
        == 0
    )
    assert (tmp_path / "out.txt").read_text(encoding="utf-8").splitlines() == expected

    before = (model_dir / DECODING_FILE).read_bytes()
    assert (
        main(
            [
                "evaluate",
                str(model_dir),
                "--configs",
                "test",
                "--bootstrap",
                "0",
                "--output",
                str(tmp_path / "e.json"),
                *bench_args(preset.bench_params),
            ]
        )
        == 0
    )
    assert f"keep_bias {corrector.keep_bias:g}" in capsys.readouterr().out
    scores = json.loads((tmp_path / "e.json").read_text(encoding="utf-8"))[0]["scores"]
    study_scores = json.loads((evaluation / RECORDS).read_text(encoding="utf-8"))[0]["scores"]
    overall = {k: v for k, v in scores.items() if "seen" not in k}  # the study's training pairs are a sample of all
    assert overall == {k: v for k, v in study_scores.items() if "seen" not in k} and "char_cor_f1" in overall
    assert (model_dir / DECODING_FILE).read_bytes() == before  # no grid: nothing tuned, nothing saved


def test_one_forward_pass_decodes_every_setting_as_its_own_corrector(studied, split):
    _, model_dir, _ = studied
    sources, _ = split
    corrector = Corrector.from_pretrained(model_dir, batch_size=16)
    texts = sources[:100] + ["".join(sources[:12])]  # the last is longer than a window
    assert len(texts[-1]) > corrector.window
    options = [
        {"keep_bias": 0.0},
        {"keep_bias": 1.0, "similarity_prior": 3.0},
        {"threshold": 0.6},
        {"protected_chars": sorted(set(texts[0]))},
        {"protected_terms": [texts[1][:6]]},
    ]
    passes = []
    hook = corrector.model.register_forward_hook(lambda *_: passes.append(1))
    try:
        each = corrector.correct_each(texts, options)
        one = len(passes)
        assert each == [corrector.with_options(**option).correct(texts) for option in options]
    finally:
        hook.remove()
    assert one == len(passes) // (len(options) + 1)  # the grid cost the passes of one setting
    assert len({tuple(predictions) for predictions in each[:3]}) == 3  # the settings decode differently


def test_evaluate_with_a_grid_tunes_and_saves_the_chosen_value(studied, tmp_path, capsys):
    preset, model_dir, _ = studied
    copy = tmp_path / "model"
    shutil.copytree(model_dir, copy)
    (copy / DECODING_FILE).unlink()
    assert Corrector.from_pretrained(copy).keep_bias == 0.0  # nothing saved: 0
    assert (
        main(
            [
                "evaluate",
                str(copy),
                "--configs",
                "test",
                "--bootstrap",
                "0",
                "--keep-bias",
                "0",
                "1000",
                "--output",
                str(tmp_path / "e.json"),
                *bench_args(preset.bench_params),
            ]
        )
        == 0
    )
    assert "tuned and saved" in capsys.readouterr().out
    chosen = json.loads((tmp_path / "e.json").read_text(encoding="utf-8"))[0]["keep_bias"]
    assert load_decoding(copy)["keep_bias"] == chosen == Corrector.from_pretrained(copy).keep_bias
    assert json.loads((copy / DECODING_FILE).read_text(encoding="utf-8"))["tuning"]["grid"]["keep_bias"] == [
        0.0,
        1000.0,
    ]


def test_evaluate_tunes_the_similarity_prior_with_keep_bias(studied, tmp_path, capsys):
    preset, model_dir, _ = studied
    copy = tmp_path / "model"
    shutil.copytree(model_dir, copy)
    assert (
        main(
            [
                "evaluate",
                str(copy),
                "--configs",
                "test",
                "--bootstrap",
                "0",
                "--keep-bias",
                "0",
                "1000",
                "--similarity-prior",
                "0",
                "2",
                "--output",
                str(tmp_path / "e.json"),
                *bench_args(preset.bench_params),
            ]
        )
        == 0
    )
    assert "tuned and saved" in capsys.readouterr().out
    record = json.loads((tmp_path / "e.json").read_text(encoding="utf-8"))[0]
    saved = json.loads((copy / DECODING_FILE).read_text(encoding="utf-8"))
    assert set(saved["tuning"]["scores"]) == {"0/0", "0/2", "1000/0", "1000/2"}
    best = max(saved["tuning"]["scores"].values())
    chosen = decoding_cell(record["keep_bias"], record["similarity_prior"])
    assert saved["tuning"]["scores"][chosen] == best and saved["similarity_prior"] == record["similarity_prior"]
    assert (copy / SIMILAR_FILE).is_file() == (record["similarity_prior"] > 0)
    assert Corrector.from_pretrained(copy).similarity_prior == record["similarity_prior"]
    save_decoding(copy, {"keep_bias": 0.0, "threshold": 0.0, "similarity_prior": 2.5})
    records = evaluate_model(
        copy, ["test"], EvaluationOptions(preset.bench_params, bootstrap=0, keep_bias_grid=[0.0, 1000.0])
    )
    assert records[0]["similarity_prior"] == 2.5  # no prior grid: the saved prior, tuned with nothing else
    with pytest.raises(ValueError, match="similarity_prior must be at least 0"):
        evaluate_model(
            copy, ["test"], EvaluationOptions(preset.bench_params, bootstrap=0, similarity_prior_grid=[-1.0])
        )


# ---- the file itself, on a tiny random model -------------------------------------------------------------------------


@pytest.fixture()
def tiny_dir(tmp_path):
    tokenizer = CSCTokenizer.from_texts(["我们去北京天安门他"])
    torch.manual_seed(0)
    model = CSCForCorrection(
        CSCConfig(
            vocab_size=len(tokenizer),
            hidden_size=8,
            num_hidden_layers=1,
            num_attention_heads=1,
            intermediate_size=8,
            max_position_embeddings=16,
        )
    )
    model.save_pretrained(tmp_path / "m")
    tokenizer.save_pretrained(tmp_path / "m")
    return tmp_path / "m"


def test_saved_decoding_is_the_default_of_every_loader_and_arguments_win(tiny_dir):
    save_decoding(tiny_dir, {"keep_bias": 1e4, "threshold": 0.25}, {"split": "validation"})
    assert [p.name for p in tiny_dir.iterdir() if p.name.startswith(".")] == []  # no temporary file left
    corrector = Corrector.from_pretrained(tiny_dir)
    assert (corrector.keep_bias, corrector.threshold) == (1e4, 0.25)
    assert Corrector.from_pretrained(tiny_dir, keep_bias=0.5).keep_bias == 0.5
    model = CSCForCorrection.from_pretrained(tiny_dir)  # a model object remembers its folder
    checker = pipeline("chinese-spelling-check", model=model, tokenizer=CSCTokenizer.from_pretrained(tiny_dir))
    assert (checker.corrector.keep_bias, checker.corrector.threshold) == (1e4, 0.25)
    checker = pipeline("chinese-spelling-check", model=str(tiny_dir), keep_bias=0.5)
    assert (checker.corrector.keep_bias, checker.corrector.threshold) == (0.5, 0.25)


def test_similarity_prior_raises_only_the_sources_similar_characters():
    # vocabulary: 0 [CLS], 1-4 Han 甲乙丙丁, 5 "a"; 甲's similar characters are 丙 and 丁 (padded with 甲 itself)
    han = torch.tensor([False, True, True, True, True, False])
    similar = torch.arange(6).unsqueeze(1).repeat(1, 3)
    similar[1] = torch.tensor([3, 4, 1])
    input_ids = torch.tensor([[0, 1, 1]])
    logits = torch.tensor([[[9.0, 0, 0, 0, 0, 0], [0, 2.0, 3.0, 1.5, 0, 0], [0, 2.5, 0, 0, 0, 9.0]]])

    def decode(**prior):
        _, columns, ids, probabilities = decode_edits(input_ids, logits.clone(), han, han[input_ids], **prior)
        return columns.tolist(), ids.tolist(), probabilities.tolist()

    assert decode()[:2] == ([1], [2])  # 乙 at 1; at 2 the best Han token is the source
    columns, ids, probabilities = decode(similar=similar, similarity_prior=2.0)
    assert (columns, ids) == ([1], [3])  # 丙 (1.5 + 2) beats 乙 (3.0); the source 甲 gets no boost (2.0)
    raw = torch.tensor([0, 2.0, 3.0, 1.5, 0, 0]).double()
    assert probabilities == pytest.approx([(raw[3] - raw.logsumexp(0)).exp().item()])  # the model's own softmax
    assert decode(similar=similar, similarity_prior=2.0, keep_bias=2.0)[:2] == ([], [])  # 甲 + 2 = 4 >= 3.5
    assert decode(similar=None, similarity_prior=2.0)[:2] == ([1], [2])  # no table: no prior


def test_decoding_reads_half_precision_logits_as_their_fp32_values_and_leaves_them_unchanged():
    # logits with many equal values (bf16 holds 8 bits of mantissa): the first of them wins in every dtype
    generator = torch.Generator().manual_seed(0)
    logits = (torch.randn(4, 12, 40, generator=generator) * 3).round() / 2
    input_ids = torch.randint(0, 40, (4, 12), generator=generator)
    han = torch.arange(40) % 5 != 0
    similar = torch.arange(40).unsqueeze(1).repeat(1, 3)
    similar[:, 0] = (similar[:, 0] + 7) % 40
    options = [{}, {"keep_bias": 0.75}, {"similar": similar, "similarity_prior": 1.25}, {"threshold": 0.2}]
    for option in options:
        expected = decode_edits(input_ids, logits.clone(), han, han[input_ids], **option)
        for dtype in (torch.float32, torch.bfloat16, torch.float16):
            given = logits.to(dtype)
            kept = given.clone()
            found = decode_edits(input_ids, given, han, han[input_ids], **option)
            assert all(torch.equal(a, b) for a, b in zip(found, expected)), (option, dtype)
            assert torch.equal(given, kept)  # the caller's logits serve its next decoder as they were


def test_corrector_builds_the_similarity_table_once_and_saves_the_prior(tiny_dir):
    corrector = Corrector.from_pretrained(tiny_dir, similarity_prior=1.5)
    table = corrector.similar_tokens()
    ids = corrector.tokenizer.convert_tokens_to_ids
    assert ids("门") in table[ids("们")].tolist() and ids("我") not in table[ids("们")].tolist()
    assert set(table[ids("[CLS]")].tolist()) == {ids("[CLS]")}  # other tokens list only themselves
    copy = corrector.with_options(similarity_prior=0.0)
    assert copy.similarity_prior == 0.0 and corrector.similarity_prior == 1.5 and copy.similar_tokens() is table
    assert corrector.correct("我们去北京") == corrector.correct(["我们去北京"])[0]
    checker = pipeline("chinese-spelling-check", model=str(tiny_dir))
    assert checker("我们去北京", similarity_prior=1e4)["prediction"] == corrector.with_options(
        similarity_prior=1e4
    ).correct("我们去北京")  # per call, as the Corrector decodes
    save_decoding(tiny_dir, {"keep_bias": 0.0, "threshold": 0.0, "similarity_prior": 2.5})
    assert Corrector.from_pretrained(tiny_dir).similarity_prior == 2.5
    assert pipeline("chinese-spelling-check", model=str(tiny_dir)).corrector.similarity_prior == 2.5


def test_saved_similar_characters_decode_without_rebuilding_them(tiny_dir, monkeypatch):
    from csc_hf import confusion

    corrector = Corrector.from_pretrained(tiny_dir, similarity_prior=1e4)
    expected, table = corrector.correct("我们去北京天安门"), corrector.similar_tokens()
    assert corrector.save_similar(tiny_dir) == tiny_dir / SIMILAR_FILE and load_similar(tiny_dir)["们"][0] == "门"

    def rebuilt(chars, *args, **kwargs):
        raise AssertionError("the saved characters should be used")

    monkeypatch.setattr(confusion, "similar_characters", rebuilt)  # as on a machine with other fonts or pypinyin
    loaded = Corrector.from_pretrained(tiny_dir, similarity_prior=1e4)
    assert torch.equal(loaded.similar_tokens(), table) and loaded.correct("我们去北京天安门") == expected
    checker = pipeline("chinese-spelling-check", model=str(tiny_dir), similarity_prior=1e4)
    assert checker("我们去北京天安门")["prediction"] == expected
    (tiny_dir / SIMILAR_FILE).write_text('{"们": "门门我", "x": "们", "我": "我"}', encoding="utf-8")
    table = Corrector.from_pretrained(tiny_dir).similar_tokens()  # no repeats, no key itself, no unknown characters
    ids = CSCTokenizer.from_pretrained(tiny_dir).convert_tokens_to_ids
    assert table[ids("们")].tolist()[:2] == [ids("门"), ids("我")]
    assert set(table[ids("我")].tolist()) == {ids("我")}


def test_evaluate_model_of_a_hub_id_does_not_save(monkeypatch, tiny_dir, small_params, caplog):
    from csc_hf import pipeline as pipeline_module

    real = Corrector.from_pretrained.__func__
    monkeypatch.setattr(
        pipeline_module.Corrector,
        "from_pretrained",
        classmethod(lambda cls, path, **kwargs: real(cls, tiny_dir, **kwargs)),
    )
    loads_as_llm = pipeline_module.loads_as_llm
    monkeypatch.setattr(pipeline_module, "loads_as_llm", lambda path, *args: loads_as_llm(tiny_dir, *args))
    records = evaluate_model(
        "user/some-model",
        ["test"],
        EvaluationOptions(small_params, bootstrap=0, keep_bias_grid=[0.0], save_decoding=True),
    )
    assert records and not (tiny_dir / DECODING_FILE).exists() and "not a local folder" in caplog.text


def _decode_with_a_biased_copy(input_ids, logits, han, editable, keep_bias, threshold):
    """The rule of `decode_edits` written plainly: the source's logit raised in an fp32 copy, then the argmax."""
    biased = logits.float().clone()
    source = biased.gather(-1, input_ids.unsqueeze(-1))
    biased.scatter_(-1, input_ids.unsqueeze(-1), source + keep_bias)
    predicted = biased.argmax(-1)
    retry = editable & ~han[predicted]
    predicted[retry] = biased[retry].masked_fill(~han, float("-inf")).argmax(-1)
    rows, columns = (editable & (predicted != input_ids)).nonzero(as_tuple=True)
    ids = predicted[rows, columns]
    scores = logits[rows, columns].double()
    probabilities = (scores.gather(-1, ids.unsqueeze(-1)).squeeze(-1) - scores.logsumexp(-1)).exp()
    kept = probabilities >= threshold
    return rows[kept], columns[kept], ids[kept], probabilities[kept]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_decoding_gives_the_edits_of_an_argmax_over_a_biased_copy(dtype):
    """`decode_edits` searches the best token only where the source does not beat every other one, and raises a
    positive keep_bias without copying the logits; on logits full of ties (integers and halves, where keep_bias makes
    the source tie the best) and with a NaN it gives the edits of the plain rule, first index of equal values
    included, in fp32 and bf16, with non-Han tokens that win and retry, for a keep_bias of any sign; the caller's
    logits come back as they were, also when they are an inference tensor or an expanded view."""
    generator = torch.Generator().manual_seed(0)
    vocab, han = 12, torch.ones(12, dtype=torch.bool)
    han[[0, 3, 7]] = False  # 7 beats the Han tokens often: the retry path
    input_ids = torch.randint(0, vocab, (16, 9), generator=generator)
    logits = (torch.randint(0, 8, (16, 9, vocab), generator=generator) / 2).to(dtype)
    logits[..., 7] += 0.5
    logits[2, 3, 5] = logits[4, 1, input_ids[4, 1]] = float("nan")
    editable = han[input_ids] & (torch.rand(input_ids.shape, generator=generator) < 0.9)
    before = logits.clone()
    same = functools.partial(torch.testing.assert_close, rtol=0, atol=0, equal_nan=True)
    for keep_bias in (0.0, -0.5, 0.5, 1.0, 1.5, 3.0):
        for threshold in (0.0, 0.2):
            got = decode_edits(input_ids, logits, han, editable, keep_bias, threshold)
            want = _decode_with_a_biased_copy(input_ids, logits, han, editable, keep_bias, threshold)
            assert len(got[0]) > 0
            for a, b in zip(got, want):
                assert torch.equal(a, b), (keep_bias, threshold)
            same(logits, before)  # the model's logits are left as they are
    with torch.inference_mode():
        frozen = logits.clone()
    for given in (frozen, logits[:1].expand(16, 9, vocab)):
        kept = given.clone()
        got = decode_edits(input_ids, given, han, editable)
        want = _decode_with_a_biased_copy(input_ids, given, han, editable, 0.0, 0.0)
        assert all(torch.equal(a, b) for a, b in zip(got, want))
        same(given, kept)
