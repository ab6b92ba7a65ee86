"""``lax.dynamic_slice`` and kin: a block of fixed size at a start that may be traced.

As in JAX, each start is clamped so that the block lies inside the operand. Starts known
when the function is traced give plain slices (which shard); traced starts gather the block
with index arrays, and an update lands through a mask.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from spmd.core.trace import Tracer, aval_of
from spmd.errors import ShapeError
from spmd.numpy import arange, asarray, clip, logical_and, where


def dynamic_slice(operand: Any, start_indices: Sequence[Any], slice_sizes: Sequence[int]):
    """``operand[s0:s0+n0, s1:s1+n1, ...]`` with each start clamped to keep the block inside.

    Example: ``dynamic_slice(x, (i, 0), (2, x.shape[1]))`` takes rows i and i+1."""
    shape = _check("dynamic_slice", operand, start_indices, slice_sizes)
    blocks = list(zip(_clamped(start_indices, shape, slice_sizes), slice_sizes, strict=True))
    if all(isinstance(s, int) for s, _ in blocks):
        return operand[tuple(slice(s, s + n) for s, n in blocks)]
    return asarray(operand)[_grid([s + arange(n) for s, n in blocks])]


def dynamic_update_slice(operand: Any, update: Any, start_indices: Sequence[Any]):
    """``operand`` with the block at ``start_indices`` (clamped) replaced by ``update``."""
    sizes = aval_of(update).shape
    shape = _check("dynamic_update_slice", operand, start_indices, sizes)
    blocks = list(zip(_clamped(start_indices, shape, sizes), sizes, strict=True))
    operand, update = asarray(operand), asarray(update).astype(aval_of(operand).dtype)
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


def dynamic_slice_in_dim(operand: Any, start_index: Any, slice_size: int, axis: int = 0):
    """``dynamic_slice`` along one axis, whole along the others."""
    shape = aval_of(operand).shape
    axis = _axis("dynamic_slice_in_dim", axis, len(shape))
    starts = [start_index if d == axis else 0 for d in range(len(shape))]
    sizes = [slice_size if d == axis else n for d, n in enumerate(shape)]
    return dynamic_slice(operand, starts, sizes)


def dynamic_update_slice_in_dim(operand: Any, update: Any, start_index: Any, axis: int):
    """``dynamic_update_slice`` with the start given along one axis (0 along the others)."""
    ndim = aval_of(operand).ndim
    axis = _axis("dynamic_update_slice_in_dim", axis, ndim)
    starts = [start_index if d == axis else 0 for d in range(ndim)]
    return dynamic_update_slice(operand, update, starts)


def dynamic_index_in_dim(operand: Any, index: Any, axis: int = 0, keepdims: bool = True):
    """The slice at ``index`` along ``axis`` (that axis kept, of size 1, unless keepdims)."""
    block = dynamic_slice_in_dim(operand, index, 1, axis)
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


def _clamped(starts: Sequence[Any], shape: tuple, sizes: Sequence[int]) -> list:
    """Each start clamped into [0, n - size]: an int when it is known, else traced."""
    clamped = []
    for start, n, size in zip(starts, shape, sizes, strict=True):
        if isinstance(start, Tracer):
            clamped.append(clip(start, 0, n - size))
        else:
            clamped.append(int(min(max(int(np.asarray(start)), 0), n - size)))
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
