"""Tests of csc_hf.edits: the minimum-edit alignment, its reading rules and its agreement with gold."""

import pytest
from conftest import levenshtein
from hypothesis import given, settings
from hypothesis import strategies as st

from csc_hf.edits import Edit, align, alignment, apply, positional, shifted_matches, slots


def agreement(edits, gold):
    by_slot = dict(zip(slots(gold), gold))
    return sum((s in by_slot) + (s in by_slot and by_slot[s].right == e.right) for s, e in zip(slots(edits), edits))


def test_kinds_at_source_positions():
    assert alignment("我们去学", "我们去学校") == [Edit("missing", 4, None, "校")]
    assert alignment("我们们去学校", "我们去学校") == [Edit("redundant", 2, "们", None)]
    assert alignment("我们去学效", "我们去学校") == [Edit("substitution", 4, "效", "校")]
    assert alignment("去学", "我们去学") == [Edit("missing", 0, None, "我"), Edit("missing", 0, None, "们")]
    assert slots(alignment("去学", "我们去学")) == [("missing", 0, 0), ("missing", 0, 1)]
    assert alignment([1, 2, 3, 5], [1, 3, 5, 4]) == [Edit("redundant", 1, 2, None), Edit("missing", 4, None, 4)]


def test_equal_lengths_are_read_by_position_when_that_is_a_minimum():
    # three substitutions cost 3; reading "bca" as a deletion and an insertion costs 2, so it is read that way
    assert alignment("abc", "xyz") == positional("abc", "xyz")
    assert alignment("abc", "bca") == [Edit("redundant", 0, "a", None), Edit("missing", 3, None, "a")]
    assert alignment("ab", "ba") == positional("ab", "ba")  # a tie: by position


def test_gold_decides_between_equal_readings():
    source, reference = "ABBC", "ABC"
    gold = alignment(source, reference)
    assert gold == [Edit("redundant", 2, "B", None)]
    # "ABD": a B removed and C -> D, or B -> D and C removed; the gold reading is the first
    assert alignment(source, "ABD") == [Edit("substitution", 2, "B", "D"), Edit("redundant", 3, "C", None)]
    assert alignment(source, "ABD", gold) == [Edit("redundant", 2, "B", None), Edit("substitution", 3, "C", "D")]


@settings(max_examples=400, deadline=None)
@given(st.text("abc", max_size=12), st.text("abc", max_size=12))
def test_a_minimum_alignment_that_rebuilds_the_target(source, target):
    edits = alignment(source, target)
    assert "".join(apply(source, edits)) == target
    assert len(edits) == levenshtein(source, target)
    assert [e.position for e in edits] == sorted(e.position for e in edits)
    substitutions, indels = align(source, target)
    assert substitutions == [(e.position, e.right) for e in edits if e.kind == "substitution"]
    assert indels == len(edits) - len(substitutions)
    hamming = sum(a != b for a, b in zip(source, target))
    if len(source) == len(target) and hamming == levenshtein(source, target):
        assert edits == positional(source, target)


@settings(max_examples=400, deadline=None)
@given(st.text("abc", max_size=10), st.text("abc", max_size=10), st.text("abc", max_size=10))
def test_alignment_to_gold_agrees_most_among_minimum_alignments(source, reference, prediction):
    gold = alignment(source, reference)
    edits = alignment(source, prediction, gold)
    assert "".join(apply(source, edits)) == prediction and len(edits) == levenshtein(source, prediction)
    if prediction == reference:
        assert edits == gold
    hamming = sum(a != b for a, b in zip(source, prediction))
    if len(source) != len(prediction) or hamming != levenshtein(source, prediction):
        assert agreement(edits, gold) >= agreement(alignment(source, prediction), gold)


def test_long_inputs_stay_exact():
    source = "一二三四五六七八九十" * 20
    assert alignment(source, source[::-1]) and len(alignment(source, source[::-1])) == levenshtein(source, source[::-1])
    assert alignment("ab", "x" * 500)[-1] == Edit("missing", 2, None, "x")
    assert alignment("", "") == [] and alignment("ab", "") == [
        Edit("redundant", 0, "a", None),
        Edit("redundant", 1, "b", None),
    ]


@pytest.mark.parametrize("source,target", [("abc", "abXc"), ("我们们", "我们"), ("", "ab")])
def test_apply_inverts_alignment(source, target):
    assert "".join(apply(source, alignment(source, target))) == target


@settings(max_examples=400, deadline=None)
@given(st.text("abc", min_size=1, max_size=12), st.data())
def test_few_shifted_matches_mean_reading_by_position_is_a_minimum(source, data):
    target = data.draw(st.text("abcd", min_size=len(source), max_size=len(source)))
    edits = positional(source, target)
    if shifted_matches(source, edits) <= 1:
        assert len(edits) == levenshtein(source, target)


def test_aligned_edits_of_a_free_rewrite():
    from csc_hf.edits import aligned_edits

    assert aligned_edits("我门去北京", "我 们 去 北 京") == [Edit("substitution", 1, "门", "们")]  # a decoder's spaces
    assert aligned_edits("我门去北京", "我们去了北京") == [
        Edit("substitution", 1, "门", "们"),
        Edit("missing", 3, None, "了"),
    ]
    assert aligned_edits("我门去 北京。", "我们北京") == [
        Edit("substitution", 1, "门", "们"),
        Edit("redundant", 2, "去", None),
        Edit("redundant", 6, "。", None),  # the space stays put
    ]
    assert aligned_edits("我们", "我们了") == [Edit("missing", 2, None, "了")]  # at the end: len(source)
    assert aligned_edits("", "多余") == [Edit("missing", 0, None, "多"), Edit("missing", 0, None, "余")]
    assert aligned_edits("我们", "") == [Edit("redundant", 0, "我", None), Edit("redundant", 1, "们", None)]
    for source, prediction in (
        ("我门去 北京。", "我们北京"),
        ("他 们", "她们们啊"),
        ("abc", "xaybz"),
    ):  # they rebuild it
        rebuilt = "".join(apply(list(source), aligned_edits(source, prediction))).replace(" ", "")
        assert rebuilt == prediction.replace(" ", "")
