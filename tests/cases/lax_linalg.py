"""The case table's rows of spmd.lax.linalg's qr, svd, eigh, lu, lu_pivots_to_permutation and
tridiagonal_solve (cholesky's and triangular_solve's are in tests/cases/linalg.py), against
numpy.linalg, scipy.linalg.lu_factor and Python loops.

As in tests/cases/linalg.py each row builds a well-conditioned operand from its random input
inside ``fn`` and fixes the factors' phases, so the answer is unique: ``gram`` for eigh (its
eigenvalues; eigenvectors on floats, whose eigenvalues are distinct), ``unique_singular_values``
for qr and svd, a diagonally dominant matrix for tridiagonal_solve. lu's pivots are LAPACK's:
the largest magnitude in the column, the first one on ties. The rows are of the contraction
family, so the partition, derivative, vmap and multi-process oracles run them; batch sizes 3 and
5 give uneven and empty blocks on 8 devices.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

import spmd
from spmd import ShapeError, SpmdTypeError, SpmdValueError
from tests.cases.linalg import LINALG_DTYPES, _adjoint, _unit, gram, unique_singular_values
from tests.cases.linalg_eig import _linalg_eig
from tests.cases.linalg_scipy import _linalg_scipy
from tests.cases.table import BOOL, DTYPES, FLOATS, INTS, _label, add, rejects

COMPLEX = (np.complex64, np.complex128)
INEXACT = (*FLOATS, *COMPLEX)
MATRICES = [((4, 3),), ((3, 4),), ((2, 5, 3),), ((0, 2, 3),), ((2, 0, 3),)]
SQUARE = [((3, 3),), ((2, 4, 4),), ((0, 2, 2),)]


# --- NumPy's side -----------------------------------------------------------------------------


def numpy_qr(x, *, full_matrices=True):
    return np.linalg.qr(x, mode="complete" if full_matrices else "reduced")


def numpy_svd(x, *, full_matrices=True, compute_uv=True, subset_by_index=None):
    start, end = subset_by_index or (0, min(x.shape[-2:]))
    if not compute_uv:
        return np.linalg.svd(x, compute_uv=False)[..., start:end]
    u, s, vh = np.linalg.svd(x, full_matrices=full_matrices)
    if subset_by_index is None:
        return u, s, vh
    return u[..., :, start:end], s[..., start:end], vh[..., start:end, :]


def numpy_eigh(x, *, lower=True, symmetrize_input=True, subset_by_index=None):
    if symmetrize_input:
        x = (x + _adjoint(np, x)) / 2
    w, v = np.linalg.eigh(x, UPLO="L" if lower else "U")
    start, end = subset_by_index or (0, x.shape[-1])
    return v[..., :, start:end], w[..., start:end]


def numpy_lu(x):
    """scipy.linalg.lu_factor (LAPACK's getrf) of each matrix: (lu, pivots, permutation)."""
    x = np.asarray(x)
    x = x.astype(np.float64) if x.dtype.kind in "biu" else x
    m, n = x.shape[-2:]
    lu, pivots = np.array(x), np.zeros((*x.shape[:-2], min(m, n)), np.int32)
    for index in np.ndindex(*x.shape[:-2]):
        if x[index].size:
            lu[index], pivots[index] = scipy.linalg.lu_factor(x[index], check_finite=False)
    return lu, pivots, numpy_permutation(pivots, m)


def numpy_permutation(pivots, size):
    """The order the row swaps ``pivots`` (..., k) give ``range(size)``, by a loop of swaps."""
    out = np.empty((*pivots.shape[:-1], size), np.int32)
    for index in np.ndindex(*pivots.shape[:-1]):
        order = list(range(size))
        for k, p in enumerate(pivots[index]):
            order[k], order[p] = order[p], order[k]
        out[index] = order
    return out


def numpy_tridiagonal_solve(dl, d, du, b):
    """The dense matrix of the three diagonals (dl[0] and du[-1] outside it) solved."""
    m = d.shape[-1]
    a = np.zeros((*d.shape, m), np.result_type(dl, d, du))
    i = np.arange(m)
    a[..., i, i] = d
    a[..., i[1:], i[:-1]] = dl[..., 1:]
    a[..., i[:-1], i[1:]] = du[..., :-1]
    return np.linalg.solve(a, b)


NUMPY_LAX_LINALG = {
    "qr": numpy_qr,
    "svd": numpy_svd,
    "eigh": numpy_eigh,
    "lu": numpy_lu,
    "lu_pivots_to_permutation": numpy_permutation,
    "tridiagonal_solve": numpy_tridiagonal_solve,
}


def lax_linalg(m, name: str):
    return NUMPY_LAX_LINALG[name] if m is np else getattr(spmd.lax.linalg, name)


# --- the rows' functions ------------------------------------------------------------------------


def qr(part=None, **kwargs):
    """lax.linalg.qr of unique_singular_values(x), Q's columns fixed in phase by R's diagonal
    (made real and positive); full_matrices only where Q is determined (m <= n). ``part``: q
    or r alone (0 or 1), for the oracles that take one array."""

    def fn(m, x):
        q, r = lax_linalg(m, "qr")(unique_singular_values(m, x), **kwargs)
        k = min(r.shape[-2:])
        phase = _unit(m, m.diagonal(r, axis1=-2, axis2=-1))
        q = m.concatenate([q[..., :k] * phase[..., None, :], q[..., k:]], axis=-1)
        r = m.concatenate([r[..., :k, :] * m.conjugate(phase)[..., :, None], r[..., k:, :]],
                          axis=-2)  # fmt: skip
        return (q, r) if part is None else (q, r)[part]

    return fn


def svd(part=None, **kwargs):
    """lax.linalg.svd of unique_singular_values(x), each singular pair fixed in phase by U's
    first row; ``part``: one of u, s, vh alone (0, 1 or 2)."""

    def fn(m, x):
        result = lax_linalg(m, "svd")(unique_singular_values(m, x), **kwargs)
        if not kwargs.get("compute_uv", True):
            return result
        u, s, vh = result
        if not u.shape[-2]:
            return u, s, vh
        phase = m.conjugate(_unit(m, u[..., :1, :]))  # u's first row made real, positive
        result = u * phase, s, vh * m.swapaxes(m.conjugate(phase), -1, -2)
        return result if part is None else result[part]

    return fn


def eigh(vectors=True, **kwargs):
    """lax.linalg.eigh of ``gram(x)`` plus ``y`` where it must not count: the anti-Hermitian
    ``y - yᴴ`` that symmetrizing removes, or (symmetrize_input=False) the triangle eigh does
    not read. (v, w), each eigenvector made real and positive in its first element; w alone
    (``vectors=False``) or v alone (``vectors="only"``)."""

    def fn(m, x, y):
        y = y * 1  # bools as integers
        if kwargs.get("symmetrize_input", True):
            a = gram(m, x) + (y - _adjoint(m, y))
        else:
            a = gram(m, x) + (m.triu(y, 1) if kwargs.get("lower", True) else m.tril(y, -1))
        v, w = lax_linalg(m, "eigh")(a, **kwargs)
        if not vectors:
            return w
        v = v * m.conjugate(_unit(m, v[..., :1, :])) if v.shape[-2] else v
        return v if vectors == "only" else (v, w)

    return fn


def lu(part=None):
    """lax.linalg.lu's three results, or one of them (``part``: 0, 1 or 2)."""

    def fn(m, x):
        result = lax_linalg(m, "lu")(x)
        return tuple(result) if part is None else result[part]

    return fn


def pivots_to_permutation(size):
    """lu_pivots_to_permutation of LAPACK-like pivots made from x: swap k with a row at or
    after k, below ``size``."""

    def fn(m, x):
        k = x.shape[-1]
        first = np.arange(k, dtype=x.dtype)
        pivots = m.add(first, m.remainder(m.abs(x), size - first))
        return lax_linalg(m, "lu_pivots_to_permutation")(pivots, size)

    return fn


def tridiagonal_solve(m, dl, d, du, b):
    """A diagonally dominant system: d + 20 (1 + |d|) against off-diagonals of at most 14
    (bools become integers: their sums are not or)."""
    dominant = d + 20 * (1 + m.abs(d))
    return lax_linalg(m, "tridiagonal_solve")(dl * 1, dominant, du * 1, b * 1)


def direct(name, *args, **kwargs):
    """The named function on the inputs themselves (for the rows it rejects)."""
    return lambda m, *xs: lax_linalg(m, name)(*xs, *args, **kwargs)


# --- the rows ---------------------------------------------------------------------------------


def _lax_linalg():
    family = {"family": "contraction", "dtypes": LINALG_DTYPES}
    floating = {"family": "contraction", "dtypes": INEXACT}
    stricter = {"family": "contraction", "numpy_too": False}
    add("lax.linalg.qr", qr(full_matrices=False), *MATRICES, label="full_matrices=False",
        **family)  # fmt: skip
    add("lax.linalg.qr", qr(), ((3, 3),), ((3, 5),), ((2, 2, 4),), ((0, 3, 3),),
        label="full_matrices", **family)  # fmt: skip
    # one result: the derivative and vmap oracles take it (tall: a wide QR has no derivative)
    for part, name in enumerate("qr"):
        add("lax.linalg.qr", qr(part, full_matrices=False), ((4, 3),), ((2, 5, 3),),
            label=f"full_matrices=False,{name}", **family)  # fmt: skip
    add("lax.linalg.svd", svd(full_matrices=False), *MATRICES, label="full_matrices=False",
        **family)  # fmt: skip
    for part, name in ((0, "u"), (2, "vh")):
        add("lax.linalg.svd", svd(part, full_matrices=False), ((4, 3),), ((2, 3, 5),),
            label=f"full_matrices=False,{name}", **family)  # fmt: skip
    add("lax.linalg.svd", svd(), ((3, 3),), ((2, 4, 4),), label="full_matrices", **family)
    add("lax.linalg.svd", svd(compute_uv=False), *MATRICES, label="compute_uv=False", **family)
    subset = {"full_matrices": False, "subset_by_index": (1, 3)}
    add("lax.linalg.svd", svd(**subset), ((4, 3),), ((2, 3, 5),), label=_label(**subset),
        **family)  # fmt: skip
    for kwargs in ({}, {"subset_by_index": (1, 2)}, {"symmetrize_input": False},
                   {"symmetrize_input": False, "lower": False}):  # fmt: skip
        label = _label(**kwargs)
        add("lax.linalg.eigh", eigh(False, **kwargs), ((4, 3), (3, 3)),
            ((0, 2, 2), (0, 2, 2)), ((3, 0, 2), (3, 2, 2)),
            label=f"{label},eigenvalues".lstrip(","), **family)  # fmt: skip
        add("lax.linalg.eigh", eigh(True, **kwargs), ((5, 3), (3, 3)),
            ((3, 4, 3), (3, 3, 3)), label=label, **floating)  # fmt: skip
    add("lax.linalg.eigh", eigh("only"), ((5, 3), (3, 3)), ((3, 4, 3), (3, 3, 3)),
        label="eigenvectors", **floating)  # fmt: skip
    lu_shapes = [((4, 4),), ((3, 5),), ((5, 3),), ((3, 4, 4),), ((5, 2, 3),), ((0, 3, 3),),
                 ((2, 0, 3),), ((1, 1),)]  # fmt: skip
    add("lax.linalg.lu", lu(), *lu_shapes, **family)
    for part, name in enumerate(("lu", "pivots", "permutation")):  # one result: derivatives too
        add("lax.linalg.lu", lu(part), ((4, 4),), ((3, 3, 5),), label=name, **family)
    for size, shapes in ((4, [((3,),), ((2, 4),), ((0, 2),)]), (6, [((5, 3),), ((2, 0),)])):
        add("lax.linalg.lu_pivots_to_permutation", pivots_to_permutation(size), *shapes,
            label=_label(size), family="contraction", dtypes=INTS)  # fmt: skip
    tridiagonal = [((5,), (5,), (5,), (5, 2)), ((3, 4), (3, 4), (3, 4), (3, 4, 1)),
                   ((1,), (1,), (1,), (1, 3)), ((0, 3), (0, 3), (0, 3), (0, 3, 2)),
                   ((4,), (4,), (4,), (4, 0))]  # fmt: skip
    add("lax.linalg.tridiagonal_solve", tridiagonal_solve, *tridiagonal, **family)

    not_matrices = rejects(DTYPES, ShapeError, "not matrices")
    for name in ("qr", "svd", "eigh", "lu"):
        add(f"lax.linalg.{name}", direct(name), ((),), ((3,),), **not_matrices, **stricter)
    add("lax.linalg.eigh", direct("eigh"), ((2, 3),), **stricter,
        **rejects(DTYPES, ShapeError, "not square"))  # fmt: skip
    add("lax.linalg.lu", direct("lu"), ((3, 3),), **stricter,
        **rejects((np.float16,), SpmdTypeError, "float16"))  # fmt: skip
    add("lax.linalg.qr", direct("qr", pivoting=True), ((3, 3),), **stricter,
        **rejects(FLOATS, SpmdValueError, "pivoting"))  # fmt: skip
    add("lax.linalg.svd", direct("svd", subset_by_index=(0, 1)), ((3, 3),), **stricter,
        **rejects(FLOATS, SpmdValueError, "subset_by_index,full_matrices"))  # fmt: skip
    pivots = "lax.linalg.lu_pivots_to_permutation"
    add(pivots, direct("lu_pivots_to_permutation", 3), ((3,),), **stricter,
        **rejects((*BOOL, *INEXACT), SpmdTypeError, "not integers"))  # fmt: skip
    add(pivots, direct("lu_pivots_to_permutation", 3), ((),), **stricter,
        **rejects(INTS, ShapeError, "0-d"))  # fmt: skip
    add(pivots, direct("lu_pivots_to_permutation", 2), ((3,),), **stricter,
        **rejects(INTS, SpmdValueError, "size below the pivots"))  # fmt: skip
    add("lax.linalg.tridiagonal_solve", direct("tridiagonal_solve"), ((), (), (), ()),
        ((3,), (3,), (2,), (3, 1)), ((3,), (3,), (3,), (3,)), ((3,), (3,), (3,), (2, 1)),
        **stricter, **rejects(DTYPES, ShapeError, "shapes"))  # fmt: skip
    _linalg_eig()
    _linalg_scipy()
