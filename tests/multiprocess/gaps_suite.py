"""Issue 22 item 4 across processes, one scenario per MPI job (2 processes):

    SPMD_NUM_CPU_DEVICES=2 mpiexec -n 2 python -m tests.multiprocess.gaps_suite infer
    mpiexec -n 1 -env SPMD_NUM_CPU_DEVICES 1 python -m tests.multiprocess.gaps_suite \\
        pmap_uneven : -n 1 -env SPMD_NUM_CPU_DEVICES 3 python -m tests.multiprocess.gaps_suite \\
        pmap_uneven

Each process prints ``process P passed: SCENARIO`` when every check held, or ``process P
raised: MESSAGE`` for a DistributedError (tests/test_multiprocess_gaps.py reads both). A
failed check is an AssertionError, which ends the job non-zero.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np

import spmd
from spmd import NamedSharding, P


def _check_shards(x: spmd.Array, expected: np.ndarray) -> None:
    """Every shard this process holds is ``expected`` at its index, and so is the whole."""
    assert x.shape == expected.shape, (x.shape, expected.shape)
    for shard in x.addressable_shards:
        np.testing.assert_array_equal(shard.data, expected[shard.index])
    total = spmd.jit(lambda v: v.sum())(x)
    np.testing.assert_allclose(float(np.asarray(total)), expected.sum(), rtol=1e-12)


def _local_box(sharding: NamedSharding, expected: np.ndarray) -> np.ndarray:
    """This process's slice of ``expected``: the box its devices' blocks span."""
    here = spmd.process_index()
    indices = sharding.devices_indices_map(expected.shape)
    mine = [index for d, index in indices.items() if d.process_index == here]
    box = tuple(
        slice(min(ix[k].indices(n)[0] for ix in mine), max(ix[k].indices(n)[1] for ix in mine))
        for k, n in enumerate(expected.shape)
    )
    return expected[box]


def infer() -> None:
    """Global shapes inferred from the processes' local shapes: even and uneven splits over
    processes, a dimension split within each process, and unsplit dimensions."""
    line = spmd.make_mesh((spmd.device_count(),), ("x",))  # 2 devices per process
    grid = spmd.make_mesh((2, 2), ("a", "b"))  # 'a' spans the processes, 'b' does not
    cases = [
        (NamedSharding(line, P("x")), (7,)),  # blocks of 2: process 0 holds 4, process 1 3
        (NamedSharding(line, P("x", None)), (8, 3)),
        (NamedSharding(line, P(None, "x")), (5, 6)),
        (NamedSharding(line, P()), (3, 2)),
        (NamedSharding(grid, P("b", "a")), (4, 6)),
        (NamedSharding(grid, P(("a", "b"))), (10,)),
    ]
    for sharding, shape in cases:
        expected = np.arange(float(np.prod(shape))).reshape(shape)
        local = _local_box(sharding, expected)
        x = spmd.make_array_from_process_local_data(sharding, local)
        _check_shards(x, expected)
        given = spmd.make_array_from_process_local_data(sharding, local, shape)
        _check_shards(given, expected)


def global_shape_differs() -> None:
    """global_shape (8, 3) on process 0 and (7, 3) on process 1."""
    sharding = NamedSharding(spmd.make_mesh((spmd.device_count(),), ("x",)), P("x"))
    shape = (8, 3) if spmd.process_index() == 0 else (7, 3)
    local = np.ones((4, 3)) if spmd.process_index() == 0 else np.ones((3, 3))
    spmd.make_array_from_process_local_data(sharding, local, shape)


def dtype_differs() -> None:
    """Local data of float32 on process 0 and float64 on process 1, no global_shape."""
    sharding = NamedSharding(spmd.make_mesh((spmd.device_count(),), ("x",)), P("x"))
    dtype = np.float32 if spmd.process_index() == 0 else np.float64
    spmd.make_array_from_process_local_data(sharding, np.ones((4, 3), dtype))


def pmap_uneven() -> None:
    """pmap with 1 local device on process 0 and 3 on process 1: 4 rows in all, which
    psum, axis_index and all_gather see whole; each process gets back its own rows."""
    here, rows = spmd.process_index(), spmd.local_device_count()
    assert rows == (1 if here == 0 else 3), rows
    every = np.arange(4 * 5.0).reshape(4, 5)
    start = 0 if here == 0 else 1
    local = every[start : start + rows]

    def body(x):
        total = spmd.lax.psum(x, "i")
        gathered = spmd.lax.all_gather(x, "i")
        return x * 2 + total, spmd.lax.axis_index("i"), gathered

    out, index, gathered = spmd.pmap(body, axis_name="i")(local)
    np.testing.assert_allclose(np.asarray(out), local * 2 + every.sum(0), rtol=1e-12)
    np.testing.assert_array_equal(np.asarray(index), np.arange(start, start + rows))
    np.testing.assert_array_equal(np.asarray(gathered), np.broadcast_to(every, (rows, 4, 5)))
    assert out.shape == (rows, 5)
    mean = spmd.pmap(lambda x: spmd.lax.pmean(x.sum(), "i"), axis_name="i")(local)
    np.testing.assert_allclose(np.asarray(mean), np.full(rows, every.sum(1).mean()), rtol=1e-12)


def pmap_shapes_differ() -> None:
    """pmap rows of 5 elements on process 0 and 6 on process 1 (one row each)."""
    width = 5 if spmd.process_index() == 0 else 6
    spmd.pmap(lambda x: spmd.lax.psum(x, "i"), axis_name="i")(np.ones((1, width)))


def pmap_dtypes_differ() -> None:
    """pmap rows of float32 on process 0 and float64 on process 1."""
    dtype = np.float32 if spmd.process_index() == 0 else np.float64
    spmd.pmap(lambda x: spmd.lax.psum(x, "i"), axis_name="i")(np.ones((1, 3), dtype))


def pmap_functions_differ() -> None:
    """Two different functions pmapped at the same call, one row each."""

    def total(x):
        return spmd.lax.psum(x, "i")

    def largest(x):
        return spmd.lax.pmax(x, "i")

    fun = total if spmd.process_index() == 0 else largest
    spmd.pmap(fun, axis_name="i")(np.ones((1, 3)))


def mixed_meshes() -> None:
    """An argument on a 2x2 mesh, a constraint on a 4-device line of the same devices, and
    its gradient, across processes."""
    grid = spmd.make_mesh((2, 2), ("x", "y"))
    line = spmd.make_mesh((4,), ("x",))
    data = np.arange(5 * 7.0).reshape(5, 7)
    x = spmd.device_put(data, NamedSharding(grid, P("x", "y")))

    def f(v):
        w = spmd.lax.with_sharding_constraint(spmd.numpy.sin(v.sum(0)), NamedSharding(line, P("x")))
        return w

    out = spmd.jit(f)(x)
    assert out.sharding == NamedSharding(line, P("x")), out.sharding
    for shard in out.addressable_shards:
        np.testing.assert_allclose(shard.data, np.sin(data.sum(0))[shard.index], rtol=1e-12)
    grad = spmd.jit(spmd.grad(lambda v: (f(v) ** 2).sum()))(x)
    expected = np.broadcast_to(2 * np.sin(data.sum(0)) * np.cos(data.sum(0)), data.shape)
    for shard in grad.addressable_shards:
        np.testing.assert_allclose(shard.data, expected[shard.index], rtol=1e-12, atol=1e-12)


def shows_a_summary() -> None:
    """repr and print of an Array this process holds part of show its shape, dtype and
    sharding (as JAX); the values need process_allgather. A replicated one shows values."""
    line = spmd.make_mesh((spmd.device_count(),), ("x",))
    data = np.arange(8.0)
    split = spmd.make_array_from_process_local_data(
        NamedSharding(line, P("x")), data.reshape(2, 4)[spmd.process_index()]
    )
    for shown in (repr(split), str(split), f"{split}"):
        assert shown.startswith("Array(shape=(8,), dtype=float64, sharding=NamedSharding("), shown
        assert f"process {spmd.process_index()} holds 2 of 4 shards" in shown, shown
        assert "process_allgather" in shown, shown
    try:
        np.asarray(split)
    except spmd.DistributedError as error:
        assert "process_allgather" in str(error), error
    else:
        raise AssertionError("np.asarray of a partly held Array gave values")
    gathered = spmd.multihost_utils.process_allgather(split, tiled=True)
    np.testing.assert_array_equal(gathered, data)
    whole = spmd.jit(lambda v: v * 2, out_shardings=NamedSharding(line, P()))(split)
    assert repr(whole) == "Array([ 0.,  2.,  4.,  6.,  8., 10., 12., 14.], dtype=float64)", whole


SCENARIOS: dict[str, Callable[[], None]] = {
    f.__name__: f
    for f in (infer, global_shape_differs, dtype_differs, pmap_uneven, pmap_shapes_differ,
              pmap_dtypes_differ, pmap_functions_differ, mixed_meshes, shows_a_summary)
}  # fmt: skip


def main(name: str) -> None:
    spmd.distributed.initialize()
    here = spmd.process_index()
    try:
        SCENARIOS[name]()
    except spmd.DistributedError as error:
        print(f"process {here} raised: {error}".replace("\n", " "), flush=True)
    else:
        print(f"process {here} passed: {name}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
