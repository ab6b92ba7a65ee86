"""Index plans: the static entries of an indexing primitive, and indexing by a plan on any
array namespace.

A plan has one entry per entry of a normalized NumPy index: a non-negative ``int``, a
``Slice`` (bounds resolved against the axis size), ``None`` (a new axis), ``IndexArray(k)``
(the k-th index-array operand), or ``Ellipsis`` standing for no axes (it still separates two
advanced indices, as in NumPy).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from spmd.prims import namespace as ns


@dataclass(frozen=True)
class Slice:
    """A slice with bounds already resolved for its axis (``stop`` None: run past index 0)."""

    start: int
    stop: int | None
    step: int

    @classmethod
    def resolve(cls, s: slice, size: int) -> Slice:
        start, stop, step = s.indices(size)
        if not range(start, stop, step):
            return cls(0, 0, 1)  # empty (a start of -1 would otherwise read as the last index)
        return cls(start, None if stop < 0 else stop, step)

    def __len__(self) -> int:
        return len(range(self.start, -1 if self.stop is None else self.stop, self.step))

    def to_slice(self) -> slice:
        return slice(self.start, self.stop, self.step)

    def __repr__(self) -> str:
        return f"{self.start}:{'' if self.stop is None else self.stop}:{self.step}"


@dataclass(frozen=True)
class IndexArray:
    """Stands for the ``position``-th index-array operand (after the indexed array)."""

    position: int

    def __repr__(self) -> str:
        return f"#{self.position}"


Entry = int | Slice | IndexArray | None | type(Ellipsis)


def _positive_step(xp, x, axis: int, entry: Slice):
    """``x`` and a slice with a positive step that reads what ``entry`` reads along ``axis``
    (a negative step reads the flipped axis forwards: not every namespace slices backwards)."""
    n = x.shape[axis]
    if entry.step > 0:
        return x, _in_bounds(entry.to_slice(), n)
    stop = n if entry.stop is None else n - 1 - entry.stop
    return xp.flip(x, axis=axis), _in_bounds(slice(n - 1 - entry.start, stop, -entry.step), n)


def _in_bounds(s: slice, n: int) -> slice:
    """``s`` (a positive step) with its bounds inside an axis of ``n`` (the standard leaves
    out-of-range bounds unspecified; a block's slice may reach past its end)."""
    start, stop, step = s.indices(n)
    if n == 0:
        return slice(None)
    if start >= stop:
        return slice(0, 0, 1)
    return slice(start, None if stop >= n else stop, step)


def _wrapped(xp, i, size: int, device):
    """Index array ``i`` with negative entries wrapped and the rest clipped into the axis (as
    JAX under jit; the wrappers have rejected the out-of-range values they could see)."""
    i = xp.astype(ns.asarray(xp, i, device=device), xp.int64)
    return xp.clip(xp.where(i < 0, i + size, i), 0, max(size - 1, 0))


def take_index(xp, x, indices, index: tuple):
    """``x[index]`` as NumPy computes it, with the standard's operations only: slices first,
    then the advanced entries (index arrays, and integers among them) as one ``take`` over
    their axes flattened together, the result's dimensions in NumPy's order."""
    advanced = any(isinstance(e, IndexArray) for e in index)
    key, axis = [], 0
    for entry in index:
        if entry is None or entry is Ellipsis:
            if not advanced:
                key.append(entry)
            continue
        if isinstance(entry, Slice):
            x, s = _positive_step(xp, x, axis, entry)
            key.append(s)
        else:
            key.append(slice(None) if advanced else entry)
        axis += 1
    x = x[tuple(key)]
    if not advanced:
        return x
    arrays, axes, basic, positions = [], [], [], []
    axis = 0
    for position, entry in enumerate(index):
        if entry is None:
            basic.append(1)
            continue
        if entry is Ellipsis:
            continue
        if isinstance(entry, Slice):
            basic.append(x.shape[axis])
        else:
            size = x.shape[axis]
            i = indices[entry.position] if isinstance(entry, IndexArray) else entry
            arrays.append(_wrapped(xp, i, size, ns.device_of(x)))
            axes.append(axis)
            positions.append(position)
        axis += 1
    arrays = xp.broadcast_arrays(*arrays)
    middle = tuple(arrays[0].shape)
    flat, stride = None, 1
    for i, a in zip(reversed(arrays), reversed(axes), strict=True):
        term = i * stride
        flat = term if flat is None else flat + term
        stride *= x.shape[a]
    rest = [a for a in range(x.ndim) if a not in axes]
    moved = xp.permute_dims(x, (*axes, *rest))
    moved = xp.reshape(moved, (math.prod(x.shape[a] for a in axes), *(x.shape[a] for a in rest)))
    out = xp.take(moved, xp.reshape(flat, (-1,)), axis=0)
    out = xp.reshape(out, (*middle, *basic))
    if positions != list(range(positions[0], positions[-1] + 1)):
        return out  # separated: the advanced dimensions come first
    before = sum(1 for p, e in enumerate(index) if p < positions[0]
                 and (e is None or isinstance(e, Slice)))  # fmt: skip
    if not before:
        return out
    m = len(middle)
    order = (*range(m, m + before), *range(m), *range(m + before, out.ndim))
    return xp.permute_dims(out, order)
