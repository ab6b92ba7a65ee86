"""Diagonals of spmd.numpy: ``diagonal`` (the diagonal primitive) and ``trace`` (its sum)."""

from __future__ import annotations

from typing import Any

from spmd.core.axes import as_int, normalize_axis
from spmd.core.trace import aval_of
from spmd.errors import ShapeError
from spmd.numpy.reductions import _dtype, _reduce
from spmd.prims.shape import diagonal_p


def _diagonal(fn: str, a: Any, offset: Any, axis1: Any, axis2: Any):
    """The diagonal primitive bound after NumPy's checks, with errors naming ``fn``."""
    who = f"spmd.numpy.{fn}"
    aval = aval_of(a)
    offset = as_int(offset, who, "offset")
    if aval.ndim < 2:
        raise ShapeError(
            f"{who}: {aval} has {aval.ndim} dimension(s), but a diagonal needs at least 2 "
            f"(axis1 and axis2). Reshape it to a matrix first, e.g. x.reshape(1, -1)."
        )
    first = normalize_axis(axis1, aval.ndim, who, str(aval), "axis1")
    second = normalize_axis(axis2, aval.ndim, who, str(aval), "axis2")
    if first == second:
        raise ShapeError(
            f"{who}: axis1={axis1} and axis2={axis2} are the same axis of {aval}; pass two "
            f"different axes, e.g. axis1=0, axis2=1."
        )
    return diagonal_p.bind(a, offset=offset, axis1=first, axis2=second)


def diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1):
    """``numpy.diagonal``: the ``offset`` diagonal of the (``axis1``, ``axis2``) matrices,
    as the last axis of the result (a copy, not NumPy's read-only view).
    Example: ``spmd.numpy.diagonal(x, offset=1)``."""
    return _diagonal("diagonal", a, offset, axis1, axis2)


def trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None):
    """``numpy.trace``: the sum of the ``offset`` diagonal, in ``dtype`` (default: sum's).
    Example: ``spmd.numpy.trace(x)``."""
    diagonals = _diagonal("trace", a, offset, axis1, axis2)
    return _reduce("sum", diagonals, -1, False, caller="trace", dtype=_dtype(dtype))


__all__ = ["diagonal", "trace"]
