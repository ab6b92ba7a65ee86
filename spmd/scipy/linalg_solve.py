"""jax.scipy.linalg's factorizations and the solves that use them: ``cholesky``,
``cho_factor``/``cho_solve``, ``lu``, ``lu_factor``/``lu_solve``, ``solve_triangular`` and
``solve`` (with ``assume_a``), composed from spmd.lax.linalg's cholesky, lu and
triangular_solve, so that derivatives, vmap and sharding come with them.

A right-hand side ``b`` is a vector when it has one dimension (n,), and a stack of matrices
(..., n, k) otherwise, whose batch dimensions broadcast against the factor's. (JAX still reads
b of one dimension fewer than the factor as a batch of vectors, with a FutureWarning that this
will change to the reading here; pass ``b[..., None]`` and take ``[..., 0]`` for that.)
``overwrite_*``, ``check_finite``, ``lwork`` and ``debug`` are accepted and ignored, as in JAX.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import spmd.lax as lax
import spmd.numpy as snp
from spmd.core.aval import host_array
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdValueError
from spmd.numpy.linalg_decompositions import matrices


def _who(name: str) -> str:
    return f"spmd.scipy.linalg.{name}"


def _adjoint(x: Any) -> Any:
    x = snp.swapaxes(x, -1, -2)
    return snp.conjugate(x) if aval_of(x).dtype.kind == "c" else x


def cholesky(a: Any, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """``scipy.linalg.cholesky``: the upper factor U (``a = Uᴴ U``) of each Hermitian
    positive-definite matrix of ``a`` (..., n, n), or the lower L (``a = L Lᴴ``) with
    ``lower=True``; only that triangle of a is read. A matrix that is not positive definite
    gives NaN. Example: ``spmd.scipy.linalg.cholesky(a, lower=True)``."""
    a = matrices(a, _who("cholesky"), "a")
    factor = lax.linalg.cholesky(a if lower else _adjoint(a), symmetrize_input=False)
    return factor if lower else _adjoint(factor)


def cho_factor(a: Any, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """``scipy.linalg.cho_factor``: ``(c, lower)`` for ``cho_solve``, c the Cholesky factor
    (its other triangle zero, where SciPy leaves whatever a held there). Example: ``c =
    cho_factor(a); x = cho_solve(c, b)``."""
    return cholesky(a, lower=lower), bool(lower)


def _rhs(who: str, factor: Any, b: Any) -> tuple[Any, Any, bool]:
    """``(factor, b)`` in one inexact dtype, broadcast to one batch shape, b as (..., n, k)
    (a vector as one column), and whether b was a vector."""
    if isinstance(b, (bool, int, float, complex, list, tuple)):
        b = host_array(b, f"{who}: b")
    b = snp.asarray(b)
    vector = aval_of(b).ndim == 1
    b = matrices(snp.reshape(b, (-1, 1)) if vector else b, who, "b", square=False)
    dtype = np.result_type(aval_of(factor).dtype, aval_of(b).dtype)
    factor, b = snp.astype(factor, dtype), snp.astype(b, dtype)
    f_aval, b_aval = aval_of(factor), aval_of(b)
    n = f_aval.shape[-1]
    if b_aval.shape[-2] != n:
        raise ShapeError(
            f"{who}: the factor is {f_aval} and b is {b_aval}; b's "
            f"{'length' if vector else 'rows'} must be n = {n}. (For a batch of vectors "
            f"(..., n), pass b[..., None] and take [..., 0] of the result.)"
        )
    try:
        batch = np.broadcast_shapes(f_aval.shape[:-2], b_aval.shape[:-2])
    except ValueError:
        raise ShapeError(
            f"{who}: the batch dimensions of the factor {f_aval} and b {b_aval} do not "
            f"broadcast together; each must match or be 1, counting from the right."
        ) from None
    factor = snp.broadcast_to(factor, (*batch, n, n))
    b = snp.broadcast_to(b, (*batch, *b_aval.shape[-2:]))
    return factor, b, vector


def _solution(x: Any, vector: bool) -> Any:
    return x[..., 0] if vector else x


def cho_solve(c_and_lower: tuple[Any, bool], b: Any, overwrite_b: bool = False,
              check_finite: bool = True) -> Any:  # fmt: skip
    """``scipy.linalg.cho_solve``: x with ``a x = b``, from ``(c, lower) = cho_factor(a)``;
    b is (n,) or (..., n, k). Example: ``cho_solve(cho_factor(a), b)``."""
    who = _who("cho_solve")
    c, lower = c_and_lower
    c = matrices(c, who, "c")
    c, b, vector = _rhs(who, c, b)
    solve = lax.linalg.triangular_solve
    inner = solve(c, b, left_side=True, lower=lower, transpose_a=not lower, conjugate_a=not lower)
    x = solve(c, inner, left_side=True, lower=lower, transpose_a=lower, conjugate_a=lower)
    return _solution(x, vector)


# trans -> (transpose_a, conjugate_a)
_TRANS = {0: (False, False), "N": (False, False), 1: (True, False), "T": (True, False),
          2: (True, True), "C": (True, True)}  # fmt: skip


def solve_triangular(
    a: Any,
    b: Any,
    trans: int | str = 0,
    lower: bool = False,
    unit_diagonal: bool = False,
    overwrite_b: bool = False,
    debug: Any = None,
    check_finite: bool = True,
) -> Any:
    """``scipy.linalg.solve_triangular``: x with ``op(a) x = b`` for the ``lower`` (or upper)
    triangle of a (diagonal taken as ones with ``unit_diagonal``); ``trans`` 0/'N' (a), 1/'T'
    (aᵀ) or 2/'C' (aᴴ). b is (n,) or (..., n, k). Example: ``solve_triangular(l, b,
    lower=True)``."""
    who = _who("solve_triangular")
    if isinstance(trans, bool) or not isinstance(trans, int | str) or trans not in _TRANS:
        raise SpmdValueError(f"{who}: trans={trans!r} must be 0, 1, 2, 'N', 'T' or 'C'.")
    transpose_a, conjugate_a = _TRANS[trans]
    a, b, vector = _rhs(who, matrices(a, who, "a"), b)
    x = lax.linalg.triangular_solve(
        a, b, left_side=True, lower=bool(lower), transpose_a=transpose_a,
        conjugate_a=conjugate_a, unit_diagonal=bool(unit_diagonal),
    )  # fmt: skip
    return _solution(x, vector)


def lu_factor(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> tuple[Any, Any]:
    """``scipy.linalg.lu_factor``: ``(lu, piv)`` of each matrix of ``a`` (..., m, n): L (unit
    diagonal, below) and U (on and above) in one array, and the int32 row swaps (row i was
    swapped with piv[i]). Example: ``lu_solve(lu_factor(a), b)``."""
    lu_, pivots, _ = lax.linalg.lu(matrices(a, _who("lu_factor"), "a", square=False))
    return lu_, pivots


def lu_solve(lu_and_piv: tuple[Any, Any], b: Any, trans: int = 0, overwrite_b: bool = False,
             check_finite: bool = True) -> Any:  # fmt: skip
    """``scipy.linalg.lu_solve``: x with ``a x = b`` (``trans`` 0), ``aᵀ x = b`` (1) or
    ``aᴴ x = b`` (2), from ``(lu, piv) = lu_factor(a)`` of a square a; b is (n,) or (..., n,
    k). Example: ``lu_solve(lu_factor(a), b, trans=1)``."""
    who = _who("lu_solve")
    lu_, pivots = lu_and_piv
    if isinstance(trans, bool) or trans not in (0, 1, 2):
        raise SpmdValueError(f"{who}: trans={trans!r} must be 0, 1 or 2.")
    lu_ = matrices(lu_, who, "lu")
    n = aval_of(lu_).shape[-1]
    permutation = lax.linalg.lu_pivots_to_permutation(pivots, n)
    lu_, b, vector = _rhs(who, lu_, b)
    batch = aval_of(b).shape[:-2]
    rows = snp.broadcast_to(snp.expand_dims(permutation, -1), (*batch, n, 1))
    solve = lax.linalg.triangular_solve
    if trans == 0:  # a = Pᵀ L U: x = U⁻¹ L⁻¹ b[perm]
        permuted = snp.take_along_axis(b, rows, axis=-2)
        inner = solve(lu_, permuted, left_side=True, lower=True, unit_diagonal=True)
        return _solution(solve(lu_, inner, left_side=True, lower=False), vector)
    conjugate = trans == 2  # aᵀ = Uᵀ Lᵀ P: x[perm] = L⁻ᵀ U⁻ᵀ b
    flags = {"left_side": True, "transpose_a": True, "conjugate_a": conjugate}
    inner = solve(lu_, b, lower=False, **flags)
    permuted = solve(lu_, inner, lower=True, unit_diagonal=True, **flags)
    back = snp.argsort(rows, axis=-2)
    return _solution(snp.take_along_axis(permuted, back, axis=-2), vector)


def lu(a: Any, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """``scipy.linalg.lu``: ``(p, l, u)`` with ``a = p @ l @ u`` for each matrix of ``a``
    (..., m, n): p a permutation matrix (real), l (..., m, k) unit lower triangular, u (..., k,
    n) upper triangular, k = min(m, n); ``permute_l=True`` gives ``(p @ l, u)``. Example:
    ``p, l, u = spmd.scipy.linalg.lu(a)``."""
    a = matrices(a, _who("lu"), "a", square=False)
    aval = aval_of(a)
    m, n = aval.shape[-2:]
    k = min(m, n)
    packed, _, permutation = lax.linalg.lu(a)
    real = np.empty(0, aval.dtype).real.dtype
    p = snp.astype(snp.equal(snp.expand_dims(permutation, -2), np.arange(m)[:, None]), real)
    lower = snp.tril(packed, -1)[..., :, :k] + np.eye(m, k, dtype=aval.dtype)
    upper = snp.triu(packed)[..., :k, :]
    if permute_l:
        return snp.matmul(snp.astype(p, aval.dtype), lower), upper
    return p, lower, upper


_ASSUME_A = ("gen", "sym", "her", "pos")


def solve(a: Any, b: Any, lower: bool = False, overwrite_a: bool = False,
          overwrite_b: bool = False, debug: bool = False, check_finite: bool = True,
          assume_a: str = "gen") -> Any:  # fmt: skip
    """``scipy.linalg.solve``: x with ``a x = b``; b is (n,) or (..., n, k). ``assume_a``
    'gen', 'sym' or 'her' solve with the whole of a by LU, as JAX's do (SciPy's 'sym' and
    'her' read one triangle: give a symmetric a); 'pos' factors the ``lower`` (or upper)
    triangle by Cholesky. Example: ``solve(a, b, assume_a='pos')``."""
    who = _who("solve")
    if assume_a not in _ASSUME_A:
        raise SpmdValueError(
            f"{who}: assume_a={assume_a!r} must be one of {', '.join(map(repr, _ASSUME_A))}."
        )
    if assume_a != "pos":
        return snp.linalg.solve(a, b)
    return cho_solve(cho_factor(a, lower=lower), b)


__all__ = ["cho_factor", "cho_solve", "cholesky", "lu", "lu_factor", "lu_solve", "solve",
           "solve_triangular"]  # fmt: skip
