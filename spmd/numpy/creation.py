"""Array creation in spmd.numpy: NumPy's constructors, placed on the default device."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from spmd.core.aval import check_dtype, host_array
from spmd.errors import ShapeError, SpmdTypeError, SpmdValueError, SpmdZeroDivisionError
from spmd.numpy.placement import takes_out_sharding
from spmd.prims.creation import iota_p
from spmd.runtime.put import device_put


def _put(value: np.ndarray):
    return device_put(value)


def _tracing() -> bool:
    from spmd.core.trace import EVAL_TRACE, current_trace

    return current_trace() is not EVAL_TRACE


def _filled(name: str, shape: Any, value: Any, dtype: Any):
    """``numpy.full(shape, value, dtype)``; inside a trace, a broadcast of one element, which
    each device expands to just its block when it runs."""
    from spmd.numpy.shaping import _sizes, broadcast_to

    sizes = _sizes(shape, name)
    if not _tracing():
        return _put(np.full(sizes, value, dtype))
    return broadcast_to(np.full((), value, dtype)[()], sizes)


@takes_out_sharding
def array(object: Any, dtype: Any = None, copy: bool = True):
    """``numpy.array`` as an spmd Array. Example: ``spmd.numpy.array([1., 2.])``."""
    from spmd.core.trace import Tracer

    if isinstance(object, Tracer):
        return object if dtype is None else object.astype(dtype)
    if isinstance(object, (list, tuple)) and _holds_arrays(object):
        from spmd.numpy.shaping import stack

        stacked = stack([array(item) for item in object])  # traced or sharded elements
        return stacked if dtype is None else stacked.astype(check_dtype(dtype))
    value = host_array(object, "object")
    return _put(value if dtype is None else value.astype(check_dtype(dtype)))


def _holds_arrays(items: list | tuple) -> bool:
    """Whether a nested list holds spmd Arrays or traced values (not only host values)."""
    from spmd.core.methods import ArrayMethods

    return any(
        isinstance(item, ArrayMethods) or (isinstance(item, (list, tuple)) and _holds_arrays(item))
        for item in items
    )


def copy(a: Any):
    """``numpy.copy``. spmd Arrays never change, so an Array (or traced value) is its own
    copy; anything else becomes a new Array."""
    from spmd.core.methods import ArrayMethods

    return a if isinstance(a, ArrayMethods) else array(a)


@takes_out_sharding
def asarray(a: Any, dtype: Any = None):
    """``numpy.asarray``: an spmd Array (an Array or tracer is returned as it is)."""
    from spmd.core.trace import Tracer
    from spmd.runtime.array import Array

    if isinstance(a, (Array, Tracer)) and (dtype is None or np.dtype(dtype) == a.dtype):
        return a
    return array(a, dtype)


@takes_out_sharding
def zeros(shape: Any, dtype: Any = float):
    return _filled("zeros", shape, 0, check_dtype(dtype))


@takes_out_sharding
def ones(shape: Any, dtype: Any = float):
    return _filled("ones", shape, 1, check_dtype(dtype))


@takes_out_sharding
def full(shape: Any, fill_value: Any, dtype: Any = None):
    """``numpy.full``: ``fill_value`` (a scalar, or an array that broadcasts) over ``shape``.

    An spmd Array or traced fill becomes ``broadcast_to(asarray(fill_value, dtype), shape)``, as
    in JAX, so ``jit(lambda x: full((2, 3), x))`` works; the dtype is NumPy's (the fill's).
    """
    from spmd.core.trace import Tracer, aval_of
    from spmd.runtime.array import Array

    dtype = None if dtype is None else check_dtype(dtype)
    if not isinstance(fill_value, (Array, Tracer)):
        if np.ndim(fill_value) == 0:
            return _filled("full", shape, fill_value, np.full((), fill_value, dtype).dtype)
        return _put(np.full(shape, fill_value, dtype))
    from spmd.numpy.shaping import astype, broadcast_to

    aval = aval_of(fill_value)
    if dtype is not None or aval.weak_type:  # NumPy's full gives a strong (concrete) dtype
        fill_value = astype(fill_value, aval.dtype if dtype is None else dtype)
    try:
        return broadcast_to(fill_value, shape)
    except ShapeError as error:
        raise ShapeError(
            f"spmd.numpy.full: fill_value {aval} does not fit shape {shape!r}; it must broadcast "
            f"to the shape ({error})"
        ) from None


@takes_out_sharding
def empty(shape: Any, dtype: Any = float):
    return zeros(shape, dtype)


def _like(a: Any):
    from spmd.core.trace import aval_of

    return aval_of(a)


@takes_out_sharding
def zeros_like(a: Any, dtype: Any = None):
    aval = _like(a)
    return zeros(aval.shape, aval.dtype if dtype is None else dtype)


@takes_out_sharding
def ones_like(a: Any, dtype: Any = None):
    aval = _like(a)
    return ones(aval.shape, aval.dtype if dtype is None else dtype)


@takes_out_sharding
def full_like(a: Any, fill_value: Any, dtype: Any = None):
    """``numpy.full_like``: ``fill_value`` (traced or not) in the shape and dtype of ``a``."""
    aval = _like(a)
    return full(aval.shape, fill_value, aval.dtype if dtype is None else dtype)


@takes_out_sharding
def arange(start: Any, stop: Any = None, step: Any = None, dtype: Any = None):
    """``numpy.arange``. Example: ``spmd.numpy.arange(32)``."""
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    dtype = None if dtype is None else check_dtype(dtype)
    if isinstance(step, (int, float, complex, np.number)) and step == 0:
        raise SpmdZeroDivisionError(
            f"spmd.numpy.arange({start!r}, {stop!r}, step={step!r}): step is 0, so the range "
            f"never reaches stop (NumPy divides by it). Give a nonzero step, or use "
            f"linspace(start, stop, num) for a given number of values."
        )
    try:
        iota = _tracing() and _iota_params(start, stop, step, dtype)
        if iota:
            return iota_p.bind(**iota)
        return _put(np.arange(start, stop, step, dtype=dtype))
    except TypeError as error:
        call = f"arange({start!r}, {stop!r}, {step!r}"
        if dtype == np.bool_:
            raise SpmdTypeError(
                f"spmd.numpy.{call}, dtype=bool): a bool range holds at most 2 values "
                f"(False, True), as in NumPy, and this one has {_length(start, stop, step)}. "
                f"Make an integer range and compare it instead, e.g. arange(n) % 2 == 1, or "
                f"convert it with arange(n).astype(bool)."
            ) from None
        raise SpmdTypeError(
            f"spmd.numpy.{call}{'' if dtype is None else f', dtype={dtype}'}): "
            f"{str(error).rstrip('.')}. "
            f"start, stop and step must be Python or NumPy numbers."
        ) from None


def _iota_params(start: Any, stop: Any, step: Any, dtype: np.dtype | None) -> dict | None:
    """iota's parameters for ``arange(start, stop, step, dtype)``, if it gives integers,
    exactly, that its dtype holds (None: NumPy computes it)."""
    integers = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                   for v in (start, stop, step))  # fmt: skip
    if not integers or step == 0 or (dtype is not None and dtype.kind not in "iu"):
        return None
    start, step = int(start), int(step)
    size = len(range(start, int(stop), step))
    dtype = np.arange(start, start, step, dtype=dtype).dtype  # NumPy's choice of dtype
    info = np.iinfo(dtype)
    last = start + step * max(0, size - 1)
    if not (info.min <= min(start, last) and max(start, last) <= info.max):
        return None
    return {"size": size, "start": start, "step": step, "dtype": dtype}


def _length(start: Any, stop: Any, step: Any) -> str:
    """How many values ``arange(start, stop, step)`` has, as text ("more than 2" if unknown)."""
    try:
        return str(max(0, math.ceil((stop - start) / step)))
    except (TypeError, ValueError, ZeroDivisionError, OverflowError):
        return "more than 2"


@takes_out_sharding
def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, dtype: Any = None):
    """``numpy.linspace``: ``num`` evenly spaced values from ``start`` to ``stop``."""
    from spmd.core.axes import as_int

    count = as_int(num, "spmd.numpy.linspace", "num")
    if count < 0:
        raise SpmdValueError(
            f"spmd.numpy.linspace: num={count} is negative; num is how many values to make "
            f"and must be >= 0."
        )
    dtype = None if dtype is None else check_dtype(dtype)
    return _put(np.linspace(start, stop, count, endpoint=endpoint, dtype=dtype))


@takes_out_sharding
def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = float):
    """``numpy.eye``: ones on the ``k``-th diagonal of an N × M matrix; inside a trace,
    ``row + k == column`` over two iotas, which each device computes for its block."""
    from spmd.core.axes import as_int
    from spmd.numpy.shaping import _sizes

    dtype = check_dtype(dtype)
    n, m = _sizes((N, N if M is None else M), "eye", "(N, M)")
    k = as_int(k, "spmd.numpy.eye", "k")
    if not _tracing():
        return _put(np.eye(n, m, k, dtype=dtype))
    rows, columns = arange(int(k), int(k) + n), arange(m)
    return (rows[:, None] == columns[None, :]).astype(dtype)


__all__ = [
    "arange",
    "array",
    "asarray",
    "copy",
    "empty",
    "eye",
    "full",
    "full_like",
    "linspace",
    "ones",
    "ones_like",
    "zeros",
    "zeros_like",
]
