"""Collective primitives of per-device programs (shard_map and pmap bodies).

Each names the mesh axes it spans (``axes``) and the number of devices in a group
(``size``). They have no single-device implementation: the partitioner turns them into
Collective steps that the executor runs through its Communicator
(spmd/runtime/collectives.py). Each one's ``varying`` rule says how it changes the set of
mesh axes a value differs over, which shard_map's replication check follows.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from spmd.core.aval import ShapedArray
from spmd.core.primitive import Primitive, Rules
from spmd.errors import ShapeError, aval_str


def no_impl(name: str):
    """The impl of a primitive that only the partitioner runs (lowered to per-device steps)."""

    def impl(xp, *args, **params):
        raise RuntimeError(
            f"internal error: {name} ran outside the partitioner; please report this."
        )

    return impl


def _drops_axes(eqn, operands: list[frozenset]) -> list[frozenset]:
    """Every device of a group holds the same result: it no longer varies over the axes."""
    return [frozenset().union(*operands) - set(eqn.params["axes"])]


def _adds_axes(eqn, operands: list[frozenset]) -> list[frozenset]:
    """Each device of a group holds its own result: it varies over the axes."""
    return [frozenset().union(*operands) | set(eqn.params["axes"])]


def _same(x: ShapedArray, **params) -> ShapedArray:
    return x


def _all_gather_shape(x: ShapedArray, *, axes, size, axis, tiled) -> ShapedArray:
    shape = list(x.shape)
    if tiled:
        shape[axis] *= size
    else:
        shape.insert(axis, size)
    return dataclasses.replace(x, shape=tuple(shape))


def _divisible(who: str, x: ShapedArray, dim: int, size: int, axes, tiled: bool) -> None:
    n = x.shape[dim]
    ok = n % size == 0 if tiled else n == size
    if not ok:
        need = f"a multiple of {size}" if tiled else f"exactly {size}"
        raise ShapeError(
            f"{who}: dimension {dim} of {aval_str(x.shape, x.dtype)} has size {n}, but over "
            f"axes {axes!r} ({size} devices) it must be {need}"
            + ("." if tiled else "; pass tiled=True to split it into equal chunks instead.")
        )


def _psum_scatter_shape(x: ShapedArray, *, axes, size, scatter_dimension, tiled) -> ShapedArray:
    _divisible("psum_scatter", x, scatter_dimension, size, axes, tiled)
    shape = list(x.shape)
    if tiled:
        shape[scatter_dimension] //= size
    else:
        del shape[scatter_dimension]
    return dataclasses.replace(x, shape=tuple(shape))


def _all_to_all_shape(x: ShapedArray, *, axes, size, split_axis, concat_axis, tiled):
    _divisible("all_to_all", x, split_axis, size, axes, tiled)
    shape = list(x.shape)
    if tiled:
        shape[split_axis] //= size
        shape[concat_axis] *= size
    else:
        del shape[split_axis]
        shape.insert(concat_axis, size)
    return dataclasses.replace(x, shape=tuple(shape))


def _axis_index_shape(*, axes, size) -> ShapedArray:
    return ShapedArray((), np.dtype(np.int32))


def _collective(name: str, shape, varying) -> Primitive:
    return Primitive(name, Rules(shape=shape, impl=no_impl(name), varying=varying))


# op: "sum", "max" or "min"
psum_p = _collective("psum", _same, _drops_axes)
all_gather_p = _collective("all_gather", _all_gather_shape, _drops_axes)
psum_scatter_p = _collective("psum_scatter", _psum_scatter_shape, _adds_axes)
# perm: (source, destination) pairs of linear indices over ``axes`` in mesh order
ppermute_p = _collective("ppermute", _same, _adds_axes)
all_to_all_p = _collective("all_to_all", _all_to_all_shape, _adds_axes)
axis_index_p = _collective("axis_index", _axis_index_shape, _adds_axes)
# The same value, now typed as varying over ``axes`` (JAX's pvary): it moves no data.
pvary_p = Primitive("pvary", Rules(shape=_same, impl=lambda xp, x, *, axes: x, varying=_adds_axes))

COLLECTIVES = frozenset({psum_p, all_gather_p, psum_scatter_p, ppermute_p, all_to_all_p})


def _axis_slice_shape(x: ShapedArray, *, axis: int, index: int = 0) -> ShapedArray:
    return dataclasses.replace(x, shape=x.shape[:axis] + x.shape[axis + 1 :])


# The device's own index along dimension ``axis`` (the lowering of a pmap over a value every
# device holds whole gives each device its ``index``).
axis_slice_p = Primitive(
    "axis_slice",
    Rules(
        shape=_axis_slice_shape,
        impl=lambda xp, x, *, axis, index=0: x[(slice(None),) * axis + (index,)],
    ),
)
