"""Write the benchmark in the Hub layout: ``CONFIG/SPLIT-00000-of-00001.parquet`` per config and split, a README.md
whose YAML ``configs:`` lets plain ``datasets.load_dataset(folder, config)`` read it back, and ``csc_bench_params.json``
(every parameter, the hash of every input file and of every file written, also in the card), from which the export
can be rebuilt; and check an export against what this csc_hf generates (:func:`check_export`, ``csc-bench export DIR
--check``; :func:`stale_export` is its quick part, for readers of an export)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

import yaml

from .. import __version__, resources
from ..files import check_output_folder, output_folder
from .builder import load_dataset
from .cache import code_hash
from .configs import CONFIGS, check_configs
from .plan import BenchParams, input_changes, input_files

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
        record["files"] = {path.relative_to(staging).as_posix(): _sha256(path) for path in _data_files(staging)}
        metadata, body = card_parts()
        header = yaml.safe_dump({"configs": entries, **metadata}, allow_unicode=True, sort_keys=False)
        card = f"---\n{header}---\n{body}"
        (staging / "README.md").write_text(card.rstrip("\n") + "\n" + record_section(record), encoding="utf-8")
        (staging / RECORD).write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return target


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _data_files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.parquet"))


def _record(directory: str | Path) -> dict[str, Any]:
    """The record of the export in ``directory``; a folder without one is no export (a FileNotFoundError)."""
    path = Path(directory) / RECORD
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{directory} holds no {RECORD}: not a csc-bench export") from None
    except ValueError as err:
        raise ValueError(f"{path}: not JSON ({err})") from None
    if not isinstance(record, dict) or not isinstance(record.get("params"), dict):
        raise ValueError(f"{path}: not the record of a csc-bench export (no params)")
    return record


def _params(record: dict[str, Any]) -> dict[str, Any]:
    return {**record["params"], "probs": tuple(record["params"].get("probs", BenchParams.probs))}


def stale_export(directory: str | Path) -> list[str]:
    """What may make the export in ``directory`` differ from what this csc_hf generates with its recorded
    parameters, without reading its data: another generating code (its code hash), an input file that changed or is
    missing here. [] for an export that is current, or for a folder that is no export."""
    if not (Path(directory) / RECORD).is_file():
        return []
    record = _record(directory)
    generator = record.get("generator") or {}
    found = []
    if generator.get("code_hash") != code_hash():
        found.append(
            f"it was generated by csc_hf {generator.get('csc_hf', '?')} (code {generator.get('code_hash', '?')}), "
            f"this csc_hf {__version__} generates with code {code_hash()}"
        )
    return found + input_changes(record.get("inputs"), input_files(BenchParams(**_params(record))))


def check_export(directory: str | Path, cache_dir: str | None = None) -> list[str]:
    """Everything that makes the export in ``directory`` differ from what this csc_hf generates with the parameters
    it records, or [] when it is the same: a data file edited, missing or added since the export (the recorded
    sha256s); an input file that changed (:func:`stale_export`); and, where the generating code changed, each split
    whose rows this csc_hf builds differently (it builds every config, cached in ``cache_dir``)."""
    import pyarrow.parquet as pq

    folder, record = Path(directory), _record(directory)
    found = []
    recorded = record.get("files")
    if not isinstance(recorded, dict):
        found.append(f"{RECORD} has no file hashes (an older csc_hf exported it): its files cannot be checked")
        recorded = {}
    present = {path.relative_to(folder).as_posix(): path for path in _data_files(folder)}
    intact = {}  # the files as exported (all of them when the record has no hashes): their rows are compared
    for name in sorted(set(recorded) | set(present)):
        if name not in present:
            found.append(f"{name} is missing")
        elif recorded and name not in recorded:
            found.append(f"{name} was not exported")
        elif recorded and _sha256(present[name]) != recorded[name]:
            found.append(f"{name} changed since the export")
        else:
            intact[name] = present[name]
    stale = stale_export(directory)
    if inputs := [problem for problem in stale if problem.startswith("its input")]:
        return found + inputs  # the data cannot be rebuilt as it was: nothing to compare it with
    if stale:
        params = _params(record)
        for config in record.get("configs") or []:
            for split, built in load_dataset("csc_bench", config, cache_dir=cache_dir, **params).items():
                path = intact.get(f"{config}/{split}-00000-of-00001.parquet")
                if path is None:
                    continue  # said above
                exported = pq.read_table(path).replace_schema_metadata(None)
                if not exported.equals(built.data.table.replace_schema_metadata(None)):
                    found.append(f"{config}/{split}: this csc_hf generates other rows ({stale[0]})")
    return found
