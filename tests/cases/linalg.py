"""The case table's decomposition rows: spmd.numpy.linalg.cholesky and spmd.lax.linalg's
cholesky and triangular_solve, against NumPy's cholesky and solve on the triangle.

Each row builds a well-conditioned operand from its random input inside ``fn``, written once
in ``m``'s functions: ``xᴴ x + n I`` is Hermitian positive definite whatever x holds (bools
and integers too), and a triangle of x plus 8 I has no zero on its diagonal. The rows are of
the contraction family, so that the partition, derivative, vmap and multi-process oracles run
them; batch sizes 3 and 5 give uneven and empty blocks on 8 devices.
"""

from __future__ import annotations

import numpy as np

import spmd
from spmd import ShapeError, SpmdTypeError
from tests.cases.table import DTYPES, _label, add, rejects

COMPLEX = (np.complex64, np.complex128)
LINALG_DTYPES = (*DTYPES, *COMPLEX)
LINALG = (  # rows' names
    "linalg.cholesky",
    "lax.linalg.cholesky",
    "lax.linalg.triangular_solve",
    "linalg.inv",
    "linalg.det",
    "linalg.slogdet",
    "linalg.solve",
    "linalg.eigh",
    "linalg.eigvalsh",
    "linalg.matrix_rank",
    "linalg.svd",
    "linalg.svdvals",
    "linalg.qr",
    "linalg.pinv",
)


def _adjoint(m, x):
    x = m.swapaxes(x, -1, -2)
    return m.conjugate(x) if x.dtype.kind == "c" else x


def gram(m, x):
    """``xᴴ x + n I`` for x (..., k, n): Hermitian positive definite, of x's dtype (bools:
    integers)."""
    n = x.shape[-1]
    return m.matmul(_adjoint(m, x), x) + n * np.eye(n, dtype=x.dtype)


def triangle(m, x, lower: bool):
    """x's lower (upper) triangle plus 8 I: its diagonal is far from zero."""
    n = x.shape[-1]
    return (m.tril(x) if lower else m.triu(x)) + 8 * np.eye(n, dtype=x.dtype)


def numpy_triangular_solve(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    """jax.lax.linalg.triangular_solve in NumPy: solve with op(triangle of a)."""
    a, b = np.asarray(a), np.asarray(b)
    a = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        n = a.shape[-1]
        a = np.where(np.eye(n, dtype=bool), np.ones((), a.dtype), a)
    a = np.conjugate(a) if conjugate_a else a
    a = np.swapaxes(a, -1, -2) if transpose_a else a
    if left_side:
        return np.linalg.solve(a, b)
    return np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)


def cholesky(name: str, **kwargs):
    if name == "linalg.cholesky":
        return lambda m, x: m.linalg.cholesky(gram(m, x), **kwargs)
    return lambda m, x: (
        np.linalg.cholesky(gram(m, x)) if m is np else spmd.lax.linalg.cholesky(gram(m, x))
    )


def direct_cholesky(name: str):
    """The named front end on the input itself (for the rows it rejects)."""
    if name == "linalg.cholesky":
        return lambda m, x: m.linalg.cholesky(x)
    return lambda m, x: (np.linalg if m is np else spmd.lax.linalg).cholesky(x)


def triangular_solve(**flags):
    def fn(m, x, b):
        a = triangle(m, x, flags["lower"])
        if m is np:
            return numpy_triangular_solve(a, b, **flags)
        return spmd.lax.linalg.triangular_solve(a, b, **flags)

    return fn


def _linalg():
    family = {"family": "contraction", "dtypes": LINALG_DTYPES}
    shapes = [((5, 3),), ((5, 4, 3),), ((3, 2, 4, 3),), ((0, 2, 2),), ((3, 0, 2),), ((2, 3, 0),)]
    for name in ("linalg.cholesky", "lax.linalg.cholesky"):
        add(name, cholesky(name), *shapes, **family)
        rank = rejects(DTYPES, ShapeError, label="not square matrices")
        add(name, direct_cholesky(name), ((),), ((4,),), ((2, 3),), ((3, 2, 4),),
            family="contraction", **rank)  # fmt: skip
        add(name, cholesky(name), ((4, 3),), family="contraction",
            **rejects((np.float16,), SpmdTypeError, label="float16"))  # fmt: skip
    for options in ({"upper": True}, {"upper": False}, {"symmetrize_input": False}):
        if "symmetrize_input" in options:  # NumPy reads the lower triangle, as this does
            fn = lambda m, x: (  # noqa: E731
                np.linalg.cholesky(gram(m, x))
                if m is np
                else m.linalg.cholesky(gram(m, x), symmetrize_input=False)
            )
        else:
            fn = cholesky("linalg.cholesky", **options)
        add("linalg.cholesky", fn, ((5, 3),), ((3, 4, 3),), label=_label(**options), **family)
    solves = [
        ({"left_side": True, "lower": True}, [((3, 3), (3, 2)), ((5, 3, 3), (5, 3, 2))]),
        ({"left_side": True, "lower": False}, [((0, 2, 2), (0, 2, 3)), ((2, 3, 3), (2, 3, 0))]),
        ({"left_side": False, "lower": True}, [((4, 4), (2, 4)), ((3, 4, 4), (3, 1, 4))]),
        ({"left_side": False, "lower": False, "transpose_a": True}, [((3, 3), (2, 3))]),
        ({"left_side": True, "lower": True, "transpose_a": True, "conjugate_a": True},
         [((3, 3), (3, 2)), ((3, 4, 4), (3, 4, 1))]),
        ({"left_side": True, "lower": False, "conjugate_a": True}, [((3, 3), (3, 2))]),
        ({"left_side": False, "lower": True, "unit_diagonal": True}, [((5, 3, 3), (5, 2, 3))]),
    ]  # fmt: skip
    defaults = {"transpose_a": False, "conjugate_a": False, "unit_diagonal": False}
    for options, shape_sets in solves:
        flags = defaults | options
        add("lax.linalg.triangular_solve", triangular_solve(**flags), *shape_sets,
            label=_label(**options), **family)  # fmt: skip
    add("lax.linalg.triangular_solve", lambda m, a, b: spmd.lax.linalg.triangular_solve(a, b),
        ((), (3, 3)), ((3, 3), (3,)), ((2, 3, 3), (3, 3, 3)), ((3, 3), (2, 4)), ((2, 3), (2, 3)),
        family="contraction", numpy_too=False, **rejects(DTYPES, ShapeError, "shapes"))  # fmt: skip
    _decompositions()


def on_gram(name: str, **kwargs):
    """``m.linalg.<name>`` of ``xᴴ x + n I``: invertible and Hermitian whatever x holds."""
    return lambda m, x: getattr(m.linalg, name)(gram(m, x), **kwargs)


def eigh_fixed_in_phase(upper: bool):
    """eigh's eigenvalues and its eigenvectors each scaled by a unit number that makes its
    first element real and positive (any such multiple is an eigenvector; this makes the
    answer unique where the eigenvalues are distinct)."""
    uplo = {"UPLO": "U"} if upper else {}

    def fn(m, x):
        w, v = m.linalg.eigh(gram(m, x), **uplo)
        first = v[..., :1, :]
        phase = m.conjugate(first) / m.abs(first) if first.dtype.kind == "c" else m.sign(first)
        return w, v * phase

    return fn


def unique_singular_values(m, x):
    """x (..., r, c) plus 8 on its diagonal and 3 times its index along it: distinct singular
    values far from zero whatever x holds, which makes the factors (up to phase) and their
    derivatives unique."""
    r, c = x.shape[-2:]
    ramp = np.eye(r, c) * (8 + 3 * np.arange(c))
    return x + ramp.astype(np.result_type(x.dtype, np.int64) if x.dtype.kind in "bi" else x.dtype)


def full_rank(name: str, **kwargs):
    """``m.linalg.<name>`` of unique_singular_values(x), its factors fixed in phase: each
    singular vector pair by U's first row, Q's columns by R's diagonal (made positive)."""

    def fn(m, x):
        result = getattr(m.linalg, name)(unique_singular_values(m, x), **kwargs)
        if name == "svd" and result[0].shape[-2]:  # (no rows: no vectors to fix)
            u, s, vh = result
            phase = _unit(m, u[..., :1, :])
            return u * phase, s, vh * m.swapaxes(m.conjugate(phase), -1, -2)
        if name == "qr":
            q, r = result
            k = min(r.shape[-2:])
            phase = _unit(m, m.diagonal(r, axis1=-2, axis2=-1))
            q = m.concatenate([q[..., :k] * phase[..., None, :], q[..., k:]], axis=-1)
            r = m.concatenate([r[..., :k, :] * m.conjugate(phase)[..., :, None], r[..., k:, :]],
                              axis=-2)  # fmt: skip
            return q, r
        return result

    return fn


def _unit(m, x):
    """x / |x| (sign for reals)."""
    return x / m.abs(x) if x.dtype.kind == "c" else m.sign(x)


def _decompositions():
    """Rows of the Array API's decompositions (spmd/prims/linalg_lapack.py). The
    compositions (vector_norm, cross, matrix_power, ...) are not in
    linalg_decompositions.__all__, which tests/test_cases.py takes for spmd.numpy.linalg's
    own names: tests/test_linalg_api.py checks them."""
    family = {"family": "contraction", "dtypes": LINALG_DTYPES}
    square = [((5, 3),), ((3, 4, 3),), ((0, 2, 2),), ((3, 0, 2),)]
    for name in ("inv", "det", "eigvalsh"):
        add(f"linalg.{name}", on_gram(name), *square, **family)
    add("linalg.eigh", lambda m, x: m.linalg.eigh(gram(m, x)).eigenvalues, ((4, 3),),
        ((0, 2, 2),), label="eigenvalues", **family)  # fmt: skip
    add("linalg.eigvalsh", on_gram("eigvalsh", UPLO="U"), *square[:2], label="UPLO=U", **family)
    add("linalg.slogdet", lambda m, x: tuple(m.linalg.slogdet(gram(m, x))), *square, **family)
    for upper in (False, True):  # bools and small integers give repeated eigenvalues
        add("linalg.eigh", eigh_fixed_in_phase(upper), ((4, 3),), ((5, 4, 3),),
            label="UPLO=U" if upper else "", family="contraction",
            dtypes=(np.float32, np.float64, *COMPLEX))  # fmt: skip
    solve = lambda m, x, b: m.linalg.solve(gram(m, x), b)  # noqa: E731
    add("linalg.solve", solve, ((4, 3), (3, 2)), ((5, 4, 3), (5, 3, 2)),
        ((2, 1, 3, 3), (4, 3, 1)), ((4, 3), (3,)), ((0, 3, 3), (0, 3, 2)), **family)  # fmt: skip
    add("linalg.matrix_rank", lambda m, x: m.linalg.matrix_rank(x), ((4, 3),), ((5, 2, 4),),
        ((0, 2, 3),), **family)  # fmt: skip
    floating = {"family": "contraction", "dtypes": (np.float32, np.float64, *COMPLEX)}
    for name, kwargs in (("svd", {"full_matrices": False}), ("svdvals", {}), ("qr", {}),
                         ("pinv", {})):  # fmt: skip
        add(f"linalg.{name}", full_rank(name, **kwargs), ((4, 3),), ((3, 4),), ((2, 5, 3),),
            label=_label(**kwargs), **family)  # fmt: skip
        # NumPy's pinv of no matrices keeps an integer dtype; the Array API's takes floats
        add(f"linalg.{name}", full_rank(name, **kwargs), ((0, 2, 3),), ((2, 0, 3),),
            label=_label(**kwargs), **(floating if name == "pinv" else family))  # fmt: skip
    add("linalg.svd", full_rank("svd"), ((3, 3),), label="full_matrices", **family)
    add("linalg.qr", full_rank("qr", mode="complete"), ((3, 3),), ((2, 4, 4),),
        label="mode=complete", **family)  # fmt: skip
    add("linalg.pinv", lambda m, x: m.linalg.pinv(unique_singular_values(m, x), rtol=1e-3),
        ((4, 3),), label="rtol", **family)  # fmt: skip
    for name in ("inv", "det", "slogdet", "eigh", "eigvalsh", "matrix_rank", "svd", "svdvals",
                 "qr", "pinv"):  # fmt: skip
        add(f"linalg.{name}", lambda m, x, name=name: getattr(m.linalg, name)(x), ((),), ((3,),),
            family="contraction", numpy_too=name != "matrix_rank",  # NumPy's ranks vectors
            **rejects(DTYPES, ShapeError, "not matrices"))  # fmt: skip
    add("linalg.inv", lambda m, x: m.linalg.inv(x), ((2, 3),), family="contraction",
        **rejects(DTYPES, ShapeError, "not square"))  # fmt: skip
    add("linalg.solve", lambda m, a, b: m.linalg.solve(a, b), ((), (3,)), ((3, 3), ()),
        ((3, 3), (2,)), ((2, 3, 3), (4, 3, 1)), family="contraction",
        **rejects(DTYPES, ShapeError, "shapes"))  # fmt: skip
    add("linalg.det", on_gram("det"), ((4, 3),), family="contraction",
        **rejects((np.float16,), SpmdTypeError, label="float16"))  # fmt: skip
