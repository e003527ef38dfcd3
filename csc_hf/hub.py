"""Hub-ready model folders (the saved model and tokenizer with a model card that holds its scores per test set), and
what tells a local model folder from a Hub id."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

CARD_KEYS = ("char_cor_f1", "char_det_f1", "sent_cor_f1", "sent_det_f1", "fpr")
RUNS_DIR = "runs"  # where csc_hf writes its runs and models by default
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt")  # a CSCTokenizer saves the first; a BERT checkpoint has the second


def is_local(name: str | Path) -> bool:
    """Whether a model name must be a local folder rather than a Hub id, so that a missing one is an error at once
    (the Hub is never tried for it). It is local when it exists; when it starts with ``/``, ``.`` or ``~``; when it
    has more than one ``/`` or cannot be a Hub id at all (a Hub id is ``name`` or ``owner/name``); and when it is
    ``FOLDER/NAME`` with ``FOLDER`` an existing folder or ``runs`` (where csc_hf writes its models)."""
    text = str(name)
    if Path(text).exists() or text.startswith(("/", ".", "~")) or not HUB_ID.fullmatch(text):
        return True
    first, slash, _ = text.partition("/")
    return bool(slash) and (first == RUNS_DIR or Path(first).is_dir())


def check_model_folder(path: str | Path, what: str = "model folder", tokenizer: bool = True) -> None:
    """Raise a FileNotFoundError that names what a local model folder lacks: the folder, its ``config.json``, or
    (with ``tokenizer``) its tokenizer files."""
    folder = Path(path)
    if not folder.is_dir():
        raise FileNotFoundError(f"{what} {folder} does not exist" if not folder.exists() else f"{what} {folder} is a file, not a folder")
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(f"{what} {folder} holds no saved model (config.json)")
    if tokenizer and not any((folder / name).is_file() for name in TOKENIZER_FILES):
        raise FileNotFoundError(f"{what} {folder} holds no tokenizer files ({' or '.join(TOKENIZER_FILES)}); "
                                "save the tokenizer there too (tokenizer.save_pretrained)")


def model_card(name: str, records: list[dict]) -> str:
    """A model card (YAML header + markdown) listing each test split's scores, with intervals where present."""
    rows = []
    for r in records:
        s = r["scores"]
        cells = []
        for key in CARD_KEYS:
            low, high = s.get(f"{key}_ci_low"), s.get(f"{key}_ci_high")
            cells.append(f"{s[key]:.3f}" + (f" [{low:.3f}, {high:.3f}]" if low is not None else ""))
        rows.append(f"| {r['config']}/{r['split']} | " + " | ".join(cells) + " |")
    table = "\n".join([f"| test set | {' | '.join(CARD_KEYS)} |", "|---" * (len(CARD_KEYS) + 1) + "|", *rows])
    return (
        "---\nlanguage: [zh]\nlibrary_name: transformers\ntags: [chinese-spelling-check, csc_hf]\n"
        "pipeline_tag: fill-mask\n---\n"
        f"# {name}\n\nA Chinese Spelling Check model trained with csc_hf. Load it with\n\n"
        "```python\nfrom transformers import AutoModelForMaskedLM, AutoTokenizer\n"
        f"model = AutoModelForMaskedLM.from_pretrained({name!r}, trust_remote_code=True)\n"
        f"tokenizer = AutoTokenizer.from_pretrained({name!r}, trust_remote_code=True)\n```\n\n"
        "or, with csc_hf installed, `csc_hf.pipeline.Corrector.from_pretrained(...)`.\n\n"
        "## Scores on the csc_bench test sets\n\nBootstrap 95% intervals in brackets (csc_hf.scoring, strict convention).\n\n"
        f"{table}\n"
    )


def prepare(model_dir: str | Path, repo_id: str, folder: str | Path, records: list[dict]) -> Path:
    """Copy the model folder (without checkpoints or training state) to ``folder`` and write its card."""
    source, target = Path(model_dir), Path(folder)
    check_model_folder(source)
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("checkpoint-*", "done.json", "train_config.yaml", "records.json"))
    (target / "README.md").write_text(model_card(repo_id, records), encoding="utf-8")
    return target


def push(folder: str | Path, repo_id: str, token: str) -> str:
    """Upload a prepared folder to the Hub (needs network and a write token); returns the commit URL."""
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    api.create_repo(repo_id, exist_ok=True)
    return str(api.upload_folder(folder_path=str(folder), repo_id=repo_id))


def load_records(path: str | Path, model: str | None = None) -> list[dict]:
    """Result records from an evaluation json (a list) or a run's results.json (filtered by ``model``). A file of
    another shape is a ValueError that names the file and what is wrong."""
    from .corpus import read_text

    try:
        data = json.loads(read_text(path, "results file"))
    except json.JSONDecodeError as err:
        raise ValueError(f"results file {path}: not JSON ({err})") from None
    records = data.get("records") if isinstance(data, dict) else data
    if not isinstance(records, list):
        raise ValueError(f"results file {path}: expected a list of records or a run's results.json with a "
                         f"'records' list, got {type(records).__name__}")
    for i, r in enumerate(records):
        problem = _record_problem(r)
        if problem:
            raise ValueError(f"results file {path}: record {i} {problem}")
    return [r for r in records if model is None or r.get("model") == model]


def _record_problem(record: object) -> str | None:
    """What keeps ``record`` from being a result record (config, split and numeric scores), or None."""
    if not isinstance(record, dict):
        return f"is {type(record).__name__}, not a mapping"
    missing = [key for key in ("config", "split", "scores") if key not in record]
    if missing:
        return f"lacks {missing} (a record has config, split and scores)"
    scores = record["scores"]
    if not isinstance(scores, dict):
        return f"has scores of type {type(scores).__name__}, not a mapping"
    bad = [key for key in CARD_KEYS if not isinstance(scores.get(key), (int, float)) or isinstance(scores.get(key), bool)]
    return f"has no numeric scores {bad}" if bad else None
