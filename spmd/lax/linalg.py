"""spmd.lax.linalg: JAX's ``jax.lax.linalg`` decompositions and solves on spmd values.

``cholesky`` and ``triangular_solve`` bind the primitives of spmd/prims/linalg.py; ``qr``,
``svd`` and ``eigh`` the LAPACK primitives of spmd/prims/linalg_lapack.py, in JAX's
signatures and result orders (eigh gives eigenvectors first); ``tridiagonal_solve`` builds
the dense matrix and solves it; ``lu`` and ``lu_pivots_to_permutation`` are compositions of
spmd.numpy (spmd/lax/linalg_lu.py); ``eig``, ``schur``, ``hessenberg`` and
``householder_product`` are in spmd/lax/linalg_eig.py. All act on the last two dimensions and
batch over the leading ones (these may stay sharded; the matrices themselves are gathered on
each device). Integers and booleans are factored in float64, as spmd.numpy.linalg does.

Not here: QR with column pivoting, and ``tridiagonal_solve``'s ``perturb_singular``.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError, SpmdValueError
from spmd.lax.linalg_eig import eig, hessenberg, householder_product, schur
from spmd.lax.linalg_lu import lu, lu_pivots_to_permutation
from spmd.numpy import astype, expand_dims, where
from spmd.numpy.linalg_decompositions import hermitian_part, matrices
from spmd.prims.linalg import cholesky_p, triangular_solve_p
from spmd.prims.linalg_lapack import eigh_p, qr_p, solve_p, svd_p


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


def qr(
    x: Any, *, pivoting: bool = False, full_matrices: bool = True, use_magma: Any = None
) -> tuple[Any, Any]:
    """``jax.lax.linalg.qr``: ``(q, r)`` with ``x = q @ r`` for each matrix of ``x`` (..., m,
    n), q unitary and r upper triangular: q (..., m, m) and r (..., m, n) with
    ``full_matrices`` (the default), else q (..., m, k) and r (..., k, n), k = min(m, n).
    ``use_magma`` is accepted and ignored (it picks a GPU library in JAX); ``pivoting=True``
    is not supported. Example: ``q, r = spmd.lax.linalg.qr(a, full_matrices=False)``."""
    who = "spmd.lax.linalg.qr"
    if pivoting:
        raise SpmdValueError(
            f"{who}: pivoting=True (column-pivoted QR) is not supported; call it with "
            f"pivoting=False, or sort the columns yourself before factoring."
        )
    x = matrices(x, who, "x", square=False)
    q, r = qr_p.bind(x, mode="complete" if full_matrices else "reduced")
    return q, r


def _subset(who: str, subset_by_index: Any, count: int) -> tuple[int, int] | None:
    """``subset_by_index`` as ``(start, end)`` with ``0 <= start <= end <= count``, or None
    for all ``count`` values."""
    if subset_by_index is None:
        return None
    try:
        start, end = (operator.index(i) for i in subset_by_index)
    except (TypeError, ValueError):
        raise SpmdTypeError(
            f"{who}: subset_by_index={subset_by_index!r} must be None or a pair of ints "
            f"(start, end)."
        ) from None
    if not 0 <= start <= end <= count:
        raise SpmdValueError(
            f"{who}: subset_by_index=({start}, {end}) must satisfy 0 <= start <= end <= "
            f"{count} (the number of values the matrices have)."
        )
    return start, end


def svd(
    x: Any,
    *,
    full_matrices: bool = True,
    compute_uv: bool = True,
    subset_by_index: tuple[int, int] | None = None,
    algorithm: Any = None,
) -> Any:
    """``jax.lax.linalg.svd``: ``(u, s, vh)`` with ``x = u @ diag(s) @ vh`` for each matrix of
    ``x`` (..., m, n), s (real, descending) of length k = min(m, n); u (..., m, m) and vh
    (..., n, n) with ``full_matrices``, else (..., m, k) and (..., k, n). ``compute_uv=False``
    gives s alone. ``subset_by_index=(start, end)`` keeps singular values start to end (and
    their vectors; not with ``full_matrices``). ``algorithm`` must be None (LAPACK's).
    Example: ``u, s, vh = spmd.lax.linalg.svd(a, full_matrices=False)``."""
    who = "spmd.lax.linalg.svd"
    if algorithm is not None:
        raise SpmdValueError(
            f"{who}: algorithm={algorithm!r} is not supported; spmd computes every SVD with "
            f"LAPACK's routine, so pass algorithm=None."
        )
    x = matrices(x, who, "x", square=False)
    k = min(aval_of(x).shape[-2:])
    subset = _subset(who, subset_by_index, k)
    if subset is not None and full_matrices and subset != (0, k):
        raise SpmdValueError(
            f"{who}: subset_by_index={subset} keeps some singular vectors, which full "
            f"matrices cannot hold; pass full_matrices=False with it (as JAX requires)."
        )
    start, end = subset or (0, k)
    if not compute_uv:
        return svd_p.bind(x, full_matrices=False)[1][..., start:end]
    u, s, vh = svd_p.bind(x, full_matrices=bool(full_matrices))
    if subset is None:
        return u, s, vh
    return u[..., :, start:end], s[..., start:end], vh[..., start:end, :]


def eigh(
    x: Any,
    *,
    lower: bool = True,
    symmetrize_input: bool = True,
    sort_eigenvalues: bool = True,
    subset_by_index: tuple[int, int] | None = None,
) -> tuple[Any, Any]:
    """``jax.lax.linalg.eigh``: ``(v, w)``, eigenvectors FIRST (v[..., :, i] belongs to
    w[..., i]), of each Hermitian matrix of ``x`` (..., n, n); w is real and ascending
    (``sort_eigenvalues=False`` allows any order; they come sorted). ``symmetrize_input``
    factors ``(x + xᴴ) / 2``; without it only the ``lower`` (or upper) triangle is read.
    ``subset_by_index=(start, end)`` keeps eigenvalues start to end of the ascending order.
    Example: ``v, w = spmd.lax.linalg.eigh(a)``."""
    who = "spmd.lax.linalg.eigh"
    x = matrices(x, who, "x")
    subset = _subset(who, subset_by_index, aval_of(x).shape[-1])
    if symmetrize_input:
        x = hermitian_part(x)
    w, v = eigh_p.bind(x, lower=bool(lower))
    if subset is None:
        return v, w
    start, end = subset
    return v[..., :, start:end], w[..., start:end]


def _tridiagonal_operands(dl: Any, d: Any, du: Any, b: Any) -> tuple[Any, Any, Any, Any]:
    who = "spmd.lax.linalg.tridiagonal_solve"
    avals = [aval_of(v) for v in (dl, d, du, b)]
    described = ", ".join(f"{n} {a}" for n, a in zip(("dl", "d", "du", "b"), avals, strict=True))
    if len({a.dtype for a in avals}) != 1:
        raise SpmdTypeError(
            f"{who}: {described}; the four operands must have one dtype, as in JAX (cast "
            f"them to one)."
        )
    diagonal = avals[1].shape
    if not diagonal or avals[0].shape != diagonal or avals[2].shape != diagonal:
        raise ShapeError(
            f"{who}: {described}; dl, d and du must have one shape (..., m) with at least one "
            f"dimension (the diagonals of each m x m matrix)."
        )
    if avals[3].shape[:-1] != diagonal:
        raise ShapeError(
            f"{who}: {described}; b must have shape (..., m, n) = {(*diagonal, 'n')}: the "
            f"diagonals' shape and then its columns (reshape one right-hand side to "
            f"(..., m, 1))."
        )
    dtype = avals[3].dtype
    if dtype.kind in "biu":
        return tuple(astype(v, np.float64) for v in (dl, d, du, b))
    if dtype.kind not in "fc" or dtype.itemsize < 4:
        raise SpmdTypeError(
            f"{who}: {described}, but the solve computes in float32, float64, complex64 or "
            f"complex128; cast them first."
        )
    return dl, d, du, b


def tridiagonal_solve(dl: Any, d: Any, du: Any, b: Any, *, perturb_singular: bool = False) -> Any:
    """``jax.lax.linalg.tridiagonal_solve``: x with ``A @ x = b`` for each tridiagonal A (m,
    m) given by its diagonals ``dl`` (A[i, i-1] = dl[i], dl[0] unused), ``d`` (A[i, i]) and
    ``du`` (A[i, i+1] = du[i], du[m-1] unused), each (..., m); b is (..., m, n). The dense
    A is built and solved with partial pivoting, as LAPACK's gtsv pivots (O(m³) work per
    matrix); a singular A gives inf or NaN. ``perturb_singular=True`` is not supported.
    Example: ``tridiagonal_solve(dl, d, du, b)``."""
    if perturb_singular:
        raise SpmdValueError(
            "spmd.lax.linalg.tridiagonal_solve: perturb_singular=True is not supported; a "
            "singular system gives inf or NaN. Pass perturb_singular=False."
        )
    dl, d, du, b = _tridiagonal_operands(dl, d, du, b)
    m = aval_of(d).shape[-1]
    rows, cols = np.arange(m)[:, None], np.arange(m)[None, :]
    matrix = where(
        rows == cols,
        expand_dims(d, -1),
        where(
            rows == cols + 1, expand_dims(dl, -1), where(rows + 1 == cols, expand_dims(du, -1), 0)
        ),
    )
    return solve_p.bind(matrix, b)


__all__ = [
    "cholesky",
    "eig",
    "eigh",
    "hessenberg",
    "householder_product",
    "lu",
    "lu_pivots_to_permutation",
    "qr",
    "schur",
    "svd",
    "triangular_solve",
    "tridiagonal_solve",
]
