"""The data of a training run: the training and validation sentence pairs (the benchmark's and ``train_files`` /
``validation_files``), the masked-LM pretraining text, the tokenizer, and how pairs are encoded and batched."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import datasets
import torch
from transformers import DataCollatorForLanguageModeling

from ..benchmark.builder import columns, load_dataset
from ..benchmark.plan import BenchParams, plan_for
from ..corpus import corpus_sentences, overlaps
from ..data import read_data, training_sentences, validation_sentences
from ..edits import REDUNDANT, SUBSTITUTION, alignment
from ..files import Sentences
from ..logging import get_logger
from ..model_folder import NO_TOKENIZER, start_tokenizer_file
from ..modeling import EDIT_OPS, CSCTokenizer
from .arguments import DataArguments, ModelArguments

logger = get_logger(__name__)


def read_sentences(specs: list[str], split: str, equal_lengths: bool) -> Sentences:
    """The sentence pairs of ``train_files`` (``split="train"``) or ``validation_files`` (``"validation"``), in order:
    of a spec with splits of that name, those splits; else all of it (see :func:`csc_hf.data.read_data`)."""
    part_of = training_sentences if split == "train" else validation_sentences
    sources, targets = [], []
    for spec in specs:
        part = part_of(read_data(spec, equal_lengths=equal_lengths))
        sources += part[0]
        targets += part[1]
    return sources, targets


def _select(dataset, n: int | None):
    return dataset.select(range(min(n, len(dataset)))) if n else dataset


def training_data(
    data_args: DataArguments, equal_lengths: bool = True
) -> tuple[datasets.Dataset, datasets.Dataset, str]:
    """The training and validation pairs (``source``/``target``): ``train_files`` / ``validation_files`` in order,
    then the benchmark's train config (with ``use_benchmark``; with ``pretrain_corpus``, its text as both source and
    target instead of the benchmark's training pairs: see :func:`pretraining_text`), each cut to ``max_train_samples`` /
    ``max_eval_samples``; and every character of the files' pairs (for the vocabulary)."""
    train_pairs = read_sentences(data_args.train_files, "train", equal_lengths)
    eval_pairs = read_sentences(data_args.validation_files, "validation", equal_lengths)
    parts: dict[str, list[datasets.Dataset]] = {"train": [], "validation": []}
    for split, (sources, targets) in (("train", train_pairs), ("validation", eval_pairs)):
        if targets:
            parts[split].append(datasets.Dataset.from_dict({"source": sources, "target": targets}))
    if data_args.use_benchmark:
        bench = load_dataset("csc_bench", "train", **data_args.bench_params)
        if data_args.pretrain_corpus:
            text = pretraining_text(data_args)[0]
            parts["train"].append(datasets.Dataset.from_dict({"source": text, "target": text}))
        else:
            parts["train"].append(bench["train"].select_columns(["source", "target"]))
        parts["validation"].append(bench["validation"].select_columns(["source", "target"]))
    empty = datasets.Dataset.from_dict({"source": [], "target": []})
    train_set, eval_set = (
        datasets.concatenate_datasets(parts[s]) if parts[s] else empty for s in ("train", "validation")
    )
    chars = {c for texts in (*train_pairs, *eval_pairs) for text in texts for c in text}
    return (
        _select(train_set, data_args.max_train_samples),
        _select(eval_set, data_args.max_eval_samples),
        "".join(sorted(chars)),
    )


def pretraining_text(data_args: DataArguments) -> tuple[list[str], dict[str, dict[str, int]]]:
    """The mlm task's training sentences from ``pretrain_corpus``, cleaned with the benchmark's parameters
    (``min_len``, ``max_len``, ``min_han_ratio``, ``to_simplified``) and de-duplicated across its sources, less every
    sentence that overlaps (:func:`csc_hf.corpus.overlaps`) a held-out sentence of the benchmark (its validation or
    test pool, a domain config's pool or a SIGHAN-2015 target: :meth:`csc_hf.benchmark.plan.Plan.held_out`); and per
    source, the sentences kept and dropped."""
    params = BenchParams(**data_args.bench_params)
    held_out = plan_for(params).held_out()
    by_source = corpus_sentences(
        data_args.pretrain_corpus,
        params.corpus_column,
        params.min_len,
        params.max_len,
        params.min_han_ratio,
        params.to_simplified,
    )
    flags = iter(overlaps([s for sentences in by_source.values() for s in sentences], held_out))
    text, counts = [], {}
    for name, sentences in by_source.items():
        kept = [s for s in sentences if not next(flags)]
        text += kept
        counts[name] = {"kept": len(kept), "dropped": len(sentences) - len(kept)}
        logger.info(
            "pretraining text: %s gives %d sentences (%d dropped: they overlap held-out ones)",
            name,
            len(kept),
            len(sentences) - len(kept),
        )
    return text, counts


def training_tokenizer(
    model_args: ModelArguments, data_args: DataArguments, train_set: datasets.Dataset, pair_chars: str
) -> CSCTokenizer:
    """The tokenizer a run trains with: that of ``tokenizer_path`` or ``init_from`` (a checkpoint's embeddings fit its
    own vocabulary; characters of the pair files it lacks are logged), else a new vocabulary over the targets of
    ``train_set``, the pair files' characters and (with the benchmark) the confusion set's; cut at ``max_length``."""
    if start := model_args.tokenizer_path or model_args.init_from:
        tokenizer = start_tokenizer(start)
        unknown = sorted(set(pair_chars) - set(tokenizer.get_vocab()))
        if unknown:
            logger.warning(
                "%d characters of train_files / validation_files are not in the tokenizer %s and become [UNK]: %s",
                len(unknown),
                start,
                "".join(unknown[:50]),
            )
    else:
        extra = pair_chars
        if data_args.use_benchmark:
            confusion = plan_for(BenchParams(**data_args.bench_params)).confusion
            extra += "".join(sorted({c for k, cands in confusion.items() for c in (k, *cands)}))
        tokenizer = build_tokenizer(columns(train_set, "target")[0], extra, model_args.vocab_min_freq)
    tokenizer.model_max_length = data_args.max_length
    return tokenizer


def build_tokenizer(targets: list[str], extra_chars: str, min_freq: int = 1) -> CSCTokenizer:
    """A character vocabulary over the training targets plus the confusion set's characters."""
    return CSCTokenizer.from_texts(targets, min_freq=min_freq, extra_chars=[extra_chars])


def start_tokenizer(path: str) -> CSCTokenizer:
    """The tokenizer of a start checkpoint or ``tokenizer_path`` (a local folder or a Hub name): its saved
    CSCTokenizer, or one character per token over its BERT ``vocab.txt`` with the same ids, so that it fits the
    checkpoint's embeddings (bert-base-chinese, macbert4csc)."""
    file = start_tokenizer_file(path)
    if file is None:
        raise FileNotFoundError(f"{path} holds {NO_TOKENIZER}")
    return CSCTokenizer.from_pretrained(path) if file.name == "tokenizer.json" else CSCTokenizer.from_bert_vocab(file)


def encode_sentences(
    tokenizer: CSCTokenizer,
    sources: list[str],
    targets: list[str],
    max_length: int,
    seq2seq: bool = False,
    edits: bool = False,
) -> dict[str, list]:
    """Input ids of the sources and label ids of the targets, one per character: ``-100`` on ``[CLS]``/``[SEP]`` for
    a tagging model, whose source and target must have equal length; kept for a ``seq2seq`` one, whose decoder reads
    the labels shifted right (``[SEP] [CLS] ...``, the start of its generation) and must learn to end with ``[SEP]``,
    and whose target may be longer or shorter than its source. A tagging model with an edit head (``edits``) takes
    pairs of any lengths: see :func:`edit_targets`."""
    if edits and not seq2seq:
        return edit_targets(tokenizer, sources, targets, max_length)
    inputs = tokenizer(sources, truncation=True, max_length=max_length)["input_ids"]
    labels = tokenizer(targets, truncation=True, max_length=max_length)["input_ids"]
    for source, label in zip(inputs, labels):
        if seq2seq:
            continue
        if len(source) != len(label):
            raise ValueError("a source and its target tokenize to different lengths; they must have equal length")
        label[0] = label[-1] = -100
    return {"input_ids": inputs, "labels": labels, "length": [len(x) for x in inputs]}


def edit_targets(tokenizer: CSCTokenizer, sources: list[str], targets: list[str], max_length: int) -> dict[str, list]:
    """The training targets of a tagging model with an edit head, from the minimum alignment of each target's ids to
    its source's (:func:`csc_hf.edits.alignment`, the scorer's): per source token, ``labels`` (the character it
    becomes; -100 on ``[CLS]``, ``[SEP]`` and a deleted character), ``edit_targets`` (its index in ``EDIT_OPS``: keep,
    delete, or insert after it, where ``[CLS]`` inserts before the first character; -100 on ``[SEP]``) and
    ``insert_targets`` (the id inserted, else -100). The head inserts one character per position: of several missing
    at one place, the first is learned. A pair is aligned whole, then cut to ``max_length`` tokens (an insertion at
    the cut is dropped: what followed it is gone)."""
    keep, delete, insert = (EDIT_OPS.index(op) for op in ("keep", "delete", "insert"))
    inputs = tokenizer(sources, add_special_tokens=False)["input_ids"]
    outputs = tokenizer(targets, add_special_tokens=False)["input_ids"]
    cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
    encoded: dict[str, list] = {"input_ids": [], "labels": [], "edit_targets": [], "insert_targets": [], "length": []}
    for source, target in zip(inputs, outputs):
        labels = [-100, *source, -100]
        ops = [keep] * (len(source) + 1) + [-100]
        inserted = [-100] * (len(source) + 2)
        for edit in alignment(source, target):
            if edit.kind == SUBSTITUTION:
                labels[edit.position + 1] = edit.right
            elif edit.kind == REDUNDANT:
                labels[edit.position + 1], ops[edit.position + 1] = -100, delete
            elif inserted[edit.position] == -100 and ops[edit.position] != delete:  # after the token before it
                ops[edit.position], inserted[edit.position] = insert, edit.right
        ids = [cls_id, *source, sep_id]
        if len(ids) > max_length:  # cut, and end with [SEP] as the tokenizer's truncation does
            cut = max_length - 1
            ids, labels, ops, inserted = ids[:cut] + [sep_id], labels[:cut] + [-100], ops[:cut] + [-100], inserted[:cut]
            if inserted[-1] != -100:
                ops[cut - 1], inserted[-1] = keep, -100
            inserted.append(-100)
        for key, value in zip(encoded, (ids, labels, ops, inserted, len(ids))):
            encoded[key].append(value)
    return encoded


def batch_generator(input_ids: torch.Tensor, seed: int) -> torch.Generator:
    """A random generator drawn from a batch's ids and ``seed`` alone, not from the global random state: a run resumed
    from a checkpoint draws for each batch what the uninterrupted run drew (the Trainer restores the global state only
    after it has collated the first resumed batch)."""
    ids = input_ids.contiguous().numpy().tobytes()
    digest = hashlib.blake2b(ids, digest_size=8, key=str(seed).encode()).digest()
    return torch.Generator().manual_seed(int.from_bytes(digest, "little") >> 1)


class MaskedLMCollator(DataCollatorForLanguageModeling):
    """BERT's masking for the mlm task (``mlm_probability``, ``mask_replace_prob``, ``random_replace_prob``) with
    each batch's draws from :func:`batch_generator` and the run's ``mask_seed``, so that a resumed pretraining masks as
    the uninterrupted one did, byte for byte."""

    def __init__(self, tokenizer: CSCTokenizer, mask_seed: int = 0, **kwargs: Any):
        super().__init__(tokenizer, **kwargs)
        self.mask_seed = mask_seed

    def torch_mask_tokens(self, inputs: torch.Tensor, *args: Any, **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        self.generator = batch_generator(inputs, self.mask_seed)
        return super().torch_mask_tokens(inputs, *args, **kwargs)


TARGET_KEYS = ("labels", "edit_targets", "insert_targets")
"""The per-token targets a correction batch pads with -100 (the edit head's two when the examples have them)."""


@dataclass
class CorrectionCollator:
    """Pads a batch; with ``mask_rate`` > 0 replaces that share of the correct characters of the input by
    ``[MASK]`` (masked fine-tuning: the model must predict them from context, which helps unseen errors). Which
    characters are masked is drawn by :func:`batch_generator` from the batch and ``seed``: a resumed run masks as the
    uninterrupted one did."""

    tokenizer: CSCTokenizer
    mask_rate: float = 0.0
    seed: int = 0

    def __call__(self, examples: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        width = max(len(e[key]) for e in examples for key in ("input_ids", "labels"))  # a seq2seq target may be longer
        pad = self.tokenizer.pad_token_id
        input_ids = torch.full((len(examples), width), pad, dtype=torch.long)
        for i, e in enumerate(examples):
            input_ids[i, : len(e["input_ids"])] = torch.tensor(e["input_ids"])
        targets = {}
        for key in TARGET_KEYS:  # labels, and the edit head's targets when the examples have them
            if key in examples[0]:
                targets[key] = torch.full((len(examples), width), -100, dtype=torch.long)
                for i, e in enumerate(examples):
                    targets[key][i, : len(e[key])] = torch.tensor(e[key])
        labels = targets["labels"]
        attention_mask = (input_ids != pad).long()
        if self.mask_rate > 0:
            correct = (labels != -100) & (labels == input_ids)
            draws = torch.rand(input_ids.shape, generator=batch_generator(input_ids, self.seed))
            chosen = correct & (draws < self.mask_rate)
            input_ids = input_ids.masked_fill(chosen, self.tokenizer.mask_token_id)
        return {"input_ids": input_ids, "attention_mask": attention_mask, **targets}
