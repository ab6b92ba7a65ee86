"""Issue 22 item 4 across processes (tests/multiprocess/gaps_suite.py under mpiexec -n 2):
make_array_from_process_local_data infers the global shape and refuses processes that pass
different global shapes or dtypes; pmap runs with 1 local device on one process and 3 on the
other; a constraint on another mesh of the same devices works across processes."""

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
MODULE = [sys.executable, "-m", "tests.multiprocess.gaps_suite"]


def launch(scenario: str, devices: tuple[int, int] = (2, 2)) -> dict[int, str]:
    """What each process said: ``passed: SCENARIO`` or ``raised: MESSAGE``. Process ``p``
    brings ``devices[p]`` devices (mpiexec's MPMD form: one block per process)."""
    command = [str(MPIEXEC)]
    for p, count in enumerate(devices):
        command += [":"] * (p > 0) + ["-n", "1", "-env", "SPMD_NUM_CPU_DEVICES", str(count)]
        command += [*MODULE, scenario]
    env = {**os.environ, "SPMD_COLLECTIVE_TIMEOUT": "30"}
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    said = {}
    for p in range(len(devices)):
        said_by = rf"process {p} ((?:passed|raised): .*?)(?=process \d (?:passed|raised)|$)"
        found = re.search(said_by, done.stdout, re.S)
        assert found, output
        said[p] = found.group(1).strip()
    return said


@pytest.mark.parametrize("scenario", ["infer", "mixed_meshes", "shows_a_summary"])
def test_scenario_passes_on_both_processes(scenario):
    assert launch(scenario) == {0: f"passed: {scenario}", 1: f"passed: {scenario}"}


def test_pmap_over_one_and_three_local_devices_sees_all_four_rows():
    said = launch("pmap_uneven", devices=(1, 3))
    assert said == {0: "passed: pmap_uneven", 1: "passed: pmap_uneven"}


@pytest.mark.parametrize(
    "scenario, devices, mine, theirs",
    [
        ("global_shape_differs", (2, 2), "global_shape (8, 3)", "global_shape (7, 3)"),
        ("dtype_differs", (2, 2), "dtype float32", "dtype float64"),
        ("pmap_shapes_differ", (1, 3), "float64[rows, 5]", "float64[rows, 6]"),
        ("pmap_dtypes_differ", (1, 3), "float32[rows, 3]", "float64[rows, 3]"),
        ("pmap_functions_differ", (2, 2), "pmap(total)", "pmap(largest)"),
    ],
)
def test_a_disagreement_raises_on_both_processes_naming_both(scenario, devices, mine, theirs):
    said = launch(scenario, devices)
    for p in range(2):
        assert said[p].startswith("raised: the processes disagree"), said[p]
        text = said[p]
        assert mine in text and theirs in text, text
        assert text.index("process 0: ") < text.index(mine) < text.index("process 1: "), text
        assert text.index("process 1: ") < text.index(theirs), text
