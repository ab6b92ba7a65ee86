"""The case table's rows for the statistics and products of spmd.numpy (spmd/numpy/statistics.py,
products.py): the NaN-ignoring reductions, median and quantiles, cov/corrcoef, nan_to_num,
cumulative_sum; vecdot, inner, kron and convolve."""

from __future__ import annotations

from spmd import ShapeError, SpmdTypeError, SpmdValueError
from tests.cases.table import BOOL, NUMBERS, SPECIAL, _label, add, call

NAN_REDUCTIONS = ("nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin")
REDUCED = [  # (shape, keywords)
    ((2, 3), {}),
    ((2, 3), {"axis": 0}),
    ((3, 4, 2), {"axis": -1, "keepdims": True}),
    ((), {}),
    ((0, 3), {"axis": 1}),
]
QUANTILES = [  # (shape, q as a quantile, keywords)
    ((5,), 0.3, {}),
    ((2, 3), [0.25, 0.75], {"axis": 1, "keepdims": True}),
    ((3, 4), 0.5, {"axis": 0, "method": "midpoint"}),
    ((3, 4), [0, 1], {"axis": -1, "method": "lower"}),
    ((2, 5), 0.4, {"axis": 1, "method": "nearest"}),
    ((), 0.5, {}),
    ((0, 3), 0.5, {"axis": 1}),
]


def _statistics():
    red = {"family": "reduction"}
    for name in NAN_REDUCTIONS:
        for shape, kwargs in REDUCED:
            if name == "nanstd" and shape == ():  # sqrt's derivative at a variance of 0: NaN
                continue
            add(name, call(name, **kwargs), (shape,), label=_label(**kwargs), **red)
        add(name, call(name, axis=1), ((3, 4),), **{**SPECIAL, "label": "axis=1,special"}, **red)
    add("nanvar", call("nanvar", ddof=1), ((4, 3),), label="ddof=1", **red)
    for shape, kwargs in (((5,), {}), ((2, 3), {"axis": 1}), ((), {}), ((0, 3), {"axis": 0})):
        add("median", call("median", **kwargs), (shape,), label=_label(**kwargs), **red)
    add("median", call("median", axis=0), ((4, 3),), **{**SPECIAL, "label": "axis=0,special"},
        **red)  # fmt: skip
    for name, scale in (("quantile", 1), ("percentile", 100)):
        for shape, q, kwargs in QUANTILES:
            q = [v * scale for v in q] if isinstance(q, list) else q * scale
            label, fn = _label(q, **kwargs), call(name, q, **kwargs)
            if kwargs.get("method", "linear") in ("linear", "midpoint"):  # booleans cannot
                add(name, fn, (shape,), label=label, dtypes=NUMBERS, **red)
                add(name, fn, (shape,), label=label + ",bool", dtypes=BOOL, error=SpmdTypeError,
                    **red)  # fmt: skip
            else:
                add(name, fn, (shape,), label=label, **red)
        add(name, call(name, 0.5 * scale, axis=1), ((3, 4),),
            **{**SPECIAL, "label": "axis=1,special"}, **red)  # fmt: skip
        add(name, call(name, 2 * scale, method="lower"), ((3,),), label="q>1",
            error=SpmdValueError, **red)  # fmt: skip
    for name in ("cov", "corrcoef"):
        for shape, kwargs in (((3, 5), {}), ((6,), {}), ((5, 3), {"rowvar": False}), ((), {})):
            add(name, call(name, **kwargs), (shape,), label=_label(**kwargs), **red)
        add(name, call(name), ((2, 4), (4,)), label="y", **red)
        add(name, call(name), ((0, 3),), label="no variables", **red)
    add("cov", call("cov", bias=True), ((3, 4),), label="bias", **red)
    add("cov", call("cov", ddof=0), ((4,),), label="ddof=0", **red)
    add("cov", call("cov"), ((2, 2, 2),), label="3-d", error=ShapeError, **red)

    ew = {"family": "elementwise"}
    for shape in ((2, 3), (), (0,)):
        add("nan_to_num", call("nan_to_num"), (shape,), **ew)
    add("nan_to_num", call("nan_to_num"), ((3, 4),), **SPECIAL, **ew)
    fills = {"nan": 1.5, "posinf": 9.0, "neginf": -9.0}
    add("nan_to_num", call("nan_to_num", **fills), ((3, 4),),
        **{**SPECIAL, "label": _label(**fills)}, **ew)  # fmt: skip
    for shape, kwargs in (((5,), {}), ((2, 3), {"axis": 1, "include_initial": True}),
                          ((0, 3), {"axis": 0, "include_initial": True}), ((), {}),
                          ((3, 4), {"axis": 0, "dtype": "float64"})):  # fmt: skip
        add("cumulative_sum", call("cumulative_sum", **kwargs), (shape,), label=_label(**kwargs),
            **red)  # fmt: skip
    add("cumulative_sum", call("cumulative_sum"), ((2, 3),), label="no axis",
        error=SpmdValueError, **red)  # fmt: skip


def _products():
    ct = {"family": "contraction"}
    for shapes in (((2, 3), (3,)), ((4,), (4,)), ((0, 3), (3,)), ((2, 1, 3), (4, 3))):
        add("vecdot", call("vecdot"), shapes, **ct)
    add("vecdot", call("vecdot", axis=0), ((3, 2), (3, 2)), label="axis=0", **ct)
    add("vecdot", call("vecdot"), ((), (3,)), label="0-d", error=ShapeError, **ct)
    for shapes in (((2, 3), (4, 3)), ((), (3,)), ((0, 3), (3,)), ((3,), (3,))):
        add("inner", call("inner"), shapes, **ct)
    add("inner", call("inner"), ((2, 3), (2,)), label="mismatch", error=ShapeError, **ct)
    for shapes in (((2, 2), (3,)), ((), (2,)), ((0, 2), (2, 2)), ((2, 1, 2), (2, 3))):
        add("kron", call("kron"), shapes, **ct)
    for mode in ("full", "same", "valid"):
        for shapes in (((5,), (3,)), ((3,), (5,)), ((), (3,))):
            add("convolve", call("convolve", mode=mode), shapes, label=mode, **ct)
    add("convolve", call("convolve"), ((0,), (3,)), label="empty", error=SpmdValueError, **ct)
