"""The built confusion set S is kept on disk, so that a new process reads it instead of building it again."""

import logging

import datasets.config
import pytest

import csc_hf.benchmark.plan as plan_mod
from csc_hf.benchmark.plan import BenchParams, Plan, input_fingerprint


@pytest.fixture
def fresh_plan(small_params, tmp_path, monkeypatch):
    """A new Plan each call (no memo: what a new process sees), with the datasets cache in ``tmp_path``."""
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path)

    def make(**changes):
        params = BenchParams(**{**small_params, **changes})
        return Plan(params, input_fingerprint(params))

    return make


def _no_build(*args, **kwargs):
    raise AssertionError("S was built again instead of read from the cache")


def test_a_second_process_reads_s_instead_of_building_it(fresh_plan, monkeypatch):
    built = fresh_plan().confusion
    path = fresh_plan().confusion_file
    assert path.is_file()
    monkeypatch.setattr(plan_mod, "attested_readings", _no_build)
    monkeypatch.setattr(plan_mod, "build_confusion_set", _no_build)
    again = fresh_plan().confusion
    assert again == built and again.pairs() == built.pairs() and again.fingerprint == built.fingerprint


def test_other_parameters_or_inputs_key_another_file(fresh_plan):
    plan = fresh_plan()
    path = plan.confusion_file
    other = fresh_plan(max_graphic=2)
    assert other.confusion_file != path
    assert fresh_plan(n_test=60).confusion_file == path  # S does not depend on the test pool's size
    assert fresh_plan(train_error_prob=0.2).confusion_file == path
    assert fresh_plan(min_len=12).confusion_file != path  # other sentences
    assert other.confusion != plan.confusion  # each its own S, never the other's file


def test_another_glyph_font_keys_another_s_and_another_build(fresh_plan, small_params, monkeypatch):
    """S's graphic pairs come from glyph bitmaps, and the default font differs between machines (Debian's Noto Sans
    CJK SC, else the pip package's TC): a machine with another font keys another S, another datasets build, and an
    export's record shows the difference."""
    import csc_hf.confusion as confusion_mod
    from csc_hf.benchmark.plan import input_files

    params = BenchParams(**small_params)
    path, fingerprint, record = fresh_plan().confusion_file, input_fingerprint(params), input_files(params)
    font = record["characters"]["glyph_font"]
    assert font["sha256"] and font["file"].lower().startswith("notosanscjk")  # a record of the bytes, not the path
    other = {**font, "name": "Noto Sans CJK SC", "sha256": "0" * 64}
    monkeypatch.setattr(confusion_mod, "default_font_record", lambda: other)
    assert fresh_plan().confusion_file != path
    assert input_fingerprint(params) != fingerprint
    now = input_files(params)
    assert now["characters"]["glyph_font"] == other and now["corpus"] == record["corpus"]


def test_an_unreadable_cache_file_is_built_again(fresh_plan, caplog):
    built = fresh_plan().confusion
    plan = fresh_plan()
    path = plan.confusion_file
    path.write_text('{"not a', encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        assert plan.confusion == built
    assert "unreadable cached confusion set" in caplog.text and str(path) in caplog.text
    assert fresh_plan().confusion == built  # the file was written again
