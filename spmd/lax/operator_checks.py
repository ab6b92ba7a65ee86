"""Argument checks that spmd.lax's general operators share: dimension lists, shapes and
dtypes, each failure an SpmdError that names the function, the argument and the sizes."""

from __future__ import annotations

from typing import Any

import numpy as np

from spmd.core.axes import as_int, as_ints
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError, aval_str


def where(fn: str) -> str:
    return f"spmd.lax.{fn}"


def dimensions(value: Any, fn: str, argument: str) -> tuple[int, ...]:
    """A sequence of ints (JAX's dimension lists): refuses a lone int or a non-int entry."""
    if isinstance(value, int | np.integer) or not hasattr(value, "__iter__"):
        raise SpmdTypeError(
            f"{where(fn)}: {argument} must be a sequence of ints, got {value!r} "
            f"({type(value).__name__}); e.g. {argument}=(0,)."
        )
    return as_ints(value, where(fn), argument)


def in_range(dims: tuple[int, ...], ndim: int, fn: str, argument: str, of: str) -> None:
    """Each of ``dims`` in ``[0, ndim)`` and named once (JAX takes no negative dimensions)."""
    for d in dims:
        if not 0 <= d < ndim:
            raise ShapeError(
                f"{where(fn)}: {argument}={dims} holds {d}, outside [0, {ndim}) for {of} "
                f"({ndim} dimension(s)); jax.lax takes dimensions from 0 to ndim - 1."
            )
    repeated = sorted({d for d in dims if dims.count(d) > 1})
    if repeated:
        raise ShapeError(
            f"{where(fn)}: {argument}={dims} names dimension {repeated[0]} more than once; "
            f"give each dimension once."
        )


def canonical(dims: tuple[int, ...], ndim: int, fn: str, argument: str, of: str) -> tuple:
    """``dims`` with negatives counted from the end (squeeze, expand_dims), each once."""
    for d in dims:
        if not -ndim <= d < ndim:
            raise ShapeError(
                f"{where(fn)}: {argument}={dims} holds {d}, out of bounds for {of} "
                f"({ndim} dimension(s)); use dimensions in [{-ndim}, {ndim})."
            )
    result = tuple(d % ndim for d in dims)
    in_range(result, ndim, fn, argument, of)
    return result


def sizes(value: Any, fn: str, argument: str) -> tuple[int, ...]:
    """A shape: a sequence of non-negative ints (no -1: jax.lax infers nothing)."""
    shape = dimensions(value, fn, argument)
    if any(n < 0 for n in shape):
        raise ShapeError(
            f"{where(fn)}: {argument}={shape} has a negative size; every size must be >= 0 "
            f"(jax.lax does not infer a -1 size)."
        )
    return shape


def static_int(value: Any, fn: str, argument: str) -> int:
    return as_int(value, where(fn), argument)


def same_dtype(fn: str, first: Any, first_name: str, other: Any, other_name: str) -> None:
    """jax.lax does not promote: an array argument must have the other's dtype (a Python
    scalar, weakly typed, takes it)."""
    a, b = aval_of(first), aval_of(other)
    if a.dtype != b.dtype and not a.weak_type and not b.weak_type:
        raise SpmdTypeError(
            f"{where(fn)}: {first_name} is {a} and {other_name} is {b}; jax.lax.{fn} needs "
            f"one dtype (it does not promote). Convert first, e.g. "
            f"{other_name}.astype({first_name}.dtype)."
        )


def scalar(fn: str, value: Any, argument: str) -> None:
    aval = aval_of(value)
    if aval.ndim:
        raise ShapeError(
            f"{where(fn)}: {argument} must be a scalar, got {aval}; pass a 0-d value, "
            f"e.g. {argument}=0."
        )


def of(x: Any) -> str:
    """``f32[2,3]``, for messages."""
    aval = aval_of(x)
    return aval_str(aval.shape, aval.dtype)
