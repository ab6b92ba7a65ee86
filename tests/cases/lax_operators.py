"""The case table's rows for spmd.lax's general operators: dot_general (against NumPy's
einsum), the shape operators, pad and the static slices, select_n, and the array makers
(against tests/cases/lax_reference.py). Arguments lax refuses (bad dimension numbers,
permutations, shapes) are error rows."""

from __future__ import annotations

import numpy as np

import spmd
from spmd import ShapeError, SpmdIndexError, SpmdTypeError
from tests.cases.lax_arithmetic import lax_call, lax_of, refuses
from tests.cases.table import BOOL, DTYPES, FLOATS, NUMBERS, SHAPES, _label, add, unary

COMPLEX = (np.complex64, np.complex128)


def _fails(error, dtypes=FLOATS, label="error"):
    """A row whose arguments spmd.lax refuses with ``error`` (NumPy's stand-in is not asked)."""
    return {"label": label, "dtypes": dtypes, "error": error, "numpy_too": False}


# ---------------------------------------------------------------------------- dot_general

DOTS = [  # lhs, rhs, dimension_numbers, NumPy's einsum of them
    ((3, 4), (4, 5), (((1,), (0,)), ((), ())), "ij,jk->ik"),
    ((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,))), "bij,bjk->bik"),
    ((4, 3, 2), (2, 3), (((1, 2), (1, 0)), ((), ())), "ijk,kj->i"),
    ((3, 2, 5), (5, 2), (((2,), (0,)), ((1,), (1,))), "iab,ba->ai"),
    ((3,), (3,), (((0,), (0,)), ((), ())), "i,i->"),
    ((2,), (3,), (((), ()), ((), ())), "i,j->ij"),
    ((), (3,), (((), ()), ((), ())), ",j->j"),
    ((2, 0), (0, 3), (((1,), (0,)), ((), ())), "ij,jk->ik"),
    ((0, 2), (2, 3), (((1,), (0,)), ((), ())), "ij,jk->ik"),
]


def _dot(dims, subscripts, computed_in=None, **kwargs):
    """lax.dot_general, and for NumPy einsum (in ``computed_in``, the dtype JAX's rule gives
    mixed operands, or preferred_element_type)."""

    def fn(m, x, y):
        if m is np:
            dtype = kwargs.get("preferred_element_type", computed_in)
            x, y = (x, y) if dtype is None else (x.astype(dtype), y.astype(dtype))
            return np.einsum(subscripts, x, y)
        return spmd.lax.dot_general(x, y, dims, **kwargs)

    return fn


def _dot_rows():
    kw = {"family": "contraction"}
    for lhs, rhs, dims, subscripts in DOTS:
        add("lax.dot_general", _dot(dims, subscripts), (lhs, rhs), label=subscripts, **kw)
    lhs, rhs, dims, subscripts = DOTS[1]
    add("lax.dot_general", _dot(dims, subscripts, preferred_element_type=np.float64),
        (lhs, rhs), label="preferred=float64", dtypes=NUMBERS, **kw)  # fmt: skip
    add("lax.dot_general", _dot(dims, subscripts, np.float32), (lhs, rhs), label="int32,float32",
        dtypes=(np.float32,), input_dtypes=(np.int32, np.float32), **kw)  # fmt: skip
    bad = [
        ("sizes", (((1,), (1,)), ((), ()))),  # 4 against 5
        ("range", (((2,), (0,)), ((), ()))),
        ("lengths", (((1,), (0, 1)), ((), ()))),
        ("repeat", (((1, 1), (0, 0)), ((), ()))),
        ("batch=contracting", (((0,), (0,)), ((0,), (0,)))),
    ]
    for label, wrong in bad:
        add("lax.dot_general", _dot(wrong, ""), ((3, 4), (4, 5)),
            **_fails(ShapeError, label=label), **kw)  # fmt: skip
    add("lax.dot_general", _dot((1, 0), ""), ((3, 4), (4, 5)),
        **_fails(SpmdTypeError, label="form"), **kw)  # fmt: skip
    add("lax.dot_general", _dot(dims, subscripts, preferred_element_type=np.int32), (lhs, rhs),
        **_fails(SpmdTypeError, label="preferred=int32"), **kw)  # fmt: skip


# ---------------------------------------------------------------------------- shapes


def _shape_rows():
    kw = {"family": "shape"}
    broadcasts = [((3,), (2, 3), (1,)), ((2, 1), (2, 4), (0, 1)), ((), (2, 3), ()),
                  ((0, 3), (2, 0, 3), (1, 2)), ((2, 3), (3, 4, 2), (2, 0)),
                  ((1,), (0,), (0,))]  # fmt: skip
    for operand, shape, dims in broadcasts:
        add("lax.broadcast_in_dim", lax_call("broadcast_in_dim", shape, dims), (operand,),
            label=_label(shape, dims), **kw)  # fmt: skip
    for label, operand, shape, dims in (("sizes", (3,), (2, 4), (1,)),
                                        ("count", (3,), (2, 3), (0, 1)),
                                        ("repeat", (3, 3), (3, 3), (0, 0)),
                                        ("range", (3,), (3,), (1,))):  # fmt: skip
        add("lax.broadcast_in_dim", lax_call("broadcast_in_dim", shape, dims), (operand,),
            **_fails(ShapeError, label=label), **kw)  # fmt: skip
    add("lax.broadcast", lax_call("broadcast", (4,)), ((2, 3),), ((),), label="(4,)", **kw)
    add("lax.broadcast", lax_call("broadcast", (2, 0)), ((3,),), label="(2,0)", **kw)
    reshapes = [((2, 3), (3, 2), None), ((2, 3), (6,), (1, 0)), ((), (1, 1), None),
                ((0, 3), (3, 0), None), ((3, 4, 2), (4, 6), (2, 0, 1))]  # fmt: skip
    for operand, sizes, dims in reshapes:
        add("lax.reshape", lax_call("reshape", sizes, dims), (operand,),
            label=_label(sizes, dims), **kw)  # fmt: skip
    add("lax.reshape", lax_call("reshape", (4,)), ((2, 3),), **_fails(ShapeError, label="size"),
        **kw)  # fmt: skip
    add("lax.reshape", lax_call("reshape", (-1,)), ((2, 3),), **_fails(ShapeError, label="-1"),
        **kw)  # fmt: skip
    for operand, perm in (((2, 3, 4), (2, 0, 1)), ((), ()), ((0, 3), (1, 0))):
        add("lax.transpose", lax_call("transpose", perm), (operand,), label=_label(perm), **kw)
    add("lax.transpose", lax_call("transpose", (0, 0)), ((2, 3),),
        **_fails(ShapeError, label="(0,0)"), **kw)  # fmt: skip
    for operand, dims in (((1, 3, 1), (0, 2)), ((1,), (0,)), ((2, 1, 0), (-2,))):
        add("lax.squeeze", lax_call("squeeze", dims), (operand,), label=_label(dims), **kw)
    add("lax.squeeze", lax_call("squeeze", (1,)), ((2, 3),), **_fails(ShapeError, label="(1,)"),
        **kw)  # fmt: skip
    for operand, dims in (((2, 3), (0,)), ((), (0, 1)), ((0,), (-1,))):
        add("lax.expand_dims", lax_call("expand_dims", dims), (operand,), label=_label(dims), **kw)
    add("lax.expand_dims", lax_call("expand_dims", (0, -3)), ((2,),),
        **_fails(ShapeError, label="(0,-3)"), **kw)  # fmt: skip
    joined = lambda dimension: lambda m, *xs: lax_of(m).concatenate(list(xs), dimension)  # noqa: E731
    add("lax.concatenate", joined(0), ((2, 3), (4, 3)), ((0,), (0,)), ((3,),), label="0", **kw)
    add("lax.concatenate", joined(1), ((2, 3), (2, 0), (2, 1)), label="1", **kw)
    add("lax.concatenate", joined(0), ((), ()), **_fails(ShapeError, label="0-d"), **kw)
    add("lax.concatenate", joined(0), ((2,), (2,)), input_dtypes=(None, np.float32),
        **_fails(SpmdTypeError, (np.float64,), "float64,float32"), **kw)  # fmt: skip
    for operand, dims in (((2, 3), (0,)), ((3, 4, 2), (0, 2)), ((), ()), ((0, 3), (1,))):
        add("lax.rev", lax_call("rev", dims), (operand,), label=_label(dims), **kw)
    add("lax.rev", lax_call("rev", (-1,)), ((2, 3),), **_fails(ShapeError, label="(-1,)"), **kw)


def _select_rows():
    kw = {"family": "elementwise"}
    choose = lambda m, *xs: lax_of(m).select_n(xs[-1], *xs[:-1])  # noqa: E731
    add("lax.select_n", choose, ((5,), (5,), (5,)), indices=([0, 1, 2, 1, 0],), label="int",
        **kw)  # fmt: skip
    add("lax.select_n", choose, ((2, 3), (2, 3)), indices=(1,), label="scalar", **kw)
    by_flag = lambda m, x, y, w: lax_of(m).select_n(w != 0, x, y)  # noqa: E731
    add("lax.select_n", by_flag, ((4,), (4,)), indices=([1, 0, 0, 1],), label="bool", **kw)
    add("lax.select_n", by_flag, ((), ()), indices=(0,), label="bool", **kw)
    add("lax.select_n", by_flag, ((0,), (0,)), indices=([],), label="bool", **kw)
    add("lax.select_n", choose, ((2,), (3,)), indices=([0, 1],), **_fails(ShapeError), **kw)


# ---------------------------------------------------------------------- pad and slices

PADS = [((5,), [(1, 2, 0)]), ((5,), [(0, 0, 1)]), ((5,), [(-1, 1, 2)]), ((5,), [(2, -3, 1)]),
        ((2, 3), [(1, 0, 1), (0, -1, 0)]), ((), []), ((0,), [(1, 1, 2)]),
        ((3, 4, 2), [(0, 0, 0), (1, 1, 1), (-1, 0, 0)]), ((3,), [(-6, 4, 1)])]  # fmt: skip


def _pad_rows():
    kw = {"family": "shape"}
    for operand, config in PADS:
        add("lax.pad", lax_call("pad", 0, config), (operand,), label=_label(config), **kw)
    traced = lambda m, x, v: lax_of(m).pad(x, v, [(1, -1, 2), (0, 1, 0)])  # noqa: E731
    add("lax.pad", traced, ((2, 3), ()), label="traced-value", **kw)
    for label, config in (("interior<0", [(0, 0, -1)]), ("count", [(1, 1, 0)] * 2),
                          ("negative", [(-4, -3, 0)])):  # fmt: skip
        add("lax.pad", lax_call("pad", 0, config), ((5,),), **_fails(ShapeError, label=label), **kw)
    add("lax.pad", lambda m, x, v: lax_of(m).pad(x, v, [(1, 1, 0)]), ((3,), (2,)),
        **_fails(ShapeError, label="vector-value"), **kw)  # fmt: skip
    slices = [((5,), (1,), (4,), (2,)), ((2, 3), (0, 1), (2, 3), None), ((), (), (), None),
              ((0, 3), (0, 1), (0, 3), None),
              ((3, 4, 2), (1, 0, 0), (3, 4, 2), (1, 3, 1))]  # fmt: skip
    for operand, starts, limits, strides in slices:
        add("lax.slice", lax_call("slice", starts, limits, strides), (operand,),
            label=_label(starts, limits, strides), **kw)  # fmt: skip
    for label, starts, limits, strides in (("start>limit", (3,), (2,), None),
                                           ("stride=0", (0,), (5,), (0,)),
                                           ("count", (0, 0), (5, 5), None)):  # fmt: skip
        add("lax.slice", lax_call("slice", starts, limits, strides), ((5,),),
            **_fails(ShapeError, label=label), **kw)  # fmt: skip
    in_dim = [((5,), (1, 4)), ((2, 3), (-2, None, 1, 1)), ((4, 3), (None, None, 2, 0)),
              ((0, 3), (0, 2, 1, 1))]  # fmt: skip
    for operand, args in in_dim:
        add("lax.slice_in_dim", lax_call("slice_in_dim", *args), (operand,), label=_label(*args),
            **kw)  # fmt: skip
    add("lax.slice_in_dim", lax_call("slice_in_dim", 0, 1), ((),), **_fails(ShapeError), **kw)
    for operand, args in (((5,), (2,)), ((2, 3), (-1, 1, False)), ((0, 3), (1, 1))):
        add("lax.index_in_dim", lax_call("index_in_dim", *args), (operand,), label=_label(*args),
            **kw)  # fmt: skip
    add("lax.index_in_dim", lax_call("index_in_dim", 2), ((2, 3),), **_fails(SpmdIndexError),
        **kw)  # fmt: skip
    add("lax.index_in_dim", lax_call("index_in_dim", 0), ((),), **_fails(ShapeError), **kw)


# ---------------------------------------------------------------------- array makers


def _creation_rows():
    kw, scalar = {"family": "creation"}, ((),)
    add("lax.iota", lambda m, x: lax_of(m).iota(x.dtype, 5), scalar, label="5", dtypes=NUMBERS,
        **kw)  # fmt: skip
    add("lax.iota", lambda m, x: lax_of(m).iota(x.dtype, 0), scalar, label="0", dtypes=NUMBERS,
        **kw)  # fmt: skip
    add("lax.iota", lambda m, x: lax_of(m).iota(x.dtype, 3), scalar, **refuses(BOOL), **kw)
    for shape, dimension in (((2, 3), 1), ((0, 4), 0), ((3, 2, 2), 0)):
        counted = lambda m, x, s=shape, d=dimension: lax_of(m).broadcasted_iota(x.dtype, s, d)  # noqa: E731
        add("lax.broadcasted_iota", counted, scalar, label=_label(shape, dimension), dtypes=NUMBERS,
            **kw)  # fmt: skip
    add("lax.broadcasted_iota", lambda m, x: lax_of(m).broadcasted_iota(x.dtype, (2,), 0), scalar,
        **refuses(BOOL), **kw)  # fmt: skip
    add("lax.broadcasted_iota", lambda m, x: lax_of(m).broadcasted_iota(x.dtype, (2,), 1), scalar,
        **_fails(ShapeError, NUMBERS, "dimension=1"), **kw)  # fmt: skip
    add("lax.full", lambda m, x: lax_of(m).full((2, 3), x), scalar, label="(2,3),x", **kw)
    add("lax.full", lambda m, x: lax_of(m).full((0, 2), 1, x.dtype), scalar, label="(0,2),1,dtype",
        **kw)  # fmt: skip
    add("lax.full", lambda m, x: lax_of(m).full((2,), x), ((3,),), **_fails(ShapeError), **kw)
    add("lax.full_like", lax_call("full_like", 3), *unary(SHAPES), label="3", **kw)
    add("lax.full_like", lax_call("full_like", 1, np.float32, (2, 0)), ((3,),),
        label="1,float32,(2,0)", **kw)  # fmt: skip
    ew = {"family": "elementwise"}
    for dtype in (np.float32, np.int32, np.bool_, np.float64, np.int64):
        add("lax.convert_element_type", lax_call("convert_element_type", dtype),
            *unary(((), (0,), (2, 3))), label=np.dtype(dtype).name, **ew)  # fmt: skip
    add("lax.convert_element_type", lax_call("convert_element_type", np.float64), ((2, 3),),
        label="complex", dtypes=COMPLEX, **ew)  # fmt: skip
    add("lax.convert_element_type", lax_call("convert_element_type", "not-a-dtype"), ((2,),),
        **_fails(SpmdTypeError, DTYPES), **ew)  # fmt: skip
    bitcasts = (  # (to, operand shapes, operand dtypes): same width, narrower, wider
        (np.int64, ((), (0,), (2, 3)), (np.float64,)),
        (np.float32, ((), (2, 3)), (np.int32,)),
        (np.uint8, ((), (0,), (3, 2)), (np.float32, np.int64)),
        (np.int32, ((3,), (2, 0), (4, 3)), (np.float64,)),
        (np.int64, ((2,), (3, 2), (0, 2)), (np.int32,)),
    )
    for to, shapes, dtypes in bitcasts:
        add("lax.bitcast_convert_type", lax_call("bitcast_convert_type", to), *unary(shapes),
            label=np.dtype(to).name, dtypes=dtypes, **ew)  # fmt: skip
    add("lax.bitcast_convert_type", lax_call("bitcast_convert_type", np.int64), ((3, 3),),
        **_fails(ShapeError, (np.int32,), "last dimension not 2"), **ew)  # fmt: skip
    add("lax.bitcast_convert_type", lax_call("bitcast_convert_type", np.int8), ((2,),),
        **refuses(BOOL, "bool"), **ew)  # fmt: skip
    add("lax.bitcast_convert_type", lax_call("bitcast_convert_type", np.float64), ((2,),),
        **refuses(COMPLEX, "complex to real"), **ew)  # fmt: skip


def _lax_operators():
    _dot_rows()
    _shape_rows()
    _select_rows()
    _pad_rows()
    _creation_rows()
