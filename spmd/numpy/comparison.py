"""Whole-array comparisons: isclose, allclose, array_equal, array_equiv."""

from __future__ import annotations

from typing import Any

import numpy as np

from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError
from spmd.numpy.creation import asarray
from spmd.numpy.elementwise import abs, equal, isfinite, isnan, logical_and, logical_or, where
from spmd.numpy.reductions import all


def isclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    """``numpy.isclose``: ``|a - b| <= atol + rtol * |b|`` elementwise, infinities equal only
    to themselves. Example: ``isclose(x, y, rtol=1e-3)``."""
    a, b = asarray(a), asarray(b)
    dtype = np.result_type(np.float64 if a.dtype.kind in "biu" else a.dtype, b.dtype, 1.0)
    a, b = a.astype(dtype), b.astype(dtype)
    finite = logical_and(isfinite(a), isfinite(b))
    gap = abs(where(finite, a, 0) - where(finite, b, 0))  # no inf - inf: no warning
    close = where(finite, gap <= atol + rtol * abs(b), equal(a, b))
    if equal_nan:
        close = logical_or(close, logical_and(isnan(a), isnan(b)))
    return close


def allclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    """``numpy.allclose`` as a 0-d bool Array (as JAX returns). Example: ``allclose(x, y)``."""
    return all(isclose(a, b, rtol, atol, equal_nan))


def _arrays(a1: Any, a2: Any) -> tuple[Any, Any] | None:
    """Both operands as arrays (Python lists and scalars too), or None where NumPy's
    ``asarray`` refuses one (a ragged list), which NumPy's array_equal counts as not equal."""
    try:
        return asarray(a1), asarray(a2)
    except (ShapeError, SpmdTypeError):
        return None


def array_equal(a1: Any, a2: Any, equal_nan: bool = False):
    """``numpy.array_equal``: the same shape and the same elements, as a 0-d bool Array.

    Example: ``array_equal(x, [1, 2, 3])``; with ``equal_nan``, NaNs in the same places match.
    """
    arrays = _arrays(a1, a2)
    if arrays is None or aval_of(arrays[0]).shape != aval_of(arrays[1]).shape:
        return asarray(False)
    a1, a2 = arrays
    same = equal(a1, a2)
    if equal_nan:
        same = logical_or(same, logical_and(isnan(a1), isnan(a2)))
    return all(same)


def array_equiv(a1: Any, a2: Any):
    """``numpy.array_equiv``: equal elements after broadcasting, as a 0-d bool Array.

    Example: ``array_equiv(x, [[1, 2], [1, 2]])`` for ``x`` of shape (2,) or (2, 2).
    """
    arrays = _arrays(a1, a2)
    if arrays is None:
        return asarray(False)
    try:
        np.broadcast_shapes(aval_of(arrays[0]).shape, aval_of(arrays[1]).shape)
    except ValueError:
        return asarray(False)
    return all(equal(*arrays))


__all__ = ["allclose", "array_equal", "array_equiv", "isclose"]
