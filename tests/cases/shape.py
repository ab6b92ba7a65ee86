"""The case table's shape rows: reshaping, axes, splitting, tiling, joining and astype."""

from __future__ import annotations

import numpy as np

from spmd import ShapeError
from tests.cases.table import DTYPES, FLOATS, _label, add, call, call_listed, unary

# ------------------------------------------------------------------------------ shape

SHAPE_ROWS = [  # (function, input shape, positional arguments after the array, keywords)
    ("reshape", (2, 3), ((3, 2),), {}),
    ("reshape", (2, 3), ((-1,),), {}),
    ("reshape", (2, 3), (6,), {}),
    ("reshape", (2, 3, 4), ((4, -1, 2),), {}),
    ("reshape", (2, 3, 4), ((-1, 4),), {}),
    ("reshape", (), ((1, 1),), {}),
    ("reshape", (1, 1), ((),), {}),
    ("reshape", (0, 3), ((-1, 5),), {}),
    ("reshape", (2, 0), ((0, 7),), {}),
    ("ravel", (2, 3), (), {}),
    ("ravel", (2, 3, 4), (), {}),
    ("ravel", (), (), {}),
    ("ravel", (0, 2), (), {}),
    ("transpose", (2, 3), (), {}),
    ("transpose", (2, 3, 4), (), {}),
    ("transpose", (2, 3, 4), ((2, 0, 1),), {}),
    ("transpose", (2, 3, 4), ((-1, 0, -2),), {}),
    ("transpose", (), (), {}),
    ("transpose", (0, 3), (), {}),
    ("swapaxes", (2, 3, 4), (0, -1), {}),
    ("swapaxes", (2, 3), (1, 1), {}),
    ("swapaxes", (0, 3), (-2, 1), {}),
    ("moveaxis", (2, 3, 4), (0, -1), {}),
    ("moveaxis", (2, 3, 4), ((0, 1), (-1, 0)), {}),
    ("moveaxis", (2, 3, 4, 5), ([0, 2], [3, 0]), {}),
    ("moveaxis", (0, 3), (0, 1), {}),
    ("squeeze", (1, 3, 1), (), {}),
    ("squeeze", (1, 3, 1), (-1,), {}),
    ("squeeze", (1, 3, 1), ((0, 2),), {}),
    ("squeeze", (), (), {}),
    ("squeeze", (1, 0, 1), (), {"axis": 0}),
    ("expand_dims", (2, 3), (0,), {}),
    ("expand_dims", (2, 3), (-1,), {}),
    ("expand_dims", (2, 3), ((0, -1),), {}),
    ("expand_dims", (2, 3), ((1, 3),), {}),
    ("expand_dims", (), (0,), {}),
    ("expand_dims", (0,), ((1, 2),), {}),
    ("broadcast_to", (3,), ((2, 3),), {}),
    ("broadcast_to", (2, 1), ((2, 0),), {}),
    ("broadcast_to", (), (4,), {}),
    ("broadcast_to", (1, 3), ((2, 2, 3),), {}),
    ("broadcast_to", (), ((),), {}),
    ("split", (6,), (3,), {}),
    ("split", (6, 4), (2,), {"axis": -1}),
    ("split", (5,), ([3, 1],), {}),
    ("split", (5,), ([-2, 10],), {}),
    ("split", (0, 3), (3,), {}),
    ("split", (6,), ([],), {}),
    ("split", (4, 6), ([1, 4],), {"axis": 1}),
    ("split", (2, 6, 2), (3,), {"axis": 1}),
    ("tile", (3,), (2,), {}),
    ("tile", (2, 3), ((2, 1),), {}),
    ("tile", (2, 3), ((2, 1, 2),), {}),
    ("tile", (2, 3, 4), (2,), {}),
    ("tile", (), (3,), {}),
    ("tile", (), ((),), {}),
    ("tile", (2, 3), (0,), {}),
    ("tile", (2, 0), ((3, 2),), {}),
    ("roll", (5,), (2,), {}),
    ("roll", (2, 3), (-1,), {}),
    ("roll", (2, 3), (4,), {"axis": 1}),
    ("roll", (2, 3, 4), ((1, 2),), {"axis": (0, -1)}),
    ("roll", (3, 4), (1,), {"axis": (0, 0)}),
    ("roll", (0, 3), (1,), {"axis": 1}),
    ("roll", (), (1,), {}),
    ("repeat", (3,), (2,), {}),
    ("repeat", (2, 3), (2,), {}),
    ("repeat", (2, 3), (2,), {"axis": 0}),
    ("repeat", (2, 3), ([1, 0, 2],), {"axis": -1}),
    ("repeat", (2, 3), ([2],), {"axis": 1}),
    ("repeat", (2, 3, 2), (3,), {"axis": 1}),
    ("repeat", (), (3,), {}),
    ("repeat", (0, 2), (3,), {"axis": 0}),
    ("repeat", (2, 3), (0,), {}),
]
SHAPE_ERRORS = [  # (function, input shape, positional arguments, keywords, error)
    ("reshape", (2, 3), ((4, 2),), {}, ShapeError),
    ("reshape", (6,), ((-1, -1),), {}, ShapeError),
    ("transpose", (2, 3), ((0,),), {}, ShapeError),
    ("swapaxes", (2, 3), (3, 0), {}, ShapeError),
    ("moveaxis", (2, 3, 4), ([0, 1], [1]), {}, ShapeError),
    ("squeeze", (2, 1), (0,), {}, ShapeError),
    ("expand_dims", (2, 3), (3,), {}, ShapeError),
    ("broadcast_to", (2,), ((3,),), {}, ShapeError),
    ("swapaxes", (), (0, 0), {}, ShapeError),
    ("moveaxis", (), (0, 0), {}, ShapeError),
    ("split", (5,), (2,), {}, ShapeError),
    ("split", (), (1,), {}, ShapeError),
    ("tile", (3,), (-1,), {}, ShapeError),
    ("repeat", (3,), ([1, 2],), {"axis": 0}, ShapeError),
    ("repeat", (3,), (2,), {"axis": 1}, ShapeError),
]
JOIN_ROWS = [  # (function, input shapes, axis)
    ("concatenate", [(2, 3), (4, 3)], 0),
    ("concatenate", [(2, 3), (2, 1)], -1),
    ("concatenate", [(2, 0), (2, 3), (2, 2)], 1),
    ("concatenate", [(0, 3), (0, 3)], 0),
    ("concatenate", [(3,)], 0),
    ("concatenate", [(2, 3, 2), (2, 1, 2)], 1),
    ("concatenate", [(2, 3), (3,)], None),
    ("concatenate", [(), (2,)], None),
    ("stack", [(2, 3), (2, 3)], 0),
    ("stack", [(2, 3), (2, 3), (2, 3)], -1),
    ("stack", [(2, 3), (2, 3)], 1),
    ("stack", [(), ()], 0),
    ("stack", [(0, 2), (0, 2)], -2),
    ("stack", [(2, 3, 2)], 3),
]
JOIN_ERRORS = [
    ("concatenate", [(2, 2), (2, 3)], 0),
    ("concatenate", [(2, 2), (2,)], 0),
    ("concatenate", [(), ()], 0),
    ("concatenate", [(2,), (2,)], 1),
    ("stack", [(2,), (3,)], 0),
]
ASTYPE_TARGETS = (*DTYPES, np.uint8, np.int8, np.float16, np.complex64)


def _shape():
    sh = {"family": "shape"}
    for name, shape, args, kwargs in SHAPE_ROWS:
        add(name, call(name, *args, **kwargs), (shape,), label=_label(*args, **kwargs), **sh)
    for name, shape, args, kwargs, error in SHAPE_ERRORS:
        add(
            name,
            call(name, *args, **kwargs),
            (shape,),
            label=_label(*args, **kwargs),
            error=error,
            **sh,
        )
    for name, shapes, axis in JOIN_ROWS:
        add(name, call_listed(name, axis=axis), shapes, label=_label(axis=axis), **sh)
    for name, shapes, axis in JOIN_ERRORS:
        add(
            name,
            call_listed(name, axis=axis),
            shapes,
            label=_label(axis=axis),
            error=ShapeError,
            **sh,
        )
    for name, shapes in (("concatenate", [(2, 3), (4, 3), (1, 3)]), ("stack", [(2, 3)] * 3)):
        for other in DTYPES:  # mixed dtypes promote as in NumPy 2
            add(
                name,
                call_listed(name),
                shapes,
                label="mixed",
                input_dtypes=(None, other, None),
                **sh,
            )
        for first, other in ((np.int8, np.uint8), (np.uint64, np.int64)):
            add(
                name,
                call_listed(name),
                shapes,
                label="mixed," + _label(first),
                dtypes=(first,),
                input_dtypes=(None, other, None),
                **sh,
            )
    for target in ASTYPE_TARGETS:
        add(
            "astype",
            call("astype", target),
            *unary([(), (0,), (2, 3), (3, 1, 2)]),
            label=_label(target),
            **sh,
        )
        add(
            "astype",
            lambda m, x, t=target: x.astype(t),
            ((2, 3),),
            label="method," + _label(target),
            **sh,
        )
    add(
        "astype",
        call("astype", np.int32),
        ((3, 4),),
        label="special,int32",
        dtypes=FLOATS,
        domain="special",
        **sh,
    )
    add("reshape", lambda m, x: x.reshape(2, -1), ((2, 3, 4),), label="method,2,-1", **sh)
    add("transpose", lambda m, x: x.T, ((2, 3, 4),), ((),), label=".T", **sh)
