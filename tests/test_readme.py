"""The README's commands: CI runs its test command, and the demo runs."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "<!-- test command -->" in readme and "README.md" in ci
    command = readme.split("<!-- test command -->")[1].split("```sh\n")[1].split("\n")[0]
    assert "pytest" in command and command.startswith("python3 -m venv")


def test_demo_runs_and_draws_the_mesh():
    result = subprocess.run(
        [sys.executable, "-m", "spmd", "demo"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "CpuDevice(id=7)" in result.stdout
    assert "CPU 0,1,2,3" in result.stdout  # P('x') replicates each row block over y
    assert "round trip exact: True" in result.stdout
