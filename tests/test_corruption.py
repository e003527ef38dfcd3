import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from csc_hf.corruption import (
    NO_ERROR,
    CandidateTable,
    pack,
    pair_counts,
    resubstitute,
    segment_positions,
    substitute,
    uniforms,
    unpack,
)

TABLE = CandidateTable.from_pairs(
    [
        ("我", "找", "graphic"),
        ("我", "饿", "phonetic"),
        ("天", "夭", "graphic"),
        ("天", "添", "phonetic"),
        ("好", "号", "both"),
    ]
)


@given(st.lists(st.text(min_size=1, max_size=20), max_size=20))
def test_pack_roundtrip(sentences):
    assert unpack(pack(sentences)) == sentences


def test_segment_positions():
    assert segment_positions(np.array([5, 0, 9]), np.array([2, 3, 0])).tolist() == [5, 6, 0, 1, 2]


def test_zero_and_one_probability():
    target = pack(["我们今天很好", "没有键"])
    assert unpack(substitute(target, TABLE, 0.0, seed=1).source) == unpack(target)
    full = substitute(target, TABLE, 1.0, seed=1)
    src = unpack(full.source)
    assert src[0][1:3] == "们今" and src[0][0] in "找饿" and src[0][3] in "夭添" and src[0][5] == "号"
    assert src[1] == "没有键"
    assert full.error_types.tolist()[:6] == [full.error_types[0], -1, -1, full.error_types[3], -1, 2]


def test_bad_probability():
    with pytest.raises(ValueError, match=r"error_prob \(P_e\) = 1.5 is outside \[0, 1\]"):
        substitute(pack(["我"]), TABLE, 1.5, seed=0)


def test_rate_and_uniform_choice():
    target = pack(["我天" * 50_000])
    c = substitute(target, TABLE, 0.2, seed=7)
    rate = c.error_mask.mean()
    assert 0.19 < rate < 0.21
    counts = pair_counts(target, c)
    assert abs(counts[("我", "找")] / counts[("我", "饿")] - 1) < 0.05


def test_independent_of_batching_and_nested_over_p():
    sentences = ["我们今天很好"] * 300 + ["天天向上我"] * 200
    whole = substitute(pack(sentences), TABLE, 0.3, seed=5, chunk=7)
    again = substitute(pack(sentences), TABLE, 0.3, seed=5)
    assert np.array_equal(whole.source.codes, again.source.codes)
    low = substitute(pack(sentences), TABLE, 0.1, seed=5)
    assert np.all(whole.error_mask[low.error_mask])  # the 10% errors are a subset of the 30% errors
    assert not np.array_equal(substitute(pack(sentences), TABLE, 0.3, seed=6).source.codes, whole.source.codes)


def test_uniforms_are_uniform():
    u = uniforms(0, 0, np.arange(200_000), 0)
    assert 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.005
    assert np.histogram(u, bins=10)[0].min() > 19_000


def test_resubstitute_changes_every_error_to_another_candidate():
    target = pack(["我们天天好", "我我我我"])
    first = substitute(target, TABLE, 1.0, seed=2)
    second, ok = resubstitute(target, first.source, TABLE, seed=2)
    assert ok.tolist() == [False, True]  # 好 has a single candidate
    old, new = first.source.codes, second.source.codes
    sentence_two = slice(5, 9)
    assert np.all(new[sentence_two] != old[sentence_two]) and np.all(new[sentence_two] != target.codes[sentence_two])
    assert set(unpack(second.source)[1]) <= {"找", "饿"}
    assert np.all(second.error_types[sentence_two] != NO_ERROR)


def test_duplicate_pairs_rejected():
    with pytest.raises(ValueError, match="occurs twice"):
        CandidateTable.from_pairs([("我", "找", "graphic"), ("我", "找", "phonetic")])


@settings(max_examples=30)
@given(st.integers(0, 2**32), st.floats(0, 1))
def test_only_keys_change_and_lengths_hold(seed, p):
    target = pack(["今天我很好，你呢？", "天下"])
    c = substitute(target, TABLE, p, seed=seed)
    changed = c.source.codes != target.codes
    assert np.array_equal(changed, c.error_mask)
    assert set(chr(x) for x in target.codes[changed]) <= {"我", "天", "好"}
    assert [len(s) for s in unpack(c.source)] == [len(s) for s in unpack(target)]
