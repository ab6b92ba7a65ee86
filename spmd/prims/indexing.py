"""The indexing primitive: NumPy basic and integer-array indexing with a static index plan.

The ``index`` parameter has one entry per entry of a normalized NumPy index (Ellipsis
expanded, trailing full slices added): a non-negative ``int``, a ``Slice`` (bounds resolved
against the axis size), ``None`` (a new axis), ``IndexArray(k)`` (the k-th index-array
operand), or ``Ellipsis`` where an ellipsis stood for no axes at all: NumPy still counts it
as separating two advanced indices. Index arrays are operands (traced or constant);
everything else is static.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spmd.core.aval import ShapedArray
from spmd.core.primitive import Primitive, Rules
from spmd.errors import ShapeError, SpmdError, SpmdTypeError, shape_str
from spmd.sharding.rules import Factors


class SpmdIndexError(SpmdError, IndexError):
    """An index is out of range for its axis, or indexes more axes than the array has."""


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


def out_of_range(axis: int, index: int, size: int) -> SpmdIndexError:
    return SpmdIndexError(
        f"spmd.numpy indexing: index {index} is out of bounds for axis {axis} with size {size}; "
        f"valid indices are {-size} to {size - 1}."
        if size
        else f"spmd.numpy indexing: index {index} is out of bounds for axis {axis} with size 0; "
        f"an empty axis has no elements to index."
    )


def _advanced_shape(entries: tuple[Entry, ...], index_avals: tuple[ShapedArray, ...]):
    shapes = [index_avals[e.position].shape if isinstance(e, IndexArray) else () for e in entries]
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        arrays = ", ".join(shape_str(s) for s in shapes)
        raise ShapeError(
            f"spmd.numpy indexing: the index arrays (and integers among them) could not be "
            f"broadcast together; their shapes are {arrays}. Reshape them so that each "
            f"dimension matches or is 1."
        ) from None


def _getitem_shape(x: ShapedArray, *index_avals: ShapedArray, index: tuple) -> ShapedArray:
    axis, basic, advanced = 0, [], []  # basic: (entry position, dims); advanced: positions
    for position, entry in enumerate(index):
        if entry is None or entry is Ellipsis:
            basic.append((position, (1,) if entry is None else ()))
            continue
        if axis >= x.ndim:
            raise SpmdIndexError(f"spmd.numpy indexing: too many indices for {x}.")
        size = x.shape[axis]
        if isinstance(entry, Slice):
            basic.append((position, (len(entry),)))
        elif isinstance(entry, IndexArray):
            aval = index_avals[entry.position]
            if aval.dtype.kind not in "iu":
                raise SpmdTypeError(
                    f"spmd.numpy indexing: index arrays must hold integers; the one for axis "
                    f"{axis} is {aval}."
                )
            if size == 0 and aval.size:
                raise out_of_range(axis, 0, 0)
            advanced.append(position)
        elif not 0 <= entry < size:
            raise out_of_range(axis, entry, size)
        axis += 1
    if axis != x.ndim:
        raise SpmdIndexError(f"spmd.numpy indexing: index plan {index} does not cover {x}.")
    if not any(isinstance(e, IndexArray) for e in index):
        return ShapedArray(tuple(d for _, dims in basic for d in dims), x.dtype)
    advanced += [p for p, e in enumerate(index) if isinstance(e, int)]
    advanced.sort()
    middle = _advanced_shape(tuple(index[p] for p in advanced), index_avals)
    if advanced == list(range(advanced[0], advanced[-1] + 1)):  # adjacent: stays in place
        before = [d for p, dims in basic if p < advanced[0] for d in dims]
        after = [d for p, dims in basic if p > advanced[-1] for d in dims]
        return ShapedArray((*before, *middle, *after), x.dtype)
    return ShapedArray((*middle, *(d for _, dims in basic for d in dims)), x.dtype)


def _getitem_impl(xp, x, *indices, index: tuple):
    """Index arrays wrap negative entries and clip the rest into range (as JAX does under
    jit); the wrappers have already rejected out-of-range values they could see."""
    x = xp.asarray(x)
    key, axis = [], 0
    for entry in index:
        if isinstance(entry, IndexArray):
            size = x.shape[axis]
            i = xp.asarray(indices[entry.position])
            i = xp.clip(xp.where(i < 0, i + size, i), 0, max(size - 1, 0))
            key.append(i)
        else:
            key.append(entry.to_slice() if isinstance(entry, Slice) else entry)
        axis += entry is not None and entry is not Ellipsis
    return x[tuple(key)]


def _getitem_sharding(ins, outs, *, index: tuple) -> Factors:
    """Dimensions taken whole (``:``) pass through; indexed ones are blocked, and so is every
    dimension when index arrays move dimensions around."""
    x, *index_avals = ins
    sizes = {f"d{i}": n for i, n in enumerate(x.shape)}
    sizes |= {f"out{i}": n for i, n in enumerate(outs[0].shape)}
    if any(isinstance(e, IndexArray) for e in index):
        operands = [tuple((f"d{i}",) for i in range(x.ndim))]
        operands += [
            tuple((f"#{k}_{i}",) for i in range(a.ndim)) for k, a in enumerate(index_avals)
        ]
        sizes |= {f"#{k}_{i}": n for k, a in enumerate(index_avals) for i, n in enumerate(a.shape)}
        results = (tuple((f"out{i}",) for i in range(outs[0].ndim)),)
        return Factors(tuple(operands), results, sizes, blocked=frozenset(sizes))
    out, axis = [], 0
    for entry in index:
        if entry is None:
            out.append(())
        elif isinstance(entry, Slice):
            whole = (entry.start, entry.stop, entry.step) == (0, x.shape[axis], 1)
            out.append((f"d{axis}",) if whole else (f"out{len(out)}",))
        if entry is not None and entry is not Ellipsis:
            axis += 1
    blocked = {f for f in sizes if f not in {d[0] for d in out if d}} | {
        f for f in sizes if f.startswith("out")
    }
    return Factors(
        (tuple((f"d{i}",) for i in range(x.ndim)),),
        (tuple(out),),
        sizes,
        blocked=frozenset(blocked),
    )


getitem_p = Primitive(
    "getitem", Rules(shape=_getitem_shape, impl=_getitem_impl, sharding=_getitem_sharding)
)
