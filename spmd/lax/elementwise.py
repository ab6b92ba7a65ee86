"""spmd.lax's elementwise functions, as jax.lax names them: rsqrt, integer_pow, clamp.

Each is a composition of spmd.numpy's elementwise functions, so jvp, transpose, batching and
sharding come from theirs. Unlike spmd.numpy they promote nothing, as in JAX: operands keep
their dtype, and a Python number takes the other operand's.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError
from spmd.lax.control import stop_gradient
from spmd.numpy import (
    asarray,
    greater,
    less,
    logical_and,
    multiply,
    ones_like,
    sqrt,
    true_divide,
    where,
)

__all__ = ["clamp", "integer_pow", "rsqrt"]

_PYTHON_NUMBERS = (bool, int, float, complex)


def _inexact(name: str, x: Any) -> Any:
    aval = aval_of(x)
    if aval.dtype.kind not in "fc":
        raise SpmdTypeError(
            f"spmd.lax.{name}: x is {aval}, but lax.{name} takes floating or complex arrays "
            f"(it does not promote, as jax.lax does not); convert first, e.g. "
            f"{name}(x.astype(np.float32))."
        )
    return x


def rsqrt(x: Any) -> Any:
    """``1 / sqrt(x)``, in ``x``'s dtype (floating or complex). Example: ``rsqrt(x)``."""
    x = _inexact("rsqrt", x)
    return true_divide(1, sqrt(x))


def integer_pow(x: Any, y: int) -> Any:
    """``x ** y`` for a fixed Python int ``y``, by repeated multiplication (squaring), as JAX
    computes it: ``x``'s dtype, exact for integers; a negative ``y`` is ``1 / x ** -y`` and
    needs a floating or complex ``x``. Example: ``integer_pow(x, 3)`` is ``x * x * x``."""
    try:
        power = operator.index(y)
    except TypeError:
        raise SpmdTypeError(
            f"spmd.lax.integer_pow: y must be a Python int (a fixed exponent), not "
            f"{type(y).__name__}; for an array exponent use spmd.numpy.power(x, y)."
        ) from None
    aval = aval_of(x)
    if aval.dtype.kind not in "iufc":
        raise SpmdTypeError(
            f"spmd.lax.integer_pow: x is {aval}; lax.integer_pow takes integer, floating or "
            f"complex arrays. Convert first, e.g. integer_pow(x.astype(np.int32), {power})."
        )
    if power < 0 and aval.dtype.kind in "iu":
        raise SpmdTypeError(
            f"spmd.lax.integer_pow: an integer x ({aval}) cannot be raised to the negative "
            f"power {power}; convert x to a float first, e.g. integer_pow(x.astype(np.float32), "
            f"{power})."
        )
    if power == 0:
        return ones_like(x)
    result, base, remaining = None, x, abs(power)
    while remaining:
        if remaining & 1:
            result = base if result is None else multiply(result, base)
        remaining >>= 1
        if remaining:
            base = multiply(base, base)
    return true_divide(1, result) if power < 0 else result


def _bound(name: str, bound: Any, x: Any) -> Any:
    """A clamp bound in ``x``'s dtype: a Python number converted to it, an array checked."""
    aval = aval_of(x)
    if type(bound) in _PYTHON_NUMBERS:  # not NumPy scalars (np.float64 is a float)
        converted = np.array(bound).astype(aval.dtype)
        if converted != bound:
            raise SpmdTypeError(
                f"spmd.lax.clamp: {name}={bound!r} is not exactly a value of x's dtype "
                f"{aval.dtype}; pass a bound of that dtype (lax.clamp does not promote)."
            )
        return asarray(converted)
    bound_aval = aval_of(bound)
    if bound_aval.dtype != aval.dtype:
        raise SpmdTypeError(
            f"spmd.lax.clamp: {name} is {bound_aval} and x is {aval}; lax.clamp needs both "
            f"bounds in x's dtype (it does not promote). Convert, e.g. "
            f"{name}.astype(x.dtype)."
        )
    if bound_aval.shape not in ((), aval.shape):
        raise ShapeError(
            f"spmd.lax.clamp: {name} has shape {bound_aval.shape} and x {aval.shape}; each "
            f"bound is a scalar (shape ()) or has x's shape. Broadcast it first, e.g. with "
            f"spmd.numpy.broadcast_to({name}, x.shape)."
        )
    return bound


def clamp(min: Any, x: Any, max: Any) -> Any:
    """``x`` limited to ``[min, max]``: ``minimum(maximum(x, min), max)`` in ``x``'s dtype,
    NaN staying NaN, with JAX's derivative: ``x`` gets the tangent where strictly inside,
    ``min`` where ``x < min < max``, ``max`` where ``max < x``, none at ties. Each bound is a
    scalar or has ``x``'s shape. Example: ``clamp(0.0, x, 1.0)``."""
    low, high = _bound("min", min, x), _bound("max", max, x)
    raised = where(less(x, low), low, x)
    clipped = where(greater(raised, high), high, raised)  # XLA's order, for min > max too
    inside = logical_and(greater(x, low), less(x, high))
    above = less(high, x)
    below = logical_and(greater(low, x), less(low, high))
    at_ties = stop_gradient(clipped)  # ties (and NaN) keep their value and pass no tangent
    return where(inside, x, where(above, high, where(below, low, at_ties)))
