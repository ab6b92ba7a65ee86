"""Multihost pmap: every process calls the same pmap with its local slice of the mapped axis.

As in JAX, process ``p`` passes the rows for its own devices (leading size: its devices
taking part, or fewer); the global axis is the processes' rows in process order, so
collectives see every row, and each process gets back its own rows of the result. With
``devices=``, only the processes owning those devices take part. Nested pmaps run on a grid
whose outer axis is split between the processes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from spmd.core.trace import aval_of
from spmd.errors import ShapeError, ShardingError
from spmd.runtime.array import Array
from spmd.runtime.communicator import communicator_for
from spmd.runtime.construct import make_array_from_process_local_data
from spmd.sharding.device import devices as all_devices
from spmd.sharding.device import process_index
from spmd.sharding.mesh import Mesh
from spmd.sharding.named import NamedSharding
from spmd.sharding.spec import PartitionSpec
from spmd.tree_util import tree_flatten, tree_unflatten


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
    communicator_for(candidates).agree(
        f"{pmapped._where()} with {rows} rows per process", candidates, "a pmap call"
    )
    key = (rows, tuple(aval_of(leaf).shape for leaf in leaves), tuple(sorted(static.items())))
    call = (static, leaves, in_tree, in_axes)
    found = pmapped._across.get(key)
    if found is None:
        found = pmapped._across[key] = _global_mesh(pmapped, call, rows, candidates, processes)
    mesh, runner = found

    def place(leaf, axis: int, shape: tuple[int, ...]) -> Array:
        spec = [None] * len(shape)
        spec[axis] = pmapped.axis_name
        sharding = NamedSharding(mesh, PartitionSpec(*spec))
        return make_array_from_process_local_data(sharding, np.asarray(leaf), shape)

    full = _global_arguments(call, rows * len(processes), place)
    out, out_tree = tree_flatten(runner._run_global(full))
    local_mesh = _local_mesh(mesh, rows)
    return tree_unflatten(out_tree, [_local_rows(x, local_mesh, pmapped.axis_name) for x in out])


def _global_mesh(pmapped, call, rows, candidates, processes) -> tuple[Mesh, Any]:
    """The grid of the pmap (outer axis: every process's rows) and a pmap pinned to it."""
    owned = {p: [d for d in candidates if d.process_index == p] for p in processes}
    _check_rows(pmapped, rows, 1, owned)

    def stand_in(leaf, axis: int, shape: tuple[int, ...]) -> np.ndarray:
        return np.broadcast_to(np.zeros((), aval_of(leaf).dtype), shape)  # allocates nothing

    names, sizes = pmapped._grid(_global_arguments(call, rows * len(processes), stand_in))
    inner = math.prod(sizes[1:])
    _check_rows(pmapped, rows, inner, owned)
    chosen = [d for p in processes for d in owned[p][: rows * inner]]
    grid = np.empty(len(chosen), dtype=object)
    grid[:] = chosen
    mesh = Mesh(grid.reshape((rows * len(processes), *sizes[1:])), names)
    return mesh, pmapped._pinned(chosen)


def _check_rows(pmapped, rows: int, inner: int, owned: dict) -> None:
    """Every process (they all passed ``rows``) has devices for its rows × ``inner``."""
    for p, devices in owned.items():
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
