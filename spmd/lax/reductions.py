"""jax.lax's reductions: reduce_sum, reduce_prod, reduce_max, reduce_min, reduce_and,
reduce_or, reduce_xor, argmax, argmin, and ``reduce`` for the monoids spmd.numpy's (and so
spmd.lax's) add, multiply, maximum, minimum and bitwise and/or/xor form.

Unlike spmd.numpy's, each keeps the operand's dtype (``reduce_sum`` of int32 is int32) and
reduces an empty axis to the identity (``reduce_max`` to -inf). Sums, products, extrema
and boolean and/or bind spmd.numpy's reductions, so a sharded axis leaves a pending
reduction; bitwise and/or/xor of integers (and xor of booleans) fold the axis in halves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spmd.core.trace import Tracer, aval_of
from spmd.errors import ShapeError, SpmdTypeError, SpmdValueError
from spmd.lax import operator_checks as check
from spmd.numpy import add as numpy_add
from spmd.numpy import (
    all,
    any,
    asarray,
    astype,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    concatenate,
    full,
    logical_and,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    multiply,
    prod,
    reshape,
    sum,
)
from spmd.numpy import (
    argmax as numpy_argmax,
)
from spmd.numpy import (
    argmin as numpy_argmin,
)
from spmd.numpy import max as numpy_max
from spmd.numpy import min as numpy_min
from spmd.prims.reduction import identity
from spmd.tree_util import tree_flatten, tree_unflatten

__all__ = [
    "argmax", "argmin", "reduce", "reduce_and", "reduce_max", "reduce_min", "reduce_or",
    "reduce_prod", "reduce_sum", "reduce_xor",
]  # fmt: skip


def _operand(fn: str, operand: Any, axes: Sequence[int], kinds: str, described: str):
    operand = asarray(operand)
    aval = aval_of(operand)
    if aval.dtype.kind not in kinds:
        raise SpmdTypeError(
            f"spmd.lax.{fn}: operand is {aval}; lax.{fn} takes {described}. Convert first, "
            f"e.g. operand.astype(np.int32)."
        )
    axes = check.dimensions(axes, fn, "axes")
    check.in_range(axes, aval.ndim, fn, "axes", str(aval))
    return operand, tuple(sorted(axes))


def reduce_sum(operand: Any, axes: Sequence[int]) -> Any:
    """The sum over ``axes``, in the operand's dtype (0 over nothing). Example:
    ``reduce_sum(x, (0,))``."""
    operand, axes = _operand("reduce_sum", operand, axes, "iufc", "numbers (not bools)")
    return sum(operand, axis=axes, dtype=aval_of(operand).dtype) if axes else operand


def reduce_prod(operand: Any, axes: Sequence[int]) -> Any:
    """The product over ``axes``, in the operand's dtype (1 over nothing)."""
    operand, axes = _operand("reduce_prod", operand, axes, "iufc", "numbers (not bools)")
    return prod(operand, axis=axes, dtype=aval_of(operand).dtype) if axes else operand


def _extreme(name: str, fn: Callable, operand: Any, axes: Sequence[int]) -> Any:
    operand, axes = _operand(f"reduce_{name}", operand, axes, "biufc", "arrays")
    if not axes:
        return operand
    aval = aval_of(operand)
    empty = any_empty(aval.shape, axes)
    return fn(operand, axis=axes, initial=identity(name, aval.dtype) if empty else None)


def any_empty(shape: tuple[int, ...], axes: tuple[int, ...]) -> bool:
    return 0 in (shape[a] for a in axes)


def reduce_max(operand: Any, axes: Sequence[int]) -> Any:
    """The maximum over ``axes`` (NaN wins; over nothing, the dtype's lowest value or -inf).
    Example: ``reduce_max(x, (1,))``."""
    return _extreme("max", numpy_max, operand, axes)


def reduce_min(operand: Any, axes: Sequence[int]) -> Any:
    """The minimum over ``axes`` (NaN wins; over nothing, the highest value or inf)."""
    return _extreme("min", numpy_min, operand, axes)


def _halves(operand: Any, axes: tuple[int, ...], combine: Callable, unit: Any) -> Any:
    """``combine`` folded over ``axes`` by halving each: neighbours combined pairwise (an
    odd length padded with ``unit``, the identity), log2(n) steps, exact for any
    associative ``combine``."""
    dtype = aval_of(operand).dtype
    for axis in sorted(axes, reverse=True):
        shape = aval_of(operand).shape
        if shape[axis] == 0:
            operand = full((*shape[:axis], 1, *shape[axis + 1 :]), unit, dtype)
        while aval_of(operand).shape[axis] > 1:
            shape = aval_of(operand).shape
            if shape[axis] % 2:
                pad = full((*shape[:axis], 1, *shape[axis + 1 :]), unit, dtype)
                operand = concatenate([operand, pad], axis=axis)
            even = [slice(None)] * len(shape)
            odd = list(even)
            even[axis], odd[axis] = slice(0, None, 2), slice(1, None, 2)
            operand = combine(operand[tuple(even)], operand[tuple(odd)])
        shape = aval_of(operand).shape
        operand = reshape(operand, shape[:axis] + shape[axis + 1 :])
    return operand


def _bitwise(name: str, operand: Any, axes: Sequence[int]) -> Any:
    operand, axes = _operand(f"reduce_{name}", operand, axes, "biu", "bools or integers")
    if not axes:
        return operand
    dtype = aval_of(operand).dtype
    if dtype == np.bool_ and name != "xor":
        return (all if name == "and" else any)(operand, axis=axes)
    combine = {"and": bitwise_and, "or": bitwise_or, "xor": bitwise_xor}[name]
    unit = np.array(-1 if name == "and" else 0).astype(dtype)
    return _halves(operand, axes, combine, unit)


def reduce_and(operand: Any, axes: Sequence[int]) -> Any:
    """Logical (bools) or bitwise (integers) and over ``axes``; all ones over nothing."""
    return _bitwise("and", operand, axes)


def reduce_or(operand: Any, axes: Sequence[int]) -> Any:
    """Logical (bools) or bitwise (integers) or over ``axes``; zero over nothing."""
    return _bitwise("or", operand, axes)


def reduce_xor(operand: Any, axes: Sequence[int]) -> Any:
    """Logical (bools: odd count of True) or bitwise xor over ``axes``; zero over nothing."""
    return _bitwise("xor", operand, axes)


def _arg(fn: str, reduce: Callable, operand: Any, axis: int, index_dtype: Any) -> Any:
    operand = asarray(operand)
    aval = aval_of(operand)
    axis = check.static_int(axis, fn, "axis")
    if not 0 <= axis < aval.ndim:
        raise ShapeError(
            f"spmd.lax.{fn}: axis={axis} is outside [0, {aval.ndim}) for operand {aval}."
        )
    if aval.shape[axis] == 0:
        raise ShapeError(
            f"spmd.lax.{fn}: axis {axis} of operand {aval} is empty; an empty axis has no "
            f"{fn[3:]}imum to point at."
        )
    index_dtype = np.dtype(index_dtype)
    if index_dtype.kind not in "iu":
        raise SpmdTypeError(
            f"spmd.lax.{fn}: index_dtype={index_dtype} is not an integer dtype; pass e.g. np.int32."
        )
    return astype(reduce(operand, axis=axis), index_dtype)


def argmax(operand: Any, axis: int, index_dtype: Any) -> Any:
    """The index of the first maximum along ``axis`` (NaN counts as the maximum), in
    ``index_dtype``. Example: ``argmax(x, 1, np.int32)``."""
    return _arg("argmax", numpy_argmax, operand, axis, index_dtype)


def argmin(operand: Any, axis: int, index_dtype: Any) -> Any:
    """The index of the first minimum along ``axis`` (NaN counts as the minimum)."""
    return _arg("argmin", numpy_argmin, operand, axis, index_dtype)


# --- reduce ----------------------------------------------------------------------------------

# computation -> (reduction, its identity for a dtype); lax's names are the same objects
_MONOIDS: dict[Callable, tuple[Callable, Callable]] = {
    numpy_add: (reduce_sum, lambda dtype: 0),
    multiply: (reduce_prod, lambda dtype: 1),
    maximum: (reduce_max, lambda dtype: identity("max", dtype)),
    minimum: (reduce_min, lambda dtype: identity("min", dtype)),
    bitwise_and: (reduce_and, lambda dtype: True if dtype == np.bool_ else -1),
    logical_and: (reduce_and, lambda dtype: True),
    bitwise_or: (reduce_or, lambda dtype: 0),
    logical_or: (reduce_or, lambda dtype: False),
    bitwise_xor: (reduce_xor, lambda dtype: 0),
    logical_xor: (reduce_xor, lambda dtype: False),
}


def reduce(
    operands: Any, init_values: Any, computation: Callable, dimensions: Sequence[int]
) -> Any:
    """``computation`` folded over ``dimensions`` of ``operands``, starting from
    ``init_values`` (a scalar per operand, in the same tree), for the monoids of lax.add,
    mul, max, min and the bitwise and/or/xor (spmd.numpy's functions of those names too).
    A start other than the identity is combined once with each result. Example:
    ``reduce(x, 0.0, lax.add, (0,))`` is ``reduce_sum(x, (0,))``."""
    flat, tree = tree_flatten(operands)
    inits, init_tree = tree_flatten(init_values)
    if tree != init_tree:
        raise SpmdValueError(
            f"spmd.lax.reduce: operands {tree} and init_values {init_tree} differ in "
            f"structure; give one scalar start per operand, in the same tree."
        )
    monoid = _MONOIDS.get(computation)
    if monoid is None or len(flat) != 1:
        raise SpmdTypeError(
            f"spmd.lax.reduce: computation {getattr(computation, '__name__', computation)!r} "
            f"over {len(flat)} operand(s) is not one spmd reduces: it takes one operand and "
            f"lax.add, mul, max, min, bitwise_and, bitwise_or or bitwise_xor (or spmd.numpy's "
            f"functions of those names). Write other reductions with lax.scan or "
            f"lax.fori_loop."
        )
    reduction, unit = monoid
    (operand,), (init,) = flat, inits
    operand = asarray(operand)
    check.scalar("reduce", init, "init_values")
    dtype = aval_of(operand).dtype
    out = reduction(operand, dimensions)
    if isinstance(init, Tracer):
        out = computation(astype(init, dtype), out)
    elif np.asarray(init) != np.asarray(unit(dtype)).astype(dtype):  # a NumPy constant
        out = computation(np.asarray(init).astype(dtype), out)
    return tree_unflatten(tree, [out])
