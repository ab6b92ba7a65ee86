"""The case table's contraction rows: matmul, dot, tensordot, outer and einsum."""

from __future__ import annotations

import numpy as np

from spmd import ShapeError
from tests.cases.table import BOOL, SPECIAL, _label, add, call

# ------------------------------------------------------------------------ contraction

MATMUL_SHAPES = [
    ((3,), (3,)),
    ((2, 3), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3, 4)),
    ((2, 2, 3), (2, 3, 4)),
    ((1, 2, 3), (5, 3, 4)),
    ((4, 2, 3), (3, 2)),
    ((3,), (2, 3, 4)),
    ((2, 1, 2, 3), (4, 3, 1)),
    ((0, 3), (3, 4)),
    ((2, 0), (0, 4)),
    ((0, 2, 3), (1, 3, 0)),
]
MIXED = (
    (np.int32, np.float32),
    (np.bool_, np.int32),
    (np.int8, np.uint8),
    (np.float32, np.float64),
)
DOT_SHAPES = [
    ((), ()),
    ((), (3,)),
    ((2, 3), ()),
    ((3,), (3,)),
    ((2, 3), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3, 4)),
    ((2, 3, 4), (5, 4, 2)),
    ((2, 0), (0, 3)),
    ((4,), (2, 4, 3)),
]
TENSORDOT = [
    ((2, 3, 4), (3, 4, 5), 2),
    ((2, 3), (3, 4), 1),
    ((2, 3), (4,), 0),
    ((3, 4, 2), (4, 5, 3), ([0, 1], [2, 0])),
    ((3, 4, 2), (4, 5, 3), ((-3, -2), (-1, 0))),
    ((2, 3), (3, 2), ([0, 1], [1, 0])),
    ((0, 3), (3, 0), 1),
    ((2, 3), (2, 3), 2),
    ((), (), 0),
]
EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("ij->", [(2, 3)]),
    ("ij->ji", [(2, 3)]),
    ("ijk->kji", [(2, 3, 4)]),
    ("ba", [(2, 3)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,i->", [(0,), (0,)]),
    ("i,i->i", [(1,), (3,)]),
    ("i,i->i", [(1,), (0,)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("ij,kj->ik", [(2, 3), (4, 3)]),
    ("ij,j->i", [(2, 3), (3,)]),
    ("ijk,ik->j", [(2, 3, 4), (2, 4)]),
    ("ii,ij->j", [(3, 3), (3, 2)]),
    ("...ij,...jk->...ik", [(5, 2, 3), (1, 3, 4)]),
    ("...ij,jk", [(2, 2, 3), (3, 4)]),
    ("i...->...", [(2, 3, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("i,i,i->", [(3,), (3,), (3,)]),
    (",ij->ij", [(), (2, 3)]),
    ("->", [()]),
    ("ij->j", [(0, 3)]),
]
# Bool operands (NumPy casts each operand to the result dtype, then multiplies and sums):
# per row the second operand's dtype, with the first one bool.
WITH_BOOL = (np.bool_, np.int32, np.float32)
BOOL_EINSUM = [
    ("ij,j->", [(4, 5), (5,)]),  # the first operand is summed over i on its own
    ("ij,jk->ik", [(2, 5), (5, 4)]),
    ("i,i->", [(5,), (5,)]),
    ("ij,j->i", [(2, 5), (5,)]),
    ("i,j->ij", [(3,), (4,)]),
]


def _contraction():
    co = {"family": "contraction"}
    add("matmul", call("matmul"), *MATMUL_SHAPES, **co)
    add("matmul", lambda m, x, y: x @ y, *MATMUL_SHAPES, label="x@y", **co)
    for a, b in MIXED:
        add(
            "matmul",
            call("matmul"),
            ((2, 3), (3, 4)),
            ((3,), (2, 3, 2)),
            label="mixed",
            dtypes=(a,),
            input_dtypes=(None, b),
            **co,
        )
    add(
        "matmul",
        call("matmul"),
        ((), (3,)),
        ((3,), ()),
        ((3, 4), (5, 6)),
        ((2, 4, 5), (3, 5, 6)),
        error=ShapeError,
        **co,
    )
    add("dot", call("dot"), *DOT_SHAPES, **co)
    add(
        "dot",
        call("dot"),
        ((2, 3), (3,)),
        ((), (2,)),
        label="mixed",
        input_dtypes=(None, np.int32),
        **co,
    )
    add("dot", call("dot"), ((2, 3), (4,)), error=ShapeError, **co)
    for a, b, axes in TENSORDOT:
        add("tensordot", call("tensordot", axes=axes), (a, b), label=_label(axes=axes), **co)
    add(
        "tensordot",
        call("tensordot", axes=([1], [0])),
        ((2, 3), (4, 3)),
        label="axes=([1],[0])",
        error=ShapeError,
        **co,
    )
    add("outer", call("outer"), ((3,), (4,)), ((2, 2), (3,)), ((), (0,)), ((0,), ()), **co)
    add("outer", call("outer"), ((3,), (4,)), label="mixed", input_dtypes=(None, np.float32), **co)
    for subscripts, shapes in EINSUM:
        add("einsum", _einsum(subscripts), shapes, label=subscripts, **co)
    add(
        "einsum",
        _einsum("ij,jk->ik"),
        ((2, 3), (3, 4)),
        label="mixed",
        input_dtypes=(None, np.float32),
        **co,
    )
    add("einsum", _einsum("ij,jk->ik"), ((2, 3), (4, 5)), label="ij,jk->ik", error=ShapeError, **co)
    _with_bool(co)


def _with_bool(co):
    """Bool with bool, int and float operands (either side), and floats with -0.0, NaN, inf."""
    for other in WITH_BOOL:
        for subscripts, shapes in BOOL_EINSUM:
            add(
                "einsum",
                _einsum(subscripts),
                shapes,
                label=subscripts,
                dtypes=BOOL,
                input_dtypes=(None, other),
                **co,
            )
        add(
            "outer",
            call("outer"),
            ((3,), (4,)),
            ((2, 2), ()),
            label="with_bool",
            dtypes=BOOL,
            input_dtypes=(None, other),
            **co,
        )
    second = {"dtypes": WITH_BOOL[1:], "input_dtypes": (None, np.bool_), **co}
    add("einsum", _einsum("jk,ij->ik"), ((5, 4), (3, 5)), label="jk,ij->ik", **second)
    add("outer", call("outer"), ((3,), (4,)), label="bool_second", **second)
    add(
        "einsum",
        _einsum("i,i,i->"),
        ((5,), (5,), (5,)),
        label="i,i,i->",
        dtypes=BOOL,
        input_dtypes=(None, np.int32, None),
        **co,
    )
    special = {**SPECIAL, **co}
    add(
        "einsum", _einsum("ij,jk->ik"), ((2, 3), (3, 4)), **special | {"label": "ij,jk->ik,special"}
    )
    add("einsum", _einsum("i,j->ij"), ((3,), (4,)), **special | {"label": "i,j->ij,special"})
    add("outer", call("outer"), ((3,), (4,)), ((2, 2), ()), **special)


def _einsum(subscripts):
    return lambda m, *xs: m.einsum(subscripts, *xs)
