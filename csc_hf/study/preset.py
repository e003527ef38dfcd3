"""A study as data: a preset (``trainer_configs/presets/NAME.yaml``, or any YAML path) says everything a run does;
its ``augmentation`` (:class:`AugmentationStudy`) adds the SIGHAN-credibility stage. Both are checked when loaded,
before any work."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import resources
from ..benchmark.configs import SIGHAN15, TEST_CONFIGS, check_configs
from ..benchmark.plan import PACKAGED_CONFUSION, BenchParams, load_augmentation
from ..fields import Range, check_fields, check_range, field_types
from ..files import read_yaml
from ..model_folder import check_decoding_grid
from ..modeling import VARIANTS, is_seq2seq
from ..results import CONTROLLED
from ..stats import RESAMPLES, check_resamples


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
        if not isinstance(data, dict):
            raise ValueError(
                f"{origin}: augmentation must be a mapping such as {{confusion: sighan13, variants: "
                f"[bert, bart]}}, not {data!r}"
            )
        check_fields(data, field_types(cls), f"{origin}: augmentation")
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})


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
    model: dict = field(default_factory=dict)  # BertConfig fields of the semantic encoder (pretrained once)
    bart: dict = field(default_factory=dict)  # BartConfig fields of the seq2seq baseline over the encoder's sizes
    pretrain: dict = field(default_factory=dict)  # training-config keys of the masked-LM stage
    finetune: dict = field(default_factory=dict)  # training-config keys of every variant
    eval_batch_size: int = 64
    augmentation: dict = field(default_factory=dict)  # the SIGHAN-credibility stage (AugmentationStudy); {}: off

    @property
    def augmentation_study(self) -> AugmentationStudy | None:
        """The preset's :class:`AugmentationStudy`, or ``None`` when it has none."""
        return AugmentationStudy.of(self.augmentation, self.name) if self.augmentation else None

    @classmethod
    def load(cls, name_or_path: str) -> Preset:
        """A preset by name (``smoke``, ``cpu``, ``paper``) or from a YAML file; unknown keys are errors."""
        path = Path(name_or_path)
        if not path.suffix:
            path = resources.preset_path(name_or_path)
        if not path.is_file():
            known = ", ".join(resources.preset_names())
            raise FileNotFoundError(f"preset {name_or_path!r} not found ({path}); presets: {known}")
        data = read_yaml(path, "preset")
        data = {} if data is None else data
        if not isinstance(data, dict):
            raise ValueError(
                f"{path}: a preset is a mapping of keys (variants, seeds, tests, pretrain, finetune, ...), not "
                f"{type(data).__name__} {data!r:.60}"
            )
        hints = {k: v for k, v in field_types(cls).items() if k != "name"}  # the name is the file's
        check_fields(data, hints, str(path))
        preset = cls(name=path.stem, **data)
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


def check_variants(variants: Sequence[str], origin: Path | str) -> None:
    """Raise a ValueError naming ``origin`` unless every name is one of ``csc_hf.modeling.VARIANTS``."""
    if bad := [v for v in variants if v not in VARIANTS]:
        raise ValueError(f"{origin}: unknown variants {bad}; choose from {', '.join(VARIANTS)}")
