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
LINALG = ("linalg.cholesky", "lax.linalg.cholesky", "lax.linalg.triangular_solve")  # rows' names


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
