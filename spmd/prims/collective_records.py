"""Each collective's record (spmd/core/primitive.py's CollectiveRules): its kind, the bytes
it moves and its runner.

A runner takes this process's devices' NumPy blocks and runs the collective through the
Communicator's verbs, passed in (prims never import the runtime): an all-reduce and a
broadcast over device groups, and the rest as changes of layout of the virtual array that
stacks the blocks (spmd/sharding/stacked.py): an all-gather drops the axes from the
stacked dimensions, an all-to-all moves them from the stacked dimensions into a chunk
dimension, a reduce-scatter splits a block dimension over them, a permute reassigns the
stacked blocks. Those work in one process or across many. Devices whose blocks differ in
shape (uneven shards in other groups) run in separate classes, one shape each.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spmd.core.primitive import CollectiveRules
from spmd.sharding.mesh import Mesh, device_groups
from spmd.sharding.stacked import lead_dims, shape_classes, stacked_layout

Buffers = dict  # device -> NumPy array


def _total(avals: Sequence) -> int:
    return sum(a.size * a.dtype.itemsize for a in avals)


def _ring_bytes(params: dict, avals: Sequence) -> int:
    """What each device sends and receives of its block's share, as a ring transport."""
    k = params.get("size", 1)
    return _total(avals) * (k - 1) // k


def _all_reduce_bytes(params: dict, avals: Sequence) -> int:
    k = params.get("size", 1)
    return 2 * _total(avals) * (k - 1) // k


def _all_gather_bytes(params: dict, avals: Sequence) -> int:
    return _total(avals) * (params.get("size", 1) - 1)


def _permute_bytes(params: dict, avals: Sequence) -> int:
    moved = sum(1 for s, d in params["perm"] if s != d)
    return _total(avals) * moved // params.get("size", 1)


def _broadcast_bytes(params: dict, avals: Sequence) -> int:
    return _total(avals)


def _dtype(held: Buffers) -> np.dtype:
    return next(iter(held.values())).dtype


def _by_shape_class(run: Callable) -> Callable:
    """A runner over each class of devices whose blocks share one shape."""

    def runner(comm: Any, mesh: Mesh, buffers: Buffers, shapes: Sequence, params: dict):
        devices = mesh.devices.flat
        out: Buffers = {}
        for block, positions in shape_classes(shapes).items():
            held = {devices[p]: buffers[devices[p]] for p in positions if devices[p] in buffers}
            if held:  # a class without devices here exchanges nothing with this process
                out.update(run(comm, mesh, positions, held, block, params))
        return out

    return runner


def _psum(comm, mesh, buffers, shapes, params) -> Buffers:
    return comm.all_reduce(buffers, device_groups(mesh, params["axes"]), params["op"])


def _broadcast(comm, mesh, buffers, shapes, params) -> Buffers:
    """Every device of each group along ``axes`` takes the first one's value."""
    return comm.broadcast(buffers, device_groups(mesh, params["axes"]), 0)


@_by_shape_class
def _all_gather(comm, mesh, positions, held, block, params) -> Buffers:
    axes, axis, tiled = params["axes"], params["axis"], params["tiled"]
    lead = lead_dims(mesh, axes)
    rest = [(a,) for a in lead[:-1]]
    src = stacked_layout(mesh, positions, lead, block, [*rest, axes, *[()] * len(block)])
    dst = stacked_layout(mesh, positions, lead, block, [*rest, (), *[()] * len(block)])
    ones = (1,) * len(rest)
    stacked_in = {d: a.reshape(*ones, 1, *block) for d, a in held.items()}
    got = comm.all_gather(stacked_in, src, dst, _dtype(held))
    out = {}
    for d in held:
        g = got[d]
        stacked = np.moveaxis(g.reshape(g.shape[len(rest) :]), 0, axis)
        if tiled:
            shape = list(block)
            shape[axis] *= stacked.shape[axis]
            stacked = stacked.reshape(shape)
        out[d] = stacked
    return out


@_by_shape_class
def _psum_scatter(comm, mesh, positions, held, block, params) -> Buffers:
    axes, dim, tiled = params["axes"], params["scatter_dimension"], params["tiled"]
    lead = [a for a in mesh.axis_names if a not in axes]
    rest = [(a,) for a in lead]
    spec = [()] * len(block)
    src = stacked_layout(mesh, positions, lead, block, [*rest, *spec])
    spec[dim] = axes
    dst = stacked_layout(mesh, positions, lead, block, [*rest, *spec])
    ones = (1,) * len(rest)
    inside = {mesh.devices.flat[p] for p in positions}
    members = [g for g in device_groups(mesh, axes) if g[0] in inside]
    stacked_in = {d: a.reshape(*ones, *block) for d, a in held.items()}
    got = comm.reduce_scatter(stacked_in, members, "sum", src, dst)
    out = {}
    for d in held:
        g = got[d].reshape(got[d].shape[len(rest) :])
        out[d] = g if tiled else np.squeeze(g, dim)
    return out


@_by_shape_class
def _all_to_all(comm, mesh, positions, held, block, params) -> Buffers:
    axes, size = params["axes"], params["size"]
    split, concat, tiled = params["split_axis"], params["concat_axis"], params["tiled"]
    chunked = (*block[:split], size, block[split] // size, *block[split + 1 :])
    lead = lead_dims(mesh, axes)
    rest = [(a,) for a in lead[:-1]]
    spec = [()] * len(chunked)
    src = stacked_layout(mesh, positions, lead, chunked, [*rest, axes, *spec])
    spec[split] = axes
    dst = stacked_layout(mesh, positions, lead, chunked, [*rest, (), *spec])
    ones = (1,) * len(rest)
    stacked_in = {d: a.reshape(*ones, 1, *chunked) for d, a in held.items()}
    got = comm.all_to_all(stacked_in, src, dst, _dtype(held))
    out = {}
    for d in held:
        g = got[d]
        pieces = g.reshape(g.shape[len(rest) :])  # (senders, *block with its chunk of split)
        pieces = np.squeeze(pieces, 1 + split)
        if tiled:
            shape = list(block)
            shape[split] //= size
            shape[concat] *= size
            out[d] = np.moveaxis(pieces, 0, concat).reshape(shape)
        else:
            out[d] = np.moveaxis(np.squeeze(pieces, 1 + split), 0, concat)
    return out


@_by_shape_class
def _ppermute(comm, mesh, positions, held, block, params) -> Buffers:
    axes = tuple(a for a in mesh.axis_names if a in params["axes"])  # mesh order, as JAX
    lead = lead_dims(mesh, axes)
    rest = [(a,) for a in lead[:-1]]
    src = stacked_layout(mesh, positions, lead, block, [*rest, axes, *[()] * len(block)])
    source_of = {d: s for s, d in params["perm"]}
    k = len(rest)
    blocks = []
    for b in src.blocks:
        sender = source_of.get(b[k], b[k])
        blocks.append((*b[:k], sender, *b[k + 1 :]))
    dst = dataclasses.replace(src, blocks=tuple(blocks))
    ones = (1,) * len(rest)
    stacked_in = {d: a.reshape(*ones, 1, *block) for d, a in held.items()}
    got = comm.permute(stacked_in, src, dst, _dtype(held))
    out = {}
    for d in held:
        b = src.blocks[src.position[d]]
        out[d] = got[d].reshape(block) if b[k] in source_of else np.zeros(block, got[d].dtype)
    return out


PSUM = CollectiveRules("psum", "all-reduce", _all_reduce_bytes, _psum)
ALL_GATHER = CollectiveRules("all_gather", "all-gather", _all_gather_bytes, _all_gather)
PSUM_SCATTER = CollectiveRules("psum_scatter", "reduce-scatter", _ring_bytes, _psum_scatter)
ALL_TO_ALL = CollectiveRules("all_to_all", "all-to-all", _ring_bytes, _all_to_all)
PPERMUTE = CollectiveRules("ppermute", "permute", _permute_bytes, _ppermute)
# No primitive writes it: the per-device lowering of a nested pmap hands every device of a
# group the first one's value.
BROADCAST = CollectiveRules("broadcast", "broadcast", _broadcast_bytes, _broadcast)
