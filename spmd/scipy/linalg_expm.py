"""``jax.scipy.linalg.expm``: the matrix exponential by Padé approximation with scaling and
squaring (Higham 2005, "The scaling and squaring method for the matrix exponential
revisited"), with JAX's choice of order and thresholds, composed from spmd.numpy so that
derivatives, vmap and sharding come with it.

Each matrix of a batch picks its own order and number of squarings from its 1-norm, as JAX's
(vectorized) expm does: every order's approximant is formed and the matrix's own is selected,
and every squaring step runs, multiplying by the identity where the matrix needs no more. A
matrix that would need more than ``max_squarings`` squarings gives NaN, as JAX's does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import spmd.numpy as snp
from spmd.core.trace import aval_of
from spmd.numpy.linalg_decompositions import matrices
from spmd.scipy.linalg_solve import solve_triangular

# The Padé coefficients b_0 ... b_m of each order m (Higham 2005, table 10.4 of "Functions of
# Matrices").
_PADE = {
    3: (120.0, 60.0, 12.0, 1.0),
    5: (30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0),
    7: (17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0, 1.0),
    9: (17643225600.0, 8821612800.0, 2075673600.0, 302702400.0, 30270240.0, 2162160.0,
        110880.0, 3960.0, 90.0, 1.0),
    13: (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
         129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
         40840800.0, 960960.0, 16380.0, 182.0, 1.0),
}  # fmt: skip
# Per precision: the largest 1-norm order 13 (7) takes unscaled, the 1-norms up to which each
# lower order is accurate enough, and the orders in turn.
_DOUBLE = (5.371920351148152, (1.495585217958292e-2, 2.539398330063230e-1,
           9.504178996162932e-1, 2.097847961257068e0), (3, 5, 7, 9, 13))  # fmt: skip
_SINGLE = (3.925724783138660, (4.258730016922831e-1, 1.880152677804762e0), (3, 5, 7))


def _odd_even(a: Any, powers: dict[int, Any], order: int, eye: Any) -> tuple[Any, Any]:
    """``(U, V)``: the odd and even parts of the order-``order`` Padé numerator, so that the
    approximant is ``(V - U)⁻¹ (V + U)``."""
    b = _PADE[order]
    if order == 13:
        a2, a4, a6 = powers[2], powers[4], powers[6]
        u = snp.matmul(a6, b[13] * a6 + b[11] * a4 + b[9] * a2)
        u = snp.matmul(a, u + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * eye)
        v = snp.matmul(a6, b[12] * a6 + b[10] * a4 + b[8] * a2)
        return u, v + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye
    odd, even = b[1] * eye, b[0] * eye
    for k in range(2, order + 1, 2):
        odd = odd + b[k + 1] * powers[k]
        even = even + b[k] * powers[k]
    return snp.matmul(a, odd), even


def expm(A: Any, *, upper_triangular: bool = False, max_squarings: int = 16) -> Any:
    """``scipy.linalg.expm`` of each square matrix of ``A`` (..., n, n), by JAX's scaled Padé
    approximation: orders 3 to 13 (float64) or 3 to 7 (float32) by the 1-norm, and up to
    ``max_squarings`` squarings (more needed: NaN). ``upper_triangular=True`` solves the
    approximant's system as a triangular one (for upper triangular A). Differentiable.
    Example: ``spmd.scipy.linalg.expm(a)``."""
    a = matrices(A, "spmd.scipy.linalg.expm", "A")
    aval = aval_of(a)
    n, dtype = aval.shape[-1], aval.dtype
    if n == 0 or aval.size == 0:
        return a
    largest, bounds, orders = _SINGLE if dtype in (np.float32, np.complex64) else _DOUBLE
    norm = snp.max(snp.sum(snp.abs(a), axis=-2), axis=-1)  # the 1-norm, (...,)
    with np.errstate(divide="ignore"):  # log2(0) is -inf: no squarings
        squarings = snp.maximum(0.0, snp.floor(snp.log2(norm / largest)))
    scale = snp.astype(snp.power(2.0, -squarings), dtype)
    a = a * scale[..., None, None]
    eye = np.eye(n, dtype=dtype)
    powers = {2: snp.matmul(a, a)}
    for k in range(4, min(max(orders), 9) + 1, 2):
        powers[k] = snp.matmul(powers[k - 2], powers[2])
    chosen = sum(snp.astype(norm >= bound, np.int32) for bound in bounds)  # digitize
    u = v = None
    for index, order in enumerate(orders):
        u_k, v_k = _odd_even(a, powers, order, eye)
        picked = (chosen == index)[..., None, None]
        u = u_k if u is None else snp.where(picked, u_k, u)
        v = v_k if v is None else snp.where(picked, v_k, v)
    numerator, denominator = u + v, v - u
    if upper_triangular:
        r = solve_triangular(denominator, numerator)
    else:
        r = snp.linalg.solve(denominator, numerator)
    # r @ r where this matrix still squares, r @ I where it has done so: nothing is squared
    # beyond what it needs (which could overflow); one that needs too many is not squared.
    too_many = (squarings > max_squarings)[..., None, None]
    steps = snp.where(too_many, 0.0, squarings[..., None, None])
    for k in range(int(max_squarings)):
        r = snp.matmul(r, snp.where(steps > k, r, eye))
    return snp.where(too_many, np.nan, r)


__all__ = ["expm"]
