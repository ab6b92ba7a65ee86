"""The case table's rows for spmd.lax's elementwise names (spmd/lax/arithmetic.py): a row or
two per name that is spmd.numpy's function (checked on NumPy's function of that name), and
rows on every dtype, special values and error rows for lax's own (div, rem, round, conj,
complex, bit counts, ...), against tests/cases/lax_reference.py's formulas."""

from __future__ import annotations

import numpy as np

import spmd
from spmd import SpmdTypeError
from tests.cases.elementwise import BINARY, COMPLEX, UNARY
from tests.cases.lax_reference import NUMPY_LAX_OPERATORS, SAME_AS_NUMPY
from tests.cases.table import (
    BOOL,
    DTYPES,
    FLOATS,
    INTS,
    NUMBERS,
    SPECIAL,
    _keep,
    rejects,
    unary,
)
from tests.cases.table import add as add_rows

STANDARD_NAMES = {"acos": "arccos", "acosh": "arccosh", "asin": "arcsin", "asinh": "arcsinh",
                  "atan": "arctan", "atan2": "arctan2", "atanh": "arctanh",
                  "bitwise_invert": "invert"}  # fmt: skip
SHAPES_1 = unary(((), (0,), (7,), (3, 5), (2, 3, 4)))
SHAPES_2 = (((5,), (5,)), ((2, 3), (3,)), ((), (0,)), ((3, 4, 2), (3, 4, 2)), ((2, 0), (1, 0)))


# Piecewise constant (or jumping) in their float inputs: their float32 runs are rows of their
# own, so that no row runs on both float dtypes and random programs (tests/cases/select.py's
# shape_preserving) leave them out, as DISCONTINUOUS does spmd.numpy's floor and kin.
STEPWISE = {"lax.floor", "lax.ceil", "lax.sign", "lax.round", "lax.RoundingMethod", "lax.rem"}


def add(name, fn, *shape_sets, **options) -> None:
    dtypes = options.get("dtypes", DTYPES)
    if name not in STEPWISE or options.get("error") or not set(FLOATS) <= set(dtypes):
        add_rows(name, fn, *shape_sets, **options)
        return
    label = options.pop("label", "")
    add_rows(name, fn, *shape_sets, **{**options, "label": label,
                                       "dtypes": _keep(dtypes, (np.float32,))})  # fmt: skip
    add_rows(name, fn, *shape_sets, **{**options, "label": f"{label},float32".lstrip(","),
                                       "dtypes": (np.float32,)})  # fmt: skip


def lax_of(m):
    """spmd.lax for m = spmd.numpy; the NumPy references for m = numpy."""
    return NUMPY_LAX_OPERATORS if m is np else spmd.lax


def lax_call(name, *args, **kwargs):
    """fn(m, *xs) = lax.name(*xs, *args, **kwargs)."""
    return lambda m, *xs: getattr(lax_of(m), name)(*xs, *args, **kwargs)


def refuses(dtypes, label="rejects"):
    """A row spmd.lax refuses (SpmdTypeError) on ``dtypes`` where NumPy computes something."""
    return {"label": label, "dtypes": dtypes, "error": SpmdTypeError, "numpy_too": False}


def _same_as_numpy(ew):
    for name, numpy_name in SAME_AS_NUMPY.items():
        key = STANDARD_NAMES.get(numpy_name, numpy_name)
        domain, rejected = UNARY[key] if key in UNARY else BINARY[key]
        fn, ok = lax_call(name), _keep(DTYPES, rejected)
        shapes = unary(((), (0,), (2, 3))) if key in UNARY else (((), (0,)), ((2, 3), (3,)))
        add(f"lax.{name}", fn, *shapes, dtypes=ok, domain=domain, **ew)
        if rejected:
            add(f"lax.{name}", fn, shapes[-1], **rejects(rejected), **ew)
        if numpy_name in ("real", "imag"):
            add(f"lax.{name}", fn, ((2, 3),), label="complex", dtypes=COMPLEX, **ew)


def _arithmetic_rows(ew):
    nonzero = {"domain": "nonzero"}
    for name in ("div", "rem"):
        add(f"lax.{name}", lax_call(name), *SHAPES_2, dtypes=NUMBERS, **nonzero, **ew)
        add(f"lax.{name}", lax_call(name), ((3, 4), (3, 4)), **SPECIAL, **ew)
        add(f"lax.{name}", lax_call(name), ((2, 3), (2, 3)), **refuses(BOOL), **ew)
        add(f"lax.{name}", lambda m, x, name=name: getattr(lax_of(m), name)(x, 3), ((2, 3),),
            label="x,3", dtypes=NUMBERS, **ew)  # fmt: skip
        add(f"lax.{name}", lambda m, x, name=name: getattr(lax_of(m), name)(-x, -2), ((4,),),
            label="-x,-2", dtypes=NUMBERS, **ew)  # fmt: skip
    unary_floats = {"exp2": "any", "cbrt": "any", "reciprocal": "nonzero", "round": "any",
                    "logistic": "any"}  # fmt: skip
    for name, domain in unary_floats.items():
        ok = FLOATS + INTS if name == "logistic" else FLOATS
        add(f"lax.{name}", lax_call(name), *SHAPES_1, dtypes=ok, domain=domain, **ew)
        add(f"lax.{name}", lax_call(name), ((3, 4),), **SPECIAL, **ew)
        add(f"lax.{name}", lax_call(name), ((2, 3),), **refuses(_keep(DTYPES, ok)), **ew)
    for method in (0, 1):
        add("lax.round", lax_call("round", method), ((4, 5),), ((3, 4),), label=f"method={method}",
            dtypes=FLOATS, **ew)  # fmt: skip
    even = lambda m, x: lax_of(m).round(x, lax_of(m).RoundingMethod.TO_NEAREST_EVEN)  # noqa: E731
    add("lax.RoundingMethod", even, *SHAPES_1[:4], label="TO_NEAREST_EVEN", dtypes=FLOATS, **ew)
    add("lax.RoundingMethod", even, ((2, 3),), **refuses(BOOL + INTS), **ew)
    add("lax.round", lax_call("round", 2), ((3,),), label="method=2", dtypes=FLOATS,
        error=SpmdTypeError, numpy_too=False, **ew)  # fmt: skip
    add("lax.nextafter", lax_call("nextafter"), *SHAPES_2, dtypes=FLOATS, **ew)
    add("lax.nextafter", lax_call("nextafter"), ((3, 4), (3, 4)), **SPECIAL, **ew)
    add("lax.nextafter", lax_call("nextafter"), ((3,), (3,)), **refuses(BOOL + INTS), **ew)


def _complex_rows(ew):
    add("lax.complex", lax_call("complex"), *SHAPES_2, dtypes=FLOATS, **ew)
    add("lax.complex", lax_call("complex"), ((3, 4), (3, 4)), **SPECIAL, **ew)
    add("lax.complex", lax_call("complex"), ((3,), (3,)), **refuses(BOOL + INTS), **ew)
    add("lax.complex", lax_call("complex"), ((3,), (3,)), input_dtypes=(None, np.float32),
        **refuses((np.float64,), "float64,float32"), **ew)  # fmt: skip

    def product(m, x, y):  # a real function of complex(x, y), for the derivative oracles
        lax = lax_of(m)
        return m.real(lax.complex(x, y) * lax.complex(y, x)) + m.imag(lax.complex(x, y) ** 2)

    add("lax.complex", product, ((2, 3), (2, 3)), ((), ()), label="real-valued", dtypes=FLOATS,
        **ew)  # fmt: skip
    add("lax.conj", lax_call("conj"), *SHAPES_1[:4], dtypes=FLOATS + COMPLEX, **ew)
    add("lax.conj", lax_call("conj"), ((2, 3),), **refuses(BOOL + INTS), **ew)


def _bit_rows(ew):
    add("lax.shift_right_logical", lax_call("shift_right_logical"), *SHAPES_2, dtypes=INTS, **ew)
    for amount in (0, 31, 33, 63, 64, 70):
        add("lax.shift_right_logical",
            lambda m, x, amount=amount: lax_of(m).shift_right_logical(x, m.full_like(x, amount)),
            ((2, 3),), label=f"y={amount}", dtypes=INTS, **ew)  # fmt: skip
    add("lax.shift_right_logical", lax_call("shift_right_logical"), ((3,), (3,)),
        **refuses(BOOL + FLOATS), **ew)  # fmt: skip
    for name in ("population_count", "clz"):
        add(f"lax.{name}", lax_call(name), *SHAPES_1, dtypes=INTS, **ew)
        extremes = lambda m, x, name=name: getattr(lax_of(m), name)(  # noqa: E731
            m.concatenate([x, np.array([0, -1, 1, np.iinfo(x.dtype).min, np.iinfo(x.dtype).max],
                                       x.dtype)]))  # fmt: skip
        add(f"lax.{name}", extremes, ((4,),), label="extremes", dtypes=INTS, **ew)
        add(f"lax.{name}", lax_call(name), ((2, 3),), **refuses(BOOL + FLOATS), **ew)


def _lax_arithmetic():
    ew = {"family": "elementwise"}
    _same_as_numpy(ew)
    _arithmetic_rows(ew)
    _complex_rows(ew)
    _bit_rows(ew)
