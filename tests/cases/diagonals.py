"""The case table's diagonal rows: diagonal and trace over offsets and axis pairs."""

from __future__ import annotations

import numpy as np

from spmd import ShapeError, SpmdTypeError
from tests.cases.table import DTYPES, SPECIAL, _label, add, call, rejects

DIAGONAL_ROWS = [  # (input shape, offset, axis1, axis2)
    ((3, 3), 0, 0, 1),
    ((5, 5), 0, 1, 0),
    ((2, 3), 0, 0, 1),
    ((4, 2), 1, 0, 1),
    ((3, 5), 2, 0, 1),
    ((5, 3), -1, 0, 1),
    ((4, 4), -3, 0, 1),
    ((3, 3), 3, 0, 1),  # past the corner: empty
    ((3, 4), -10, 0, 1),
    ((3, 4, 2), 0, 0, 2),
    ((3, 4, 2), 1, -1, -2),
    ((4, 3, 4), 0, 2, 0),
    ((2, 3, 3), -1, 1, 2),
    ((2, 0, 3), 0, 0, 2),
    ((0, 0), 0, 0, 1),
    ((1, 1), 0, 0, 1),
]
DIAGONAL_ERRORS = [  # (input shape, offset, axis1, axis2, error)
    ((), 0, 0, 1, ShapeError),  # a diagonal needs two dimensions
    ((4,), 0, 0, 1, ShapeError),
    ((3, 3), 0, 1, 1, ShapeError),  # the same axis twice
    ((3, 4, 2), 0, 1, -2, ShapeError),
    ((3, 3), 0, 0, 2, ShapeError),  # out of bounds
    ((3, 3), 0, -3, 1, ShapeError),
    ((3, 3), 1.0, 0, 1, SpmdTypeError),  # offset must be an integer
]


def _diagonals():
    for name, family in (("diagonal", "shape"), ("trace", "reduction")):
        for shape, offset, axis1, axis2 in DIAGONAL_ROWS:
            fn = call(name, offset, axis1, axis2)
            add(name, fn, (shape,), label=_label(offset, axis1, axis2), family=family)
        for shape, offset, axis1, axis2, error in DIAGONAL_ERRORS:
            fn = call(name, offset, axis1=axis1, axis2=axis2)
            label = _label(offset, axis1=axis1, axis2=axis2)
            add(name, fn, (shape,), **rejects(DTYPES, error, label), family=family)
        add(name, call(name, 1), ((4, 4),), **SPECIAL, family=family)
        complex_rows = {"label": "complex", "dtypes": (np.complex64, np.complex128)}
        add(name, call(name), ((3, 3),), ((2, 4, 3),), **complex_rows, family=family)
    for dtype in (np.bool_, np.int8, np.int32, np.float32, np.complex64):
        label = _label(dtype=dtype)
        for shape in ((3, 3), (2, 0)):
            add("trace", call("trace", dtype=dtype), (shape,), label=label, family="reduction")
    add(
        "trace",
        call("trace"),
        ((3, 3),),
        label="small ints",
        dtypes=(np.int8, np.uint8),
        family="reduction",
    )
    add(
        "diagonal",
        lambda m, x: x.diagonal(1, 0, 2),
        ((3, 2, 4),),
        ((2, 0, 2),),
        label="method,1,0,2",
        family="shape",
    )
    add(  # Tracer.trace is the tracer's trace today: see KNOWN_BUGS in tests/cases/select.py
        "trace",
        lambda m, x: x.trace(-1, dtype=np.float64),
        ((3, 3),),
        label="method,-1,dtype=float64",
        family="reduction",
    )
