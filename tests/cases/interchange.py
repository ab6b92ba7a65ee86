"""The case table's interchange rows: from_dlpack (spmd/numpy/interchange.py), of NumPy arrays
(copied into an Array) and of Arrays or traced values (returned as they are)."""

from __future__ import annotations

import numpy as np

from tests.cases.table import NO_DTYPE, SHAPES, add, call, unary


def _interchange():
    cr = {"family": "creation"}  # the standard lists from_dlpack with the creation functions
    add("from_dlpack", call("from_dlpack"), *unary(SHAPES), label="x", **cr)
    fixed = [
        (lambda m: m.from_dlpack(np.arange(6.0).reshape(2, 3)), "numpy"),
        (lambda m: m.from_dlpack(np.array([True, False])), "numpy,bool"),
        (lambda m: m.from_dlpack(np.zeros((0, 2), np.int16)), "numpy,empty"),
    ]
    for fn, label in fixed:
        add("from_dlpack", fn, (), label=label, dtypes=NO_DTYPE, **cr)
