"""Elementwise functions of spmd.numpy: thin wrappers that bind the elementwise primitives."""

from __future__ import annotations

from typing import Any

import numpy as np

from spmd.core.trace import aval_of
from spmd.prims.elementwise import BINARY, UNARY, round_p, where_p


def _unary(name: str):
    primitive = UNARY[name]

    def fn(x: Any):
        return primitive.bind(x)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``numpy.{name}``. Example: ``spmd.numpy.{name}(x)``."
    return fn


def _binary(name: str):
    primitive = BINARY[name]

    def fn(x1: Any, x2: Any):
        return primitive.bind(x1, x2)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``numpy.{name}`` with broadcasting. Example: ``{name}(x, y)``."
    return fn


globals().update({name: _unary(name) for name in UNARY})
globals().update({name: _binary(name) for name in BINARY})
divide = true_divide  # noqa: F821
absolute = abs
mod = remainder  # noqa: F821


def _power_operator(x: Any, y: Any):
    """``x ** y`` as ``numpy.ndarray.__pow__`` computes it, for ``Array.__pow__``.

    NumPy takes ``x ** 2`` (an exact Python int 2) for ``square(x)``: the same dtype as
    ``power(x, 2)`` except for bools, where square gives int8 and power int64 (NEP 50).
    """
    if type(y) is int and y == 2 and aval_of(x).dtype == np.bool_:
        from spmd.numpy.shape import astype

        return power(astype(x, np.int8), 2)  # noqa: F821
    return power(x, y)  # noqa: F821


def where(condition: Any, x: Any, y: Any):
    """``numpy.where(condition, x, y)``: ``x`` where ``condition`` holds, else ``y``."""
    return where_p.bind(condition, x, y)


def clip(a: Any, a_min: Any = None, a_max: Any = None):
    """``numpy.clip``: limit ``a`` to ``[a_min, a_max]`` (either bound may be None)."""
    if a_min is not None:
        a = maximum(a, a_min)  # noqa: F821
    if a_max is not None:
        a = minimum(a, a_max)  # noqa: F821
    return a


def round(a: Any, decimals: int = 0):
    """``numpy.round`` to ``decimals`` places (halves to even)."""
    return round_p.bind(a, decimals=int(decimals))


around = round

__all__ = [
    *UNARY,
    *BINARY,
    "absolute",
    "around",
    "clip",
    "divide",
    "mod",
    "round",
    "where",
]
