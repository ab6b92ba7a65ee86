"""Arrays from data in spmd.numpy: ``array``, ``asarray`` and ``copy`` turn host values
(NumPy arrays, scalars, nested lists), spmd Arrays and traced values into spmd Arrays, with
NumPy 2's casting rules; with jax_enable_x64 off, 64-bit data becomes 32-bit, as in JAX."""

from __future__ import annotations

from typing import Any

import numpy as np

from spmd.core.aval import check_dtype, host_array
from spmd.errors import SpmdOverflowError, SpmdTypeError, SpmdValueError
from spmd.numpy.device_arg import takes_device
from spmd.numpy.placement import takes_out_sharding
from spmd.runtime.put import device_put, host_value


@takes_device
@takes_out_sharding
def array(object: Any, dtype: Any = None, copy: bool = True, *, ndmin: int = 0):
    """``numpy.array`` as an spmd Array. Example: ``spmd.numpy.array([1., 2.], ndmin=2)``.

    Values that ``dtype`` cannot hold raise as in NumPy 2 (``array([300], dtype=np.int8)``)."""
    return _array(object, dtype, ndmin, "array", "object")


def _array(object: Any, dtype: Any, ndmin: Any, fn: str, argument: str):
    """``numpy.array(object, dtype, ndmin=ndmin)``; errors name ``spmd.numpy.{fn}``."""
    from spmd.core.axes import as_int
    from spmd.core.trace import Tracer
    from spmd.numpy.shaping import reshape

    dtype = None if dtype is None else check_dtype(dtype)
    ndmin = as_int(ndmin, f"spmd.numpy.{fn}", "ndmin")
    if isinstance(object, Tracer):
        result = object if dtype is None else object.astype(dtype)
    elif isinstance(object, (list, tuple)) and _holds_arrays(object):
        from spmd.numpy.shaping import stack

        stacked = stack([array(item) for item in object])  # traced or sharded elements
        result = stacked if dtype is None else stacked.astype(dtype)
    else:
        result = device_put(_host(object, dtype, fn, argument))
    shape = result.shape
    if ndmin > len(shape):
        result = reshape(result, (1,) * (ndmin - len(shape)) + tuple(shape))
    return result


NUMPY_REFUSALS = {
    OverflowError: SpmdOverflowError,
    TypeError: SpmdTypeError,
    ValueError: SpmdValueError,
}


def _host(object: Any, dtype: np.dtype | None, fn: str, argument: str) -> np.ndarray:
    """``object`` as a NumPy array of ``dtype`` (None: its own, in the x64 mode's type).
    Python values that ``dtype`` cannot hold (300 in int8, a complex in float64, NaN in int32)
    raise as in NumPy 2; arrays are cast."""
    if dtype is None:
        return host_value(object, f"spmd.numpy.{fn}: {argument}")
    value = host_array(object, argument)
    if value.dtype == dtype:
        return value
    if isinstance(object, np.ndarray) or hasattr(object, "__array__"):
        return value.astype(dtype)  # NumPy casts arrays (wrapping, truncating)
    try:
        return np.asarray(object, dtype=dtype)
    except (OverflowError, TypeError, ValueError) as error:
        text = repr(object)
        text = text if len(text) <= 60 else text[:57] + "..."
        raise NUMPY_REFUSALS.get(type(error), SpmdValueError)(
            f"spmd.numpy.{fn}: {argument}={text} cannot become {dtype}: {error}. NumPy 2 "
            f"refuses this too; give values that {dtype} holds, or cast an array on purpose "
            f"(np.asarray({argument}).astype(np.{dtype}) wraps and truncates as NumPy's casts do)."
        ) from None


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


@takes_device
@takes_out_sharding
def asarray(a: Any, dtype: Any = None, order: Any = None, *, copy: bool | None = None):
    """``numpy.asarray``: an spmd Array (an Array or tracer of that dtype is returned as it
    is: spmd Arrays never change, so it serves as a copy too). ``copy=False`` raises where a
    new Array has to be made (host data, another dtype), as the Array API says."""
    from spmd.core.trace import Tracer
    from spmd.runtime.array import Array

    if isinstance(a, (Array, Tracer)):
        wanted = check_dtype(a.dtype if dtype is None else dtype)  # with x64 off, 32 bits
        if wanted == a.dtype:
            return a
        dtype = wanted
    if copy is False:
        raise SpmdValueError(
            f"spmd.numpy.asarray: copy=False, but a ({type(a).__name__}"
            f"{'' if dtype is None else f', to {np.dtype(dtype)}'}) has to be copied into a new "
            f"spmd Array; pass copy=None (copy only when needed) or copy=True."
        )
    return _array(a, dtype, 0, "asarray", "a")


__all__ = ["array", "asarray", "copy"]
