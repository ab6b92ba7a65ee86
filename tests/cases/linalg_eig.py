"""The case table's rows of the general (non-Hermitian) decompositions and the linalg functions
that came with them: spmd.numpy.linalg's eig, eigvals, cond, tensorinv and tensorsolve, and
spmd.lax.linalg's eig, schur, hessenberg and householder_product, against numpy.linalg and
SciPy's LAPACK wrappers (scipy.linalg.eig, schur, lapack.?gehrd and ?orgqr/?ungqr), matrix
by matrix.

eig's answer is unique only up to order and one phase per eigenvector, so its rows build
``separated(x)``: x / 10 plus 8, 14, 20, ... on the diagonal, whose Gershgorin discs are
disjoint (each holds one eigenvalue, real for a real matrix). The rows sort the eigenvalues by
real part and scale each eigenvector to make its diagonal element (its largest) real and
positive, on both sides. ``paired(x)`` adds a rotation of size 5 between rows 2k and 2k + 1
so that real matrices have complex conjugate pairs; sorting by real then imaginary part orders
them. schur and hessenberg are computed by the same LAPACK routine on bit-identical input
here and in NumPy's side, so they compare directly. The rows are of the contraction family,
so the partition, derivative, vmap and multi-process oracles run them.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
from scipy.linalg import lapack

import spmd
from spmd import ShapeError, SpmdTypeError, SpmdValueError
from tests.cases.linalg import LINALG_DTYPES, unique_singular_values
from tests.cases.table import DTYPES, FLOATS, _label, add, rejects

COMPLEX = (np.complex64, np.complex128)
INEXACT = (*FLOATS, *COMPLEX)
SQUARES = [((4, 4),), ((3, 4, 4),), ((5, 3, 3),), ((0, 2, 2),), ((1, 1),), ((2, 0, 0),)]


# --- NumPy's side ------------------------------------------------------------------------------


def _complex_of(dtype) -> np.dtype:
    return np.result_type(dtype, np.complex64)


def _per_matrix(routine, x, outs):
    """``routine`` on each matrix of x: one array per (trailing shape, dtype) of ``outs``."""
    batch = x.shape[:-2]
    results = [np.zeros(batch + shape, dtype) for shape, dtype in outs]
    for index in np.ndindex(*batch):
        for result, part in zip(results, routine(x[index]), strict=True):
            result[index] = part
    return results


def numpy_eig(x, *, compute_left_eigenvectors=True, compute_right_eigenvectors=True, **_):
    """jax.lax.linalg.eig: SciPy's geev of each matrix, complex results."""
    x = np.asarray(x)
    x = x.astype(np.float64) if x.dtype.kind in "biu" else x
    n, dtype = x.shape[-1], _complex_of(x.dtype)
    left, right = compute_left_eigenvectors, compute_right_eigenvectors
    outs = [((n,), dtype)] + [((n, n), dtype)] * (left + right)

    def routine(m):
        found = scipy.linalg.eig(m, left=left, right=right)
        return found if isinstance(found, tuple) else (found,)

    return _per_matrix(routine, x, outs)


def numpy_schur(x, *, compute_schur_vectors=True):
    x = np.asarray(x)
    x = x.astype(np.float64) if x.dtype.kind in "biu" else x
    output = "complex" if x.dtype.kind == "c" else "real"
    form = (x.shape[-2:], x.dtype)
    found = _per_matrix(lambda m: scipy.linalg.schur(m, output=output), x, [form, form])
    return found if compute_schur_vectors else found[:1]


def numpy_hessenberg(x):
    """LAPACK's gehrd of each matrix: (packed, taus), taus (..., n - 1)."""
    x = np.asarray(x)
    x = x.astype(np.float64) if x.dtype.kind in "biu" else x
    n = x.shape[-1]

    if x.ndim < 2 or x.shape[-2] != n:
        raise ValueError(f"hessenberg takes square matrices, not {x.shape}")

    def routine(m):
        packed, taus, info = lapack.get_lapack_funcs("gehrd", (m,))(m, lo=0, hi=n - 1)
        if info:
            raise np.linalg.LinAlgError(f"gehrd: info={info}")
        return packed, taus

    outs = [((n, n), x.dtype), ((max(n - 1, 0),), x.dtype)]
    return _per_matrix(routine, x, outs) if n else [x, np.zeros((*x.shape[:-2], 0), x.dtype)]


def numpy_householder_product(a, taus):
    """LAPACK's orgqr (ungqr) of each matrix: the first n columns of the reflectors' product."""
    a, taus = np.asarray(a), np.asarray(taus)
    dtype = np.float64 if a.dtype.kind in "biu" else a.dtype
    a, taus = a.astype(dtype), taus.astype(dtype)
    m, n = a.shape[-2:]
    if m < n or taus.shape[-1] > n or taus.shape[:-1] != a.shape[:-2]:
        raise ValueError(f"householder_product of {a.shape} and {taus.shape}")
    out = np.zeros(a.shape, dtype)
    name = "ungqr" if np.dtype(dtype).kind == "c" else "orgqr"
    for index in np.ndindex(*a.shape[:-2]):
        if not n:
            continue
        if not taus.shape[-1]:
            out[index] = np.eye(m, n, dtype=dtype)
            continue
        q, _, info = lapack.get_lapack_funcs(name, (a[index],))(a[index], taus[index])
        if info:
            raise np.linalg.LinAlgError(f"{name}: info={info}")
        out[index] = q
    return out


NUMPY_EIG = {
    "eig": numpy_eig,
    "schur": numpy_schur,
    "hessenberg": numpy_hessenberg,
    "householder_product": numpy_householder_product,
}


def lax_linalg(m, name: str):
    return NUMPY_EIG[name] if m is np else getattr(spmd.lax.linalg, name)


# --- the rows' functions ------------------------------------------------------------------------


def separated(m, x):
    """x / 10 plus 8, 14, 20, ... on the diagonal: one eigenvalue in each Gershgorin disc, far
    apart (x's entries are at most 0.7 in magnitude after dividing)."""
    y = x / 10
    n = x.shape[-1]
    return y + np.diag(8.0 + 6 * np.arange(n)).astype(y.dtype)


def paired(m, x):
    """``separated(x)`` plus 5 and -5 between rows 2k and 2k + 1 (k even): conjugate pairs
    near 11 + 12k/2 ± 4i in a real matrix."""
    a = separated(m, x)
    n = x.shape[-1]
    rotation = np.zeros((n, n))
    for k in range(0, n - 1, 2):
        rotation[k, k + 1], rotation[k + 1, k] = 5.0, -5.0
    return a + rotation.astype(a.dtype)


def generic(m, a):
    """``a`` plus a fixed pattern of small non-round numbers, so that no intermediate value of
    a Householder reduction is exactly zero (a sign LAPACK picks from it would then depend on
    rounding: bools and integers hold many zeros)."""
    n = a.shape[-1]
    pattern = np.sin(np.arange(n * n) + 1.0).reshape(n, n) / 50
    return a + pattern.astype(a.dtype)


def _sorted(m, w, *vectors):
    """w in ascending order of real part (then imaginary part), vectors' columns with it."""
    order = m.argsort(m.real(w) * 1000 + m.imag(w), axis=-1)
    w = m.take_along_axis(w, order, axis=-1)
    return (w, *(m.take_along_axis(v, order[..., None, :], axis=-1) for v in vectors))


def _fixed(m, v):
    """Each column scaled to make its diagonal element real and positive (sorted, each
    eigenvector of ``separated(x)`` is largest there)."""
    if not v.shape[-1]:
        return v
    d = m.diagonal(v, axis1=-2, axis2=-1)
    return v * (m.conjugate(d) / m.abs(d))[..., None, :]


def _as_complex(m, x):
    """NumPy's eig is real where every eigenvalue is; JAX's (and spmd's) is complex."""
    return x.astype(_complex_of(x.dtype)) if m is np else x


def linalg_eig(part=None):
    """spmd.numpy.linalg.eig of separated(x), sorted and phase-fixed: (w, v), or one."""

    def fn(m, x):
        w, v = m.linalg.eig(separated(m, x))
        w, v = _sorted(m, _as_complex(m, w), _as_complex(m, v))
        v = _fixed(m, v)
        return (w, v) if part is None else (w, v)[part]

    return fn


def linalg_eigvals(shape_of=separated, take=None):
    """spmd.numpy.linalg.eigvals of shape_of(x), sorted; ``take`` "real" or "imag": that
    part alone (float results: the derivative oracle runs them)."""

    def fn(m, x):
        (w,) = _sorted(m, _as_complex(m, m.linalg.eigvals(shape_of(m, x))))
        return w if take is None else getattr(m, take)(w)

    return fn


def lax_eig(part=None, take=None, **kwargs):
    """spmd.lax.linalg.eig of separated(x), sorted and phase-fixed, as a tuple, or the
    ``part``-th result alone (``take``: its real part)."""

    def fn(m, x):
        w, *vectors = lax_linalg(m, "eig")(separated(m, x), **kwargs)
        w, *vectors = _sorted(m, w, *vectors)
        result = (w, *(_fixed(m, v) for v in vectors))
        if part is None:
            return tuple(result)
        return result[part] if take is None else getattr(m, take)(result[part])

    return fn


def lax_direct(name, shape_of=None, **kwargs):
    """The named function on the inputs themselves (on ``shape_of(x)`` given one), its
    results as a tuple."""

    def fn(m, *xs):
        if shape_of is not None:
            xs = (shape_of(m, xs[0]),)
        found = lax_linalg(m, name)(*xs, **kwargs)
        return tuple(found) if isinstance(found, list | tuple) else found

    return fn


def conditioned(p=None):
    """cond of unique_singular_values(x): singular values distinct and away from zero."""

    def fn(m, x):
        result = m.linalg.cond(unique_singular_values(m, x), p)
        # NumPy 2.0 gives a complex dtype for a complex matrix's cond with p=±1, ±inf (2.1 and
        # later give the real one, as JAX and spmd do): the number is real either way
        return np.real(result).astype(np.finfo(result.dtype).dtype) if m is np else result

    return fn


def tensorinv(ind, numpy_reshapes=True):
    """tensorinv of a well-conditioned tensor: x (its shape) flattened to the square matrix
    tensorinv inverts, made so, and shaped back. ``numpy_reshapes=False``: NumPy's side
    reshapes explicitly (NumPy's own cannot reshape an empty tensor, JAX's can)."""

    def fn(m, x):
        rows = int(np.prod(x.shape[:ind]))
        a = m.reshape(unique_singular_values(m, m.reshape(x, (rows, rows))), x.shape)
        if m is np and not numpy_reshapes:
            a = a.astype(np.float64) if a.dtype.kind in "biu" else a
            inverse = np.linalg.inv(a.reshape(rows, rows))
            return inverse.reshape(x.shape[ind:] + x.shape[:ind])
        return m.linalg.tensorinv(a, ind=ind)

    return fn


def tensorsolve(axes=None):
    """tensorsolve with ``a`` made well-conditioned as tensorinv's."""

    def fn(m, x, b):
        rows = b.size if b.shape else 1
        a = m.reshape(unique_singular_values(m, m.reshape(x, (rows, rows))), x.shape)
        return m.linalg.tensorsolve(a, b, axes=axes)

    return fn


# --- the rows ---------------------------------------------------------------------------------


def _linalg_eig():
    family = {"family": "contraction", "dtypes": LINALG_DTYPES}
    stricter = {"family": "contraction", "numpy_too": False}
    not_matrices = rejects(DTYPES, ShapeError, "not matrices")
    not_square = rejects(DTYPES, ShapeError, "not square")
    _numpy_rows(family, stricter, not_matrices, not_square)
    _lax_rows(family, stricter, not_matrices, not_square)


def _numpy_rows(family, stricter, not_matrices, not_square):
    add("linalg.eig", linalg_eig(), *SQUARES, **family)
    add("linalg.eig", linalg_eig(1), ((4, 4),), ((2, 3, 3),), label="eigenvectors", **family)
    add("linalg.eigvals", linalg_eigvals(), *SQUARES, **family)
    add("linalg.eigvals", linalg_eigvals(paired), ((4, 4),), ((3, 5, 5),), label="pairs",
        **family)  # fmt: skip
    for take in ("real", "imag"):  # float results: derivatives
        add("linalg.eigvals", linalg_eigvals(paired, take), ((4, 4),), ((2, 3, 3),),
            label=f"pairs,{take}", **family)  # fmt: skip
    for name in ("eig", "eigvals"):
        add(f"linalg.{name}", lambda m, x, name=name: getattr(m.linalg, name)(x), ((),),
            ((3,),), **not_matrices, family="contraction")  # fmt: skip
        add(f"linalg.{name}", lambda m, x, name=name: getattr(m.linalg, name)(x), ((2, 3),),
            **not_square, family="contraction")  # fmt: skip

    add("linalg.cond", conditioned(), ((4, 3),), ((3, 5),), ((2, 4, 4),), ((0, 3, 3),),
        **family)  # fmt: skip
    for p in (2, -2, 1, -1, np.inf, -np.inf, "fro", "nuc"):
        shapes = [((4, 4),), ((3, 3, 3),)] + ([((3, 5),)] if p in (2, -2) else [])
        add("linalg.cond", conditioned(p), *shapes, label=_label(p=p), **family)
    # a singular matrix: +inf (NaN turned to inf); compared as a bool, as it has no derivative
    add("linalg.cond", lambda m, x: m.linalg.cond(x * 0, 1) == np.inf, ((3, 3),),
        label="singular", **family)  # fmt: skip
    cond = lambda m, x: m.linalg.cond(x)  # noqa: E731
    add("linalg.cond", cond, ((),), ((3,),), **not_matrices, family="contraction")
    add("linalg.cond", cond, ((0, 0),), ((2, 0, 3),), family="contraction",
        **rejects(DTYPES, ShapeError, "empty"))  # fmt: skip
    add("linalg.cond", lambda m, x: m.linalg.cond(x, 1), ((2, 3),), family="contraction",
        **rejects(DTYPES, ShapeError, "p=1,not square"))  # fmt: skip
    add("linalg.cond", lambda m, x: m.linalg.cond(x, 3), ((3, 3),), family="contraction",
        **rejects(DTYPES, SpmdValueError, "p=3"))  # fmt: skip

    for ind, shapes in ((2, [((2, 3, 3, 2),), ((2, 2, 4),)]), (1, [((6, 2, 3),), ((4, 4),)])):
        add("linalg.tensorinv", tensorinv(ind), *shapes, label=_label(ind=ind), **family)
    add("linalg.tensorinv", tensorinv(1, numpy_reshapes=False), ((0, 3, 0),),
        label="ind=1,empty", **family)  # fmt: skip
    invert = lambda m, x: m.linalg.tensorinv(x)  # noqa: E731
    add("linalg.tensorinv", invert, ((),), family="contraction",
        **rejects(DTYPES, ShapeError, "0-d"))  # fmt: skip
    add("linalg.tensorinv", lambda m, x: m.linalg.tensorinv(x, ind=1), ((2, 3),),
        family="contraction", **rejects(DTYPES, ShapeError, "ind=1,not square"))  # fmt: skip
    add("linalg.tensorinv", lambda m, x: m.linalg.tensorinv(x, ind=0), ((2, 2),),
        family="contraction", **rejects(DTYPES, SpmdValueError, "ind=0"))  # fmt: skip

    add("linalg.tensorsolve", tensorsolve(), ((2, 3, 6), (2, 3)), ((4, 4), (4,)),
        ((), ()), ((0, 0), (0,)), **family)  # fmt: skip
    add("linalg.tensorsolve", tensorsolve(axes=(0,)), ((6, 2, 3), (2, 3)), label="axes=(0,)",
        **family)  # fmt: skip
    solve = lambda m, a, b: m.linalg.tensorsolve(a, b)  # noqa: E731
    add("linalg.tensorsolve", solve, ((2, 3, 5), (2, 3)), family="contraction",
        **rejects(DTYPES, ShapeError, "sizes"))  # fmt: skip
    add("linalg.tensorsolve", solve, ((3, 2, 6), (2, 3)), **stricter,
        **rejects(DTYPES, ShapeError, "leading shape"))  # fmt: skip


def _lax_rows(family, stricter, not_matrices, not_square):
    add("lax.linalg.eig", lax_eig(), *SQUARES, **family)
    no_left, no_right = {"compute_left_eigenvectors": False}, {"compute_right_eigenvectors": False}
    for kwargs in (no_left, no_right, no_left | no_right):
        add("lax.linalg.eig", lax_eig(**kwargs), ((4, 4),), ((3, 3, 3),), ((0, 2, 2),),
            label=_label(**kwargs), **family)  # fmt: skip
    values = {"compute_left_eigenvectors": False, "compute_right_eigenvectors": False}
    add("lax.linalg.eig", lax_eig(0, "real", **values), ((4, 4),), ((2, 3, 3),),
        label="eigenvalues,real", **family)  # fmt: skip
    opted = {"enable_eigvec_derivs": True}
    for part, name in ((1, "vl"), (2, "vr")):  # one float result: the derivative oracle
        for take in ("real", "imag"):
            add("lax.linalg.eig", lax_eig(part, take, **opted), ((4, 4),), ((2, 3, 3),),
                label=f"enable_eigvec_derivs,{name},{take}", **family)  # fmt: skip
    for name in ("eig", "schur", "hessenberg"):
        add(f"lax.linalg.{name}", lax_direct(name), ((),), ((3,),), **not_matrices, **stricter)
        add(f"lax.linalg.{name}", lax_direct(name), ((2, 3),), **not_square, **stricter)
    add("lax.linalg.eig", lax_direct("eig", implementation="magma"), ((3, 3),), **stricter,
        **rejects(FLOATS, SpmdValueError, "implementation=magma"))  # fmt: skip
    add("lax.linalg.eig", lax_direct("eig"), ((3, 3),), **stricter,
        **rejects((np.float16,), SpmdTypeError, "float16"))  # fmt: skip

    # On paired(x): the real Schur form has 2x2 blocks, its signs not hanging on rounding.
    # The form is unique only up to signs and each block's standardization, which may differ
    # between precisions: bools and integers are factored in float32, so that with x64 off
    # (when spmd's integers become float32, NumPy's float64) both sides still agree.
    pairs = lambda m, x: generic(m, paired(m, x if x.dtype.kind in "fc" else x.astype(np.float32)))  # noqa: E731
    add("lax.linalg.schur", lax_direct("schur", pairs), *SQUARES, **family)
    add("lax.linalg.schur", lax_direct("schur", pairs, compute_schur_vectors=False), ((4, 4),),
        ((3, 5, 5),), label="compute_schur_vectors=False", **family)  # fmt: skip
    add("lax.linalg.schur", lax_direct("schur", sort_eig_vals=True), ((3, 3),), **stricter,
        **rejects(FLOATS, SpmdValueError, "sort_eig_vals"))  # fmt: skip

    add("lax.linalg.hessenberg", lax_direct("hessenberg", lambda m, x: generic(m, x / 1)),
        *SQUARES, ((2, 2),), **family)  # fmt: skip

    householder = "lax.linalg.householder_product"
    add(householder, lax_direct("householder_product"), ((5, 3), (3,)), ((4, 4), (2,)),
        ((3, 5, 3), (3, 3)), ((0, 4, 3), (0, 2)), ((4, 3), (0,)), ((3, 0), (0,)),
        **family)  # fmt: skip
    add(householder, lax_direct("householder_product"), ((), ()), ((3, 4), (3,)),
        ((4, 3), (4,)), ((2, 4, 3), (3, 2)), **stricter,
        **rejects(DTYPES, ShapeError, "shapes"))  # fmt: skip


__all__ = ["NUMPY_EIG", "paired", "separated"]
