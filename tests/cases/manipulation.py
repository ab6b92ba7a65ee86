"""The case table's rows for the Array API's manipulation functions and NumPy's remaining axis
shuffles (spmd/numpy/manipulation.py): each a reindexing, so every dtype, 0-d and size 0."""

from __future__ import annotations

import numpy as np

from spmd import ShapeError
from tests.cases.table import _label, add, call, call_listed

ROWS = [  # (function, input shape, positional arguments after the array, keywords)
    ("permute_dims", (2, 3, 4), ((2, 0, 1),), {}),
    ("permute_dims", (), ((),), {}),
    ("permute_dims", (0, 3), ((1, 0),), {}),
    ("flip", (2, 3), (), {}),
    ("flip", (2, 3, 4), (), {"axis": (0, 2)}),
    ("flip", (5,), (), {"axis": -1}),
    ("flip", (), (), {}),
    ("flip", (0, 3), (), {"axis": 1}),
    ("matrix_transpose", (2, 3), (), {}),
    ("matrix_transpose", (3, 0, 2), (), {}),
    ("unstack", (2, 3), (), {}),
    ("unstack", (3, 4, 2), (), {"axis": -1}),
    ("unstack", (0, 3), (), {"axis": 1}),
    ("tril", (3, 4), (), {}),
    ("tril", (4, 3), (), {"k": -1}),
    ("tril", (2, 3, 3), (), {"k": 1}),
    ("tril", (0, 3), (), {}),
    ("triu", (3, 4), (), {}),
    ("triu", (4, 3), (), {"k": 2}),
    ("triu", (2, 3, 3), (), {"k": -1}),
    ("triu", (3, 0), (), {}),
    ("triu", (4,), (), {}),
    ("tril", (3,), (), {"k": 1}),
    ("rot90", (2, 3), (), {}),
    ("rot90", (2, 3), (2,), {}),
    ("rot90", (2, 3), (3,), {}),
    ("rot90", (2, 3), (-1,), {}),
    ("rot90", (2, 3, 4), (1,), {"axes": (1, 2)}),
    ("rot90", (0, 3), (1,), {}),
    ("array_split", (7,), (3,), {}),
    ("array_split", (5, 4), ([1, 3],), {"axis": 1}),
    ("array_split", (0, 3), (2,), {}),
    ("array_split", (3,), (5,), {}),
]
ERRORS = [  # NumPy rejects these too
    ("matrix_transpose", (), (), {}),
    ("unstack", (), (), {}),
    ("tril", (), (), {}),
    ("triu", (), (), {"k": 1}),
    ("rot90", (), (), {}),
    ("rot90", (2, 3), (), {"axes": (0, 0)}),
    ("array_split", (), (2,), {}),
    ("flip", (2, 3), (), {"axis": 2}),
]
LISTED = [  # (function, input shapes, keywords): fn([*xs], **keywords)
    ("concat", [(2, 3), (4, 3)], {}),
    ("concat", [(2, 3), (2, 1)], {"axis": -1}),
    ("concat", [(0, 3), (2, 3)], {}),
    ("concat", [(), (2,)], {"axis": None}),
]
SPREAD = [  # (function, input shapes, keywords): fn(*xs, **keywords)
    ("broadcast_arrays", [(3,), (2, 1)], {}),
    ("broadcast_arrays", [(), (2, 3)], {}),
    ("broadcast_arrays", [(0, 3), (1, 3)], {}),
    ("meshgrid", [(3,), (2,)], {}),
    ("meshgrid", [(3,), (2,), (4,)], {"indexing": "ij"}),
    ("meshgrid", [(3,), (2,)], {"sparse": True}),
    ("meshgrid", [(), (0,)], {}),
]
TAKE_ALONG = [  # (input shape, indices, axis)
    ((2, 3), [[0, 2, 1], [1, 1, 0]], 1),
    ((3, 2), [[2, 0], [-1, 1]], 0),
    ((2, 3), [[2], [0]], 1),
    ((2, 3), [5, 0, -6], None),
    ((2, 0), np.zeros((2, 0), np.intp), 1),
]


def _manipulation():
    sh = {"family": "shape"}
    for name, shape, args, kwargs in ROWS:
        add(name, call(name, *args, **kwargs), (shape,), label=_label(*args, **kwargs), **sh)
    for name, shape, args, kwargs in ERRORS:
        label = _label(*args, **kwargs)
        add(name, call(name, *args, **kwargs), (shape,), label=label, error=ShapeError, **sh)
    for name, shapes, kwargs in LISTED:
        add(name, call_listed(name, **kwargs), shapes, label=_label(**kwargs), **sh)
    add("concat", call_listed("concat"), [(2, 2), (2, 3)], label="mismatch", error=ShapeError, **sh)
    for name, shapes, kwargs in SPREAD:
        add(name, call(name, **kwargs), shapes, label=_label(**kwargs), **sh)
    for shape, indices, axis in TAKE_ALONG:
        fn = call("take_along_axis", axis=axis)
        add("take_along_axis", fn, (shape,), label=_label(axis=axis), indices=(indices,), **sh)
    scalar = call("take_along_axis", axis=0)
    add("take_along_axis", scalar, ((),), label="0-d", indices=(0,), error=ShapeError, **sh)
