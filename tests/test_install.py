"""The installed package runs everything: shipped presets, trainer configs, the dataset card and the metric module
are found through csc_hf.resources, from a source checkout and from a wheel installed in a fresh environment."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
import yaml
from conftest import BERT_TINY

from csc_hf import resources
from csc_hf.modeling import CSCTokenizer
from csc_hf.study import Preset
from csc_hf.training import load_config

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("setup.cfg", "pyproject.toml", "README.md", "csc_hf", *resources.SHIPPED)  # what the build reads


def test_shipped_configs_are_found_from_any_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs" / "pretrain_mlm").mkdir(parents=True)  # the shipped variants start from it: a saved model
    (tmp_path / "runs" / "pretrain_mlm" / "config.json").write_text("{}", encoding="utf-8")
    CSCTokenizer.from_texts(["我们"]).save_pretrained(tmp_path / "runs" / "pretrain_mlm")
    for name in ("trainer_configs/variants/bert.yaml", "variants/bert.yaml"):
        assert load_config(name)[0].variant == "bert"
    assert resources.trainer_config("trainer_configs/pretrain_mlm.yaml") == ROOT / "trainer_configs/pretrain_mlm.yaml"
    with pytest.raises(FileNotFoundError, match=r"training config trainer_configs/variants/nope.yaml does not exist"):
        load_config("trainer_configs/variants/nope.yaml")
    local = tmp_path / "trainer_configs" / "variants" / "bert.yaml"  # a file at the given path wins
    local.parent.mkdir(parents=True)
    local.write_text(yaml.safe_dump({"task": "correction", "variant": "plome", "output_dir": "out"}), encoding="utf-8")
    assert load_config("trainer_configs/variants/bert.yaml")[0].variant == "plome"
    assert Preset.load("paper").launcher == str(ROOT / "trainer_configs/accelerate/multi_gpu.yaml")
    assert resources.preset_names() == sorted(p.stem for p in (ROOT / "trainer_configs/presets").glob("*.yaml"))
    assert resources.metric_path() == str(ROOT / "metrics/csc") and resources.dataset_card().is_file()
    with pytest.raises(ValueError, match="ships no folder 'tests'"):
        resources.shipped_dir("tests")


def _repository_path(name: str) -> str:
    """Where a file of the wheel comes from: ``csc_hf/trainer_configs/x.yaml`` from ``trainer_configs/x.yaml``."""
    parts = name.split("/")
    return "/".join(parts[1:]) if len(parts) > 2 and parts[0] == "csc_hf" and parts[1] in resources.SHIPPED else name


def _run(command: list, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run([str(c) for c in command], capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{' '.join(map(str, command))[:300]}\n{result.stderr[-3000:]}"
    return result


# Runs in the fresh environment from a folder outside the checkout; writes what it found to found.json.
INSTALLED_SCRIPT = """
import inspect, json, sys, evaluate, csc_hf
from csc_hf import resources
from csc_hf.cli import main
from csc_hf.study import Preset

found = {"csc_hf": csc_hf.__file__, "presets": resources.preset_names(), "smoke": Preset.load("smoke").variants,
         "launcher": Preset.load("paper").launcher, "metric_path": resources.metric_path(),
         "card": str(resources.dataset_card()),
         "train_config": str(resources.trainer_config("trainer_configs/pretrain_mlm.yaml"))}
metric = evaluate.load(resources.metric_path())
found["metric_file"] = inspect.getfile(type(metric))
scores = metric.compute(sources=["我今天很高心"], predictions=["我今天很高兴"], references=["我今天很高兴"])
found["f1"] = scores["sent_cor_f1"]
from csc_hf.llm import load_template
found["template"] = load_template("zh_few_shot").record()  # the prompt templates are package data
main(["export", "exported", "test", *sys.argv[1:]])
json.dump(found, open("found.json", "w", encoding="utf-8"))
"""


@pytest.mark.slow
def test_wheel_installed_in_a_fresh_environment_runs_everything(tmp_path, small_params):
    source = tmp_path / "source"
    source.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, source / name)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # PYTHONPATH would put a checkout first
    env.update(
        HF_HOME=str(tmp_path / "hf"),
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        OMP_NUM_THREADS="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_NO_INDEX="1",
    )
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            tmp_path / "dist",
            source,
        ],
        cwd=tmp_path,
        env=env,
    )
    wheel = next((tmp_path / "dist").glob("csc_hf-*.whl"))
    shipped = {
        p.relative_to(ROOT).as_posix()
        for name in ("csc_hf", *resources.SHIPPED)
        for p in (ROOT / name).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    in_wheel = {_repository_path(name) for name in zipfile.ZipFile(wheel).namelist()}
    assert shipped - in_wheel == set()  # every module, config, card and table (a new sub-package joins setup.cfg)

    venv = tmp_path / "venv"  # a fresh environment that borrows the dependencies, but not csc_hf, of this one
    _run([sys.executable, "-m", "venv", "--without-pip", venv], env=env)
    python = venv / ("Scripts" if os.name == "nt" else "bin") / "python"
    purelib = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    site = Path(purelib).resolve()
    borrowed = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site / "borrowed_dependencies.pth").write_text("\n".join(borrowed) + "\n", encoding="utf-8")  # paths only:
    # their .pth files (this environment's editable csc_hf) are not run
    _run([python, "-m", "pip", "install", "--no-deps", "--ignore-installed", "--no-compile", "-q", wheel], env=env)

    work = tmp_path / "work"
    work.mkdir()
    options = [f"--{k.replace('_', '-')}={'none' if v is None else v}" for k, v in small_params.items()]
    _run([python, "-c", INSTALLED_SCRIPT, *options], cwd=work, env=env)
    found = json.loads((work / "found.json").read_text(encoding="utf-8"))
    for key in ("csc_hf", "launcher", "metric_path", "card", "train_config"):
        assert Path(found[key]).resolve().is_relative_to(site), (key, found[key])
    assert found["presets"] == resources.preset_names() and found["smoke"] == Preset.load("smoke").variants
    assert found["f1"] == 1.0
    from csc_hf.llm import load_template

    assert found["template"] == load_template("zh_few_shot").record()
    assert Path(found["metric_file"]).name == "csc.py"
    card = (work / "exported" / "README.md").read_text(encoding="utf-8")
    assert resources.dataset_card().read_text(encoding="utf-8").split("---\n", 2)[2] in card  # not the fallback

    bench = yaml.safe_dump(small_params, default_flow_style=True, width=10_000).strip()
    overrides = [
        f"bench_params={bench}",
        f"model_overrides={json.dumps(BERT_TINY)}",
        "output_dir=pretrained",
        "max_steps=2",
        "per_device_train_batch_size=8",
        "max_train_samples=64",
        "max_eval_samples=16",
        "save_strategy='no'",
        "use_cpu=true",
        "disable_tqdm=true",
        "logging_steps=1",
    ]
    cli = venv / ("Scripts" if os.name == "nt" else "bin") / "csc-bench"
    _run([cli, "train", "trainer_configs/pretrain_mlm.yaml", *overrides], cwd=work, env=env)  # a shipped config
    assert (work / "pretrained" / "config.json").is_file()
