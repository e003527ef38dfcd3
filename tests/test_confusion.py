import json

import pytest

from csc_hf.confusion import (
    BuildParams,
    ConfusionSet,
    attested_readings,
    build_confusion_set,
    divide,
    pair_type,
    phonetic_candidates,
    similar_characters,
)

CS = ConfusionSet(
    [
        ("天", "添", "phonetic"),
        ("天", "夭", "graphic"),
        ("天", "填", "phonetic"),
        ("我", "找", "graphic"),
        ("我", "饿", "phonetic"),
        ("好", "号", "phonetic"),
        ("好", "号", "graphic"),
        ("现", "规", "graphic"),
    ]
)


def test_types_merge_to_both_and_stats():
    assert CS["好"]["号"] == "both"
    assert CS.stats() == {
        "keys": 4,
        "pairs": 7,
        "candidates_per_key": 1.75,
        "phonetic_share": round(3 / 7, 4),
        "graphic_share": round(3 / 7, 4),
        "both_share": round(1 / 7, 4),
    }


def test_set_algebra():
    phon = CS.restrict(["phonetic"])
    assert {(k, c) for k, c, _ in phon.pairs()} == {("天", "添"), ("天", "填"), ("我", "饿"), ("好", "号")}
    assert CS.minus(phon).restrict(["phonetic"]).n_pairs == 0
    assert CS.only_keys("天").n_pairs == 3 and CS.minus(phon).union(phon) == CS


def test_bad_pairs():
    with pytest.raises(ValueError, match="type 'sound'"):
        ConfusionSet([("天", "添", "sound")])
    with pytest.raises(ValueError, match="distinct single characters"):
        ConfusionSet([("天", "天", "phonetic")])


def test_json_roundtrip(tmp_path):
    CS.save(tmp_path / "s.json")
    assert ConfusionSet.load(tmp_path / "s.json") == CS
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.parametrize(
    "fmt", ["sighan13-pronunciation", "sighan13-shape", "pycorrector-pinyin", "pycorrector-stroke"]
)
def test_layout_roundtrip_keeps_its_part(tmp_path, fmt):
    path = tmp_path / f"set.{fmt}.txt"
    CS.save(path, fmt)
    back = ConfusionSet.load(path, fmt)
    if fmt == "sighan13-pronunciation":
        assert back == CS
    else:
        wanted = "graphic" if "shape" in fmt or "stroke" in fmt else "phonetic"
        assert {(k, c) for k, c, _ in back.pairs()} == {(k, c) for k, c, _ in CS.restrict([wanted]).pairs()}


def test_read_pycorrector_layouts(tmp_path):
    (tmp_path / "same_pinyin.txt").write_text(
        "#汉字\t同音同调\t同音异调\n一\t壹\t漪\n乙\t已\t亿艺忆\n", encoding="utf-8"
    )
    (tmp_path / "same_stroke.txt").write_text("龙\t拢\t笼\n", encoding="utf-8")
    pinyin = ConfusionSet.load(tmp_path / "same_pinyin.txt")
    assert dict(pinyin["乙"]) == {"亿": "phonetic", "已": "phonetic", "忆": "phonetic", "艺": "phonetic"}
    assert dict(ConfusionSet.load(tmp_path / "same_stroke.txt")["龙"]) == {"拢": "graphic", "笼": "graphic"}


def test_installed_pycorrector_files_load():
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("pycorrector")
    if spec is None:
        pytest.skip("pycorrector 0.4.9 is not installed (pip install --no-deps pycorrector==0.4.9)")
    data = Path(next(iter(spec.submodule_search_locations))) / "data"
    assert ConfusionSet.load(data / "same_pinyin.txt").n_pairs > 10_000
    assert ConfusionSet.load(data / "same_stroke.txt").n_pairs > 1_000


def test_malformed_files_name_file_and_line(tmp_path):
    bad = tmp_path / "x_shape.txt"
    bad.write_text("天,夭\nabc\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"x_shape.txt, line 2: expected a character"):
        ConfusionSet.load(bad)
    js = tmp_path / "x.json"
    js.write_text('{"天": {"夭": "graphic"},\n oops}', encoding="utf-8")
    with pytest.raises(ValueError, match=r"x.json, line 2: invalid JSON"):
        ConfusionSet.load(js)
    js.write_text(json.dumps({"天": {"夭": "shape"}}), encoding="utf-8")
    with pytest.raises(ValueError, match=r"x.json: .*type 'shape'"):
        ConfusionSet.load(js)
    unknown = tmp_path / "a.txt"
    unknown.write_text("天,夭\n", encoding="utf-8")
    with pytest.raises(ValueError, match="cannot tell the confusion set format"):
        ConfusionSet.load(unknown)
    with pytest.raises(FileNotFoundError, match="missing.json does not exist"):
        ConfusionSet.load(tmp_path / "missing.json")


def test_phonetic_candidates_rank_same_tone_first():
    chars = ["是", "事", "十", "时", "思", "四"]
    readings = {"是": ("shi4",), "事": ("shi4",), "十": ("shi2",), "时": ("shi2",), "思": ("si1",), "四": ("si4",)}
    got = phonetic_candidates(chars, readings, max_per_key=10, fuzzy=True)
    assert got["是"] == ["事", "十", "时", "四", "思"]  # same tone, other tone, then fuzzy s/sh (same tone first)
    assert "思" not in phonetic_candidates(chars, readings, max_per_key=10, fuzzy=False)["是"]


def test_attested_readings_use_context():
    readings = attested_readings(["我去银行存钱。", "他在银行工作。", "我们一起行走吧。"], min_share=0.3)
    assert readings["行"] == ("hang2", "xing2")


def test_build_from_frequencies_is_sensible_and_deterministic():
    text = "现在再规定天气很好我们已经自己未来末尾人入大太犬" * 3
    freq = {c: 10 + i for i, c in enumerate(dict.fromkeys(text))}
    a = build_confusion_set(freq, {}, BuildParams(n_chars=40))
    assert a == build_confusion_set(freq, {}, BuildParams(n_chars=40))
    assert a["己"]["已"] == "graphic" and a["未"]["末"] == "graphic" and a["人"]["入"] == "graphic"
    assert a["在"]["再"] == "phonetic"


def test_similar_characters_by_knowledge_alone():
    similar = similar_characters(list("们门未末天夭我们A1"))
    assert list(similar) == list("们门未末天夭我")  # Han characters with a reading and strokes, once each
    assert similar["们"] == ["门"] and similar["未"][0] == "末" and "夭" in similar["天"]  # sound first, then look
    assert similar["我"] == [] and all(c not in others for c, others in similar.items())
    assert all(len(others) == len(set(others)) for others in similar.values())
    assert similar_characters(list("们门"), max_phonetic=0, max_graphic=0) == {"们": [], "门": []}
    assert similar_characters(["A"]) == {}


def test_pair_type_judges_by_knowledge():
    assert pair_type("是", "事") == "phonetic"
    assert pair_type("己", "已") in ("graphic", "both")
    assert pair_type("未", "末") == "graphic"
    assert pair_type("天", "猫") == "other"


def test_divide_follows_the_paper():
    full = ConfusionSet([(k, c, "phonetic") for k in "一二三四五六七八九十" for c in "甲乙丙丁"])
    d = divide(full, n_unseen_keys=2, n_unseen_v_keys=3, unseen_v_share=0.5, seed=0)
    assert len(d.unseen_k) == 2 and all(len(d.unseen_k[k]) == 4 for k in d.unseen_k)
    assert len(d.unseen_v) == 3 and all(len(d.unseen_v[k]) == 2 for k in d.unseen_v)
    assert not set(d.unseen_k) & set(d.unseen_v) and not set(d.unseen_k) & set(d.train)
    assert d.train.n_pairs == 40 - 8 - 6 and d.train.union(d.unseen_k).union(d.unseen_v) == full
    assert divide(full, 2, 3, 0.5, seed=0) == d and divide(full, 2, 3, 0.5, seed=1) != d


def test_divide_bad_sizes():
    full = ConfusionSet([("一", "甲", "phonetic"), ("二", "乙", "phonetic")])
    with pytest.raises(ValueError, match="exceed the 2 keys"):
        divide(full, 2, 1, 0.5, seed=0)
    with pytest.raises(ValueError, match="S_train empty"):
        divide(full, 2, 0, 0.5, seed=0)
    with pytest.raises(ValueError, match="unseen_v_share"):
        divide(full, 0, 0, 1.0, seed=0)


@pytest.mark.parametrize("pool", [None, 200])
def test_cli_divide_gives_the_benchmarks_division(small_params, tmp_path, pool, capsys):
    from csc_hf.benchmark import BenchParams, plan_for
    from csc_hf.cli import main

    params = {**small_params, "unseen_key_pool": pool, "seed": 3}
    plan = plan_for(BenchParams(**params))
    plan.confusion.save(tmp_path / "S.json")
    args = [arg for key, value in params.items() for arg in ("--" + key.replace("_", "-"), str(value))]
    for name, given in (("from_file", ["--input", str(tmp_path / "S.json")]), ("own", [])):
        assert main(["confusion", "divide", *given, "--output", str(tmp_path / name), *args]) == 0
        for part in ("S_unseen_k", "S_unseen_v", "S_train"):
            assert ConfusionSet.load(tmp_path / name / f"{part}.json") == plan.subset(part), (name, part)
    capsys.readouterr()


def test_every_layout_drops_non_han_candidates_and_says_how_many(tmp_path, caplog):
    as_json = tmp_path / "s.json"
    as_json.write_text(
        json.dumps({"天": {"添": "phonetic", "a": "phonetic", "1": "graphic", "😀": "graphic"}}), encoding="utf-8"
    )
    as_text = tmp_path / "same_pinyin.txt"
    as_text.write_text("天\t添a1😀\n", encoding="utf-8")
    for path in (as_json, as_text):
        caplog.clear()
        with caplog.at_level("WARNING", logger="csc_hf.confusion"):
            assert ConfusionSet.load(path).pairs() == [("天", "添", "phonetic")]
        assert "dropped 3 candidates that are not Chinese characters: '1' 'a' '😀'" in caplog.text


@pytest.mark.parametrize("key", ["😀", "a", "天天"])
def test_a_json_key_that_is_not_a_chinese_character_is_rejected(tmp_path, key):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({key: {"添": "phonetic"}}, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(ValueError, match=f"s.json: key '{key}' is not a Chinese character"):
        ConfusionSet.load(path)
