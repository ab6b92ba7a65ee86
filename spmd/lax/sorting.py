"""jax.lax's sorts: sort (one array, or several sorted together by their first ``num_keys``),
sort_key_val and top_k.

In NumPy's order, as JAX's: NaN last, -0.0 equal to 0.0, complex numbers by real then
imaginary part, ties in index order. One array binds spmd.numpy's stable sort; several are
sorted by stable argsorts of the keys, and every operand gathered by the permutation with
the ``take_along`` primitive; top_k binds ``top_k`` (spmd/prims/along_axis.py). Each rule
gathers the sorted dimension where it is split (its blocks would need merging) and keeps
every other dimension split, so each device sorts its own rows.
"""

from __future__ import annotations

from typing import Any

from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError, SpmdValueError
from spmd.lax import operator_checks as check
from spmd.numpy import argsort, asarray
from spmd.numpy import sort as numpy_sort
from spmd.prims.along_axis import take_along_p, top_k_p

__all__ = ["sort", "sort_key_val", "top_k"]


def _dimension(fn: str, dimension: Any, aval) -> int:
    dimension = check.static_int(dimension, fn, "dimension")
    if not -aval.ndim <= dimension < aval.ndim:
        raise ShapeError(
            f"spmd.lax.{fn}: dimension={dimension} is out of bounds for {aval} "
            f"({aval.ndim} dimension(s)); use one in [{-aval.ndim}, {aval.ndim})."
        )
    return dimension % aval.ndim


def _order(keys: list, axis: int) -> Any:
    """The stable permutation that sorts ``keys`` lexicographically along ``axis`` (the
    first key primary): stable argsorts from the last key to the first."""
    order = None
    for key in reversed(keys):
        moved = key if order is None else take_along_p.bind(key, order, axis=axis)
        step = argsort(moved, axis=axis, stable=True)
        order = step if order is None else take_along_p.bind(order, step, axis=axis)
    return order


def sort(operand: Any, dimension: int = -1, is_stable: bool = True, num_keys: int = 1) -> Any:
    """``operand`` sorted along ``dimension``; a list or tuple of arrays (one shape) is
    sorted together by its first ``num_keys`` (the first primary) and comes back as a tuple.
    Sorting is always stable. Example: ``sort((keys, values), num_keys=1)``."""
    num_keys = check.static_int(num_keys, "sort", "num_keys")
    if not isinstance(operand, list | tuple):
        if num_keys != 1:
            raise SpmdValueError(
                f"spmd.lax.sort: num_keys={num_keys} with a single operand; it must be 1 "
                f"(pass a tuple of arrays to sort by several keys)."
            )
        operand = asarray(operand)
        axis = _dimension("sort", dimension, aval_of(operand))
        return numpy_sort(operand, axis=axis)
    if not operand:
        raise SpmdValueError("spmd.lax.sort: needs at least one operand, got an empty sequence.")
    if not 1 <= num_keys <= len(operand):
        raise SpmdValueError(
            f"spmd.lax.sort: num_keys={num_keys} must be between 1 and the number of operands "
            f"({len(operand)})."
        )
    operands = [asarray(x) for x in operand]
    first = aval_of(operands[0])
    for i, x in enumerate(operands):
        if aval_of(x).shape != first.shape:
            raise ShapeError(
                f"spmd.lax.sort: operand[{i}] is {aval_of(x)} but operand[0] is {first}; "
                f"arrays sorted together need one shape."
            )
    axis = _dimension("sort", dimension, first)
    order = _order(operands[:num_keys], axis)
    return tuple(take_along_p.bind(x, order, axis=axis) for x in operands)


def sort_key_val(keys: Any, values: Any, dimension: int = -1, is_stable: bool = True) -> tuple:
    """``keys`` sorted along ``dimension`` and ``values`` permuted alike. Example:
    ``sorted_keys, moved = sort_key_val(k, v)``."""
    return sort((keys, values), dimension, is_stable, num_keys=1)


def top_k(operand: Any, k: int, *, axis: int = -1, is_stable: bool = True) -> tuple:
    """The ``k`` largest entries along ``axis`` (the last by default), largest first, and
    their int32 indices; equal entries in index order, NaN above everything. Example:
    ``values, indices = top_k(x, 3)``."""
    operand = asarray(operand)
    aval = aval_of(operand)
    if aval.dtype.kind == "c":
        raise SpmdTypeError(
            f"spmd.lax.top_k: operand is {aval}; top_k does not order complex numbers. Pass "
            f"their real part or magnitude, e.g. top_k(abs(x), k)."
        )
    if aval.ndim == 0:
        raise ShapeError(f"spmd.lax.top_k: operand is {aval}; it needs at least 1 dimension.")
    axis = check.static_int(axis, "top_k", "axis")
    if not -aval.ndim <= axis < aval.ndim:
        raise ShapeError(
            f"spmd.lax.top_k: axis={axis} is out of bounds for operand {aval} "
            f"({aval.ndim} dimension(s))."
        )
    axis %= aval.ndim
    k = check.static_int(k, "top_k", "k")
    if not 0 <= k <= aval.shape[axis]:
        raise ShapeError(
            f"spmd.lax.top_k: k={k} for axis {axis} of operand {aval} (size "
            f"{aval.shape[axis]}); k must be between 0 and that size."
        )
    values, indices = top_k_p.bind(operand, k=k, axis=axis)
    return values, indices
