"""The sampled oracles across processes: each suite of tests/multiprocess/worker.py runs under
``mpiexec -n 2`` (4 devices each) and ``mpiexec -n 4`` (2 devices each), 8 devices in all,
and must pass on every process. Skipped when mpi4py or the mpiexec next to this Python is
missing (``pip install 'spmd[mpi]'``). By hand, from the repository root:
``SPMD_NUM_CPU_DEVICES=4 mpiexec -n 2 python -m tests.multiprocess.worker partition``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MPIEXEC = Path(sys.executable).parent / "mpiexec"
SUITES = ["partition", "shard_map", "pmap", "pmap_nested", "random"]
DEVICES = 8  # in all, as the single-process tests' meshes need
TIMEOUT = 180  # seconds for one suite (the slowest, partition on 4 processes: ~45 s on 2 cores)


def _missing() -> str | None:
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py is not installed (pip install 'spmd[mpi]')"
    if not MPIEXEC.exists():
        return f"no mpiexec next to {sys.executable} (pip install 'spmd[mpi]')"
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")


def run_job(command: list[str], env: dict[str, str]) -> tuple[int | None, str]:
    """The job's exit status (None if it ran past TIMEOUT and was ended) and its output.
    mpiexec runs in a session of its own, so that a job past its time ends whole."""
    job = subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = job.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)  # mpiexec and the processes it started
        output, _ = job.communicate()
        return None, output
    return job.returncode, output


@pytest.mark.parametrize("processes", [2, 4])
@pytest.mark.parametrize("suite", SUITES)
def test_suite_passes_on_every_process(suite, processes):
    env = {
        **os.environ,
        "SPMD_NUM_CPU_DEVICES": str(DEVICES // processes),
        "SPMD_COLLECTIVE_TIMEOUT": "60",
    }
    command = [str(MPIEXEC), "-n", str(processes), sys.executable, "-m",
               "tests.multiprocess.worker", suite]  # fmt: skip
    status, output = run_job(command, env)
    shown = f"$ {' '.join(command)}\n{output[-20000:]}"
    if status is None:
        pytest.fail(f"ran past {TIMEOUT} s and was ended:\n{shown}", pytrace=False)
    if status != 0:
        pytest.fail(f"exited with status {status}:\n{shown}", pytrace=False)
    for process in range(processes):
        final = rf"^worker {suite}: [1-9]\d* cases passed on process {process} of {processes}$"
        assert re.search(final, output, re.MULTILINE), f"no line like {final!r}:\n{shown}"
