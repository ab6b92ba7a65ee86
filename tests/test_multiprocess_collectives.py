"""Collectives across processes (tests/multiprocess/collectives_suite.py under mpiexec): all-reduce,
reduce-scatter and all-gather against NumPy on 2 and 4 processes, and the bytes each process
sends for a psum (a ring: 2 (P - 1) / P times the data) on 2, 4 and 8 processes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mpi4py")
MPIEXEC = Path(sys.executable).parent / "mpiexec"
ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(not MPIEXEC.exists(), reason="no mpiexec beside this Python")


def launch(processes: int, devices: int, part: str) -> str:
    env = {**os.environ, "SPMD_NUM_CPU_DEVICES": str(devices), "SPMD_COLLECTIVE_TIMEOUT": "60"}
    command = [str(MPIEXEC), "-n", str(processes), sys.executable, "-m",
               "tests.multiprocess.collectives_suite", part]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=400)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-20000:]
    return output


@pytest.mark.parametrize("processes", [2, 4])
def test_all_reduce_reduce_scatter_and_all_gather_equal_numpy_on_every_process(processes):
    output = launch(processes, 8 // processes, "values")
    for p in range(processes):
        final = rf"collectives: [1-9]\d* cases passed on process {p} of {processes}"
        assert re.search(final, output), output[-20000:]


@pytest.mark.parametrize("processes", [2, 4, 8])
def test_a_psum_sends_at_most_twice_the_data_per_process(processes):
    output = launch(processes, 1, "bytes")
    sent = {}
    for name, ratio, p in re.findall(r"bytes: (\w+) sent ([\d.]+) x the data on process (\d+)",
                                     output):  # fmt: skip
        sent[name, int(p)] = float(ratio)
    expected = {
        "psum": 2 * (processes - 1) / processes,
        "psum_scatter": (processes - 1) / processes,
        "all_gather": processes - 1,
    }
    for name, ratio in expected.items():
        for p in range(processes):
            assert sent.get((name, p)) == pytest.approx(ratio, abs=1e-4), (name, p, output)
    assert all(sent["psum", p] <= 2 for p in range(processes))
