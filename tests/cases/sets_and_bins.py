"""The case table's rows for the set and binning functions (spmd/numpy/sets.py, binning.py):
``unique`` with JAX's ``size=``, ``isin``, ``searchsorted``, ``bincount`` with JAX's ``length=``,
``histogram`` and ``interp``.

Every row runs eagerly and under jit, so the functions whose result's shape depends on the data
take JAX's static sizes here, against NumPy formulas (``numpy_unique``, ``numpy_bincount``); the
Array API's ``unique_values``/``_counts``/``_inverse``/``_all`` have no such size, cannot run
under jit, and are checked by the differential suite's eager placements instead.
"""

from __future__ import annotations

import numpy as np

from spmd import ShapeError, SpmdTypeError, SpmdValueError
from tests.cases.table import BOOL, FLOATS, INTS, SPECIAL, _label, add, call

XP = np.array([-3.0, -1.0, 0.5, 2.0, 4.0])  # interp's sample points (increasing)


def _padded(values: np.ndarray, size: int, fill) -> np.ndarray:
    filler = (values[0] if values.size else 0) if fill is None else fill
    pad = np.full(max(size - values.size, 0), filler, values.dtype)
    return np.concatenate([values[:size], pad])


def numpy_unique(x, size, fill, return_index, return_inverse, return_counts):
    """numpy.unique with JAX's ``size=``/``fill_value=``: the first ``size`` values, padded with
    ``fill_value`` (the smallest value by default), index and counts padded with 0."""
    x = np.asarray(x)
    values, index, inverse, counts = np.unique(
        x, return_index=True, return_inverse=True, return_counts=True
    )
    if size is not None:
        values, index, counts = (
            _padded(values, size, fill), _padded(index, size, 0), _padded(counts, size, 0)
        )  # fmt: skip
    extra = [r for r, wanted in ((index, return_index), (inverse.reshape(x.shape), return_inverse),
                                 (counts, return_counts)) if wanted]  # fmt: skip
    return (values, *extra) if extra else values


def numpy_bincount(x, *weights, minlength=0, length=None):
    """numpy.bincount with JAX's ``length=``: values at or past it count in no bin."""
    if length is None:
        return np.bincount(x, *weights, minlength=minlength)
    return np.bincount(x, *weights, minlength=max(length, minlength))[:length]


def _unique(size, fill=None, index=False, inverse=False, counts=False):
    flags = (index, inverse, counts)
    keywords = dict(return_index=index, return_inverse=inverse, return_counts=counts)

    def fn(m, x):
        if m is np:
            return numpy_unique(x, size, fill, *flags)
        return m.unique(x, size=size, fill_value=fill, **keywords)

    return fn


def _bincount(**keywords):
    return lambda m, *xs: (numpy_bincount if m is np else m.bincount)(*xs, **keywords)


UNIQUE = [  # (shape, size, fill_value, return_index, return_inverse, return_counts)
    ((6,), 6, None, False, False, False),
    ((2, 3), 4, None, True, True, True),
    ((3, 4, 2), 3, 1, False, True, False),
    ((), 2, None, True, False, True),
    ((0,), 3, 0, True, True, True),
]


def _sets():
    ix = {"family": "indexing"}
    for shape, size, fill, *flags in UNIQUE:
        label = _label(size=size, fill_value=fill, flags="".join(str(int(f)) for f in flags))
        add("unique", _unique(size, fill, *flags), (shape,), label=label, **ix)
    add("unique", _unique(4, None, True, True, True), ((7,),), **SPECIAL, **ix)
    for shapes in (((2, 3), (4,)), ((), (3,)), ((0,), (2,)), ((3,), ())):
        add("isin", call("isin"), shapes, **ix)
    add("isin", call("isin", invert=True), ((2, 3), (2, 2)), label="invert", **ix)
    add("isin", call("isin"), ((5,), (3,)), **SPECIAL, **ix)


def _binning():
    ix = {"family": "indexing"}
    for side in ("left", "right"):
        fn = lambda m, a, v, side=side: m.searchsorted(m.sort(a), v, side=side)  # noqa: E731
        label = _label(side=side)
        add("searchsorted", fn, ((5,), (2, 3)), ((4,), ()), ((0,), (3,)), ((5,), (0,)),
            label=label, **ix)  # fmt: skip
        add("searchsorted", fn, ((6,), (4,)), **{**SPECIAL, "label": f"{label},special"}, **ix)
    sorted_by = lambda m, a, v: m.searchsorted(a, v, sorter=m.argsort(a))  # noqa: E731
    add("searchsorted", sorted_by, ((5,), (3,)), label="sorter", **ix)
    flat = lambda m, a, v: m.searchsorted(a, v)  # noqa: E731
    add("searchsorted", flat, ((2, 3), (2,)), label="2-d", error=ShapeError, **ix)

    counts = {"family": "indexing", "domain": "positive"}
    for length, minlength in ((7, 0), (3, 0), (4, 6)):
        fn = _bincount(length=length, minlength=minlength)
        add("bincount", fn, ((6,),), label=_label(length=length, minlength=minlength),
            dtypes=(*BOOL, *INTS), **counts)  # fmt: skip
        add("bincount", fn, ((6,), (6,)), label=_label(length=length, weights=True),
            input_dtypes=(np.int64, None), **counts)  # fmt: skip
    add("bincount", _bincount(length=3), ((0,),), label="length=3", dtypes=INTS, **counts)
    add("bincount", _bincount(length=3), ((6,),), label="floats", dtypes=FLOATS,
        error=SpmdTypeError, **counts)  # fmt: skip
    add("bincount", _bincount(length=3), ((),), label="0-d", error=ShapeError, **counts)

    for shape in ((6,), (2, 3), (), (0,)):
        add("histogram", call("histogram", 4, range=(-5, 6)), (shape,), label="4,range", **ix)
    add("histogram", call("histogram", 3), ((5,),), label="3", **ix)
    edges = lambda m, a, e: m.histogram(a, m.sort(e))  # noqa: E731
    add("histogram", edges, ((2, 3), (4,)), label="edges", input_dtypes=(None, np.float64), **ix)
    weighted = lambda m, a, w: m.histogram(a, 3, range=(-5, 6), weights=w, density=True)  # noqa: E731
    # float64 weights only: float32 sums rounded in another order show in the float64 density
    add("histogram", weighted, ((6,), (6,)), label="weights,density", dtypes=(np.float64,), **ix)
    add("histogram", call("histogram", 0), ((3,),), label="0 bins", error=SpmdValueError, **ix)

    interp = lambda m, x, fp: m.interp(x, XP, fp)  # noqa: E731
    add("interp", interp, ((2, 3), (5,)), ((), (5,)), ((0,), (5,)), **ix)
    bounded = lambda m, x, fp: m.interp(x, XP, fp, left=-9.0, right=9.0)  # noqa: E731
    add("interp", bounded, ((7,), (5,)), label="left,right", **ix)
    add("interp", interp, ((4,), (5,)), **SPECIAL, **ix)
    add("interp", interp, ((3,), (4,)), label="mismatch", error=ShapeError, **ix)


def _sets_and_bins():
    _sets()
    _binning()
