"""Indexing of spmd.numpy: ``x[index]`` (basic and integer-array indexing) and ``take``.

Static parts of an index (integers, slices, None, Ellipsis) become the ``index`` parameter
of the getitem primitive; index arrays become operands. Concrete index arrays (NumPy arrays,
lists, spmd Arrays) are range-checked here; traced ones cannot be, and under jit their
out-of-range entries are clipped into range, as JAX does.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from spmd.core.trace import Tracer, aval_of
from spmd.errors import ShapeError, SpmdTypeError, SpmdValueError, shape_str
from spmd.prims.indexing import IndexArray, Slice, SpmdIndexError, getitem_p, out_of_range
from spmd.runtime.array import Array

_VALID = "integers, slices (:), None, Ellipsis (...) and integer arrays are valid indices"


class _Mask:
    """A concrete boolean index: NumPy replaces it by its ``nonzero()`` integer arrays."""

    def __init__(self, value: np.ndarray) -> None:
        self.value = value


class _ScalarBool:
    """A 0-d boolean index: NumPy adds an axis of length 1 (True) or 0 (False) there."""

    def __init__(self, flag: bool) -> None:
        self.flag = flag


def _static_int(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, Tracer):
        raise SpmdTypeError(
            f"spmd.numpy indexing: slice {what}s must be static integers, but got a traced "
            f"value {value.aval}. Use an index array (e.g. x[spmd.numpy.arange(...) + i]) for "
            f"positions known only when the program runs."
        )
    try:
        return operator.index(value)
    except TypeError:
        raise SpmdTypeError(
            f"spmd.numpy indexing: slice {what} {value!r} is not an integer."
        ) from None


def _classify(entry: Any) -> Any:
    """One index entry as None, Ellipsis, int, slice, a tracer, an int array, or a _Mask."""
    if entry is None or entry is Ellipsis:
        return entry
    if isinstance(entry, slice):
        parts = (entry.start, "start"), (entry.stop, "stop"), (entry.step, "step")
        return slice(*(_static_int(value, what) for value, what in parts))
    if isinstance(entry, (bool, np.bool_)):
        return _ScalarBool(bool(entry))
    if isinstance(entry, Tracer):
        if entry.dtype == np.bool_:
            raise SpmdTypeError(
                f"spmd.numpy indexing: a traced boolean mask {entry.aval} selects a number of "
                f"elements known only when the program runs, so the result has no static shape. "
                f"Use spmd.numpy.where(mask, x, fill) to keep the shape, or index with a "
                f"concrete NumPy mask."
            )
        if entry.dtype.kind not in "iu":
            raise SpmdTypeError(f"spmd.numpy indexing: {_VALID}; got a traced {entry.aval}.")
        return entry
    if isinstance(entry, (int, np.integer)):
        return int(entry)
    if isinstance(entry, (Array, np.ndarray, list, tuple)):
        value = np.asarray(entry)
        if isinstance(entry, (list, tuple)) and value.size == 0:
            value = value.astype(np.intp)
        if value.dtype == np.bool_:
            return _Mask(value) if value.ndim else _ScalarBool(bool(value))
        if value.dtype.kind not in "iu":
            raise SpmdTypeError(f"spmd.numpy indexing: {_VALID}; got an array of {value.dtype}.")
        return value
    try:
        return operator.index(entry)
    except TypeError:
        raise SpmdTypeError(
            f"spmd.numpy indexing: {_VALID}; got {type(entry).__name__} {entry!r}."
        ) from None


def _consumes(entry: Any) -> int:
    if entry is None or entry is Ellipsis or isinstance(entry, _ScalarBool):
        return 0
    return entry.value.ndim if isinstance(entry, _Mask) else 1


def _expand(entries: list, shape: tuple[int, ...]) -> list:
    """Ellipsis expanded and trailing full slices added, so every axis has an entry. An
    ellipsis that stands for no axes stays: it still separates advanced indices in NumPy."""
    if sum(e is Ellipsis for e in entries) > 1:
        raise SpmdIndexError("spmd.numpy indexing: an index can only have a single ellipsis (...).")
    used = sum(map(_consumes, entries))
    if used > len(shape):
        raise SpmdIndexError(
            f"spmd.numpy indexing: too many indices: the array has shape {shape_str(shape)} "
            f"({len(shape)} dimensions) but {used} were indexed."
        )
    fill = [slice(None)] * (len(shape) - used)
    for at, entry in enumerate(entries):
        if entry is Ellipsis:
            return entries[:at] + (fill or [Ellipsis]) + entries[at + 1 :]
    return entries + fill


def _unmask(entries: list, shape: tuple[int, ...]) -> list:
    """Replace each boolean mask by its nonzero() arrays, after checking its shape."""
    result, axis = [], 0
    for entry in entries:
        if isinstance(entry, _Mask):
            covered = shape[axis : axis + entry.value.ndim]
            for k, (size, mask_size) in enumerate(zip(covered, entry.value.shape, strict=True)):
                if size != mask_size:
                    raise SpmdIndexError(
                        f"spmd.numpy indexing: boolean index did not match the indexed array "
                        f"along axis {axis + k}: the axis has size {size} but the mask has "
                        f"size {mask_size} there."
                    )
            result += list(np.nonzero(entry.value))
        else:
            result.append(entry)
        axis += _consumes(entry)
    return result


def _checked(value: np.ndarray, axis: int, size: int) -> np.ndarray:
    """A concrete index array range-checked for its axis, negative entries wrapped."""
    if value.size:
        low, high = int(value.min()), int(value.max())
        if low < -size or high >= size:
            raise out_of_range(axis, low if low < -size else high, size)
    return np.where(value < 0, value + size, value).astype(np.intp)


def _scalar_bools(x: Any, entries: list) -> tuple[Any, list]:
    """``x`` with an axis of length 1 where each 0-d boolean index stands, and the index
    with that boolean replaced by the integer array [0] (True) or [] (False), as NumPy does."""
    import spmd.numpy as snp

    shape, replaced, axis = list(aval_of(x).shape), [], 0
    for entry in entries:
        if isinstance(entry, _ScalarBool):
            shape.insert(axis, 1)
            entry = np.zeros(1 if entry.flag else 0, np.intp)
        replaced.append(entry)
        axis += _consumes(entry)
    return snp.reshape(x, tuple(shape)), replaced


def _getitem(x: Any, index: Any):
    """``x[index]`` with NumPy's basic and integer-array indexing. Example: ``x[1:, [0, 2]]``."""
    shape = aval_of(x).shape
    raw = list(index) if isinstance(index, tuple) else [index]
    entries = _expand([_classify(e) for e in raw], shape)
    if any(isinstance(e, _ScalarBool) for e in entries):
        x, entries = _scalar_bools(x, entries)
        shape = aval_of(x).shape
    entries = _unmask(entries, shape)
    plan: list = []
    operands: list = []
    axis = 0
    for entry in entries:
        if entry is None or entry is Ellipsis:
            plan.append(entry)
            continue
        size = shape[axis]
        if isinstance(entry, int):
            if not -size <= entry < size:
                raise out_of_range(axis, entry, size)
            plan.append(entry % size)
        elif isinstance(entry, slice):
            if entry.step == 0:
                raise ShapeError(f"spmd.numpy indexing: the slice for axis {axis} has step 0.")
            plan.append(Slice.resolve(entry, size))
        else:
            plan.append(IndexArray(len(operands)))
            operands.append(entry if isinstance(entry, Tracer) else _checked(entry, axis, size))
        axis += 1
    return getitem_p.bind(x, *operands, index=tuple(plan))


def take(a: Any, indices: Any, axis: int | None = None, mode: str | None = None):
    """``numpy.take``: elements of ``a`` at ``indices`` along ``axis`` (flattened if None).

    Example: ``take(x, [0, 2], axis=1)``. ``mode`` is "raise" (default), "wrap" or "clip".
    Concrete indices out of range raise SpmdIndexError; traced ones under jit are clipped
    into range with mode="raise", as JAX does.
    """
    if mode not in (None, "raise", "wrap", "clip"):
        raise SpmdTypeError(f"spmd.numpy.take: mode={mode!r}; use 'raise', 'wrap' or 'clip'.")
    if axis is None:
        import spmd.numpy as snp

        a, axis = snp.reshape(a, (-1,)), 0
    if aval_of(a).ndim == 0:  # NumPy takes from a 0-d array as from its 1-element ravel
        import spmd.numpy as snp

        a = snp.reshape(a, (1,))
    aval = aval_of(a)
    if not -aval.ndim <= operator.index(axis) < aval.ndim:
        raise SpmdIndexError(
            f"spmd.numpy.take: axis {axis} is out of bounds for an array of {aval.ndim} "
            f"dimensions ({aval})."
        )
    axis = operator.index(axis) % aval.ndim
    size = aval.shape[axis]
    if not isinstance(indices, Tracer):
        indices = np.asarray(indices)
        if indices.dtype == np.bool_ or indices.size == 0:
            indices = indices.astype(np.intp)  # NumPy's take casts booleans to integers
    if isinstance(indices, Tracer) and indices.dtype.kind not in "iu":
        raise SpmdTypeError(f"spmd.numpy.take: indices must be integers; got {indices.aval}.")
    shape = (*aval.shape[:axis], *aval_of(indices).shape, *aval.shape[axis + 1 :])
    if mode in ("wrap", "clip") and size == 0 and math.prod(shape):
        raise SpmdIndexError(
            f"spmd.numpy.take: cannot take {aval_of(indices).size} indices with mode={mode!r} "
            f"from axis {axis} of size 0 of {aval}: there is nothing to wrap or clip to "
            f"(NumPy refuses a non-empty take from an empty axis too). Take no indices, or "
            f"from a non-empty axis."
        )
    if math.prod(aval.shape[:axis]) == 0 or (mode in ("wrap", "clip") and size == 0):
        import spmd.numpy as snp  # an empty result, whose indices NumPy does not look at

        return snp.zeros(shape, aval.dtype)
    if mode in ("wrap", "clip"):
        import spmd.numpy as snp

        if isinstance(indices, Tracer):
            indices = (
                snp.remainder(indices, size) if mode == "wrap" else snp.clip(indices, 0, size - 1)
            )
        else:
            indices = np.mod(indices, size) if mode == "wrap" else np.clip(indices, 0, size - 1)
    return _getitem(a, (slice(None),) * axis + (indices,))


def nonzero(a: Any, *, size: int | None = None, fill_value: Any = None) -> tuple:
    """``numpy.nonzero``: one index array per dimension, of the elements that are not zero,
    in C order. Example: ``rows, cols = nonzero(x)``.

    Their number depends on the data, so a traced ``a`` needs JAX's ``size=``: the first
    ``size`` indices, padded with ``fill_value`` (0 by default; a scalar, or one per dimension).
    """
    from spmd.core.axes import as_int

    aval = aval_of(a)
    if aval.ndim == 0:
        raise SpmdValueError(
            f"spmd.numpy.nonzero: a is 0-d ({aval}); NumPy 2 does not allow nonzero of 0-d "
            f"arrays. Use nonzero(atleast_1d(a)), i.e. nonzero(reshape(a, (1,)))."
        )
    if size is not None:
        size = as_int(size, "spmd.numpy.nonzero", "size")
        if size < 0:
            raise SpmdValueError(f"spmd.numpy.nonzero: size={size} must be >= 0.")
    fills = _fills(fill_value, aval.ndim)
    if not isinstance(a, Tracer):
        found = np.nonzero(np.asarray(a))
        if size is not None:
            found = tuple(
                np.concatenate([f[:size], np.full(max(0, size - len(f)), fill, np.intp)])
                for f, fill in zip(found, fills, strict=True)
            )
        import spmd.numpy as snp

        return tuple(snp.asarray(f.astype(np.intp)) for f in found)
    if size is None:
        raise SpmdTypeError(
            f"spmd.numpy.nonzero: a is a traced {aval}, so how many elements are nonzero is "
            f"not known while tracing and the result has no static shape (JAX raises "
            f"ConcretizationTypeError here). Pass size= (and fill_value=) for a fixed number "
            f"of indices, or call it outside jit."
        )
    return _traced_nonzero(a, aval, size, fills)


def _fills(fill_value: Any, ndim: int) -> tuple:
    if fill_value is None:
        return (0,) * ndim
    fills = tuple(np.ravel(np.asarray(fill_value)).tolist())
    if len(fills) == 1:
        return fills * ndim
    if len(fills) != ndim:
        raise ShapeError(
            f"spmd.numpy.nonzero: fill_value has {len(fills)} entries, but a has {ndim} "
            f"dimensions; give a scalar or one value per dimension."
        )
    return fills


def _traced_nonzero(a: Any, aval: Any, size: int, fills: tuple) -> tuple:
    """The first ``size`` nonzero positions of a traced ``a``: a stable sort puts the nonzero
    elements first, in order; slots past their count get the fill."""
    import spmd.numpy as snp

    flat = snp.reshape(a, (-1,)) != 0
    order = snp.argsort(snp.logical_not(flat), kind="stable").astype(np.intp)
    if size > aval.size:
        order = snp.concatenate([order, snp.zeros(size - aval.size, np.intp)])
    order = order[:size]
    found = snp.arange(size) < snp.sum(flat)
    result, stride = [], 1
    for d in reversed(range(aval.ndim)):
        index = (order // stride) % aval.shape[d] if aval.shape[d] else order
        result.append(snp.where(found, index, np.intp(fills[d])))
        stride *= max(aval.shape[d], 1)
    return tuple(reversed(result))


__all__ = ["_getitem", "nonzero", "take"]
