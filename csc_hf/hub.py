"""Hub model repositories from saved model folders (:func:`prepare`: the weights, configs, the model's and the
tokenizer's remote code, no pickles or machine-local fields, and a card whose YAML holds the licence, base model,
datasets and a model-index of the scores per test set), and their upload (:func:`push`)."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Sequence
from pathlib import Path

from .benchmark.plan import TRAINING_FIELDS, BenchParams
from .files import OUTPUT_MARKER, check_output_folder, output_folder, read_text
from .markdown import score_text, table
from .model_folder import (
    DECODING_DEFAULTS,
    DECODING_KEYS,
    HUB_ID,
    WEIGHTS_DIGEST,
    check_model_folder,
    is_local,
    load_decoding,
    read_json_object,
    training_record,
)
from .run_layout import DONE, RECORDS, TRAINER_STATE
from .scoring import HEADLINE, UNDEFINABLE, score_name

LICENSES = (  # the licence ids the Hub's model card metadata accepts (huggingface.co/docs/hub/repositories-licenses)
    "apache-2.0",
    "mit",
    "openrail",
    "bigscience-openrail-m",
    "creativeml-openrail-m",
    "bigscience-bloom-rail-1.0",
    "bigcode-openrail-m",
    "afl-3.0",
    "artistic-2.0",
    "bsl-1.0",
    "bsd",
    "bsd-2-clause",
    "bsd-3-clause",
    "bsd-3-clause-clear",
    "c-uda",
    "cc",
    "cc0-1.0",
    "cc-by-2.0",
    "cc-by-2.5",
    "cc-by-3.0",
    "cc-by-4.0",
    "cc-by-sa-3.0",
    "cc-by-sa-4.0",
    "cc-by-nc-2.0",
    "cc-by-nc-3.0",
    "cc-by-nc-4.0",
    "cc-by-nd-4.0",
    "cc-by-nc-nd-3.0",
    "cc-by-nc-nd-4.0",
    "cc-by-nc-sa-2.0",
    "cc-by-nc-sa-3.0",
    "cc-by-nc-sa-4.0",
    "cdla-sharing-1.0",
    "cdla-permissive-1.0",
    "cdla-permissive-2.0",
    "wtfpl",
    "ecl-2.0",
    "epl-1.0",
    "epl-2.0",
    "etalab-2.0",
    "eupl-1.1",
    "eupl-1.2",
    "agpl-3.0",
    "gfdl",
    "gpl",
    "gpl-2.0",
    "gpl-3.0",
    "lgpl",
    "lgpl-2.1",
    "lgpl-3.0",
    "isc",
    "lppl-1.3c",
    "ms-pl",
    "mpl-2.0",
    "odc-by",
    "odbl",
    "openrail++",
    "osl-3.0",
    "postgresql",
    "ofl-1.1",
    "ncsa",
    "unlicense",
    "zlib",
    "pddl",
    "lgpl-lr",
    "unknown",
    "other",
)
TASK = {"type": "chinese-spelling-check", "name": "Chinese Spelling Check"}
BENCHMARK = "csc_bench"  # the dataset name of the generated benchmark (csc_hf.load_dataset("csc_bench", CONFIG))
DROPPED_FILES = (DONE, RECORDS, TRAINER_STATE)  # run bookkeeping, not part of a model
COPIED_SUFFIXES = (".json", ".safetensors", ".py", ".txt", ".model")  # weights, configs, remote code, vocabularies
VERBATIM = ("tokenizer.json",)  # serialized tokenizers: tokens, no paths; copied as they are
LOCAL_KEYS = ("is_local", "local_files_only", "_name_or_path", "name_or_path", "cache_dir", "_commit_hash")
PUSH = "csc-bench push"  # the command that prepares a Hub folder (and may replace one it prepared before)
REMOTE_TOKENIZER = Path(__file__).resolve().parent / "modeling" / "tokenization_csc.py"


def check_repo_id(repo_id: str, folder: str | Path | None = None) -> str:
    """``repo_id`` if it is a Hub repository id ``OWNER/NAME``, else a ValueError saying so, and (a path given where
    the id goes) that ``--folder`` chooses the local folder, written to ``folder`` by default, nothing uploaded
    without --upload."""
    if not HUB_ID.fullmatch(repo_id) or "/" not in repo_id:
        path = is_local(repo_id) and not HUB_ID.fullmatch(repo_id)
        raise ValueError(
            f"repo {repo_id!r}"
            + (" is a path, not a Hub repository id" if path else "")
            + ": give a Hub repository id OWNER/NAME, e.g. user/csc-all-gate (the card names the model so, and "
            "--upload uploads there); the Hub-ready folder is written locally"
            + (f" to {folder}" if folder else "")
            + " (--folder DIR chooses another), and nothing is uploaded without --upload"
        )
    return repo_id


def check_license(license: str) -> str:
    """``license`` if the Hub accepts it as a model card licence id, else a ValueError naming some."""
    if license not in LICENSES:
        raise ValueError(
            f"--license {license!r} is not a Hub licence id; use one of apache-2.0, mit, cc-by-4.0, "
            "cc-by-nc-4.0, gpl-3.0, ... or other (huggingface.co/docs/hub/repositories-licenses)"
        )
    return license


def is_machine_local(text: str) -> bool:
    """Whether ``text`` is an absolute path of this machine (``/x...``, ``~/x...``, ``C:\\x...``; a lone ``/`` is
    no path)."""
    return bool(re.match(r"(/|~/|[A-Za-z]:[\\/])[^\s/\\]", text))


def scrub(value):
    """``value`` (json data) without machine-local fields: the keys of ``LOCAL_KEYS`` dropped, absolute paths cut to
    their last part."""
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items() if k not in LOCAL_KEYS}
    if isinstance(value, (list, tuple)):
        return [scrub(v) for v in value]
    if isinstance(value, str) and is_machine_local(value):
        return Path(value).name
    return value


def scored_with(record: dict) -> dict | None:
    """The benchmark parameters a record was scored with (those that differ from the defaults): its own
    ``bench_params`` (``csc-bench evaluate`` and a run's results say them); None when unknown (never guessed from the
    model's training: a test set may have been built with other parameters)."""
    params = record.get("bench_params")
    return params if isinstance(params, dict) else None


def _dataset(record: dict) -> dict:
    """A record's model-index dataset: the csc_bench config and split with the parameters it was built with, or a
    data file (its name, without its folder)."""
    if "data" in record:
        name = scrub(str(record["config"]))
        return {"type": name, "name": name}
    dataset = {
        "type": BENCHMARK,
        "name": f"{BENCHMARK} {record['config']}/{record['split']}",
        "config": record["config"],
        "split": record["split"],
    }
    if params := scored_with(record):
        dataset["args"] = scrub(dict(params))
    return dataset


def card_metadata(
    name: str, records: list[dict], training: dict, license: str = "apache-2.0", seq2seq: bool = False
) -> dict:
    """The card's YAML front matter: licence, base model (a Hub ``init_from``), datasets, pipeline tag, tags, and a
    ``model-index`` with one result per scored test split (the csc_bench config and its parameters, the metrics
    under their names and convention)."""
    init_from = training.get("init_from")
    dataset_ids = [BENCHMARK] if training.get("use_benchmark", True) else []
    dataset_ids += [
        spec.removeprefix("datasets:")
        for spec in training.get("train_files") or []
        if isinstance(spec, str) and spec.startswith("datasets:") and not is_local(spec.removeprefix("datasets:"))
    ]
    variant = training.get("variant")
    meta = {
        "language": ["zh"],
        "license": check_license(license),
        "library_name": "transformers",
        "pipeline_tag": "text2text-generation" if seq2seq else "fill-mask",
        "tags": [
            "chinese-spelling-check",
            "spelling-correction",
            "csc_hf",
            *([variant] if isinstance(variant, str) else []),
        ],
    }
    if isinstance(init_from, str) and not is_local(init_from):
        meta["base_model"] = init_from
    if dataset_ids:
        meta["datasets"] = list(dict.fromkeys(dataset_ids))
    results = []
    for r in records:
        dataset = _dataset(r)
        convention = r["scores"].get("convention", "strict")
        aligned = {"alignment": True} if r.get("alignment") else {}  # insertions and deletions count as edits
        metrics = [
            {
                "type": key,
                "name": f"{score_name(key)} ({convention} convention{', by edit alignment' if aligned else ''})",
                "value": round(float(r["scores"][key]), 4),
                "args": {"convention": convention, **aligned, **{k: r[k] for k in DECODING_KEYS if k in r}},
            }
            for key in HEADLINE
            if r["scores"][key] is not None  # undefined on this set (no error-free sentence): no value to state
        ]
        results.append({"task": dict(TASK), "dataset": dataset, "metrics": metrics})
    if results:
        meta["model-index"] = [{"name": name.rsplit("/", 1)[-1], "results": results}]
    return meta


def model_card(
    name: str,
    records: list[dict],
    training: dict | None = None,
    decoding: dict | None = None,
    license: str = "apache-2.0",
    seq2seq: bool = False,
) -> str:
    """A model card: YAML front matter (:func:`card_metadata`) and markdown with how to load the model, its decoding
    settings, what it was trained on, and each test split's scores with intervals where present (or a line saying it
    has no scores yet)."""
    import yaml

    training, decoding = training or {}, decoding or {}
    meta = card_metadata(name, records, training, license, seq2seq)
    parts = [
        f"# {name}\n\nA Chinese Spelling Check model"
        + (f" (variant `{training['variant']}`)" if isinstance(training.get("variant"), str) else "")
        + " trained with [csc_hf](https://pypi.org/project/csc_hf/). Load it with\n\n"
        "```python\nfrom transformers import AutoModelForMaskedLM, AutoTokenizer\n"
        f"model = AutoModelForMaskedLM.from_pretrained({name!r}, trust_remote_code=True)\n"
        f"tokenizer = AutoTokenizer.from_pretrained({name!r}, trust_remote_code=True)  # a CSCTokenizer\n```\n\n"
        f"or, with csc_hf installed, `csc_hf.pipeline.Corrector.from_pretrained({name!r})` "
        f"(`csc-bench correct {name} TEXT`), which applies the decoding settings below.",
        "## Decoding\n\n"
        + (
            ", ".join(f"`{k}` = {v}" for k, v in decoding.items()) + " (saved with the model)."
            if decoding
            else "No decoding settings are saved with the model: the corrector's "
            f"defaults apply ({', '.join(f'`{k}` {v:g}' for k, v in DECODING_DEFAULTS.items())})."
        ),
        "## Training data\n\n" + _training_data(training),
    ]
    if records:
        rows = []
        for r in records:
            s = r["scores"]
            cells = []
            for key in HEADLINE:
                low, high = s.get(f"{key}_ci_low"), s.get(f"{key}_ci_high")
                cells.append(
                    score_text(s[key], "{:.3f}".format) + (f" [{low:.3f}, {high:.3f}]" if low is not None else "")
                )
            decoding = ", ".join(f"{k} {r[k]:g}" for k in DECODING_KEYS if k in r) or "-"
            name = scrub(str(r["config"])) if "data" in r else f"{r['config']}/{r['split']}"
            rows.append([name, decoding, *cells])
        scores = table(["test set", "decoding", *HEADLINE], rows)
        bench = [r for r in records if "data" not in r]
        params = {
            json.dumps(scrub(p), ensure_ascii=False, sort_keys=True) if p is not None else None
            for p in (scored_with(r) for r in bench)
        }
        said = (
            "not recorded (push with --results of a run or of csc-bench evaluate, or with the benchmark options the "
            "scores were computed with)"
            if None in params
            else "the defaults"
            if params == {"{}"}
            else " / ".join(sorted(params))
        )
        sources = sorted({r["bench_params_from"] for r in bench if isinstance(r.get("bench_params_from"), str)})
        said += f" ({'; '.join(sources)})" if sources and None not in params else ""
        overlap = [f"{row[0]} ({r['train_overlap']})" for row, r in zip(rows, records) if r.get("train_overlap")]
        parts.append(
            "## Scores\n\nBootstrap 95% intervals in brackets (csc_hf.scoring, "
            f"{records[0]['scores'].get('convention', 'strict')} convention)"
            + (
                f"; csc_bench parameters: {said}. The csc_bench test sets are generated by csc_hf: "
                '`csc_hf.load_dataset("csc_bench", CONFIG, **args)` builds one with the parameters above, and '
                "`datasets.load_dataset` reads it from the folder that `csc-bench export` writes"
                if bench
                else ""
            )
            + "."
            + (
                f" **Some scores count sentences the model trained on** (how many): {', '.join(overlap)}."
                if overlap
                else ""
            )
            + f"\n\n{scores}"
        )
    else:
        parts.append(
            "## Scores\n\nNo scores yet. Score the model with `csc-bench evaluate MODEL --configs test "
            "unseen_k --output results.json` and prepare the card again with `csc-bench push MODEL "
            f"{name} --results results.json`."
        )
    front = yaml.safe_dump(meta, allow_unicode=True, sort_keys=False)
    return f"---\n{front}---\n" + "\n\n".join(parts) + "\n"


def _training_data(training: dict) -> str:
    """What the model was trained on, in words (file names without their folders)."""
    if not training:
        return "Not recorded with the model."
    lines = []
    if training.get("use_benchmark", True):
        params = scrub(dict(training.get("bench_params") or {}))
        lines.append(
            f"- the `{BENCHMARK}` `train` config"
            + (f" with {json.dumps(params, ensure_ascii=False)}" if params else " with the default parameters")
        )
    for key in ("train_files", "validation_files"):
        specs = [scrub(s) for s in training.get(key) or [] if isinstance(s, str)]
        if specs:
            lines.append(f"- {key}: " + ", ".join(f"`{s}`" for s in specs))
    if isinstance(training.get("init_from"), str):
        lines.append(f"- started from `{scrub(training['init_from'])}`")
    return "\n".join(lines) or "Not recorded with the model."


def prepare(
    model_dir: str | Path,
    repo_id: str,
    folder: str | Path,
    records: list[dict],
    license: str = "apache-2.0",
    inputs: Sequence[str | Path | None] = (),
) -> Path:
    """Write a complete Hub model repository for the model in ``model_dir`` to ``folder``: its weights
    (safetensors), configs, remote code and tokenizer; no pickles (``training_args.bin``, optimizer, scheduler and
    random states), checkpoints or run bookkeeping; every json without machine-local fields (:func:`scrub`); the
    tokenizer's code with an ``auto_map``, so ``AutoTokenizer.from_pretrained(folder, trust_remote_code=True)`` is a
    ``CSCTokenizer`` without csc_hf; and the card (:func:`model_card`). The folder is written whole
    (:func:`csc_hf.files.output_folder`): new, empty or an earlier one of ``csc-bench push`` replaced, never a folder
    of other files nor one that holds the model or the other ``inputs``."""
    source, target = Path(model_dir), Path(folder)
    check_model_folder(source)
    check_license(license)
    if not any(source.glob("*.safetensors")):
        raise FileNotFoundError(
            f"model folder {source} has no safetensors weights (a pickled pytorch_model.bin is not "
            "pushed); save the model again with save_pretrained (safetensors is its default)"
        )
    files = _hub_files(source, repo_id, records, license)  # every file read and checked before anything is written
    check_output_folder(target, "--folder", inputs=[source, *inputs], replaces=PUSH)
    with output_folder(target, PUSH) as staging:
        for name, content in files.items():
            if isinstance(content, Path):
                shutil.copyfile(content, staging / name)  # a new file: the umask's mode
            else:
                (staging / name).write_text(content, encoding="utf-8")
    return target


def _hub_files(source: Path, repo_id: str, records: list[dict], license: str) -> dict[str, str | Path]:
    """The files of the Hub folder of the model in ``source``: by name, the text to write (each json without
    machine-local fields, the tokenizer's config with its ``auto_map``, the card) or the file to copy."""
    files: dict[str, str | Path] = {}
    csc_tokenizer = False
    for path in sorted(source.iterdir()):
        if not path.is_file() or path.suffix not in COPIED_SUFFIXES or path.name in DROPPED_FILES:
            continue
        if path.suffix == ".json" and path.name not in VERBATIM:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except ValueError as err:
                raise ValueError(f"{path}: not JSON ({err}); repair or remove it before pushing") from None
            if path.name == "tokenizer_config.json" and isinstance(data, dict):
                if csc_tokenizer := data.get("tokenizer_class") == "CSCTokenizer":  # its code goes with it
                    data["auto_map"] = {"AutoTokenizer": [None, f"{REMOTE_TOKENIZER.stem}.CSCTokenizer"]}
            files[path.name] = json.dumps(scrub(data), indent=2, ensure_ascii=False) + "\n"
        else:
            files[path.name] = path
    if csc_tokenizer:  # csc_hf's tokenizer code, not a copy the folder may hold
        files[REMOTE_TOKENIZER.name] = REMOTE_TOKENIZER
    seq2seq = read_json_object(source / "config.json").get("is_encoder_decoder") is True
    files["README.md"] = model_card(repo_id, records, training_record(source), load_decoding(source), license, seq2seq)
    return files


def upload_token() -> str:
    """The Hub token an upload uses, read as huggingface_hub reads it (``HF_TOKEN``, else the login that
    ``hf auth login`` stored), so that it never appears on a command line; none is a ValueError saying how to give
    one."""
    from huggingface_hub import get_token

    token = get_token()
    if not token:
        raise ValueError(
            "--upload needs a Hub write token: set HF_TOKEN in the environment or log in once with `hf auth login`"
        )
    return token


def push(folder: str | Path, repo_id: str, token: str) -> str:
    """Upload a prepared folder to the Hub (needs network and a write token); returns the commit URL."""
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    api.create_repo(repo_id, exist_ok=True)
    return str(api.upload_folder(folder_path=str(folder), repo_id=repo_id, ignore_patterns=[OUTPUT_MARKER]))


def load_records(path: str | Path) -> list[dict]:
    """Result records from an evaluation json (a list) or a run's results.json: its grid's records, then those of its
    augmentation and training-set stages (each record gets the run's ``bench_params`` unless it has its own). A file
    of another shape is a ValueError that names the file and what is wrong."""
    try:
        data = json.loads(read_text(path, "results file"))
    except json.JSONDecodeError as err:
        raise ValueError(f"results file {path}: not JSON ({err})") from None
    records = data.get("records") if isinstance(data, dict) else data
    if not isinstance(records, list):
        raise ValueError(
            f"results file {path}: expected a list of records or a run's results.json with a "
            f"'records' list, got {type(records).__name__}"
        )
    for stage in ("augmentation", "training_sets"):
        more = data.get(stage) if isinstance(data, dict) else None
        if isinstance(more, dict) and isinstance(more.get("records"), list):
            records = records + more["records"]
    for i, r in enumerate(records):
        problem = _record_problem(r)
        if problem:
            raise ValueError(f"results file {path}: record {i} {problem}")
    params = data.get("params") if isinstance(data, dict) else None
    bench_params = params.get("bench_params") if isinstance(params, dict) else None
    if isinstance(bench_params, dict):
        records = [{"bench_params": bench_params, **r} for r in records]
    return records


MODEL_KEYS = ("model", "seed", "augmentation", "training_set")
"""What tells the models of a run's records apart: the variant, the seed, and the augmentation stage's set or the
training set it trained on."""


def model_label(key: tuple) -> str:
    """A model of a run's records in words: ``bert (seed 0)``, ``bert (seed 1, augmentation sighan13)``, ``bart (seed
    0, training set edits)``."""
    model, seed, augmentation, training_set = key
    details = [f"seed {seed}"] if seed is not None else []
    details += [f"augmentation {augmentation}"] if augmentation is not None else []
    details += [f"training set {training_set}"] if training_set is not None else []
    return f"{model}" + (f" ({', '.join(details)})" if details else "")


def _training_fields(bench_params: object) -> tuple | None:
    """The parameters of the training data (:data:`~csc_hf.benchmark.plan.TRAINING_FIELDS`) that ``bench_params``
    give, defaults filled in (lists as tuples, as a json record holds them); None when they are no BenchParams."""
    try:
        params = BenchParams(**bench_params)
    except (TypeError, ValueError):
        return None
    values = (getattr(params, name) for name in TRAINING_FIELDS)
    return tuple(tuple(v) if isinstance(v, list | tuple) else v for v in values)


def _record_training_fields(record: dict) -> tuple | None:
    """:func:`_training_fields` of a run's record: its ``bench_params`` (those its test sets were built with), with the
    augmentation it names (the augmentation stage's records name it beside parameters without it)."""
    params = dict(record.get("bench_params") or {})
    if "augmentation" in record:
        params["augmentation"] = record["augmentation"]
    return _training_fields(params)


def model_records(
    records: list[dict],
    training: dict,
    model_name: str | None = None,
    model_seed: int | None = None,
    where: str = "the results file",
    digest: str | None = None,
) -> list[dict]:
    """The records of one model among ``records`` (a run's results hold every model's): those whose variant and seed
    (:data:`MODEL_KEYS`, where the records carry them) are the model's, as ``model_name`` / ``model_seed`` or else its
    ``training`` record (variant, seed) say, and, in a run's records, whose training data is the model's (the
    augmentation stage's and the training sets' models differ from the grid's only in it: the ``bench_params``'
    training fields of each record and of the model's training record). Records of one model (an evaluation json)
    are all its own. A choice that leaves no model, or several, is a ValueError that lists the models ``where``
    holds; so is a ``model_name`` that is not the trained variant, and a record of an LLM corrector's evaluation.
    Records that name the weights they scored (:data:`~csc_hf.model_folder.WEIGHTS_DIGEST`) are the model's only where
    that is its ``digest`` (:func:`~csc_hf.model_folder.weights_digest`); where every record names other weights,
    that is a ValueError too."""
    if llm := next((r["llm"] for r in records if isinstance(r.get("llm"), dict)), None):
        name = (llm.get("settings") or {}).get("model", "an LLM")
        raise ValueError(f"{where} holds the results of the LLM corrector {name}, not of a CSC model folder")
    if digest is not None:
        scored = [r.get(WEIGHTS_DIGEST) or digest for r in records]  # a record that names none may be the model's
        others = set(scored) - {digest}
        records = [r for r, d in zip(records, scored) if d == digest]
        if not records and others:
            named = ", ".join(sorted(d[:12] for d in others))
            raise ValueError(
                f"{where} holds the scores of other weights (sha256 {named}), not of this model folder's (sha256 "
                f"{digest[:12]}): evaluate this model (csc-bench evaluate MODEL --output FILE) and give that file"
            )
    variant = training.get("variant")
    if model_name is not None and isinstance(variant, str) and model_name != variant:
        raise ValueError(f"--model-name {model_name}: the model folder holds a {variant} model")
    bench = training.get("bench_params") if isinstance(training.get("bench_params"), dict) else {}
    wanted = {
        "model": model_name if model_name is not None else variant,
        "seed": model_seed if model_seed is not None else training.get("seed"),
    }
    carried = {key for r in records for key in MODEL_KEYS if key in r}
    data = _training_fields(bench) if training and carried else None  # a run's records: the training data decides too
    chosen = [
        r
        for r in records
        if all(r.get(key) == value for key, value in wanted.items() if key in carried and value is not None)
        and (data is None or _record_training_fields(r) == data)
    ]
    found = {tuple(r.get(key) for key in MODEL_KEYS) for r in chosen}
    if len(found) == 1:
        return chosen
    models = ", ".join(model_label(key) for key in dict.fromkeys(tuple(r.get(k) for k in MODEL_KEYS) for r in records))
    if not found:
        said = ", ".join(f"{key} {value}" for key, value in wanted.items() if value is not None) or "its choice"
        raise ValueError(f"{where} holds no records of this model ({said}); it holds {models}")
    fitting = ", ".join(model_label(key) for key in sorted(found, key=str))
    raise ValueError(
        f"{where} holds the records of {len(found)} models ({fitting}) and the model folder does not say which it "
        "is: give --model-name VARIANT and --model-seed SEED"
    )


def _record_problem(record: object) -> str | None:
    """What keeps ``record`` from being a result record (config, split and numeric scores), or None."""
    if not isinstance(record, dict):
        return f"is {type(record).__name__}, not a mapping"
    missing = [key for key in ("config", "split", "scores") if key not in record]
    if missing:
        return f"lacks {missing} (a record has config, split and scores)"
    digest = record.get(WEIGHTS_DIGEST)
    if digest is not None and not (isinstance(digest, str) and re.fullmatch(r"[0-9a-f]{64}", digest)):
        return f"has {WEIGHTS_DIGEST} {digest!r}, not a sha256 (64 hexadecimal digits)"
    scores = record["scores"]
    if not isinstance(scores, dict):
        return f"has scores of type {type(scores).__name__}, not a mapping"
    bad = [
        key
        for key in HEADLINE
        if not isinstance(value := scores.get(key, False), (int, float)) or isinstance(value, bool)
        if not (value is None and key in UNDEFINABLE)  # undefined on its set: None
    ]
    return f"has no numeric scores {bad}" if bad else None
