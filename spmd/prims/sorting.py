"""Sorting primitives: sort and argsort along one axis, stably, with NumPy's ordering.

NumPy's order puts NaN last and orders complex numbers by real part, then imaginary part. Both
primitives sort stably (NumPy's ``kind="stable"``): equal elements keep their order, so argsort
gives one answer for ties whatever ``kind`` the caller named. The axis is blocked from
splitting, as a cumsum's is; every other dimension passes through.
"""

from __future__ import annotations

import numpy as np

from spmd.core.aval import ShapedArray
from spmd.core.primitive import Primitive, Rules
from spmd.core.trace import aval_of
from spmd.prims import namespace
from spmd.prims.derivatives import bind
from spmd.prims.indexing import IndexArray
from spmd.prims.reduction import one_axis_sharding
from spmd.prims.reduction_derivatives import one_axis_batch


def _sorted_shape(x: ShapedArray, axis: int | None) -> tuple[int, ...]:
    """The input's shape, or its size (axis None, or a 0-d operand: the flattened array)."""
    return (x.size,) if axis is None or x.ndim == 0 else x.shape


def _sort_shape(x: ShapedArray, *, axis: int | None) -> ShapedArray:
    return ShapedArray(_sorted_shape(x, axis), x.dtype)


def _argsort_shape(x: ShapedArray, *, axis: int | None) -> ShapedArray:
    return ShapedArray(_sorted_shape(x, axis), np.dtype(np.intp))


def _along(xp, x, axis: int | None):
    """``x`` as an array of ``xp`` and the axis to sort along (a 0-d ``x`` or axis None: the
    flattened array)."""
    x = namespace.asarray(xp, x)
    if axis is None or x.ndim == 0:
        return xp.reshape(x, (-1,)), 0
    return x, axis


def _sort_impl(xp, x, *, axis):
    if xp is np:
        return np.sort(x, axis=axis, kind="stable")
    return namespace.sort(xp, *_along(xp, x, axis))


def _argsort_impl(xp, x, *, axis):
    if xp is np:
        return np.argsort(x, axis=axis, kind="stable")
    return namespace.argsort(xp, *_along(xp, x, axis))


def _take_along(t, order, axis: int):
    """``t`` gathered along ``axis`` by the indices ``order`` (of ``t``'s shape): each other
    axis is indexed by a range, broadcast to meet the others."""
    shape = aval_of(t).shape
    ranges = [
        order
        if i == axis
        else np.arange(n).reshape([n if j == i else 1 for j in range(len(shape))])
        for i, n in enumerate(shape)
    ]
    return bind("getitem", t, *ranges, index=tuple(map(IndexArray, range(len(shape)))))


def _sort_jvp(primals, out, tangents, *, axis):
    """The tangent moves with its element: gathered by the permutation that sorts ``x``."""
    (x,), (t,) = primals, tangents
    if axis is None or aval_of(x).ndim == 0:
        t = bind("reshape", t, new_sizes=(aval_of(x).size,))
    order = argsort_p.bind(x, axis=axis)
    return _take_along(t, order, 0 if axis is None else axis)


sort_p = Primitive(
    "sort",
    Rules(
        shape=_sort_shape,
        impl=_sort_impl,
        sharding=one_axis_sharding,
        jvp=_sort_jvp,
        batch=one_axis_batch("sort"),
    ),
)
argsort_p = Primitive(
    "argsort",
    Rules(
        shape=_argsort_shape,
        impl=_argsort_impl,
        sharding=one_axis_sharding,
        jvp=lambda primals, out, tangents, *, axis: None,  # piecewise constant integers
        batch=one_axis_batch("argsort"),
    ),
)
