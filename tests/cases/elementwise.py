"""The case table's elementwise rows: ufuncs, Python scalars, complex parts, round, clip, where."""

from __future__ import annotations

import numpy as np

from spmd import ShapeError
from tests.cases.table import (
    BOOL,
    DTYPES,
    FLOATS,
    INTS,
    NUMBERS,
    SHAPES,
    SPECIAL,
    _keep,
    _label,
    add,
    call,
    rejects,
    unary,
)

# ------------------------------------------------------------------------ elementwise

UNARY = {  # name: (domain, dtypes NumPy rejects)
    "negative": ("any", BOOL),
    "positive": ("any", BOOL),
    "abs": ("any", ()),
    "absolute": ("any", ()),
    "sign": ("any", BOOL),
    "sqrt": ("positive", ()),
    "exp": ("any", ()),
    "log": ("positive", ()),
    "log1p": ("positive", ()),
    "expm1": ("any", ()),
    "sin": ("any", ()),
    "cos": ("any", ()),
    "tan": ("any", ()),
    "tanh": ("any", ()),
    "arcsin": ("unit", ()),
    "arccos": ("unit", ()),
    "arctan": ("any", ()),
    "floor": ("any", ()),
    "ceil": ("any", ()),
    "isnan": ("any", ()),
    "isfinite": ("any", ()),
    "logical_not": ("any", ()),
    "invert": ("any", FLOATS),
    "sinh": ("any", ()),
    "cosh": ("any", ()),
    "arcsinh": ("any", ()),
    "arccosh": ("positive", ()),
    "arctanh": ("unit", ()),
    "log2": ("positive", ()),
    "log10": ("positive", ()),
    "square": ("any", ()),
    "trunc": ("any", ()),
    "isinf": ("any", ()),
    "signbit": ("any", ()),
    "bitwise_invert": ("any", FLOATS),
    "conjugate": ("any", ()),
    "conj": ("any", ()),
    "real": ("any", ()),
    "imag": ("any", ()),
}
# The Array API standard's names for NumPy's (the same functions, so on fewer dtypes: a bool
# input computes in float16, which some namespaces lack): name -> (arity, domain)
ALIASES = {"acos": (1, "unit"), "asin": (1, "unit"), "atan": (1, "any"),
           "acosh": (1, "positive"), "asinh": (1, "any"), "atanh": (1, "unit"),
           "atan2": (2, "any"), "pow": (2, "positive")}  # fmt: skip
COMPLEX = (np.complex64, np.complex128)
PARTS = ("real", "imag", "conj", "conjugate")  # on complex numbers they do more than copy
BINARY = {
    "add": ("any", ()),
    "subtract": ("any", BOOL),
    "multiply": ("any", ()),
    "true_divide": ("nonzero", ()),
    "divide": ("nonzero", ()),
    "floor_divide": ("nonzero", ()),
    "remainder": ("nonzero", ()),
    "mod": ("nonzero", ()),
    "power": ("positive", ()),
    "arctan2": ("any", ()),
    "maximum": ("any", ()),
    "minimum": ("any", ()),
    "logical_and": ("any", ()),
    "logical_or": ("any", ()),
    "bitwise_and": ("any", FLOATS),
    "bitwise_or": ("any", FLOATS),
    "bitwise_xor": ("any", FLOATS),
    "equal": ("any", ()),
    "not_equal": ("any", ()),
    "less": ("any", ()),
    "less_equal": ("any", ()),
    "greater": ("any", ()),
    "greater_equal": ("any", ()),
    "hypot": ("any", ()),
    "copysign": ("any", ()),
    "logaddexp": ("any", ()),
    "logical_xor": ("any", ()),
    "left_shift": ("any", FLOATS),  # "any" shifts by negative amounts too: 0 (or -1), as NumPy
    "right_shift": ("any", FLOATS),
    "bitwise_left_shift": ("any", FLOATS),
    "bitwise_right_shift": ("any", FLOATS),
}
BINARY_SHAPES = (
    ((), ()),
    ((0,), (0,)),
    ((5,), (5,)),
    ((2, 3), (2, 3)),
    ((2, 3), (3,)),
    ((3, 1), (1, 4)),
    ((), (2, 3)),
    ((2, 1, 3), (4, 1)),
    ((0, 3), (1, 3)),
    ((2, 0, 3), ()),
)


def _elementwise():
    ew = {"family": "elementwise"}
    for name, (domain, rejected) in UNARY.items():
        add(name, call(name), *unary(SHAPES), dtypes=_keep(DTYPES, rejected), domain=domain, **ew)
        if _keep(FLOATS, rejected):
            add(name, call(name), ((3, 4),), **SPECIAL, **ew)
        if domain != "any":  # outside the domain: NaN and inf in NumPy's places
            add(name, call(name), ((2, 3),), label="any", dtypes=_keep(DTYPES, rejected), **ew)
        if rejected:
            add(name, call(name), ((2, 3),), **rejects(rejected), **ew)
    for name in PARTS:
        add(name, call(name), *unary(SHAPES), label="complex", dtypes=COMPLEX, **ew)
        complex_special = {**SPECIAL, "label": "complex,special", "dtypes": COMPLEX}
        add(name, call(name), ((3, 4),), **complex_special, **ew)
    part_methods = [  # NumPy's methods: x.conj() of a bool array is bool, np.conj's int8
        ("real", lambda m, x: x.real, "x.real"),
        ("imag", lambda m, x: x.imag, "x.imag"),
        ("conj", lambda m, x: x.conj(), "x.conj()"),
        ("conjugate", lambda m, x: x.conjugate(), "x.conjugate()"),
    ]
    for name, fn, label in part_methods:
        add(name, fn, ((2, 3),), ((),), ((0,),), label=label, dtypes=(*DTYPES, *COMPLEX), **ew)
    for name, (domain, rejected) in BINARY.items():
        ok = _keep(DTYPES, rejected)
        add(name, call(name), *BINARY_SHAPES, dtypes=ok, domain=domain, **ew)
        if _keep(FLOATS, rejected):
            add(name, call(name), ((3, 4), (3, 4)), **SPECIAL, **ew)
        if domain != "any":  # ints to negative integer powers are an error NumPy finds in the data
            any_dtypes = FLOATS if name == "power" else ok
            add(name, call(name), ((2, 3), (2, 3)), label="any", dtypes=any_dtypes, **ew)
        if rejected:
            add(name, call(name), ((2, 3), (3,)), **rejects(rejected), **ew)
        for other in (np.int32, np.float32):  # mixed dtypes promote as in NumPy 2
            if rejected == FLOATS and other == np.float32:
                continue
            mixed = {"dtypes": ok, "domain": domain, "input_dtypes": (None, other)}
            add(name, call(name), ((2, 3), (3,)), **mixed, **ew)
        add(name, call(name), ((3,), (4,)), dtypes=ok, error=ShapeError, **ew)
    for name, (arity, domain) in ALIASES.items():
        shapes = unary(SHAPES) if arity == 1 else BINARY_SHAPES
        add(name, call(name), *shapes, dtypes=NUMBERS, domain=domain, **ew)
        add(name, call(name), ((3, 4),) * arity, **SPECIAL, **ew)

    # Python scalars are weak: they take the array's dtype where NumPy 2 says so.
    scalars = [
        ("add", lambda m, x: m.add(x, 2), "x,2", DTYPES),
        ("add", lambda m, x: 1.5 + x, "1.5+x", DTYPES),
        ("subtract", lambda m, x: 2 - x, "2-x", NUMBERS),
        ("multiply", lambda m, x: m.multiply(x, 2.5), "x,2.5", DTYPES),
        ("multiply", lambda m, x: x * True, "x*True", DTYPES),
        ("true_divide", lambda m, x: x / 4, "x/4", DTYPES),
        ("floor_divide", lambda m, x: x // 3, "x//3", DTYPES),
        ("remainder", lambda m, x: x % 3, "x%3", DTYPES),
        ("power", lambda m, x: x**2, "x**2", DTYPES),
        ("power", lambda m, x: m.power(x, 0.5), "x,0.5", DTYPES),
        ("less", lambda m, x: x < 1.5, "x<1.5", DTYPES),
        ("equal", lambda m, x: x == 1, "x==1", DTYPES),
        ("maximum", lambda m, x: m.maximum(x, 0), "x,0", DTYPES),
        ("bitwise_and", lambda m, x: x & 3, "x&3", (np.bool_, *INTS)),
        ("negative", lambda m, x: -x, "-x", NUMBERS),
        ("invert", lambda m, x: ~x, "~x", (np.bool_, *INTS)),
        ("left_shift", lambda m, x: x << 2, "x<<2", (np.bool_, *INTS)),
        ("left_shift", lambda m, x: 3 << x, "3<<x", INTS),
        ("left_shift", lambda m, x: x << 40, "x<<40", INTS),  # int32: the width or more, 0
        ("right_shift", lambda m, x: x >> 1, "x>>1", (np.bool_, *INTS)),
        ("right_shift", lambda m, x: -100 >> x, "-100>>x", INTS),
        ("right_shift", lambda m, x: -x >> 40, "-x>>40", INTS),  # int32: the sign, -1
        ("abs", lambda m, x: abs(x), "abs(x)", DTYPES),
    ]
    for name, fn, label, dtypes in scalars:
        add(name, fn, ((2, 3),), ((),), label=label, dtypes=dtypes, domain="positive", **ew)
    add("add", lambda m, x, y: x + y, ((2, 3), (3,)), label="x+y", **ew)
    add("subtract", lambda m, x, y: x - y, ((2, 3), (3,)), label="x-y", dtypes=NUMBERS, **ew)
    add("true_divide", lambda m, x, y: x / y, ((2, 3), (3,)), label="x/y", domain="nonzero", **ew)
    add("less_equal", lambda m, x, y: x <= y, ((2, 3), (3,)), label="x<=y", **ew)
    add(
        "bitwise_xor",
        lambda m, x, y: x ^ y,
        ((2, 3), (3,)),
        label="x^y",
        dtypes=(np.bool_, *INTS),
        **ew,
    )

    for name in ("round", "around"):
        for decimals in (0, 1, -1):
            add(
                name,
                call(name, decimals),
                *unary(SHAPES[:4]),
                label=_label(decimals),
                dtypes=NUMBERS,
                **ew,
            )
        add(name, call(name), ((3, 4),), **SPECIAL, **ew)
        add(name, call(name), ((2, 3),), label="bool", dtypes=BOOL, **ew)  # float16, as NumPy
    add("round", call("round", 1), ((2, 3),), **rejects(BOOL, label="1,rejects"), **ew)
    for args in [(-1, 4), (None, 2), (0.5, None), (3, 1)]:
        add("clip", call("clip", *args), *unary(SHAPES), label=_label(*args), **ew)
    add("clip", call("clip", -1, 1), ((3, 4),), **SPECIAL, **ew)
    add("clip", call("clip"), ((2, 3), (3,), (2, 1)), ((), (), ()), label="arrays", **ew)
    add(
        "clip",
        call("clip", 0, 2),
        ((2, 3),),
        label="0,2",
        dtypes=(np.uint8, np.int8, np.float16),
        **ew,
    )
    add(
        "where",
        call("where"),
        ((2, 3), (2, 3), (2, 3)),
        ((0,), (0,), (0,)),
        ((), (), ()),
        ((2, 1), (3,), ()),
        ((3, 1, 2), (1, 4, 1), (2,)),
        input_dtypes=(np.bool_, None, None),
        **ew,
    )
    add("where", lambda m, x, y: m.where(x > 0, x, y), ((2, 3), (3,)), label="x>0,x,y", **ew)
    add(
        "where",
        lambda m, x, y: m.where(x > 0, x, y),
        ((2, 3), (3,)),
        label="x>0,x,y",
        input_dtypes=(None, np.float32),
        **ew,
    )
    add("where", lambda m, x: m.where(x > 1, 1.5, 0), ((2, 3),), ((),), label="x>1,1.5,0", **ew)
    where = {"input_dtypes": (np.bool_, None, None), "error": ShapeError}
    add("where", call("where"), ((2, 3), (3, 4), (3, 4)), **where, **ew)
