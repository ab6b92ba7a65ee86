"""Reductions of spmd.numpy: thin wrappers that normalize ``axis`` and bind the primitives."""

from __future__ import annotations

import builtins
import math
import warnings
from typing import Any

import numpy as np

from spmd.core.aval import check_dtype
from spmd.core.axes import normalize_axes, normalize_axis
from spmd.core.trace import aval_of
from spmd.errors import SpmdTypeError
from spmd.numpy.creation import asarray
from spmd.numpy.elementwise import multiply, true_divide
from spmd.numpy.shape import astype
from spmd.prims.elementwise import UNARY
from spmd.prims.reduction import (
    REDUCTIONS,
    argmax_p,
    argmin_p,
    cumprod_p,
    cumsum_p,
)

Axis = int | tuple[int, ...] | None


def _axes(fn: str, axis: Axis, a: Any) -> tuple[int, ...]:
    """``axis`` (None, an int or a tuple of ints) as the sorted axes of ``a`` to reduce."""
    aval = aval_of(a)
    if axis is None:
        return tuple(range(aval.ndim))
    return tuple(sorted(normalize_axes(axis, aval.ndim, f"spmd.numpy.{fn}", str(aval))))


def _one_axis(fn: str, axis: int | None, a: Any) -> int | None:
    """A single ``axis`` (or None) for argmax/argmin/cumsum/cumprod/argsort; NumPy treats 0-d
    as 1-d here."""
    if axis is None:
        return None
    if isinstance(axis, (tuple, list)):
        raise SpmdTypeError(
            f"spmd.numpy.{fn}: axis={axis!r} is a sequence, but {fn} takes one axis; "
            f"pass an int or None."
        )
    aval = aval_of(a)
    return normalize_axis(axis, builtins.max(aval.ndim, 1), f"spmd.numpy.{fn}", str(aval))


def _dtype(dtype: Any) -> np.dtype | None:
    return None if dtype is None else check_dtype(dtype)


def _reduce(name: str, a: Any, axis: Axis, keepdims: bool, *, caller: str = "", **params: Any):
    axes = _axes(caller or name, axis, a)
    return REDUCTIONS[name].bind(a, axes=axes, keepdims=builtins.bool(keepdims), **params)


def _scalar(name: str, argument: str, value: Any) -> Any:
    if value is None or isinstance(value, (builtins.bool, int, float, complex, np.generic)):
        return value
    raise SpmdTypeError(
        f"spmd.numpy.{name}: {argument}={value!r} must be a Python or NumPy scalar (it is a "
        f"static parameter), not {type(value).__name__}."
    )


def sum(a: Any, axis: Axis = None, dtype: Any = None, keepdims: bool = False):
    """``numpy.sum``. Example: ``spmd.numpy.sum(x, axis=0)``."""
    return _reduce("sum", a, axis, keepdims, dtype=_dtype(dtype))


def prod(a: Any, axis: Axis = None, dtype: Any = None, keepdims: bool = False):
    """``numpy.prod``. Example: ``spmd.numpy.prod(x, axis=-1)``."""
    return _reduce("prod", a, axis, keepdims, dtype=_dtype(dtype))


def mean(a: Any, axis: Axis = None, dtype: Any = None, keepdims: bool = False):
    """``numpy.mean`` (integers average as float64). Example: ``spmd.numpy.mean(x, axis=0)``.

    As NumPy computes it: a sum (in float64 for integers, float32 for float16), divided by
    the count, so that over a split axis it is a pending sum, reduced where needed, and
    scaled; it never gathers the operand."""
    a = asarray(a)
    aval = aval_of(a)
    axes = _axes("mean", axis, a)
    wanted = _dtype(dtype)
    accumulate = wanted
    if wanted is None and aval.dtype.kind in "biu":
        accumulate = np.dtype(np.float64)
    elif wanted is None and aval.dtype == np.float16:
        accumulate = np.dtype(np.float32)
    total = REDUCTIONS["sum"].bind(a, axes=axes, keepdims=builtins.bool(keepdims),
                                   dtype=accumulate)  # fmt: skip
    count = math.prod(aval.shape[i] for i in axes)
    if count == 0:  # NumPy's warning, and NaN without a division by zero
        warnings.warn("Mean of empty slice.", RuntimeWarning, stacklevel=2)
        result = multiply(total, np.nan)
    else:
        result = true_divide(total, count)
    target = (
        wanted if wanted is not None else np.dtype(np.float16) if aval.dtype == np.float16 else None
    )
    return result if target is None or aval_of(result).dtype == target else astype(result, target)


def max(a: Any, axis: Axis = None, keepdims: bool = False, initial: Any = None):
    """``numpy.max``; ``initial`` gives empty slices a value. Example: ``max(x, axis=1)``."""
    return _reduce("max", a, axis, keepdims, initial=_scalar("max", "initial", initial))


def min(a: Any, axis: Axis = None, keepdims: bool = False, initial: Any = None):
    """``numpy.min``; ``initial`` gives empty slices a value. Example: ``min(x, axis=1)``."""
    return _reduce("min", a, axis, keepdims, initial=_scalar("min", "initial", initial))


def all(a: Any, axis: Axis = None, keepdims: bool = False):
    """``numpy.all`` (True over nothing). Example: ``spmd.numpy.all(x > 0, axis=0)``."""
    return _reduce("all", a, axis, keepdims)


def any(a: Any, axis: Axis = None, keepdims: bool = False):
    """``numpy.any`` (False over nothing). Example: ``spmd.numpy.any(x > 0, axis=0)``."""
    return _reduce("any", a, axis, keepdims)


def var(a: Any, axis: Axis = None, ddof: int | float = 0, keepdims: bool = False):
    """``numpy.var`` with ``ddof``. Example: ``spmd.numpy.var(x, axis=0, ddof=1)``."""
    return _reduce("var", a, axis, keepdims, ddof=_scalar("var", "ddof", ddof))


def std(a: Any, axis: Axis = None, ddof: int | float = 0, keepdims: bool = False):
    """``numpy.std`` with ``ddof`` (the square root of var, as in NumPy). Example: ``std(x)``."""
    variance = _reduce("var", a, axis, keepdims, caller="std", ddof=_scalar("std", "ddof", ddof))
    return UNARY["sqrt"].bind(variance)


def argmax(a: Any, axis: int | None = None, keepdims: bool = False):
    """``numpy.argmax`` (None: index into the flattened array). Example: ``argmax(x, 1)``."""
    axis = _one_axis("argmax", axis, a)
    return argmax_p.bind(a, axis=axis, keepdims=builtins.bool(keepdims))


def argmin(a: Any, axis: int | None = None, keepdims: bool = False):
    """``numpy.argmin`` (None: index into the flattened array). Example: ``argmin(x, 1)``."""
    axis = _one_axis("argmin", axis, a)
    return argmin_p.bind(a, axis=axis, keepdims=builtins.bool(keepdims))


def cumsum(a: Any, axis: int | None = None, dtype: Any = None):
    """``numpy.cumsum`` (axis None: of the flattened array). Example: ``cumsum(x, axis=0)``."""
    axis = _one_axis("cumsum", axis, a)
    return cumsum_p.bind(a, axis=axis, dtype=_dtype(dtype))


def cumprod(a: Any, axis: int | None = None, dtype: Any = None):
    """``numpy.cumprod`` (axis None: of the flattened array). Example: ``cumprod(x, axis=1)``."""
    axis = _one_axis("cumprod", axis, a)
    return cumprod_p.bind(a, axis=axis, dtype=_dtype(dtype))


amax = max
amin = min

__all__ = [
    "all",
    "amax",
    "amin",
    "any",
    "argmax",
    "argmin",
    "cumprod",
    "cumsum",
    "max",
    "mean",
    "min",
    "prod",
    "std",
    "sum",
    "var",
]
