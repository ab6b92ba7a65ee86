"""Shape functions of spmd.numpy: normalize arguments as NumPy 2 does, then bind primitives."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from spmd.core.aval import check_dtype, host_array
from spmd.core.axes import as_int, as_ints, normalize_axes, normalize_axis
from spmd.core.methods import ArrayMethods
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError, SpmdValueError
from spmd.numpy.placement import takes_out_sharding
from spmd.prims.shape import (
    broadcast_to_p,
    concatenate_p,
    convert_element_type_p,
    repeat_p,
    reshape_error,
    reshape_p,
    split_p,
    transpose_p,
)

__all__ = [
    "astype",
    "broadcast_to",
    "concatenate",
    "expand_dims",
    "moveaxis",
    "ravel",
    "repeat",
    "reshape",
    "roll",
    "split",
    "squeeze",
    "stack",
    "swapaxes",
    "tile",
    "transpose",
]


def _sizes(shape: Any, fn: str, argument: str = "shape") -> tuple[int, ...]:
    sizes = as_ints(shape, f"spmd.numpy.{fn}", argument)
    if any(d < 0 for d in sizes):
        raise ShapeError(
            f"spmd.numpy.{fn}: {argument}={sizes} has a negative size; sizes must be >= 0."
        )
    return sizes


def _operands(arrays: Any, fn: str) -> list[Any]:
    try:
        operands = list(arrays)
    except TypeError:
        raise SpmdTypeError(
            f"spmd.numpy.{fn}: arrays must be a sequence of arrays, got "
            f"{type(arrays).__name__}; wrap a single array in a list."
        ) from None
    if not operands:
        raise ShapeError(f"spmd.numpy.{fn}: need at least one array to {fn}.")
    return operands


def shape(a: Any) -> tuple[int, ...]:
    """``numpy.shape``: the shape of an array, traced or not. Example: ``shape(x) == (4, 8)``."""
    return tuple(aval_of(a).shape)


def ndim(a: Any) -> int:
    """``numpy.ndim``: the number of dimensions. Example: ``ndim(x) == 2``."""
    return aval_of(a).ndim


def size(a: Any, axis: int | None = None) -> int:
    """``numpy.size``: how many elements (along ``axis`` if given). Example: ``size(x, 0)``."""
    aval = aval_of(a)
    if axis is None:
        return math.prod(aval.shape)
    return aval.shape[normalize_axis(axis, aval.ndim, "spmd.numpy.size", str(aval))]


_ORDERS = ("C", "F", "A", "K")


def _order(a: Any, order: Any, fn: str, allowed: tuple[str, ...]) -> str:
    """``order`` as "C" or "F". spmd values are laid out in C order, so "A" and "K" mean "C"
    for them; a NumPy array's own layout decides, as in NumPy."""
    order = "C" if order is None else order
    if order not in allowed:
        raise SpmdValueError(
            f"spmd.numpy.{fn}: order must be one of {', '.join(map(repr, allowed))} "
            f"(got {order!r}); 'C' reads the last index fastest, 'F' the first."
        )
    if order in "AK" and isinstance(a, np.ndarray):
        fortran = a.flags.f_contiguous and not a.flags.c_contiguous
        return "F" if fortran else "C"
    return order if order in "CF" else "C"


@takes_out_sharding
def reshape(
    a: Any, shape: int | Sequence[int] | None = None, order: str = "C", *, copy: Any = None
) -> Any:
    """``numpy.reshape``, one -1 inferred; ``order='F'`` reads and writes the first index
    fastest. Example: ``reshape(x, (2, -1), order='F')``. (spmd Arrays never share memory, so
    ``copy`` changes nothing.)"""
    order = _order(a, order, "reshape", _ORDERS[:3])
    if shape is None:
        raise SpmdTypeError("spmd.numpy.reshape: give the new shape, e.g. reshape(x, (2, -1)).")
    aval = aval_of(a)
    sizes = as_ints(shape, "spmd.numpy.reshape", "shape")
    unknown = [i for i, d in enumerate(sizes) if d == -1]
    if len(unknown) > 1 or any(d < -1 for d in sizes):
        raise ShapeError(
            f"spmd.numpy.reshape: shape={sizes} may hold at most one -1 (the dimension to infer) "
            f"and no other negative sizes."
        )
    if unknown:
        known = math.prod(d for d in sizes if d != -1)
        if known == 0 or aval.size % known:
            raise reshape_error(aval, sizes)
        sizes = tuple(aval.size // known if d == -1 else d for d in sizes)
    if order == "F":  # reverse the axes, reshape in C order to the reversed shape, reverse back
        reversed_in = transpose_p.bind(a, permutation=tuple(reversed(range(aval.ndim))))
        out = reshape_p.bind(reversed_in, new_sizes=sizes[::-1])
        return transpose_p.bind(out, permutation=tuple(reversed(range(len(sizes)))))
    return reshape_p.bind(a, new_sizes=sizes)


def ravel(a: Any, order: str = "C") -> Any:
    """``numpy.ravel``: the elements as a 1-D array, in C order (or ``order='F'``).

    Example: ``ravel(x, order='F')``."""
    if isinstance(a, np.ndarray) and order == "K":
        return _host_put(np.ravel(a, order="K"))  # NumPy's memory order of its strides
    order = _order(a, order, "ravel", _ORDERS)
    return reshape(a, (-1,), order=order)


def _spmd_value(a: Any, fn: str) -> Any:
    """``a`` as ``asarray`` makes it (spmd/numpy/creation.py, which imports this module): an
    Array or traced value as it is, a list of them stacked, a host value put on a device."""
    if isinstance(a, ArrayMethods):
        return a
    if isinstance(a, (list, tuple)) and any(isinstance(x, ArrayMethods) for x in a):
        return stack([_spmd_value(x, fn) for x in a])
    from spmd.runtime.put import device_put

    return device_put(host_array(a, f"spmd.numpy.{fn}: a"))


def _host_put(value: np.ndarray) -> Any:
    from spmd.runtime.put import device_put

    return device_put(np.ascontiguousarray(value))


def transpose(a: Any, axes: Sequence[int] | None = None) -> Any:
    """``numpy.transpose``: permute the axes (reverse them if None). Example: ``transpose(x)``."""
    aval = aval_of(a)
    if axes is None:
        return transpose_p.bind(a, permutation=tuple(reversed(range(aval.ndim))))
    permutation = normalize_axes(axes, aval.ndim, "spmd.numpy.transpose", str(aval), "axes")
    if len(permutation) != aval.ndim:
        raise ShapeError(
            f"spmd.numpy.transpose: axes={tuple(permutation)} has {len(permutation)} entries but "
            f"{aval} has {aval.ndim} dimensions; give a permutation of range({aval.ndim})."
        )
    return transpose_p.bind(a, permutation=permutation)


def swapaxes(a: Any, axis1: int, axis2: int) -> Any:
    """``numpy.swapaxes``: exchange two axes. Example: ``swapaxes(x, 0, -1)``."""
    aval = aval_of(a)
    i = normalize_axis(axis1, aval.ndim, "spmd.numpy.swapaxes", str(aval), "axis1")
    j = normalize_axis(axis2, aval.ndim, "spmd.numpy.swapaxes", str(aval), "axis2")
    permutation = list(range(aval.ndim))
    permutation[i], permutation[j] = j, i
    return transpose_p.bind(a, permutation=tuple(permutation))


def moveaxis(a: Any, source: int | Sequence[int], destination: int | Sequence[int]) -> Any:
    """``numpy.moveaxis``: move axes to new positions. Example: ``moveaxis(x, 0, -1)``."""
    aval = aval_of(a)
    src = normalize_axes(source, aval.ndim, "spmd.numpy.moveaxis", str(aval), "source")
    dst = normalize_axes(destination, aval.ndim, "spmd.numpy.moveaxis", str(aval), "destination")
    if len(src) != len(dst):
        raise ShapeError(
            f"spmd.numpy.moveaxis: source={source} and destination={destination} must have "
            f"the same number of elements ({len(src)} vs {len(dst)})."
        )
    order = [n for n in range(aval.ndim) if n not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return transpose_p.bind(a, permutation=tuple(order))


def squeeze(a: Any, axis: int | Sequence[int] | None = None) -> Any:
    """``numpy.squeeze``: drop axes of size 1 (all if None). Example: ``squeeze(x, 0)``."""
    aval = aval_of(a)
    if axis is None:
        axes = tuple(i for i, d in enumerate(aval.shape) if d == 1)
    elif aval.ndim == 0:  # NumPy takes an int axis 0 or -1 (not in a tuple) of a 0-d array
        sequence = isinstance(axis, tuple | list)
        if axis != () and (sequence or as_int(axis, "spmd.numpy.squeeze", "axis") not in (0, -1)):
            raise ShapeError(
                f"spmd.numpy.squeeze: axis={axis!r} is out of bounds for the 0-d {aval}; NumPy "
                f"takes only the integer axis 0 or -1, (), or None for a 0-d array."
            )
        axes = ()
    else:
        axes = normalize_axes(axis, aval.ndim, "spmd.numpy.squeeze", str(aval))
    for i in axes:
        if aval.shape[i] != 1:
            raise ShapeError(
                f"spmd.numpy.squeeze: cannot squeeze axis {i} of {aval}: its size is "
                f"{aval.shape[i]}, not 1. Squeeze only axes of size 1, or pass axis=None."
            )
    return reshape_p.bind(a, new_sizes=tuple(d for i, d in enumerate(aval.shape) if i not in axes))


class AxisIndexError(ShapeError, IndexError):
    """An axis out of range where NumPy raises its AxisError, an IndexError as well."""


def expand_dims(a: Any, axis: int | Sequence[int]) -> Any:
    """``numpy.expand_dims``: insert axes of size 1. Example: ``expand_dims(x, (0, -1))``."""
    aval = aval_of(a)
    ndim = aval.ndim + len(as_ints(axis, "spmd.numpy.expand_dims", "axis"))
    try:
        axes = normalize_axes(axis, ndim, "spmd.numpy.expand_dims", f"the result (rank {ndim})")
    except ShapeError as error:  # NumPy's AxisError is an IndexError too, as the Array API asks
        raise AxisIndexError(str(error)) from None
    sizes = iter(aval.shape)
    return reshape_p.bind(a, new_sizes=tuple(1 if i in axes else next(sizes) for i in range(ndim)))


def broadcast_to(array: Any, shape: int | Sequence[int]) -> Any:
    """``numpy.broadcast_to``: stretch size-1 and new axes. Ex: ``broadcast_to(x, (4, 3))``."""
    return broadcast_to_p.bind(array, shape=_sizes(shape, "broadcast_to"))


_CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")


def _cast_operands(operands: list, dtype: Any, casting: str, fn: str) -> list:
    """The operands in ``dtype`` (their common dtype if None) after NumPy's ``casting`` check."""
    from spmd.core.aval import result_dtype

    if casting not in _CASTINGS:
        raise SpmdValueError(
            f"spmd.numpy.{fn}: casting must be one of {', '.join(map(repr, _CASTINGS))} "
            f"(got {casting!r})."
        )
    avals = [aval_of(x) for x in operands]
    if dtype is None and casting == "same_kind":
        return operands  # the common dtype is always a same-kind cast
    target = result_dtype(*avals)[0] if dtype is None else check_dtype(dtype)
    for i, aval in enumerate(avals):
        if not np.can_cast(aval.dtype, target, casting):
            raise SpmdTypeError(
                f"spmd.numpy.{fn}: cannot cast arrays[{i}] ({aval}) to {target} according to "
                f"the rule {casting!r}; pass casting='unsafe' to convert anyway, or convert "
                f"it first with .astype()."
            )
    return [
        x if aval.dtype == target else astype(x, target)
        for x, aval in zip(operands, avals, strict=True)
    ]


def concatenate(
    arrays: Sequence[Any],
    axis: int | None = 0,
    out: None = None,
    *,
    dtype: Any = None,
    casting: str = "same_kind",
) -> Any:
    """``numpy.concatenate`` along an existing axis (None flattens), in ``dtype`` if given.

    Example: ``concatenate([x, y], dtype=np.float32)``."""
    _no_out(out, "concatenate")
    operands = _cast_operands(_operands(arrays, "concatenate"), dtype, casting, "concatenate")
    if axis is not None:
        first = aval_of(operands[0])
        if first.ndim == 0:
            raise ShapeError(
                f"spmd.numpy.concatenate: arrays[0] is zero-dimensional ({first}) and cannot be "
                f"concatenated; use stack, or pass axis=None to flatten."
            )
        axis = normalize_axis(axis, first.ndim, "spmd.numpy.concatenate", f"arrays[0] {first}")
    return concatenate_p.bind(*operands, axis=axis)


def stack(
    arrays: Sequence[Any],
    axis: int = 0,
    out: None = None,
    *,
    dtype: Any = None,
    casting: str = "same_kind",
) -> Any:
    """``numpy.stack``: join same-shaped arrays along a new axis, in ``dtype`` if given.

    Example: ``stack([x, y], -1)``."""
    _no_out(out, "stack")
    operands = _cast_operands(_operands(arrays, "stack"), dtype, casting, "stack")
    avals = [aval_of(x) for x in operands]
    for i, aval in enumerate(avals):
        if aval.shape != avals[0].shape:
            raise ShapeError(
                f"spmd.numpy.stack: all input arrays must have the same shape, but arrays[{i}] "
                f"is {aval} and arrays[0] is {avals[0]}."
            )
    shape = avals[0].shape
    rank = len(shape) + 1
    axis = normalize_axis(axis, rank, "spmd.numpy.stack", f"the result (rank {rank})")
    expanded = (*shape[:axis], 1, *shape[axis:])
    return concatenate_p.bind(
        *[reshape_p.bind(x, new_sizes=expanded) for x in operands],
        axis=axis,
    )


def _no_out(out: Any, fn: str) -> None:
    if out is not None:
        raise SpmdTypeError(
            f"spmd.numpy.{fn}: out= is not supported: spmd Arrays cannot be written in place. "
            f"Use the returned array."
        )


def split(ary: Any, indices_or_sections: int | Sequence[int], axis: int = 0) -> list[Any]:
    """``numpy.split`` into equal sections or at indices. Example: ``split(x, [2, 5], axis=1)``."""
    aval = aval_of(ary)
    axis = normalize_axis(axis, aval.ndim, "spmd.numpy.split", str(aval))
    n = aval.shape[axis]
    try:
        points = list(indices_or_sections)
    except TypeError:  # not a sequence: a number of equal sections
        sections = as_int(indices_or_sections, "spmd.numpy.split", "indices_or_sections")
        if sections <= 0 or n % sections:
            raise ShapeError(
                f"spmd.numpy.split: array split does not result in an equal division: axis "
                f"{axis} of {aval} has size {n}, which {sections} sections cannot divide "
                f"equally. Pass a number of sections that divides {n}, or a list of indices."
            ) from None
        step = n // sections
        bounds = tuple((i * step, (i + 1) * step) for i in range(sections))
    else:  # indices: pieces [0:i0], [i0:i1], ..., [ik:n] with Python slice semantics
        edges = [0, *(as_int(i, "spmd.numpy.split", "indices_or_sections") for i in points), n]
        pieces = [slice(a, b).indices(n)[:2] for a, b in itertools.pairwise(edges)]
        bounds = tuple((start, max(start, stop)) for start, stop in pieces)
    return split_p.bind(ary, bounds=bounds, axis=axis)


def tile(A: Any, reps: int | Sequence[int]) -> Any:
    """``numpy.tile``: repeat the whole array ``reps`` times per axis. Ex: ``tile(x, (2, 1))``."""
    aval = aval_of(A)
    reps = _sizes(reps, "tile", "reps")
    ndim = max(aval.ndim, len(reps))
    shape = (1,) * (ndim - aval.ndim) + aval.shape
    reps = (1,) * (ndim - len(reps)) + reps
    # x[s0, s1] -> [1, s0, 1, s1] -> broadcast to [r0, s0, r1, s1] -> [r0*s0, r1*s1]
    x = reshape_p.bind(A, new_sizes=tuple(v for s in shape for v in (1, s)))
    x = broadcast_to_p.bind(
        x, shape=tuple(v for r, s in zip(reps, shape, strict=True) for v in (r, s))
    )
    return reshape_p.bind(x, new_sizes=tuple(r * s for r, s in zip(reps, shape, strict=True)))


def repeat(a: Any, repeats: int | Sequence[int], axis: int | None = None) -> Any:
    """``numpy.repeat``: repeat elements (flattened if axis is None). Ex: ``repeat(x, 2, 0)``."""
    if axis is None or aval_of(a).ndim == 0:  # NumPy repeats a 0-d array as 1-d
        a, axis = ravel(a), 0 if axis is None else axis
    aval = aval_of(a)
    axis = normalize_axis(axis, aval.ndim, "spmd.numpy.repeat", str(aval))
    counts = as_ints(repeats, "spmd.numpy.repeat", "repeats")
    if any(c < 0 for c in counts):
        raise ShapeError(f"spmd.numpy.repeat: repeats={repeats} may not contain negative counts.")
    is_int = not isinstance(repeats, Sequence) and getattr(repeats, "ndim", 0) == 0
    if is_int or len(counts) == 1:
        return repeat_p.bind(a, repeats=counts[0], axis=axis)
    return repeat_p.bind(a, repeats=counts, axis=axis)


def roll(a: Any, shift: int | Sequence[int], axis: int | Sequence[int] | None = None) -> Any:
    """``numpy.roll``: elements shifted along ``axis`` (flattened if None), those pushed off
    one end coming back at the other. Example: ``roll(x, 1)``."""
    a = _spmd_value(a, "roll")  # an spmd Array also when nothing moves
    aval = aval_of(a)
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), aval.shape)
    shifts = as_ints(shift, "spmd.numpy.roll", "shift")
    axes = [normalize_axis(x, aval.ndim, "spmd.numpy.roll", str(aval))
            for x in as_ints(axis, "spmd.numpy.roll", "axis")]  # fmt: skip
    if len(shifts) != len(axes) and 1 not in (len(shifts), len(axes)):
        raise ShapeError(
            f"spmd.numpy.roll: shift {shift!r} and axis {axis!r} must have the same length "
            f"(or one of them be a single value)."
        )
    if not axes and aval.ndim == 0:
        raise SpmdValueError(
            f"spmd.numpy.roll: axis={axis!r} of the 0-d {aval}: NumPy 2 refuses an empty axis "
            f"list for a 0-d array (ValueError); pass axis=None, or leave the array as it is."
        )
    count = 0 if 0 in (len(shifts), len(axes)) else max(len(shifts), len(axes))
    total: dict[int, int] = {}
    for i in range(count):
        ax = axes[i % len(axes)]
        total[ax] = total.get(ax, 0) + shifts[i % len(shifts)]
    for ax, s in total.items():
        n = aval.shape[ax]
        if n and s % n:
            head, tail = split(a, [n - s % n], axis=ax)
            a = concatenate([tail, head], axis=ax)
    return a


def astype(x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
    """``numpy.astype``: convert to ``dtype``. Example: ``astype(x, np.float32)``.

    ``copy`` changes nothing (spmd Arrays are immutable); ``device`` (a Device or Sharding)
    places the result there, as ``jax.numpy.astype`` does."""
    converted = convert_element_type_p.bind(x, new_dtype=check_dtype(dtype))
    if device is None:
        return converted
    from spmd.runtime.put import device_put

    return device_put(converted, device)
