"""spmd.scipy.linalg: the parts of jax.scipy.linalg that JAX code commonly calls, with JAX's
signatures and semantics, on spmd values.

The factorizations and solves are in spmd/scipy/linalg_solve.py and ``expm`` in
spmd/scipy/linalg_expm.py; here are ``inv``, ``det``, ``eigh``, ``svd``, ``qr``, ``schur``
and ``hessenberg`` (on spmd.numpy.linalg's and spmd.lax.linalg's decompositions) and the
constructors ``block_diag`` and ``toeplitz``. Every decomposition batches over leading
dimensions, which may stay sharded (each matrix is gathered on its device). Integers and
booleans are computed in float64. ``overwrite_*``, ``check_finite``, ``lwork``,
``lapack_driver`` and ``turbo`` are accepted and ignored, as in JAX.
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
from spmd.prims.linalg_eig import complex_dtype
from spmd.scipy.linalg_expm import expm
from spmd.scipy.linalg_solve import (
    cho_factor,
    cho_solve,
    cholesky,
    lu,
    lu_factor,
    lu_solve,
    solve,
    solve_triangular,
)


def _who(name: str) -> str:
    return f"spmd.scipy.linalg.{name}"


def inv(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    """``scipy.linalg.inv`` of each square matrix of ``a``; a singular one gives inf or NaN
    (SciPy raises). Example: ``spmd.scipy.linalg.inv(a)``."""
    return snp.linalg.inv(a)


def det(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    """``scipy.linalg.det`` of each square matrix of ``a`` (..., n, n). Example:
    ``spmd.scipy.linalg.det(a)``."""
    return snp.linalg.det(a)


def eigh(a: Any, b: Any = None, lower: bool = True, eigvals_only: bool = False,
         overwrite_a: bool = False, overwrite_b: bool = False, turbo: bool = True,
         eigvals: Any = None, type: int = 1, check_finite: bool = True) -> Any:  # fmt: skip
    """``scipy.linalg.eigh``: ``(w, v)`` (eigenvalues ascending, then eigenvectors) of each
    Hermitian matrix of ``a``, or w alone with ``eigvals_only``. As JAX's, it factors
    ``(a + aᴴ) / 2`` (reading the ``lower`` triangle of that). Only the standard problem:
    ``b``, ``eigvals`` and ``type`` other than None, None and 1 raise, as in JAX. Example:
    ``w, v = spmd.scipy.linalg.eigh(a)``."""
    who = _who("eigh")
    if b is not None or eigvals is not None or type != 1:
        raise SpmdValueError(
            f"{who}: only the standard problem (b=None, eigvals=None, type=1) is supported, "
            f"as in JAX; for a generalized one with b positive definite, take L = "
            f"cholesky(b, lower=True) and solve eigh(L⁻¹ a L⁻ᴴ), then v = L⁻ᴴ v'."
        )
    v, w = lax.linalg.eigh(matrices(a, who, "a"), lower=bool(lower))
    return w if eigvals_only else (w, v)


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False,
        check_finite: bool = True, lapack_driver: str = "gesdd") -> Any:  # fmt: skip
    """``scipy.linalg.svd``: ``(u, s, vh)`` with ``a = u @ diag(s) @ vh``, s descending; u
    (..., m, m) and vh (..., n, n) with ``full_matrices``, else (..., m, k) and (..., k, n);
    s alone without ``compute_uv``. Example: ``u, s, vh = spmd.scipy.linalg.svd(a)``."""
    a = matrices(a, _who("svd"), "a", square=False)
    return lax.linalg.svd(a, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))


def qr(a: Any, overwrite_a: bool = False, lwork: Any = None, mode: str = "full",
       pivoting: bool = False, check_finite: bool = True) -> tuple[Any, ...]:  # fmt: skip
    """``scipy.linalg.qr``: ``(q, r)`` with ``a = q @ r``, q (..., m, m) and r (..., m, n)
    (``mode='full'``), q (..., m, k) and r (..., k, n) (``'economic'``), or ``(r,)`` alone
    with the full r (``'r'``). ``pivoting`` and ``mode='raw'`` are not supported. Example:
    ``q, r = spmd.scipy.linalg.qr(a, mode='economic')``."""
    who = _who("qr")
    if mode not in ("full", "economic", "r"):
        raise SpmdValueError(f"{who}: mode={mode!r} must be 'full', 'economic' or 'r'.")
    if pivoting:
        raise SpmdValueError(
            f"{who}: pivoting=True (column-pivoted QR) is not supported; pass "
            f"pivoting=False, or sort the columns yourself before factoring."
        )
    q, r = lax.linalg.qr(matrices(a, who, "a", square=False), full_matrices=mode != "economic")
    return (r,) if mode == "r" else (q, r)


def schur(a: Any, output: str = "real") -> tuple[Any, Any]:
    """``scipy.linalg.schur``: ``(t, z)`` with ``a = z @ t @ zᴴ`` for each square matrix of
    ``a``, z unitary; t upper triangular (``output='complex'``, or complex a) or, for real a
    with ``output='real'``, quasi-triangular with a 2x2 block per complex eigenvalue pair.
    Not differentiable. Example: ``t, z = spmd.scipy.linalg.schur(a, output='complex')``."""
    who = _who("schur")
    if output not in ("real", "complex"):
        raise SpmdValueError(f"{who}: output={output!r} must be 'real' or 'complex'.")
    a = matrices(a, who, "a")
    if output == "complex":
        a = snp.astype(a, complex_dtype(aval_of(a).dtype))
    t, z = lax.linalg.schur(a)
    return t, z


def hessenberg(a: Any, *, calc_q: bool = False, overwrite_a: bool = False,
               check_finite: bool = True) -> Any:  # fmt: skip
    """``scipy.linalg.hessenberg``: the upper Hessenberg form h of each square matrix of
    ``a`` (zero below the first subdiagonal), and with ``calc_q=True`` also the unitary q
    with ``a = q @ h @ qᴴ`` (LAPACK's gehrd and orghr). Not differentiable. Example: ``h, q
    = spmd.scipy.linalg.hessenberg(a, calc_q=True)``."""
    a = matrices(a, _who("hessenberg"), "a")
    aval = aval_of(a)
    n = aval.shape[-1]
    if n == 0:
        return (snp.zeros_like(a), snp.zeros_like(a)) if calc_q else snp.zeros_like(a)
    packed, taus = lax.linalg.hessenberg(a)
    h = snp.triu(packed, -1)
    if not calc_q:
        return h
    inner = lax.linalg.householder_product(packed[..., 1:, :-1], taus)
    widths = [(0, 0)] * (aval.ndim - 2) + [(1, 0), (1, 0)]
    corner = np.zeros((n, n), aval.dtype)
    corner[0, 0] = 1
    return h, snp.pad(inner, widths) + corner


def _at_most_2d(who: str, k: int, x: Any) -> Any:
    if isinstance(x, (bool, int, float, complex, list, tuple)):
        x = host_array(x, f"{who}: argument {k}")
    x = snp.asarray(x)
    shape = aval_of(x).shape
    if len(shape) > 2:
        raise ShapeError(
            f"{who}: argument {k} has shape {shape}, but the blocks may have at most two "
            f"dimensions (a 0-d or 1-d one is one row); reshape it to a matrix."
        )
    return snp.reshape(x, (1,) * (2 - len(shape)) + shape)


def block_diag(*arrs: Any) -> Any:
    """``scipy.linalg.block_diag``: the matrix with ``arrs`` (each of at most two dimensions;
    a scalar or vector is one row) along its diagonal and zeros elsewhere, in their common
    dtype; no arrays give a (1, 0) float64 matrix. Example: ``block_diag(a, b, c)``."""
    who = _who("block_diag")
    blocks = [_at_most_2d(who, k, x) for k, x in enumerate(arrs)]
    if not blocks:
        return snp.zeros((1, 0))
    dtype = np.result_type(*(aval_of(b).dtype for b in blocks))
    widths = [aval_of(b).shape[1] for b in blocks]
    total, rows, start = sum(widths), [], 0
    for block, width in zip(blocks, widths, strict=True):
        height = aval_of(block).shape[0]
        left = snp.zeros((height, start), dtype)
        right = snp.zeros((height, total - start - width), dtype)
        rows.append(snp.concatenate([left, snp.astype(block, dtype), right], axis=1))
        start += width
    return snp.concatenate(rows, axis=0)


def toeplitz(c: Any, r: Any = None) -> Any:
    """``scipy.linalg.toeplitz``: the matrix (..., m, n) with first column ``c`` (..., m) and
    first row ``r`` (..., n) (its first element is c's; default: ``conj(c)``), constant
    along each diagonal; leading dimensions are a batch and broadcast, a scalar is one
    element. Example: ``toeplitz([1, 2, 3], [1, 4, 5, 6])``."""
    who = _who("toeplitz")
    c = _at_least_1d(who, "c", c)
    r = (snp.conjugate(c) if aval_of(c).dtype.kind == "c" else c) if r is None else r
    r = _at_least_1d(who, "r", r)
    (*c_batch, m), (*r_batch, n) = aval_of(c).shape, aval_of(r).shape
    try:
        batch = np.broadcast_shapes(tuple(c_batch), tuple(r_batch))
    except ValueError:
        raise ShapeError(
            f"{who}: the leading (batch) dimensions of c {aval_of(c)} and r {aval_of(r)} do "
            f"not broadcast together."
        ) from None
    dtype = np.result_type(aval_of(c).dtype, aval_of(r).dtype)
    if m == 0 or n == 0:
        return snp.zeros((*batch, m, n), dtype)
    c = snp.broadcast_to(snp.astype(c, dtype), (*batch, m))
    r = snp.broadcast_to(snp.astype(r, dtype), (*batch, n))
    values = snp.concatenate([snp.flip(c, axis=-1), r[..., 1:]], axis=-1)
    positions = (m - 1) - np.arange(m)[:, None] + np.arange(n)[None, :]
    return snp.take(values, positions, axis=-1)


def _at_least_1d(who: str, name: str, x: Any) -> Any:
    if isinstance(x, (bool, int, float, complex, list, tuple)):
        x = host_array(x, f"{who}: {name}")
    x = snp.asarray(x)
    return snp.reshape(x, (1,)) if aval_of(x).ndim == 0 else x


__all__ = ["block_diag", "cho_factor", "cho_solve", "cholesky", "det", "eigh", "expm",
           "hessenberg", "inv", "lu", "lu_factor", "lu_solve", "qr", "schur", "solve",
           "solve_triangular", "svd", "toeplitz"]  # fmt: skip
