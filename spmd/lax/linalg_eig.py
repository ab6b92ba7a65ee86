"""``jax.lax.linalg``'s decompositions of general square matrices: ``eig``, ``schur`` and
``hessenberg`` (the primitives of spmd/prims/linalg_eig.py), and ``householder_product``, which
turns packed Householder reflectors (hessenberg's, or QR's) into the unitary matrix they make,
as a composition of spmd.numpy (so it has derivatives, vmap and sharding of its own).

All act on the last two dimensions and batch over the leading ones, which may stay sharded.
Integers and booleans are factored in float64, as spmd.numpy.linalg does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError, SpmdValueError
from spmd.numpy import (
    asarray,
    astype,
    broadcast_to,
    conjugate,
    einsum,
    expand_dims,
    eye,
    multiply,
    subtract,
    where,
)
from spmd.numpy.linalg_decompositions import matrices
from spmd.prims.linalg_eig import eig_p, hessenberg_p, schur_p


def _implementation(who: str, implementation: Any) -> None:
    name = getattr(implementation, "value", implementation)
    if implementation is not None and str(name).lower() != "lapack":
        raise SpmdValueError(
            f"{who}: implementation={implementation!r} is not available; spmd computes it "
            f"with LAPACK, so pass implementation=None (or 'lapack')."
        )


def eig(
    x: Any,
    *,
    compute_left_eigenvectors: bool = True,
    compute_right_eigenvectors: bool = True,
    enable_eigvec_derivs: bool = False,
    implementation: Any = None,
    use_magma: Any = None,
) -> list[Any]:
    """``jax.lax.linalg.eig``: ``[w, vl, vr]`` for each square matrix of ``x`` (..., n, n):
    the eigenvalues w (..., n) and, where asked for, the left (``vlᴴ x = diag(w) vlᴴ``) and
    right (``x vr = vr diag(w)``) eigenvectors, each column of unit norm with its largest
    component real (LAPACK's geev). Results are complex (complex64 for 32-bit input). A
    matrix holding inf or NaN gives NaN. Eigenvalues are differentiable; eigenvectors only
    with ``enable_eigvec_derivs=True`` (valid for distinct eigenvalues). ``use_magma``
    picks a GPU library in JAX and is ignored. Example: ``w, vr = eig(a,
    compute_left_eigenvectors=False)``."""
    who = "spmd.lax.linalg.eig"
    _implementation(who, implementation)
    x = matrices(x, who, "x")
    return list(
        eig_p.bind(
            x,
            compute_left_eigenvectors=bool(compute_left_eigenvectors),
            compute_right_eigenvectors=bool(compute_right_eigenvectors),
            enable_eigvec_derivs=bool(enable_eigvec_derivs),
        )
    )


def schur(
    x: Any,
    *,
    compute_schur_vectors: bool = True,
    sort_eig_vals: bool = False,
    select_callable: Any = None,
) -> list[Any]:
    """``jax.lax.linalg.schur``: ``[t, q]`` with ``x = q t qᴴ`` for each square matrix of
    ``x`` (..., n, n), q unitary and t upper triangular (complex input) or quasi-triangular
    with 2x2 blocks for complex eigenvalue pairs (real input: the real Schur form); ``[t]``
    alone without ``compute_schur_vectors``. LAPACK's gees, whose sort is not supported
    (``sort_eig_vals=True`` raises; ``select_callable`` is unused, as in JAX). No derivative.
    Example: ``t, q = spmd.lax.linalg.schur(a)``."""
    who = "spmd.lax.linalg.schur"
    if sort_eig_vals:
        raise SpmdValueError(
            f"{who}: sort_eig_vals=True is not supported (nor is it in JAX: LAPACK's gees "
            f"sort is not exposed); pass sort_eig_vals=False and reorder afterwards."
        )
    x = matrices(x, who, "x")
    return list(schur_p.bind(x, compute_schur_vectors=bool(compute_schur_vectors)))


def hessenberg(a: Any) -> tuple[Any, Any]:
    """``jax.lax.linalg.hessenberg``: ``(packed, taus)``, LAPACK's gehrd of each square
    matrix of ``a`` (..., n, n): ``packed`` holds the upper Hessenberg matrix H in its upper
    triangle and first subdiagonal, and below that the Householder vectors (each with an
    implied 1 on the subdiagonal); ``taus`` (..., n - 1) their scalars. With Q =
    ``householder_product(packed[..., 1:, :-1], taus)`` bordered by a leading 1,
    ``a = Q H Qᴴ``. No derivative. Example: ``packed, taus = hessenberg(a)``."""
    a = matrices(a, "spmd.lax.linalg.hessenberg", "a")
    packed, taus = hessenberg_p.bind(a)
    return packed, taus


def _reflector_operands(a: Any, taus: Any) -> tuple[Any, Any]:
    who = "spmd.lax.linalg.householder_product"
    a = matrices(a, who, "a", square=False)
    taus = asarray(taus)
    a_aval, t_aval = aval_of(a), aval_of(taus)
    if t_aval.dtype.kind in "biu":
        taus = astype(taus, a_aval.dtype)
        t_aval = aval_of(taus)
    *batch, m, n = a_aval.shape
    if m < n:
        raise ShapeError(
            f"{who}: a has shape {a_aval.shape}, but it must have at least as many rows as "
            f"columns (..., m, n), m >= n; transpose a wide matrix first."
        )
    if t_aval.ndim != a_aval.ndim - 1 or tuple(t_aval.shape[:-1]) != tuple(batch):
        raise ShapeError(
            f"{who}: a is {a_aval} and taus is {t_aval}; taus must be (..., k) with a's "
            f"batch dimensions {tuple(batch)} (no broadcasting)."
        )
    if t_aval.shape[-1] > n:
        raise ShapeError(
            f"{who}: taus has {t_aval.shape[-1]} reflector scalars, but a (..., {m}, {n}) "
            f"holds at most min(m, n) = {n} reflectors; pass taus[..., :{n}]."
        )
    if t_aval.dtype != a_aval.dtype:
        raise SpmdTypeError(
            f"{who}: a is {a_aval} and taus is {t_aval}; they must have one dtype (cast one "
            f"of them)."
        )
    return a, taus


def householder_product(a: Any, taus: Any) -> Any:
    """``jax.lax.linalg.householder_product``: the first n columns of ``H_0 H_1 ... H_{k-1}``
    for each matrix of ``a`` (..., m, n), m >= n, where ``H_i = I - taus[i] v_i v_iᴴ`` and
    ``v_i`` is 1 at row i, ``a[i+1:, i]`` below and 0 above (LAPACK's orgqr/ungqr); taus is
    (..., k), k <= n. Example: ``q = householder_product(packed, taus)``."""
    a, taus = _reflector_operands(a, taus)
    aval = aval_of(a)
    m, n = aval.shape[-2:]
    dtype = aval.dtype
    product = broadcast_to(eye(m, n, dtype=dtype), aval.shape)
    rows = np.arange(m)
    for i in reversed(range(aval_of(taus).shape[-1])):
        v = where(rows == i, np.ones((), dtype), where(rows > i, a[..., :, i], np.zeros((), dtype)))
        reach = einsum("...r,...rc->...c", conjugate(v) if dtype.kind == "c" else v, product)
        scaled = multiply(expand_dims(taus[..., i], (-1, -2)), expand_dims(v, -1))
        product = subtract(product, multiply(scaled, expand_dims(reach, -2)))
    return product


__all__ = ["eig", "hessenberg", "householder_product", "schur"]
