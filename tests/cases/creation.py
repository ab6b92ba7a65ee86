"""The case table's creation rows: zeros, ones, full, arange, linspace, eye, array, *_like."""

from __future__ import annotations

import numpy as np

from spmd import SpmdTypeError
from tests.cases.table import BOOL, NO_DTYPE, NUMBERS, SHAPES, add, call, unary

# --------------------------------------------------------------------------- creation


def _creation():
    cr = {"family": "creation"}
    fixed = [
        ("zeros", lambda m: m.zeros((2, 3)), ""),
        ("zeros", lambda m: m.zeros(4, dtype=np.int32), "4,int32"),
        ("zeros", lambda m: m.zeros(()), "()"),
        ("ones", lambda m: m.ones((0, 2), dtype=np.float32), "(0,2),float32"),
        ("ones", lambda m: m.ones(3), "3"),
        ("zeros", lambda m: m.zeros((0, 4), np.bool_), "(0,4),bool"),
        ("empty", lambda m: m.empty((2, 3)), "(2,3)"),
        ("empty", lambda m: m.empty(0), "0"),
        ("full", lambda m: m.full((2, 2), 7), "(2,2),7"),
        ("full", lambda m: m.full(3, 1.5, dtype=np.float32), "3,1.5,float32"),
        ("full", lambda m: m.full((), True), "(),True"),
        ("full", lambda m: m.full((2, 0), 1.5), "(2,0),1.5"),
        ("arange", lambda m: m.arange(5), "5"),
        ("arange", lambda m: m.arange(0), "0"),
        ("arange", lambda m: m.arange(1.0, 3.0, 0.5), "1.0,3.0,0.5"),
        ("arange", lambda m: m.arange(0, 10, 3, dtype=np.int32), "0,10,3,int32"),
        ("arange", lambda m: m.arange(5, 1, -1), "5,1,-1"),
        ("linspace", lambda m: m.linspace(0, 1, 5), "0,1,5"),
        ("linspace", lambda m: m.linspace(0, 1, 4, endpoint=False), "0,1,4,endpoint=False"),
        ("linspace", lambda m: m.linspace(2, 3, 0), "2,3,0"),
        ("linspace", lambda m: m.linspace(-1, 1, 1), "-1,1,1"),
        ("eye", lambda m: m.eye(3), "3"),
        ("eye", lambda m: m.eye(2, 4, k=1, dtype=np.int64), "2,4,k=1,int64"),
        ("eye", lambda m: m.eye(4, 3, k=-1), "4,3,k=-1"),
        ("eye", lambda m: m.eye(0), "0"),
        ("array", lambda m: m.array([[1, 2], [3, 4]]), "[[1,2],[3,4]]"),
        ("array", lambda m: m.array([1, 2], dtype=np.float32), "[1,2],float32"),
        ("array", lambda m: m.array(2.5), "2.5"),
        ("array", lambda m: m.array([]), "[]"),
        ("asarray", lambda m: m.asarray([True, False]), "[True,False]"),
        ("asarray", lambda m: m.asarray(3), "3"),
        ("zeros_like", lambda m: m.zeros_like(np.ones((2, 3), np.float32)), "numpy"),
        ("ones_like", lambda m: m.ones_like(np.ones(3, np.int32)), "numpy"),
        ("full_like", lambda m: m.full_like(np.ones(2, np.float32), 3), "numpy"),
    ]
    for name, fn, label in fixed:
        add(name, fn, (), label=label, dtypes=NO_DTYPE, values=name != "empty", **cr)
    # Below, the dtype argument is a (dummy) input's dtype: a row runs on every dtype.
    scalar = ((),)
    add("zeros", lambda m, x: m.zeros((2, 3), dtype=x.dtype), scalar, label="dtype", **cr)
    add("ones", lambda m, x: m.ones((0, 3), x.dtype), scalar, label="dtype", **cr)
    add("ones", lambda m, x: m.ones((), x.dtype), scalar, label="(),dtype", **cr)
    add(
        "empty",
        lambda m, x: m.empty((3, 1), dtype=x.dtype),
        scalar,
        label="dtype",
        values=False,
        **cr,
    )
    add("full", lambda m, x: m.full((2, 3), 2, dtype=x.dtype), scalar, label="2,dtype", **cr)
    add("full", lambda m, x: m.full((2, 3), x), scalar, ((3,),), label="(2,3),x", **cr)
    add(
        "arange",
        lambda m, x: m.arange(1, 7, 2, dtype=x.dtype),
        scalar,
        label="dtype",
        dtypes=NUMBERS,
        **cr,
    )
    add("arange", lambda m, x: m.arange(2, dtype=x.dtype), scalar, label="2,dtype", **cr)
    add(
        "arange",
        lambda m, x: m.arange(3, dtype=x.dtype),
        scalar,
        label="3,rejects",
        dtypes=BOOL,
        error=SpmdTypeError,
        **cr,
    )
    add("linspace", lambda m, x: m.linspace(0, 10, 4, dtype=x.dtype), scalar, label="dtype", **cr)
    add("eye", lambda m, x: m.eye(3, dtype=x.dtype), scalar, label="dtype", **cr)
    add("eye", lambda m, x: m.eye(2, 3, k=-1, dtype=x.dtype), scalar, label="k=-1,dtype", **cr)
    add("array", lambda m, x: m.array(x), *unary(SHAPES[:4]), label="x", **cr)
    add(
        "array",
        lambda m, x: m.array(x, dtype=np.float32),
        *unary(SHAPES[:4]),
        label="x,float32",
        **cr,
    )
    add("asarray", lambda m, x: m.asarray(x), *unary(SHAPES[:4]), label="x", **cr)
    add(
        "asarray",
        lambda m, x: m.asarray(x, dtype=np.int64),
        *unary(SHAPES[:4]),
        label="x,int64",
        **cr,
    )
    for name in ("zeros_like", "ones_like"):
        add(name, call(name), *unary(SHAPES), **cr)
        add(name, call(name, dtype=np.float32), ((2, 3),), label="float32", **cr)
    add("full_like", call("full_like", 3), *unary(SHAPES), label="3", **cr)
    add("full_like", call("full_like", 2.5), ((2, 3),), label="2.5", **cr)
    add("full_like", call("full_like"), ((2, 3), ()), label="x,fill", **cr)
    add("full_like", call("full_like", 1, dtype=np.float32), ((2, 3),), label="1,float32", **cr)
