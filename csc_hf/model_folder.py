"""What a saved model folder holds and how it is found, local or on the Hub: :func:`is_local` tells a folder from a
Hub id, :func:`model_file` finds a file of either, :func:`check_model_folder` says what a local one lacks. Besides the
transformers files a folder may hold the decoding it was evaluated with (``csc_decoding.json``: :data:`DECODING_KEYS`,
checked by :func:`check_decoding`, the one check of every decoding setting; and ``csc_similar.json``, the similarity
prior's characters) and how ``csc-bench train`` trained it (:func:`training_record`)."""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .files import read_text, write_atomic
from .run_layout import DECODING_FILE, RUNS_DIR, SIMILAR_FILE, TOKENIZER_FILES, TRAIN_CONFIG, TRAINING_RECORD

HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")
DECODING_DEFAULTS = {"keep_bias": 0.0, "threshold": 0.0, "similarity_prior": 0.0}
"""The decoding settings of a tagging model and the Corrector's default of each (``tuning`` in the file: how they were
chosen)."""
DECODING_KEYS = tuple(DECODING_DEFAULTS)
NO_TOKENIZER = "no tokenizer files (a saved CSCTokenizer's tokenizer.json or a BERT vocab.txt)"


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


def model_file(path: str | Path, name: str) -> Path | None:
    """File ``name`` of a model: in a local folder (:func:`is_local`), or of a Hub id (downloaded, or from the cache
    offline); None when the model has none, its folder is gone or the Hub cannot be reached."""
    if is_local(path):
        file = Path(path).expanduser() / name
        return file if file.is_file() else None
    from transformers.utils import cached_file

    found = cached_file(
        str(path), name, _raise_exceptions_for_missing_entries=False, _raise_exceptions_for_connection_errors=False
    )
    return Path(found) if found else None


def check_model_folder(
    path: str | Path,
    what: str = "model folder",
    tokenizer: bool = True,
    trust_remote_code: bool = False,
    weights: bool = True,
) -> None:
    """Raise an error that names what is wrong with a local model folder before anything loads from it: the folder,
    its ``config.json`` (missing, not JSON, a ``model_type`` that transformers and csc_hf lack, or the model's own code
    without ``trust_remote_code``), (with ``weights``) its weights (:func:`check_weights`) or (with ``tokenizer``) its
    tokenizer files (missing, or a ``tokenizer.json`` that is not JSON). A caller that reads the config first to know
    the kind of model checks the weights and tokenizer once it knows it."""
    folder = Path(path)
    if not folder.is_dir():
        raise FileNotFoundError(
            f"{what} {folder} does not exist" if not folder.exists() else f"{what} {folder} is a file, not a folder"
        )
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(f"{what} {folder} holds no saved model (config.json)")
    check_model_type(folder / "config.json", _json_object(folder / "config.json"), trust_remote_code)
    if weights:
        check_weights(folder, what)
    if tokenizer and not any((folder / name).is_file() for name in TOKENIZER_FILES):
        raise FileNotFoundError(
            f"{what} {folder} holds no tokenizer files ({' or '.join(TOKENIZER_FILES)}); "
            "save the tokenizer there too (tokenizer.save_pretrained)"
        )
    if tokenizer and (folder / "tokenizer.json").is_file():
        _json_object(folder / "tokenizer.json")


def _json_object(path: Path) -> dict:
    """A JSON object file; anything else is a ValueError naming the file."""
    try:
        data = json.loads(read_text(path))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not JSON ({err.msg} at line {err.lineno}); save the model again") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


def check_model_type(path: Path, config: dict, trust_remote_code: bool = False) -> None:
    """The model of the ``config.json`` at ``path`` can be built: its ``model_type`` is one transformers (or csc_hf)
    knows, or it brings its own code (``auto_map``) and ``trust_remote_code`` allows running it."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    from . import modeling  # noqa: F401  (registers csc_hf's model type)

    model_type, own_code = config.get("model_type"), "AutoConfig" in (config.get("auto_map") or {})
    if model_type is None or model_type in CONFIG_MAPPING:
        return
    if not own_code:
        import transformers

        raise ValueError(
            f"{path}: model_type {model_type!r} is not a model type of transformers {transformers.__version__} or "
            "csc_hf (a model of a newer transformers? a typo?), and the folder brings no code of its own (auto_map)"
        )
    if not trust_remote_code:
        raise ValueError(
            f"{path}: model_type {model_type!r} comes with the folder's own code (auto_map); pass "
            "--trust-remote-code (trust_remote_code=True) to run it, for a folder you trust"
        )


def check_weights(path: str | Path, what: str = "model folder") -> None:
    """Raise a ValueError naming the folder when its weights cannot be what its config.json describes
    (:func:`weights_problem`)."""
    folder = Path(path)
    if problem := weights_problem(folder, read_json_object(folder / "config.json")):
        raise ValueError(f"{what} {folder}: {problem}")


WEIGHTS_DIGEST = "weights_sha256"
"""The key of an evaluation record that names the weights it scored (:func:`weights_digest`)."""


def weights_files(folder: Path) -> list[Path]:
    """The weights files of a local model folder, in name order: its safetensors files, else its pickled
    ``pytorch_model*.bin`` ones (none in a folder without weights)."""
    return sorted(folder.glob("*.safetensors")) or sorted(folder.glob("pytorch_model*.bin"))


def weights_digest(path: str | Path) -> str | None:
    """The sha256 of a local model folder's weights as saved (:func:`weights_files`, each file's name and bytes), so
    that scores can name the weights they belong to; None for a Hub id or a folder without weights. ``csc-bench push``
    copies the safetensors files as they are: the pushed folder has the same digest."""
    if not is_local(path):
        return None
    files = weights_files(Path(path).expanduser())
    if not files:
        return None
    digest = hashlib.sha256()
    for file in files:
        with open(file, "rb") as f:
            digest.update(f"{file.name}\0{hashlib.file_digest(f, 'sha256').hexdigest()}\0".encode())
    return digest.hexdigest()


EMBEDDINGS = re.compile(r"(^|\.)(word_embeddings|shared|embed_tokens)\.weight$")  # a model's token embeddings


def weights_problem(folder: Path, config: dict | None = None) -> str | None:
    """What is wrong with the safetensors weights in ``folder``, or None: a file cut short (a save that was killed, a
    partial download), or token embeddings whose shape is not the ``vocab_size`` x ``hidden_size`` (``d_model``) of
    ``config`` (weights and config of two different models)."""
    from safetensors import SafetensorError, safe_open

    for file in sorted(folder.glob("*.safetensors")):
        try:
            with safe_open(str(file), framework="np") as weights:
                shapes = {key: weights.get_slice(key).get_shape() for key in weights.keys()}
        except (SafetensorError, OSError) as err:
            return f"{file.name} is not a complete safetensors file ({err}); save or download the model again"
        if not config:
            continue
        width = config.get("embedding_size") or config.get("hidden_size") or config.get("d_model")  # ALBERT, BART
        expected = [config.get("vocab_size"), width]
        for key, shape in shapes.items():
            if EMBEDDINGS.search(key) and all(isinstance(n, int) for n in expected) and list(shape) != expected:
                return (
                    f"{file.name} holds {key} of shape {list(shape)}, but config.json says vocab_size x hidden size "
                    f"{expected}: the weights and config.json are of two different models; save them together again"
                )
    return None


def start_tokenizer_file(path: str | Path) -> Path | None:
    """The tokenizer file a checkpoint holds: ``tokenizer.json`` of a saved CSCTokenizer, ``vocab.txt`` of a BERT
    checkpoint, or None. Another tokenizer.json is not a character tokenizer: bert-base-chinese's and macbert's are
    WordPiece ones, and their ``tokenizer_config.json`` names no ``tokenizer_class``, so a tokenizer.json without one
    counts as a CSCTokenizer's only when its model is a WordLevel one (CSCTokenizer's)."""
    config_file = model_file(path, "tokenizer_config.json")
    named = (read_json_object(config_file) if config_file else {}).get("tokenizer_class")
    found = model_file(path, "tokenizer.json")
    if found and (named == "CSCTokenizer" or named is None and _model_type(found) == "WordLevel"):
        return found
    return model_file(path, "vocab.txt")


def _model_type(tokenizer_file: Path) -> str | None:
    """The ``model.type`` of a tokenizers ``tokenizer.json`` (WordLevel, WordPiece, BPE, ...), or None."""
    model = read_json_object(tokenizer_file).get("model")
    return model.get("type") if isinstance(model, dict) else None


def read_json_object(path: Path) -> dict:
    """A json object file, or {} when it is missing, does not parse or is no object (a folder's optional metadata is
    read so)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def training_record(model_dir: str | Path) -> dict:
    """What a model says about its training: ``csc_training.json`` (``csc-bench train``; a pushed model has it too)
    under the study's ``train_config.yaml`` (a local folder's); {} when neither is there or readable."""
    import yaml

    folder = Path(model_dir)
    try:
        config = yaml.safe_load((folder / TRAIN_CONFIG).read_text(encoding="utf-8")) if is_local(model_dir) else None
    except (OSError, yaml.YAMLError):
        config = None
    found = model_file(model_dir, TRAINING_RECORD)
    record = read_json_object(found) if found else {}
    return {**(config if isinstance(config, dict) else {}), **{k: v for k, v in record.items() if k != "log_history"}}


# ---- the decoding files --------------------------------------------------------------------------------------------


def check_number(name: str, value: Any) -> float:
    """`value` as a float, or an error naming the parameter `name` if it is not a finite real number."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def check_decoding(name: str, value: Any, label: str | None = None) -> float:
    """`value` of the decoding setting `name` (one of `DECODING_KEYS`) as a float, or an error naming `label` (default
    `name`): `keep_bias` any finite number, `threshold` in [0, 1], `similarity_prior` at least 0 (0: off)."""
    label = label or name
    value = check_number(label, value)
    if name == "threshold" and not 0.0 <= value <= 1.0:
        raise ValueError(f"{label} must be in [0, 1], got {value}")
    if name == "similarity_prior" and value < 0:
        raise ValueError(f"{label} must be at least 0 (0: off), got {value}")
    return value


def check_decoding_grid(name: str, values: Iterable[Any], label: str) -> None:
    """:func:`check_decoding` of each value of a grid to tune ``name`` over, named ``label``."""
    for value in values:
        check_decoding(name, value, label)


def _model_json(path: str | os.PathLike, name: str) -> tuple[Path, Any] | None:
    """The json file `name` of the model at `path` (a folder or a Hub id) as `(its path, its data)`, or None when
    the model has none; a file that is not JSON is a ValueError naming it."""
    found = model_file(path, name)  # None for a model built in memory too, or when its folder is gone
    if found is None:
        return None
    try:
        return found, json.loads(found.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(
            f"{found}: not a JSON file ({err}); delete it or write it again with csc-bench evaluate"
        ) from None


def load_similar(path: str | os.PathLike) -> dict[str, str] | None:
    """The similar characters saved with the model at `path` (`csc_similar.json`: each character mapped to a string
    of its similar characters, written by `Corrector.save_similar`), or None when it has none. A malformed file is a
    ValueError naming it."""
    if (saved := _model_json(path, SIMILAR_FILE)) is None:
        return None
    found, data = saved
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and len(k) == 1 and isinstance(v, str) for k, v in data.items()
    ):
        raise ValueError(f"{found}: expected a JSON object mapping single characters to strings of characters")
    return data


def load_decoding(path: str | os.PathLike) -> dict[str, float]:
    """The decoding saved with the model at `path` (a folder or a Hub id): `{"keep_bias": ..., "threshold": ...}`
    (and `similarity_prior` when it was saved) from its `csc_decoding.json`, or `{}` when it has none. A malformed
    file is a ValueError naming it."""
    if (saved := _model_json(path, DECODING_FILE)) is None:
        return {}
    found, data = saved
    if not isinstance(data, dict) or (unknown := sorted(set(data) - {*DECODING_KEYS, "tuning"})):
        raise ValueError(
            f"{found}: expected a JSON object with {', '.join(DECODING_KEYS)}"
            + (f", got the unknown keys {unknown}" if isinstance(data, dict) else "")
        )
    return {name: check_decoding(name, data[name], f"{found}: {name}") for name in DECODING_KEYS if name in data}


def saved_options(path: str | os.PathLike) -> dict[str, Any]:
    """The Corrector options saved with the model at `path`: its decoding and the prior's characters."""
    return {**load_decoding(path), "similar_characters": load_similar(path)}


def save_decoding(
    folder: str | os.PathLike, decoding: Mapping[str, float], tuning: Mapping[str, Any] | None = None
) -> Path:
    """Write `decoding` (`keep_bias`, `threshold`, `similarity_prior`) and how it was chosen (`tuning`: split, metric,
    grid, scores) to the model folder's `csc_decoding.json`, whole or not at all; returns its path."""
    if unknown := sorted(set(decoding) - set(DECODING_KEYS)):
        raise ValueError(f"unknown decoding settings {unknown}; choose from {list(DECODING_KEYS)}")
    data = {name: check_decoding(name, value) for name, value in decoding.items()}
    if tuning:
        data["tuning"] = dict(tuning)
    return write_atomic(Path(folder) / DECODING_FILE, json.dumps(data, indent=1, ensure_ascii=False) + "\n")


def copy_decoding(source: Path, target: Path) -> list[str]:
    """Copy the decoding files of a model folder (``csc_decoding.json``, ``csc_similar.json``) from the folder
    ``source`` to ``target``, each whole, where ``source`` has them and ``target``'s differ; returns the names copied.
    A study's evaluation stage keeps such a copy, and restores it to its model when it is skipped as finished: a grid
    changed and changed back leaves the model with the decoding its results were scored with."""
    copied = []
    for name in (DECODING_FILE, SIMILAR_FILE):
        if (source / name).is_file():
            text = (source / name).read_text(encoding="utf-8")
            if not (target / name).is_file() or (target / name).read_text(encoding="utf-8") != text:
                write_atomic(target / name, text, make_parents=True)
                copied.append(name)
    return copied
