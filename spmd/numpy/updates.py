"""``x.at[index].set(v)`` and its kin: a new array with the indexed elements updated, as JAX's
``.at`` property gives (spmd Arrays, like JAX's, never change in place).

The index is known when the function is traced, so where each update lands is worked out
on the host: per round of distinct positions (an index that names a position twice makes
one round per repeat, applied in order, as NumPy's ``ufunc.at`` does), the updates are
gathered into an array of ``x``'s shape and merged with a ``where``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from spmd.core.methods import ArrayMethods
from spmd.core.trace import aval_of
from spmd.errors import SpmdTypeError
from spmd.numpy.creation import asarray
from spmd.numpy.elementwise import add, maximum, minimum, multiply, where
from spmd.numpy.shape import broadcast_to, concatenate, reshape
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
        positions = _positions(shape, self.index, name)
        flat = positions.ravel()
        values = reshape(broadcast_to(asarray(values).astype(dtype), positions.shape), (-1,))
        for chosen in _rounds(flat):
            x = _apply(x, values, flat[chosen], chosen, combine, dtype)
        return x


def _positions(shape: tuple[int, ...], index: Any, name: str) -> np.ndarray:
    """The flat position in ``x`` of each element ``x[index]`` names."""
    parts = index if isinstance(index, tuple) else (index,)
    if any(isinstance(p, ArrayMethods) for p in parts):
        raise SpmdTypeError(
            f"x.at[...].{name}: the index holds a traced or spmd array; .at needs indices "
            f"known when the function is traced (ints, slices, NumPy arrays). For a traced "
            f"index use spmd.numpy.where with a mask, or x[index] to read."
        )
    try:
        return np.arange(int(np.prod(shape)), dtype=np.intp).reshape(shape)[index]
    except IndexError as error:
        raise SpmdIndexError(f"x.at[...].{name}: {error} (x has shape {shape}).") from None


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
