"""README's first two commands are the set-up; CI must run exactly the second one."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    return re.findall(r"```bash\n(.+?)\n```", (ROOT / "README.md").read_text(encoding="utf-8"))


def test_ci_runs_the_readme_test_command():
    main_job, tests = readme_commands()[:2]
    assert main_job.endswith("csc-bench run") and tests.endswith("pytest")
    assert tests in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()


def test_every_subcommand_has_help(capsys):
    """Each subcommand's --help, in this process; ``python -m csc_hf`` itself once, in a new one."""
    import argparse

    from csc_hf.cli import build_parser, main

    [subparsers] = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    names = "build export confusion run train evaluate score correct push analyze report"
    assert set(subparsers.choices) == set(names.split())  # the README documents these
    for sub in subparsers.choices:
        with pytest.raises(SystemExit) as exit:
            main([sub, "--help"])
        assert exit.value.code == 0 and "usage: csc-bench " + sub in capsys.readouterr().out
    out = subprocess.run([sys.executable, "-m", "csc_hf", "run", "--help"], capture_output=True, text=True, check=True)
    assert "usage: csc-bench run" in out.stdout


def test_readme_training_commands_load(tmp_path, monkeypatch):
    """Every training command of the README reads its config (base and overrides resolved, every key checked); run
    from a fresh folder, the variant configs name the command that makes the encoder they start from."""
    from csc_hf.modeling import CSCTokenizer
    from csc_hf.training import load_config

    blocks = re.findall(r"```bash\n(.+?)\n```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
    commands = [
        re.split(r"\s+#", line)[0].split()
        for block in blocks
        for line in block.splitlines()
        if "csc-bench train " in line or "-m csc_hf.train " in line
    ]
    runs = [c[c.index("train") + 1 :] if c[0] == "csc-bench" else c[c.index("csc_hf.train") + 1 :] for c in commands]
    assert len(runs) == 3 and {r[0] for r in runs} >= {
        "trainer_configs/pretrain_mlm.yaml",
        "trainer_configs/variants/all_gate.yaml",
    }
    monkeypatch.chdir(tmp_path)
    for config, *overrides in runs:
        if config.endswith("pretrain_mlm.yaml"):
            assert load_config(ROOT / config, overrides)[0].task == "mlm"
            continue
        with pytest.raises(FileNotFoundError, match="make it with `csc-bench train trainer_configs/pretrain_mlm.yaml`"):
            load_config(ROOT / config, overrides)
    encoder = tmp_path / "runs" / "pretrain_mlm"
    encoder.mkdir(parents=True)
    (encoder / "config.json").write_text("{}")
    CSCTokenizer.from_texts(["我们"]).save_pretrained(encoder)
    for config, *overrides in runs:
        model, _, training = load_config(ROOT / config, overrides)
        for item in overrides:
            key, value = item.split("=")
            assert str(getattr(training, key)) == value


def test_readme_score_example_runs_as_written(tmp_path):
    """The README's `csc-bench score` example, run as written (csc-bench = this interpreter's csc_hf)."""
    (line,) = [line for block in readme_commands() for line in block.splitlines() if "csc-bench score" in line]
    command = line.replace("csc-bench", f"{sys.executable} -m csc_hf")
    out = subprocess.run(command, shell=True, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "character-level correction F1" in out.stdout and "Length changes: 1 prediction" in out.stdout, out.stdout


def test_readme_outside_checkpoint_example_runs_as_written(tmp_path):
    """The README's outside-checkpoint example: a plain BertForMaskedLM with a WordPiece vocabulary corrects text with
    digits and Latin letters without misaligning it."""
    blocks = re.findall(r"```python\n(.+?)\n```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
    (code,) = [block for block in blocks if 'Corrector.from_pretrained("outside")' in block]
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert (
        len(lines) == 2 and all(line.endswith(" True") for line in lines) and "720" in lines[0] and "iPhone" in lines[1]
    )


def test_readme_missing_and_redundant_example_runs_as_written(tmp_path):
    """The README's alignment example prints the recall per edit kind its comment states."""
    blocks = re.findall(r"```python\n(.+?)\n```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
    (code,) = [block for block in blocks if "alignment=True" in block]
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == code.strip().splitlines()[-1].removeprefix("# ")


def test_readme_own_pairs_example_trains_as_written_without_a_warning(tmp_path):
    """The README's own-pairs config (`my_run.yaml`) trains as written (two steps here, in fp32 as on a CPU without
    bf16: the case where the Trainer would pin memory for a missing GPU) with no warning from torch, and the README says
    that it starts from scratch and what `use_cpu` does."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    (config,) = [
        block for block in re.findall(r"```yaml\n(.+?)```", text, re.S) if "train_files: [my_pairs.tsv]" in block
    ]
    (tmp_path / "my_run.yaml").write_text(config, encoding="utf-8")
    pairs = "".join(
        f"{wrong}\t{right}\n"
        for wrong, right in [("我门今天去学校。", "我们今天去学校。"), ("他门在家。", "他们在家。")]
    )
    for name in ("my_pairs.tsv", "my_dev.tsv"):
        (tmp_path / name).write_text(pairs, encoding="utf-8")
    command = [sys.executable, "-m", "csc_hf", "train", "my_run.yaml", "max_steps=2", "eval_steps=1", "precision=fp32"]
    out = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Warning" not in out.stderr and "pin_memory" not in out.stderr, out.stderr[-3000:]
    assert (tmp_path / "runs" / "my_bert" / "model.safetensors").is_file()
    prose = " ".join(text[text.index("train_files: [my_pairs.tsv]") :].split()[:200])
    assert (
        "This trains from scratch" in prose and "`use_cpu: true` trains on the CPU" in prose and "pin_memory" in prose
    )
