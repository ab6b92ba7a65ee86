"""Array creation in spmd.numpy: NumPy's constructors, placed on the default device."""

from __future__ import annotations

from typing import Any

import numpy as np

from spmd.core.aval import check_dtype
from spmd.runtime.put import device_put, host_array


def _put(value: np.ndarray):
    return device_put(value)


def array(object: Any, dtype: Any = None, copy: bool = True):
    """``numpy.array`` as an spmd Array. Example: ``spmd.numpy.array([1., 2.])``."""
    from spmd.core.trace import Tracer

    if isinstance(object, Tracer):
        return object if dtype is None else object.astype(dtype)
    value = host_array(object, "object")
    return _put(value if dtype is None else value.astype(check_dtype(dtype)))


def asarray(a: Any, dtype: Any = None):
    """``numpy.asarray``: an spmd Array (an Array or tracer is returned as it is)."""
    from spmd.core.trace import Tracer
    from spmd.runtime.array import Array

    if isinstance(a, (Array, Tracer)) and (dtype is None or np.dtype(dtype) == a.dtype):
        return a
    return array(a, dtype)


def zeros(shape: Any, dtype: Any = float):
    return _put(np.zeros(shape, check_dtype(dtype)))


def ones(shape: Any, dtype: Any = float):
    return _put(np.ones(shape, check_dtype(dtype)))


def full(shape: Any, fill_value: Any, dtype: Any = None):
    return _put(np.full(shape, fill_value, None if dtype is None else check_dtype(dtype)))


def empty(shape: Any, dtype: Any = float):
    return zeros(shape, dtype)


def _like(a: Any):
    from spmd.core.trace import aval_of

    return aval_of(a)


def zeros_like(a: Any, dtype: Any = None):
    aval = _like(a)
    return zeros(aval.shape, dtype or aval.dtype)


def ones_like(a: Any, dtype: Any = None):
    aval = _like(a)
    return ones(aval.shape, dtype or aval.dtype)


def full_like(a: Any, fill_value: Any, dtype: Any = None):
    aval = _like(a)
    return full(aval.shape, fill_value, dtype or aval.dtype)


def arange(start: Any, stop: Any = None, step: Any = None, dtype: Any = None):
    """``numpy.arange``. Example: ``spmd.numpy.arange(32)``."""
    if stop is None:
        start, stop = 0, start
    dtype = None if dtype is None else check_dtype(dtype)
    return _put(np.arange(start, stop, 1 if step is None else step, dtype=dtype))


def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, dtype: Any = None):
    return _put(np.linspace(start, stop, num, endpoint=endpoint, dtype=dtype))


def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = float):
    return _put(np.eye(N, M, k, dtype=check_dtype(dtype)))


__all__ = [
    "arange",
    "array",
    "asarray",
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
