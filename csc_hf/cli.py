"""`csc-bench` (also `python -m csc_hf`): parse arguments, call the library, print. No logic lives here.

A failing command prints one line, ``csc-bench CMD: error: MESSAGE``, and exits with 2 (130 when interrupted, with
how to resume where the command resumes); ``--debug`` (or ``CSC_HF_DEBUG=1``) prints the traceback too. Results go
to stdout, progress and warnings to stderr (:mod:`csc_hf.logging`: info by default, ``-q`` warnings only, ``-v``
debug too).
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
import traceback
import typing
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path

from . import hardware, resources
from .benchmark.configs import CONFIGS, CONFUSION_SUBSETS, TEST_CONFIGS, check_configs, splits_of
from .benchmark.plan import BenchParams
from .confusion import FORMATS
from .data import DATA_KINDS, is_data_spec, spec_paths
from .dataset_stats import CONTEXT_N
from .edits import EDIT_KINDS
from .fields import field_types, from_text
from .files import check_output, check_output_folder, write_atomic
from .llm.policy import DEFAULT_LENGTH_POLICY, LENGTH_POLICIES
from .logging import ENV as VERBOSITY_ENV
from .logging import env_verbosity, get_logger, verbosity
from .markdown import score_text
from .model_folder import (
    DECODING_KEYS,
    check_decoding,
    check_decoding_grid,
    check_model_folder,
    is_local,
    training_record,
    weights_digest,
)
from .precision import PRECISIONS, check_bf16_weights
from .run_layout import REPORT_FILE, RESULTS_CSV, RUNS_DIR
from .scoring import HEADLINE
from .stats import RESAMPLES, check_resamples
from .system_scores import ALIGNMENT_MODES, PREDICTION_FORMATS

logger = get_logger(__name__)


class _BenchOption(argparse.Action):
    """Store a benchmark parameter and note that the command line gave it (:func:`given_bench_params`)."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        namespace.bench_given = [*getattr(namespace, "bench_given", []), self.dest]


def add_bench_params(parser: argparse.ArgumentParser) -> None:
    """One option per field of BenchParams (configs are data: a new field is a new option)."""
    group = parser.add_argument_group("benchmark parameters (see csc_hf.benchmark.BenchParams)")
    hints = field_types(BenchParams)
    for f in fields(BenchParams):
        hint, option = hints[f.name], "--" + f.name.replace("_", "-")
        common = {"type": from_text(hint), "default": f.default, "action": _BenchOption}
        if typing.get_origin(hint) is tuple:
            group.add_argument(option, nargs="+", help=f.metadata["help"], **common)
            continue
        group.add_argument(option, help=f"{f.metadata['help']} (default: {f.default})", **common)


def bench_params(args: argparse.Namespace) -> dict:
    """The benchmark parameters given on the command line that differ from the defaults."""
    return BenchParams.changed(vars(args))


def given_bench_params(args: argparse.Namespace) -> dict:
    """The benchmark parameters given on the command line, default values too (lists as tuples)."""
    given = dict.fromkeys(getattr(args, "bench_given", []))
    return {k: tuple(v) if isinstance(v, list) else v for k, v in ((k, getattr(args, k)) for k in given)}


DEBUG_ENV = "CSC_HF_DEBUG"  # set to 1: a failing command prints its traceback (as --debug does)
EXPECTED = (ValueError, OSError)  # bad inputs: their message says it all; any other type is named in the line
WRAPPERS = ("DatasetGenerationError",)  # errors that only wrap their cause: the cause is reported


def error_line(err: BaseException) -> str:
    """An error as one line: a wrapper's cause instead of the wrapper, a multi-line message folded, a KeyError's
    message unquoted, and the type named (with how to see the traceback) unless it is a bad-input kind."""
    while type(err).__name__ in WRAPPERS and err.__cause__ is not None:
        err = err.__cause__
    message = err.args[0] if isinstance(err, KeyError) and len(err.args) == 1 else str(err)
    message = " ".join(part.strip() for part in str(message).splitlines() if part.strip()) or type(err).__name__
    if isinstance(err, EXPECTED):
        return message
    return f"{type(err).__name__}: {message} (--debug or {DEBUG_ENV}=1 shows the traceback)"


def _close_bars() -> None:
    """Close the progress bars an interrupt left open (the Trainer's), so that the interrupt's line comes last."""
    from tqdm import tqdm
    from tqdm.auto import tqdm as auto_tqdm

    for bar in {*getattr(tqdm, "_instances", ()), *getattr(auto_tqdm, "_instances", ())}:
        bar.close()


def run_guarded(prog: str, command: Callable[[], int | None], debug: bool = False, resume: str = "") -> int:
    """Run ``command``; its failure becomes one line on stderr (``PROG: error: ...``) and exit status 2, an interrupt
    one line (``PROG: interrupted``, then ``resume``: how the command resumes, never a traceback) and exit status 130.
    With ``debug`` (or ``CSC_HF_DEBUG=1``) a failure's traceback is printed first."""
    debug = debug or os.environ.get(DEBUG_ENV, "") not in ("", "0")
    try:
        return command() or 0
    except KeyboardInterrupt:
        _close_bars()
        print(f"{prog}: interrupted" + (f": {resume}" if resume else ""), file=sys.stderr)
        return 130
    except Exception as err:
        if debug:
            traceback.print_exc()
        print(f"{prog}: error: {error_line(err)}", file=sys.stderr)
        return 2


def _print_table(title: str, rows: dict[str, dict]) -> None:
    columns = list(next(iter(rows.values())))
    first = max(map(len, rows)) + 2
    widths = [max(len(c), *(len(str(r[c])) for r in rows.values())) + 2 for c in columns]
    print(f"\n{title}")
    print(" " * first + "".join(f"{c:>{w}}" for c, w in zip(columns, widths)))
    for name, row in rows.items():
        print(f"{name:<{first}}" + "".join(f"{row[c]!s:>{w}}" for c, w in zip(columns, widths)))


def cmd_build(args: argparse.Namespace) -> None:
    """build benchmark configs and print their statistics

    Build the configs (cached by datasets) and print the confusion-set and per-config statistics; with --augmentation
    also the augmentation's leak filter (pairs kept, removed as keys of S_unseen^k or pairs of S_unseen^v) and the
    augmented train split's statistics; with --train-edit-shares, the train config's splits as drawn with them."""
    from .benchmark import load_dataset, plan_for

    params = bench_params(args)
    bench = BenchParams(**params)
    if args.output:
        check_output_folder(args.output, "--output", inputs=[p for p in bench.local_inputs() if p.is_dir()])
    plan, augmentation = plan_for(bench), bench.augmentation  # plan.params lacks it: no part of a plan
    configs = args.configs or plan.params.available_configs()
    for name in configs:
        load_dataset("csc_bench", name, cache_dir=args.cache_dir, **params)  # builds (or finds) the cached files
    stats = plan.division.stats(plan.seen)
    _print_table(f"Confusion sets (corpus {plan.params.corpus}: {len(plan.sentences)} sentences)", stats)
    rows = {}
    for name in configs:
        for spec in splits_of(name, plan.params.probs):
            rows[f"{name}/{spec.split}"] = plan.examples(spec, train_edit_shares=bench.train_edit_shares).stats()
    summary = {"confusion_sets": stats, "configs": rows}
    if augmentation:
        augmented = plan.augmented(augmentation)
        train = augmented.examples.stats()
        summary["augmentation"] = {"name": augmentation, "leaks": augmented.leaks, "train/train": train}
        _print_table(f"Augmentation ({augmentation})", {"leak filter": augmented.leaks})
        rows = {**rows, f"train/train (augmented: {augmentation})": train}
    _print_table("Configs", rows)
    if args.output:
        out = Path(args.output)
        write_atomic(out / "stats.json", json.dumps(summary, indent=1) + "\n", make_parents=True)
        for name in (n for n in CONFUSION_SUBSETS if not n.startswith("S_train_")):  # S and its division
            plan.subset(name).save(out / f"{name}.json")
        if augmentation:
            augmented.confusion.save(out / "S_train_augmented.json")
        print(f"\nwrote {out}/stats.json and the confusion sets S*.json")


def cmd_export(args: argparse.Namespace) -> None:
    """write configs in the Hub layout (parquet + README.md), or check an export

    Write parquet files and a dataset card that plain datasets.load_dataset(DIR, CONFIG) reads (offline), with the
    record of how they were made (csc_bench_params.json); --check DIR says whether an export still holds what this
    csc_hf generates with its recorded parameters (its files unchanged, its inputs unchanged, the same rows)."""
    from .benchmark.export import check_export, export

    if args.check:
        if args.configs or given_bench_params(args):
            raise ValueError("--check verifies DIRECTORY as its record says: give no configs or benchmark options")
        if problems := check_export(args.directory, cache_dir=args.cache_dir):
            raise ValueError(f"{args.directory} differs from what this csc_hf generates: {'; '.join(problems)}")
        print(f"{args.directory} holds what this csc_hf generates with its recorded parameters")
        return
    configs = args.configs or BenchParams(**bench_params(args)).available_configs()
    path = export(args.directory, configs, overwrite=args.overwrite, cache_dir=args.cache_dir, **bench_params(args))
    print(f"exported {', '.join(configs)} to {path}; load with datasets.load_dataset({str(path)!r}, CONFIG)")


def cmd_confusion(args: argparse.Namespace) -> None:
    """build, import, inspect or divide a confusion set

    build: S from the corpus; import: read a file and write it as --format; inspect: statistics and --show KEYS; divide:
    the paper's division of --input (default: the benchmark's S), exactly as the benchmark divides it: the same --seed,
    --n-unseen-keys, --n-unseen-v-keys, --unseen-v-share and --unseen-key-pool, keys ranked by their frequency in
    --corpus."""
    from .benchmark import plan_for
    from .confusion import ConfusionSet

    if args.output and args.action == "divide":
        check_output_folder(args.output, "--output", inputs=[args.input])
    elif args.output:
        check_output(args.output, inputs=[args.input])
    plan = plan_for(BenchParams(**bench_params(args)))
    if args.action == "build" or (args.action == "divide" and not args.input):
        cs = plan.confusion
    elif args.input:
        cs = ConfusionSet.load(args.input, args.input_format)
    else:
        raise ValueError(f"give --input FILE: the confusion set to {args.action}")
    if args.action == "divide":
        division = plan.divide(cs)  # the benchmark's own division: same parameters, same corpus key frequencies
        _print_table("Division", division.stats())
        if args.output:
            for name, part in (
                ("S_unseen_k", division.unseen_k),
                ("S_unseen_v", division.unseen_v),
                ("S_train", division.train),
            ):
                part.save(Path(args.output) / f"{name}.json")
            print(f"wrote {args.output}/S_unseen_k.json, S_unseen_v.json, S_train.json")
        return
    _print_table("Confusion set", {"S": cs.stats()})
    for key in args.show or []:
        print(f"  {key}: " + " ".join(f"{c}({t[0]})" for c, t in cs.get(key, {}).items()))
    if args.output:
        cs.save(args.output, args.format)
        print(f"wrote {args.output} ({args.format})")


def cmd_run(args: argparse.Namespace) -> None:
    """the whole study: build, pretrain, train the variants, evaluate, report

    Run a preset end to end; finished stages are skipped, interrupted ones resume."""
    from .study import OverHours, Preset, Study

    # A default preset may hand a new run of the whole grid to its `smaller` one where its forecast is over its hours
    # (OverHours), and a later run of the default (a resume, --finished-only) goes where an earlier one went: the run
    # folder follows the preset, so only without --output.
    fallback = args.preset is None and args.output is None and args.variants is None and args.seeds is None
    if args.preset is None:
        path = hardware.compute_path()
        args.preset = resources.default_preset(path)
        logger.info("preset: %s, the default on this CPU (compute path %s; name one with --preset)", args.preset, path)
    handed_over = None  # the run folder of the preset that handed this run to its smaller one
    while True:
        preset = Preset.load(args.preset)
        study = Study(
            preset,
            args.output or str(Path(RUNS_DIR) / preset.name),
            finished_only=args.finished_only,
            estimate=not args.no_estimate,
            processes=args.processes,
            worker=args.worker,
            fallback=fallback,
            forecast_from=handed_over,  # its probe's step times serve where they timed this one's steps
        )
        if fallback and (handed_to := study.handed_to()) and not study.begun():
            args.preset, handed_over = handed_to, study.run_dir
            logger.info("preset: %s, which an earlier run of %s handed itself to here", handed_to, preset.name)
            continue
        try:
            results = study.run(args.variants, args.seeds)  # a part of the grid shares the stages; results cover all
            break
        except OverHours as over:
            args.preset, handed_over = preset.smaller, study.run_dir
            logger.info(
                "preset: %s instead, sized for slower CPUs: %s (%s keeps its build: --preset %s resumes it)",
                args.preset,
                over,
                study.run_dir,
                preset.name,
            )
    print(f"results: {results}, {results.with_name(RESULTS_CSV)}; report: {results.with_name(REPORT_FILE)}")


class _KeysHelp(argparse.Action):
    """``csc-bench train --keys``: every key of a training config with its help (from the dataclasses), then exit."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        from .training import keys_help

        print(keys_help())
        parser.exit()


def cmd_train(args: argparse.Namespace) -> None:
    """train one model from a YAML config (as python -m csc_hf.train)

    Train from a trainer_configs YAML; key=value pairs override its keys (a value is read as YAML, and stays text where
    the key takes text: eval_strategy=no). The whole config is checked first."""
    from .training import load_config, train

    arguments = load_config(args.config, args.overrides)
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:  # one process: torch's threads, and advice on a busy machine
        hardware.set_threads()
    train(*arguments)


def _check_model(model: str, trust_remote_code: bool = False) -> None:
    if is_local(model):
        # its weights and tokenizer files are checked once its kind is known (an LLM's tokenizer files differ)
        check_model_folder(model, tokenizer=False, trust_remote_code=trust_remote_code, weights=False)


def _local(model: str) -> list[str]:
    """The model's folder when it is local (an input the outputs must not destroy), else nothing."""
    return [model] if is_local(model) else []


def _option(name: str) -> str:
    """The command-line option of a setting: ``keep_bias`` -> ``--keep-bias``."""
    return f"--{name.replace('_', '-')}"


def cmd_evaluate(args: argparse.Namespace) -> None:
    """score a saved model on test configs or test files

    Correct every split of the given test configs (built with the benchmark parameters the model was trained with:
    those of its training record, each option given here winning) or data files and score them with bootstrap
    intervals, with the sentences corrected per second; a test sentence the model trained on is an error unless
    --allow-train-overlap. Several --keep-bias / --similarity-prior values are tuned on the validation split, or on
    --validation. The model is any checkpoint folder or Hub id: csc_hf's models, a BertForMaskedLM (e.g. with
    bert-base-chinese's vocab.txt), any seq2seq model (generated, then aligned to the source) or any causal language
    model (an LLM corrector: prompted, its answers scored under the length policy; the table adds the share of answers
    whose length changed and the failed sentences, and any contamination of a test set follows it). The missing,
    redundant and mixed configs (and data whose pairs change lengths) are scored by edit alignment, and there a
    seq2seq model or a tagging model with an edit head keeps its insertions and deletions (another tagging model cannot
    make them)."""
    check_resamples(args.bootstrap, "--bootstrap")
    _check_precision(args)
    for name in ("keep_bias", "similarity_prior"):
        check_decoding_grid(name, getattr(args, name) or (), _option(name))
    data = [name for name in args.configs if is_data_spec(name)]
    try:
        check_configs([n for n in args.configs if n not in data], "test config", TEST_CONFIGS, where="--configs")
    except ValueError as err:
        raise ValueError(f"{err}; or a test data file or folder that exists") from None
    tuned = any(grid is not None and len(set(grid)) > 1 for grid in (args.keep_bias, args.similarity_prior))
    if args.validation is not None and not tuned:
        raise ValueError("--validation tunes the decoding: give several --keep-bias or --similarity-prior values")
    read = [*_local(args.model), *(p for spec in [*data, args.validation] if spec for p in spec_paths(spec))]
    check_output(args.output, inputs=read)
    if args.predictions_dir is not None:
        check_output_folder(args.predictions_dir, "--predictions-dir", inputs=read)
    _check_model(args.model, args.trust_remote_code)
    llm = _llm_options(args)
    from .evaluation import EvaluationOptions, evaluate_model, scoring_params

    params, source = scoring_params(args.model, given_bench_params(args))
    options = EvaluationOptions(
        bench_params=params,
        bootstrap=args.bootstrap,
        keep_bias_grid=args.keep_bias,
        similarity_prior_grid=args.similarity_prior,
        save_decoding=tuned,
        trust_remote_code=args.trust_remote_code,
        precision=args.precision,
        bf16_weights=args.bf16_weights,
        llm=llm,
        predictions_dir=None if args.predictions_dir is None else Path(args.predictions_dir),
        validation=args.validation,
        allow_train_overlap=args.allow_train_overlap,
        **({"batch_size": args.batch_size} if args.batch_size is not None else {}),
    )
    records = evaluate_model(args.model, args.configs, options)
    for r in records:
        if "bench_params" in r:
            r["bench_params_from"] = source
    if records and "llm" in records[0]:
        from .llm import describe_flag, describe_settings

        title = describe_settings(records[0]["llm"]["settings"])
    else:
        title = ", ".join(f"{name} {records[0][name]:g}" for name in DECODING_KEYS) if records else "-"
        title += "; tuned and saved with the model" if tuned else ""
    rows = {(r["config"] if "data" in r else f"{r['config']}/{r['split']}"): _evaluation_row(r) for r in records}
    if rows:
        _print_table(f"{args.model} ({title})", rows)
    for flag in (flag for r in records for flag in r.get("llm", {}).get("contamination", ())):
        print(describe_flag(flag))
    if len(data) < len(args.configs):
        print(
            f"\ncsc_bench parameters: {json.dumps(params, ensure_ascii=False) if params else 'the defaults'} ({source})"
        )
    if args.output:
        write_atomic(args.output, json.dumps(records, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {args.output}")


def _evaluation_row(record: dict) -> dict:
    """One row of evaluate's table: the headline scores, an LLM's share of answers whose length changed and its
    failed sentences, and the sentences corrected per second."""
    row = {k: score_text(record["scores"][k], lambda v: f"{v:.4f}") for k in HEADLINE}
    if llm := record.get("llm"):
        row.update(length_changed=round(llm["length_changed_share"], 4), failed=sum(llm["failed"].values()))
    per_s = record.get("sentences_per_s")
    return {**row, "sentences/s": "-" if per_s is None else f"{per_s:.1f}"}


def _json_object(text: str) -> dict:
    """An option's JSON object (``--chat-template-kwargs``)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise argparse.ArgumentTypeError(f"not JSON ({err}): {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(
            f"expected a JSON object such as '{{\"enable_thinking\": false}}', got {text!r}"
        )
    return value


LLM_ARGS = {  # the LLM options on the command line: the dest of each, and the LLMCorrector argument it sets
    "template": "template",
    "length_policy": "length_policy",
    "temperature": "temperature",
    "top_p": "top_p",
    "generation_seed": "seed",
    "max_new_tokens_ratio": "max_new_tokens_ratio",
    "max_new_tokens_extra": "max_new_tokens_extra",
    "backend": "backend",
    "chat_template_kwargs": "chat_template_kwargs",
    "training_data": "training_data",
}


def _llm_options(args: argparse.Namespace) -> dict:
    """The LLM options given on the command line (those not given keep the LLM corrector's defaults)."""
    given = {key: getattr(args, dest) for dest, key in LLM_ARGS.items() if getattr(args, dest, None) is not None}
    if args.no_chat_template:
        given["use_chat_template"] = False
    return given


def cmd_score(args: argparse.Namespace) -> None:
    """score any system's predictions file against a benchmark split or any CSC data

    Both precision conventions, sentence and character level, FPR, the breakdown by error type and seen/unseen pair
    (and by edit kind when missing and redundant characters are scored by alignment), bootstrap intervals, length
    changes, and a paired test against --baseline; a markdown table on stdout."""
    from .system_scores import score_files, scores_markdown

    report = score_files(
        args.predictions,
        args.references,
        fmt=args.format,
        baseline=args.baseline,
        baseline_format=args.baseline_format,
        train=args.train,
        params=bench_params(args),
        bootstrap=args.bootstrap,
        seed=args.bootstrap_seed,
        cache_dir=args.cache_dir,
        output=args.output,
        alignment_mode=args.alignment,
        length_policy=args.length_policy,
    )
    print(scores_markdown(report), end="")
    if args.output:
        print(f"\nwrote {args.output}")


def cmd_correct(args: argparse.Namespace) -> None:
    """correct sentences with a saved model

    Correct TEXT arguments, or a file with one sentence a line (lines end at \\n; output line i answers input line
    i). The model is any model evaluate takes, a causal language model too (an LLM corrector)."""
    from .files import read_lines
    from .llm.corrector import LLMCorrector
    from .pipeline import Corrector

    if bool(args.texts) == bool(args.file):
        raise ValueError("give TEXT arguments or --file, not both" if args.texts else "give TEXT arguments or --file")
    _check_precision(args)
    for number, text in enumerate(args.texts, 1):
        if "\n" in text or "\r" in text:
            raise ValueError(
                f"TEXT {number} holds a line break: a TEXT is one sentence, answered by one output line; give "
                "several lines with --file"
            )
    for name in DECODING_KEYS:
        if getattr(args, name) is not None:
            check_decoding(name, getattr(args, name), _option(name))
    size = os.path.getsize(args.file) if args.file and os.path.isfile(args.file) else None  # the output's, about
    check_output(args.output, inputs=[args.file, *_local(args.model)], size=size)
    texts = args.texts or read_lines(args.file, "--file")  # lines end at \n only: output line i answers input line i
    _check_model(args.model, args.trust_remote_code)
    given = {name: getattr(args, name) for name in DECODING_KEYS if getattr(args, name) is not None}
    given.update(_llm_options(args))
    if args.batch_size is not None:
        given["batch_size"] = args.batch_size
    if args.edit_kinds is not None:
        given["edit_kinds"] = args.edit_kinds
    if args.bf16_weights:
        given["bf16_weights"] = True
    corrector = Corrector.from_pretrained(
        args.model, trust_remote_code=args.trust_remote_code, precision=args.precision, **given
    )
    if args.file and isinstance(corrector, LLMCorrector):  # a prompt too long is named by its line
        corrector.check_lengths(texts, f"--file {args.file}, line")
    lines = corrector.correct(texts)
    if not lines:
        logger.warning("--file %s holds no line: nothing to correct", args.file)
    if args.output:
        write_atomic(args.output, "".join(line + "\n" for line in lines))
    elif lines:
        print("\n".join(lines))


def cmd_push(args: argparse.Namespace) -> None:
    """prepare a Hub-ready model folder with a model card; upload it with --upload

    Write a complete Hub model repository: the weights (safetensors, no pickles), configs and the remote code of the
    model and its tokenizer (AutoTokenizer / AutoModelForMaskedLM with trust_remote_code=True, no csc_hf needed),
    without machine-local fields, and a card whose YAML holds the licence, base model, datasets and a model-index of
    the scores; upload it only with --upload (the token of HF_TOKEN or of `hf auth login`, as huggingface_hub reads
    it; never on the command line, where the process list shows it). With a run's results.json, the card takes the
    model's own records (its weights, as the records name them, or its variant and seed, as its folder records them);
    results of other weights are an error. The benchmark options state the
    parameters the --results were scored with where the records do not (a run's results.json and csc-bench
    evaluate's output state them)."""
    from . import hub

    if args.token is not None:
        raise ValueError(
            "--token is not taken: a token on the command line shows in the process list; set HF_TOKEN or log in "
            "once with `hf auth login`, then give --upload"
        )
    hub.check_license(args.license)
    folder = args.folder or f"{args.model.rstrip('/')}-hub"
    hub.check_repo_id(args.repo, folder)
    token = hub.upload_token() if args.upload else None  # before any work: a missing token is named now
    chosen = {"--model-name": args.model_name, "--model-seed": args.model_seed}
    if not args.results and (named := [option for option, value in chosen.items() if value is not None]):
        raise ValueError(f"{' and '.join(named)} choose records of --results; give --results too")
    records = hub.load_records(args.results) if args.results else []
    if records:  # a run's results hold every model's: this model's own
        training, digest = training_record(args.model), weights_digest(args.model)
        records = hub.model_records(records, training, *chosen.values(), args.results, digest)
    given = bench_params(args)  # the parameters the results were scored with, when the records do not say
    if given and not records:
        raise ValueError(f"benchmark options {sorted(given)} describe the scores of --results; give --results too")
    if given:
        for r in records:
            if isinstance(r.get("bench_params"), dict) and BenchParams.changed(r["bench_params"]) != given:
                raise ValueError(
                    f"--results {args.results} says its {r['config']}/{r['split']} was scored with the benchmark "
                    f"parameters {r['bench_params']}, the options say {given}: drop the options"
                )
        records = [r if "data" in r else {**r, "bench_params": given} for r in records]
    folder = hub.prepare(args.model, args.repo, folder, records, args.license, inputs=[args.results])
    print(
        f"prepared {folder} ({len(records)} scored test sets in its card)"
        if records
        else f"prepared {folder} (no scores in its card yet: give --results, e.g. the output of csc-bench evaluate)"
    )
    if token:
        print(f"pushed: {hub.push(folder, args.repo, token)}")


def cmd_analyze(args: argparse.Namespace) -> None:
    """dataset statistics, coverage and context overlap of any CSC data

    Table-9 statistics of each DATA; with --train / --confusion, how much of its errors they cover and how much context
    it shares with --train."""
    from .data import analyze_data

    specs = [*args.data, *(args.train or ())]
    check_output(args.output, inputs=[*(p for spec in specs for p in spec_paths(spec)), *(args.confusion or ())])
    from .report import analysis_markdown

    result = analyze_data(
        args.data, args.train or (), args.confusion or (), args.ngram, bench_params(args), args.cache_dir
    )
    print(analysis_markdown(result), end="")
    if args.output:
        write_atomic(args.output, json.dumps(result, indent=1, ensure_ascii=False) + "\n")
        print(f"\nwrote {args.output}")


def cmd_report(args: argparse.Namespace) -> None:
    """analyse a run's results.json and write report.md with plots

    Write RUN_DIR/report.md (tables, plots, and a verdict on each of the paper's conclusions)."""
    from .report import write_report
    from .results import analyze_results, load_results

    analysis = analyze_results(load_results(args.run_dir))
    print(f"wrote {write_report(args.run_dir, analysis)}")
    if analysis.not_evidence:
        print(f"  the numbers mean nothing ({analysis.not_evidence}): the verdicts are not evidence")
    for number, conclusion in analysis.conclusions.items():
        print(f"  {number}. {conclusion.claim} {conclusion.verdict}")


class CommandParser(argparse.ArgumentParser):
    """A subcommand's parser: options and positional arguments may come in any order (``csc-bench correct M
    --similarity-prior 3 TEXT``), as ``parse_intermixed_args`` reads them."""

    _intermixing = False

    def parse_known_args(self, args=None, namespace=None):
        if self._intermixing:  # the two passes of the intermixed parse (Python < 3.12 calls back here)
            return super().parse_known_args(args, namespace)
        self._intermixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False


def _command(sub, func: Callable[[argparse.Namespace], None], bench: bool = False) -> argparse.ArgumentParser:
    """The subcommand that ``func`` (``cmd_NAME``) runs: its help is the first line of ``func``'s docstring, its
    description the rest; ``bench``: with an option per benchmark parameter."""
    help, _, description = inspect.cleandoc(func.__doc__).partition("\n\n")
    parser = sub.add_parser(func.__name__.removeprefix("cmd_"), help=help, description=" ".join(description.split()))
    parser.set_defaults(func=func)
    if bench:
        add_bench_params(parser)  # an argument group: listed after the command's own options
    return parser


def _add_precision(command: argparse.ArgumentParser) -> None:
    """The ``--precision`` and ``--bf16-weights`` options of the commands that run a model."""
    command.add_argument(
        "--precision",
        choices=PRECISIONS,
        default="auto",
        help="auto (default: bf16 autocast on a CPU "
        "with bf16 in hardware or a CUDA GPU that supports it, else fp32), bf16 or fp32",
    )
    command.add_argument(
        "--bf16-weights",
        action="store_true",
        help="where the model computes in bf16 (--precision bf16, or auto on such hardware), hold its weights in bf16 "
        "and run without autocast: faster on a CPU, a few predictions may differ; not with --precision fp32, nor for "
        "an LLM (its --precision sets its weights' dtype)",
    )


def _check_precision(args: argparse.Namespace) -> None:
    """``--bf16-weights`` checked against ``--precision``, before any work."""
    try:
        check_bf16_weights(args.precision, args.bf16_weights)
    except ValueError as err:
        raise ValueError(f"--bf16-weights with --precision {args.precision}: {err}") from None


def _policy_help(what: str) -> str:
    """The help of a ``--length-policy`` option, from the policies' table."""
    rules = ", ".join(f"{name} ({words})" for name, words in LENGTH_POLICIES.items())
    return f"how {what} of another length than its source is scored: {rules}; default {DEFAULT_LENGTH_POLICY}"


def _add_llm_options(command: argparse.ArgumentParser, training_data: bool = False) -> None:
    """The options of an LLM corrector (a causal language model), in their own group; ``--batch-size`` for every
    model."""
    command.add_argument(
        "--batch-size",
        type=int,
        metavar="N",
        help="sentences (an LLM: prompts) per forward pass (default: evaluate 64; correct 32, an LLM 16)",
    )
    group = command.add_argument_group("LLM correctors (a causal language model; given to another model, an error)")
    group.add_argument(
        "--template",
        help="prompt template: a shipped one (zh_zero_shot, the default; zh_few_shot; NAME@VERSION pins a version) or "
        "a file (.txt: the user message, .yaml: see the README), {text} where the sentence goes",
    )
    group.add_argument(
        "--length-policy",
        choices=LENGTH_POLICIES,
        help=_policy_help("an LLM's answer"),
    )
    group.add_argument("--temperature", type=float, help="0 (default): greedy decoding; above 0: sampling")
    group.add_argument("--top-p", type=float, metavar="P", help="with --temperature: nucleus sampling (default 1)")
    group.add_argument(
        "--generation-seed", type=int, metavar="SEED", help="the seed of the sampling (default 0; greedy ignores it)"
    )
    group.add_argument(
        "--max-new-tokens-ratio",
        type=float,
        metavar="R",
        help="each sentence may generate R times its own tokens + --max-new-tokens-extra (default 2); an answer "
        "that reaches it without stopping fails (unfinished)",
    )
    group.add_argument("--max-new-tokens-extra", type=int, metavar="N", help="see --max-new-tokens-ratio (default 16)")
    group.add_argument("--backend", help="transformers (default) or vllm (a GPU machine with vLLM installed)")
    group.add_argument(
        "--chat-template-kwargs",
        type=_json_object,
        metavar="JSON",
        help="more variables for the tokenizer's chat template, e.g. '{\"enable_thinking\": false}' for Qwen3",
    )
    group.add_argument(
        "--no-chat-template",
        action="store_true",
        help="write a plain prompt even when the tokenizer has a chat template",
    )
    if training_data:
        group.add_argument(
            "--training-data",
            nargs="+",
            metavar="NAME[:SPLIT]",
            help="what the model was trained on (its model card's datasets are read too): a test set drawn from it is "
            "reported as contaminated",
        )


def _add_cache_dir(command: argparse.ArgumentParser) -> None:
    command.add_argument("--cache-dir", help="datasets cache folder (default: HF_DATASETS_CACHE)")


def parser_build(sub) -> None:
    build = _command(sub, cmd_build, bench=True)
    build.add_argument(
        "configs",
        nargs="*",
        help="configs to build (default: all those available: sighan15 needs "
        f"pycorrector or --sighan15-path): {', '.join(CONFIGS)}",
    )
    build.add_argument(
        "--output",
        help="also write stats.json and the confusion sets S*.json to this folder "
        "(with --augmentation, S_train_augmented.json too)",
    )
    _add_cache_dir(build)


def parser_export(sub) -> None:
    export = _command(sub, cmd_export, bench=True)
    export.add_argument("directory")
    export.add_argument("configs", nargs="*", help="configs to export (default: all those available, as build)")
    export.add_argument("--overwrite", action="store_true", help="replace DIRECTORY if it exists")
    export.add_argument(
        "--check",
        action="store_true",
        help="write nothing: check that the export in DIRECTORY holds what this csc_hf generates with the "
        "parameters it records (exit status 2 and what differs if not)",
    )
    _add_cache_dir(export)


def parser_confusion(sub) -> None:
    conf = _command(sub, cmd_confusion)
    conf.add_argument("action", choices=("build", "import", "inspect", "divide"))
    conf.add_argument("--input", help="confusion set file (import, inspect; divide: default the benchmark's S)")
    conf.add_argument("--input-format", choices=FORMATS, help="format of --input (default: guessed from its name)")
    conf.add_argument("--output", help="write the set (build, import) or the divided parts (divide: a folder)")
    conf.add_argument("--format", choices=FORMATS, default="json", help="format of --output (default: json)")
    conf.add_argument("--show", nargs="+", metavar="KEY", help="print the candidates of these keys")
    add_bench_params(conf)  # after its own options, in its usage line too


def parser_run(sub) -> None:
    run = _command(sub, cmd_run)
    defaults = {name: cpus for cpus, name in resources.DEFAULT_PRESETS.items()}
    shipped = "; ".join(
        f"{name}{f' (the default on a CPU {defaults[name]})' if name in defaults else ''}: {text}"
        for name, text in resources.preset_descriptions().items()
    )
    run.add_argument(
        "--preset",
        help=f"a shipped preset ({shipped}) or a YAML path (default: this CPU's, or, for the whole grid without "
        "--output, the smaller preset it names where the forecast of its job is over the hours it is sized for)",
    )
    run.add_argument("--output", help=f"run folder (default: {RUNS_DIR}/PRESET)")
    run.add_argument(
        "--variants",
        nargs="+",
        metavar="VARIANT",
        help="run only these variants, in this order (default: the preset's)",
    )
    run.add_argument(
        "--seeds", nargs="+", type=int, metavar="SEED", help="run only these seeds (default: the preset's)"
    )
    run.add_argument(
        "--finished-only",
        action="store_true",
        help="run nothing: write the results and report of the models evaluated so far",
    )
    run.add_argument(
        "--no-estimate",
        action="store_true",
        help="skip the forecast of the whole job (steps of each kind of stage timed after the build on batches of "
        "the training sentences, a few seconds per variant, or the step times an earlier start saved in "
        "RUN/workers/forecast.json) and, with it, the check of the preset's hours",
    )
    run.add_argument(
        "--processes",
        type=int,
        metavar="N",
        help="processes that share the models' stages once the encoder is pretrained, each with 1/N of the torch "
        "threads (default: the preset's processes; the others log to RUN/workers/)",
    )
    run.add_argument(
        "--worker",
        action="store_true",
        help="set by a run with --processes N for the processes it starts: start no others (the progress line counts "
        "the models' stages for 1/N)",
    )


def parser_train(sub) -> None:
    train = _command(sub, cmd_train)
    train.add_argument("config")
    train.add_argument("overrides", nargs="*", metavar="KEY=VALUE")
    train.add_argument(
        "--keys",
        action=_KeysHelp,
        help="list every key of a training config with its help and exit "
        "(train on your own pairs: train_files, validation_files, use_benchmark)",
    )


def parser_evaluate(sub) -> None:
    evaluate = _command(sub, cmd_evaluate, bench=True)
    evaluate.add_argument("model", help="a model folder or Hub id")
    evaluate.add_argument(
        "--configs",
        nargs="+",
        default=["test"],
        metavar="TEST",
        help=f"test configs (default: test: {', '.join(TEST_CONFIGS)}) or test data: {DATA_KINDS}",
    )
    evaluate.add_argument(
        "--validation",
        metavar="DATA",
        help="tune the --keep-bias / --similarity-prior grid on this data (its validation splits, else all of it: "
        "a TSV, a jsonl, an exported folder, ...) instead of the benchmark's validation split",
    )
    evaluate.add_argument(
        "--allow-train-overlap",
        action="store_true",
        help="score test sets that share sentences with the model's training sentences (each record counts them); "
        "without it they are an error",
    )
    evaluate.add_argument(
        "--bootstrap", type=int, default=RESAMPLES, help=f"bootstrap resamples (default {RESAMPLES}; 0: none)"
    )
    evaluate.add_argument(
        "--keep-bias",
        type=float,
        nargs="+",
        metavar="BIAS",
        help="source-logit bias; several values: tuned on the validation split (with "
        "--similarity-prior) and saved with the model (csc_decoding.json), the default of later "
        "loads (default: the saved value, else 0)",
    )
    evaluate.add_argument(
        "--similarity-prior",
        type=float,
        nargs="+",
        metavar="BETA",
        help="added to the logits of characters that sound or look like the source (character "
        "knowledge, not training pairs); several values: tuned with --keep-bias on the validation "
        "split and saved with the model (default: the saved value, else 0: off)",
    )
    evaluate.add_argument(
        "--trust-remote-code",
        action="store_true",
        help="run the model's own code from its folder (models whose classes transformers and csc_hf lack)",
    )
    evaluate.add_argument("--output", help="write the result records (json)")
    evaluate.add_argument(
        "--predictions-dir",
        metavar="DIR",
        help="save each split's predictions in DIR: CONFIG.SPLIT.txt (edits), or an LLM's CONFIG.SPLIT.jsonl (each "
        "answer as written, before the length policy, with the raw output: csc-bench score reads it under any "
        "--length-policy); a data file's as NAME.test (my_test.tsv: my_test_tsv.test.txt)",
    )
    _add_precision(evaluate)
    _add_llm_options(evaluate, training_data=True)


def parser_score(sub) -> None:
    score = _command(sub, cmd_score, bench=True)
    score.add_argument(
        "--predictions",
        required=True,
        metavar="FILE",
        help="one predicted sentence a line in the "
        "references' order (text), a .jsonl of {id, prediction}, or the study's saved edits",
    )
    score.add_argument(
        "--references",
        required=True,
        metavar="REF",
        help="one split: a csc_bench config (test, "
        "unseen_k, probs/pe05, train/validation, sighan15, ...), an exported FOLDER:CONFIG[/SPLIT], a "
        "wrong<TAB>correct TSV, or a .jsonl with source/target",
    )
    score.add_argument("--format", help=f"{', '.join(PREDICTION_FORMATS)} (default: from the file's name and content)")
    score.add_argument(
        "--train",
        metavar="DATA",
        help="training data (any REF kind; its train splits) for the "
        "seen/unseen breakdown (default for a csc_bench config: the benchmark's training set)",
    )
    score.add_argument("--baseline", metavar="FILE", help="another system's predictions: paired test against it")
    score.add_argument(
        "--baseline-format", metavar="FORMAT", help="format of --baseline (default: from its name and content)"
    )
    score.add_argument(
        "--bootstrap",
        type=int,
        default=RESAMPLES,
        metavar="N",
        help=f"bootstrap resamples (default {RESAMPLES}; 0: none)",
    )
    score.add_argument(
        "--bootstrap-seed", type=int, default=0, metavar="SEED", help="seed of the resampling (default 0)"
    )
    score.add_argument(
        "--alignment",
        default="auto",
        choices=ALIGNMENT_MODES,
        help="on: score by edit alignment (missing and redundant characters: references may differ in length from "
        "their sources; a breakdown by edit kind); off: substitutions position by position, a reference pair of "
        "unequal lengths is an error naming its file and line; auto (default): on when the references change "
        "lengths (the missing, redundant and mixed configs, any such pair)",
    )
    score.add_argument(
        "--length-policy",
        choices=LENGTH_POLICIES,
        default=DEFAULT_LENGTH_POLICY,
        help=_policy_help("a prediction") + "; the baseline's too",
    )
    score.add_argument("--output", metavar="FILE.json", help="also write the report to this json file")
    _add_cache_dir(score)


def parser_correct(sub) -> None:
    correct = _command(sub, cmd_correct)
    correct.add_argument("model", help="a model folder or Hub id (as for evaluate)")
    correct.add_argument("texts", nargs="*", metavar="TEXT")
    correct.add_argument("--file", help="input file (UTF-8), one sentence a line")
    correct.add_argument("--output", help="output file (default: stdout)")
    correct.add_argument(
        "--keep-bias",
        type=float,
        help="bias added to the source character's logit (default: the "
        "model's saved decoding, csc_decoding.json, else 0)",
    )
    correct.add_argument(
        "--threshold",
        type=float,
        help="keep an edit only at or above this probability (default: the model's saved decoding, else 0)",
    )
    correct.add_argument(
        "--similarity-prior",
        type=float,
        metavar="BETA",
        help="added to the logits of characters "
        "that sound or look like the source (default: the model's saved decoding, else 0: off)",
    )
    correct.add_argument(
        "--edit-kinds",
        nargs="+",
        choices=EDIT_KINDS,
        metavar="KIND",
        help="the kinds of edit kept: substitution (the default), and for a seq2seq model (bart) or a tagging model "
        "with an edit head (bert+edit_head) also missing (a character put in) and redundant (one taken out); another "
        "tagging model cannot change the length (an LLM: see --length-policy)",
    )
    correct.add_argument("--trust-remote-code", action="store_true", help="run the model's own code from its folder")
    _add_precision(correct)
    _add_llm_options(correct)


def parser_push(sub) -> None:
    push = _command(sub, cmd_push, bench=True)
    push.add_argument("model", help="a saved model folder")
    push.add_argument(
        "repo", help="Hub repository id, e.g. user/csc-all-gate (the card's name; --upload uploads there)"
    )
    push.add_argument("--results", help="an evaluation json or a run's results.json for the card's scores")
    push.add_argument(
        "--model-name",
        metavar="VARIANT",
        help="with a run's results.json: the model's variant (default: the one the model folder records)",
    )
    push.add_argument(
        "--model-seed",
        type=int,
        metavar="SEED",
        help="with a run's results.json: the model's training seed (default: the one the model folder records)",
    )
    push.add_argument(
        "--folder", help="the local folder to write the Hub-ready model to (default: MODEL-hub); --upload uploads it"
    )
    push.add_argument(
        "--license", default="apache-2.0", help="the card's licence, a Hub licence id (default: apache-2.0)"
    )
    push.add_argument(
        "--upload",
        action="store_true",
        help="upload the folder to the Hub with the write token of HF_TOKEN or of `hf auth login` "
        "(without --upload nothing is uploaded)",
    )
    push.add_argument("--token", help=argparse.SUPPRESS)  # refused with a pointer to HF_TOKEN (see cmd_push)


def parser_analyze(sub) -> None:
    analyze = _command(sub, cmd_analyze, bench=True)
    analyze.add_argument("data", nargs="+", metavar="DATA", help=f"a csc_bench config (e.g. sighan15), {DATA_KINDS}")
    analyze.add_argument(
        "--train",
        action="append",
        metavar="DATA",
        help="training data (its train split) for coverage and context overlap",
    )
    analyze.add_argument(
        "--confusion",
        action="append",
        metavar="FILE",
        help="a confusion set file (any `csc-bench confusion` layout) or S, S_train, S_unseen_k, ... of the benchmark",
    )
    analyze.add_argument(
        "--ngram", type=int, default=CONTEXT_N, help=f"n of the character n-grams around errors (default {CONTEXT_N})"
    )
    analyze.add_argument("--output", help="also write the numbers to this json file")
    _add_cache_dir(analyze)


def parser_report(sub) -> None:
    report = _command(sub, cmd_report)
    report.add_argument("run_dir", metavar="RUN_DIR")


COMMANDS = (
    parser_build,
    parser_export,
    parser_confusion,
    parser_run,
    parser_train,
    parser_evaluate,
    parser_score,
    parser_correct,
    parser_push,
    parser_analyze,
    parser_report,
)  # in the order --help lists them


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="csc-bench",
        description="Chinese Spelling Check benchmark, models and study.",
        epilog="A failing command prints one line (csc-bench CMD: error: ...) and exits "
        f"with 2; --debug or {DEBUG_ENV}=1 adds the traceback.",
    )
    parser.add_argument(
        "--debug", action="store_true", help=f"on an error, print the traceback too (or set {DEBUG_ENV}=1)"
    )
    loudness = parser.add_mutually_exclusive_group()
    loudness.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="debug messages too (stage folders, load "
        f"reports); the default shows progress (info) unless {VERBOSITY_ENV} says otherwise",
    )
    loudness.add_argument("-q", "--quiet", action="store_true", help="warnings and errors only, no progress messages")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=CommandParser)
    for add in COMMANDS:
        add(sub)
    return parser


RESUMES = {  # commands that resume after an interrupt, and how
    "run": "run the same command to resume from the last finished stage / checkpoint",
    "train": "run the same command to resume from the last checkpoint",
}


def main(argv: list[str] | None = None) -> int:
    hardware.configure_runtime()  # before torch loads: idle OpenMP threads sleep
    args = build_parser().parse_args(argv)

    def command() -> None:
        with verbosity("debug" if args.verbose else "warning" if args.quiet else env_verbosity("info")):
            args.func(args)

    return run_guarded(f"csc-bench {args.command}", command, args.debug, RESUMES.get(args.command, ""))


if __name__ == "__main__":
    sys.exit(main())
