"""Shared fixtures: a small corpus cut from the embedded default, and small benchmark parameters for it."""

import contextlib
import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
if os.environ.get("PYTEST_XDIST_WORKER"):  # one of several test processes: one torch thread each (and their children)
    os.environ.setdefault("OMP_NUM_THREADS", "1")


FIRST = (
    "test_study.py",
    "test_training.py",
    "test_resume.py",
    "test_decoding.py",
    "test_training_sets.py",
    "test_report.py",
    "test_install.py",
)
"""Test files that run first, longest first: under xdist a file runs in one process (in collection order:
``--no-loadscope-reorder`` in setup.cfg), and a long one started last would leave the other process idle at the end
(test_study.py, with its module fixture the smoke study, is the longest by far; the rest of the files take less than
half a minute each)."""


def pytest_collection_modifyitems(config, items):
    order = {name: i for i, name in enumerate(FIRST)}
    items.sort(key=lambda item: order.get(item.path.name, len(FIRST)))  # stable: every file's tests keep their order


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
        corpus=str(small_corpus),
        n_validation=60,
        n_test=80,
        n_scontext=40,
        n_chars=400,
        n_unseen_keys=10,
        n_unseen_v_keys=20,
        unseen_key_pool=None,
    )


@contextlib.contextmanager
def torch_threads(n: int):
    """torch's intra-op threads set to ``n`` for a block (tiny models gain nothing from threads, and on a loaded machine
    every op would wait for the slowest one; the determinism tests need more than one)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def run_without_csc_hf(code: str, *args: str, cwd: Path):
    """Run ``code`` (with ``sys.argv[1:] == args``) in a clean interpreter where csc_hf cannot be imported, as a Hub
    user's: ``-I -S`` (no PYTHONPATH, no working directory, no site, so no editable-install hook), with this
    environment's site-packages added by hand (it fails if csc_hf is importable), offline, with its own
    remote-code module cache."""
    import subprocess
    import sys
    import sysconfig

    site = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    prelude = (
        f"import sys; sys.path += {site!r}; sys.argv[1:] = sys.argv[2:]\n"
        "import importlib.util\n"
        "if importlib.util.find_spec('csc_hf'): raise SystemExit('csc_hf is importable')\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_MODULES_CACHE": str(Path(cwd) / "modules")}
    return subprocess.run(
        [sys.executable, "-I", "-S", "-c", prelude + code, "-", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )


BERT_TINY = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64}
"""BertConfig fields of a tiny encoder for training tests (a preset's ``model``, a config's ``model_overrides``)."""

BART_TINY = {
    "d_model": 32,
    "encoder_layers": 1,
    "decoder_layers": 1,
    "encoder_attention_heads": 2,
    "decoder_attention_heads": 2,
    "encoder_ffn_dim": 64,
    "decoder_ffn_dim": 64,
}
"""BartConfig fields of a tiny BART for training tests."""


def levenshtein(a, b) -> int:
    """The edit distance of two sequences, by the textbook table (the reference the alignment tests check against)."""
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j - 1] + (x != y), previous[j] + 1, current[j - 1] + 1))
        previous = current
    return previous[-1]


def train_tiny(small_params: dict, out, **keys):
    """Train a tiny model in this process on the small benchmark (8-sentence batches, no evaluation) with the training
    config ``keys`` (task, max_steps, save keys, ...); the saved model folder."""
    from csc_hf.training import check_config, train

    config = {
        "model_overrides": BERT_TINY,
        "bench_params": small_params,
        "output_dir": str(out),
        "per_device_train_batch_size": 8,
        "use_cpu": True,
        "report_to": "none",
        "disable_tqdm": True,
        "seed": 1,
        "max_eval_samples": 8,
        "eval_strategy": "no",
        **keys,
    }
    return train(*check_config(config))
