"""Reductions of spmd.numpy: thin wrappers that normalize ``axis`` and bind the primitives."""

from __future__ import annotations

import builtins
import math
import warnings
from typing import Any

import numpy as np

from spmd.core.aval import check_dtype, host_array
from spmd.core.axes import as_int, normalize_axes, normalize_axis
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdOverflowError, SpmdTypeError, SpmdValueError
from spmd.numpy.creation import asarray
from spmd.numpy.elementwise import (  # type: ignore[attr-defined]
    add,
    conjugate,
    maximum,
    multiply,
    real,
    subtract,
    true_divide,
    where,
)
from spmd.numpy.shaping import astype, broadcast_to
from spmd.prims.elementwise import UNARY
from spmd.prims.reduction import (
    REDUCTIONS,
    argmax_p,
    argmin_p,
    cumprod_p,
    cumsum_p,
    identity,
)

Axis = int | tuple[int, ...] | None

# NumPy reduces a 0-d array over an int axis 0 or -1 with these (ufunc reductions); mean,
# std and var say it has no axis.
_ZERO_D_AXIS = frozenset({"sum", "prod", "max", "min", "all", "any"})


def _axes(fn: str, axis: Axis, a: Any, masked: bool = False) -> tuple[int, ...]:
    """``axis`` (None, an int or a tuple of ints) as the sorted axes of ``a`` to reduce.
    NumPy's mean, std and var count a mask's elements with a ufunc reduction, so that with
    ``where=`` they too take axis 0 or -1 of a 0-d array."""
    aval = aval_of(a)
    if axis is None:
        return tuple(range(aval.ndim))
    ufunc_like = fn in _ZERO_D_AXIS or masked
    zero_d = aval.ndim == 0 and ufunc_like and not isinstance(axis, (tuple, list))
    if zero_d and as_int(axis, f"spmd.numpy.{fn}", "axis") in (0, -1):
        return ()
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


def _array(name: str, a: Any) -> Any:
    """A list or tuple as NumPy converts it; Arrays, tracers and scalars as they are."""
    return host_array(a, f"spmd.numpy.{name}: a") if isinstance(a, (list, tuple)) else a


def _no_out(name: str, out: Any) -> None:
    if out is not None:
        raise SpmdTypeError(
            f"spmd.numpy.{name}: out= is not supported (spmd arrays are immutable); use the "
            f"returned array instead."
        )


def _mask(name: str, a: Any, where: Any) -> Any:
    """``where`` as a boolean mask of ``a``'s shape; None when it selects everything."""
    if where is None or (type(where) is builtins.bool and where):
        return None
    mask = asarray(_array(name, where))
    aval, shape = aval_of(mask), aval_of(a).shape
    if aval.dtype != np.bool_:
        raise SpmdTypeError(
            f"spmd.numpy.{name}: where= must be a boolean mask, but it is {aval}; pass a "
            f"comparison such as where=x > 0, or where.astype(bool)."
        )
    try:
        fits = np.broadcast_shapes(aval.shape, shape) == shape
    except ValueError:
        fits = False
    if not fits:
        raise ShapeError(
            f"spmd.numpy.{name}: where= is {aval}, which does not broadcast to a's shape "
            f"{shape}; give a mask of that shape, or one whose dimensions are 1 or match."
        )
    return mask if aval.shape == shape else broadcast_to(mask, shape)


def _fill(a: Any, mask: Any, value: Any) -> Any:
    """``a`` with ``value`` (in ``a``'s dtype) where ``mask`` is False."""
    return where(mask, a, np.asarray(value, dtype=aval_of(a).dtype))


def _start(name: str, result: Any, a: Any, dtype: Any, initial: Any) -> Any:
    """A sum's (or product's) ``result`` started from ``initial``, converted to the result's
    dtype as NumPy converts it (an empty reduction asked of NumPy itself), then added (or
    multiplied) once: every shard of a split axis starting from it would count it again."""
    if initial is None:
        return result
    initial = _scalar(name, "initial", initial)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = getattr(np, name)(np.zeros(0, aval_of(a).dtype), dtype=dtype, initial=initial)
    except (OverflowError, TypeError, ValueError) as error:
        kind = SpmdOverflowError if isinstance(error, OverflowError) else SpmdTypeError
        raise kind(
            f"spmd.numpy.{name}: initial={initial!r} cannot start a {name} of {aval_of(a)}"
            f"{'' if dtype is None else f' in {np.dtype(dtype)}'}: {error}. Pass an initial "
            f"value that fits the result's dtype."
        ) from None
    return (add if name == "sum" else multiply)(result, np.asarray(start))


def sum(
    a: Any,
    axis: Axis = None,
    dtype: Any = None,
    out: None = None,
    keepdims: bool = False,
    initial: Any = None,
    where: Any = None,
):
    """``numpy.sum``. Example: ``spmd.numpy.sum(x, axis=0, where=x > 0)``."""
    _no_out("sum", out)
    a = _array("sum", a)
    mask = _mask("sum", a, where)
    a = a if mask is None else _fill(a, mask, 0)
    result = _reduce("sum", a, axis, keepdims, dtype=_dtype(dtype))
    return _start("sum", result, a, _dtype(dtype), initial)


def prod(
    a: Any,
    axis: Axis = None,
    dtype: Any = None,
    out: None = None,
    keepdims: bool = False,
    initial: Any = None,
    where: Any = None,
):
    """``numpy.prod``. Example: ``spmd.numpy.prod(x, axis=-1, initial=2)``."""
    _no_out("prod", out)
    a = _array("prod", a)
    mask = _mask("prod", a, where)
    a = a if mask is None else _fill(a, mask, 1)
    result = _reduce("prod", a, axis, keepdims, dtype=_dtype(dtype))
    return _start("prod", result, a, _dtype(dtype), initial)


def _divide(total: Any, count: Any) -> Any:
    """``total / count`` in ``total``'s dtype, as NumPy's mean and var divide (in place)."""
    result = true_divide(total, count)
    dtype = aval_of(total).dtype
    return result if aval_of(result).dtype == dtype else astype(result, dtype)


def _count(mask: Any, axes: tuple[int, ...], keepdims: bool) -> Any:
    return REDUCTIONS["sum"].bind(mask, axes=axes, keepdims=keepdims, dtype=np.dtype(np.intp))


def mean(
    a: Any,
    axis: Axis = None,
    dtype: Any = None,
    out: None = None,
    keepdims: bool = False,
    *,
    where: Any = None,
):
    """``numpy.mean`` (integers average as float64). Example: ``spmd.numpy.mean(x, axis=0)``.

    As NumPy computes it: a sum (in float64 for integers, float32 for float16), divided by
    the count, so that over a split axis it is a pending sum, reduced where needed, and
    scaled; it never gathers the operand."""
    _no_out("mean", out)
    a = asarray(_array("mean", a))
    aval = aval_of(a)
    mask = _mask("mean", a, where)
    axes = _axes("mean", axis, a, masked=mask is not None)
    wanted = _dtype(dtype)
    accumulate = wanted
    if wanted is None and aval.dtype.kind in "biu":
        accumulate = np.dtype(np.float64)
    elif wanted is None and aval.dtype == np.float16:
        accumulate = np.dtype(np.float32)
    summed = a if mask is None else _fill(a, mask, 0)
    total = REDUCTIONS["sum"].bind(summed, axes=axes, keepdims=builtins.bool(keepdims),
                                   dtype=accumulate)  # fmt: skip
    count = math.prod(aval.shape[i] for i in axes)
    if mask is not None:
        result = _divide(total, _count(mask, axes, builtins.bool(keepdims)))
    elif count == 0:  # NumPy's warning, and NaN without a division by zero
        warnings.warn("Mean of empty slice.", RuntimeWarning, stacklevel=2)
        result = multiply(total, np.nan)
    else:
        result = true_divide(total, count)
    target = (
        wanted if wanted is not None else np.dtype(np.float16) if aval.dtype == np.float16 else None
    )
    return result if target is None or aval_of(result).dtype == target else astype(result, target)


def max(
    a: Any,
    axis: Axis = None,
    out: None = None,
    keepdims: bool = False,
    initial: Any = None,
    where: Any = None,
):
    """``numpy.max``; ``initial`` gives empty slices a value. Example: ``max(x, axis=1)``."""
    return _extreme("max", a, axis, out, keepdims, initial, where)


def min(
    a: Any,
    axis: Axis = None,
    out: None = None,
    keepdims: bool = False,
    initial: Any = None,
    where: Any = None,
):
    """``numpy.min``; ``initial`` gives empty slices a value. Example: ``min(x, axis=1)``."""
    return _extreme("min", a, axis, out, keepdims, initial, where)


def _extreme(name: str, a, axis, out, keepdims, initial, where):
    _no_out(name, out)
    a = _array(name, a)
    mask = _mask(name, a, where)
    if mask is not None:
        if initial is None:
            raise SpmdValueError(
                f"spmd.numpy.{name}: where= needs initial=: {name} has no identity, so a slice "
                f"whose elements are all masked out would have no value (NumPy refuses too). "
                f"Pass initial=<value>, e.g. initial={'-' if name == 'max' else ''}np.inf."
            )
        a = _fill(a, mask, identity(name, aval_of(a).dtype))
    return _reduce(name, a, axis, keepdims, initial=_scalar(name, "initial", initial))


def all(a: Any, axis: Axis = None, out: None = None, keepdims: bool = False, *, where: Any = None):
    """``numpy.all`` (True over nothing). Example: ``spmd.numpy.all(x > 0, axis=0)``."""
    _no_out("all", out)
    a = _array("all", a)
    mask = _mask("all", a, where)
    return _reduce("all", a if mask is None else _fill(a, mask, 1), axis, keepdims)


def any(a: Any, axis: Axis = None, out: None = None, keepdims: bool = False, *, where: Any = None):
    """``numpy.any`` (False over nothing). Example: ``spmd.numpy.any(x > 0, axis=0)``."""
    _no_out("any", out)
    a = _array("any", a)
    mask = _mask("any", a, where)
    return _reduce("any", a if mask is None else _fill(a, mask, 0), axis, keepdims)


def _ddof(name: str, ddof: Any, correction: Any) -> Any:
    if correction is None:
        return _scalar(name, "ddof", ddof)
    if ddof != 0:
        raise SpmdValueError(
            f"spmd.numpy.{name}: ddof={ddof!r} and correction={correction!r} were both given; "
            f"they are the same option, pass one."
        )
    return _scalar(name, "correction", correction)


def _variance(name, a, axis, dtype, ddof, keepdims, mask, mean):
    """NumPy's ``_var`` step by step, for ``where=`` and ``mean=``: the mean over the
    selected elements, the squared deviations summed over them, divided by count - ddof."""
    aval = aval_of(a)
    axes = _axes(name, axis, a, masked=mask is not None)
    wanted = _dtype(dtype)
    if wanted is None and aval.dtype.kind in "biu":
        wanted = np.dtype(np.float64)
    keep = builtins.bool(keepdims)
    size = math.prod(aval.shape[i] for i in axes)
    if mean is None:
        summed = a if mask is None else _fill(a, mask, 0)
        total = REDUCTIONS["sum"].bind(summed, axes=axes, keepdims=True, dtype=wanted)
        mean = _divide(total, size if mask is None else _count(mask, axes, True))
    deviation = subtract(a, mean)
    if aval_of(deviation).dtype.kind == "c":
        squares = real(multiply(deviation, conjugate(deviation)))
    else:
        squares = multiply(deviation, deviation)
    squares = squares if mask is None else _fill(squares, mask, 0)
    total = REDUCTIONS["sum"].bind(squares, axes=axes, keepdims=keep, dtype=wanted)
    if mask is None:
        return _divide(total, builtins.max(size - ddof, 0))
    return _divide(total, maximum(subtract(_count(mask, axes, keep), ddof), 0))


def var(
    a: Any,
    axis: Axis = None,
    dtype: Any = None,
    out: None = None,
    ddof: int | float = 0,
    keepdims: bool = False,
    *,
    where: Any = None,
    mean: Any = None,
    correction: Any = None,
):
    """``numpy.var`` with ``ddof`` (or ``correction``), ``dtype``, ``where`` and ``mean``.
    Example: ``spmd.numpy.var(x, axis=0, ddof=1)``."""
    _no_out("var", out)
    a = _array("var", a)
    ddof = _ddof("var", ddof, correction)
    mask = _mask("var", a, where)
    if mask is None and mean is None:
        return _reduce("var", a, axis, keepdims, ddof=ddof, dtype=_dtype(dtype))
    return _variance("var", a, axis, dtype, ddof, keepdims, mask, mean)


def std(
    a: Any,
    axis: Axis = None,
    dtype: Any = None,
    out: None = None,
    ddof: int | float = 0,
    keepdims: bool = False,
    *,
    where: Any = None,
    mean: Any = None,
    correction: Any = None,
):
    """``numpy.std``: the square root of ``var`` (same options), as in NumPy. Example:
    ``std(x, ddof=1)``."""
    _no_out("std", out)
    a = _array("std", a)
    ddof = _ddof("std", ddof, correction)
    mask = _mask("std", a, where)
    if mask is None and mean is None:
        variance = _reduce("var", a, axis, keepdims, caller="std", ddof=ddof, dtype=_dtype(dtype))
    else:
        variance = _variance("std", a, axis, dtype, ddof, keepdims, mask, mean)
    return UNARY["sqrt"].bind(variance)


def argmax(a: Any, axis: int | None = None, out: None = None, *, keepdims: bool = False):
    """``numpy.argmax`` (None: index into the flattened array). Example: ``argmax(x, 1)``."""
    _no_out("argmax", out)
    a = _array("argmax", a)
    axis = _one_axis("argmax", axis, a)
    return argmax_p.bind(a, axis=axis, keepdims=builtins.bool(keepdims))


def argmin(a: Any, axis: int | None = None, out: None = None, *, keepdims: bool = False):
    """``numpy.argmin`` (None: index into the flattened array). Example: ``argmin(x, 1)``."""
    _no_out("argmin", out)
    a = _array("argmin", a)
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
