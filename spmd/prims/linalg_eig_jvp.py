"""The derivative of the eig primitive (spmd/prims/linalg_eig.py), as JAX's eig_jvp_rule
defines it, written with primitives on stacks of matrices.

With ``A = V diag(w) V⁻¹`` and ``P = V⁻¹ dA V``, the eigenvalues move by ``dw = diag(P)``
(first-order perturbation theory; any eigenvector scaling gives the same P diagonal). The
eigenvectors are fixed only up to a scalar each, so their tangent depends on LAPACK's choice
(unit 2-norm, largest-magnitude component real): ``dV = U + V diag(c)`` with
``U = V (F ∘ P)``, ``F_ij = 1 / (w_j - w_i)`` off the diagonal, and c the multiples that keep
that normalization (Giles 2008, sec. 3.1). This holds only for distinct eigenvalues and no
two components tied for largest magnitude, which nothing can check on traced values: as in
JAX, eigenvector derivatives need ``enable_eigvec_derivs=True``, and raise SpmdTypeError
without it. Left eigenvectors are the right ones of ``Aᴴ``, eigenvalues conjugated.
"""

from __future__ import annotations

import numpy as np

from spmd.core.trace import aval_of
from spmd.errors import SpmdTypeError
from spmd.prims.contraction import LETTERS, einsum_p
from spmd.prims.derivatives import bind, convert
from spmd.prims.linalg import matmul


def _contract(spec: str, *operands, batch: int):
    """``einsum(spec)`` with ``...`` spelled as ``batch`` leading letters and i, j as letters
    that cannot clash with them."""
    i, j = LETTERS[-2:]
    spec = spec.replace("i", i).replace("j", j).replace("...", LETTERS[:batch])
    return einsum_p.bind(*operands, subscripts=spec)


def _adjoint(x):
    ndim = aval_of(x).ndim
    return bind(
        "conjugate", bind("transpose", x, permutation=(*range(ndim - 2), ndim - 1, ndim - 2))
    )


def _sum_rows(x):
    """The sum over the rows (axis -2) of each matrix: (..., n, n) -> (..., n)."""
    return bind("reduce_sum", x, axes=(aval_of(x).ndim - 2,), keepdims=False, dtype=None)


def _eigenvalue_tangent(v, da):
    """``diag(V⁻¹ dA V)`` per matrix."""
    return _contract("...ij,...ji->...i", bind("solve", v, da), v, batch=aval_of(v).ndim - 2)


def _vector_tangents(w, v, da):
    """``(dw, dV)`` for the right eigenvectors V of A (eigenvalues w), under LAPACK's
    normalization of each column."""
    dtype, ndim = aval_of(v).dtype, aval_of(v).ndim
    n, batch = aval_of(v).shape[-1], ndim - 2
    eye = np.eye(n, dtype=dtype)
    ones = np.ones(n, dtype=dtype)
    w_j = _contract("...j,i->...ij", w, ones, batch=batch)
    w_i = _contract("...i,j->...ij", w, ones, batch=batch)
    f = bind(
        "subtract",
        bind("true_divide", np.ones((n, n), dtype), bind("add", bind("subtract", w_j, w_i), eye)),
        eye,
    )
    p = matmul(bind("solve", v, da), v)
    dw = _contract("...ij,ij->...j", p, eye, batch=batch)
    u = matmul(v, bind("multiply", f, p))
    # c_j = -Re(v_jᴴ u_j) - i Im(u_kj) / v_kj, k the row of v_j's largest magnitude
    largest = bind("argmax", bind("abs", v), axis=ndim - 2, keepdims=True)
    rows = np.arange(n).reshape(n, 1)
    at_largest = convert(bind("equal", largest, rows), dtype)
    real_part = bind("negative", bind("real", _sum_rows(bind("multiply", bind("conjugate", v), u))))
    pivot_u = _sum_rows(bind("multiply", at_largest, u))
    pivot_v = _sum_rows(bind("multiply", at_largest, v))
    imaginary = bind("negative", bind("true_divide", bind("imag", pivot_u), bind("real", pivot_v)))
    c = bind(
        "add",
        convert(real_part, dtype),
        bind("multiply", convert(imaginary, dtype), np.asarray(1j, dtype)),
    )
    c_columns = _contract("...j,i->...ij", c, ones, batch=batch)
    return dw, bind("add", u, bind("multiply", v, c_columns))


def eig_jvp(
    primals, out, tangents, *, compute_left_eigenvectors, compute_right_eigenvectors,
    enable_eigvec_derivs,
):  # fmt: skip
    (a,), (t,) = primals, tangents
    left, right = compute_left_eigenvectors, compute_right_eigenvectors
    if (left or right) and not enable_eigvec_derivs:
        raise SpmdTypeError(
            "spmd.lax.linalg.eig: derivatives of non-symmetric eigenvectors hold only for "
            "distinct eigenvalues and no two components tied for largest magnitude, which "
            "cannot be checked on traced values. Pass enable_eigvec_derivs=True to "
            "spmd.lax.linalg.eig to opt in, differentiate the eigenvalues alone "
            "(spmd.numpy.linalg.eigvals), or use eigh for a Hermitian matrix."
        )
    params = {"compute_left_eigenvectors": left, "enable_eigvec_derivs": enable_eigvec_derivs}
    full = out if right else bind("eig", a, compute_right_eigenvectors=True, **params)
    w, v = full[0], full[-1]
    da = convert(t, aval_of(v).dtype)
    if not (left or right):
        return [_eigenvalue_tangent(v, da)]
    dw, dv = _vector_tangents(w, v, da)
    found = [dw]
    if left:
        _, dvl = _vector_tangents(bind("conjugate", w), full[1], _adjoint(da))
        found.append(dvl)
    if right:
        found.append(dv)
    return found
