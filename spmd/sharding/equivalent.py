"""One device list, several meshes: a layout given on one mesh, expressed on another.

A NamedSharding on mesh A gives each device a block. When mesh B lists the same devices in
the same order (JAX's device assignment; any shape, any axis names), the same per-device
blocks may be a split of B's axes too (a 2x4 mesh's P('x', 'y') of a (2, 4) array is not;
an 8-mesh's P('x') of an (8,) array is the 2x4 mesh's P(('x', 'y'))). ``split_on`` finds
that split when it exists, and otherwise the split of B that moves the fewest bytes from
the given blocks.
"""

from __future__ import annotations

import functools
import itertools
import math

from spmd.sharding.layout import Layout, mesh_layout
from spmd.sharding.mesh import Mesh
from spmd.sharding.rules import Dims
from spmd.sharding.transfer import moved_bytes

MAX_CANDIDATES = 20000  # splits tried; a mesh of 4 axes over an array of rank 6 tries ~3000


def same_devices(a: Mesh, b: Mesh) -> bool:
    """Whether two meshes list the same devices in the same order once flattened (JAX's
    "device assignment"), whatever their shapes and axis names."""
    return a is b or tuple(a.devices.flat) == tuple(b.devices.flat)


def devices_text(mesh: Mesh) -> str:
    return f"{mesh!r} with device ids {[int(i) for i in mesh.device_ids.flat]}"


def _layout(mesh: Mesh, dims: Dims, shape: tuple[int, ...]) -> Layout:
    grid = mesh.devices
    # not through mesh_layout's cache: a search would flush the layouts the program uses
    return mesh_layout.__wrapped__(grid.shape, tuple(grid.flat), mesh.axis_names, dims, shape)


def _splits(mesh: Mesh, rank: int):
    """Every split of ``rank`` dimensions over ``mesh``'s axes of size > 1 (each axis in at
    most one dimension, in any order there), the unsplit one first."""
    names = [a for a in mesh.axis_names if mesh.shape[a] > 1]
    count = 0
    for owners in itertools.product(range(-1, rank), repeat=len(names)):
        groups = [[a for a, o in zip(names, owners, strict=True) if o == d] for d in range(rank)]
        for dims in itertools.product(*(itertools.permutations(g) for g in groups)):
            count += 1
            if count > MAX_CANDIDATES:
                return
            yield tuple(dims)


def _same_blocks(a: Layout, b: Layout) -> bool:
    return all(a.device_bounds(d) == b.device_bounds(d) for d in a.devices)


@functools.lru_cache(maxsize=1024)
def split_on(mesh: Mesh, layout: Layout) -> tuple[Dims, bool]:
    """The split of ``mesh``'s axes giving each device the block ``layout`` gives it, and
    True; else the split that moves the fewest bytes from ``layout`` (ties: the one that
    holds the fewest elements), and False. ``layout``'s devices are ``mesh``'s."""
    rank = len(layout.shape)
    best, best_key = None, None
    for dims in _splits(mesh, rank):
        candidate = _layout(mesh, dims, layout.shape)
        if _same_blocks(layout, candidate):
            return dims, True
        held = sum(math.prod(candidate.block_shape(b)) for b in candidate.blocks)
        key = (moved_bytes(layout, candidate, 1), held)
        if best_key is None or key < best_key:
            best, best_key = dims, key
    if best is None:
        best = ((),) * rank
    return best, False
