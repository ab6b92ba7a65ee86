"""Multihost pmap places the caller's rows on its devices without copying them: the results
are right, never views of the caller's array, read-only, and the caller's array is left as
it was (writeable, unchanged). The scenarios run under ``mpiexec -n 2`` (this file is also
the worker):

    SPMD_NUM_CPU_DEVICES=2 mpiexec -n 2 python -m tests.test_pmap_multihost
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

import spmd

MPIEXEC = Path(sys.executable).parent / "mpiexec"
ROOT = Path(__file__).resolve().parents[1]


def _rows(process: int, shape=(2, 3, 4), dtype=np.float64) -> np.ndarray:
    """Process ``process``'s rows: distinct values on every process."""
    return (np.arange(np.prod(shape)).reshape(shape) + 1000 * process).astype(dtype)


def _all_rows(shape=(2, 3, 4), dtype=np.float64) -> np.ndarray:
    """The global mapped axis: every process's rows in process order."""
    return np.concatenate([_rows(p, shape, dtype) for p in range(spmd.process_count())])


def _check_result(out: spmd.Array, expected: np.ndarray) -> None:
    """``out`` is ``expected``, read from each device's buffer (np.asarray(out) keeps the
    value it gathers first, so it would not see a buffer change later)."""
    assert out.shape == expected.shape, (out.shape, expected.shape)
    for shard in out.addressable_shards:
        np.testing.assert_array_equal(np.asarray(shard.data), expected[shard.index])
        assert not shard._buffer.flags.writeable, "a result's buffer is writeable"


def _mutate_and_recheck(x: np.ndarray, results: list[tuple[spmd.Array, np.ndarray]]) -> None:
    """The caller writes to its array after the call: no result may change."""
    assert x.flags.writeable, "pmap left the caller's array read-only"
    x[...] = -7
    for out, expected in results:
        _check_result(out, expected)


def identity_and_views() -> None:
    """Results that are the argument itself, or views of it (transpose, reshape, slice,
    broadcast-unmapped out_axes), are copies: writing to the argument later changes none."""
    here = spmd.process_index()
    x = _rows(here)
    mine = x.copy()
    cases = {
        "identity": (lambda v: v, lambda r: r),
        "transpose": (lambda v: v.T, lambda r: r.transpose(0, 2, 1)),
        "reshape": (lambda v: v.reshape(-1), lambda r: r.reshape(len(r), -1)),
        "slice": (lambda v: v[1:, ::2], lambda r: r[:, 1:, ::2]),
    }
    results = []
    for fun, expect in cases.values():
        out = spmd.pmap(fun, "i")(x)
        expected = expect(mine)
        _check_result(out, expected)
        results.append((out, expected))
    _mutate_and_recheck(x, results)


def psum_is_right() -> None:
    """psum and a mean over every process's rows, for float32 and int32 rows, against NumPy;
    the argument is unchanged and still writeable after."""
    here = spmd.process_index()
    for dtype in (np.float32, np.int32):
        x = _rows(here, dtype=dtype)
        mine = x.copy()
        out = spmd.pmap(lambda v: spmd.lax.psum(v, "i"), "i")(x)
        total = _all_rows(dtype=dtype).sum(0)
        _check_result(out, np.broadcast_to(total, mine.shape))
        np.testing.assert_array_equal(x, mine)
        _mutate_and_recheck(x, [(out, np.broadcast_to(total, mine.shape))])


def odd_layouts() -> None:
    """Non-contiguous rows (a strided view, Fortran order, another mapped axis) and a
    read-only view of a writeable array: right results, none of them aliasing the caller."""
    here = spmd.process_index()
    base = _rows(here, shape=(2, 3, 8))
    every = _all_rows(shape=(2, 3, 8))
    plus_sum = spmd.pmap(lambda v: v + spmd.lax.psum(v, "i"), "i")
    strided = base[:, :, ::2]
    fortran = np.asfortranarray(base)
    read_only = base.view()
    read_only.flags.writeable = False
    results = []
    for x, global_rows in ((strided, every[:, :, ::2]), (fortran, every), (read_only, every)):
        out = plus_sum(x)
        expected = x + global_rows.sum(0)
        _check_result(out, expected)
        results.append((out, expected))
    moved = spmd.pmap(lambda v: v, "i", in_axes=1, out_axes=1)(base.transpose(1, 0, 2))
    results.append((moved, base.transpose(1, 0, 2).copy()))
    _check_result(*results[-1])
    _mutate_and_recheck(base, results)


def device_resident() -> None:
    """Rows already on this process's devices (an spmd Array) give the same results."""
    here = spmd.process_index()
    x = _rows(here)
    on_devices = spmd.device_put(x, spmd.NamedSharding(
        spmd.make_mesh((2,), ("d",), devices=spmd.local_devices()), spmd.P("d")))  # fmt: skip
    out = spmd.pmap(lambda v: spmd.lax.psum(v, "i") * 2, "i")(on_devices)
    _check_result(out, np.broadcast_to(2 * _all_rows().sum(0), x.shape))
    same = spmd.pmap(lambda v: v, "i")(on_devices)
    _check_result(same, x)


def no_copy_on_entry() -> None:
    """A contiguous argument reaches the devices without a copy (the copy of 100 MB per call
    was most of what multihost pmap cost beyond the all-reduce)."""
    from spmd.transforms import pmap_multihost

    x = _rows(spmd.process_index(), shape=(2, 1000))
    copied = []

    def frozen(block):
        copied.append(block.shape)
        return real(block)

    real = pmap_multihost.frozen
    with mock.patch.object(pmap_multihost, "frozen", frozen):
        out = spmd.pmap(lambda v: spmd.lax.psum(v, "i"), "i")(x)
    assert copied == [], f"the argument was copied on entry: {copied}"
    _check_result(out, np.broadcast_to(_all_rows(shape=(2, 1000)).sum(0), x.shape))


SCENARIOS: dict[str, Callable[[], None]] = {
    f.__name__: f
    for f in (identity_and_views, psum_is_right, odd_layouts, device_resident, no_copy_on_entry)
}


def main() -> None:
    spmd.distributed.initialize()
    for name, scenario in SCENARIOS.items():
        scenario()
        print(f"process {spmd.process_index()} passed: {name}", flush=True)


@pytest.fixture(scope="module")
def job_output() -> str:
    if not MPIEXEC.exists():
        pytest.skip("no mpiexec beside this Python")
    pytest.importorskip("mpi4py")
    command = [str(MPIEXEC), "-n", "2", sys.executable, "-m", "tests.test_pmap_multihost"]
    env = {**os.environ, "SPMD_NUM_CPU_DEVICES": "2", "SPMD_COLLECTIVE_TIMEOUT": "60"}
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    return output


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_scenario_passes_on_both_processes(job_output, scenario):
    for process in range(2):
        said = rf"process {process} passed: {scenario}(?=process|\s|$)"  # lines may run together
        assert re.search(said, job_output), job_output


if __name__ == "__main__":
    main()
