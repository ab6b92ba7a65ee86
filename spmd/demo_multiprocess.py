"""The tour under ``mpiexec -n N python -m spmd demo``: every process runs it, and each
prints its own view in turn (process 0 first)."""

from __future__ import annotations

import numpy as np
from rich.console import Console

import spmd
from spmd import NamedSharding, P
from spmd.lax import psum
from spmd.multihost_utils import process_allgather, sync_global_devices

console = Console(soft_wrap=True)


def in_turn(title: str, code: str, show) -> None:
    """Each process prints ``show()``'s lines under ``title``, one process after another."""
    here = spmd.process_index()
    if here == 0:
        console.print(f"\n[bold cyan]── {title}[/]")
        console.print(f"[dim]>>> {code}[/]", highlight=False)
    for p in range(spmd.process_count()):
        if p == here:
            for line in show():
                console.print(f"[magenta]process {p}[/]: {line}", highlight=False)
            console.file.flush()
        sync_global_devices(f"{title}, process {p}")


def run() -> None:
    spmd.distributed.initialize()
    here, count = spmd.process_index(), spmd.process_count()
    if here == 0:
        console.print(
            f"[bold]spmd[/] across {count} processes over MPI: every process runs this same "
            f"program on its own devices."
        )
    in_turn(
        "Devices: global, and this process's",
        "spmd.devices(), spmd.local_devices()",
        lambda: [f"{spmd.device_count()} devices; mine: {spmd.local_devices()}"],
    )
    mesh = spmd.make_mesh((spmd.device_count(),), ("x",))
    a = spmd.device_put(np.arange(18.0), NamedSharding(mesh, P("x")))
    in_turn(
        "A global Array: each process holds only its shards (uneven ones too)",
        "a = spmd.device_put(np.arange(18.0), NamedSharding(mesh, P('x')))",
        lambda: [f"{s.device} {s.index[0]}: {np.asarray(s.data)}" for s in a.addressable_shards],
    )
    total = spmd.jit(lambda v: (v * v).sum())(a)
    in_turn(
        "jit across processes: the sum's all-reduce crosses them through MPI",
        "spmd.jit(lambda v: (v * v).sum())(a)",
        lambda: [f"{np.asarray(total)} (NumPy: {(np.arange(18.0) ** 2).sum()})"],
    )
    rows = spmd.local_device_count()
    local = np.arange(rows, dtype=np.float32) + rows * here + 1
    normalized = spmd.pmap(lambda v: v / psum(v, "i"), "i")(local)
    in_turn(
        "Multihost pmap: each process passes its local slice; psum sees the global axis",
        "spmd.pmap(lambda v: v / psum(v, 'i'), 'i')(local)",
        lambda: [f"local {local} -> {np.round(np.asarray(normalized), 4)}"],
    )
    summed = spmd.shard_map(lambda b: psum(b, "x"), mesh, in_specs=P("x"), out_specs=P())(
        np.arange(4.0 * spmd.device_count()).reshape(spmd.device_count(), 4)
    )
    in_turn(
        "psum in shard_map over every device of every process",
        "spmd.shard_map(lambda b: psum(b, 'x'), mesh, in_specs=P('x'), out_specs=P())(x)",
        lambda: [str(np.asarray(summed))],
    )
    whole = process_allgather(spmd.jit(lambda v: 2 * v)(a))
    in_turn(
        "process_allgather: a global Array's whole value on every process",
        "spmd.multihost_utils.process_allgather(2 * a)",
        lambda: [str(whole)],
    )
