"""Collectives over named mesh axes, for the bodies of shard_map and pmap (JAX's semantics).

Every function takes a pytree of arrays and an ``axis_name``: one bound axis name or a
tuple of them, which then act as one axis whose index reads the names major to minor.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spmd.core.axes import as_int, normalize_axis
from spmd.core.axis_env import axis_names, group_size
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError, SpmdValueError
from spmd.prims.collective import (
    all_gather_p,
    all_to_all_p,
    axis_index_p,
    ppermute_p,
    psum_p,
    psum_scatter_p,
    pvary_p,
)
from spmd.tree_util import tree_map


def _reduce(x: Any, axis_name: Any, op: str, who: str) -> Any:
    """``op`` over the devices along ``axis_name``. A number known when the function is
    traced (``psum(1, 'i')``) is the same on every device, so its result is known too and
    stays a number, as in JAX: the count of devices times it for a sum, itself otherwise."""
    axes = axis_names(axis_name, who)
    if not axes:
        return x
    size = group_size(axes)

    def reduce(leaf):
        if isinstance(leaf, (int, float, complex, np.generic)):  # bool is an int
            return leaf * size if op == "sum" else leaf
        return psum_p.bind(leaf, axes=axes, size=size, op=op)

    return tree_map(reduce, x)


def psum(x: Any, axis_name: Any) -> Any:
    """The sum of ``x`` over the devices along ``axis_name``, on each of them.

    Example: inside ``shard_map(f, mesh, in_specs=P('x'), out_specs=P())``,
    ``psum(block.sum(), 'x')`` is the sum of the whole array. ``psum(1, 'x')`` is the axis size.
    """
    return _reduce(x, axis_name, "sum", "psum")


def pmax(x: Any, axis_name: Any) -> Any:
    """The elementwise maximum of ``x`` over the devices along ``axis_name``."""
    return _reduce(x, axis_name, "max", "pmax")


def pmin(x: Any, axis_name: Any) -> Any:
    """The elementwise minimum of ``x`` over the devices along ``axis_name``."""
    return _reduce(x, axis_name, "min", "pmin")


def pmean(x: Any, axis_name: Any) -> Any:
    """The mean of ``x`` over the devices along ``axis_name``."""
    size = group_size(axis_names(axis_name, "pmean"))
    return tree_map(lambda total: total / size, _reduce(x, axis_name, "sum", "pmean"))


def axis_index(axis_name: Any) -> Any:
    """This device's int32 index along ``axis_name`` (a tuple reads major to minor)."""
    axes = axis_names(axis_name, "axis_index")
    return axis_index_p.bind(axes=axes, size=group_size(axes))


def pvary(x: Any, axis_name: Any) -> Any:
    """``x`` unchanged, typed as varying over ``axis_name`` (so that, say, a scan carry that
    starts replicated matches the varying value it becomes). Moves no data."""
    axes = axis_names(axis_name, "pvary")
    return tree_map(lambda leaf: pvary_p.bind(leaf, axes=axes) if axes else leaf, x)


def pcast(x: Any, axis_name: Any, *, to: str) -> Any:
    """JAX's ``pcast``: ``to="varying"`` is ``pvary`` (x typed as varying over the axes)."""
    if to != "varying":
        raise SpmdValueError(
            f"pcast: to={to!r} is not supported; spmd casts to 'varying' only (values become "
            f"unvarying through psum, pmean or all_gather)."
        )
    return pvary(x, axis_name)


def axis_size(axis_name: Any) -> int:
    """How many devices lie along ``axis_name``."""
    return group_size(axis_names(axis_name, "axis_size"))


def all_gather(x: Any, axis_name: Any, *, axis: int = 0, tiled: bool = False) -> Any:
    """Every device's ``x`` along ``axis_name``, stacked at ``axis`` (a new axis), or with
    ``tiled=True`` concatenated along ``axis``."""
    axes = axis_names(axis_name, "all_gather")
    size = group_size(axes)

    def gather(leaf):
        ndim = aval_of(leaf).ndim
        where = normalize_axis(axis, ndim if tiled else ndim + 1, "all_gather", _of(leaf))
        return all_gather_p.bind(leaf, axes=axes, size=size, axis=where, tiled=bool(tiled))

    return tree_map(gather, x)


def psum_scatter(x: Any, axis_name: Any, *, scatter_dimension: int = 0, tiled: bool = False) -> Any:
    """The sum over ``axis_name`` of ``x``, of which each device keeps its chunk along
    ``scatter_dimension`` (that dimension's size must equal the axis size, or with
    ``tiled=True`` be a multiple of it)."""
    axes = axis_names(axis_name, "psum_scatter")
    size = group_size(axes)

    def scatter(leaf):
        dim = normalize_axis(
            scatter_dimension, aval_of(leaf).ndim, "psum_scatter", _of(leaf), "scatter_dimension"
        )
        return psum_scatter_p.bind(
            leaf, axes=axes, size=size, scatter_dimension=dim, tiled=bool(tiled)
        )

    return tree_map(scatter, x)


def all_to_all(
    x: Any, axis_name: Any, split_axis: int, concat_axis: int, *, tiled: bool = False
) -> Any:
    """Split ``x`` along ``split_axis`` into one chunk per device along ``axis_name``, send
    chunk ``i`` to device ``i``, and concatenate what arrives along ``concat_axis`` (without
    ``tiled``, the split axis disappears and a new axis of the group's size appears at
    ``concat_axis``)."""
    axes = axis_names(axis_name, "all_to_all")
    size = group_size(axes)

    def exchange(leaf):
        ndim = aval_of(leaf).ndim
        split = normalize_axis(split_axis, ndim, "all_to_all", _of(leaf), "split_axis")
        concat = normalize_axis(concat_axis, ndim, "all_to_all", _of(leaf), "concat_axis")
        return all_to_all_p.bind(
            leaf, axes=axes, size=size, split_axis=split, concat_axis=concat, tiled=bool(tiled)
        )

    return tree_map(exchange, x)


def ppermute(x: Any, axis_name: Any, perm: Any) -> Any:
    """Send each device's ``x`` to another along ``axis_name``: ``perm`` lists
    ``(source, destination)`` index pairs; a device that receives nothing gets zeros.
    Over several axes, indices count devices in mesh order, as in JAX."""
    axes = axis_names(axis_name, "ppermute")
    size = group_size(axes)
    pairs = _check_perm(perm, size, axes)
    return tree_map(lambda leaf: ppermute_p.bind(leaf, axes=axes, size=size, perm=pairs), x)


def _check_perm(perm: Any, size: int, axes: tuple[str, ...]) -> tuple[tuple[int, int], ...]:
    try:
        pairs = tuple(
            (as_int(s, "ppermute", "perm"), as_int(d, "ppermute", "perm")) for s, d in perm
        )
    except (TypeError, ValueError):
        raise SpmdTypeError(
            f"ppermute: perm must be a sequence of (source, destination) pairs, got {perm!r}."
        ) from None
    for s, d in pairs:
        if not (0 <= s < size and 0 <= d < size):
            raise ShapeError(
                f"ppermute: perm pair ({s}, {d}) is out of range for axes {axes!r} of "
                f"{size} devices; indices must lie in [0, {size})."
            )
    for which, values in (
        ("source", [s for s, _ in pairs]),
        ("destination", [d for _, d in pairs]),
    ):
        twice = sorted({v for v in values if values.count(v) > 1})
        if twice:
            raise ShapeError(
                f"ppermute: perm names {which} {twice} more than once; each device may send "
                f"once and receive once."
            )
    return pairs


def _of(leaf: Any) -> str:
    return str(aval_of(leaf))


__all__ = [
    "all_gather",
    "all_to_all",
    "axis_index",
    "axis_size",
    "pcast",
    "pmax",
    "pmean",
    "pmin",
    "ppermute",
    "psum",
    "psum_scatter",
    "pvary",
]
