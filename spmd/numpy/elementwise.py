"""Elementwise functions of spmd.numpy: thin wrappers that bind the elementwise primitives."""

from __future__ import annotations

from typing import Any

import numpy as np

from spmd.core.trace import aval_of
from spmd.errors import SpmdOverflowError, SpmdValueError
from spmd.prims.elementwise import BINARY, UNARY, imag_p, real_p, round_p, where_p


def _unary(name: str):
    primitive = UNARY[name]

    def fn(x: Any):
        return primitive.bind(x)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``numpy.{name}``. Example: ``spmd.numpy.{name}(x)``."
    return fn


_COMPARISONS = frozenset(
    {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}
)  # NumPy 2 compares a Python int with any integer dtype exactly


def _check_python_ints(name: str, x1: Any, x2: Any) -> None:
    """NumPy 2's rules for Python ints, checked when the function is called rather than
    when its program runs: an int must fit the integer dtype it meets, and an integer
    base takes no negative int exponent."""
    for (k, value), (j, other) in (((1, x1), (2, x2)), ((2, x2), (1, x1))):
        if type(value) is not int:
            continue
        aval = aval_of(other)
        if aval.weak_type or aval.dtype.kind not in "iu":
            continue
        info = np.iinfo(aval.dtype)
        if not info.min <= value <= info.max:
            raise SpmdOverflowError(
                f"spmd.numpy.{name}: x{k}, the Python integer {value}, does not fit x{j}'s "
                f"dtype: x{j} is {aval}, which holds {info.min} to {info.max}. Convert x{j} "
                f"to a wider dtype first, e.g. x{j}.astype(np.int64)."
            )
    if name == "power" and type(x2) is int and x2 < 0 and aval_of(x1).dtype.kind in "iu":
        raise SpmdValueError(
            f"spmd.numpy.power: an integer base ({aval_of(x1)}) to the negative power {x2}: "
            f"NumPy does not allow integers to negative integer powers. Convert the base to a "
            f"float first, e.g. power(x.astype(np.float64), {x2})."
        )


def _binary(name: str):
    primitive = BINARY[name]
    exact = name not in _COMPARISONS

    def fn(x1: Any, x2: Any):
        if exact:
            _check_python_ints(name, x1, x2)
        return primitive.bind(x1, x2)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``numpy.{name}`` with broadcasting. Example: ``{name}(x, y)``."
    return fn


globals().update({name: _unary(name) for name in UNARY})
globals().update({name: _binary(name) for name in BINARY})
divide = true_divide  # noqa: F821
absolute = abs
mod = remainder  # noqa: F821
conj = conjugate  # noqa: F821


# NumPy 2.0 also takes ``x ** 2.0`` for ``square(x)``; later releases square only for an int 2.
_FLOAT_TWO_SQUARES = (np.array([True]) ** 2.0).dtype == np.int8


def _power_operator(x: Any, y: Any):
    """``x ** y`` as ``numpy.ndarray.__pow__`` computes it, for ``Array.__pow__``.

    NumPy takes ``x ** 2`` (an exact Python int 2; NumPy 2.0 a float 2.0 too) for
    ``square(x)``: the same dtype as ``power(x, 2)`` except for bools, where square gives
    int8 and power int64 (NEP 50). spmd follows the installed NumPy.
    """
    two = type(y) is int or (type(y) is float and _FLOAT_TWO_SQUARES)
    if two and y == 2 and aval_of(x).dtype == np.bool_:
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


def real(val: Any):
    """``numpy.real``: the real part of a complex array; any other array as it is.
    Example: ``spmd.numpy.real(z)`` is float32 for a complex64 ``z``."""
    return real_p.bind(val)


def imag(val: Any):
    """``numpy.imag``: the imaginary part of a complex array; zeros of the same dtype for
    any other. Example: ``spmd.numpy.imag(z)`` is float32 for a complex64 ``z``."""
    return imag_p.bind(val)


__all__ = [
    *UNARY,
    *BINARY,
    "absolute",
    "around",
    "clip",
    "conj",
    "divide",
    "imag",
    "mod",
    "real",
    "round",
    "where",
]
