"""Argument checks shared by spmd.random's samplers: keys, shapes, dtypes and parameters
that must broadcast to the result, each refused with an error that names the sampler."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from spmd.core.aval import check_dtype
from spmd.core.trace import Tracer, aval_of
from spmd.errors import ShapeError, SpmdTypeError
from spmd.prims.random import FLOAT_DTYPES, check_key
from spmd.sharding.layout import canonical_shape

INT_DTYPES = tuple(
    map(
        np.dtype, (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)
    )
)
DEFAULT_FLOAT = np.dtype(np.float32)  # jax.random's defaults (x64 off), whatever spmd's mode
DEFAULT_INT = np.dtype(np.int32)


def one_key(name: str, key: Any) -> Any:
    """``key`` if it is one raw key (uint32[2]); otherwise an error naming ``name``."""
    check_key(name, aval_of(key))
    return key


def shape_arg(name: str, shape: int | Sequence[int], argument: str = "shape") -> tuple[int, ...]:
    """``shape`` (an int or a sequence of ints) as a tuple of non-negative ints."""
    dims = (shape,) if isinstance(shape, (int, np.integer)) else shape
    return canonical_shape(dims, f"spmd.random.{name}({argument}={shape!r})")


def dtype_arg(name: str, dtype: Any, allowed: tuple[np.dtype, ...]) -> np.dtype:
    """``dtype`` as a NumPy dtype among ``allowed``; otherwise an error listing them."""
    result = check_dtype(dtype)
    if result not in allowed:
        names = ", ".join(d.name for d in allowed)
        raise SpmdTypeError(f"spmd.random.{name}: dtype={result} is not supported; use {names}.")
    return result


def float_dtype_arg(name: str, dtype: Any) -> np.dtype:
    """A float dtype for ``name``'s result (float32 when ``dtype`` is None, as in JAX)."""
    return dtype_arg(name, DEFAULT_FLOAT if dtype is None else dtype, FLOAT_DTYPES)


def int_dtype_arg(name: str, dtype: Any) -> np.dtype:
    """An integer dtype for ``name``'s result (int32 when ``dtype`` is None, as in JAX)."""
    return dtype_arg(name, DEFAULT_INT if dtype is None else dtype, INT_DTYPES)


def real_param(name: str, what: str, value: Any) -> Any:
    """A real-valued parameter (a number or an array of them), refused if complex or not
    numeric."""
    dtype = aval_of(value).dtype
    if dtype.kind not in "biuf":
        raise SpmdTypeError(
            f"spmd.random.{name}: {what} must be real numbers, not {aval_of(value)}; pass "
            f"ints or floats."
        )
    return value


def result_shape(name: str, shape: Any, **params: Any) -> tuple[int, ...]:
    """The result's shape: ``shape`` if given (every parameter must broadcast to it), else
    the parameters' shapes broadcast together."""
    shapes = {what: aval_of(value).shape for what, value in params.items()}
    if shape is None:
        try:
            return np.broadcast_shapes(*shapes.values())
        except ValueError:
            listed = ", ".join(f"{what} {s}" for what, s in shapes.items())
            raise ShapeError(
                f"spmd.random.{name}: the parameters' shapes do not broadcast together "
                f"({listed}); give them shapes that broadcast, or pass shape=."
            ) from None
    shape = shape_arg(name, shape)
    for what, s in shapes.items():
        if not broadcasts_to(s, shape):
            raise ShapeError(
                f"spmd.random.{name}: {what} of shape {s} does not broadcast to shape={shape}; "
                f"pass a shape that {what} broadcasts to (its trailing dimensions must match "
                f"or be 1), or reshape {what}."
            )
    return shape


def broadcasts_to(small: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    try:
        return np.broadcast_shapes(small, shape) == shape
    except ValueError:
        return False


def concrete_int(name: str, what: str, value: Any) -> int:
    """``value`` as a Python int: a size must be known when the function is traced."""
    if isinstance(value, Tracer):
        raise SpmdTypeError(
            f"spmd.random.{name}: {what} must be a concrete int, but it is a traced value "
            f"{aval_of(value)}; pass a Python int, or mark the argument static "
            f"(jit(..., static_argnums=...))."
        )
    if isinstance(value, (bool, np.bool_)) or np.ndim(value) != 0:
        raise SpmdTypeError(f"spmd.random.{name}: {what} must be an int, not {value!r}.")
    if np.asarray(value).dtype.kind not in "iu":
        raise SpmdTypeError(f"spmd.random.{name}: {what} must be an int, not {value!r}.")
    return int(np.asarray(value))
