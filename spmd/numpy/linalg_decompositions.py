"""Decompositions of spmd.numpy.linalg: ``cholesky`` (NumPy 2's and the Array API's
signature, with JAX's ``symmetrize_input``), and the input checks the spmd.lax.linalg front
ends share.

Integers and booleans are factored in float64, as NumPy does; float16 is refused, as NumPy
refuses it. A matrix that is not positive definite gives NaN in place of its factor (JAX's
answer: under jit there is no raising on values), where NumPy raises LinAlgError.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from spmd.core.aval import host_array
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError, SpmdValueError
from spmd.numpy.elementwise import (  # type: ignore[attr-defined]
    add,
    conjugate,
    greater,
    multiply,
    true_divide,
    where,
)
from spmd.numpy.reductions import max as snp_max
from spmd.numpy.reductions import sum as snp_sum
from spmd.numpy.shaping import astype, broadcast_to, expand_dims, reshape, swapaxes
from spmd.prims.linalg import cholesky_p
from spmd.prims.linalg import matmul as matmul_stacks
from spmd.prims.linalg_eig import eig_p
from spmd.prims.linalg_lapack import det_p, eigh_p, inv_p, qr_p, slogdet_p, solve_p, svd_p


def matrices(a: Any, who: str, argument: str, *, square: bool = True) -> Any:
    """``a`` (an Array, tracer, NumPy array or nested list) as a stack of matrices in a dtype
    the decompositions compute in: ShapeError naming ``argument`` when it has fewer than two
    dimensions (or, with ``square``, its last two differ); integers and booleans as float64."""
    if isinstance(a, (bool, int, float, complex, list, tuple)):
        a = host_array(a, f"{who}: {argument}")
    aval = aval_of(a)
    if aval.ndim < 2:
        raise ShapeError(
            f"{who}: {argument} has shape {aval.shape} ({aval}), but it must be a stack of "
            f"matrices (..., n, n) with at least two dimensions; reshape it, e.g. to (1, 1) "
            f"for one number."
        )
    if square and aval.shape[-1] != aval.shape[-2]:
        raise ShapeError(
            f"{who}: {argument} has shape {aval.shape} ({aval}), but its last two dimensions "
            f"must be square (..., n, n); {aval.shape[-2]} rows and {aval.shape[-1]} columns "
            f"differ."
        )
    if aval.dtype.kind in "biu":
        return astype(a, np.float64)
    if aval.dtype.kind not in "fc" or aval.dtype.itemsize < 4:
        raise SpmdTypeError(
            f"{who}: {argument} is {aval}, but decompositions compute in float32, float64, "
            f"complex64 or complex128 (NumPy refuses float16 too); cast it first."
        )
    return a


def hermitian_part(a: Any) -> Any:
    """``(a + aᴴ) / 2`` over the last two dimensions."""
    adjoint = swapaxes(a, -1, -2)
    if aval_of(a).dtype.kind == "c":
        adjoint = conjugate(adjoint)
    return multiply(add(a, adjoint), 0.5)


def cholesky(a: Any, /, *, upper: bool = False, symmetrize_input: bool = True) -> Any:
    """``numpy.linalg.cholesky``: the lower factor L of each Hermitian positive-definite
    matrix of ``a`` (..., n, n), ``a = L Lᴴ``; ``upper=True`` gives ``Lᴴ`` instead. As JAX's,
    it factors ``(a + aᴴ) / 2`` (``symmetrize_input=False``: reads a's lower triangle
    alone). Batch dimensions may stay sharded; each matrix is gathered on its device.
    Example: ``spmd.numpy.linalg.cholesky(x @ x.T + 4 * spmd.numpy.eye(4))``."""
    a = matrices(a, "spmd.numpy.linalg.cholesky", "a")
    if symmetrize_input:
        a = hermitian_part(a)
    factor = cholesky_p.bind(a)
    if not upper:
        return factor
    factor = swapaxes(factor, -1, -2)
    return conjugate(factor) if aval_of(factor).dtype.kind == "c" else factor


# --- the Array API's decompositions, on the primitives of spmd/prims/linalg_lapack.py -------


class EigResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class EighResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class QRResult(NamedTuple):
    Q: Any
    R: Any


class SlogdetResult(NamedTuple):
    sign: Any
    logabsdet: Any


class SVDResult(NamedTuple):
    U: Any
    S: Any
    Vh: Any


def _who(name: str) -> str:
    return f"spmd.numpy.linalg.{name}"


def inv(x: Any, /) -> Any:
    """``numpy.linalg.inv`` of each square matrix of ``x`` (..., n, n); a singular one gives
    inf or NaN (JAX's answer; NumPy raises). Example: ``spmd.numpy.linalg.inv(x)``."""
    return inv_p.bind(matrices(x, _who("inv"), "x"))


def det(x: Any, /) -> Any:
    """``numpy.linalg.det`` of each square matrix of ``x`` (..., n, n)."""
    return det_p.bind(matrices(x, _who("det"), "x"))


def slogdet(x: Any, /) -> SlogdetResult:
    """``numpy.linalg.slogdet``: ``(sign, logabsdet)`` of each square matrix, ``det = sign *
    exp(logabsdet)``; a singular matrix gives sign 0 and logabsdet -inf."""
    return SlogdetResult(*slogdet_p.bind(matrices(x, _who("slogdet"), "x")))


def solve(x1: Any, x2: Any, /) -> Any:
    """``numpy.linalg.solve``: ``x`` with ``x1 @ x = x2``; ``x2`` is (..., n, k), or a single
    vector (n,) when it has one dimension; batch dimensions broadcast. A singular matrix gives
    inf or NaN. Example: ``solve(a, b)``."""
    who = _who("solve")
    a = matrices(x1, who, "x1")
    if isinstance(x2, (bool, int, float, complex, list, tuple)):
        x2 = host_array(x2, f"{who}: x2")
    vector = aval_of(x2).ndim == 1
    b = matrices(reshape(x2, (-1, 1)) if vector else x2, who, "x2", square=False)
    dtype = np.result_type(aval_of(a).dtype, aval_of(b).dtype)
    a, b = astype(a, dtype), astype(b, dtype)
    n = aval_of(a).shape[-1]
    if aval_of(b).shape[-2] != n:
        raise ShapeError(
            f"{who}: x1 is {aval_of(a)} and x2 is {aval_of(x2)}; x2's "
            f"{'length' if vector else 'rows'} must match x1's size n = {n}."
        )
    try:
        batch = np.broadcast_shapes(aval_of(a).shape[:-2], aval_of(b).shape[:-2])
    except ValueError:
        raise ShapeError(
            f"{who}: the batch dimensions of x1 {aval_of(a)} and x2 {aval_of(x2)} do not "
            f"broadcast together; each must match or be 1, counting from the right."
        ) from None
    a = broadcast_to(a, (*batch, n, n))
    b = broadcast_to(b, (*batch, *aval_of(b).shape[-2:]))
    x = solve_p.bind(a, b)
    return reshape(x, aval_of(x).shape[:-1]) if vector else x


def eig(x: Any, /) -> EigResult:
    """``numpy.linalg.eig``: the eigenvalues and right eigenvectors of each square matrix
    of ``x`` (..., n, n), ``x @ v[..., :, i] = w[..., i] * v[..., :, i]``, each vector of
    unit norm with its largest component real. As JAX's, the results are always complex
    (complex64 for 32-bit input; NumPy's are real where every eigenvalue is), and a matrix
    holding inf or NaN gives NaN. Not differentiable (the eigenvalues are: ``eigvals``).
    Example: ``w, v = spmd.numpy.linalg.eig(x)``."""
    a = matrices(x, _who("eig"), "x")
    w, v = eig_p.bind(
        a,
        compute_left_eigenvectors=False,
        compute_right_eigenvectors=True,
        enable_eigvec_derivs=False,
    )
    return EigResult(w, v)


def eigvals(x: Any, /) -> Any:
    """``numpy.linalg.eigvals``: the eigenvalues of each square matrix of ``x`` (..., n, n),
    always complex as JAX's (NumPy's are real where all are). Example: ``eigvals(x)``."""
    a = matrices(x, _who("eigvals"), "x")
    (w,) = eig_p.bind(
        a,
        compute_left_eigenvectors=False,
        compute_right_eigenvectors=False,
        enable_eigvec_derivs=False,
    )
    return w


def eigh(x: Any, /, *, UPLO: str = "L") -> EighResult:
    """``numpy.linalg.eigh``: eigenvalues (ascending) and eigenvectors of each Hermitian
    matrix, reading its lower (``UPLO='L'``) or upper triangle alone."""
    if UPLO not in ("L", "U"):
        raise SpmdValueError(f"{_who('eigh')}: UPLO={UPLO!r} must be 'L' or 'U'.")
    return EighResult(*eigh_p.bind(matrices(x, _who("eigh"), "x"), lower=UPLO == "L"))


def eigvalsh(x: Any, /, *, UPLO: str = "L") -> Any:
    """``numpy.linalg.eigvalsh``: the eigenvalues (ascending) of each Hermitian matrix."""
    return eigh(x, UPLO=UPLO).eigenvalues


def qr(x: Any, /, *, mode: str = "reduced") -> QRResult:
    """``numpy.linalg.qr`` with ``mode`` 'reduced' (Q (..., m, k), R (..., k, n), k =
    min(m, n)) or 'complete' (Q (..., m, m), R (..., m, n))."""
    if mode not in ("reduced", "complete"):
        raise SpmdValueError(f"{_who('qr')}: mode={mode!r} must be 'reduced' or 'complete'.")
    return QRResult(*qr_p.bind(matrices(x, _who("qr"), "x", square=False), mode=mode))


def svd(x: Any, /, *, full_matrices: bool = True) -> SVDResult:
    """``numpy.linalg.svd``: ``U``, ``S`` (descending) and ``Vh`` with ``x = U diag(S) Vh``."""
    a = matrices(x, _who("svd"), "x", square=False)
    return SVDResult(*svd_p.bind(a, full_matrices=bool(full_matrices)))


def svdvals(x: Any, /) -> Any:
    """The Array API's ``linalg.svdvals``: each matrix's singular values, descending."""
    a = matrices(x, _who("svdvals"), "x", square=False)
    return svd_p.bind(a, full_matrices=False)[1]


def _cutoff(values: Any, shape: tuple[int, ...], rtol: Any) -> Any:
    """``rtol`` (default ``max(m, n)`` machine epsilons) times each matrix's largest singular
    value, with a trailing axis to compare against ``values``."""
    if rtol is None:
        rtol = max(shape[-2:]) * np.finfo(aval_of(values).dtype).eps
    largest = snp_max(values, axis=-1, keepdims=True, initial=0.0)
    if not isinstance(rtol, (int, float, np.floating)):
        rtol = expand_dims(rtol, -1)
    return multiply(largest, rtol)


def pinv(x: Any, /, *, rtol: Any = None) -> Any:
    """``numpy.linalg.pinv``: the pseudo-inverse of each matrix, singular values at most
    ``rtol`` times the largest taken as zero."""
    a = matrices(x, _who("pinv"), "x", square=False)
    u, s, vh = svd_p.bind(a, full_matrices=False)
    kept = greater(s, _cutoff(s, aval_of(a).shape, rtol))
    reciprocal = where(kept, true_divide(1.0, where(kept, s, 1.0)), 0.0)
    reciprocal = expand_dims(astype(reciprocal, aval_of(a).dtype), -1)
    scaled = multiply(reciprocal, conjugate(swapaxes(u, -1, -2)))  # S⁻¹ Uᴴ
    return matmul_stacks(conjugate(swapaxes(vh, -1, -2)), scaled)


def matrix_rank(x: Any, /, *, rtol: Any = None) -> Any:
    """The Array API's ``linalg.matrix_rank``: how many singular values of each matrix exceed
    ``rtol`` times the largest."""
    a = matrices(x, _who("matrix_rank"), "x", square=False)
    values = svd_p.bind(a, full_matrices=False)[1]
    return snp_sum(greater(values, _cutoff(values, aval_of(a).shape, rtol)), axis=-1)


__all__ = [
    "cholesky",
    "det",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "inv",
    "matrix_rank",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
]
