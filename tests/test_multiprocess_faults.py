"""Across processes: multihost pmap, multihost_utils, bad input, and faults that must end in
an error instead of a hang (programs that differ, a stalled process, a process that raises).

Each test launches ``mpiexec -n 2`` on a scenario of tests/multiprocess_scenarios.py with a
timeout, and reads what the processes printed.
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
pytestmark = pytest.mark.skipif(not MPIEXEC.exists(), reason="no mpiexec beside this Python")


def launch(scenario: str, processes: int = 2, devices: int = 2, timeout: float = 120):
    env = {**os.environ, "SPMD_NUM_CPU_DEVICES": str(devices), "SPMD_COLLECTIVE_TIMEOUT": "60"}
    command = [str(MPIEXEC), "-n", str(processes), sys.executable, "-m",
               "tests.multiprocess_scenarios", scenario]  # fmt: skip
    start = time.monotonic()
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )
    return done, done.stdout + done.stderr, time.monotonic() - start


@pytest.mark.parametrize(
    "scenario", ["pmap_acceptance", "mismatch", "bad_input", "helpers", "control_flow"]
)
def test_scenario_ends_well_on_every_process(scenario):
    done, output, _ = launch(scenario)
    assert done.returncode == 0, output
    for p in range(2):
        assert f"scenario {scenario} ok on process {p}" in output, output


def test_programs_that_differ_raise_on_both_processes_naming_the_difference():
    done, output, _ = launch("mismatch")
    assert done.returncode == 0, output
    for p in range(2):
        assert f"process {p} raised: the processes disagree on the program to run" in output
    assert "reduce_sum" in output and "reduce_max" in output, output


def test_a_stalled_process_is_named_within_the_timeout():
    done, output, seconds = launch("stall", timeout=50)
    assert done.returncode != 0, output
    assert (
        "DistributedError: process 0: process 1 did not take part in all-reduce (sum) within 2 s"
        in output
    ), output
    assert seconds < 40, f"took {seconds:.1f} s; the stalled process sleeps 60 s"


@pytest.mark.parametrize("processes", [2, 4])
def test_a_process_that_stalls_before_a_ring_all_reduce_is_an_error_within_the_timeout(
    processes,
):
    done, output, seconds = launch("stall_ring", processes=processes, timeout=50)
    assert done.returncode != 0, output
    late = r"DistributedError: process (\d): process (\d) did not take part in all-reduce \(sum\)"
    named = re.findall(late + " within 2 s", output)
    assert named, output
    if processes == 2:
        assert named[0] == ("0", "1"), output
    else:  # its ring neighbours wait for it; a process further on may name the one between
        assert all(waiting != "1" for waiting, _ in named), output
    assert seconds < 40, f"took {seconds:.1f} s; the stalled process sleeps 60 s"


def test_an_exception_on_one_process_ends_the_job_with_its_traceback():
    done, output, seconds = launch("raises", timeout=50)
    assert done.returncode != 0, output
    assert "ValueError: boom on process 1" in output, output
    assert "process 1 printed this just before it raised" in output, output
    assert "process 1 raised ValueError; ending all 2 processes" in output, output
    assert seconds < 40, f"took {seconds:.1f} s; the collective timeout is 60 s"


def test_four_processes_run_multihost_pmap_and_helpers():
    for scenario in ("pmap_acceptance", "helpers"):
        done, output, _ = launch(scenario, processes=4, devices=2)
        assert done.returncode == 0, output
        assert f"scenario {scenario} ok on process 3" in output, output


def run_alone(code: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "OMPI_"))}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip


def test_initialize_twice_or_after_devices_or_with_more_processes_than_mpi_is_an_error():
    twice = run_alone(
        "import spmd\nspmd.distributed.initialize()\ntry:\n spmd.distributed.initialize()\n"
        "except spmd.DistributedError as e: print('OK', e)"
    )
    assert "OK spmd.distributed.initialize() was called twice" in twice.stdout, twice.stderr
    late = run_alone(
        "import spmd\nspmd.devices()\ntry:\n spmd.distributed.initialize()\n"
        "except spmd.DistributedError as e: print('OK', e)"
    )
    assert "OK spmd.distributed.initialize() came after devices were used" in late.stdout, (
        late.stderr
    )
    more = run_alone(
        "import spmd\ntry:\n spmd.distributed.initialize(num_processes=2)\n"
        "except spmd.DistributedError as e: print('OK', e)"
    )
    assert "OK initialize(num_processes=2) but MPI started 1 processes" in more.stdout, more.stderr
    alone = run_alone("import spmd\nspmd.distributed.initialize()\nprint(spmd.devices())")
    assert "CpuDevice(id=7)" in alone.stdout, alone.stderr


HAND_OVER = (
    "import sys, time\n"
    "from spmd.distributed import _hand_output_to_the_launcher\n"
    "print('written, not flushed', end='')\n"
    "start = time.monotonic()\n"
    "_hand_output_to_the_launcher(limit=1.0)\n"
    "sys.stderr.write(f'{time.monotonic() - start:.3f}')\n"
)


def test_the_exit_hook_flushes_and_waits_until_the_launcher_has_read_the_output():
    """MPI_Abort makes mpiexec exit at once, and what a process had written to its output
    pipes that the launcher had not read yet was lost (the job's output came back empty now
    and then). Before it aborts, the hook flushes and waits (a bounded time) for the reader."""
    reader, writer = os.pipe()
    with os.fdopen(reader) as pipe:
        try:  # nobody reads stdout until the process ends: the hook waits its whole limit
            done = subprocess.run([sys.executable, "-c", HAND_OVER], cwd=ROOT, stdout=writer,
                                  stderr=subprocess.PIPE, text=True, timeout=60)  # fmt: skip
        finally:
            os.close(writer)
        assert pipe.read() == "written, not flushed"
    assert done.returncode == 0, done.stderr
    assert float(done.stderr) >= 1.0, done.stderr
    read = subprocess.run([sys.executable, "-c", HAND_OVER], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert read.returncode == 0 and read.stdout == "written, not flushed", read.stderr
    assert float(read.stderr) < 1.0, read.stderr  # read at once: no wait
