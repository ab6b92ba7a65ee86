"""Helpers between processes, as in ``jax.experimental.multihost_utils``: gather, broadcast,
and a named barrier. Each checks first that every process passes values of the same shapes
and dtypes (or the same name), so a mismatch is an error, never a hang."""

from __future__ import annotations

from typing import Any

import numpy as np

from spmd.core.aval import host_array
from spmd.errors import aval_str
from spmd.runtime.array import Array
from spmd.runtime.communicator import communicator_for
from spmd.runtime.put import reshard
from spmd.sharding.device import devices, process_count, process_index
from spmd.sharding.mesh import Mesh
from spmd.sharding.named import NamedSharding
from spmd.sharding.spec import PartitionSpec
from spmd.tree_util import tree_flatten, tree_map, tree_unflatten


def _transport():
    return communicator_for(devices()).transport


def _agree(leaves: list[np.ndarray], tree, what: str) -> None:
    transport = _transport()
    if transport is not None:
        described = f"{tree}\n" + "\n".join(aval_str(x.shape, x.dtype) for x in leaves)
        transport.agree(described, range(transport.count), what)


def process_allgather(in_tree: Any, tiled: bool = False) -> Any:
    """Every process gets the whole value of each leaf, as NumPy arrays.

    An Array is taken as one global Array that every process passes alike, and becomes its
    full value. Host data (each process its own value, of one shape on all) is stacked along
    a new leading axis in process order, or concatenated along axis 0 with ``tiled=True``.
    Example: ``process_allgather(np.array([process_index()]))``
    gives ``[[0], [1]]`` on two processes.
    """
    leaves, tree = tree_flatten(in_tree)
    host = [x for x in leaves if not isinstance(x, Array)]
    values = [host_array(x, "process_allgather argument") for x in host]
    # An Array must be the same global Array on every process: the same devices included (a
    # process-local result, each on its own device, is host data: pass np.asarray of it)
    arrays = [
        f"{aval_str(x.shape, x.dtype)} on devices {sorted(d.id for d in x.sharding.device_set)}"
        for x in leaves
        if isinstance(x, Array)
    ]
    _agree(values, f"{tree}\n" + "\n".join(arrays), "process_allgather's arguments")
    gathered = iter(_gather_host(values, tiled))
    return tree_unflatten(tree, [_whole(x) if isinstance(x, Array) else next(gathered)
                                 for x in leaves])  # fmt: skip


def _whole(x: Array) -> np.ndarray:
    """``x``'s whole value; every process decides alike whether blocks must move."""
    layout = x.sharding.layout(x.shape)
    count = process_count()
    if all(len({d.process_index for d in h}) == count for h in layout.holders.values()):
        return np.asarray(x)  # every process holds every block already
    grid = np.empty(len(devices()), dtype=object)
    grid[:] = devices()
    everywhere = NamedSharding(Mesh(grid, ("all",)), PartitionSpec())  # one copy per process
    return np.asarray(reshard(x, everywhere))


def _gather_host(values: list[np.ndarray], tiled: bool) -> list[np.ndarray]:
    transport = _transport()
    count = 1 if transport is None else transport.count
    here = process_index()
    out = []
    for value in values:
        parts = {here: np.ascontiguousarray(value)}
        if transport is not None:
            peers = [p for p in range(count) if p != here]
            parts.update({p: np.empty_like(parts[here]) for p in peers})
            transport.exchange(
                [(p, parts[here]) for p in peers], [(p, parts[p]) for p in peers], "allgather"
            )
        ordered = [parts[p] for p in range(count)]
        out.append(np.concatenate(ordered) if tiled else np.stack(ordered))
    return out


def broadcast_one_to_all(in_tree: Any, is_source: bool | None = None) -> Any:
    """The source process's values on every process (the source is process 0 unless
    ``is_source`` says which). Every process passes leaves of the same shapes and dtypes.

    Example: ``broadcast_one_to_all(np.array(process_index()))`` is ``0`` everywhere.
    """
    leaves, tree = tree_flatten(in_tree)
    values = [host_array(x, "broadcast_one_to_all argument") for x in leaves]
    _agree(values, tree, "broadcast_one_to_all's arguments")
    transport = _transport()
    if transport is None:
        return tree_map(np.asarray, in_tree)
    here = process_index()
    source = 0 if is_source is None else _source(transport, bool(is_source))
    peers = [p for p in range(transport.count) if p != here]
    if here == source:
        sends = [(p, np.ascontiguousarray(v)) for v in values for p in peers]
        transport.exchange(sends, [], "broadcast_one_to_all")
        return tree_unflatten(tree, values)
    received = [np.empty(v.shape, v.dtype) for v in values]
    transport.exchange([], [(source, r) for r in received], "broadcast_one_to_all")
    return tree_unflatten(tree, received)


def _source(transport, is_source: bool) -> int:
    """The first process that said it is the source (process 0 when none did)."""
    here = process_index()
    mine = np.array([is_source], np.int8)
    every = {p: np.empty(1, np.int8) for p in range(transport.count) if p != here}
    transport.exchange([(p, mine) for p in every], list(every.items()), "choosing the source")
    flags = {here: is_source, **{p: bool(f[0]) for p, f in every.items()}}
    return next((p for p in sorted(flags) if flags[p]), 0)


def sync_global_devices(name: str) -> None:
    """Wait until every process reaches ``sync_global_devices`` with the same ``name``; a
    different name, or a process that never comes, is a DistributedError."""
    transport = _transport()
    if transport is not None:
        transport.agree(f"sync_global_devices({name!r})", range(transport.count), "a barrier")
