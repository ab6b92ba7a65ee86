"""spmd.lax.linalg: JAX's ``jax.lax.linalg`` decompositions and solves on spmd values.

``cholesky`` and ``triangular_solve`` bind the primitives of spmd/prims/linalg.py, which
act on the last two dimensions and batch over the leading ones (these may stay sharded;
the matrices themselves are gathered on each device).
"""

from __future__ import annotations

from typing import Any

from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError
from spmd.numpy.linalg_decompositions import hermitian_part, matrices
from spmd.prims.linalg import cholesky_p, triangular_solve_p


def cholesky(x: Any, *, symmetrize_input: bool = True) -> Any:
    """``jax.lax.linalg.cholesky``: the lower Cholesky factor of each matrix of ``x``
    (..., n, n), of ``(x + xᴴ) / 2`` unless ``symmetrize_input=False`` (then x's lower
    triangle alone is read). A matrix that is not positive definite gives NaN.
    Example: ``spmd.lax.linalg.cholesky(a)``."""
    x = matrices(x, "spmd.lax.linalg.cholesky", "x")
    return cholesky_p.bind(hermitian_part(x) if symmetrize_input else x)


def triangular_solve(
    a: Any,
    b: Any,
    *,
    left_side: bool = False,
    lower: bool = False,
    transpose_a: bool = False,
    conjugate_a: bool = False,
    unit_diagonal: bool = False,
) -> Any:
    """``jax.lax.linalg.triangular_solve``: x with ``op(a) @ x = b`` (``left_side=True``;
    b is (..., m, n)) or ``x @ op(a) = b`` (b is (..., n, m)), where a is (..., m, m) and
    ``op`` transposes (``transpose_a``) and/or conjugates (``conjugate_a``) it. Only a's
    ``lower`` (or upper) triangle is read, its diagonal taken as ones with
    ``unit_diagonal``. a and b have the same leading dimensions and dtype.
    Example: ``triangular_solve(l, b, left_side=True, lower=True)``."""
    who = "spmd.lax.linalg.triangular_solve"
    a = matrices(a, who, "a")
    b = matrices(b, who, "b", square=False)
    a_aval, b_aval = aval_of(a), aval_of(b)
    if a_aval.dtype != b_aval.dtype:
        raise SpmdTypeError(
            f"{who}: a is {a_aval} and b is {b_aval}; they must have one dtype, as in JAX "
            f"(cast one of them)."
        )
    m = a_aval.shape[-1]
    solved = b_aval.shape[-2] if left_side else b_aval.shape[-1]
    if a_aval.shape[:-2] != b_aval.shape[:-2] or solved != m:
        want = f"(..., {m}, n)" if left_side else f"(..., n, {m})"
        raise ShapeError(
            f"{who}: a has shape {a_aval.shape}, so with left_side={left_side} b must have "
            f"shape {want} with the leading dimensions {a_aval.shape[:-2]}, but b has shape "
            f"{b_aval.shape}; leading dimensions do not broadcast, and b's "
            f"{'rows' if left_side else 'columns'} must number a's {m}."
        )
    return triangular_solve_p.bind(
        a,
        b,
        left_side=bool(left_side),
        lower=bool(lower),
        transpose_a=bool(transpose_a),
        conjugate_a=bool(conjugate_a),
        unit_diagonal=bool(unit_diagonal),
    )


__all__ = ["cholesky", "triangular_solve"]
