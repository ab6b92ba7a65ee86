"""Primitives that work along one axis and keep every other dimension where it lies:
``take_along`` (a gather by per-row indices, as numpy.take_along_axis without broadcasting)
and ``top_k`` (the k largest entries along the axis, largest first, and their indices).

Their sharding rule blocks the axis (a row's entries must meet on one device) and passes
the other dimensions through, so an operand split along a batch dimension is gathered from
or searched on each device alone; getitem with index arrays, by contrast, gathers every
dimension. top_k's ties go to the lower index and NaN ranks above everything, as in JAX.
"""

from __future__ import annotations

import numpy as np

from spmd.core.ad import UndefinedPrimal
from spmd.core.aval import ShapedArray
from spmd.core.primitive import Primitive, Rules
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError
from spmd.prims import namespace as ns
from spmd.prims.derivatives import batch_size, batch_to_front, bind
from spmd.prims.indexing import IndexArray
from spmd.sharding.rules import Factors

# --- take_along ------------------------------------------------------------------------------


def _take_along_shape(x: ShapedArray, indices: ShapedArray, *, axis: int) -> ShapedArray:
    if indices.dtype.kind not in "iu":
        raise SpmdTypeError(f"take_along: indices are {indices}; they must be integers.")
    others = [d for d in range(x.ndim) if d != axis]
    if x.ndim != indices.ndim or any(x.shape[d] != indices.shape[d] for d in others):
        raise ShapeError(
            f"take_along: indices {indices} must have the operand's {x} rank and its sizes "
            f"off axis {axis}."
        )
    return ShapedArray(indices.shape, x.dtype)


def _take_along_impl(xp, x, indices, *, axis):
    if xp is np:
        return np.take_along_axis(np.asarray(x), np.asarray(indices), axis)
    wide = ns.asarray(xp, indices, np.dtype(np.int64))  # torch gathers by int64 only
    return ns.take_along_axis(xp, ns.asarray(xp, x), wide, axis)


def along_factors(ins, outs, axis: int, linear: str | None = None, whole: bool = False) -> Factors:
    """Dimension ``d`` of every operand and result is factor ``d`` except along ``axis``:
    the first operand's is blocked, the others' and the results' share a factor of their
    own (size ``outs[0].shape[axis]``), which may split unless ``whole``."""
    x = ins[0]
    names = [f"d{d}" for d in range(x.ndim)]
    sizes = dict(zip(names, x.shape, strict=True))
    sizes["k"] = outs[0].shape[axis]

    def dims(along: str) -> tuple:
        return tuple((along,) if d == axis else (name,) for d, name in enumerate(names))

    operands = (dims(names[axis]), *(dims("k") for _ in ins[1:]))
    results = tuple(dims("k") for _ in outs)
    blocked = frozenset({names[axis], "k"} if whole else {names[axis]})
    return Factors(operands, results, sizes, blocked=blocked, linear=linear)


def _take_along_sharding(ins, outs, *, axis: int) -> Factors:
    """A pending sum of the operand passes through (a gather of a sum is the sum of the
    gathers); the indices never are one."""
    return along_factors(ins, outs, axis, "first" if ins[0].dtype.kind in "iufc" else None)


def _ranges(indices, axis: int) -> list:
    """Index arrays that read element ``indices[..., i, ...]`` along ``axis`` and stay in
    place along every other axis (getitem's form of take_along)."""
    shape = aval_of(indices).shape
    return [
        indices
        if d == axis
        else np.arange(n).reshape([n if e == d else 1 for e in range(len(shape))])
        for d, n in enumerate(shape)
    ]


def _take_along_jvp(primals, out, tangents, *, axis):
    if tangents[0] is None:
        return None
    return take_along_p.bind(tangents[0], primals[1], axis=axis)


def _take_along_transpose(ct, x, indices, *, axis):
    """Each cotangent added back where its element came from (scatter_add)."""
    if not isinstance(x, UndefinedPrimal):
        return [None, None]
    ranges = _ranges(indices, axis)
    index = tuple(IndexArray(d) for d in range(len(ranges)))
    return [bind("scatter_add", ct, *ranges, index=index, shape=x.aval.shape), None]


def _take_along_batch(args, dims, *, axis):
    size = batch_size(args, dims)
    x, indices = (batch_to_front(a, d, size) for a, d in zip(args, dims, strict=True))
    return take_along_p.bind(x, indices, axis=axis + 1), 0


take_along_p = Primitive(
    "take_along",
    Rules(
        shape=_take_along_shape,
        impl=_take_along_impl,
        sharding=_take_along_sharding,
        jvp=_take_along_jvp,
        transpose=_take_along_transpose,
        batch=_take_along_batch,
    ),
)

# --- top_k -----------------------------------------------------------------------------------


def _top_k_shape(x: ShapedArray, *, k: int, axis: int) -> list[ShapedArray]:
    if x.dtype.kind == "c" or not 0 <= axis < x.ndim or not 0 <= k <= x.shape[axis]:
        raise ShapeError(f"top_k: k={k} along axis {axis} does not fit {x} (or it is complex).")
    shape = tuple(k if d == axis else n for d, n in enumerate(x.shape))
    return [ShapedArray(shape, x.dtype), ShapedArray(shape, np.dtype(np.int32))]


def _top_k_impl(xp, x, *, k, axis):
    """A stable ascending sort of the reversed row, reversed: largest first, equal entries
    by lower index, NaN (sorted last) first."""
    x = np.asarray(x) if xp is np else ns.asarray(xp, x)
    n = x.shape[axis]
    if xp is np:
        order = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
        last = np.flip(order, axis).take(np.arange(k), axis=axis)
    else:
        order = ns.argsort(xp, xp.flip(x, axis=axis), axis)
        last = xp.take(xp.flip(order, axis=axis), xp.arange(k, device=ns.device_of(x)), axis=axis)
    positions = (n - 1) - last
    values = ns.take_along_axis(xp, x, positions, axis)
    return [values, ns.astype(xp, positions, np.dtype(np.int32))]


def _top_k_sharding(ins, outs, *, k: int, axis: int) -> Factors:
    """Each row is searched whole on one device (its k results too); rows split freely."""
    return along_factors(ins, outs, axis, whole=True)


def _top_k_jvp(primals, out, tangents, *, k, axis):
    """The values' tangent is the tangent at their indices; the indices have none."""
    if tangents[0] is None:
        return [None, None]
    return [take_along_p.bind(tangents[0], out[1], axis=axis), None]


def _top_k_batch(args, dims, *, k, axis):
    (x,), (d,) = args, dims
    x = batch_to_front(x, d, aval_of(x).shape[d])
    return top_k_p.bind(x, k=k, axis=axis + 1), [0, 0]


top_k_p = Primitive(
    "top_k",
    Rules(
        shape=_top_k_shape,
        impl=_top_k_impl,
        sharding=_top_k_sharding,
        jvp=_top_k_jvp,
        batch=_top_k_batch,
    ),
    multiple_results=True,
)
