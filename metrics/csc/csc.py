"""CSC: the Chinese Spelling Check metric of csc_hf as an `evaluate` module.

Sentence- and character-level detection and correction precision, recall and F1, false
positive rate, sentence accuracy, breakdowns and bootstrap confidence intervals.  This module
is a thin wrapper: every number comes from :func:`csc_hf.scoring.score` (the ``csc_hf``
package must be installed, it is not copied with the module).  See README.md, the metric
card, for the definitions and how the conventions of published CSC scripts differ.
"""

import datasets
import evaluate
import pyarrow as pa

from csc_hf import scoring

_CITATION = """\
@inproceedings{tseng-etal-2015-introduction,
    title = "Introduction to {SIGHAN} 2015 Bake-off for {C}hinese Spelling Check",
    author = "Tseng, Yuen-Hsien and Lee, Lung-Hao and Chang, Li-Ping and Chen, Hsin-Hsi",
    booktitle = "Proceedings of the Eighth {SIGHAN} Workshop on {C}hinese Language Processing",
    year = "2015",
    address = "Beijing, China",
    publisher = "Association for Computational Linguistics",
    url = "https://aclanthology.org/W15-3106",
    pages = "32--37",
}
@inproceedings{xu-etal-2021-read,
    title = "Read, Listen, and See: Leveraging Multimodal Information Helps {C}hinese Spell Checking",
    author = "Xu, Heng-Da and Li, Zhongli and Zhou, Qingyu and Li, Chao and Wang, Zizhen and
              Cao, Yunbo and Huang, Heyan and Mao, Xian-Ling",
    booktitle = "Findings of the Association for Computational Linguistics: ACL-IJCNLP 2021",
    year = "2021",
    publisher = "Association for Computational Linguistics",
    url = "https://aclanthology.org/2021.findings-acl.64",
    pages = "716--728",
}
"""

_DESCRIPTION = """\
Chinese Spelling Check (CSC) metric. A gold error is a position where source and reference
differ; a change is a position where the prediction differs from the source.

Sentence level: a detection is right when the changed positions equal the gold error
positions, a correction when the prediction equals the reference. Recall is over sentences
with errors. Precision follows the chosen convention, named in the output: "strict" (default,
the ReaLiSe / SpellGCN / SCOPE scripts) divides by every sentence the system changed;
"lenient" (the SIGHAN bake-off confusion matrix, pycorrector) counts a false positive only for
an error-free sentence that the system changed.

Character level: detection TP is a changed position that is a gold error, correction TP such a
position changed to the gold character; precision is over all changes, recall over all gold
errors. Also: false positive rate (share of error-free sentences changed), sentence accuracy,
recall by number of errors per sentence, by error type and by seen/unseen confusion pair, and
seeded bootstrap confidence intervals. Predictions of another length than the source are
aligned (Levenshtein); insertions and deletions count as wrong changes.

With alignment=True, references may differ in length from their sources (missing and redundant
characters): gold errors and changes are the edits of the minimum-edit alignments source ->
reference and source -> prediction (substitutions, missing characters, redundant characters,
at source positions), scored with the same definitions and broken down by edit kind. On
substitution-only data read position by position by a minimum alignment (as any CSC data) it
gives the default mode's numbers exactly.
"""

_KWARGS_DESCRIPTION = """
Args:
    sources: the texts to check: strings, or token-id sequences (e.g. input_ids).
    predictions: the system outputs, same kind as sources.
    references: the gold corrections, same kind and same length as the sources (token ids:
        e.g. labels; positions where the reference is `ignore_index` are dropped).
    convention: "strict" (default) or "lenient" sentence-level precision.
    metadata: optional, per example a dict with "errors": [{"position", "type"}, ...] listing
        every gold error with type "phonetic", "graphic", "both" or "other" (or one columnar
        dict with an "errors" column); adds recall per error type.
    train_pairs: optional iterable of (right, wrong) pairs seen in training; adds recall on
        seen and unseen pairs.
    ignore_index: token id marking positions to drop (default -100, Trainer's label padding).
    bootstrap: number of bootstrap resamples for confidence intervals (default 0: none).
    confidence: confidence level of the intervals (default 0.95).
    seed: seed of the bootstrap (default 0).
    numeric_only: drop the "convention" string so that every value is a number (Trainer).
    alignment: score errors that change the length (default False: references must be as long
        as their sources); metadata errors may then name their "kind" ("substitution",
        "missing" or "redundant").
Returns:
    A flat dict: "convention"; "sent_det_p", "sent_det_r", "sent_det_f1", "sent_cor_p",
    "sent_cor_r", "sent_cor_f1", "sent_det_acc", "sent_acc", "char_det_p", "char_det_r",
    "char_det_f1", "char_cor_p", "char_cor_r", "char_cor_f1", "fpr" (floats in [0, 1]; "fpr" is
    None where no reference is error-free, and left out with numeric_only); counts
    "n_sentences", "n_error_sentences", "n_errors", "n_changed_sentences", "n_changes",
    "n_det_hits", "n_cor_hits", "n_length_mismatch", "n_indels", "n_implausible" (predictions
    empty or longer than twice their source); breakdowns "nerr1_*", "nerr2_*", "nerr3plus_*",
    "type_<type>_*", "seen_*", "unseen_*"; with alignment, per edit kind
    "<kind>_char_det_p", ..., "<kind>_char_cor_f1", "<kind>_n_errors", "<kind>_n_changes"; with
    bootstrap, "<score>_ci_low" and "<score>_ci_high" for every score plus "ci_resamples" and
    "ci_confidence".
Examples:
    Strings. The conventions differ only in sentence-level precision:

    >>> import evaluate
    >>> csc = evaluate.load("metrics/csc")
    >>> sources     = ["我今天很高心", "他们在学校里", "明天会下鱼吗"]
    >>> predictions = ["我今天很高兴", "他们在学校理", "明天会下鱼马"]
    >>> references  = ["我今天很高兴", "他们在学校里", "明天会下雨吗"]
    >>> results = csc.compute(sources=sources, predictions=predictions, references=references)
    >>> print(results["convention"], round(results["sent_cor_p"], 4), results["sent_cor_r"], results["fpr"])
    strict 0.3333 0.5 1.0
    >>> results = csc.compute(sources=sources, predictions=predictions, references=references, convention="lenient")
    >>> print(results["convention"], results["sent_cor_p"], results["sent_cor_r"], results["fpr"])
    lenient 0.5 0.5 1.0

    Token ids with Trainer-style labels: positions labelled -100 ([CLS], [SEP], padding) are dropped:

    >>> results = csc.compute(
    ...     sources=[[101, 2769, 1962, 1920, 102, 0]],
    ...     predictions=[[101, 2769, 1962, 1921, 102, 102]],
    ...     references=[[-100, 2769, 1962, 1921, -100, -100]],
    ...     numeric_only=True,
    ... )
    >>> print(results["sent_cor_f1"], results["char_cor_p"], results["n_errors"], "convention" in results)
    1.0 1.0 1 False

    Batches, a seeded 95% bootstrap interval, and a seq2seq prediction one character short:

    >>> csc.add_batch(sources=sources[:2], predictions=predictions[:2], references=references[:2])
    >>> csc.add_batch(sources=sources[2:], predictions=["明天会下雨"], references=references[2:])
    >>> results = csc.compute(bootstrap=1000, seed=0)
    >>> print(results["char_det_p"], results["n_indels"], results["sent_acc_ci_low"], results["sent_acc_ci_high"])
    0.5 1 0.0 1.0

    Missing and redundant characters (references of another length) need alignment=True:

    >>> results = csc.compute(
    ...     sources=["我们去学", "我们们去学校", "我们去学效"],
    ...     predictions=["我们去学校", "我们们去学校", "我们去学"],
    ...     references=["我们去学校", "我们去学校", "我们去学校"],
    ...     alignment=True,
    ... )
    >>> print(results["n_errors"], results["n_changes"], results["n_cor_hits"], results["missing_char_cor_r"])
    3 2 1 1.0
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Csc(evaluate.Metric):
    """Chinese Spelling Check metric backed by :func:`csc_hf.scoring.score`."""

    def _info(self) -> evaluate.MetricInfo:
        columns = ("sources", "predictions", "references")
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=[
                datasets.Features({name: datasets.Value("string") for name in columns}),
                datasets.Features({name: datasets.Sequence(datasets.Value("int64")) for name in columns}),
            ],
            reference_urls=[
                "https://aclanthology.org/W15-3106",
                "https://aclanthology.org/2021.findings-acl.64",
                "https://github.com/DaDaMrX/ReaLiSe",
                "https://github.com/shibing624/pycorrector",
            ],
        )

    def compute(self, *, predictions=None, references=None, **kwargs):
        """As `evaluate.Metric.compute`; a missing input column is named (with no column at all, the examples
        must have been added with `add` / `add_batch`).

        Given every column, with nothing added before and in a single process, the columns are scored as given:
        evaluate's Arrow cache exists to gather batches across calls and processes, and here it would only write the
        columns and read them back, at a cost several times that of the scoring. Any other call takes evaluate's path
        (the same numbers)."""
        inputs = {"sources": kwargs.pop("sources", None), "predictions": predictions, "references": references}
        missing = [name for name, column in inputs.items() if column is None]
        if missing and (len(missing) < len(inputs) or self.writer is None):
            raise ValueError(f"csc: missing {', '.join(missing)}: give sources, predictions and references")
        if not missing and self.writer is None and self.num_process == 1:
            return self._compute(**inputs, **kwargs)
        return super().compute(**inputs, **kwargs)

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """As `evaluate.Metric.add_batch`; the batch is checked by :func:`csc_hf.scoring.check_inputs` first, then
        written to evaluate's Arrow cache as one table (evaluate's own path encodes every example in Python, which
        cost more than the scoring itself)."""
        if set(kwargs) - {"sources"}:
            raise ValueError(
                f"csc: unknown inputs {sorted(set(kwargs) - {'sources'})}; give sources, predictions and references"
            )
        columns = {"sources": kwargs.get("sources"), "predictions": predictions, "references": references}
        is_text = scoring.check_inputs(*columns.values())
        features = self.features[0 if is_text else 1]  # the two formats of `_info`, in that order
        if self.writer is None:
            self.selected_feature_format = features
            self._init_writer()
        elif self.selected_feature_format != features:
            kind = "strings" if is_text else "token ids"
            raise ValueError(f"csc: this batch holds {kind}, the batches before it did not; add one kind per compute")
        schema = features.arrow_schema
        arrays = [pa.array(list(columns[name]), type=schema.field(name).type) for name in schema.names]
        self.writer.write_table(pa.Table.from_arrays(arrays, schema=schema))

    def add(self, *, prediction=None, reference=None, **kwargs):
        """As `evaluate.Metric.add`; the example is checked by :func:`csc_hf.scoring.check_inputs` first."""
        scoring.check_inputs([kwargs.get("sources")], [prediction], [reference])
        super().add(prediction=prediction, reference=reference, **kwargs)

    def _compute(self, predictions, references, sources, bootstrap=0, **options):
        """:func:`csc_hf.scoring.score` with the keyword options of the docstring (no bootstrap by default)."""
        return scoring.score(sources, predictions, references, bootstrap=bootstrap, **options)
