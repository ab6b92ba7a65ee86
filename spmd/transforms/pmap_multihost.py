"""Multihost pmap: every process calls the same pmap with its local slice of the mapped axis.

As in JAX, process ``p`` passes the rows for its own devices (leading size: its devices
taking part, or fewer; processes may pass different numbers of rows, and every process's
per-row shapes and dtypes must match); the global axis is the processes' rows in process
order, so
collectives see every row, and each process gets back its own rows of the result. With
``devices=``, only the processes owning those devices take part. Nested pmaps run on a grid
whose outer axis is split between the processes.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import numpy as np

from spmd.core.aval import host_array
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, ShardingError
from spmd.runtime.array import Array
from spmd.runtime.buffers import on_device
from spmd.runtime.communicator import communicator_for
from spmd.runtime.messages import Speaker, speaking_for
from spmd.runtime.put import frozen, local_holders
from spmd.sharding.device import devices as all_devices
from spmd.sharding.device import process_index
from spmd.sharding.mesh import Mesh
from spmd.sharding.named import NamedSharding
from spmd.sharding.spec import PartitionSpec
from spmd.tree_util import tree_flatten, tree_unflatten

# Whose messages agree on the rows and the call: one Speaker for every pmap, so that the
# headers match even where the processes called different functions (the digest tells).
_CALL = Speaker("a multihost pmap call", operation="rows per process and signature")


def call_across_processes(pmapped, args: tuple) -> Any:
    """Run ``pmapped`` on this process's slice ``args``; returns this process's slice."""
    static = {i: args[i] for i in pmapped.static_positions(args)}
    dynamic = tuple(a for i, a in enumerate(args) if i not in static)
    leaves, in_tree = tree_flatten(dynamic)
    in_axes = pmapped._in_axes(dynamic, leaves)
    rows = pmapped._size([aval_of(leaf) for leaf in leaves], in_axes)
    candidates = pmapped.devices if pmapped.devices is not None else all_devices()
    processes = sorted({d.process_index for d in candidates})
    if process_index() not in processes:
        raise ShardingError(
            f"{pmapped._where()}: process {process_index()} owns none of the pmap's devices "
            f"(processes {processes} do); only the processes that own devices= call it."
        )
    comm = communicator_for(candidates)
    signature = _signature(pmapped, leaves, in_axes, static)
    every = _rows_per_process(pmapped, comm, candidates, processes, rows, signature)
    key = (
        tuple(every.items()),
        tuple(aval_of(leaf).shape for leaf in leaves),
        tuple(sorted(static.items())),
    )
    call = (static, leaves, in_tree, in_axes)
    found = pmapped._across.get(key)
    if found is None:
        found = pmapped._across[key] = _global_mesh(pmapped, call, every, candidates, processes)
    mesh, runner = found
    offset = sum(every[p] for p in processes if p < process_index())
    total = sum(every.values())
    lent: list[np.ndarray] = []  # the caller's arrays that device buffers view, uncopied

    def place(leaf, axis: int, shape: tuple[int, ...]) -> Array:
        spec = [None] * len(shape)
        spec[axis] = pmapped.axis_name
        sharding = NamedSharding(mesh, PartitionSpec(*spec))
        return _rows_array(sharding, leaf, shape, axis, offset, lent)

    full = _global_arguments(call, total, place)
    out, out_tree = tree_flatten(runner._run_global(full))
    local_mesh = _local_mesh(mesh, rows)
    mine = [_local_rows(x, local_mesh, pmapped.axis_name) for x in out]
    return tree_unflatten(out_tree, [_unaliased(x, lent) for x in mine])


def _signature(pmapped, leaves, in_axes, static) -> str:
    """What every process's call must share: the function, each leaf's dtype and shape
    without its mapped axis (the rows may differ), and the static arguments' types."""
    parts = []
    for leaf, axis in zip(leaves, in_axes, strict=True):
        aval = aval_of(leaf)
        shape = list(aval.shape)
        if axis is not None:
            shape[axis] = "rows"
        parts.append(f"{aval.dtype}[{', '.join(map(str, shape))}]")
    kinds = ", ".join(f"{i}: {type(v).__name__}" for i, v in sorted(static.items()))
    return f"{pmapped._where()} on ({', '.join(parts)}) static ({kinds})"


def _rows_per_process(
    pmapped, comm, candidates, processes: list[int], rows: int, signature: str
) -> dict[int, int]:
    """Each process → the rows it passed (its slice of the global mapped axis), in one small
    message per peer that also carries a digest of the call's ``signature``: a process whose
    digest differs makes every process raise the disagreement, naming both signatures."""
    here = process_index()
    every = {here: rows}
    peers = [p for p in processes if p != here]
    if peers and comm.transport is not None:
        digest = np.frombuffer(hashlib.sha256(signature.encode()).digest(), np.int64)
        mine = np.concatenate([[rows], digest])
        theirs = {p: np.empty_like(mine) for p in peers}
        with speaking_for(_CALL):
            comm.transport.exchange([(p, mine) for p in peers], list(theirs.items()), "rows")
        if any(not np.array_equal(n[1:], digest) for n in theirs.values()):
            # every process sees a digest unlike its own, so all of them agree here, and raise
            comm.agree(signature, candidates, "a pmap call")
        every.update({p: int(n[0]) for p, n in theirs.items()})
    empty = [p for p in processes if every[p] == 0]
    if empty:
        raise ShapeError(
            f"{pmapped._where()}: process(es) {empty} passed 0 rows along in_axes "
            f"(rows per process: {_rows_text(every)}); every process taking part passes at "
            f"least one row."
        )
    return dict(sorted(every.items()))


def _rows_text(every: dict[int, int]) -> str:
    return ", ".join(f"process {p}: {n}" for p, n in sorted(every.items()))


def _rows_array(sharding, leaf, shape, axis: int, offset: int, lent: list) -> Array:
    """The global Array of ``shape`` whose rows ``offset`` on along ``axis`` are ``leaf``'s
    (this process's rows; the other processes hold theirs).

    Contiguous blocks on NumPy devices are read-only views of ``leaf``, not copies: the
    buffers live only for this call, and a NumPy ``leaf`` (which its owner may still write
    to) goes into ``lent`` so that no result keeps a view of it (``_unaliased``)."""
    value = host_array(np.asarray(leaf), "a mapped argument")  # an Array's: a read-only view
    layout = sharding.layout(shape)
    buffers = {}
    for block, devices in local_holders(layout).items():
        index = tuple(
            slice(a - offset, b - offset) if dim == axis else slice(a, b)
            for dim, (a, b) in enumerate(layout.bounds(block))
        )
        piece = value[index]
        if piece.flags.c_contiguous and all(d.backend == "numpy" for d in devices):
            piece = piece.view()
            piece.flags.writeable = False
            if not isinstance(leaf, Array) and not any(v is value for v in lent):
                lent.append(value)
        else:
            piece = frozen(piece)
        buffers.update((d, on_device(d, piece)) for d in devices)
    return Array._from_buffers(sharding, buffers, shape, value.dtype)


def _unaliased(x: Any, lent: list[np.ndarray]) -> Any:
    """``x`` with every buffer that shares memory with one of the caller's ``lent`` arrays
    replaced by a read-only copy (a pmap that returns its argument, or a view of it)."""
    if not lent or not isinstance(x, Array):
        return x
    buffers = dict(x._buffers)
    copies: dict[int, np.ndarray] = {}  # by id of the buffer: devices sharing one share a copy
    for device, buffer in buffers.items():
        if isinstance(buffer, np.ndarray) and any(np.may_share_memory(buffer, v) for v in lent):
            if id(buffer) not in copies:
                copies[id(buffer)] = frozen(buffer)
            buffers[device] = copies[id(buffer)]
    if all(buffers[d] is x._buffers[d] for d in buffers):
        return x
    return Array._from_buffers(x.sharding, buffers, x.shape, x.dtype)


def _global_mesh(pmapped, call, every, candidates, processes) -> tuple[Mesh, Any]:
    """The grid of the pmap (outer axis: every process's rows, in process order) and a pmap
    pinned to it."""
    owned = {p: [d for d in candidates if d.process_index == p] for p in processes}
    _check_rows(pmapped, every, 1, owned)
    total = sum(every.values())

    def stand_in(leaf, axis: int, shape: tuple[int, ...]) -> np.ndarray:
        return np.broadcast_to(np.zeros((), aval_of(leaf).dtype), shape)  # allocates nothing

    names, sizes = pmapped._grid(_global_arguments(call, total, stand_in))
    inner = math.prod(sizes[1:])
    _check_rows(pmapped, every, inner, owned)
    chosen = [d for p in processes for d in owned[p][: every[p] * inner]]
    grid = np.empty(len(chosen), dtype=object)
    grid[:] = chosen
    mesh = Mesh(grid.reshape((total, *sizes[1:])), names)
    return mesh, pmapped._pinned(chosen)


def _check_rows(pmapped, every: dict[int, int], inner: int, owned: dict) -> None:
    """Every process has devices for the rows it passed (``every``) × ``inner``."""
    for p, devices in owned.items():
        rows = every[p]
        if rows * inner > len(devices):
            nested = f" ({rows} × {inner} for the nested pmaps)" if inner > 1 else ""
            raise ShapeError(
                f"{pmapped._where()}: process {p} passed {rows} rows along in_axes, which need "
                f"{rows * inner} of its devices{nested}, but it has {len(devices)} taking part. "
                f"Pass at most {len(devices) // inner} rows per process "
                f"(spmd.local_device_count())."
            )


def _global_arguments(call, total: int, place) -> tuple:
    """The call's arguments with each mapped leaf replaced by ``place(leaf, axis, shape)``,
    ``shape`` being its global shape (``total`` rows along ``axis``)."""
    static, leaves, in_tree, in_axes = call
    placed = []
    for leaf, axis in zip(leaves, in_axes, strict=True):
        if axis is None:
            placed.append(leaf)
            continue
        shape = list(aval_of(leaf).shape)
        shape[axis] = total
        placed.append(place(leaf, axis, tuple(shape)))
    full = list(tree_unflatten(in_tree, placed))
    for i in sorted(static):
        full.insert(i, static[i])
    return tuple(full)


def _local_mesh(mesh: Mesh, rows: int) -> Mesh:
    here = process_index()
    local = [d for d in mesh.devices.flat if d.process_index == here]
    grid = np.empty(len(local), dtype=object)
    grid[:] = local
    return Mesh(grid.reshape((rows, *mesh.devices.shape[1:])), mesh.axis_names, mesh.axis_types)


def _local_rows(x: Any, local_mesh: Mesh, axis_name: str) -> Any:
    """This process's rows of a global pmap result, as an Array on its own devices."""
    if not isinstance(x, Array) or not isinstance(x.sharding, NamedSharding):
        return x
    spec = x.sharding.spec
    shape = list(x.shape)
    for dim, entry in enumerate(spec):
        names = (entry,) if isinstance(entry, str) else tuple(entry or ())
        if axis_name in names:
            shape[dim] = (
                shape[dim] * local_mesh.devices.shape[0] // x.sharding.mesh.shape[axis_name]
            )
    buffers = {d: x._buffers[d] for d in local_mesh.devices.flat}
    sharding = NamedSharding(local_mesh, spec, x.sharding.memory_kind)
    return Array._from_buffers(sharding, buffers, tuple(shape), x.dtype)
