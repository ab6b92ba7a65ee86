"""``lax.dynamic_slice`` and kin: a block of fixed size at a start that may be traced.

As in JAX (``allow_negative_indices=True``, its default), a negative start counts from the
end, ``start + n``, and each start is then clamped so that the block lies inside the
operand. Starts known when the function is traced give plain slices (which shard); traced
starts gather the block with index arrays, and an update lands through a mask.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from spmd.core.trace import Tracer, aval_of
from spmd.errors import ShapeError, SpmdTypeError
from spmd.numpy import arange, asarray, clip, logical_and, where


def dynamic_slice(
    operand: Any,
    start_indices: Sequence[Any],
    slice_sizes: Sequence[int],
    *,
    allow_negative_indices: bool = True,
):
    """``operand[s0:s0+n0, s1:s1+n1, ...]``, a negative start counting from the end, each
    start clamped to keep the block inside (JAX's rule).

    Example: ``dynamic_slice(x, (i, 0), (2, x.shape[1]))`` takes rows i and i+1."""
    operand, starts = asarray(operand), _starts(start_indices)
    shape = _check("dynamic_slice", operand, starts, slice_sizes)
    clamped = _clamped(starts, shape, slice_sizes, allow_negative_indices)
    blocks = list(zip(clamped, slice_sizes, strict=True))
    if all(isinstance(s, int) for s, _ in blocks):
        return operand[tuple(slice(s, s + n) for s, n in blocks)]
    return operand[_grid([s + arange(n) for s, n in blocks])]


def dynamic_update_slice(
    operand: Any, update: Any, start_indices: Sequence[Any], *, allow_negative_indices: bool = True
):
    """``operand`` with the block at ``start_indices`` (negative ones counted from the end,
    then clamped) replaced by ``update``. Example: ``dynamic_update_slice(x, u, (-2,))``."""
    operand, starts = asarray(operand), _starts(start_indices)
    sizes = aval_of(update).shape
    shape = _check("dynamic_update_slice", operand, starts, sizes)
    blocks = list(zip(_clamped(starts, shape, sizes, allow_negative_indices), sizes, strict=True))
    update = asarray(update).astype(aval_of(operand).dtype)
    if 0 in sizes:  # an empty block changes nothing
        return operand
    if all(isinstance(s, int) for s, _ in blocks):
        return operand.at[tuple(slice(s, s + n) for s, n in blocks)].set(update)
    mask, offsets = True, []
    for d, ((start, size), length) in enumerate(zip(blocks, shape, strict=True)):
        position = arange(length)
        inside = logical_and(position >= start, position < start + size)
        mask = logical_and(mask, inside.reshape(_along(d, len(shape))))
        offsets.append(clip(position - start, 0, max(size - 1, 0)))
    return where(mask, update[_grid(offsets)], operand)


def dynamic_slice_in_dim(
    operand: Any,
    start_index: Any,
    slice_size: int,
    axis: int = 0,
    *,
    allow_negative_indices: bool = True,
):
    """``dynamic_slice`` along one axis, whole along the others.

    Example: ``dynamic_slice_in_dim(x, -2, 2)`` is ``x[-2:]``."""
    shape = aval_of(operand).shape
    axis = _axis("dynamic_slice_in_dim", axis, len(shape))
    starts = [start_index if d == axis else 0 for d in range(len(shape))]
    sizes = [slice_size if d == axis else n for d, n in enumerate(shape)]
    return dynamic_slice(operand, starts, sizes, allow_negative_indices=allow_negative_indices)


def dynamic_update_slice_in_dim(
    operand: Any, update: Any, start_index: Any, axis: int, *, allow_negative_indices: bool = True
):
    """``dynamic_update_slice`` with the start given along one axis (0 along the others).

    Example: ``dynamic_update_slice_in_dim(x, u, -1, axis=0)`` replaces the last rows."""
    ndim = aval_of(operand).ndim
    axis = _axis("dynamic_update_slice_in_dim", axis, ndim)
    starts = [start_index if d == axis else 0 for d in range(ndim)]
    return dynamic_update_slice(
        operand, update, starts, allow_negative_indices=allow_negative_indices
    )


def dynamic_update_index_in_dim(
    operand: Any, update: Any, index: Any, axis: int, *, allow_negative_indices: bool = True
):
    """``operand`` with the slice at ``index`` along ``axis`` replaced by ``update`` (which
    may lack that axis). Example: ``dynamic_update_index_in_dim(x, row, -1, 0)``."""
    ndim = aval_of(operand).ndim
    axis = _axis("dynamic_update_index_in_dim", axis, ndim)
    update = asarray(update)
    if update.ndim == ndim - 1:
        update = update.reshape((*update.shape[:axis], 1, *update.shape[axis:]))
    return dynamic_update_slice_in_dim(
        operand, update, index, axis, allow_negative_indices=allow_negative_indices
    )


def dynamic_index_in_dim(
    operand: Any,
    index: Any,
    axis: int = 0,
    keepdims: bool = True,
    *,
    allow_negative_indices: bool = True,
):
    """The slice at ``index`` along ``axis`` (that axis kept, of size 1, unless keepdims).

    Example: ``dynamic_index_in_dim(x, -1, keepdims=False)`` is ``x[-1]``."""
    block = dynamic_slice_in_dim(
        operand, index, 1, axis, allow_negative_indices=allow_negative_indices
    )
    if keepdims:
        return block
    axis = _axis("dynamic_index_in_dim", axis, aval_of(operand).ndim)
    return block.reshape(tuple(n for d, n in enumerate(aval_of(block).shape) if d != axis))


def _check(name: str, operand: Any, starts: Sequence[Any], sizes: Sequence[int]) -> tuple:
    shape = aval_of(operand).shape
    if len(starts) != len(shape) or len(sizes) != len(shape):
        raise ShapeError(
            f"lax.{name}: the operand has {len(shape)} dimensions ({aval_of(operand)}), but "
            f"start_indices has {len(starts)} and the sizes {len(sizes)}; give one per dimension."
        )
    for d, (n, size) in enumerate(zip(shape, sizes, strict=True)):
        if not 0 <= size <= n:
            raise ShapeError(
                f"lax.{name}: the block's size {size} along dimension {d} does not fit the "
                f"operand's {n} ({aval_of(operand)}); give sizes between 0 and the operand's."
            )
    return shape


def _starts(start_indices: Any) -> list:
    """The start indices as a list: a sequence's items, or a 1-D array's elements."""
    if isinstance(start_indices, Tracer) or hasattr(start_indices, "ndim"):
        aval = aval_of(start_indices)
        if aval.ndim != 1:
            raise ShapeError(
                f"lax.dynamic_slice: start_indices {aval} must be a sequence or a 1-D array "
                f"(one start per dimension of the operand)."
            )
        return [start_indices[d] for d in range(aval.shape[0])]
    return list(start_indices)


def _clamped(starts: Sequence[Any], shape: tuple, sizes: Sequence[int], negative: bool) -> list:
    """Each start, ``start + n`` if negative (when ``negative``), clamped into [0, n - size]:
    an int when it is known, else traced."""
    clamped = []
    for start, n, size in zip(starts, shape, sizes, strict=True):
        if isinstance(start, Tracer):
            if start.dtype.kind not in "iu":
                raise SpmdTypeError(
                    f"lax.dynamic_slice: start indices must be integers; got a traced "
                    f"{start.aval}. Convert it with .astype(int)."
                )
            start = start.astype(np.int64)  # start + n must not wrap in a narrow dtype
            if negative:
                start = where(start < 0, start + n, start)
            clamped.append(clip(start, 0, n - size))
        else:
            start = int(np.asarray(start))
            if negative and start < 0:
                start += n
            clamped.append(int(min(max(start, 0), n - size)))
    return clamped


def _grid(indices: list) -> tuple:
    """Index arrays that pick the outer product of ``indices`` (as ``np.ix_`` does)."""
    return tuple(i.reshape(_along(d, len(indices))) for d, i in enumerate(indices))


def _along(d: int, ndim: int) -> tuple[int, ...]:
    return tuple(-1 if k == d else 1 for k in range(ndim))


def _axis(name: str, axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise ShapeError(f"lax.{name}: axis={axis} is out of range for {ndim} dimensions.")
    return axis % ndim


__all__ = [
    "dynamic_index_in_dim",
    "dynamic_slice",
    "dynamic_slice_in_dim",
    "dynamic_update_index_in_dim",
    "dynamic_update_slice",
    "dynamic_update_slice_in_dim",
]
