"""The case table's rows for whole-array comparisons, copies and padding: isclose, allclose,
array_equal, array_equiv, copy, pad."""

from __future__ import annotations

import numpy as np

from spmd import ShapeError, SpmdValueError
from tests.cases.table import DTYPES, SHAPES, SPECIAL, add, call, unary

NAN_EQUAL = {**SPECIAL, "label": "special,equal_nan"}
PAIRS = [(s, s) for s in SHAPES] + [((2, 3), (3,)), ((2, 1), (1, 3)), ((), (2, 2))]


def _comparison() -> None:
    ew, red = {"family": "elementwise"}, {"family": "reduction"}
    add("isclose", call("isclose"), *PAIRS, **ew)
    add("isclose", call("isclose", rtol=0.5, atol=1), ((2, 3), (2, 3)), label="rtol,atol", **ew)
    add("isclose", call("isclose", equal_nan=True), ((3, 4), (3, 4)), **NAN_EQUAL, **ew)
    add("isclose", call("isclose"), ((3, 4), (3, 4)), **SPECIAL, **ew)
    for name in ("allclose", "array_equal"):
        add(name, call(name), *[p for p in PAIRS if name == "allclose" or p[0] == p[1]], **red)
        add(name, call(name, equal_nan=True), ((3, 4), (3, 4)), **NAN_EQUAL, **red)
    add("array_equal", call("array_equal"), ((2, 3), (3,)), ((0,), (2, 0, 3)), **red)
    add("array_equal", lambda m, x: m.array_equal(x, x), *unary(SHAPES), label="x,x", **red)
    add("array_equiv", call("array_equiv"), *PAIRS, ((2,), (3,)), **red)
    add("copy", call("copy"), *unary(SHAPES), family="creation", dtypes=DTYPES)


def _padding() -> None:
    shape = {"family": "shape"}
    for width in (0, 1, (1, 2), ((0, 1),), ((1, 0), (2, 1)), ((1, 1), (0, 0), (2, 0))):
        for shapes in ([s] for s in SHAPES):
            if np.ndim(width) == 2 and len(width) not in (1, len(shapes[0])):
                continue
            add("pad", call("pad", width), shapes, label=f"{width}", **shape)
    add("pad", call("pad", 2, constant_values=7), ((2, 3),), label="7", **shape)
    add("pad", call("pad", ((1, 2), (0, 1)), mode="edge"), ((2, 3),), label="edge", **shape)
    add("pad", call("pad", ((1, 0),), mode="edge"), ((0,),), label="edge", error=ShapeError,
        numpy_too=True, **shape)  # fmt: skip
    add("pad", call("pad", -1), ((2, 3),), label="-1", error=SpmdValueError, **shape)
    for mode in ("reflect", "symmetric", "wrap", "linear_ramp", "maximum", "mean", "median"):
        add("pad", call("pad", ((3, 1), (0, 4)), mode=mode), ((2, 3),), label=mode, **shape)
    add("pad", call("pad", 1, mode="bogus"), ((2, 3),), label="bogus", error=SpmdValueError,
        **shape)  # fmt: skip
