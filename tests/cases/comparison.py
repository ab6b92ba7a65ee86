"""The case table's rows for whole-array comparisons and copies: isclose, allclose,
array_equal, array_equiv, copy."""

from __future__ import annotations

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
