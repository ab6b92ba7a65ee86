"""The case table's rows of spmd.lax's elementwise functions (clamp, integer_pow, rsqrt:
spmd/lax/elementwise.py) and special functions (erf, erfc, erf_inv, lgamma, digamma,
polygamma: spmd/lax/special.py), against NumPy formulas and SciPy (tests/cases/special.py's
float64 references, cast to the float dtype NumPy's ufuncs give).

jax.lax promotes nothing: clamp's bounds and integer_pow's base keep their dtype, rsqrt takes
floats alone, and the special functions refuse complex numbers (the rows with ``error``, where
NumPy has no such function to refuse them: ``numpy_too=False``).
"""

from __future__ import annotations

import types

import numpy as np

import spmd
from spmd import SpmdTypeError
from tests.cases.special import SCIPY_SPECIAL
from tests.cases.table import BOOL, FLOATS, INTS, NUMBERS, SPECIAL, _label, add, unary


def _clamp(lo, x, hi):
    return np.minimum(np.maximum(x, lo), hi)  # XLA's order: hi wins where lo > hi


def _integer_pow(x, y):
    return np.ones_like(x) if y == 0 else np.power(x, y)


NUMPY_LAX = types.SimpleNamespace(  # spmd.lax's elementwise and special functions in NumPy
    clamp=_clamp,
    integer_pow=_integer_pow,
    rsqrt=lambda x: 1 / np.sqrt(x),
    erf=SCIPY_SPECIAL.erf,
    erfc=SCIPY_SPECIAL.erfc,
    erf_inv=SCIPY_SPECIAL.erfinv,
    lgamma=SCIPY_SPECIAL.gammaln,
    digamma=SCIPY_SPECIAL.digamma,
    polygamma=SCIPY_SPECIAL.polygamma,
)


def lax(m):
    return NUMPY_LAX if m is np else spmd.lax


def lax_call(name, *args):
    return lambda m, *xs: getattr(lax(m), name)(*xs, *args)


def clamp_between(m, lo, x, hi):
    """clamp with array bounds put in order (where min > max JAX's derivative is not the
    slope of the values: the tangent of max is dropped)."""
    return lax(m).clamp(m.minimum(lo, hi), x, m.maximum(lo, hi))


SHAPES = unary(((), (0,), (7,), (3, 5), (2, 3, 4)))


def _lax_elementwise_rows():
    ew = {"family": "elementwise"}
    numbers = {"dtypes": NUMBERS, **ew}
    for lo, hi in ((0, 3), (-2, 2)):
        add("lax.clamp", lambda m, x, lo=lo, hi=hi: lax(m).clamp(lo, x, hi), *SHAPES,
            label=_label(lo, hi), **numbers)  # fmt: skip
    add("lax.clamp", lambda m, x: lax(m).clamp(3, x, 0), ((3, 4),), label="3,0", **numbers)
    add("lax.clamp", lambda m, x: lax(m).clamp(False, x, True), ((3, 4),), label="False,True",
        dtypes=BOOL, **ew)  # fmt: skip
    add("lax.clamp", lambda m, x: lax(m).clamp(-1.0, x, 1.0), ((3, 4),),
        **{**SPECIAL, "label": "-1.0,1.0,special"}, **ew)  # fmt: skip
    add("lax.clamp", clamp_between, ((3, 4), (3, 4), (3, 4)), ((), (2, 3), ()),
        ((), (0, 2), (0, 2)), label="arrays", **numbers)  # fmt: skip
    add("lax.clamp", lambda m, x: lax(m).clamp(0.5, x, 3), ((3,),), label="0.5", dtypes=INTS,
        error=SpmdTypeError, numpy_too=False, **ew)  # fmt: skip
    add("lax.clamp", lax_call("clamp"), ((), (3,), (3,)), label="float32 bounds",
        input_dtypes=(np.float32, None, np.float32), dtypes=(np.float64, *INTS),
        error=SpmdTypeError, numpy_too=False, **ew)  # fmt: skip

    for y in (1, 2, 3):
        add("lax.integer_pow", lax_call("integer_pow", y), *SHAPES, label=_label(y), **numbers)
    # x ** 0 is ones_like(x): a constant, which does not take x's layout (test_partition's
    # elementwise rows must keep it), so of the shape family
    add("lax.integer_pow", lax_call("integer_pow", 0), *SHAPES, label="0", family="shape",
        dtypes=NUMBERS)  # fmt: skip
    add("lax.integer_pow", lax_call("integer_pow", -2), *SHAPES, label="-2", dtypes=FLOATS,
        domain="nonzero", **ew)  # fmt: skip
    add("lax.integer_pow", lax_call("integer_pow", 2), ((3, 4),), **SPECIAL, **ew)
    add("lax.integer_pow", lax_call("integer_pow", 2), ((3,),), label="bool", dtypes=BOOL,
        error=SpmdTypeError, numpy_too=False, **ew)  # fmt: skip
    add("lax.integer_pow", lax_call("integer_pow", -1), ((3,),), label="-1", dtypes=INTS,
        error=SpmdTypeError, numpy_too=False, **ew)  # fmt: skip

    add("lax.rsqrt", lax_call("rsqrt"), *SHAPES, dtypes=FLOATS, domain="positive", **ew)
    add("lax.rsqrt", lax_call("rsqrt"), ((3, 4),), **SPECIAL, **ew)
    add("lax.rsqrt", lax_call("rsqrt"), ((3,),), label="bool,int", dtypes=(*BOOL, *INTS),
        error=SpmdTypeError, numpy_too=False, **ew)  # fmt: skip


def _lax_special_rows():
    ew = {"family": "elementwise"}
    pos = {"domain": "positive"}
    for name, options in (("erf", {}), ("erfc", {}), ("erf_inv", {"domain": "unit"}),
                          ("lgamma", pos), ("digamma", pos)):  # fmt: skip
        add(f"lax.{name}", lax_call(name), *SHAPES, **options, **ew)
        add(f"lax.{name}", lax_call(name), ((3,),), label="complex",
            dtypes=(np.complex64, np.complex128), error=SpmdTypeError, numpy_too=False,
            **ew)  # fmt: skip
    for name in ("erf", "erfc"):
        add(f"lax.{name}", lax_call(name), ((3, 4),), **SPECIAL, **ew)
    for order in (0, 1, 2):
        add("lax.polygamma", lambda m, x, order=order: lax(m).polygamma(order, x), *SHAPES,
            label=_label(order), **pos, **ew)  # fmt: skip
    add("lax.polygamma", lambda m, x: lax(m).polygamma(-1, x), ((3,),), label="-1",
        dtypes=FLOATS, error=spmd.SpmdValueError, numpy_too=False, **ew)  # fmt: skip
    add("lax.polygamma", lambda m, x: lax(m).polygamma(1.5, x), ((3,),), label="1.5",
        dtypes=FLOATS, error=SpmdTypeError, numpy_too=False, **ew)  # fmt: skip


def _lax_elementwise():
    _lax_elementwise_rows()
    _lax_special_rows()
