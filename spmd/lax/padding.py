"""lax's pad (low, high and interior padding, negative low and high crop) and its static
slices: slice, slice_in_dim, index_in_dim.

Compositions of spmd.numpy's indexing, concatenate, reshape and broadcast_to, so their
derivatives (a pad's cotangent for ``padding_value`` is the sum over the padding), batching
and sharding come from those.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError
from spmd.lax import operator_checks as check
from spmd.numpy import asarray, broadcast_to, concatenate, expand_dims, reshape
from spmd.prims.indexing import SpmdIndexError

__all__ = ["index_in_dim", "pad", "slice", "slice_in_dim"]

_slice = slice  # the builtin, which this module's ``slice`` shadows


def _padding_config(config: Any, aval) -> list[tuple[int, int, int]]:
    try:
        entries = [tuple(entry) for entry in config]
    except TypeError:
        entries = None
    if entries is None or any(len(e) != 3 for e in entries):
        raise SpmdTypeError(
            f"spmd.lax.pad: padding_config must hold one (low, high, interior) triple of ints "
            f"per dimension, got {config!r}; e.g. [(1, 1, 0)] * x.ndim."
        )
    if len(entries) != aval.ndim:
        raise ShapeError(
            f"spmd.lax.pad: padding_config has {len(entries)} entries for operand {aval} of "
            f"{aval.ndim} dimension(s); give one (low, high, interior) per dimension."
        )
    triples = [tuple(check.static_int(v, "pad", "padding_config") for v in e) for e in entries]
    for d, ((low, high, interior), n) in enumerate(zip(triples, aval.shape, strict=True)):
        if interior < 0:
            raise ShapeError(
                f"spmd.lax.pad: padding_config[{d}] = {(low, high, interior)} has a negative "
                f"interior padding; interior padding must be >= 0 (low and high may be "
                f"negative, which crops)."
            )
        if low + high + n + max(n - 1, 0) * interior < 0:
            raise ShapeError(
                f"spmd.lax.pad: padding_config[{d}] = {(low, high, interior)} crops more than "
                f"dimension {d} of {aval} holds (size {n}); the padded size would be negative."
            )
    return triples


def _along(x: Any, axis: int, start: int, stop: int, step: int = 1) -> Any:
    index = [_slice(None)] * aval_of(x).ndim
    index[axis] = _slice(start, stop, step)
    return x[tuple(index)]


def _filled(value: Any, like: Any, axis: int, size: int) -> Any:
    shape = list(aval_of(like).shape)
    shape[axis] = size
    return broadcast_to(value, tuple(shape))


def _interior(x: Any, value: Any, axis: int, interior: int) -> Any:
    """``interior`` fill values between neighbours along ``axis``: each element followed
    by its fill (a new dimension), merged, then the last fill dropped."""
    shape = aval_of(x).shape
    n = shape[axis]
    column = expand_dims(x, axis + 1)
    fills = _filled(value, column, axis + 1, interior)
    woven = concatenate([column, fills], axis=axis + 1)
    merged = reshape(woven, (*shape[:axis], n * (interior + 1), *shape[axis + 1 :]))
    return _along(merged, axis, 0, n + (n - 1) * interior)


def _pad_axis(x: Any, value: Any, axis: int, low: int, high: int, interior: int) -> Any:
    n = aval_of(x).shape[axis]
    if interior and n > 1:
        x = _interior(x, value, axis, interior)
    m = aval_of(x).shape[axis]
    total = low + high + m
    start = min(max(-low, 0), m)
    stop = max(start, m - max(-high, 0))
    if (start, stop) != (0, m):
        x = _along(x, axis, start, stop)
    before = min(max(low, 0), total)
    after = total - before - (stop - start)
    parts = [_filled(value, x, axis, before)] if before else []
    parts.append(x)
    if after:
        parts.append(_filled(value, x, axis, after))
    return parts[0] if len(parts) == 1 else concatenate(parts, axis=axis)


def _value(padding_value: Any, aval) -> Any:
    """The padding value in the operand's dtype: a Python number converted (it must be a
    value of that dtype), an array checked to be a scalar of it."""
    if type(padding_value) in (bool, int, float, complex):
        converted = np.array(padding_value).astype(aval.dtype)
        if converted != padding_value:
            raise SpmdTypeError(
                f"spmd.lax.pad: padding_value={padding_value!r} is not a value of the operand's "
                f"dtype {aval.dtype}; pass one that is (lax.pad does not promote)."
            )
        return converted
    check.scalar("pad", padding_value, "padding_value")
    value = aval_of(padding_value)
    if value.dtype != aval.dtype:
        raise SpmdTypeError(
            f"spmd.lax.pad: the operand is {aval} and padding_value is {value}; lax.pad needs "
            f"one dtype (it does not promote). Convert first, e.g. "
            f"padding_value.astype(operand.dtype)."
        )
    return padding_value


def pad(operand: Any, padding_value: Any, padding_config: Sequence[tuple[int, int, int]]) -> Any:
    """``operand`` with, per dimension, ``(low, high, interior)``: ``low`` and ``high``
    copies of the scalar ``padding_value`` at the ends (negative: that many elements
    cropped) and ``interior`` between neighbours, as jax.lax.pad. Example:
    ``pad(x, 0.0, [(1, 1, 0)])`` puts a zero at each end of a vector."""
    operand = asarray(operand)
    aval = aval_of(operand)
    padding_value = _value(padding_value, aval)
    for axis, (low, high, interior) in enumerate(_padding_config(padding_config, aval)):
        if (low, high, interior) != (0, 0, 0):
            operand = _pad_axis(operand, padding_value, axis, low, high, interior)
    return operand


def slice(
    operand: Any,
    start_indices: Sequence[int],
    limit_indices: Sequence[int],
    strides: Sequence[int] | None = None,
) -> Any:
    """``operand[start:limit:stride]`` per dimension, with ``0 <= start <= limit <= size``
    and strides >= 1 (None: all 1), as jax.lax.slice. Example: ``slice(x, (1,), (3,))``."""
    operand = asarray(operand)
    aval = aval_of(operand)
    starts = check.dimensions(start_indices, "slice", "start_indices")
    limits = check.dimensions(limit_indices, "slice", "limit_indices")
    steps = (1,) * aval.ndim if strides is None else check.dimensions(strides, "slice", "strides")
    for name, values in (("start_indices", starts), ("limit_indices", limits),
                         ("strides", steps)):  # fmt: skip
        if len(values) != aval.ndim:
            raise ShapeError(
                f"spmd.lax.slice: {name}={values} has {len(values)} entries for operand "
                f"{aval} of {aval.ndim} dimension(s); give one per dimension."
            )
    for d, (start, limit, step, n) in enumerate(
        zip(starts, limits, steps, aval.shape, strict=True)
    ):
        if not 0 <= start <= limit <= n:
            raise ShapeError(
                f"spmd.lax.slice: dimension {d} of {aval} (size {n}) has start {start} and "
                f"limit {limit}; jax.lax.slice needs 0 <= start <= limit <= {n}."
            )
        if step < 1:
            raise ShapeError(
                f"spmd.lax.slice: strides={steps} has {step} for dimension {d}; strides "
                f"must be >= 1 (reverse with lax.rev)."
            )
    index = tuple(_slice(s, e, k) for s, e, k in zip(starts, limits, steps, strict=True))
    if all((s, e, k) == (0, n, 1) for (s, e, k), n in zip(
            zip(starts, limits, steps, strict=True), aval.shape, strict=True)):  # fmt: skip
        return operand
    return operand[index]


def slice_in_dim(
    operand: Any, start_index: int | None, limit_index: int | None, stride: int = 1, axis: int = 0
) -> Any:
    """``slice`` along ``axis`` only: ``start_index`` and ``limit_index`` may be None (0 and
    the size) or negative (counted from the end). Example: ``slice_in_dim(x, -2, None)``."""
    operand = asarray(operand)
    aval = aval_of(operand)
    axis = _axis("slice_in_dim", axis, aval)
    n = aval.shape[axis]
    start = 0 if start_index is None else check.static_int(start_index, "slice_in_dim",
                                                           "start_index")  # fmt: skip
    limit = n if limit_index is None else check.static_int(limit_index, "slice_in_dim",
                                                           "limit_index")  # fmt: skip
    start, limit = start + n if start < 0 else start, limit + n if limit < 0 else limit
    stride = check.static_int(stride, "slice_in_dim", "stride")
    starts = [start if d == axis else 0 for d in range(aval.ndim)]
    limits = [limit if d == axis else size for d, size in enumerate(aval.shape)]
    strides = [stride if d == axis else 1 for d in range(aval.ndim)]
    return slice(operand, starts, limits, strides)


def index_in_dim(operand: Any, index: int, axis: int = 0, keepdims: bool = True) -> Any:
    """Element ``index`` (negative: from the end) along ``axis``, keeping that dimension
    (size 1) unless ``keepdims=False``. Example: ``index_in_dim(x, -1, keepdims=False)``."""
    operand = asarray(operand)
    aval = aval_of(operand)
    axis = _axis("index_in_dim", axis, aval)
    n = aval.shape[axis]
    index = check.static_int(index, "index_in_dim", "index")
    if not -n <= index < n:
        raise SpmdIndexError(
            f"spmd.lax.index_in_dim: index {index} is out of bounds for dimension {axis} of "
            f"{aval} (size {n}); use an index in [{-n}, {n})."
        )
    index %= n
    out = slice_in_dim(operand, index, index + 1, 1, axis)
    return out if keepdims else reshape(out, aval.shape[:axis] + aval.shape[axis + 1 :])


def _axis(fn: str, axis: Any, aval) -> int:
    axis = check.static_int(axis, fn, "axis")
    if not -aval.ndim <= axis < aval.ndim:
        raise ShapeError(
            f"spmd.lax.{fn}: axis={axis} is out of bounds for {aval} ({aval.ndim} "
            f"dimension(s)); use an axis in [{-aval.ndim}, {aval.ndim})."
        )
    return axis % aval.ndim
