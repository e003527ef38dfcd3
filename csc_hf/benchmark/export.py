"""Write the benchmark in the Hub layout: ``CONFIG/SPLIT-00000-of-00001.parquet`` per config and split, a README.md
whose YAML ``configs:`` lets plain ``datasets.load_dataset(folder, config)`` read it back, and ``csc_bench_params.json``
(every parameter and the hash of every input file, also in the card), from which the export can be rebuilt."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

import yaml

from .. import __version__, resources
from ..files import check_output_folder, output_folder
from .builder import code_hash, load_dataset
from .configs import CONFIGS, check_configs
from .plan import BenchParams, input_files

RECORD = "csc_bench_params.json"

CARD = resources.dataset_card()


def card_parts() -> tuple[dict[str, Any], str]:
    """The shipped dataset card (``dataset_scripts/csc_bench/README.md``): its YAML header (licence, language, tags,
    ...) and its text; an export adds its ``configs`` to that header."""
    text = CARD.read_text(encoding="utf-8")
    if not text.startswith("---\n"):
        raise ValueError(f"{CARD}: a dataset card must start with a YAML header between --- lines")
    _, header, body = text.split("---\n", 2)
    return yaml.safe_load(header), body


def build_record(configs: Sequence[str], params: BenchParams) -> dict[str, Any]:
    """How an export was made: its configs, every benchmark parameter, each input file's hash and the generator."""
    values = {f.name: getattr(params, f.name) for f in fields(BenchParams)}
    return {
        "configs": list(configs),
        "params": {**values, "probs": list(values["probs"])},
        "inputs": input_files(params),
        "generator": {"csc_hf": __version__, "code_hash": code_hash()},
    }


def record_section(record: dict[str, Any]) -> str:
    """The card's section that records how the export was made."""
    rebuild = (
        'record = json.load(open("csc_bench_params.json"))\n'
        'csc_hf.load_dataset("csc_bench", CONFIG, **record["params"])'
    )
    params = json.dumps(record, indent=1, ensure_ascii=False)
    return (
        "\n## This export\n\nBuilt with these parameters from input files of these sha256 hashes (also in "
        "`csc_bench_params.json`); with the same files and code hash, this rebuilds any config byte for byte:\n\n"
        f"```python\nimport json, csc_hf\n{rebuild}\n```\n\n```json\n{params}\n```\n"
    )


def export(directory: str | Path, configs: Sequence[str] = tuple(CONFIGS), overwrite: bool = False, **params) -> Path:
    """Build ``configs`` with ``params`` (fields of :class:`BenchParams` and `load_dataset` options such as
    ``cache_dir``) and write them to ``directory`` whole (:func:`csc_hf.files.output_folder`), with the record of how
    they were made (:func:`build_record`) in ``csc_bench_params.json`` and in the card. An existing ``directory`` is
    an error, or with ``overwrite`` replaced when it is an earlier export (never a folder of other files)."""
    target = Path(directory)
    if target.exists() and not overwrite:
        raise FileExistsError(f"{target} exists; pass overwrite=True (--overwrite) to replace it")
    check_configs(configs)
    names = {f.name for f in fields(BenchParams)}
    bench = BenchParams(**{k: v for k, v in params.items() if k in names})
    bench.validate()
    check_output_folder(target, "DIRECTORY", inputs=bench.local_inputs(), replaces="csc-bench export")
    record = build_record(configs, bench)
    with output_folder(target, "csc-bench export") as staging:
        entries = []
        for name in configs:
            data = load_dataset("csc_bench", name, **params)
            files = []
            for split, ds in data.items():
                rel = f"{name}/{split}-00000-of-00001.parquet"
                (staging / name).mkdir(parents=True, exist_ok=True)
                ds.to_parquet(str(staging / rel))
                files.append({"split": split, "path": rel})
            entries.append({"config_name": name, "data_files": files})
        if input_files(bench) != record["inputs"]:
            raise RuntimeError("an input file changed during the export; export again")
        metadata, body = card_parts()
        header = yaml.safe_dump({"configs": entries, **metadata}, allow_unicode=True, sort_keys=False)
        card = f"---\n{header}---\n{body}"
        (staging / "README.md").write_text(card.rstrip("\n") + "\n" + record_section(record), encoding="utf-8")
        (staging / RECORD).write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return target
