"""Scenarios run under ``mpiexec`` by tests/test_multiprocess_faults.py, one per name.

Run one by hand: ``SPMD_NUM_CPU_DEVICES=2 mpiexec -n 2 python -m tests.multiprocess_scenarios
pmap``. Each scenario prints ``scenario NAME ok on process P`` when it ends as it should;
the fault scenarios end the job with an error, which the test reads.
"""

from __future__ import annotations

import sys
import time

import numpy as np

import spmd
from spmd import NamedSharding, P
from spmd.lax import psum


def pmap_acceptance() -> None:
    """Process p passes [2p+1, 2p+2]; with 2 processes × 2 devices the global axis sums to 10."""
    p, n = spmd.process_index(), spmd.process_count()
    normalize = spmd.pmap(lambda v: v / psum(v, "i"), "i")
    got = normalize(np.array([2 * p + 1, 2 * p + 2], np.float32))
    total = n * (2 * n + 1)  # 1 + 2 + ... + 2n
    np.testing.assert_allclose(np.asarray(got), np.array([2 * p + 1, 2 * p + 2]) / total)
    assert {s.device for s in got.addressable_shards} == set(spmd.local_devices())
    again = normalize(got)  # chained: the local slices go straight back in
    np.testing.assert_allclose(np.asarray(again), np.asarray(got), rtol=1e-6)  # sums to 1 now
    one_row = normalize(np.array([p + 1.0]))  # fewer rows than local devices
    np.testing.assert_allclose(np.asarray(one_row), [(p + 1) / (n * (n + 1) / 2)])
    grid = spmd.pmap(spmd.pmap(lambda v: psum(v, "j") + 100 * spmd.lax.axis_index("i"), "j"), "i")
    x = np.arange(6).reshape(1, 2, 3) + 10 * p
    expected = x.sum(axis=1, keepdims=True) + 100 * p
    np.testing.assert_array_equal(np.asarray(grid(x)), np.broadcast_to(expected, (1, 2, 3)))
    firsts = [d for d in spmd.devices() if d.id % spmd.local_device_count() == 0]
    only_first = spmd.pmap(lambda v: psum(v, "i"), "i", devices=firsts)
    np.testing.assert_array_equal(np.asarray(only_first(np.array([p + 1]))), [n * (n + 1) // 2])


def mismatch() -> None:
    """Process 1 compiles another program than process 0: both raise, naming both."""
    mesh = spmd.make_mesh((spmd.device_count(),), ("x",))
    a = spmd.device_put(np.arange(8.0), NamedSharding(mesh, P("x")))
    fun = (lambda v: v.sum()) if spmd.process_index() == 0 else (lambda v: v.max())
    try:
        spmd.jit(fun)(a)
    except spmd.DistributedError as error:
        text = str(error)
        assert "process 0" in text and "process 1" in text and "reduce_sum" in text, text
        print(f"process {spmd.process_index()} raised: {text}", flush=True)
    else:
        raise AssertionError("different programs ran without an error")


def stall() -> None:
    """Process 1 stalls before a psum; process 0 names it within the timeout."""
    mesh = spmd.make_mesh((spmd.device_count(),), ("x",))
    a = spmd.device_put(np.ones(8), NamedSharding(mesh, P("x")))
    total = spmd.jit(lambda v: v.sum())
    np.testing.assert_array_equal(np.asarray(total(a)), 8.0)  # agreed and ran once
    # Only now the short limit: a process that starts slowly (a loaded machine) is no stall.
    spmd.config.update("collective_timeout", 2)
    if spmd.process_index() == 1:
        time.sleep(60)
    total(a)


def stall_ring() -> None:
    """Process 1 stalls before a psum large enough to go round the ring (4 MiB per
    process); the others name the process they wait for within the timeout."""
    mesh = spmd.make_mesh((spmd.device_count(),), ("x",))
    a = spmd.device_put(np.ones((1 << 19) * spmd.process_count()), NamedSharding(mesh, P("x")))
    total = spmd.jit(spmd.shard_map(lambda b: psum(b, "x"), mesh=mesh, in_specs=P("x"),
                                    out_specs=P()))  # fmt: skip
    np.testing.assert_array_equal(np.asarray(total(a)), spmd.device_count())
    spmd.config.update("collective_timeout", 2)
    if spmd.process_index() == 1:
        time.sleep(60)
    total(a)


def raises() -> None:
    """Process 1 raises before a collective: the job ends with its traceback (and what it
    printed before), not a hang."""
    mesh = spmd.make_mesh((spmd.device_count(),), ("x",))
    a = spmd.device_put(np.ones(8), NamedSharding(mesh, P("x")))
    if spmd.process_index() == 1:
        print("process 1 printed this just before it raised")  # no flush: the hook's job
        raise ValueError("boom on process 1")
    spmd.jit(lambda v: v.sum())(a)


def bad_input() -> None:
    """Local data that does not fit, arrays from different process sets, a second initialize."""
    p = spmd.process_index()
    try:
        spmd.pmap(lambda v: v, "i")(np.zeros(spmd.local_device_count() + 1))
    except spmd.ShapeError as error:
        assert "process 0 passed 3 rows" in str(error), error
    else:
        raise AssertionError("too many local rows were accepted")
    mesh = spmd.make_mesh((spmd.device_count(),), ("x",))
    sharding = NamedSharding(mesh, P("x"))
    try:
        spmd.make_array_from_process_local_data(sharding, np.zeros(3), (8,))
    except spmd.ShapeError as error:
        assert f"process {p}" in str(error) and "(3,)" in str(error), error
    else:
        raise AssertionError("local data of the wrong size was accepted")
    mine = spmd.make_mesh((spmd.local_device_count(),), ("x",), devices=spmd.local_devices())
    here = spmd.device_put(np.ones(8), NamedSharding(mine, P("x")))
    everywhere = spmd.device_put(np.ones(8), sharding)
    try:
        spmd.jit(lambda u, v: u + v)(here, everywhere)
    except spmd.ShardingError as error:
        assert "mesh" in str(error), error
    else:
        raise AssertionError("arrays of different process sets were combined")
    try:
        spmd.distributed.initialize()
    except spmd.DistributedError as error:
        assert "twice" in str(error), error
    else:
        raise AssertionError("a second initialize was accepted")


def helpers() -> None:
    """multihost_utils: gather, broadcast and named barriers."""
    p, n = spmd.process_index(), spmd.process_count()
    gathered = spmd.multihost_utils.process_allgather(np.array([p, 10 * p]))
    np.testing.assert_array_equal(gathered, [[q, 10 * q] for q in range(n)])
    tiled = spmd.multihost_utils.process_allgather(np.array([p]), tiled=True)
    np.testing.assert_array_equal(tiled, np.arange(n))
    got = spmd.multihost_utils.broadcast_one_to_all({"a": np.array([p + 5.0])})
    np.testing.assert_array_equal(got["a"], [5.0])
    spmd.multihost_utils.sync_global_devices("checkpoint")
    try:
        spmd.multihost_utils.sync_global_devices(f"name {p}")
    except spmd.DistributedError as error:
        assert "sync_global_devices" in str(error), error
    else:
        raise AssertionError("barriers of different names passed")


def control_flow() -> None:
    """A while_loop over data split across the processes, whose trip count depends on the
    data (every process runs the same count), and a ring of ppermutes in a fori_loop."""
    n = spmd.device_count()
    mesh = spmd.make_mesh((n,), ("x",))
    x = np.arange(1.0, 2.0 * n + 1)
    grow = spmd.jit(lambda a: spmd.lax.while_loop(lambda c: c.sum() < 1e4, lambda c: c * 3.0, a))
    out = grow(spmd.device_put(x, NamedSharding(mesh, P("x"))))
    expected = x.copy()
    while expected.sum() < 1e4:
        expected = expected * 3.0
    for shard in out.addressable_shards:
        np.testing.assert_allclose(np.asarray(shard.data), expected[shard.index])

    def ring_sum(block):
        def step(k, carry):
            total, piece = carry
            piece = spmd.lax.ppermute(piece, "x", [(j, (j + 1) % n) for j in range(n)])
            return total + piece, piece

        total, _ = spmd.lax.fori_loop(0, n - 1, step, (block, block))
        return total

    ring = spmd.jit(spmd.shard_map(ring_sum, mesh=mesh, in_specs=P("x"), out_specs=P("x")))
    summed = ring(spmd.device_put(x, NamedSharding(mesh, P("x"))))
    wanted = np.tile(x.reshape(n, 2).sum(axis=0), n)
    for shard in summed.addressable_shards:
        np.testing.assert_allclose(np.asarray(shard.data), wanted[shard.index])


SCENARIOS = {
    f.__name__: f
    for f in (
        pmap_acceptance,
        mismatch,
        stall,
        stall_ring,
        raises,
        bad_input,
        helpers,
        control_flow,
    )
}

if __name__ == "__main__":
    name = sys.argv[1]
    spmd.distributed.initialize()
    SCENARIOS[name]()
    print(f"scenario {name} ok on process {spmd.process_index()}", flush=True)
