"""spmd across processes over MPI: a psum beside raw mpi4py, and a layer under jit.

Run, from the repository root (each command is one measurement; the device count is fixed at
first use, so the part to run is a required argument; ``psum`` sets 1 device per process,
``layer`` defaults to 4 per process under mpiexec and 8 alone):

    .venv/bin/mpiexec -n 2 .venv/bin/python benchmarks/multiprocess.py psum
    SPMD_NUM_CPU_DEVICES=4 .venv/bin/mpiexec -n 2 .venv/bin/python benchmarks/multiprocess.py layer
    .venv/bin/python benchmarks/multiprocess.py layer      (1 process × 8 devices)

``psum``: 2 processes, 1 device each. Each process holds 100 MB of float32 (25M elements),
and ``shard_map(psum)`` gives both the sum (around a ring: spmd/runtime/ring.py); timed in
turns with it in the same run: the same psum sending every partial whole to the other
process (``direct``, as before the ring), raw ``comm.Allreduce`` of the same buffers, and
raw ``comm.Iallreduce`` polled with ``Test``. GB/s is the bytes of one process's buffer over
the time; ``ratio`` is the speed over raw ``Allreduce``'s, from the medians (1: as fast).

``bytes``: the data bytes each process sends for one ``psum``, ``psum_scatter`` and
``all_gather`` of 4 MiB of float32 per process (1 device each), over those 4 MiB, for 2, 4
and 8 processes (run alone, it launches the three jobs; oversubscribed cores are fine for
bytes): min and max over the processes, the ideal (2 (P - 1) / P for psum), and the header
bytes; ``psum, direct`` is the psum sent whole to every process, for comparison:

    .venv/bin/python benchmarks/multiprocess.py bytes

``checks``: what the message headers cost (spmd/runtime/messages.py). The 100 MB psum and
a tiny cached call (``jit(sum)`` of 4 float32 across the 2 processes, one 4-byte
all-reduce; each sample is the mean of 200 calls), each with the headers and with the
transport as it was before them (raw messages), taking turns in one run:

    .venv/bin/mpiexec -n 2 .venv/bin/python benchmarks/multiprocess.py checks
    SPMD_BENCH_ROUNDS=40 .venv/bin/mpiexec -n 2 ...        (more turns, for small differences)

``layer``: ``sigmoid(x @ w + b)`` (x 2048×4096, w 4096×1024, b 1024, float32) under jit on a
1-D mesh of every device, batch sharded (x split by rows) and contracting sharded (x split by
columns, w by rows). Compare the 2 × 4 devices run with the 1 × 8 devices run: the same
8 devices, the second in one process with no MPI. The single-process run also times NumPy.

Process 0 prints. Each time is the median (and best) of several calls after a warm-up, the
cases taking turns; every process makes the same calls in the same order, with a barrier
before each turn so that all start it together.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

N = 25_000_000  # float32 elements per process in the psum: 100 MB
ROUNDS = int(os.environ.get("SPMD_BENCH_ROUNDS", "8"))  # more: steadier medians, longer runs
TURN = 4  # each turn: TURN calls, the first not counted
TINY = 200  # tiny calls per sample


def _mode() -> str:
    if len(sys.argv) != 2 or sys.argv[1] not in ("psum", "layer", "checks", "bytes"):
        sys.exit(
            f"usage: {sys.argv[0]} psum|layer|checks|bytes (the module docstring has commands)"
        )
    return sys.argv[1]


def interleaved(calls: dict[str, Callable[[], object]], barrier: Callable[[], object]) -> dict:
    """Each call's ``(median, best)`` in ms, the calls taking turns for ``ROUNDS`` rounds."""
    for call in calls.values():  # warm-up: compiles, and touches every buffer once
        barrier()
        call()
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(ROUNDS):
        for name, call in calls.items():
            barrier()
            call()
            for _ in range(TURN - 1):
                start = time.perf_counter()
                call()
                times[name].append(time.perf_counter() - start)
    return {name: (statistics.median(t) * 1e3, min(t) * 1e3) for name, t in times.items()}


def psum_part(spmd, comm) -> None:
    from mpi4py import MPI

    from spmd import NamedSharding, P
    from spmd.runtime import ring

    if comm.Get_size() != 2 or len(spmd.devices()) != 2:
        sys.exit("psum needs 2 processes of 1 device: mpiexec -n 2 ... multiprocess.py psum")
    mesh = spmd.make_mesh((2,), ("i",))
    mine = np.random.default_rng(comm.Get_rank()).standard_normal(N, dtype=np.float32)
    x = spmd.make_array_from_process_local_data(NamedSharding(mesh, P("i")), mine, (2 * N,))
    total = spmd.jit(
        spmd.shard_map(lambda b: spmd.lax.psum(b, "i"), mesh=mesh, in_specs=P("i"), out_specs=P())
    )
    raw = np.empty_like(mine)
    ring_bytes = ring.RING_BYTES

    def direct() -> None:  # every partial to every process, as before the ring
        ring.RING_BYTES = 1 << 62
        try:
            total(x).block_until_ready()
        finally:
            ring.RING_BYTES = ring_bytes

    def raw_allreduce() -> None:
        comm.Allreduce(mine, raw, op=MPI.SUM)

    def raw_iallreduce() -> None:  # polled, as a transport would poll against its deadline
        request = comm.Iallreduce(mine, raw, op=MPI.SUM)
        while not request.Test():
            pass

    ms = interleaved(
        {
            "spmd psum": lambda: total(x).block_until_ready(),
            "spmd psum, direct": direct,
            "mpi4py Allreduce": raw_allreduce,
            "mpi4py Iallreduce": raw_iallreduce,
        },
        comm.Barrier,
    )
    raw_allreduce()
    same = np.array_equal(np.asarray(total(x)), raw)
    if comm.Get_rank() == 0:
        raw_ms = ms["mpi4py Allreduce"][0]
        print(f"psum of {mine.nbytes / 1e6:.0f} MB float32 per process, 2 processes × 1 device")
        print(f"{'':18} {'median ms':>10} {'best ms':>9} {'GB/s':>7} {'ratio':>6}")
        for name, (median, best) in ms.items():
            gbs = mine.nbytes / median / 1e6
            print(f"{name:18} {median:10.1f} {best:9.1f} {gbs:7.2f} {raw_ms / median:6.2f}")
        print(f"spmd's sum equals Allreduce's: {same}")


BYTES_N = 1 << 20  # float32 elements per process in the bytes part: 4 MiB
BYTES_PROCESSES = (2, 4, 8)


def bytes_part(spmd, comm) -> None:
    """Bytes each process sends for one cross-process psum, psum_scatter and all_gather of
    BYTES_N float32 per process (1 device each), over that block's bytes."""
    from spmd import NamedSharding, P
    from spmd.runtime import ring
    from spmd.runtime.communicator import communicator_for

    count = comm.Get_size()
    transport = communicator_for(spmd.devices()).transport
    mesh = spmd.make_mesh((count,), ("i",))
    mine = np.random.default_rng(comm.Get_rank()).standard_normal(BYTES_N, dtype=np.float32)
    x = spmd.make_array_from_process_local_data(
        NamedSharding(mesh, P("i")), mine, (count * BYTES_N,)
    )
    bodies = {
        "psum": (lambda b: spmd.lax.psum(b, "i"), P(), 2 * (count - 1) / count),
        "psum_scatter": (
            lambda b: spmd.lax.psum_scatter(b, "i", tiled=True),
            P("i"),
            (count - 1) / count,
        ),
        "all_gather": (lambda b: spmd.lax.all_gather(b, "i", tiled=True), P(), count - 1),
    }
    bodies["psum, direct"] = (bodies["psum"][0], P(), count - 1)
    rows = []
    ring_bytes = ring.RING_BYTES
    for name, (body, out_spec, ideal) in bodies.items():
        run = spmd.jit(spmd.shard_map(body, mesh=mesh, in_specs=P("i"), out_specs=out_spec))
        run(x).block_until_ready()  # agreed on and compiled: not counted
        before = (transport.sent.data_bytes, transport.sent.overhead_bytes)
        ring.RING_BYTES = 1 << 62 if name.endswith("direct") else ring_bytes
        run(x).block_until_ready()
        ring.RING_BYTES = ring_bytes
        sent = (transport.sent.data_bytes - before[0], transport.sent.overhead_bytes - before[1])
        every = comm.gather(sent, root=0)
        if comm.Get_rank() == 0:
            most = max(d for d, _ in every) / mine.nbytes
            least = min(d for d, _ in every) / mine.nbytes
            headers = max(h for _, h in every)
            rows.append((name, least, most, ideal, headers))
    if comm.Get_rank() == 0:
        print(f"{count} processes × 1 device, {mine.nbytes / 2**20:.0f} MiB float32 per process")
        print(f"{'':14} {'sent/data min':>13} {'max':>6} {'ideal':>6} {'header bytes':>13}")
        for name, least, most, ideal, headers in rows:
            print(f"{name:14} {least:13.3f} {most:6.3f} {ideal:6.3f} {headers:13d}")


def launch_bytes() -> None:
    """Alone: run the bytes part under mpiexec for each process count in turn."""
    import subprocess
    from pathlib import Path

    mpiexec = Path(sys.executable).parent / "mpiexec"
    for count in BYTES_PROCESSES:
        command = [str(mpiexec), "-n", str(count), sys.executable, __file__, "bytes"]
        subprocess.run(command, check=True, env={**os.environ, "SPMD_NUM_CPU_DEVICES": "1"})


def checks_part(spmd, comm) -> None:
    """The cost of the message headers: each case with and without them, taking turns."""
    from spmd import NamedSharding, P
    from spmd.runtime.communicator import communicator_for
    from spmd.runtime.mpi import _DATA

    if comm.Get_size() != 2 or len(spmd.devices()) != 2:
        sys.exit("checks needs 2 processes of 1 device: mpiexec -n 2 ... multiprocess.py checks")
    mesh = spmd.make_mesh((2,), ("i",))
    transport = communicator_for(spmd.devices()).transport
    checked = transport.exchange

    def unchecked(sends, recvs, what) -> None:  # the transport as it was before headers
        transport._raw_exchange(sends, recvs, what, _DATA)

    mine = np.random.default_rng(comm.Get_rank()).standard_normal(N, dtype=np.float32)
    big = spmd.make_array_from_process_local_data(NamedSharding(mesh, P("i")), mine, (2 * N,))
    total = spmd.jit(
        spmd.shard_map(lambda b: spmd.lax.psum(b, "i"), mesh=mesh, in_specs=P("i"), out_specs=P())
    )
    tiny = spmd.make_array_from_process_local_data(
        NamedSharding(mesh, P("i")), np.ones(2, np.float32), (4,)
    )
    tiny_sum = spmd.jit(lambda v: v.sum())

    def tiny_calls() -> None:  # one sample: the mean of TINY calls
        for _ in range(TINY):
            tiny_sum(tiny).block_until_ready()

    def headers(exchange, call):
        def run() -> None:
            transport.exchange = exchange
            call()

        return run

    calls = {}
    for label, exchange in (("with headers", checked), ("without", unchecked)):
        calls[f"psum 100 MB {label}"] = headers(exchange, lambda: total(big).block_until_ready())
        calls[f"tiny call {label}"] = headers(exchange, tiny_calls)
    ms = interleaved(calls, comm.Barrier)
    transport.exchange = checked
    if comm.Get_rank() == 0:
        print("message headers: 2 processes × 1 device; tiny call: jit(sum) of 4 float32")
        print(f"{'':26} {'median':>10} {'best':>10} {'with/without (median, best)':>28}")
        for name, (median, best) in ms.items():
            scale, unit = (1e3 / TINY, "µs") if name.startswith("tiny") else (1, "ms")
            base_median, base_best = ms[name.replace("with headers", "without")]
            print(f"{name:26} {median * scale:7.1f} {unit} {best * scale:7.1f} {unit} "
                  f"{median / base_median:13.3f} {best / base_best:13.3f}")  # fmt: skip


def layer_part(spmd, comm) -> None:
    from spmd import NamedSharding, P

    rng = np.random.default_rng(0)  # the same data on every process
    lx = rng.standard_normal((2048, 4096), dtype=np.float32)
    w = rng.standard_normal((4096, 1024), dtype=np.float32) / 64
    b = rng.standard_normal(1024, dtype=np.float32)
    line = spmd.make_mesh((len(spmd.devices()),), ("x",))

    def put(value: np.ndarray, *entries):
        return spmd.device_put(value, NamedSharding(line, P(*entries)))

    layer = spmd.jit(lambda v, w, b: spmd.nn.sigmoid(v @ w + b))
    cases = {
        "batch sharded": [put(lx, "x", None), put(w), put(b)],
        "contracting sharded": [put(lx, None, "x"), put(w, "x", None), put(b)],
    }
    calls = {name: lambda a=args: layer(*a).block_until_ready() for name, args in cases.items()}
    expected = 1 / (1 + np.exp(-(lx @ w + b)))
    for name, args in cases.items():
        got = spmd.multihost_utils.process_allgather(layer(*args))
        assert np.allclose(got, expected, atol=1e-5), name
    alone = spmd.process_count() == 1
    if alone:
        calls["NumPy, one process"] = lambda: 1 / (1 + np.exp(-(lx @ w + b)))
    ms = interleaved(calls, comm.Barrier if comm is not None else lambda: None)
    if spmd.process_index() == 0:
        shape = f"{spmd.process_count()} process(es) × {len(spmd.local_devices())} devices"
        print(f"sigmoid(x @ w + b), x 2048×4096, w 4096×1024, on {shape}")
        print(f"{'':20} {'median ms':>10} {'best ms':>9}" + (f" {'/NumPy':>7}" if alone else ""))
        for name, (median, best) in ms.items():
            ratio = f" {median / ms['NumPy, one process'][0]:7.2f}" if alone else ""
            print(f"{name:20} {median:10.1f} {best:9.1f}{ratio}")


def main() -> None:
    mode = _mode()
    import spmd.distributed

    under_mpi = spmd.distributed.launched_by_mpi()
    if mode == "bytes" and not under_mpi:
        launch_bytes()
        return
    if mode in ("psum", "checks", "bytes"):
        os.environ["SPMD_NUM_CPU_DEVICES"] = "1"
    else:
        os.environ.setdefault("SPMD_NUM_CPU_DEVICES", "4" if under_mpi else "8")
    import spmd

    comm = None
    if under_mpi:
        from mpi4py import MPI

        spmd.distributed.initialize()
        comm = MPI.COMM_WORLD
    parts = {"psum": psum_part, "checks": checks_part, "bytes": bytes_part}
    if mode in parts:
        if comm is None:
            sys.exit(f"{mode} needs 2 processes: mpiexec -n 2 ... multiprocess.py {mode}")
        parts[mode](spmd, comm)
    else:
        layer_part(spmd, comm)
    if spmd.process_index() == 0:
        print(f"cores: {len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else '?'}")


if __name__ == "__main__":
    main()
