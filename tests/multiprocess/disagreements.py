"""Processes that disagree, under ``mpiexec -n 2`` with 2 devices each: every scenario must
end in DistributedError on both processes, never in a wrong value or a hang.

    SPMD_NUM_CPU_DEVICES=2 SPMD_COLLECTIVE_TIMEOUT=5 mpiexec -n 2 \\
        python -m tests.multiprocess.disagreements order

Each process prints ``process P raised: MESSAGE`` (tests/test_multiprocess_disagreements.py
reads it), or ``process P computed: VALUE`` when no error came, which the test rejects.
One scenario per job: after a disagreement the processes' message streams no longer match.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np

import spmd
from spmd import NamedSharding, P
from spmd.lax import pmax, psum


def _line() -> spmd.Mesh:
    return spmd.make_mesh((spmd.device_count(),), ("x",))


def _on_line(x: np.ndarray) -> spmd.Array:
    return spmd.device_put(x, NamedSharding(_line(), P("x")))


def _swapped(first: Callable, second: Callable) -> tuple[Callable, Callable]:
    return (first, second) if spmd.process_index() == 0 else (second, first)


def order() -> Callable:
    """Two jitted programs, both run once in the same order, then in swapped order."""

    def f(v):
        return v.sum()

    def g(v):
        return v.max()

    f, g = spmd.jit(f), spmd.jit(g)
    a = _on_line(np.arange(16.0))
    f(a), g(a)  # both agreed on, on their first runs
    first, second = _swapped(f, g)
    return lambda: (first(a), second(a))


def order_shard_map() -> Callable:
    """The same with jitted shard_maps: a psum and a pmax."""
    mesh = _line()

    def total(b):
        return psum(b, "x")

    def largest(b):
        return pmax(b, "x")

    f, g = (spmd.jit(spmd.shard_map(h, mesh=mesh, in_specs=P("x"), out_specs=P()))
            for h in (total, largest))  # fmt: skip
    a = _on_line(np.arange(4.0) + 3)
    f(a), g(a)
    first, second = _swapped(f, g)
    return lambda: (first(a), second(a))


def order_pmap() -> Callable:
    """Multihost pmap: each process passes its 2 rows; a psum and a pmax of one name (a pmap
    call's own check sees the same name and rows), swapped."""

    def over_rows(reduce: Callable) -> Callable:
        def step(v):
            return reduce(v, "i")

        return spmd.pmap(step, "i")

    f, g = over_rows(psum), over_rows(pmax)
    rows = np.array([1.0, 2.0]) + 10 * spmd.process_index()
    f(rows), g(rows)
    first, second = _swapped(f, g)
    return lambda: (first(rows), second(rows))


def collective_kind() -> Callable:
    """Eager shard_map whose body runs psum on process 0 and pmax on process 1."""
    reduce = psum if spmd.process_index() == 0 else pmax
    body = spmd.shard_map(lambda b: reduce(b, "x"), mesh=_line(), in_specs=P("x"),
                          out_specs=P())  # fmt: skip
    a = _on_line(np.arange(16.0).reshape(4, 4))
    return lambda: body(a)


def global_shape() -> Callable:
    """make_array_from_process_local_data with global shape (8, 3) here and (7, 3) there."""
    sharding = NamedSharding(_line(), P("x"))
    shape = (8, 3) if spmd.process_index() == 0 else (7, 3)
    local = np.ones((4, 3)) if spmd.process_index() == 0 else np.ones((3, 3))

    def make() -> object:
        return spmd.jit(lambda v: v.sum())(
            spmd.make_array_from_process_local_data(sharding, local, shape)
        )

    return make


def dtype_shard_map() -> Callable:
    """An eager shard_map psum of float32 blocks here and float64 blocks there."""
    dtype = np.float32 if spmd.process_index() == 0 else np.float64
    body = spmd.shard_map(lambda b: psum(b, "x"), mesh=_line(), in_specs=P("x"), out_specs=P())
    a = _on_line(np.arange(8, dtype=dtype))
    return lambda: body(a)


def dtype_reshard() -> Callable:
    """Replicating a split array of int32 here and int64 there."""
    dtype = np.int32 if spmd.process_index() == 0 else np.int64
    a = _on_line(np.arange(8, dtype=dtype))
    return lambda: spmd.device_put(a, NamedSharding(_line(), P()))


def size(large: int = 64) -> Callable:
    """Swapped programs whose messages differ in size: gathers of 64 and of 16 elements."""

    def gather(v):
        return spmd.lax.with_sharding_constraint(v * 2, NamedSharding(_line(), P()))

    f, g = spmd.jit(gather), spmd.jit(gather)
    a, b = _on_line(np.arange(float(large))), _on_line(np.arange(16.0))
    f(a), g(b)
    first, second = _swapped(lambda: f(a), lambda: g(b))
    return lambda: (first(), second())


def size_large() -> Callable:
    """The same with a message of 64 KiB against one of 64 bytes (each travels in its own
    form: a large one after its header, a small one with it)."""
    return size(large=16384)


RING = 1 << 18  # float64 elements: each process's partial (1 MiB) goes round the ring


def _eager(body: Callable, out_spec: P | None = None) -> Callable:
    out_spec = P() if out_spec is None else out_spec
    return spmd.shard_map(body, mesh=_line(), in_specs=P("x"), out_specs=out_spec)


def ring_collective() -> Callable:
    """A large psum (the ring) here, an all_gather of the same array there."""
    a = _on_line(np.arange(float(RING)))
    if spmd.process_index() == 0:
        return lambda: _eager(lambda b: psum(b, "x"))(a)
    return lambda: _eager(lambda b: spmd.lax.all_gather(b, "x", tiled=True))(a)


def ring_scatter() -> Callable:
    """A large psum here, a psum_scatter of it there."""
    a = _on_line(np.arange(float(RING)))
    if spmd.process_index() == 0:
        return lambda: _eager(lambda b: psum(b, "x"))(a)
    return lambda: _eager(lambda b: spmd.lax.psum_scatter(b, "x", tiled=True), P("x"))(a)


def ring_size(other: int = RING + 64) -> Callable:
    """Large psums of different sizes (ring chunks of different lengths)."""
    a = _on_line(np.arange(float(RING if spmd.process_index() == 0 else other)))
    return lambda: _eager(lambda b: psum(b, "x"))(a)


def ring_or_direct() -> Callable:
    """A psum large enough for the ring here, a small one (sent whole) there."""
    return ring_size(other=64)


def local_arrays() -> Callable:
    """process_allgather of each process's own result (jit of host data: on its own
    device), which is not one global Array."""
    local = spmd.jit(lambda v: v * 2)(np.arange(3.0))
    return lambda: spmd.multihost_utils.process_allgather(local)


SCENARIOS = {
    f.__name__: f
    for f in (order, order_shard_map, order_pmap, collective_kind, global_shape,
              dtype_shard_map, dtype_reshard, size, size_large, ring_collective, ring_scatter,
              ring_size, ring_or_direct, local_arrays)
}  # fmt: skip


def main(name: str) -> None:
    spmd.distributed.initialize()
    run = SCENARIOS[name]()
    here = spmd.process_index()
    try:
        value = run()
        spmd.tree_util.tree_map(np.asarray, value)
    except spmd.DistributedError as error:
        print(f"process {here} raised: {error}".replace("\n", " "), flush=True)
    else:
        print(f"process {here} computed: {value}".replace("\n", " "), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
