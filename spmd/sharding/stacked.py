"""A collective's blocks as one virtual global array, and that array's layouts.

A collective over mesh axes ``A`` sees one block per device. Stacking those blocks along
new leading dimensions, one per mesh axis, gives a virtual global array that each device
holds one block of; every collective is then a change of that array's layout, which the
Communicator's layout-based verbs perform (spmd/prims/collective_records.py's runners).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from spmd.sharding.layout import Layout, mesh_layout
from spmd.sharding.mesh import Mesh


def stacked_layout(
    mesh: Mesh, positions: list[int], lead: list, block: tuple[int, ...], spec
) -> Layout:
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


def lead_dims(mesh: Mesh, axes: tuple[str, ...]) -> list:
    """Leading dimensions: each mesh axis outside ``axes``, then ``axes`` merged."""
    return [a for a in mesh.axis_names if a not in axes] + [axes]


def shape_classes(shapes: Sequence) -> dict[tuple, list[int]]:
    """Mesh positions by block shape (devices whose blocks differ in shape run apart)."""
    classes: dict[tuple, list[int]] = {}
    for p, shape in enumerate(shapes):
        classes.setdefault(tuple(shape), []).append(p)
    return classes
