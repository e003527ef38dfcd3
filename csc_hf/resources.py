"""Where the files csc_hf ships live: presets, training and accelerate configs, the dataset card, the metric module.

The repository keeps them in top-level folders (``trainer_configs/``, ``metrics/``, ``dataset_scripts/``: their one
source); the build maps those folders into the package (``csc_hf.trainer_configs``, ``csc_hf.metrics``,
``csc_hf.dataset_scripts``, see setup.cfg's ``package_dir``). An installed package finds them inside itself; a source
checkout (an editable install, or the checkout on ``PYTHONPATH``) next to the package, where they are.

From an installed package::

    evaluate.load(csc_hf.resources.metric_path())          # the csc metric module
    csc-bench train trainer_configs/variants/bert.yaml     # a relative path that does not exist is a shipped config
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

import yaml

from . import hardware

SHIPPED = ("trainer_configs", "metrics", "dataset_scripts")  # the repository's top-level folders the package ships


def shipped_dir(name: str) -> Path:
    """The folder of the shipped top-level folder ``name`` (one of ``SHIPPED``)."""
    if name not in SHIPPED:
        raise ValueError(f"csc_hf ships no folder {name!r}; it ships {', '.join(SHIPPED)}")
    package = Path(str(files("csc_hf")))
    for folder in (package / name, package.parent / name):  # installed (inside the package), or a source checkout
        if folder.is_dir():
            return folder
    raise FileNotFoundError(
        f"csc_hf's {name}/ is missing (neither {package / name} nor {package.parent / name} "
        "exists); reinstall csc_hf (pip install csc_hf, or pip install -e . in a checkout)"
    )


def trainer_config(path: str | Path) -> Path:
    """``path`` if it exists; otherwise, when it is relative, the shipped trainer config it names — in the
    repository's layout (``trainer_configs/variants/bert.yaml``) or inside that folder (``variants/bert.yaml``).
    A path found nowhere is returned as given, for the caller's error message."""
    path = Path(path)
    if path.exists() or path.is_absolute():
        return path
    parts = path.parts[1:] if path.parts[0] == "trainer_configs" else path.parts
    shipped = shipped_dir("trainer_configs").joinpath(*parts)
    return shipped if shipped.exists() else path


def preset_path(name: str) -> Path:
    """The shipped preset ``name`` (``smoke``, ``cpu``, ``paper``); it may not exist (see :func:`preset_names`)."""
    return shipped_dir("trainer_configs") / "presets" / f"{name}.yaml"


DEFAULT_PRESETS = {
    "with AMX": "cpu",
    "with AVX-512 but without AMX": "cpu-small",
    "with AVX2 but without AVX-512": "cpu-tiny",
}
"""The shipped preset `csc-bench run` runs when none is named, by the CPU (its compute path): ``cpu`` where bf16 runs
on AMX tiles; ``cpu-tiny`` where the kernels stop at AVX2 (fp32: a Zen 3), the same study sized to fit 6 hours there
(a smaller encoder, one seed, smaller test sets); ``cpu-small`` (its encoder between the two) on the rest: AVX-512 in
bf16 (AVX512-BF16) or fp32, and a CPU whose flags are unknown. Their hours: BENCHMARKS.md."""


def default_preset(path: str | None = None) -> str:
    """The name of this machine's default preset (`DEFAULT_PRESETS`) by its compute path (`hardware.compute_path`)."""
    path = hardware.compute_path() if path is None else path
    if path == hardware.AMX_PATH:
        return DEFAULT_PRESETS["with AMX"]
    if path == hardware.AVX2_PATH:
        return DEFAULT_PRESETS["with AVX2 but without AVX-512"]
    return DEFAULT_PRESETS["with AVX-512 but without AMX"]


def preset_names() -> list[str]:
    """The names of the shipped presets, sorted."""
    return sorted(p.stem for p in (shipped_dir("trainer_configs") / "presets").glob("*.yaml"))


def preset_descriptions() -> dict[str, str]:
    """Each shipped preset's ``description``, by name (sorted)."""
    return {
        name: (yaml.safe_load(preset_path(name).read_text(encoding="utf-8")) or {}).get("description", "")
        for name in preset_names()
    }


def dataset_card() -> Path:
    """The csc_bench dataset card (its README.md) that ``csc-bench export`` writes with the data."""
    return shipped_dir("dataset_scripts") / "csc_bench" / "README.md"


def metric_path() -> str:
    """The folder of the csc metric module (``csc.py`` and its card), as ``evaluate.load`` takes it."""
    return str(shipped_dir("metrics") / "csc")
