"""README's first two commands are the set-up; CI must run exactly the second one."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    return re.findall(r"```bash\n(.+?)\n```", (ROOT / "README.md").read_text(encoding="utf-8"))


def test_ci_runs_the_readme_test_command():
    main_job, tests = readme_commands()[:2]
    assert main_job.endswith("csc-bench run") and tests.endswith("pytest")
    assert tests in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()


def test_every_subcommand_has_help():
    for sub in ("build", "export", "confusion", "analyze", "report", "run", "train", "evaluate", "correct", "push"):
        out = subprocess.run([sys.executable, "-m", "csc_hf", sub, "--help"], capture_output=True, text=True, check=True)
        assert "usage: csc-bench " + sub in out.stdout
