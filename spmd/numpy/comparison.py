"""Whole-array comparisons: isclose, allclose, array_equal, array_equiv."""

from __future__ import annotations

from typing import Any

import numpy as np

from spmd.core.trace import aval_of
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


def array_equal(a1: Any, a2: Any, equal_nan: bool = False):
    """``numpy.array_equal``: the same shape and the same elements, as a 0-d bool Array."""
    if aval_of(a1).shape != aval_of(a2).shape:
        return asarray(False)
    same = equal(a1, a2)
    if equal_nan:
        same = logical_or(same, logical_and(isnan(a1), isnan(a2)))
    return all(same)


def array_equiv(a1: Any, a2: Any):
    """``numpy.array_equiv``: equal elements after broadcasting, as a 0-d bool Array."""
    try:
        np.broadcast_shapes(aval_of(a1).shape, aval_of(a2).shape)
    except ValueError:
        return asarray(False)
    return all(equal(a1, a2))


__all__ = ["allclose", "array_equal", "array_equiv", "isclose"]
