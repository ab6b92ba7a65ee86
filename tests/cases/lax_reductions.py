"""The case table's rows for spmd.lax's reductions, sorts and cumulative reductions, against
tests/cases/lax_reference.py (NumPy's ufunc.reduce and accumulate in the operand's dtype,
lexsort), with NaN rows and the errors jax.lax raises (bools where it wants numbers, empty
argmax axes, 0-d sorts)."""

from __future__ import annotations

import numpy as np

from spmd import ShapeError, SpmdTypeError, SpmdValueError
from tests.cases.lax_arithmetic import lax_call, lax_of, refuses
from tests.cases.table import BOOL, DTYPES, FLOATS, INTS, NUMBERS, SPECIAL, _keep, _label, add

COMPLEX = (np.complex64, np.complex128)
AXES = [((2, 3), (0,)), ((3, 4, 2), (0, 2)), ((), ()), ((2, 0, 3), (1,)), ((5,), (0,)),
        ((2, 0), (0,))]  # fmt: skip
ONE_AXIS = [((5,), 0), ((2, 3), 1), ((3, 4, 2), 1), ((0, 3), 0), ((2, 0), 1)]


def _fails(error, dtypes=FLOATS, label="error"):
    return {"label": label, "dtypes": dtypes, "error": error, "numpy_too": False}


def _reduction_rows(kw):
    accepted = {"reduce_sum": NUMBERS, "reduce_prod": NUMBERS, "reduce_max": DTYPES,
                "reduce_min": DTYPES, "reduce_and": BOOL + INTS, "reduce_or": BOOL + INTS,
                "reduce_xor": BOOL + INTS}  # fmt: skip
    for name, dtypes in accepted.items():
        for operand, axes in AXES:
            add(f"lax.{name}", lax_call(name, axes), (operand,), label=_label(axes),
                dtypes=dtypes, **kw)  # fmt: skip
        if set(dtypes) & set(FLOATS):
            add(f"lax.{name}", lax_call(name, (1,)), ((3, 4),), **SPECIAL, **kw)
        if _keep(DTYPES, dtypes):
            add(f"lax.{name}", lax_call(name, (0,)), ((2, 3),), **refuses(_keep(DTYPES, dtypes)),
                **kw)  # fmt: skip
        add(f"lax.{name}", lax_call(name, (2,)), ((2, 3),), **_fails(ShapeError, dtypes), **kw)
    for name in ("argmax", "argmin"):
        for operand, axis in ONE_AXIS[:3]:
            add(f"lax.{name}", lax_call(name, axis, np.int32), (operand,), label=_label(axis), **kw)
        add(f"lax.{name}", lax_call(name, 1, np.int64), ((3, 4),), **SPECIAL, **kw)
        add(f"lax.{name}", lax_call(name, 1, np.int32), ((2, 0),), ((0, 0),),
            **_fails(ShapeError, DTYPES, "empty"), **kw)  # fmt: skip
        add(f"lax.{name}", lax_call(name, 0, np.int32), ((),), **_fails(ShapeError, DTYPES, "0-d"),
            **kw)  # fmt: skip
        add(f"lax.{name}", lax_call(name, 0, np.float32), ((3,),),
            **_fails(SpmdTypeError, DTYPES, "index_dtype=float32"), **kw)  # fmt: skip


def _reduce(computation, init, dims):
    return lambda m, x: lax_of(m).reduce(x, init, getattr(lax_of(m), computation), dims)


def _reduce_rows(kw):
    starts = [("add", 0, NUMBERS), ("add", 5, NUMBERS), ("mul", 1, NUMBERS),
              ("max", -np.inf, FLOATS), ("min", 3, NUMBERS), ("bitwise_or", 0, BOOL + INTS),
              ("bitwise_and", -1, INTS), ("bitwise_xor", 0, BOOL + INTS)]  # fmt: skip
    for computation, init, dtypes in starts:
        for operand, dims in (((2, 3), (0,)), ((3, 4, 2), (1, 2)), ((), ()), ((2, 0), (1,))):
            add("lax.reduce", _reduce(computation, init, dims), (operand,), dtypes=dtypes,
                label=_label(computation, init, dims), **kw)  # fmt: skip
    tuples = lambda m, x: lax_of(m).reduce((x,), (0,), lax_of(m).add, (0,))  # noqa: E731
    add("lax.reduce", tuples, ((3,),), label="tuple", dtypes=NUMBERS, **kw)

    def other(m, x):
        return lax_of(m).reduce(x, 0, lambda a, b: a + b, (0,))

    add("lax.reduce", other, ((3,),), **_fails(SpmdTypeError, DTYPES, "lambda"), **kw)


def _sort_rows(kw):
    sorts = [((5,), -1), ((2, 3), 0), ((3, 4, 2), 1), ((0,), 0), ((2, 0), -1)]
    for operand, dimension in sorts:
        add("lax.sort", lax_call("sort", dimension), (operand,), label=_label(dimension), **kw)
    add("lax.sort", lax_call("sort"), ((3, 4),), **SPECIAL, **kw)
    add("lax.sort", lax_call("sort"), ((),), **_fails(ShapeError, DTYPES, "0-d"), **kw)
    add("lax.sort", lax_call("sort", 0, True, 2), ((3,),),
        **_fails(SpmdValueError, DTYPES, "keys=2"), **kw)  # fmt: skip
    for keys in (1, 2):
        together = lambda m, *xs, k=keys: lax_of(m).sort(xs, 0, num_keys=k)  # noqa: E731
        add("lax.sort", together, ((6,), (6,), (6,)), ((2, 3), (2, 3), (2, 3)), ((0,), (0,), (0,)),
            label=f"tuple,num_keys={keys}", **kw)  # fmt: skip
    carried = lambda m, k, v: lax_of(m).sort((k, v), -1)[1]  # noqa: E731
    add("lax.sort", carried, ((3, 5), (3, 5)), label="values", **kw)
    add("lax.sort", lambda m, k, v: lax_of(m).sort((k, v)), ((3,), (4,)),
        **_fails(ShapeError, label="shapes"), **kw)  # fmt: skip
    pairs = ((((7,), (7,)), -1), (((2, 4), (2, 4)), -1), (((0, 3), (0, 3)), 0))
    for shapes, dimension in pairs:
        add("lax.sort_key_val", lax_call("sort_key_val", dimension), shapes,
            label=_label(dimension), **kw)  # fmt: skip
    add("lax.sort_key_val", lax_call("sort_key_val"), ((), ()),
        **_fails(ShapeError, DTYPES, "0-d"), **kw)  # fmt: skip
    add("lax.sort_key_val", lambda m, k, v: lax_of(m).sort_key_val(k, v, 1)[1], ((3, 4), (3, 4)),
        label="values", **kw)  # fmt: skip
    for operand, k in (((5,), 3), ((2, 6), 2), ((3, 4, 2), 2), ((4,), 0), ((0,), 0), ((2, 3), 3)):
        add("lax.top_k", lax_call("top_k", k), (operand,), label=_label(k), **kw)
    add("lax.top_k", lambda m, x: lax_of(m).top_k(x, 2, axis=0), ((3, 4),), label="axis=0", **kw)
    add("lax.top_k", lax_call("top_k", 4), ((2, 5),), **SPECIAL, **kw)
    add("lax.top_k", lambda m, x: lax_of(m).top_k(x, 2)[0], ((3, 5),), label="values", **kw)
    add("lax.top_k", lax_call("top_k", 1), ((),), **_fails(ShapeError, DTYPES, "0-d"), **kw)
    add("lax.top_k", lax_call("top_k", 4), ((3,),), **_fails(ShapeError, DTYPES, "k=4"), **kw)
    add("lax.top_k", lax_call("top_k", 1), ((3,),), **_fails(SpmdTypeError, COMPLEX, "complex"),
        **kw)  # fmt: skip


def _cumulative_rows(kw):
    for name in ("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"):
        dtypes = FLOATS if name == "cumlogsumexp" else NUMBERS
        for operand, axis in ONE_AXIS:
            for reverse in (False, True):
                add(f"lax.{name}", lax_call(name, axis, reverse), (operand,), dtypes=dtypes,
                    label=_label(axis, reverse=reverse), **kw)  # fmt: skip
        add(f"lax.{name}", lax_call(name, 1), ((3, 6),), **SPECIAL, **kw)
        add(f"lax.{name}", lax_call(name, 0), ((3,),), **refuses(_keep(DTYPES, dtypes)), **kw)
        add(f"lax.{name}", lax_call(name, 0), ((),), **_fails(ShapeError, dtypes, "0-d"), **kw)


def _lax_reductions():
    kw = {"family": "reduction"}
    _reduction_rows(kw)
    _reduce_rows(kw)
    _sort_rows(kw)
    _cumulative_rows(kw)
