"""Processes that disagree get DistributedError on every process, naming both sides, within
the timeout: never a wrong value, an opaque MPI error or a hang.

Each test launches ``mpiexec -n 2`` (2 devices per process) on one scenario of
tests/multiprocess/disagreements.py and reads what each process printed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mpi4py")
MPIEXEC = Path(sys.executable).parent / "mpiexec"
ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 5  # SPMD_COLLECTIVE_TIMEOUT: a disagreement must not wait for it
pytestmark = pytest.mark.skipif(not MPIEXEC.exists(), reason="no mpiexec beside this Python")


def launch(scenario: str) -> tuple[dict[int, str], str, float]:
    """What each process printed (``raised: ...`` or ``computed: ...``), all the output, and
    the seconds the job took."""
    env = {**os.environ, "SPMD_NUM_CPU_DEVICES": "2", "SPMD_COLLECTIVE_TIMEOUT": str(TIMEOUT)}
    command = [str(MPIEXEC), "-n", "2", sys.executable, "-m",
               "tests.multiprocess.disagreements", scenario]  # fmt: skip
    start = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    said = {}
    for p in range(2):
        said_by = rf"process {p} (raised|computed): (.*?)(?=process \d (?:raised|computed)|$)"
        found = re.search(said_by, done.stdout, re.S)
        assert found, output
        said[p] = f"{found.group(1)}: {found.group(2)}"
    return said, output, time.monotonic() - start


def header_disagreement(said: dict[int, str], mine: str, theirs: str) -> None:
    """Each process names itself at ``mine`` and its peer at ``theirs`` (or the reverse)."""
    for p, other in ((0, 1), (1, 0)):
        text = said[p]
        assert text.startswith(f"raised: process {p} is at "), text
        assert f"; process {other} sent " in text, text
        assert mine in text and theirs in text, text


@pytest.mark.parametrize(
    "scenario, mine, theirs",
    [
        ("order", "jit(f)", "jit(g)"),
        ("order_shard_map", "jit(total)", "jit(largest)"),
        ("order_pmap", "all-reduce (sum) for psum #", "all-reduce (max) for pmax #"),
        ("order_pmap", "of pmap(step) step", "of pmap(step) step"),
        ("collective_kind", "all-reduce (sum) for psum #", "all-reduce (max) for pmax #"),
        ("dtype_shard_map", "of float32", "of float64"),
        ("dtype_reshard", "(i32[8]), 16 bytes of int32", "(i64[8]), 32 bytes of int64"),
        ("size", "(f64[64]), 256 bytes", "(f64[16]), 64 bytes"),
        ("size_large", "(f64[16384]), 65536 bytes", "(f64[16]), 64 bytes"),
        # a psum large enough to go round the ring (spmd/runtime/ring.py)
        ("ring_collective", "all-reduce (sum) for psum #", "block exchange for all_gather #"),
        ("ring_scatter", "all-reduce (sum) for psum #", "reduce-scatter (sum) for psum_scatter"),
        ("ring_size", "(f64[65536]), 262144 bytes", "(f64[65552]), 262208 bytes"),
        ("ring_or_direct", "(f64[65536]), 262144 bytes", "(f64[16]), 128 bytes"),
    ],
)
def test_a_disagreement_raises_on_both_processes_naming_both_sides(scenario, mine, theirs):
    said, _, seconds = launch(scenario)
    header_disagreement(said, mine, theirs)
    assert seconds < 60, f"took {seconds:.0f} s"


def test_processes_that_disagree_on_a_global_shape_both_raise():
    said, _, _ = launch("global_shape")
    for p in range(2):
        assert said[p].startswith("raised:"), said[p]
        assert "(8, 3)" in said[p] and "(7, 3)" in said[p], said[p]


def test_process_allgather_of_process_local_arrays_raises_on_both():
    said, _, _ = launch("local_arrays")
    for p in range(2):
        assert said[p].startswith("raised:"), said[p]
        assert "process_allgather's arguments" in said[p], said[p]
