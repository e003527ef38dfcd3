"""Shared fixtures: a small corpus cut from the embedded default, and small benchmark parameters for it."""

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


@pytest.fixture(scope="session")
def small_corpus(tmp_path_factory):
    """A text file of 800 People's Daily sentences (one per line)."""
    from csc_hf.corpus import clean_sentences, peoples_daily_lines

    sentences = clean_sentences(peoples_daily_lines())[:800]
    path = tmp_path_factory.mktemp("corpus") / "small.txt"
    path.write_text("\n".join(sentences) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def small_params(small_corpus):
    """Benchmark parameters sized for the small corpus (seconds to build)."""
    return dict(
        corpus=str(small_corpus), n_validation=60, n_test=80, n_scontext=40, n_chars=400,
        n_unseen_keys=10, n_unseen_v_keys=20, unseen_key_pool=None,
    )
