import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from csc_hf.corruption import (
    EDIT_KINDS,
    ERROR_TYPES,
    FUNCTION_CHARS,
    NO_ERROR,
    REDUNDANT_SOURCES,
    CandidateTable,
    drop,
    insert,
    mixed,
    pack,
    pair_counts,
    resubstitute,
    segment_positions,
    substitute,
    uniforms,
    unpack,
)
from csc_hf.edits import Edit, alignment, apply

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


# ---- errors that change the length ----------------------------------------------------------------------------------

MIXED = {"substitution": 0.5, "missing": 0.25, "redundant": 0.25}


def row_edits(corruption, i):
    e = corruption.edits.take(corruption.edits.sentence == i)
    return [
        Edit(EDIT_KINDS[k], int(p), chr(w) if w else None, chr(r) if r else None)
        for k, p, w, r in zip(e.kind, e.position, e.wrong, e.right)
    ]


def test_no_errors_at_zero_probability():
    target = pack(["我们今天很好", "天下"])
    for kinds in ({"missing": 1.0}, {"redundant": 1.0}, MIXED):
        c = mixed(target, TABLE, 0.0, 3, 0, kinds)
        assert unpack(c.source) == unpack(target) and len(c.edits) == 0


def test_drop_and_insert_at_full_probability():
    target = pack(["我们今天，很好", "天"])
    eligible = np.array([c != "，" for c in "我们今天，很好天"])
    assert unpack(drop(target, 1.0, seed=0, eligible=eligible).source) == ["，", "天"]  # never emptied: 天 is kept
    inserted = unpack(insert(target, TABLE, 1.0, seed=0, eligible=eligible).source)
    assert [len(s) for s in inserted] == [13, 2] and inserted[0][8] == "，"
    assert all(s[0::2] == t for s, t in zip(inserted[1:], ["天"]))


def test_rates_and_sources_of_redundant_characters():
    target = pack(["我天" * 20] * 2_000)
    dropped = drop(target, 0.2, seed=1)
    assert 0.19 < len(dropped.edits) / len(target.codes) < 0.21
    added = insert(target, TABLE, 0.2, seed=1)
    after = added.source.codes.reshape(-1)
    kinds = {EDIT_KINDS[k] for k in added.edits.kind}
    assert kinds == {"redundant"} and 0.19 < len(added.edits) / len(target.codes) < 0.21
    wrong = added.edits.wrong
    function = np.isin(wrong, [ord(c) for c in FUNCTION_CHARS]).mean()
    confusion = np.isin(wrong, [ord(c) for c in "找饿夭添"]).mean()  # every character here is a key
    assert abs(function - REDUNDANT_SOURCES["function"]) < 0.02
    assert abs(confusion - REDUNDANT_SOURCES["confusion"]) < 0.02
    typed = added.edits.type[np.isin(wrong, [ord(c) for c in "找饿夭添"])]
    assert {ERROR_TYPES[t] for t in typed} == {"phonetic", "graphic"} and len(after) > len(target.codes)
    # the kinds at their shares, in text of many characters; a missing and a redundant character next to each other
    # read as one substitution (about 5% of them at P_e = 5%; in "我天" * n, most would)
    rng = np.random.default_rng(0)
    alphabet = list("我天好") + [chr(0x4E00 + 200 + k) for k in range(60)]
    weights = np.array([1 / 6] * 3 + [0.5 / 60] * 60)
    varied = pack(["".join(rng.choice(alphabet, 40, p=weights)) for _ in range(5_000)])
    keys = np.isin(varied.codes, [ord(c) for c in "我天好"]).mean()
    kinds = np.bincount(mixed(varied, TABLE, 0.05, 1, 0, MIXED).edits.kind, minlength=3) / (0.05 * len(varied.codes))
    assert np.allclose(kinds, [0.5 * keys, 0.25, 0.25], atol=0.03)


def test_substitution_share_alone_is_the_papers_substitution():
    target = pack(["我们今天很好"] * 50 + ["天天向上我"] * 50)
    assert np.array_equal(
        mixed(target, TABLE, 0.3, 5, 2, {"substitution": 1.0}).source.codes,
        substitute(target, TABLE, 0.3, seed=5, stream=2).source.codes,
    )


def test_same_seed_same_bytes_other_seed_or_stream_other_errors():
    target = pack(["我们今天很好，你呢？"] * 200)
    a, b = mixed(target, TABLE, 0.2, 7, 6, MIXED), mixed(target, TABLE, 0.2, 7, 6, MIXED)
    assert np.array_equal(a.source.codes, b.source.codes) and np.array_equal(a.source.offsets, b.source.offsets)
    assert all(np.array_equal(getattr(a.edits, f), getattr(b.edits, f)) for f in ("sentence", "kind", "position"))
    assert not np.array_equal(mixed(target, TABLE, 0.2, 8, 6, MIXED).source.codes, a.source.codes)
    assert not np.array_equal(mixed(target, TABLE, 0.2, 7, 7, MIXED).source.codes, a.source.codes)


def test_bad_shares_and_probability():
    with pytest.raises(ValueError, match="shares="):
        mixed(pack(["我"]), TABLE, 0.1, 0, 0, {"missing": 0.5})
    with pytest.raises(ValueError, match="shares="):
        mixed(pack(["我"]), TABLE, 0.1, 0, 0, {"deleted": 1.0})
    with pytest.raises(ValueError, match=r"error_prob \(P_e\) = 2"):
        drop(pack(["我"]), 2, 0)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.text("我天好们的", min_size=1, max_size=12), min_size=1, max_size=8),
    st.integers(0, 2**32),
    st.floats(0, 1),
    st.sampled_from([{"missing": 1.0}, {"redundant": 1.0}, MIXED]),
)
def test_edits_are_the_alignment_and_rebuild_the_target(sentences, seed, p, kinds):
    target = pack(sentences)
    c = mixed(target, TABLE, p, seed, 0, kinds)
    assert np.all(np.diff(c.edits.sentence) >= 0)
    for i, (source, right) in enumerate(zip(unpack(c.source), sentences)):
        edits = row_edits(c, i)
        assert source and edits == alignment(source, right) and "".join(apply(source, edits)) == right
