"""NumPy's side of spmd.scipy.linalg's rows (tests/cases/linalg_scipy.py): scipy.linalg matrix
by matrix (so that SciPy releases without batching serve), and numpy.linalg where the answer is
a plain solve, with JAX's dtypes: bools and integers computed in float64 (SciPy takes bools to
float32), det keeping float32 (SciPy's gives float64), lu's p real and toeplitz of bools bool.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from tests.cases.linalg import _adjoint
from tests.cases.linalg_eig import numpy_hessenberg


def _inexact(x):
    x = np.asarray(x)
    return x.astype(np.float64) if x.dtype.kind in "biu" else x


def per_matrix(fn):
    """``fn`` of one matrix (and arrays of its batch) over a stack of them; a stack of no
    matrices takes its results' shapes from fn of an identity."""

    def oracle(a, *rest, **kwargs):
        a, rest = _inexact(a), [_inexact(r) for r in rest]
        batch = a.shape[:-2]
        if not batch:
            return fn(a, *rest, **kwargs)
        found = [fn(a[i], *(r[i] for r in rest), **kwargs) for i in np.ndindex(*batch)]
        if not found:
            dummy = np.eye(*a.shape[-2:], dtype=a.dtype)
            shapes = fn(dummy, *(np.ones(r.shape[len(batch) :], r.dtype) for r in rest), **kwargs)
            if isinstance(shapes, tuple):
                return tuple(np.empty(batch + s.shape, s.dtype) for s in shapes)
            return np.empty(batch + shapes.shape, shapes.dtype)
        if isinstance(found[0], tuple):
            return tuple(np.stack(p).reshape(batch + p[0].shape) for p in zip(*found, strict=True))
        return np.stack(found).reshape(batch + found[0].shape)

    return oracle


def _solve_with(op):
    """x with ``op(a) x = b``: b (n,) or (..., n, k), batches broadcast (NumPy 2's solve)."""

    def oracle(a, b, **_):
        return np.linalg.solve(op(_inexact(a)), _inexact(b))

    return oracle


def _cho_solve(c_and_lower, b):
    """scipy.linalg.cho_solve's answer from the factor: ``a = L Lᴴ`` (or ``Uᴴ U``) solved."""
    c, lower = c_and_lower
    a = np.matmul(c, _adjoint(np, c)) if lower else np.matmul(_adjoint(np, c), c)
    return np.linalg.solve(a, _inexact(b))


def _lu_solve(factor, b, trans=0):
    """x with ``op(a) x = b``, a rebuilt from its LU factors."""
    lu, pivots = factor
    p, lower, upper = numpy_lu_of(lu, pivots)
    a = np.matmul(p, np.matmul(lower, upper))
    a = {0: a, 1: np.swapaxes(a, -1, -2), 2: _adjoint(np, a)}[trans]
    return np.linalg.solve(a, _inexact(b))


def numpy_lu_of(lu, pivots):
    """(p, l, u) from lu_factor's packed factors and row swaps."""
    n = lu.shape[-1]
    l = np.tril(lu, -1) + np.eye(n, dtype=lu.dtype)  # noqa: E741
    p = np.zeros(lu.shape, np.empty(0, lu.dtype).real.dtype)
    for index in np.ndindex(*lu.shape[:-2]):
        order = list(range(n))
        for k, q in enumerate(pivots[index]):
            order[k], order[q] = order[q], order[k]
        p[index][order, np.arange(n)] = 1
    return p, l, np.triu(lu)


def _toeplitz(c, r=None):
    c = np.atleast_1d(c)
    if r is None:  # (NumPy's conjugate of bools is int8; JAX's keeps them)
        r = np.conjugate(c) if c.dtype.kind == "c" else c
    r = np.atleast_1d(r)
    batch = np.broadcast_shapes(c.shape[:-1], r.shape[:-1])
    c = np.broadcast_to(c, batch + c.shape[-1:])
    r = np.broadcast_to(r, batch + r.shape[-1:])
    out = np.zeros((*batch, c.shape[-1], r.shape[-1]), np.result_type(c, r))
    for index in np.ndindex(*batch):
        out[index] = scipy.linalg.toeplitz(c[index], r[index])
    return out


def _expm(a, **_):
    return per_matrix(scipy.linalg.expm)(a)


def _det(a, **_):
    return np.linalg.det(_inexact(a))


def _lu(a, permute_l=False):
    """scipy.linalg.lu, p real (SciPy's is complex for a complex 1x1 matrix)."""
    found = per_matrix(lambda m: scipy.linalg.lu(m, permute_l=permute_l))(a)
    return found if permute_l else (found[0].real, *found[1:])


def _hessenberg(a, calc_q=False):
    """scipy.linalg.hessenberg, but for n <= 2 (SciPy returns a itself, and a float64
    identity for q) LAPACK's gehrd as JAX calls it for every n: it makes a complex
    subdiagonal real, with q = diag(1, 1 - tau)."""
    a = _inexact(a)
    n = a.shape[-1]
    if n > 2 or n == 0:
        return per_matrix(lambda m: scipy.linalg.hessenberg(m, calc_q=calc_q))(a)
    packed, taus = numpy_hessenberg(a)
    h = np.triu(packed, -1)
    if not calc_q:
        return h
    q = np.zeros(a.shape, a.dtype)
    q[..., 0, 0] = 1
    if n == 2:
        q[..., 1, 1] = 1 - taus[..., 0]
    return h, q


def _schur(a, output="real"):
    return per_matrix(lambda m: scipy.linalg.schur(m, output=output))(a)


NUMPY_SCIPY = {
    "cholesky": per_matrix(lambda a, lower=False: scipy.linalg.cholesky(a, lower=lower)),
    "cho_factor": per_matrix(lambda a, lower=False: scipy.linalg.cho_factor(a, lower=lower)[0]),
    "cho_solve": _cho_solve,
    "solve_triangular": per_matrix(scipy.linalg.solve_triangular),
    "lu_factor": per_matrix(scipy.linalg.lu_factor),
    "lu_solve": _lu_solve,
    "lu": _lu,
    "solve": _solve_with(lambda a: a),
    "inv": lambda a: np.linalg.inv(_inexact(a)),
    "det": _det,
    "eigh": per_matrix(scipy.linalg.eigh),
    "svd": per_matrix(scipy.linalg.svd),
    "qr": per_matrix(scipy.linalg.qr),
    "schur": _schur,
    "hessenberg": _hessenberg,
    "expm": _expm,
    "block_diag": scipy.linalg.block_diag,
    "toeplitz": _toeplitz,
}
