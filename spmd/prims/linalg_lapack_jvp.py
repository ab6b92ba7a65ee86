"""Derivatives of the svd and qr primitives (spmd/prims/linalg_lapack.py), written with the
primitives themselves on stacks of matrices with one batch shape.

svd follows the standard rule (Townsend 2016, "Differentiating the Singular Value
Decomposition"; JAX's svd_jvp_rule): with ``dS = Uᴴ dA V``, ``ds = real(diag dS)`` and
the singular vectors' tangents from ``F_ij = 1 / (s_j² - s_i²)``, plus the terms for the part
of ``dA`` outside the span of U (tall) or V (wide). qr follows JAX's qr_jvp_rule for tall
or square matrices. Where the singular vectors or Q are not unique (full_matrices / complete
with non-square input, wide qr), differentiating raises SpmdTypeError.
"""

from __future__ import annotations

import numpy as np

from spmd.core.trace import aval_of
from spmd.errors import SpmdTypeError
from spmd.prims.contraction import LETTERS, einsum_p
from spmd.prims.derivatives import bind, convert
from spmd.prims.linalg import matmul, triangular_solve_p


def _transpose(x):
    ndim = aval_of(x).ndim
    return bind("transpose", x, permutation=(*range(ndim - 2), ndim - 1, ndim - 2))


def _adjoint(x):
    x = _transpose(x)
    return bind("conjugate", x) if aval_of(x).dtype.kind == "c" else x


def _columns_of(s, rows: int):
    """The matrix (..., rows, k) whose column j holds ``s[..., j]`` in every row."""
    batch = LETTERS[: aval_of(s).ndim - 1]
    i, j = LETTERS[-2:]
    ones = np.ones(rows, dtype=aval_of(s).dtype)
    return einsum_p.bind(s, ones, subscripts=f"{batch}{j},{i}->{batch}{i}{j}")


def _diagonal(x):
    n = aval_of(x).shape[-1]
    batch = LETTERS[: aval_of(x).ndim - 2]
    i, j = LETTERS[-2:]
    eye = np.eye(n, dtype=aval_of(x).dtype)
    return einsum_p.bind(x, eye, subscripts=f"{batch}{i}{j},{i}{j}->{batch}{j}")


def _refuse(name: str, shape, why: str):
    raise SpmdTypeError(f"spmd.numpy.linalg.{name} of shape {shape} has no derivative here: {why}")


def svd_jvp(primals, out, tangents, *, full_matrices):
    (a,), (t,), (u, s, vh) = primals, tangents, out
    dtype, real = aval_of(a).dtype, aval_of(s).dtype
    m, n = aval_of(a).shape[-2:]
    if full_matrices and m != n:
        _refuse("svd", aval_of(a).shape, "with full_matrices=True the extra singular vectors "
                "of a non-square matrix are not unique; pass full_matrices=False.")  # fmt: skip
    k = min(m, n)
    ut, v = _adjoint(u), _adjoint(vh)
    ds_matrix = matmul(matmul(ut, t), v)  # (..., k, k)
    ds = _diagonal(ds_matrix)
    ds = bind("real", ds) if dtype.kind == "c" else ds
    s_j = _columns_of(s, k)
    s_i = _transpose(s_j)
    eye = np.eye(k, dtype=real)
    gaps = bind("multiply", bind("add", s_j, s_i), bind("subtract", s_j, s_i))
    f = bind("subtract", bind("true_divide", np.ones((k, k), real), bind("add", gaps, eye)), eye)
    f = convert(f, dtype)
    zero = convert(bind("equal", s, np.zeros(k, real)), real)
    s_inverse = bind("subtract", bind("true_divide", np.ones(k, real), bind("add", s, zero)), zero)
    inverse_diagonal = bind(
        "multiply", convert(_columns_of(s_inverse, k), dtype), eye.astype(dtype)
    )
    skew = bind(
        "multiply", bind("subtract", ds_matrix, _adjoint(ds_matrix)), np.asarray(0.5, dtype)
    )
    ds_s = bind("multiply", convert(s_j, dtype), ds_matrix)  # dS diag(s)
    s_ds = bind("multiply", convert(s_i, dtype), ds_matrix)  # diag(s) dS
    du = matmul(u, bind("add", bind("multiply", f, bind("add", ds_s, _adjoint(ds_s))),
                         bind("multiply", skew, inverse_diagonal)))  # fmt: skip
    dv = matmul(v, bind("multiply", f, bind("add", s_ds, _adjoint(s_ds))))
    if m > n:
        dav = matmul(t, v)
        outside = bind("subtract", dav, matmul(u, matmul(ut, dav)))
        du = bind("add", du, bind("true_divide", outside, convert(_columns_of(s, m), dtype)))
    if n > m:
        dahu = matmul(_adjoint(t), u)
        outside = bind("subtract", dahu, matmul(v, matmul(vh, dahu)))
        dv = bind("add", dv, bind("true_divide", outside, convert(_columns_of(s, n), dtype)))
    return [du, ds, _adjoint(dv)]


def qr_jvp(primals, out, tangents, *, mode):
    (a,), (t,), (q, r) = primals, tangents, out
    m, n = aval_of(a).shape[-2:]
    if m < n or (mode == "complete" and m > n):
        _refuse("qr", aval_of(a).shape, "Q and R of a wide matrix (or Q's completion of a tall "
                "one, mode='complete') are not unique; differentiate the reduced QR of a "
                "matrix with at least as many rows as columns.")  # fmt: skip
    dtype = aval_of(a).dtype
    solve = {"lower": False, "transpose_a": False, "conjugate_a": False, "unit_diagonal": False}
    dx_rinv = triangular_solve_p.bind(r, t, left_side=False, **solve)  # dA R⁻¹
    qt_dx_rinv = matmul(_adjoint(q), dx_rinv)
    lower = bind("multiply", qt_dx_rinv, np.tril(np.ones((n, n)), -1).astype(dtype))
    do = bind("subtract", lower, _adjoint(lower))  # skew-Hermitian
    if dtype.kind == "c":
        imaginary = bind("subtract", qt_dx_rinv, convert(bind("real", qt_dx_rinv), dtype))
        do = bind("add", do, bind("multiply", imaginary, np.eye(n, dtype=dtype)))
    dq = bind("add", matmul(q, bind("subtract", do, qt_dx_rinv)), dx_rinv)
    dr = matmul(bind("subtract", qt_dx_rinv, do), r)
    return [dq, dr]
