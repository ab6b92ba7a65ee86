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
from spmd.prims.reduction import one_axis_sharding


def _sorted_shape(x: ShapedArray, axis: int | None) -> tuple[int, ...]:
    """The input's shape, or its size (axis None, or a 0-d operand: the flattened array)."""
    return (x.size,) if axis is None or x.ndim == 0 else x.shape


def _sort_shape(x: ShapedArray, *, axis: int | None) -> ShapedArray:
    return ShapedArray(_sorted_shape(x, axis), x.dtype)


def _argsort_shape(x: ShapedArray, *, axis: int | None) -> ShapedArray:
    return ShapedArray(_sorted_shape(x, axis), np.dtype(np.intp))


sort_p = Primitive(
    "sort",
    Rules(
        shape=_sort_shape,
        impl=lambda xp, x, *, axis: xp.sort(x, axis=axis, kind="stable"),
        sharding=one_axis_sharding,
    ),
)
argsort_p = Primitive(
    "argsort",
    Rules(
        shape=_argsort_shape,
        impl=lambda xp, x, *, axis: xp.argsort(x, axis=axis, kind="stable"),
        sharding=one_axis_sharding,
    ),
)
