"""Collectives across processes against NumPy, under ``mpiexec -n 2`` or ``-n 4`` (8 devices
in all), run by tests/test_multiprocess_collectives.py:

    SPMD_NUM_CPU_DEVICES=4 mpiexec -n 2 python -m tests.multiprocess.collectives_suite

- the Communicator's all-reduce over device groups that span every process, some of them,
  or one, for each op and several dtypes, on blocks that are empty, 0-d, of one element,
  odd-sized (ring chunks of unequal lengths) and large: equal to NumPy's reduction (exact
  for integers, bools, max and min, NaNs included; within the summation length's rounding
  for floats), and the same bits on every process;
- jit's all-reduce, reduce-scatter and all-gather on uneven blocks (some empty);
- shard_map's psum, psum_scatter and all_gather.

With the argument ``bytes`` (1 device per process), each process prints the data bytes it
sent for one psum, psum_scatter and all_gather over the block's bytes.

The rest runs twice: with the ring threshold as it is, and with every all-reduce across
processes on the ring (``RING_BYTES = 0``, empty chunks included). Each process prints
``collectives: N cases passed on process P of K`` at the end, or raises.
"""

from __future__ import annotations

import sys
import zlib

import numpy as np

import spmd
from spmd import NamedSharding, P
from spmd.multihost_utils import process_allgather
from spmd.runtime import ring
from spmd.runtime.communicator import COMBINE, communicator_for
from spmd.sharding.mesh import Mesh, device_groups

SHAPES = [(0,), (), (1,), (7, 5), (2, 0, 3), (10_007,), (100_003,)]
DTYPES = {
    "sum": ["float32", "float64", "float16", "int32", "int64", "uint8", "complex64"],
    "prod": ["float64", "int32"],
    "max": ["float32", "int64", "float16"],
    "min": ["float64", "uint8"],
    "and": ["bool"],
    "or": ["bool"],
}
passed = 0


def block(shape, dtype: str, seed: str) -> np.ndarray:
    """The same block on every process for the same ``seed``."""
    rng = np.random.default_rng(zlib.crc32(seed.encode()))
    kind = np.dtype(dtype).kind
    if kind == "b":
        return rng.random(shape) < 0.7
    if kind in "iu":
        return rng.integers(0, 100, shape).astype(dtype)
    if kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    values = rng.standard_normal(shape).astype(dtype)
    if values.size > 3:
        values.reshape(-1)[3] = np.nan if seed.endswith("nan") else values.reshape(-1)[3]
    return values


def expect_reduced(got: np.ndarray, blocks: list[np.ndarray], op: str, what: str) -> None:
    assert got.shape == blocks[0].shape and got.dtype == blocks[0].dtype, (what, got.shape)
    stack = np.stack(blocks)
    kind = got.dtype.kind
    if op in ("max", "min", "and", "or") or kind in "iub":
        exact = COMBINE[op].reduce(stack, axis=0).astype(got.dtype)
        assert np.array_equal(got, exact, equal_nan=kind in "fc"), what
        return
    wide = stack.astype(np.complex128 if kind == "c" else np.float64)
    exact = wide.sum(0) if op == "sum" else wide.prod(0)
    scale = np.abs(wide).sum(0) if op == "sum" else np.abs(wide).prod(0)
    bound = len(blocks) * np.finfo(got.dtype).eps * scale + np.finfo(got.dtype).tiny
    finite = np.isfinite(exact)
    assert np.all(np.abs(got[finite] - exact[finite]) <= bound[finite]), what
    assert np.array_equal(np.isnan(got), np.isnan(exact)), what


def same_bits_everywhere(value: np.ndarray, what: str) -> None:
    raw = np.frombuffer(np.ascontiguousarray(value).tobytes(), np.uint8)
    every = process_allgather(raw)
    assert all(np.array_equal(every[0], row) for row in every), f"replicas differ: {what}"


def same_bits_in_every_process(got: dict, groups, nbytes: int, what: str) -> None:
    """Each group's result is the same bits on every process that holds a member."""
    rows = []
    for group in groups:
        mine = [d for d in group if d in got]
        row = np.zeros(1 + nbytes, np.uint8)
        if mine:
            row[0] = 1
            row[1:] = np.frombuffer(np.ascontiguousarray(got[mine[0]]).tobytes(), np.uint8)
        rows.append(row)
    every = process_allgather(np.stack(rows))
    for g, group in enumerate(groups):
        held = [rows_of[g] for rows_of in every if rows_of[g][0]]
        assert all(np.array_equal(held[0], r) for r in held), f"replicas differ: {what} {group}"


def mesh_over_processes() -> Mesh:
    """(a, b, l): ``l`` runs over one process's devices; with 4 processes ``a`` pairs
    processes 0-2 and 1-3, ``b`` pairs 0-1 and 2-3."""
    count, here = spmd.process_count(), spmd.local_device_count()
    grid = np.empty(len(spmd.devices()), dtype=object)
    grid[:] = spmd.devices()
    return Mesh(grid.reshape(2, count // 2, here), ("a", "b", "l"))


def communicator_all_reduce() -> None:
    global passed
    mesh = mesh_over_processes()
    comm = communicator_for(tuple(mesh.devices.flat))
    local = spmd.local_devices()
    for axes in [("a", "b", "l"), ("a", "b"), ("a",), ("b",), ("l",)]:
        groups = device_groups(mesh, axes)
        for op, dtypes in DTYPES.items():
            for dtype in dtypes:
                for shape in SHAPES if op == "sum" else SHAPES[:-1]:
                    seed = f"{axes}{op}{dtype}{shape}"
                    # a NaN in one device's block (position 3): max and sum keep it
                    blocks = {d: block(shape, dtype, f"{seed}{d.id}{'nan' * (d.id == 5)}")
                              for d in mesh.devices.flat}  # fmt: skip
                    got = comm.all_reduce({d: blocks[d] for d in local}, groups, op)
                    what = f"all_reduce {op} {dtype}{list(shape)} over {axes}"
                    for group in groups:
                        mine = [d for d in group if d in got]
                        if mine:
                            expect_reduced(got[mine[0]], [blocks[d] for d in group], op, what)
                            assert all(got[d] is got[mine[0]] for d in mine), what
                    same_bits_in_every_process(got, groups, blocks[local[0]].nbytes, what)
                    passed += 1


def jit_uneven() -> None:
    """13 rows over 8 devices: blocks of 2, 2, 2, 2, 2, 2, 1 and 0 rows."""
    global passed
    line = spmd.make_mesh((spmd.device_count(),), ("x",))
    split, whole = NamedSharding(line, P("x")), NamedSharding(line, P())
    for dtype in ("float32", "int64", "float64"):
        for cols in (9, 40_000):
            x = block((13, cols), dtype, f"jit{dtype}{cols}")
            placed = spmd.device_put(x, split)
            total = spmd.jit(lambda v: v.sum(0), out_shardings=whole)(placed)
            scattered = spmd.jit(lambda v: v.sum(0), out_shardings=split)(placed)
            gathered = spmd.device_put(placed, whole)
            rows = [x[i : i + 2] for i in range(0, 13, 2)]
            partials = [r.sum(0) for r in rows]
            what = f"jit {dtype}[13,{cols}]"
            for shard in total.addressable_shards:
                expect_reduced(np.asarray(shard.data), partials, "sum", f"{what} all-reduce")
            for shard in scattered.addressable_shards:
                piece = [p[shard.index] for p in partials]
                expect_reduced(np.asarray(shard.data), piece, "sum", f"{what} reduce-scatter")
            for shard in gathered.addressable_shards:
                assert np.array_equal(np.asarray(shard.data), x), f"{what} all-gather"
            same_bits_everywhere(np.asarray(total.addressable_shards[0].data), what)
            passed += 3


def shard_map_collectives() -> None:
    global passed
    n = spmd.device_count()
    line = spmd.make_mesh((n,), ("x",))
    for dtype in ("float32", "int32", "complex64"):
        for size in (n, n * 50_000):
            x = block((size,), dtype, f"shard_map{dtype}{size}")
            placed = spmd.device_put(x, NamedSharding(line, P("x")))
            blocks = np.split(x, n)

            def run(body, out_spec, placed=placed):
                mapped = spmd.shard_map(body, mesh=line, in_specs=P("x"), out_specs=out_spec)
                return spmd.jit(mapped)(placed)

            what = f"shard_map {dtype}[{size}]"
            total = run(lambda b: spmd.lax.psum(b, "x"), P())
            for shard in total.addressable_shards:
                expect_reduced(np.asarray(shard.data), blocks, "sum", f"{what} psum")
            gathered = run(lambda b: spmd.lax.all_gather(b, "x", tiled=True), P())
            for shard in gathered.addressable_shards:
                assert np.array_equal(np.asarray(shard.data), x), f"{what} all_gather"
            # every device gathers x, then each gets the sum of the n copies of its block
            scattered = run(
                lambda b: spmd.lax.psum_scatter(
                    spmd.lax.all_gather(b, "x", tiled=True), "x", tiled=True
                ),
                P("x"),
            )
            for shard in scattered.addressable_shards:
                copies = [x[shard.index]] * n
                expect_reduced(np.asarray(shard.data), copies, "sum", f"{what} psum_scatter")
            passed += 3


def bytes_sent() -> None:
    """One device per process: the data bytes this process sends for one psum, psum_scatter
    and all_gather of a 1 MiB block (headers apart), over the block's bytes."""
    count = spmd.process_count()
    transport = communicator_for(spmd.devices()).transport
    line = spmd.make_mesh((count,), ("x",))
    mine = block((1 << 18,), "float32", f"bytes{spmd.process_index()}")
    x = spmd.make_array_from_process_local_data(
        NamedSharding(line, P("x")), mine, (count * mine.size,)
    )
    bodies = {
        "psum": (lambda b: spmd.lax.psum(b, "x"), P()),
        "psum_scatter": (lambda b: spmd.lax.psum_scatter(b, "x", tiled=True), P("x")),
        "all_gather": (lambda b: spmd.lax.all_gather(b, "x", tiled=True), P()),
    }
    for name, (body, out_spec) in bodies.items():
        run = spmd.jit(spmd.shard_map(body, mesh=line, in_specs=P("x"), out_specs=out_spec))
        run(x).block_until_ready()  # agreed on first: that is not the collective's traffic
        before = transport.sent.data_bytes
        run(x).block_until_ready()
        ratio = (transport.sent.data_bytes - before) / mine.nbytes
        print(f"bytes: {name} sent {ratio:.4f} x the data on process {spmd.process_index()}")


def main(part: str) -> None:
    spmd.distributed.initialize()
    if part == "bytes":
        bytes_sent()
        return
    threshold = ring.RING_BYTES
    for ring_bytes in (threshold, 0):
        ring.RING_BYTES = ring_bytes
        communicator_all_reduce()
        jit_uneven()
        shard_map_collectives()
    ring.RING_BYTES = threshold
    print(
        f"collectives: {passed} cases passed on process {spmd.process_index()} of "
        f"{spmd.process_count()}",
        flush=True,
    )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "values")
