"""``jax.lax.linalg.lu`` and ``lu_pivots_to_permutation`` as compositions of spmd.numpy.

``lu`` is Gaussian elimination with partial pivoting, LAPACK's ``getrf`` step by step: one
step per column of the ``min(m, n)``, unrolled (the column index is static, so every mask is
a NumPy constant), each a pivot search (``argmax`` of the magnitudes below the diagonal; for
complex numbers ``|re| + |im|``, as LAPACK's ``izamax``), a row swap (masks and a sum of one
entry: a gather would give up a split batch), a scaling of the column below the pivot and a
rank-one update of the trailing block. Every step acts on whole stacks of matrices, so batch
dimensions may stay sharded, and jvp, transposes and batching come from the operations used:
the derivative is that of the factors with the pivots held fixed, as JAX's. A zero pivot
leaves its column unscaled, as LAPACK does.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError, SpmdValueError
from spmd.numpy import abs as snp_abs
from spmd.numpy import (
    add,
    arange,
    argmax,
    asarray,
    astype,
    broadcast_to,
    equal,
    expand_dims,
    imag,
    multiply,
    not_equal,
    real,
    stack,
    subtract,
    true_divide,
    where,
    zeros,
)
from spmd.numpy import sum as sum_of
from spmd.numpy.linalg_decompositions import matrices


def lu(x: Any) -> tuple[Any, Any, Any]:
    """``jax.lax.linalg.lu``: ``(lu, pivots, permutation)`` with ``P x = L U`` for each
    matrix of ``x`` (..., m, n). ``lu`` holds U in its upper triangle and L (unit diagonal,
    not stored) below it; ``pivots`` (int32, (..., min(m, n))) are the row swaps, step k
    swapping rows k and ``pivots[k]``; ``permutation`` (int32, (..., m)) lists the rows of x
    in the order ``x[permutation] = L U``. Integers and booleans are factored in float64.
    Example: ``lu, pivots, perm = spmd.lax.linalg.lu(a)``."""
    a = matrices(x, "spmd.lax.linalg.lu", "x", square=False)
    aval = aval_of(a)
    *batch, m, n = aval.shape
    rows, cols = np.arange(m), np.arange(n)
    permutation = broadcast_to(arange(m, dtype=np.int32), (*batch, m))
    pivots = []
    for k in range(min(m, n)):
        column = a[..., :, k]
        if aval.dtype.kind == "c":
            magnitude = add(snp_abs(real(column)), snp_abs(imag(column)))
        else:
            magnitude = snp_abs(column)
        pivot_row = argmax(where(rows >= k, magnitude, -np.inf), axis=-1)
        pivots.append(astype(pivot_row, np.int32))
        picked = equal(rows, expand_dims(pivot_row, -1))  # (..., m): the pivot's row
        a = _swap_rows(a, k, expand_dims(picked, -1), axis=-2)
        permutation = _swap_rows(permutation, k, picked, axis=-1)
        pivot = expand_dims(a[..., k, k], -1)
        usable = not_equal(pivot, 0)
        column = a[..., :, k]
        scaled = where(rows > k, true_divide(column, where(usable, pivot, 1)), column)
        column = where(usable, scaled, column)
        a = where(cols == k, expand_dims(column, -1), a)
        update = multiply(expand_dims(column, -1), expand_dims(a[..., k, :], -2))
        trailing = (rows[:, None] > k) & (cols[None, :] > k)
        a = subtract(a, where(trailing, update, 0))
    found = stack(pivots, axis=-1) if pivots else zeros((*batch, 0), dtype=np.int32)
    return a, found, permutation


def _swap_rows(x: Any, k: int, picked: Any, axis: int) -> Any:
    """``x`` with its entry k along ``axis`` exchanged for the one ``picked`` marks: masks and
    a sum of one entry (a gather would give up the batch's sharding)."""
    index = [slice(None)] * aval_of(x).ndim
    index[axis] = slice(k, k + 1)
    at_k = x[tuple(index)]
    chosen = sum_of(where(picked, x, 0), axis=axis, keepdims=True, dtype=aval_of(x).dtype)
    position = np.arange(aval_of(x).shape[axis]).reshape((-1,) + (1,) * (-axis - 1))
    return where(position == k, chosen, where(picked, at_k, x))


def _permutation_size(permutation_size: Any, k: int) -> int:
    who = "spmd.lax.linalg.lu_pivots_to_permutation"
    try:
        size = operator.index(permutation_size)
    except TypeError:
        raise SpmdTypeError(
            f"{who}: permutation_size must be a Python int (the length of the permutation), "
            f"not {type(permutation_size).__name__}."
        ) from None
    if size < k:
        raise SpmdValueError(
            f"{who}: permutation_size={size} is smaller than the {k} pivots; it must be at "
            f"least the pivots' last dimension (the matrix's row count m)."
        )
    return size


def lu_pivots_to_permutation(pivots: Any, permutation_size: int) -> Any:
    """``jax.lax.linalg.lu_pivots_to_permutation``: the permutation (int32, (...,
    permutation_size)) that the row swaps ``pivots`` (integers, (..., k); swap k exchanges
    rows k and ``pivots[..., k]``, each in [0, permutation_size)) make of
    ``arange(permutation_size)``. Example: ``lu_pivots_to_permutation(pivots, 4)``."""
    who = "spmd.lax.linalg.lu_pivots_to_permutation"
    pivots = asarray(pivots)
    aval = aval_of(pivots)
    if aval.ndim < 1:
        raise ShapeError(
            f"{who}: pivots is {aval}, but it must have at least one dimension (..., k): one "
            f"row swap per step; reshape a single pivot to (1,)."
        )
    if aval.dtype.kind not in "iu":
        raise SpmdTypeError(
            f"{who}: pivots is {aval}, but row swaps are integers (JAX's are int32); cast "
            f"them, e.g. pivots.astype(np.int32)."
        )
    *batch, k = aval.shape
    size = _permutation_size(permutation_size, k)
    positions = np.arange(size)
    permutation = broadcast_to(arange(size, dtype=np.int32), (*batch, size))
    for i in range(k):
        picked = equal(positions, expand_dims(pivots[..., i], -1))
        permutation = _swap_rows(permutation, i, picked, axis=-1)
    return permutation


__all__ = ["lu", "lu_pivots_to_permutation"]
