"""``x.at[index].set(v)`` and its kin: a new array with the indexed elements updated, as JAX's
``.at`` property gives (spmd Arrays, like JAX's, never change in place).

The index is known when the function is traced, so where each update lands is worked out
on the host: per round of distinct positions (an index that names a position twice makes
one round per repeat, applied in order, as NumPy's ``ufunc.at`` does), the updates are
gathered into an array of ``x``'s shape and merged with a ``where``.

An index that holds traced or spmd integer scalars (``x.at[i, :]`` with ``i`` traced) is
known only when the program runs, so it becomes a boolean mask instead: ``arange(n) == i``
along each indexed axis. Out-of-bounds traced indices update nothing, as JAX's scatter does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from spmd.core.methods import ArrayMethods
from spmd.core.trace import aval_of
from spmd.errors import SpmdTypeError
from spmd.numpy.creation import arange, asarray
from spmd.numpy.elementwise import add, logical_and, maximum, minimum, multiply, where
from spmd.numpy.shaping import broadcast_to, concatenate, reshape
from spmd.prims.indexing import SpmdIndexError


class IndexUpdates:
    """``x.at``: index it to say which elements to update."""

    def __init__(self, x: Any) -> None:
        self.x = x

    def __getitem__(self, index: Any) -> IndexedUpdate:
        return IndexedUpdate(self.x, index)


class IndexedUpdate:
    """``x.at[index]``: ``get()``, or a new array by ``set``, ``add``, ``multiply``,
    ``min``, ``max`` with ``values`` (broadcast to ``x[index]``'s shape, cast to x's dtype)."""

    def __init__(self, x: Any, index: Any) -> None:
        self.x, self.index = x, index

    def get(self):
        return self.x[self.index]

    def set(self, values: Any):
        return self._update(values, None, "set")

    def add(self, values: Any):
        return self._update(values, add, "add")

    def multiply(self, values: Any):
        return self._update(values, multiply, "multiply")

    def min(self, values: Any):
        return self._update(values, minimum, "min")

    def max(self, values: Any):
        return self._update(values, maximum, "max")

    def _update(self, values: Any, combine: Callable | None, name: str):
        x = asarray(self.x)
        shape, dtype = aval_of(x).shape, aval_of(x).dtype
        parts = self.index if isinstance(self.index, tuple) else (self.index,)
        if any(isinstance(p, ArrayMethods) for p in parts):
            return _masked_update(x, _scalar_index(aval_of(x), parts, name), values, combine)
        positions = _positions(shape, self.index, name)
        flat = positions.ravel()
        values = reshape(broadcast_to(asarray(values).astype(dtype), positions.shape), (-1,))
        for chosen in _rounds(flat):
            x = _apply(x, values, flat[chosen], chosen, combine, dtype)
        return x


def _positions(shape: tuple[int, ...], index: Any, name: str) -> np.ndarray:
    """The flat position in ``x`` of each element ``x[index]`` names."""
    try:
        return np.arange(int(np.prod(shape)), dtype=np.intp).reshape(shape)[index]
    except IndexError as error:
        raise SpmdIndexError(f"x.at[...].{name}: {error} (x has shape {shape}).") from None


def _scalar_index(aval: Any, parts: tuple, name: str) -> list:
    """An index that holds traced or spmd values, checked and padded to one entry per axis
    of ``x`` (``aval``): each entry is an integer scalar (static, or a 0-d traced/spmd
    integer) or ``:``."""
    shape = aval.shape
    if len(parts) > len(shape):
        raise SpmdIndexError(
            f"x.at[...].{name}: too many indices: x is {aval} ({len(shape)} dimensions) but "
            f"the index has {len(parts)} entries. Fix: give at most one entry per dimension."
        )
    for axis, part in enumerate(parts):
        if _is_int_scalar(part) or (isinstance(part, slice) and part == slice(None)):
            continue
        traced = isinstance(part, ArrayMethods)
        what = f"a traced or spmd {aval_of(part)}" if traced else repr(part)
        raise SpmdTypeError(
            f"x.at[...].{name}: an index that holds traced or spmd values may contain only "
            f"integer scalars and full slices (:), but index entry {axis} is {what}.\n"
            f"  x: {aval}\n"
            f"Fix: index with scalars and ':' only (e.g. x.at[i, :]), make the index static "
            f"(ints, slices, NumPy arrays), or build a mask and use spmd.numpy.where."
        )
    index = list(parts) + [slice(None)] * (len(shape) - len(parts))
    for axis, part in enumerate(index):
        if isinstance(part, (int, np.integer)) and not -shape[axis] <= part < shape[axis]:
            raise SpmdIndexError(
                f"x.at[...].{name}: index {part} is out of bounds for axis {axis} with size "
                f"{shape[axis]} (x is {aval}); valid indices are {-shape[axis]} to "
                f"{shape[axis] - 1}."
            )
    return index


def _is_int_scalar(part: Any) -> bool:
    if isinstance(part, (bool, np.bool_)):
        return False
    if isinstance(part, ArrayMethods):
        aval = aval_of(part)
        return aval.ndim == 0 and aval.dtype.kind in "iu"
    return isinstance(part, (int, np.integer))


def _masked_update(x, index: list, values: Any, combine: Callable | None):
    """``x`` with ``values`` combined in where ``index`` (integer scalars and ``:``) points;
    the positions are compared at run time, so an out-of-bounds index updates nothing."""
    shape, dtype = aval_of(x).shape, aval_of(x).dtype
    mask = None  # at least one entry is an integer (a traced one)
    for axis, (n, part) in enumerate(zip(shape, index, strict=True)):
        if isinstance(part, slice):
            continue
        position = where(part < 0, part + n, part)
        along = (1,) * axis + (n,) + (1,) * (len(shape) - axis - 1)
        hit = reshape(arange(n) == position, along)
        mask = hit if mask is None else logical_and(mask, hit)
    kept = tuple(n for n, part in zip(shape, index, strict=True) if isinstance(part, slice))
    spread = tuple(
        n if isinstance(part, slice) else 1 for n, part in zip(shape, index, strict=True)
    )
    values = broadcast_to(asarray(values).astype(dtype), kept)
    values = broadcast_to(reshape(values, spread), shape)
    merged = values if combine is None else combine(x, values).astype(dtype)
    return where(broadcast_to(mask, shape), merged, x)


def _rounds(flat: np.ndarray) -> list[np.ndarray]:
    """Indices into ``flat`` grouped so that no round names a position twice: the k-th
    time a position is named goes in round k."""
    if len(np.unique(flat)) == len(flat):
        return [np.arange(len(flat))]
    order = np.argsort(flat, kind="stable")
    first = np.searchsorted(flat[order], flat[order], side="left")
    occurrence = np.empty(len(flat), dtype=np.intp)
    occurrence[order] = np.arange(len(flat)) - first
    return [np.flatnonzero(occurrence == k) for k in range(occurrence.max() + 1)]


def _apply(x, values, positions: np.ndarray, chosen: np.ndarray, combine, dtype):
    """``x`` with ``values[chosen]`` combined into its flat ``positions`` (all distinct)."""
    shape = aval_of(x).shape
    size = int(np.prod(shape))
    source = np.full(size, len(chosen), dtype=np.intp)  # points past the end: no update
    source[positions] = np.arange(len(chosen))
    picked = values[chosen] if len(chosen) != aval_of(values).shape[0] else values
    padded = concatenate([picked, asarray(np.zeros(1, dtype))])
    spread = reshape(padded[source], shape)
    mask = (source < len(chosen)).reshape(shape)
    merged = spread if combine is None else combine(x, spread).astype(dtype)
    return where(mask, merged, x)


__all__: list[str] = []  # reached as x.at, not by name
