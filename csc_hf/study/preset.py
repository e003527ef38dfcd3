"""A study as data: a preset (``trainer_configs/presets/NAME.yaml``, or any YAML path) says everything a run does;
its ``augmentation`` (:class:`AugmentationStudy`) adds the SIGHAN-credibility stage, its ``training_sets``
(:class:`TrainingSetsStudy`) the training-distribution stage. ``base: NAME`` takes another preset's keys under its
own. All of it is checked when loaded, before any work."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import resources
from ..benchmark.configs import SIGHAN15, TEST_CONFIGS, check_configs
from ..benchmark.plan import PACKAGED_CONFUSION, TRAINING_FIELDS, BenchParams, load_augmentation
from ..fields import Range, check_fields, check_range, field_types
from ..files import read_yaml
from ..model_folder import check_decoding_grid
from ..modeling import VARIANTS, is_seq2seq
from ..precision import check_bf16_weights
from ..results import CONTROLLED
from ..stats import RESAMPLES, check_resamples
from ..training.arguments import DataArguments, ModelArguments
from ..training.config import check_train_edit_shares


@dataclass(frozen=True)
class AugmentationStudy:
    """The SIGHAN-credibility stage (a preset's ``augmentation``; empty: off): each of ``variants`` is trained, with
    every seed, once more with augmentation data added to its training set, as the paper added Wang271K: the same
    training sentences again, corrupted with the confusion set ``confusion`` less its pairs that would leak into
    unseen_k / unseen_v (the benchmark parameter ``augmentation``; the data holds AUGMENTED_COPIES times the rows). It
    trains as many epochs as the grid's model (``max_steps`` and ``warmup_steps`` scaled by AUGMENTED_COPIES), so that
    it meets the plain rows as often; it is evaluated on ``tests`` and compared with the grid's model of the same
    variant and seed."""

    confusion: str = "sighan13"  # a name of csc_hf.benchmark.plan.PACKAGED_CONFUSION, or a confusion set file
    variants: tuple[str, ...] = ("bert", "bart")
    tests: tuple[str, ...] = (SIGHAN15, *CONTROLLED)

    @classmethod
    def of(cls, data: Any, origin: Path | str) -> AugmentationStudy:
        """The stage a preset's ``augmentation`` mapping describes (unknown keys are errors)."""
        _check_block(data, cls, f"{origin}: augmentation", "{confusion: sighan13, variants: [bert, bart]}")
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})


def _check_block(data: Any, cls: type, where: str, example: str, derived: tuple[str, ...] = ()) -> None:
    """A preset's block of a stage (``augmentation``, ``training_sets``) is a mapping (like ``example``) of fields of
    ``cls`` but the ``derived`` ones (which the block's other keys give), each of its type
    (:func:`csc_hf.fields.check_fields`)."""
    if not isinstance(data, dict):
        raise ValueError(f"{where} must be a mapping such as {example}, not {data!r}")
    check_fields(data, {k: v for k, v in field_types(cls).items() if k not in derived}, where)


SET_NAME = re.compile(r"[a-z0-9][a-z0-9_]*")  # a training set's name: part of its stages' folder names


@dataclass(frozen=True)
class TrainingSetsStudy:
    """The training-distribution stage (a preset's ``training_sets``; empty: off): each of ``variants`` is trained,
    with every seed and from the same pretrained encoder, once more on each training set of ``sets`` (``{name:
    {parameter: value}}``, each a change of the parameters in ``csc_hf.benchmark.plan.TRAINING_FIELDS``: the train
    split's ``P_e`` or confusion set, or its missing and redundant characters), evaluated on the preset's tests, and
    compared (paired, on the same sentences) with the grid's model of the same variant and seed, trained on the
    preset's own training set. A set may name its own ``variants`` (``{edits: {train_edit_shares: [0.5, 0.25, 0.25],
    variants: [bart]}}``: only bart and a variant with an edit head learn missing or redundant characters);
    ``set_variants`` holds them."""

    variants: tuple[str, ...] = ("bert", "plome")
    sets: dict = field(default_factory=dict)
    set_variants: dict = field(default_factory=dict)

    @classmethod
    def of(cls, data: Any, origin: Path | str) -> TrainingSetsStudy:
        """The stage a preset's ``training_sets`` mapping describes; every key, name and parameter is checked."""
        example = "{variants: [bert, plome], sets: {pe10: {train_error_prob: 0.1}}}"
        _check_block(data, cls, f"{origin}: training_sets", example, derived=("set_variants",))
        variants, sets = data.get("variants", cls.variants), data.get("sets", {})
        check_variants(variants, f"{origin}: training_sets")
        if not isinstance(sets, dict) or not sets:
            raise ValueError(f"{origin}: training_sets: sets={sets!r} must map names to parameter changes")
        checked, set_variants = {}, {}
        for name, changes in sets.items():
            where = f"{origin}: training_sets: {name}"
            if not isinstance(name, str) or not SET_NAME.fullmatch(name):
                raise ValueError(f"{where}: a set's name is lower-case letters, digits and _ (it names folders)")
            if isinstance(changes, dict) and "variants" in changes:
                own = changes["variants"]
                if not isinstance(own, (list, tuple)) or not own:
                    raise ValueError(f"{where}: variants={own!r} must be a non-empty list of variant names")
                check_variants(own, where)
                set_variants[name] = tuple(own)
                changes = {k: v for k, v in changes.items() if k != "variants"}
            if not isinstance(changes, dict) or not changes:
                raise ValueError(f"{where}: give the parameters it changes, e.g. {{train_error_prob: 0.1}}")
            if bad := sorted(set(changes) - set(TRAINING_FIELDS)):
                raise ValueError(
                    f"{where}: {bad} would change the test sets too; a training set changes only "
                    f"{', '.join(TRAINING_FIELDS)}"
                )
            checked[name] = changes
        return cls(tuple(variants), checked, set_variants)

    def params(self, bench_params: dict, name: str) -> dict:
        """The benchmark parameters of the training set ``name`` over a preset's ``bench_params``."""
        return {**bench_params, **self.sets[name]}

    def variants_of(self, name: str) -> tuple[str, ...]:
        """The variants trained on the set ``name``: its own, else the stage's."""
        return self.set_variants.get(name, self.variants)

    @property
    def all_variants(self) -> tuple[str, ...]:
        """Every variant some set trains, in order."""
        return tuple(dict.fromkeys(v for name in self.sets for v in self.variants_of(name)))


@dataclass
class Preset:
    """A study as data (see ``trainer_configs/presets/*.yaml``)."""

    name: str
    description: str = ""
    bench_params: dict = field(default_factory=dict)  # csc_bench parameters (BenchParams fields)
    variants: list[str] = field(default_factory=lambda: ["bert"])  # names of csc_hf.modeling.VARIANTS
    seeds: list[int] = field(default_factory=lambda: [0])
    tests: list[str] = field(default_factory=lambda: list(TEST_CONFIGS))
    bootstrap: int = RESAMPLES  # bootstrap resamples for the intervals
    keep_bias_grid: list[float] = field(default_factory=lambda: [0.0])  # source-logit bias, tuned on validation
    similarity_prior_grid: list[float] = field(default_factory=lambda: [0.0])  # decoding prior, tuned with keep_bias
    launcher: str | None = None  # an accelerate config file: trainings run under `accelerate launch`
    processes: int = 1  # processes that train and evaluate the models once the encoder is pretrained (threads shared)
    fresh_processes: bool = False  # each training stage runs in a new process of its own (python -m csc_hf.train)
    model: dict = field(default_factory=dict)  # BertConfig fields of the semantic encoder (pretrained once)
    bart: dict = field(default_factory=dict)  # BartConfig fields of the seq2seq baseline over the encoder's sizes
    pretrain: dict = field(default_factory=dict)  # training-config keys of the masked-LM stage
    pretrain_sides: dict = field(default_factory=dict)  # training-config keys of the side-encoder pretraining; {}: off
    finetune: dict = field(default_factory=dict)  # training-config keys of every variant
    eval_batch_size: int = 64
    eval_bf16_weights: bool = False  # evaluations in bf16 hold the weights in bf16 (the Corrector's bf16_weights)
    augmentation: dict = field(default_factory=dict)  # the SIGHAN-credibility stage (AugmentationStudy); {}: off
    training_sets: dict = field(default_factory=dict)  # the training-distribution stage (TrainingSetsStudy); {}: off
    hours: float | None = None  # the wall time on 2 cores the whole job is sized to fit (on the CPUs it is default for)
    smaller: str | None = None  # the preset a default run takes instead where this one's forecast is over ``hours``

    @property
    def augmentation_study(self) -> AugmentationStudy | None:
        """The preset's :class:`AugmentationStudy`, or ``None`` when it has none."""
        return AugmentationStudy.of(self.augmentation, self.name) if self.augmentation else None

    @property
    def training_sets_study(self) -> TrainingSetsStudy | None:
        """The preset's :class:`TrainingSetsStudy`, or ``None`` when it has none."""
        return TrainingSetsStudy.of(self.training_sets, self.name) if self.training_sets else None

    @classmethod
    def load(cls, name_or_path: str) -> Preset:
        """A preset by name (``smoke``, ``cpu``, ``ablations``, ``paper``) or from a YAML file; unknown keys are
        errors. ``base: NAME_OR_PATH`` takes that preset's keys under the file's own (a relative path is read from the
        file's folder): a key given replaces the base's, but a mapping (``pretrain``, ``finetune``, ``model``, ...)
        takes the keys of the base's mapping under its own, one level deep, and an empty one (``{}``) is empty: it
        turns ``augmentation``, ``training_sets`` or ``pretrain_sides`` off."""
        path = _preset_file(name_or_path)
        preset = cls(name=path.stem, **_preset_data(path, ()))
        preset.validate(path)
        return preset

    def validate(self, origin: Path | str) -> None:
        """Check every value (the training configs it makes are checked by the study, before any work)."""
        BenchParams.of(self.bench_params, str(origin))
        for key in ("variants", "seeds", "tests"):
            if not getattr(self, key):
                raise ValueError(f"{origin}: {key} is empty; give at least one")
        check_seeds(self.seeds, f"{origin}: seeds")
        check_range("eval_batch_size", self.eval_batch_size, Range(1), str(origin))
        check_range("processes", self.processes, Range(1), str(origin))
        if self.hours is not None:
            check_range("hours", self.hours, Range(0, low_open=True), str(origin))
        self._check_smaller(origin)
        if self.processes > 1 and self.launcher:
            raise ValueError(
                f"{origin}: processes={self.processes} and a launcher: `accelerate launch` starts the "
                "processes of each training; give one of them"
            )
        if self.fresh_processes and self.launcher:
            raise ValueError(
                f"{origin}: fresh_processes and a launcher: `accelerate launch` runs each training in new processes "
                "already; give one of them"
            )
        try:
            check_bf16_weights(self.finetune.get("precision", "auto"), self.eval_bf16_weights)
        except ValueError as err:  # its type is checked with the other keys'
            raise ValueError(f"{origin}: eval_bf16_weights: {err}") from None
        check_variants(self.variants, origin)
        check_resamples(self.bootstrap, f"{origin}: bootstrap")
        check_configs(self.tests, "test config", TEST_CONFIGS, where=f"{origin}: tests")
        for name in ("keep_bias", "similarity_prior"):
            grid = getattr(self, f"{name}_grid")
            if not isinstance(grid, list) or not grid:
                raise ValueError(f"{origin}: {name}_grid={grid!r} must be a non-empty list of numbers")
            check_decoding_grid(name, grid, f"{origin}: {name}_grid")
            if 0.0 not in grid and (seq2seq := [v for v in self.variants if is_seq2seq(v)]):
                raise ValueError(
                    f"{origin}: {name}_grid={grid} lacks 0, with which the seq2seq variants {seq2seq} decode (they "
                    "have no logits per character); add 0 to the grid"
                )
        if self.launcher:
            found = resources.trainer_config(self.launcher)  # as given, or a shipped accelerate config
            if not found.is_file():
                raise FileNotFoundError(f"{origin}: launcher config {self.launcher} does not exist")
            self.launcher = str(found.resolve())
        if self.augmentation:
            self._validate_augmentation(origin)
        if self.training_sets:
            self._validate_training_sets(origin)

    def _check_smaller(self, origin: Path | str) -> None:
        """``smaller`` comes with ``hours``, names a preset that exists, and following it never comes back here."""
        if self.smaller is not None and self.hours is None:
            raise ValueError(
                f"{origin}: smaller={self.smaller!r} without hours: give the hours this preset is sized for, or "
                "smaller: null"
            )
        chain, name = [Path(origin).resolve()], self.smaller
        while name is not None:
            path = _preset_file(name).resolve()  # a missing one names the shipped presets
            if path in chain:
                names = " -> ".join(p.stem for p in (*chain, path))
                raise ValueError(f"{origin}: smaller: the presets take each other as smaller ({names})")
            chain.append(path)
            name = _preset_data(path, ()).get("smaller")

    def _validate_training_sets(self, origin: Path | str) -> None:
        """Check the training-distribution stage: its keys and variants, and each set's parameters over the preset's."""
        study = TrainingSetsStudy.of(self.training_sets, origin)
        for name in study.sets:
            params = study.params(self.bench_params, name)
            try:
                BenchParams(**params).validate()
            except (TypeError, ValueError) as err:
                raise ValueError(f"{origin}: training_sets: {name}: {err}") from None
            for variant in study.variants_of(name):  # a tagging variant cannot train on missing or redundant characters
                check_train_edit_shares(
                    ModelArguments(variant=variant),
                    DataArguments(bench_params=params),
                    f"{origin}: training_sets: {name}",
                )

    def _validate_augmentation(self, origin: Path | str) -> None:
        """Check the augmentation stage, and read its confusion set (a bad file fails here, before any training,
        with the errors of ``csc-bench confusion import``); a file's path is made absolute."""
        study = AugmentationStudy.of(self.augmentation, origin)
        check_variants(study.variants, f"{origin}: augmentation")
        if bad := [t for t in study.tests if t not in self.tests]:
            raise ValueError(f"{origin}: augmentation: tests {bad} are not among the preset's tests {self.tests}")
        confusion = study.confusion
        if not isinstance(confusion, str) or not confusion:
            raise ValueError(
                f"{origin}: augmentation: confusion={confusion!r} must be one of "
                f"{', '.join(PACKAGED_CONFUSION)} or a confusion set file"
            )
        if confusion not in PACKAGED_CONFUSION:
            confusion = str(Path(confusion).resolve())
            self.augmentation = {**self.augmentation, "confusion": confusion}
        try:
            load_augmentation(confusion)
        except (ValueError, FileNotFoundError) as err:
            raise type(err)(f"{origin}: augmentation: {err}") from None


def check_seeds(seeds: Sequence[int], origin: str) -> None:
    """Raise a ValueError naming ``origin`` unless every seed is at least 0 (a training seed)."""
    for seed in seeds:
        check_range("seed", seed, Range(0), origin)


def _preset_file(name_or_path: str | Path) -> Path:
    """The YAML file of a shipped preset's name, or the path given; a missing one names the shipped presets."""
    path = Path(name_or_path)
    if not path.suffix:
        path = resources.preset_path(str(name_or_path))
    if not path.is_file():
        known = ", ".join(resources.preset_names())
        raise FileNotFoundError(f"preset {str(name_or_path)!r} not found ({path}); presets: {known}")
    return path


def _preset_data(path: Path, chain: tuple[Path, ...]) -> dict:
    """The keys of the preset file ``path`` over those of its ``base`` (followed to the end; a circle is an error)."""
    if path.resolve() in chain:
        raise ValueError(f"{path}: base: the presets take each other as base ({' -> '.join(map(str, chain))})")
    data = read_yaml(path, "preset")  # UTF-8, no key given twice
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise ValueError(
            f"{path}: a preset is a mapping of keys (variants, seeds, tests, pretrain, finetune, ...), not "
            f"{type(data).__name__} {data!r:.60}"
        )
    hints = {k: v for k, v in field_types(Preset).items() if k != "name"}  # the name is the file's
    check_fields(data, {**hints, "base": str}, str(path))  # every key known (the closest named), of its type
    if isinstance(data.get("smaller"), str) and Path(data["smaller"]).suffix:  # a file: from this one's folder, as base
        data["smaller"] = str((path.parent / data["smaller"]).resolve())
    base = data.pop("base", None)
    if base is None:
        return data
    if not isinstance(base, str) or not base:
        raise ValueError(f"{path}: base={base!r} must name a preset (smoke, cpu, ...) or a YAML file")
    relative = Path(base).suffix and not Path(base).is_absolute()
    base_path = _preset_file(path.parent / base if relative else base)
    merged = _preset_data(base_path, (*chain, path.resolve()))
    for key, value in data.items():  # a mapping (a training block, model, ...) over the base's, one level deep
        inherited = merged.get(key)
        merged[key] = {**inherited, **value} if value and isinstance(value, dict) and inherited else value
    return merged


def check_variants(variants: Sequence[str], origin: Path | str) -> None:
    """Raise a ValueError naming ``origin`` unless every name is one of ``csc_hf.modeling.VARIANTS``."""
    if bad := [v for v in variants if v not in VARIANTS]:
        raise ValueError(f"{origin}: unknown variants {bad}; choose from {', '.join(VARIANTS)}")
