"""The case table's sorting rows: sort and argsort along each axis, ties kept in order."""

from __future__ import annotations

import numpy as np

from spmd import ShapeError, SpmdTypeError, SpmdValueError
from tests.cases.table import DTYPES, SHAPES, SPECIAL, _label, add, rejects

SORT_AXES = (-1, 0, 1, 2, -3, None)
COMPLEX = (np.complex64, np.complex128)


def sorting(name: str, **kwargs):
    """fn(m, x) = m.sort(x, **kwargs), or m.argsort; NumPy's argsort is asked for the stable
    order (its default kind may order ties either way), spmd's is stable whatever the kind."""
    if name == "argsort" and "kind" not in kwargs and "stable" not in kwargs:
        return lambda m, x: m.argsort(x, **kwargs, **({"kind": "stable"} if m is np else {}))
    return lambda m, x: getattr(m, name)(x, **kwargs)


def _sort_error(name: str, shape: tuple[int, ...], axis) -> type | None:
    """NumPy's verdict on sorting ``shape`` along ``axis``: argsort takes 0-d as 1-d."""
    if axis is None:
        return None
    ndim = max(len(shape), 1) if name == "argsort" else len(shape)
    return None if -ndim <= axis < ndim else ShapeError


def _sorting():
    red = {"family": "reduction"}
    for name in ("sort", "argsort"):
        for axis in SORT_AXES:
            for shape in SHAPES:
                error = _sort_error(name, shape, axis)
                label = _label(axis=axis)
                add(name, sorting(name, axis=axis), (shape,), label=label, error=error, **red)
        add(name, sorting(name), ((3, 5),), **SPECIAL, **red)  # NaN last, -0.0 ties 0.0
        add(name, sorting(name, axis=0), ((5, 2),), label="complex", dtypes=COMPLEX, **red)
        add(name, sorting(name), ((2, 4),), label="uint8", dtypes=(np.uint8, np.float16), **red)
        for options in ({"kind": "stable"}, {"kind": "mergesort"}, {"stable": True}):
            add(name, sorting(name, axis=0, **options), ((6, 3),), label=_label(**options), **red)
        add(name, sorting(name, kind="quicksort"), ((4, 5),), label="kind=quicksort", **red)
        for options, error in [
            ({"kind": "bogus"}, SpmdValueError),
            ({"kind": 3}, SpmdTypeError),
            ({"kind": "stable", "stable": True}, SpmdValueError),
            ({"order": "x"}, SpmdValueError),
            ({"axis": (0, 1)}, SpmdTypeError),
        ]:
            reject = rejects(DTYPES, error, label=_label(**options))
            add(name, sorting(name, **options), ((2, 3),), **reject, **red)
    methods = {  # NumPy's ndarray.sort sorts in place; spmd's (as JAX's) returns a copy
        "sort": lambda m, x: np.sort(x, axis=0) if m is np else x.sort(axis=0),
        "argsort": lambda m, x: x.argsort(axis=0, kind="stable"),
    }
    for name, fn in methods.items():
        add(name, fn, ((4, 3),), ((0, 2),), label="method,axis=0", **red)
