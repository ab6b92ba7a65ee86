"""The case table's rows of spmd.scipy.linalg, against scipy.linalg and numpy.linalg with JAX's
dtypes (tests/cases/linalg_scipy_numpy.py holds NumPy's side). Each row builds a
well-conditioned operand inside ``fn`` as tests/cases/linalg.py does (``gram``, ``triangle``,
``unique_singular_values``), and fixes phases where the factors are unique only up to them.
The rows are of the contraction family, so the partition, derivative, vmap and multi-process
oracles run them; schur's and hessenberg's return tuples, as neither has a derivative.
"""

from __future__ import annotations

import numpy as np

import spmd
import spmd.scipy.linalg
from spmd import ShapeError, SpmdValueError
from tests.cases.linalg import (
    LINALG_DTYPES,
    _adjoint,
    _unit,
    gram,
    triangle,
    unique_singular_values,
)
from tests.cases.linalg_eig import generic, paired
from tests.cases.linalg_scipy_numpy import NUMPY_SCIPY, _cho_solve, _inexact, _solve_with
from tests.cases.table import DTYPES, FLOATS, NO_DTYPE, _label, add, rejects

COMPLEX = (np.complex64, np.complex128)
DOUBLE = (np.float64, np.complex128)
SQUARE = [((5, 3),), ((3, 4, 3),), ((0, 2, 2),), ((3, 0, 2),)]  # gram(x): (.., 3, 3), ...
RECTANGLES = [((4, 4),), ((3, 5),), ((5, 3),), ((3, 4, 4),), ((0, 3, 3),), ((1, 1),),
              ((2, 0, 3),)]  # fmt: skip


def sp(m, name: str):
    return NUMPY_SCIPY[name] if m is np else getattr(spmd.scipy.linalg, name)


def direct(name, **kwargs):
    """The named function on the inputs themselves, tuples as tuples."""

    def fn(m, *xs):
        found = sp(m, name)(*xs, **kwargs)
        return tuple(found) if isinstance(found, list | tuple) else found

    return fn


# --- the rows' functions ------------------------------------------------------------------------


def on_gram(name, **kwargs):
    return lambda m, x: sp(m, name)(gram(m, x), **kwargs)


def cho_factor(lower: bool):
    """cho_factor's factor, its other triangle zeroed (SciPy leaves a's entries there)."""

    def fn(m, x):
        if m is np:
            c = NUMPY_SCIPY["cho_factor"](gram(m, x), lower=lower)
        else:
            c, flag = spmd.scipy.linalg.cho_factor(gram(m, x), lower=lower)
            assert flag is lower
        return m.tril(c) if lower else m.triu(c)

    return fn


def cho_solve(lower: bool):
    def fn(m, x, b):
        a = gram(m, x)
        if m is np:
            return _cho_solve((np.linalg.cholesky(_inexact(a)), True), b)
        return spmd.scipy.linalg.cho_solve(spmd.scipy.linalg.cho_factor(a, lower=lower), b)

    return fn


def solve_triangular(**kwargs):
    def fn(m, x, b):
        a = triangle(m, x, kwargs.get("lower", False))
        if m is np:
            trans = kwargs.get("trans", 0)
            op = {0: lambda t: t, "N": lambda t: t, 1: lambda t: np.swapaxes(t, -1, -2),
                  "T": lambda t: np.swapaxes(t, -1, -2), 2: lambda t: _adjoint(np, t),
                  "C": lambda t: _adjoint(np, t)}[trans]  # fmt: skip
            if kwargs.get("unit_diagonal"):
                n = a.shape[-1]
                a = np.where(np.eye(n, dtype=bool), np.ones((), a.dtype), a)
            return _solve_with(op)(a, b)
        return spmd.scipy.linalg.solve_triangular(a, b, **kwargs)

    return fn


def lu_solve(trans: int):
    def fn(m, x, b):
        a = unique_singular_values(m, x)
        return sp(m, "lu_solve")(sp(m, "lu_factor")(a), b, trans=trans)

    return fn


def solve(**kwargs):
    """solve of gram(x) (Hermitian positive definite: every assume_a fits it); with
    assume_a='pos', spmd's a holds 100 in the triangle that is not read (SciPy's answer is
    that of gram(x), which NumPy's side solves)."""

    def fn(m, x, b):
        a = gram(m, x)
        if m is np:
            return sp(m, "solve")(a, b)
        if kwargs.get("assume_a") == "pos":
            junk = a * 0 + 100
            a = a + (m.triu(junk, 1) if kwargs.get("lower") else m.tril(junk, -1))
        return spmd.scipy.linalg.solve(a, b, **kwargs)

    return fn


def eigh(**kwargs):
    """eigh of gram(x): eigenvalues, and eigenvectors (distinct on floats) each made real
    and positive in its first element."""

    def fn(m, x):
        a = gram(m, x)
        if kwargs.get("eigvals_only"):
            return sp(m, "eigh")(a, **kwargs)
        w, v = sp(m, "eigh")(a, **kwargs)
        return w, v * m.conjugate(_unit(m, v[..., :1, :]))

    return fn


def svd(**kwargs):
    """svd of unique_singular_values(x), each pair fixed in phase by U's first row."""

    def fn(m, x):
        found = sp(m, "svd")(unique_singular_values(m, x), **kwargs)
        if not kwargs.get("compute_uv", True):
            return found
        u, s, vh = found
        if not u.shape[-2]:
            return u, s, vh
        phase = m.conjugate(_unit(m, u[..., :1, :]))
        k = s.shape[-1]
        return u * phase, s, vh * m.swapaxes(m.conjugate(phase[..., :k]), -1, -2)

    return fn


def qr(mode="full"):
    """qr of unique_singular_values(x), R's diagonal made real and positive (Q's columns
    along)."""

    def fn(m, x):
        found = sp(m, "qr")(unique_singular_values(m, x), mode=mode)
        r = found[-1]
        k = min(r.shape[-2:])
        phase = _unit(m, m.diagonal(r, axis1=-2, axis2=-1))
        r = m.concatenate([r[..., :k, :] * m.conjugate(phase)[..., :, None], r[..., k:, :]],
                          axis=-2)  # fmt: skip
        if mode == "r":
            return (r,)
        q = found[0]
        q = m.concatenate([q[..., :k] * phase[..., None, :], q[..., k:]], axis=-1)
        return q, r

    return fn


def schur(output="real"):
    """schur of paired(x) (bools and integers in float32: see tests/cases/linalg_eig.py)."""

    def fn(m, x):
        a = generic(m, paired(m, x if x.dtype.kind in "fc" else x.astype(np.float32)))
        return tuple(sp(m, "schur")(a, output=output))

    return fn


def hessenberg(calc_q=False):
    def fn(m, x):
        a = generic(m, x / 1)
        found = sp(m, "hessenberg")(a, calc_q=calc_q)
        return tuple(found) if calc_q else (found,)

    return fn


def expm(scale, **kwargs):
    def fn(m, x):
        a = x / scale
        if kwargs.get("upper_triangular"):
            a = m.triu(a)
        return sp(m, "expm")(a, **kwargs)

    return fn


def listed(name):
    return lambda m, *xs: sp(m, name)(*xs)


# --- the rows ---------------------------------------------------------------------------------


def _linalg_scipy():
    family = {"family": "contraction", "dtypes": LINALG_DTYPES}
    floating = {"family": "contraction", "dtypes": (*FLOATS, *COMPLEX)}
    stricter = {"family": "contraction", "numpy_too": False}
    not_matrices = rejects(DTYPES, ShapeError, "not matrices")
    not_square = rejects(DTYPES, ShapeError, "not square")
    _factor_rows(family, stricter, not_matrices, not_square)
    _decomposition_rows(family, floating, stricter, not_matrices, not_square)
    _constructor_rows(family, stricter)


def _name(short):
    return f"scipy.linalg.{short}"


def _factor_rows(family, stricter, not_matrices, not_square):
    for lower in (False, True):
        add(_name("cholesky"), on_gram("cholesky", lower=lower), *SQUARE,
            label=_label(lower=lower), **family)  # fmt: skip
        add(_name("cho_factor"), cho_factor(lower), *SQUARE, label=_label(lower=lower),
            **family)  # fmt: skip
        add(_name("cho_solve"), cho_solve(lower), ((5, 3), (3, 2)), ((3, 4, 3), (3, 3, 2)),
            ((4, 3), (3,)), ((2, 1, 4, 3), (4, 3, 1)), ((0, 3, 2), (0, 2, 1)),
            ((3, 4, 3), (3, 3)),
            label=_label(lower=lower), **family)  # fmt: skip
    solves = [((3, 3), (3, 2)), ((5, 3, 3), (5, 3, 2)), ((3, 3), (3,)), ((0, 2, 2), (0, 2, 3)),
              ((2, 1, 3, 3), (4, 3, 1))]  # fmt: skip
    for kwargs in ({}, {"lower": True}, {"trans": 1}, {"trans": "C", "lower": True},
                   {"trans": 2, "unit_diagonal": True}, {"trans": "T"}):  # fmt: skip
        add(_name("solve_triangular"), solve_triangular(**kwargs), *solves,
            label=_label(**kwargs), **family)  # fmt: skip
    add(_name("lu_factor"), direct("lu_factor"), *RECTANGLES, **family)
    add(_name("lu"), direct("lu"), *RECTANGLES, **family)
    add(_name("lu"), direct("lu", permute_l=True), ((4, 4),), ((3, 5),), ((2, 5, 3),),
        label="permute_l", **family)  # fmt: skip
    for trans in (0, 1, 2):
        add(_name("lu_solve"), lu_solve(trans), ((3, 3), (3, 2)), ((4, 3, 3), (4, 3, 1)),
            ((3, 3), (3,)), ((0, 2, 2), (0, 2, 1)), ((2, 1, 3, 3), (4, 3, 2)),
            label=_label(trans=trans), **family)  # fmt: skip
    for kwargs in ({}, {"assume_a": "sym"}, {"assume_a": "her"}, {"assume_a": "pos"},
                   {"assume_a": "pos", "lower": True}):  # fmt: skip
        add(_name("solve"), solve(**kwargs), ((4, 3), (3, 2)), ((5, 4, 3), (5, 3, 2)),
            ((4, 3), (3,)), ((0, 3, 3), (0, 3, 2)), ((2, 1, 3, 3), (4, 3, 1)),
            label=_label(**kwargs), **family)  # fmt: skip
    for name in ("cholesky", "cho_factor", "lu_factor", "lu"):  # SciPy takes 0-d as 1x1
        add(_name(name), direct(name), ((),), ((3,),), **not_matrices, **stricter)
    for name in ("cholesky", "cho_factor"):
        add(_name(name), direct(name), ((2, 3),), **not_square, **stricter)
    add(_name("solve"), direct("solve", assume_a="triangular"), ((3, 3), (3,)), **stricter,
        **rejects(FLOATS, SpmdValueError, "assume_a=triangular"))  # fmt: skip
    add(_name("solve_triangular"), direct("solve_triangular", trans=3), ((3, 3), (3,)),
        **stricter, **rejects(FLOATS, SpmdValueError, "trans=3"))  # fmt: skip
    add(_name("lu_solve"), lambda m, a, b: sp(m, "lu_solve")(sp(m, "lu_factor")(a), b, trans=3),
        ((3, 3), (3,)), **stricter, **rejects(FLOATS, SpmdValueError, "trans=3"))  # fmt: skip
    factored = lambda m, x, b: sp(m, "cho_solve")(sp(m, "cho_factor")(gram(m, x)), b)  # noqa: E731
    add(_name("cho_solve"), factored, ((4, 3), (4,)), ((3, 4, 3), (2, 3, 1)), **stricter,
        **rejects(DTYPES, ShapeError, "shapes"))  # fmt: skip
    add(_name("cho_solve"), factored, ((3, 3), ()), **stricter,
        **rejects(DTYPES, ShapeError, "0-d b"))  # fmt: skip
    for name in ("solve", "solve_triangular"):
        add(_name(name), direct(name), ((3, 3), ()), ((3, 3), (2,)), ((2, 3, 3), (4, 3, 1)),
            **stricter, **rejects(DTYPES, ShapeError, "shapes"))  # fmt: skip
    lu_rhs = lambda m, a, b: sp(m, "lu_solve")(sp(m, "lu_factor")(a), b)  # noqa: E731
    add(_name("lu_solve"), lu_rhs, ((3, 3), ()), ((3, 3), (2,)), **stricter,
        **rejects(DTYPES, ShapeError, "shapes"))  # fmt: skip


def _decomposition_rows(family, floating, stricter, not_matrices, not_square):
    add(_name("inv"), on_gram("inv"), *SQUARE, **family)
    add(_name("det"), on_gram("det"), *SQUARE, **family)
    add(_name("det"), direct("det"), ((3, 3),), ((2, 0, 0),), label="x", **family)
    add(_name("eigh"), eigh(eigvals_only=True), *SQUARE, label="eigvals_only", **family)
    for kwargs in ({}, {"lower": False}):
        add(_name("eigh"), eigh(**kwargs), ((4, 3),), ((5, 4, 3),), label=_label(**kwargs),
            **floating)  # fmt: skip
    add(_name("svd"), svd(compute_uv=False), *RECTANGLES, label="compute_uv=False", **family)
    add(_name("svd"), svd(full_matrices=False), ((4, 3),), ((3, 4),), ((2, 5, 3),),
        ((0, 2, 3),), label="full_matrices=False", **family)  # fmt: skip
    add(_name("svd"), svd(), ((3, 3),), ((2, 4, 4),), label="full_matrices", **family)
    for mode, shapes in (("full", [((3, 3),), ((3, 5),), ((2, 4, 4),), ((0, 3, 3),)]),
                         ("economic", [((4, 3),), ((3, 4),), ((2, 5, 3),), ((2, 0, 3),)]),
                         ("r", [((4, 3),), ((3, 4),), ((2, 5, 3),)])):  # fmt: skip
        add(_name("qr"), qr(mode), *shapes, label=_label(mode=mode), **family)
    for output in ("real", "complex"):
        add(_name("schur"), schur(output), ((4, 4),), ((3, 5, 5),), ((0, 2, 2),), ((1, 1),),
            label=_label(output=output), **family)  # fmt: skip
    for calc_q in (False, True):
        add(_name("hessenberg"), hessenberg(calc_q), ((4, 4),), ((3, 5, 5),), ((2, 2),),
            ((1, 1),), ((0, 3, 3),), ((2, 0, 0),), label=_label(calc_q=calc_q),
            **family)  # fmt: skip
    add(_name("expm"), expm(8), ((4, 4),), ((3, 3, 3),), ((0, 2, 2),), ((1, 1),),
        ((2, 0, 0),), label="x/8", **family)  # fmt: skip
    add(_name("expm"), expm(2), ((4, 4),), ((2, 5, 5),), label="x/2,squarings",
        family="contraction", dtypes=DOUBLE)  # fmt: skip
    add(_name("expm"), expm(4, upper_triangular=True), ((4, 4),), ((2, 3, 3),),
        label="upper_triangular", **family)  # fmt: skip

    for name in ("inv", "det", "eigh", "svd", "qr", "schur", "hessenberg"):
        add(_name(name), direct(name), ((),), ((3,),), **not_matrices, family="contraction")
    add(_name("expm"), direct("expm"), ((),), ((3,),), **not_matrices, **stricter)
    for name in ("inv", "det", "eigh", "schur", "hessenberg", "expm"):
        add(_name(name), direct(name), ((2, 3),), **not_square, family="contraction")
    add(_name("eigh"), lambda m, a, b: sp(m, "eigh")(a, b), ((3, 3), (3, 3)), **stricter,
        **rejects(FLOATS, SpmdValueError, "b"))  # fmt: skip
    add(_name("qr"), direct("qr", mode="raw"), ((3, 3),), **stricter,
        **rejects(FLOATS, SpmdValueError, "mode=raw"))  # fmt: skip
    add(_name("schur"), direct("schur", output="quasi"), ((3, 3),), family="contraction",
        **rejects(FLOATS, SpmdValueError, "output=quasi"))  # fmt: skip


def _constructor_rows(family, stricter):
    blocks = [((2, 2), (3,), ()), ((1, 3), (2, 2)), ((0, 2), (2, 0)), ((2, 2),), ((0,), (2, 1))]
    add(_name("block_diag"), listed("block_diag"), *blocks, **family)
    add(_name("block_diag"), listed("block_diag"), ((2, 2), (3,)), label="mixed",
        input_dtypes=(None, np.int32), **family)  # fmt: skip
    add(_name("block_diag"), lambda m: sp(m, "block_diag")(), (), label="none",
        family="contraction", dtypes=NO_DTYPE)  # fmt: skip
    add(_name("block_diag"), listed("block_diag"), ((2, 2, 2),), ((2,), (1, 2, 3)), **stricter,
        **rejects(DTYPES, ShapeError, "3-d"))  # fmt: skip
    add(_name("toeplitz"), listed("toeplitz"), ((3,), (4,)), ((3,),), ((2, 3), (2, 4)),
        ((), ()), ((),), ((0,), (3,)), ((3,), (0,)), ((2, 1, 3), (4, 2)), **family)  # fmt: skip
    add(_name("toeplitz"), listed("toeplitz"), ((2, 3), (3, 4)), family="contraction",
        **rejects(DTYPES, ShapeError, "batches"))  # fmt: skip
