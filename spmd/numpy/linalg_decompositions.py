"""Decompositions of spmd.numpy.linalg: ``cholesky`` (NumPy 2's and the Array API's
signature, with JAX's ``symmetrize_input``), and the input checks the spmd.lax.linalg front
ends share.

Integers and booleans are factored in float64, as NumPy does; float16 is refused, as NumPy
refuses it. A matrix that is not positive definite gives NaN in place of its factor (JAX's
answer: under jit there is no raising on values), where NumPy raises LinAlgError.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spmd.core.aval import host_array
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError
from spmd.numpy.elementwise import add, conjugate, multiply  # type: ignore[attr-defined]
from spmd.numpy.shaping import astype, swapaxes
from spmd.prims.linalg import cholesky_p


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


__all__ = ["cholesky"]
