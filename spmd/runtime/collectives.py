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

from spmd.runtime.communicator import Communicator, groups
from spmd.sharding.layout import Layout, mesh_layout
from spmd.sharding.mesh import Mesh

Buffers = list[np.ndarray]


def run_collective(
    name: str, params: dict, buffers: Sequence, mesh: Mesh, comm: Communicator
) -> Buffers:
    """``name`` (psum, all_gather, psum_scatter, all_to_all, ppermute) of per-device
    ``buffers``, listed in the mesh's device order."""
    arrays = [np.asarray(b) for b in buffers]
    axes = params["axes"]
    if name == "psum":
        return comm.all_reduce(arrays, groups(mesh, axes), params["op"])
    run = _RUNNERS[name]
    out: Buffers = [None] * len(arrays)  # type: ignore[list-item]
    for positions in _shape_classes(arrays):
        results = run(comm, mesh, positions, [arrays[p] for p in positions], params)
        for p, r in zip(positions, results, strict=True):
            out[p] = r
    return out


def _shape_classes(arrays: Buffers) -> list[list[int]]:
    classes: dict[tuple, list[int]] = {}
    for p, a in enumerate(arrays):
        classes.setdefault(a.shape, []).append(p)
    return list(classes.values())


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


def _all_gather(comm, mesh, positions, arrays, params) -> Buffers:
    axes, axis, tiled = params["axes"], params["axis"], params["tiled"]
    block = arrays[0].shape
    lead = _lead(mesh, axes)
    rest = [(a,) for a in lead[:-1]]
    src = _stacked(mesh, positions, lead, block, [*rest, axes, *[()] * len(block)])
    dst = _stacked(mesh, positions, lead, block, [*rest, (), *[()] * len(block)])
    ones = (1,) * len(rest)
    got = comm.all_gather([a.reshape(*ones, 1, *block) for a in arrays], src, dst)
    out = []
    for g in got:
        stacked = np.moveaxis(g.reshape(g.shape[len(rest) :]), 0, axis)
        if tiled:
            shape = list(block)
            shape[axis] *= stacked.shape[axis]
            stacked = stacked.reshape(shape)
        out.append(stacked)
    return out


def _psum_scatter(comm, mesh, positions, arrays, params) -> Buffers:
    axes, dim, tiled = params["axes"], params["scatter_dimension"], params["tiled"]
    block = arrays[0].shape
    lead = [a for a in mesh.axis_names if a not in axes]
    rest = [(a,) for a in lead]
    spec = [()] * len(block)
    src = _stacked(mesh, positions, lead, block, [*rest, *spec])
    spec[dim] = axes
    dst = _stacked(mesh, positions, lead, block, [*rest, *spec])
    ones = (1,) * len(rest)
    members = _positions_in(groups(mesh, axes), positions)
    got = comm.reduce_scatter([a.reshape(*ones, *block) for a in arrays], members, "sum", src, dst)
    out = []
    for g in got:
        g = g.reshape(g.shape[len(rest) :])
        out.append(g if tiled else np.squeeze(g, dim))
    return out


def _all_to_all(comm, mesh, positions, arrays, params) -> Buffers:
    axes, size = params["axes"], params["size"]
    split, concat, tiled = params["split_axis"], params["concat_axis"], params["tiled"]
    block = arrays[0].shape
    chunked = (*block[:split], size, block[split] // size, *block[split + 1 :])
    lead = _lead(mesh, axes)
    rest = [(a,) for a in lead[:-1]]
    spec = [()] * len(chunked)
    src = _stacked(mesh, positions, lead, chunked, [*rest, axes, *spec])
    spec[split] = axes
    dst = _stacked(mesh, positions, lead, chunked, [*rest, (), *spec])
    ones = (1,) * len(rest)
    got = comm.all_to_all([a.reshape(*ones, 1, *chunked) for a in arrays], src, dst)
    out = []
    for g in got:
        pieces = g.reshape(g.shape[len(rest) :])  # (senders, *block with its chunk of split)
        pieces = np.squeeze(pieces, 1 + split)
        if tiled:
            shape = list(block)
            shape[split] //= size
            shape[concat] *= size
            out.append(np.moveaxis(pieces, 0, concat).reshape(shape))
        else:
            out.append(np.moveaxis(np.squeeze(pieces, 1 + split), 0, concat))
    return out


def _ppermute(comm, mesh, positions, arrays, params) -> Buffers:
    axes = tuple(a for a in mesh.axis_names if a in params["axes"])  # mesh order, as JAX
    block = arrays[0].shape
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
    got = comm.permute([a.reshape(*ones, 1, *block) for a in arrays], src, dst)
    out = []
    for b, g in zip(src.blocks, got, strict=True):
        out.append(g.reshape(block) if b[k] in source_of else np.zeros(block, g.dtype))
    return out


def _positions_in(all_groups: list[list[int]], positions: list[int]) -> list[list[int]]:
    """``all_groups`` renumbered as indices into ``positions`` (groups outside it dropped)."""
    index = {p: i for i, p in enumerate(positions)}
    return [[index[p] for p in g] for g in all_groups if g[0] in index]


_RUNNERS: dict[str, Callable] = {
    "all_gather": _all_gather,
    "psum_scatter": _psum_scatter,
    "all_to_all": _all_to_all,
    "ppermute": _ppermute,
}
