"""The case table's rows of spmd.numpy.linalg's compositions (spmd/numpy/linalg_compositions.py):
``diagonal``, ``trace``, ``vector_norm``, ``matrix_norm``, ``cross`` and ``matrix_power``,
against NumPy 2's numpy.linalg functions of those names.

The norms that need singular values and the negative powers (an inverse) take ``gram(x)``
(tests/cases/linalg.py): distinct, well-separated singular values and an invertible matrix
whatever x holds.
"""

from __future__ import annotations

import math

import numpy as np

from spmd import ShapeError, SpmdTypeError, SpmdValueError
from tests.cases.linalg import gram
from tests.cases.table import BOOL, DTYPES, NUMBERS, _label, add, rejects


def linalg(name, *args, **kwargs):
    return lambda m, *xs: getattr(m.linalg, name)(*xs, *args, **kwargs)


def on_gram(name, *args, **kwargs):
    return lambda m, x: getattr(m.linalg, name)(gram(m, x), *args, **kwargs)


STACKS = [((2, 3, 4),), ((3, 3),), ((4, 2),), ((0, 2, 2),), ((2, 0, 3),)]


def _diagonal_and_trace():
    for name, family in (("diagonal", "shape"), ("trace", "reduction")):
        for offset in (0, 1, -2):
            add(f"linalg.{name}", linalg(name, offset=offset), *STACKS,
                label=_label(offset=offset), family=family)  # fmt: skip
        add(f"linalg.{name}", linalg(name), ((),), ((3,),), family=family,
            **rejects(DTYPES, ShapeError, "not matrices"))  # fmt: skip
    add("linalg.trace", linalg("trace", dtype=np.float64), ((2, 3, 3),), ((0, 2, 2),),
        label="dtype=float64", family="reduction")  # fmt: skip


def _norms():
    family = {"family": "reduction"}
    # The 2-norm's (and 3-norm's) derivative at the zero vector, the norm of nothing too, is
    # NaN (sqrt at 0), in JAX as here: those rows leave size 0 to the others.
    vectors = [((),), ((5,),), ((2, 3),), ((0,),), ((2, 0, 3),), ((3, 4, 2),)]
    nonempty = [((),), ((5,),), ((2, 3),), ((3, 4, 2),)]
    add("linalg.vector_norm", linalg("vector_norm"), *nonempty, **family)
    for kwargs, shapes in (
        ({"axis": -1, "ord": 1}, vectors[1:]),
        ({"axis": 0, "ord": 3}, nonempty[1:]),
        ({"axis": (0, 2), "keepdims": True, "ord": 0.5}, [((2, 3, 4),), ((2, 0, 3),)]),
        ({"ord": 0}, vectors),
        ({"axis": (-1, 0), "ord": math.inf}, [((2, 3),), ((3, 4, 2),)]),
        ({"axis": 1, "ord": -math.inf, "keepdims": True}, [((2, 3),), ((0, 3),)]),
        ({"axis": -1, "ord": -1}, [((2, 5),), ((3,),)]),
    ):
        add("linalg.vector_norm", linalg("vector_norm", **kwargs), *shapes,
            label=_label(**kwargs), **family)  # fmt: skip
    add("linalg.vector_norm", linalg("vector_norm", ord=math.nan), ((3,),), numpy_too=False,
        **family, **rejects(NUMBERS, SpmdValueError, "ord=nan"))  # NumPy's is NaN  # fmt: skip

    matrices = [((2, 3, 4),), ((3, 3),), ((0, 2, 3),)]
    add("linalg.matrix_norm", linalg("matrix_norm"), *matrices, **family)  # (not 2x0x3: NaN)
    for ord_ in (1, -1, math.inf, -math.inf):
        empty = [((2, 0, 3),)] if abs(ord_) == 1 else []  # (the others: max of nothing)
        add("linalg.matrix_norm", linalg("matrix_norm", ord=ord_), *matrices, *empty,
            label=_label(ord=ord_), **family)  # fmt: skip
    for ord_ in ("nuc", 2, -2):  # singular values: of gram(x), well separated
        add("linalg.matrix_norm", on_gram("matrix_norm", ord=ord_), ((4, 3),), ((2, 5, 3),),
            ((0, 2, 2),), label=_label(ord=ord_), family="contraction")  # fmt: skip
    add("linalg.matrix_norm", linalg("matrix_norm", keepdims=True), ((2, 3, 4),), ((4, 2),),
        label="keepdims", **family)  # fmt: skip
    add("linalg.matrix_norm", linalg("matrix_norm", ord=1, keepdims=True), ((3, 3),),
        label="ord=1,keepdims", **family)  # fmt: skip
    add("linalg.matrix_norm", linalg("matrix_norm"), ((),), ((3,),), **family,
        **rejects(DTYPES, ShapeError, "not matrices"))  # fmt: skip
    add("linalg.matrix_norm", linalg("matrix_norm", ord=3), ((3, 3),), **family,
        **rejects(DTYPES, SpmdValueError, "ord=3"))  # fmt: skip


def _cross_and_power():
    family = {"family": "contraction"}
    add("linalg.cross", linalg("cross"), ((3,), (3,)), ((2, 3), (3,)), ((4, 3), (4, 3)),
        ((0, 3), (1, 3)), ((2, 1, 3), (4, 3)), dtypes=NUMBERS, **family)  # fmt: skip
    add("linalg.cross", linalg("cross", axis=0), ((3, 2), (3, 2)), ((3, 0), (3, 1)),
        label="axis=0", dtypes=NUMBERS, **family)  # fmt: skip
    add("linalg.cross", linalg("cross"), ((2, 3), (2, 3)), **family,
        **rejects(BOOL, SpmdTypeError, "bool"))  # fmt: skip
    add("linalg.cross", linalg("cross"), ((), ()), ((2,), (2,)), ((3,), (4,)),
        ((2, 3), (3, 3)), **family, **rejects(DTYPES, ShapeError, "shapes"))  # fmt: skip

    squares = [((3, 3),), ((2, 4, 4),), ((0, 2, 2),), ((2, 0, 0),)]
    for n in (0, 1, 2, 3):
        add("linalg.matrix_power", linalg("matrix_power", n), *squares, label=_label(n),
            **family)  # fmt: skip
    add("linalg.matrix_power", on_gram("matrix_power", -2), ((4, 3),), ((2, 5, 4),),
        label="-2", **family)  # fmt: skip
    add("linalg.matrix_power", linalg("matrix_power", 2), ((),), ((3,),), ((2, 3),), **family,
        **rejects(DTYPES, ShapeError, "not square matrices"))  # fmt: skip
    add("linalg.matrix_power", linalg("matrix_power", 1.5), ((3, 3),), **family,
        **rejects(DTYPES, SpmdTypeError, "n=1.5"))  # fmt: skip


def _linalg_compositions():
    _diagonal_and_trace()
    _norms()
    _cross_and_power()
