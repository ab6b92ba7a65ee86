"""The Array API standard's manipulation functions and NumPy's remaining axis shuffles, as
compositions of spmd.numpy's shape functions: ``concat``, ``permute_dims``, ``flip``,
``unstack``, ``broadcast_arrays``, ``matrix_transpose``, ``meshgrid``, ``tril``/``triu``,
``rot90``, ``array_split`` and ``take_along_axis``.

Each is exact (a reindexing of its input), so its derivatives, batching and sharding are those of
the reshape, transpose, slice, concatenate, where and gather it is made of.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from spmd.core.axes import as_int, as_ints, normalize_axes, normalize_axis
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError, SpmdValueError
from spmd.numpy.creation import asarray
from spmd.numpy.indexing import _getitem
from spmd.numpy.shaping import (
    broadcast_to,
    concatenate,
    moveaxis,
    reshape,
    split,
    swapaxes,
    transpose,
)


def concat(arrays: Sequence[Any], /, *, axis: int | None = 0) -> Any:
    """The Array API's ``concat``: ``concatenate`` (axis None joins the flattened arrays)."""
    return concatenate(arrays, axis=axis)


def permute_dims(x: Any, /, axes: Sequence[int]) -> Any:
    """The Array API's ``permute_dims``: ``transpose`` with the axes required."""
    return transpose(x, axes)


def matrix_transpose(x: Any, /) -> Any:
    """The transpose of each matrix in a stack: the last two axes swapped."""
    aval = aval_of(x)
    if aval.ndim < 2:
        raise ShapeError(
            f"spmd.numpy.matrix_transpose: x is {aval}, but a stack of matrices has at least "
            f"2 dimensions; use reshape(x, (1, -1)) for a row vector."
        )
    return swapaxes(x, -1, -2)


def flip(m: Any, axis: int | Sequence[int] | None = None) -> Any:
    """``numpy.flip``: the elements in reverse order along ``axis`` (None: every axis)."""
    m = asarray(m)
    aval = aval_of(m)
    if axis is None:
        axes = range(aval.ndim)
    else:
        axes = normalize_axes(axis, aval.ndim, "spmd.numpy.flip", str(aval))
    if not axes:
        return m
    return _getitem(
        m, tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(aval.ndim))
    )


def unstack(x: Any, /, *, axis: int = 0) -> tuple[Any, ...]:
    """The Array API's ``unstack``: the slices of ``x`` along ``axis``, as a tuple."""
    aval = aval_of(x)
    if aval.ndim == 0:
        raise ShapeError(
            "spmd.numpy.unstack: x is 0-d and has no axis to unstack along; pass an array "
            "with at least one dimension."
        )
    axis = normalize_axis(axis, aval.ndim, "spmd.numpy.unstack", str(aval))
    moved = moveaxis(x, axis, 0)
    return tuple(moved[i] for i in range(aval.shape[axis]))


def broadcast_arrays(*args: Any) -> list[Any]:
    """``numpy.broadcast_arrays``: every argument broadcast to their common shape."""
    arrays = [asarray(a) for a in args]
    shapes = [aval_of(a).shape for a in arrays]
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError:
        raise ShapeError(
            f"spmd.numpy.broadcast_arrays: the shapes {shapes} do not broadcast together; "
            f"each axis must match or be 1 (counting from the last)."
        ) from None
    return [broadcast_to(a, shape) for a in arrays]


def meshgrid(*xi: Any, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> list:
    """``numpy.meshgrid``: coordinate arrays from 1-D coordinate vectors ("xy": Cartesian,
    the first two axes swapped; "ij": matrix indexing)."""
    if indexing not in ("xy", "ij"):
        raise SpmdValueError(
            f"spmd.numpy.meshgrid: indexing={indexing!r}; pass 'xy' (Cartesian) or 'ij' "
            f"(matrix indexing)."
        )
    vectors = [reshape(asarray(x), (-1,)) for x in xi]
    n = len(vectors)
    sizes = [aval_of(v).shape[0] for v in vectors]
    if indexing == "xy" and n > 1:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    grids = []
    for i, v in enumerate(vectors):
        place = 1 - i if indexing == "xy" and n > 1 and i < 2 else i
        shaped = reshape(v, tuple(-1 if d == place else 1 for d in range(n)))
        grids.append(shaped if sparse else broadcast_to(shaped, tuple(sizes)))
    return grids


def _triangle(name: str, m: Any, k: Any, lower: bool) -> Any:
    from spmd.numpy.elementwise import where  # type: ignore[attr-defined]

    m = asarray(m)
    aval = aval_of(m)
    if aval.ndim == 0:
        raise ShapeError(
            f"spmd.numpy.{name}: m is 0-d, but {name} needs a matrix, a stack of them, or a "
            f"vector (which NumPy takes as every row of a square matrix)."
        )
    k = as_int(k, f"spmd.numpy.{name}", "k")
    rows, cols = aval.shape[-2:] if aval.ndim > 1 else aval.shape * 2
    offsets = np.arange(cols)[None, :] - np.arange(rows)[:, None]
    keep = offsets <= k if lower else offsets >= k
    return where(keep, m, np.zeros((), aval.dtype))


def tril(m: Any, /, k: int = 0) -> Any:
    """``numpy.tril``: zero above the ``k``-th diagonal of each matrix (last two axes)."""
    return _triangle("tril", m, k, lower=True)


def triu(m: Any, /, k: int = 0) -> Any:
    """``numpy.triu``: zero below the ``k``-th diagonal of each matrix (last two axes)."""
    return _triangle("triu", m, k, lower=False)


def rot90(m: Any, k: int = 1, axes: Sequence[int] = (0, 1)) -> Any:
    """``numpy.rot90``: rotate by 90 degrees ``k`` times, from ``axes[0]`` towards ``axes[1]``."""
    m = asarray(m)
    aval = aval_of(m)
    axes = tuple(as_ints(axes, "spmd.numpy.rot90", "axes"))
    if len(axes) != 2:
        raise ShapeError(f"spmd.numpy.rot90: axes={axes} must name exactly 2 axes.")
    first, second = (normalize_axis(a, aval.ndim, "spmd.numpy.rot90", str(aval)) for a in axes)
    if first == second:
        raise ShapeError(
            f"spmd.numpy.rot90: axes={axes} name one axis twice; pass 2 different axes."
        )
    k = as_int(k, "spmd.numpy.rot90", "k") % 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, first), second)
    if k == 1:
        return swapaxes(flip(m, second), first, second)
    return flip(swapaxes(m, first, second), second)


def array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Any]:
    """``numpy.array_split``: ``split``, where a number of sections need not divide the axis
    (the first ``size % n`` pieces get one element more)."""
    aval = aval_of(ary)
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise SpmdValueError(
                f"spmd.numpy.array_split: indices_or_sections={sections} must be > 0 sections."
            )
        if aval.ndim == 0:
            raise ShapeError("spmd.numpy.array_split: ary is 0-d and has no axis to split along.")
        size = aval.shape[normalize_axis(axis, aval.ndim, "spmd.numpy.array_split", str(aval))]
        base, extra = divmod(size, sections)
        lengths = [base + 1] * extra + [base] * (sections - extra)
        indices_or_sections = list(np.cumsum(lengths)[:-1])
    return split(ary, indices_or_sections, axis=axis)


def take_along_axis(arr: Any, indices: Any, axis: int | None, mode: Any = None) -> Any:
    """``numpy.take_along_axis``: ``arr`` gathered along ``axis`` by ``indices`` (same rank;
    the other axes broadcast); axis None: of the flattened ``arr``. Negative indices count from
    the end, as in NumPy."""
    arr, indices = asarray(arr), asarray(indices)
    if axis is None:
        arr, axis = reshape(arr, (-1,)), 0
    aval, index_aval = aval_of(arr), aval_of(indices)
    if index_aval.dtype.kind not in "iu":
        raise SpmdTypeError(
            f"spmd.numpy.take_along_axis: indices are {index_aval.dtype}; they must be integers."
        )
    if aval.ndim != index_aval.ndim:
        raise ShapeError(
            f"spmd.numpy.take_along_axis: indices have {index_aval.ndim} dimensions and arr "
            f"{aval.ndim}; they must have the same number (use expand_dims on indices)."
        )
    axis = normalize_axis(axis, aval.ndim, "spmd.numpy.take_along_axis", str(aval))
    shape = np.broadcast_shapes(
        tuple(1 if i == axis else n for i, n in enumerate(aval.shape)),
        tuple(1 if i == axis else n for i, n in enumerate(index_aval.shape)),
    )
    index_shape = tuple(index_aval.shape[i] if i == axis else n for i, n in enumerate(shape))
    indices = broadcast_to(indices, index_shape)
    arr = broadcast_to(arr, tuple(aval.shape[i] if i == axis else n for i, n in enumerate(shape)))
    ranges = tuple(
        indices
        if i == axis
        else np.arange(n).reshape([n if j == i else 1 for j in range(aval.ndim)])
        for i, n in enumerate(shape)
    )
    return _getitem(arr, ranges)


__all__ = [
    "array_split",
    "broadcast_arrays",
    "concat",
    "flip",
    "matrix_transpose",
    "meshgrid",
    "permute_dims",
    "rot90",
    "take_along_axis",
    "tril",
    "triu",
    "unstack",
]
