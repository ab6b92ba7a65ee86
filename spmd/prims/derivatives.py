"""Builders for the jvp, transpose and batch rules that families of primitives share, and
the few array operations the rules are written with (spmd/core/ad.py and
spmd/core/batching.py say what each rule receives and returns).

The operations bind primitives found by name when a rule runs, so that every family file
may use them without importing the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from spmd.core.ad import UndefinedPrimal, zeros
from spmd.core.aval import ShapedArray
from spmd.core.primitive import primitive_named
from spmd.core.trace import aval_of

# --- operations ---------------------------------------------------------------------------


def bind(name: str, *args: Any, **params: Any) -> Any:
    return primitive_named(name).bind(*args, **params)


def instantiate(t: Any, like: Any) -> Any:
    """A tangent as an array: zeros of ``like``'s type when it is symbolically zero (None)."""
    return t if t is not None else zeros(_aval(like).strong())


def _aval(x: Any):
    return x.aval if isinstance(x, UndefinedPrimal) else aval_of(x)


def convert(x: Any, dtype) -> Any:
    dtype = np.dtype(dtype)
    return x if aval_of(x).dtype == dtype else bind("convert_element_type", x, new_dtype=dtype)


def sum_to_shape(x: Any, shape: tuple[int, ...]) -> Any:
    """``x`` summed over the dimensions that broadcasting ``shape`` to ``x``'s shape added or
    stretched: the transpose of broadcasting."""
    xshape = aval_of(x).shape
    if xshape == tuple(shape):
        return x
    lead = len(xshape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and xshape[lead + i] != 1
    )
    if axes:
        x = bind("reduce_sum", x, axes=axes, keepdims=False, dtype=None)
    return bind("reshape", x, new_sizes=tuple(shape)) if aval_of(x).shape != tuple(shape) else x


def moveaxis(x: Any, source: int, destination: int) -> Any:
    if source == destination:
        return x
    order = [d for d in range(aval_of(x).ndim) if d != source]
    order.insert(destination, source)
    return bind("transpose", x, permutation=tuple(order))


def batch_to_front(x: Any, dim: int | None, size: int) -> Any:
    """``x`` with its batch dimension first; an unbatched ``x`` broadcast along a new one."""
    if dim is None:
        aval = aval_of(x)
        return bind("broadcast_to", x, shape=(size, *aval.shape))
    return moveaxis(x, dim, 0)


def batch_size(args: Sequence[Any], dims: Sequence[int | None]) -> int:
    return next(aval_of(a).shape[d] for a, d in zip(args, dims, strict=True) if d is not None)


def member_aval(aval: ShapedArray, dim: int | None) -> ShapedArray:
    """One batch member's aval of a value batched at ``dim`` (None: unbatched)."""
    if dim is None:
        return aval
    return ShapedArray(aval.shape[:dim] + aval.shape[dim + 1 :], aval.dtype, aval.weak_type)


# --- rule builders ------------------------------------------------------------------------


def linear_jvp(primitive_name: str):
    """The jvp of a primitive linear in all its operands: the primitive on the tangents."""

    def jvp(primals, out, tangents, **params):
        return bind(primitive_name, *map(instantiate, tangents, primals), **params)

    return jvp


def elementwise_batch(primitive_name: str):
    """Batching for a broadcasting elementwise primitive: batched operands get their batch
    dimension first and enough size-1 dimensions to line up from the right."""

    def batch(args, dims, **params):
        rank = max(aval_of(a).ndim - (d is not None) for a, d in zip(args, dims, strict=True))
        lined = []
        for a, d in zip(args, dims, strict=True):
            if d is None:
                lined.append(a)
                continue
            a = moveaxis(a, d, 0)
            shape = aval_of(a).shape
            full = (shape[0],) + (1,) * (rank + 1 - len(shape)) + shape[1:]
            lined.append(bind("reshape", a, new_sizes=full) if full != shape else a)
        return bind(primitive_name, *lined, **params), 0

    return batch


def unary_batch(primitive_name: str):
    """Batching for a primitive acting on each element of its one operand on its own."""

    def batch(args, dims, **params):
        return bind(primitive_name, *args, **params), dims[0]

    return batch
