"""The collectives of per-device programs, run through a Communicator.

A collective over mesh axes ``A`` sees one block per device. Stacking those blocks along
new leading dimensions, one per mesh axis, gives a virtual global array that each device
holds one block of; every collective is then a change of that array's layout (an
all-gather drops ``A`` from the stacked dimensions, an all-to-all moves ``A`` from the
stacked dimensions into a chunk dimension, a reduce-scatter splits a block dimension over
pending axes ``A``), which the Communicator's layout-based methods already perform, in
one process or across many. Devices whose blocks differ in shape (uneven shards in other
groups) run in separate classes, one shape each.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import numpy as np

from spmd.runtime.communicator import Buffers, Communicator
from spmd.sharding.layout import Layout, mesh_layout
from spmd.sharding.mesh import Mesh, device_groups


def run_collective(
    name: str, params: dict, buffers: Buffers, shapes: Sequence, mesh: Mesh, comm: Communicator
) -> Buffers:
    """``name`` (psum, all_gather, psum_scatter, all_to_all, ppermute) of this process's
    devices' ``buffers``; ``shapes`` lists every mesh position's block shape."""
    arrays = {d: np.asarray(b) for d, b in buffers.items()}
    axes = params["axes"]
    devices = mesh.devices.flat
    if name == "psum":
        return comm.all_reduce(arrays, device_groups(mesh, axes), params["op"])
    run = _RUNNERS[name]
    out: Buffers = {}
    for block, positions in _shape_classes(shapes).items():
        held = {devices[p]: arrays[devices[p]] for p in positions if devices[p] in arrays}
        if held:  # a class without devices here exchanges nothing with this process
            out.update(run(comm, mesh, positions, held, block, params))
    return out


def _shape_classes(shapes: Sequence) -> dict[tuple, list[int]]:
    classes: dict[tuple, list[int]] = {}
    for p, shape in enumerate(shapes):
        classes.setdefault(tuple(shape), []).append(p)
    return classes


def _dtype(held: Buffers) -> np.dtype:
    return next(iter(held.values())).dtype


def _stacked(mesh: Mesh, positions: list[int], lead: list, block: tuple[int, ...], spec) -> Layout:
    """The layout, restricted to ``positions``, of a virtual array of leading dimensions
    ``lead`` (a mesh axis name or a tuple of names each, stacked) followed by ``block``;
    ``spec`` gives each dimension's mesh axes."""
    sizes = dict(mesh.shape)
    names = [(d,) if isinstance(d, str) else tuple(d) for d in lead]
    shape = tuple(math.prod(sizes[a] for a in n) for n in names) + tuple(block)
    grid = mesh.devices
    full = mesh_layout(grid.shape, tuple(grid.flat), mesh.axis_names, tuple(spec), shape)
    return Layout(
        full.shape,
        full.parts,
        tuple(full.devices[p] for p in positions),
        tuple(full.blocks[p] for p in positions),
    )


def _lead(mesh: Mesh, axes: tuple[str, ...]) -> list:
    """Leading dimensions: each mesh axis outside ``axes``, then ``axes`` merged."""
    return [a for a in mesh.axis_names if a not in axes] + [axes]


def _all_gather(comm, mesh, positions, held, block, params) -> Buffers:
    axes, axis, tiled = params["axes"], params["axis"], params["tiled"]
    lead = _lead(mesh, axes)
    rest = [(a,) for a in lead[:-1]]
    src = _stacked(mesh, positions, lead, block, [*rest, axes, *[()] * len(block)])
    dst = _stacked(mesh, positions, lead, block, [*rest, (), *[()] * len(block)])
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


def _psum_scatter(comm, mesh, positions, held, block, params) -> Buffers:
    axes, dim, tiled = params["axes"], params["scatter_dimension"], params["tiled"]
    lead = [a for a in mesh.axis_names if a not in axes]
    rest = [(a,) for a in lead]
    spec = [()] * len(block)
    src = _stacked(mesh, positions, lead, block, [*rest, *spec])
    spec[dim] = axes
    dst = _stacked(mesh, positions, lead, block, [*rest, *spec])
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


def _all_to_all(comm, mesh, positions, held, block, params) -> Buffers:
    axes, size = params["axes"], params["size"]
    split, concat, tiled = params["split_axis"], params["concat_axis"], params["tiled"]
    chunked = (*block[:split], size, block[split] // size, *block[split + 1 :])
    lead = _lead(mesh, axes)
    rest = [(a,) for a in lead[:-1]]
    spec = [()] * len(chunked)
    src = _stacked(mesh, positions, lead, chunked, [*rest, axes, *spec])
    spec[split] = axes
    dst = _stacked(mesh, positions, lead, chunked, [*rest, (), *spec])
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


def _ppermute(comm, mesh, positions, held, block, params) -> Buffers:
    axes = tuple(a for a in mesh.axis_names if a in params["axes"])  # mesh order, as JAX
    lead = _lead(mesh, axes)
    rest = [(a,) for a in lead[:-1]]
    src = _stacked(mesh, positions, lead, block, [*rest, axes, *[()] * len(block)])
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


_RUNNERS: dict[str, Callable] = {
    "all_gather": _all_gather,
    "psum_scatter": _psum_scatter,
    "all_to_all": _all_to_all,
    "ppermute": _ppermute,
}
