"""lax's general contraction and structural operators: dot_general, broadcast_in_dim,
broadcast, reshape, transpose, squeeze, expand_dims, concatenate and rev.

Each is a composition of spmd.numpy's functions (dot_general binds the one contraction
primitive, ``einsum``), so jvp, transpose, batching and sharding are theirs: a contraction
over a sharded dimension leaves a pending sum, as a matmul's does. Arguments are checked
the jax.lax way (dimension lists of non-negative ints, no dtype promotion), each failure an
SpmdError naming the argument and the sizes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from spmd.core.aval import result_dtype
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError
from spmd.lax import operator_checks as check
from spmd.numpy import (
    asarray,
    astype,
    broadcast_to,
    flip,
)
from spmd.numpy import (
    concatenate as numpy_concatenate,
)
from spmd.numpy import (
    expand_dims as numpy_expand_dims,
)
from spmd.numpy import reshape as numpy_reshape
from spmd.numpy import squeeze as numpy_squeeze
from spmd.numpy import transpose as numpy_transpose
from spmd.prims.contraction import LETTERS, einsum_p
from spmd.runtime.constrain import constrain

__all__ = [
    "broadcast",
    "broadcast_in_dim",
    "concatenate",
    "dot_general",
    "expand_dims",
    "reshape",
    "rev",
    "squeeze",
    "transpose",
]


# --- dot_general ---------------------------------------------------------------------------


def _dimension_numbers(dimension_numbers: Any) -> tuple[tuple[tuple[int, ...], ...], ...]:
    try:
        (lc, rc), (lb, rb) = dimension_numbers
    except (TypeError, ValueError):
        raise SpmdTypeError(
            f"spmd.lax.dot_general: dimension_numbers must be ((lhs_contracting, "
            f"rhs_contracting), (lhs_batch, rhs_batch)), each a sequence of ints, got "
            f"{dimension_numbers!r}; e.g. (((1,), (0,)), ((), ())) for a matrix product."
        ) from None
    names = ("lhs_contracting", "rhs_contracting", "lhs_batch", "rhs_batch")
    dims = [
        check.dimensions(d, "dot_general", n) for d, n in zip((lc, rc, lb, rb), names, strict=True)
    ]
    return (dims[0], dims[1]), (dims[2], dims[3])


def _dot_checks(lhs: Any, rhs: Any, contracting: tuple, batch: tuple) -> None:
    la, ra = aval_of(lhs), aval_of(rhs)
    for side, aval, dims in (("lhs", la, (*contracting[0], *batch[0])),
                             ("rhs", ra, (*contracting[1], *batch[1]))):  # fmt: skip
        check.in_range(dims, aval.ndim, "dot_general", f"{side}'s contracting and batch "
                       f"dimensions", f"{side} {aval}")  # fmt: skip
    for kind, (left, right) in (("contracting", contracting), ("batch", batch)):
        if len(left) != len(right):
            raise ShapeError(
                f"spmd.lax.dot_general: lhs_{kind}={left} and rhs_{kind}={right} differ in "
                f"length; each lhs {kind} dimension pairs with one of rhs ({la}, {ra})."
            )
        for dl, dr in zip(left, right, strict=True):
            if la.shape[dl] != ra.shape[dr]:
                raise ShapeError(
                    f"spmd.lax.dot_general: lhs {la} dimension {dl} (size {la.shape[dl]}) and "
                    f"rhs {ra} dimension {dr} (size {ra.shape[dr]}) are paired as {kind} "
                    f"dimensions but differ in size; pair dimensions of one size."
                )


def _type_rank(dtype: np.dtype) -> tuple:
    """XLA's order of dtypes for a dot of two (HigherPrecisionType): complex above real,
    then exponent range, mantissa, width and signedness."""
    real = np.empty((), dtype).real.dtype
    floating = real.kind == "f"
    width = 1 if real.kind == "b" else 8 * real.itemsize
    return (dtype.kind == "c", np.finfo(real).maxexp if floating else -1,
            np.finfo(real).nmant if floating else -1, width, real.kind != "u")  # fmt: skip


def dot_dtypes(lhs: Any, rhs: Any, preferred: Any) -> tuple[np.dtype, np.dtype]:
    """The result dtype (JAX's: the operand of higher precision, or preferred_element_type)
    and the dtype the products are summed in (the wider of the two)."""
    la, ra = aval_of(lhs), aval_of(rhs)
    if la.weak_type != ra.weak_type:  # a Python scalar takes the other's dtype
        result, _ = result_dtype(la, ra)
    elif _type_rank(la.dtype) != _type_rank(ra.dtype):
        result = max(la.dtype, ra.dtype, key=_type_rank)
    elif la.dtype != ra.dtype:
        raise SpmdTypeError(
            f"spmd.lax.dot_general: lhs is {la} and rhs is {ra}, dtypes jax.lax cannot order; "
            f"convert one to the other's dtype first."
        )
    else:
        result = la.dtype
    if preferred is None:
        return result, result
    preferred = np.dtype(preferred)
    if (result.kind == "c") != (preferred.kind == "c") or (
        result.kind == "f" and preferred.kind in "biu"
    ):
        raise SpmdTypeError(
            f"spmd.lax.dot_general: preferred_element_type={preferred} does not fit operands "
            f"of {result}: integers may accumulate in integers or floats, floats in floats, "
            f"complex numbers in complex numbers."
        )
    if result.kind not in "fc" and preferred.itemsize < result.itemsize:
        raise SpmdTypeError(
            f"spmd.lax.dot_general: preferred_element_type={preferred} is narrower than the "
            f"operands' {result}; pass a type at least as wide, or None."
        )
    wider = preferred if preferred.itemsize >= result.itemsize else result
    return preferred, wider


def dot_general(
    lhs: Any,
    rhs: Any,
    dimension_numbers: Any,
    precision: Any = None,
    preferred_element_type: Any = None,
    *,
    out_sharding: Any = None,
) -> Any:
    """The general contraction: ``dimension_numbers = ((lhs_contracting, rhs_contracting),
    (lhs_batch, rhs_batch))``; the result has the batch dimensions first (in lhs_batch's
    order), then lhs's free dimensions, then rhs's, as in JAX. ``precision`` is accepted and
    ignored (NumPy computes in full precision); ``preferred_element_type`` is the result's
    dtype, the products summed in it or the operands' dtype, whichever is wider.

    Example: ``dot_general(x, y, (((2,), (1,)), ((0,), (0,))))`` is a batched matmul."""
    lhs, rhs = asarray(lhs), asarray(rhs)
    contracting, batch = _dimension_numbers(dimension_numbers)
    _dot_checks(lhs, rhs, contracting, batch)
    result, compute = dot_dtypes(lhs, rhs, preferred_element_type)
    la, ra = aval_of(lhs), aval_of(rhs)
    if la.ndim + ra.ndim - len(contracting[1]) - len(batch[1]) > len(LETTERS):
        raise ShapeError(
            f"spmd.lax.dot_general: lhs {la} and rhs {ra} have more than {len(LETTERS)} "
            f"distinct dimensions; reshape them to fewer first."
        )
    left = LETTERS[: la.ndim]
    shared = dict(zip(contracting[1], contracting[0], strict=True))
    shared |= dict(zip(batch[1], batch[0], strict=True))
    fresh = iter(LETTERS[la.ndim :])
    right = "".join(left[shared[d]] if d in shared else next(fresh) for d in range(ra.ndim))
    taken = set(contracting[0]) | set(batch[0])
    output = "".join(left[d] for d in batch[0])
    output += "".join(c for d, c in enumerate(left) if d not in taken)
    output += "".join(c for d, c in enumerate(right) if d not in shared)
    operands = [x if aval_of(x).dtype == compute else astype(x, compute) for x in (lhs, rhs)]
    out = einsum_p.bind(*operands, subscripts=f"{left},{right}->{output}")
    if aval_of(out).dtype != result:
        out = astype(out, result)
    return _placed(out, out_sharding, "dot_general")


def _placed(x: Any, out_sharding: Any, fn: str) -> Any:
    return x if out_sharding is None else constrain(x, out_sharding, f"{check.where(fn)}(...)")


# --- shapes --------------------------------------------------------------------------------


def broadcast_in_dim(
    operand: Any,
    shape: Sequence[int],
    broadcast_dimensions: Sequence[int],
    out_sharding: Any = None,
) -> Any:
    """``operand`` broadcast to ``shape``, its dimension ``i`` becoming the result's
    ``broadcast_dimensions[i]`` (sizes equal, or 1 to stretch). Example:
    ``broadcast_in_dim(v, (2, 3), (1,))`` stacks a length-3 ``v`` twice."""
    operand = asarray(operand)
    aval = aval_of(operand)
    shape = check.sizes(shape, "broadcast_in_dim", "shape")
    dims = check.dimensions(broadcast_dimensions, "broadcast_in_dim", "broadcast_dimensions")
    if len(dims) != aval.ndim:
        raise ShapeError(
            f"spmd.lax.broadcast_in_dim: broadcast_dimensions={dims} has {len(dims)} entries "
            f"for operand {aval} of {aval.ndim} dimension(s); give one result dimension per "
            f"operand dimension."
        )
    check.in_range(dims, len(shape), "broadcast_in_dim", "broadcast_dimensions",
                   f"the result shape {shape}")  # fmt: skip
    for i, d in enumerate(dims):
        if aval.shape[i] not in (1, shape[d]):
            raise ShapeError(
                f"spmd.lax.broadcast_in_dim: operand {aval} dimension {i} has size "
                f"{aval.shape[i]} but goes to result dimension {d} of size {shape[d]} "
                f"(shape={shape}); each operand size must equal its result size or be 1."
            )
    order = sorted(range(len(dims)), key=dims.__getitem__)
    if order != list(range(len(dims))):
        operand = numpy_transpose(operand, order)
    kept = dict(zip(sorted(dims), (aval.shape[i] for i in order), strict=True))
    lined = tuple(kept.get(d, 1) for d in range(len(shape)))
    if lined != aval_of(operand).shape:
        operand = numpy_reshape(operand, lined)
    out = operand if lined == shape else broadcast_to(operand, shape)
    return _placed(out, out_sharding, "broadcast_in_dim")


def broadcast(operand: Any, sizes: Sequence[int], *, out_sharding: Any = None) -> Any:
    """``operand`` with leading dimensions ``sizes`` added. Example: ``broadcast(x, (4,))``
    has shape ``(4, *x.shape)``."""
    operand = asarray(operand)
    sizes = check.sizes(sizes, "broadcast", "sizes")
    ndim = aval_of(operand).ndim
    shape = (*sizes, *aval_of(operand).shape)
    dims = tuple(range(len(sizes), len(sizes) + ndim))
    return broadcast_in_dim(operand, shape, dims, out_sharding=out_sharding)


def reshape(
    operand: Any,
    new_sizes: Sequence[int],
    dimensions: Sequence[int] | None = None,
    *,
    out_sharding: Any = None,
) -> Any:
    """``operand`` in row-major order, read after transposing by ``dimensions`` when given,
    as ``new_sizes`` (no -1: every size given). Example: ``reshape(x, (2, 3), (1, 0))``."""
    operand = asarray(operand)
    aval = aval_of(operand)
    new_sizes = check.sizes(new_sizes, "reshape", "new_sizes")
    if int(np.prod(new_sizes, dtype=np.int64)) != aval.size:
        raise ShapeError(
            f"spmd.lax.reshape: cannot reshape {aval} (size {aval.size}) to new_sizes="
            f"{new_sizes} (size {int(np.prod(new_sizes, dtype=np.int64))}); the sizes must "
            f"multiply to {aval.size}."
        )
    if dimensions is not None:
        operand = transpose(operand, dimensions)
    out = operand if aval_of(operand).shape == new_sizes else numpy_reshape(operand, new_sizes)
    return _placed(out, out_sharding, "reshape")


def transpose(operand: Any, permutation: Sequence[int]) -> Any:
    """``operand`` with dimension ``permutation[i]`` as its dimension ``i``. Example:
    ``transpose(x, (1, 0))``."""
    operand = asarray(operand)
    aval = aval_of(operand)
    permutation = check.dimensions(permutation, "transpose", "permutation")
    if sorted(permutation) != list(range(aval.ndim)):
        raise ShapeError(
            f"spmd.lax.transpose: permutation={permutation} is not a permutation of the "
            f"{aval.ndim} dimensions of {aval}; give each of 0..{aval.ndim - 1} once."
        )
    if permutation == tuple(range(aval.ndim)):
        return operand
    return numpy_transpose(operand, permutation)


def squeeze(array: Any, dimensions: Sequence[int]) -> Any:
    """``array`` without its size-1 ``dimensions`` (negatives count from the end).
    Example: ``squeeze(x, (0,))`` drops a leading size-1 dimension."""
    array = asarray(array)
    aval = aval_of(array)
    dims = check.dimensions(dimensions, "squeeze", "dimensions")
    dims = check.canonical(dims, aval.ndim, "squeeze", "dimensions", str(aval))
    for d in dims:
        if aval.shape[d] != 1:
            raise ShapeError(
                f"spmd.lax.squeeze: dimension {d} of {aval} has size {aval.shape[d]}, not 1; "
                f"only size-1 dimensions can be squeezed (dimensions={tuple(dimensions)})."
            )
    return numpy_squeeze(array, dims) if dims else array


def expand_dims(array: Any, dimensions: Sequence[int]) -> Any:
    """``array`` with size-1 dimensions inserted at ``dimensions`` of the result (negatives
    count from the result's end). Example: ``expand_dims(x, (0,))``."""
    array = asarray(array)
    aval = aval_of(array)
    dims = check.dimensions(dimensions, "expand_dims", "dimensions")
    ndim = aval.ndim + len(dims)
    dims = check.canonical(dims, ndim, "expand_dims", "dimensions", f"the result's {ndim} dims")
    return numpy_expand_dims(array, dims) if dims else array


def concatenate(operands: Sequence[Any], dimension: int) -> Any:
    """``operands`` (one dtype and rank, equal sizes off ``dimension``) joined along
    ``dimension``. Example: ``concatenate([x, y], 0)``."""
    if not isinstance(operands, list | tuple) or not operands:
        raise SpmdTypeError(
            f"spmd.lax.concatenate: operands must be a non-empty list or tuple of arrays, "
            f"got {type(operands).__name__}; e.g. concatenate([x, y], 0)."
        )
    operands = [asarray(x) for x in operands]
    dimension = check.static_int(dimension, "concatenate", "dimension")
    first = aval_of(operands[0])
    for i, x in enumerate(operands):
        check.same_dtype("concatenate", operands[0], "operands[0]", x, f"operands[{i}]")
        aval = aval_of(x)
        if aval.ndim != first.ndim:
            raise ShapeError(
                f"spmd.lax.concatenate: operands[{i}] is {aval} of {aval.ndim} dimension(s) "
                f"but operands[0] is {first} of {first.ndim}; all need one rank."
            )
    if not 0 <= dimension < first.ndim:
        raise ShapeError(
            f"spmd.lax.concatenate: dimension={dimension} is outside [0, {first.ndim}) for "
            f"operands of {first.ndim} dimension(s) ({first}...)."
        )
    for i, x in enumerate(operands):
        aval = aval_of(x)
        for d in range(first.ndim):
            if d != dimension and aval.shape[d] != first.shape[d]:
                raise ShapeError(
                    f"spmd.lax.concatenate: operands[{i}] {aval} and operands[0] {first} "
                    f"differ in dimension {d} ({aval.shape[d]} vs {first.shape[d]}); only "
                    f"dimension {dimension}, the one joined along, may differ."
                )
    return operands[0] if len(operands) == 1 else numpy_concatenate(operands, axis=dimension)


def rev(operand: Any, dimensions: Sequence[int]) -> Any:
    """``operand`` reversed along each of ``dimensions``. Example: ``rev(x, (0,))``."""
    operand = asarray(operand)
    aval = aval_of(operand)
    dims = check.dimensions(dimensions, "rev", "dimensions")
    check.in_range(dims, aval.ndim, "rev", "dimensions", str(aval))
    return flip(operand, dims) if dims else operand
