"""Multihost pmap's psum beside raw mpi4py ``Allreduce`` of the same buffers.

Run, from the repository root (2 processes, 1 device each):

    .venv/bin/mpiexec -n 2 .venv/bin/python benchmarks/multihost_pmap.py
    SPMD_BENCH_ROUNDS=16 .venv/bin/mpiexec -n 2 ...        (more turns, steadier medians)

Each process holds 100 MB of float32 (25M elements) as one row, ``(1, N)``, and calls
``pmap(lambda v: psum(v, 'i'))`` on it: once with the NumPy array (host input: pmap places
it on the device each call) and once with the same row already an spmd Array on this
process's device (device-resident input). Raw ``comm.Allreduce`` of the same buffers is
timed in turns with both in the same run, and so is the ``shard_map`` psum of the same
rows (benchmarks/multiprocess.py's ``psum``, for reference: the path pmap should match).
GB/s is the bytes of one process's buffer over the time; ``ratio`` is each path's speed
over raw MPI's, from the medians (1: no overhead).

Process 0 prints. Each time is the median (and best) of several calls after a warm-up, the
cases taking turns (benchmarks/timing.py's scheme); every process makes the same calls in
the same order, with a barrier before each call so that all start it together.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

N = 25_000_000  # float32 elements per process: 100 MB
ROUNDS = int(os.environ.get("SPMD_BENCH_ROUNDS", "8"))
TURN = 3  # each turn: TURN calls, the first not counted (as timing.interleaved_ms)


def interleaved(calls: dict[str, Callable[[], object]], barrier: Callable[[], object]) -> dict:
    """Each call's ``(median, best)`` in ms, the calls taking turns for ``ROUNDS`` rounds
    after a warm-up; a barrier (not timed) before every call lines the processes up."""
    for call in calls.values():
        barrier()
        call()
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(ROUNDS):
        for name, call in calls.items():
            for k in range(TURN):
                barrier()
                start = time.perf_counter()
                call()
                if k:
                    times[name].append(time.perf_counter() - start)
    return {name: (statistics.median(t) * 1e3, min(t) * 1e3) for name, t in times.items()}


def main() -> None:
    os.environ["SPMD_NUM_CPU_DEVICES"] = "1"
    import spmd.distributed

    if not spmd.distributed.launched_by_mpi():
        sys.exit(f"needs 2 processes: mpiexec -n 2 {sys.executable} {sys.argv[0]}")
    from mpi4py import MPI

    import spmd

    spmd.distributed.initialize()
    comm = MPI.COMM_WORLD
    if comm.Get_size() != 2 or len(spmd.devices()) != 2:
        sys.exit("needs 2 processes of 1 device: mpiexec -n 2 ... multihost_pmap.py")
    mine = np.random.default_rng(comm.Get_rank()).standard_normal((1, N), dtype=np.float32)
    resident = spmd.device_put(mine, spmd.local_devices()[0])
    total = spmd.pmap(lambda v: spmd.lax.psum(v, "i"), axis_name="i")
    mesh = spmd.make_mesh((2,), ("i",))
    split = spmd.NamedSharding(mesh, spmd.P("i"))
    whole = spmd.make_array_from_process_local_data(split, mine, (2, N))
    shard_total = spmd.jit(
        spmd.shard_map(lambda b: spmd.lax.psum(b, "i"), mesh=mesh, in_specs=spmd.P("i"),
                       out_specs=spmd.P("i"))
    )  # fmt: skip
    raw = np.empty_like(mine)

    def raw_allreduce() -> None:
        comm.Allreduce(mine, raw, op=MPI.SUM)

    ms = interleaved(
        {
            "pmap psum, host": lambda: total(mine).block_until_ready(),
            "pmap psum, device": lambda: total(resident).block_until_ready(),
            "shard_map psum": lambda: shard_total(whole).block_until_ready(),
            "mpi4py Allreduce": raw_allreduce,
        },
        comm.Barrier,
    )
    same = np.array_equal(np.asarray(total(mine)), raw)
    same &= np.array_equal(np.asarray(total(resident)), raw)
    same &= np.array_equal(shard_total(whole).addressable_shards[0].data, raw)
    if comm.Get_rank() == 0:
        raw_ms = ms["mpi4py Allreduce"][0]
        mb = mine.nbytes / 1e6
        print(f"pmap psum of {mb:.0f} MB float32 per process, 2 processes × 1 device")
        print(f"{'':18} {'median ms':>10} {'best ms':>9} {'GB/s':>7} {'ratio':>6}")
        for name, (median, best) in ms.items():
            gbs = mine.nbytes / median / 1e6
            print(f"{name:18} {median:10.1f} {best:9.1f} {gbs:7.2f} {raw_ms / median:6.2f}")
        print(f"pmap's and shard_map's sums equal Allreduce's: {same}")


if __name__ == "__main__":
    main()
