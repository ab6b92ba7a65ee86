"""The README's commands: CI runs its test command, and the demo runs."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

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


def test_demo_across_two_processes_shows_each_process_view():
    mpiexec = Path(sys.executable).parent / "mpiexec"
    if not mpiexec.exists():
        pytest.skip("no mpiexec beside this Python (pip install -e '.[mpi]')")
    result = subprocess.run(
        [str(mpiexec), "-n", "2", sys.executable, "-m", "spmd", "demo"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "SPMD_NUM_CPU_DEVICES": "2"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "process 1: 4 devices; mine: [CpuDevice(id=2), CpuDevice(id=3)]" in out
    assert "process 1: CpuDevice(id=3) slice(15, 18, None): [15. 16. 17.]" in out  # uneven
    assert "process 0: local [1. 2.] -> [0.1 0.2]" in out
    assert "process 1: local [3. 4.] -> [0.3 0.4]" in out
    assert "process 1: 1785.0 (NumPy: 1785.0)" in out
