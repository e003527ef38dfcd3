"""Hub-ready model folders: the saved model and tokenizer with a model card that holds its scores per test set."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

CARD_KEYS = ("char_cor_f1", "char_det_f1", "sent_cor_f1", "sent_det_f1", "fpr")


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
    if not (source / "config.json").is_file():
        raise FileNotFoundError(f"{source} holds no saved model (config.json)")
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
    """Result records from an evaluation json (a list) or a run's results.json (filtered by ``model``)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    records = data["records"] if isinstance(data, dict) else data
    return [r for r in records if model is None or r.get("model") == model]
