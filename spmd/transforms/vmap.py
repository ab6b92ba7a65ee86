"""``vmap``: a function of one example mapped over a batch axis, as in JAX (spmd/core/batching.py
applies each primitive's batch rule). Collectives over ``axis_name`` act on the batch axis."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from spmd.core.axis_env import binding
from spmd.core.batching import BatchTrace
from spmd.core.trace import aval_of, current_trace, tracing
from spmd.errors import ShapeError, SpmdTypeError
from spmd.prims.derivatives import batch_to_front, moveaxis
from spmd.tree_util import tree_broadcast_prefix, tree_flatten, tree_unflatten


def _is_axis(x: Any) -> bool:
    return x is None or isinstance(x, int)


def _axes_for(axes: Any, tree: Any, what: str) -> list:
    try:
        full = tree_broadcast_prefix(axes, tree, is_leaf=_is_axis)
    except ValueError as error:
        raise SpmdTypeError(
            f"vmap {what} {axes!r} must be an int, None, or a tree of them shaped like a prefix "
            f"of the {'arguments' if what == 'in_axes' else 'results'} ({error})."
        ) from None
    return tree_flatten(full, is_leaf=_is_axis)[0]


def vmap(
    fun: Callable,
    in_axes: Any = 0,
    out_axes: Any = 0,
    axis_name: str | None = None,
    axis_size: int | None = None,
) -> Callable:
    """``fun`` mapped over axis ``in_axes`` of its arguments (None: not mapped), its results
    stacked along ``out_axes``. Inside, collectives over ``axis_name`` combine the batch.

    Example: ``vmap(lambda row: row @ w)(x)`` multiplies each row of ``x`` by ``w``.
    """
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)

    @functools.wraps(fun)
    def vmapped(*args):
        leaves, in_tree = tree_flatten(args)
        axes = _axes_for(in_axes, args, "in_axes")
        dims, sizes = [], {}
        for i, (leaf, axis) in enumerate(zip(leaves, axes, strict=True)):
            if axis is None:
                dims.append(None)
                continue
            ndim = aval_of(leaf).ndim
            if not -ndim <= axis < ndim:
                raise ShapeError(
                    f"vmap in_axes {axis} is out of range for argument leaf {i} of rank {ndim} "
                    f"({aval_of(leaf)}); use an axis in [{-ndim}, {ndim}) or None."
                )
            dims.append(axis % ndim)
            sizes.setdefault(aval_of(leaf).shape[axis % ndim], []).append(i)
        size = _batch_size(sizes, axis_size)
        trace = BatchTrace(current_trace(), size, axis_name)
        tracers = [trace.wrap(leaf, d) for leaf, d in zip(leaves, dims, strict=True)]
        try:
            with tracing(trace), binding({axis_name: size} if axis_name else {}):
                out = fun(*tree_unflatten(in_tree, tracers))
        finally:
            trace.active = False
        out_leaves, out_tree = tree_flatten(out)
        targets = _axes_for(out_axes, out, "out_axes")
        results = [
            _place(trace, leaf, axis) for leaf, axis in zip(out_leaves, targets, strict=True)
        ]
        return tree_unflatten(out_tree, results)

    return vmapped


def _batch_size(sizes: dict[int, list[int]], axis_size: int | None) -> int:
    if len(sizes) > 1:
        shown = ", ".join(f"size {n} (argument leaves {leaves})" for n, leaves in sizes.items())
        raise ShapeError(
            f"vmap got mapped axes of different sizes: {shown}; every mapped axis must have "
            f"one size."
        )
    if sizes:
        (size,) = sizes
        if axis_size is not None and axis_size != size:
            raise ShapeError(f"vmap axis_size={axis_size} but the mapped axes have size {size}.")
        return size
    if axis_size is None:
        raise SpmdTypeError(
            "vmap needs at least one mapped argument (in_axes not all None), or axis_size=."
        )
    return axis_size


def _place(trace: BatchTrace, leaf: Any, axis: int | None) -> Any:
    value, dim = trace.pair(leaf)
    if axis is None:
        if dim is not None:
            raise SpmdTypeError(
                "vmap out_axes=None needs a result that is the same for every batch member, "
                f"but this one varies along the batch ({aval_of(leaf)})."
            )
        return value
    value = batch_to_front(value, dim, trace.size)
    ndim = aval_of(value).ndim
    if not -ndim <= axis < ndim:
        raise ShapeError(f"vmap out_axes {axis} is out of range for a result of rank {ndim}.")
    return moveaxis(value, 0, axis % ndim)
