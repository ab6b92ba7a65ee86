"""The case table's reduction rows: sums, extremes, statistics, argmax, cumsum and cumprod."""

from __future__ import annotations

import numpy as np

from spmd import ShapeError
from tests.cases.table import DTYPES, NUMBERS, SHAPES, SPECIAL, _label, add, call, rejects

# ------------------------------------------------------------------------- reductions

REDUCE = ("sum", "mean", "prod", "max", "min", "all", "any", "std", "var", "amax", "amin")
REDUCE_AXES = (None, 0, -1, 1, (0, -1), (), 3)
ONE_AXIS = (None, 0, -1, 1, 2)
EMPTY_RAISES = ("max", "min", "amax", "amin", "argmax", "argmin")  # no identity to return
CUMULATIVE = ("cumsum", "cumprod")
ONE_AXIS_FUNCTIONS = ("argmax", "argmin", *CUMULATIVE)


def _reduction_error(name, shape, axis):
    """(error, numpy_too) for reducing ``shape`` over ``axis``; (None, True) when it works."""
    ndim = len(shape)
    axes = tuple(range(ndim)) if axis is None else (axis,) if isinstance(axis, int) else axis
    if ndim == 0 and isinstance(axis, int) and name not in ONE_AXIS_FUNCTIONS:
        # NumPy's ufunc reductions (sum, prod, max, min, all, any) take axis 0 or -1 of a
        # 0-d array; mean, std and var say it has no axis 0. spmd follows NumPy.
        if axis in (0, -1) and name not in ("mean", "std", "var"):
            return None, True
        return ShapeError, True
    if ndim == 0 and isinstance(axis, int):  # argmax, argmin, cumsum, cumprod: 0-d as 1-d
        return (ShapeError, True) if axis not in (0, -1) else (None, True)
    if any(not -ndim <= a < ndim for a in axes) or len({a % ndim for a in axes}) < len(axes):
        return ShapeError, True  # out of range, or named twice
    if name in EMPTY_RAISES and (0 in shape if axis is None else any(shape[a] == 0 for a in axes)):
        return ShapeError, True
    return None, True


def _reductions():
    red = {"family": "reduction"}
    for name in (*REDUCE, *ONE_AXIS_FUNCTIONS):
        single = name in ONE_AXIS_FUNCTIONS
        for axis in ONE_AXIS if single else REDUCE_AXES:
            for keepdims in (None,) if name in CUMULATIVE else (False, True):
                kwargs = (
                    {"axis": axis} if keepdims is None else {"axis": axis, "keepdims": keepdims}
                )
                label = _label(**{k: v for k, v in kwargs.items() if v is not False})
                for shape in SHAPES:
                    error, numpy_too = _reduction_error(name, shape, axis)
                    expect = {"error": error, "numpy_too": numpy_too}
                    add(name, call(name, **kwargs), (shape,), label=label, **expect, **red)
        add(name, call(name, axis=-1), ((3, 4),), **{**SPECIAL, "label": "special,axis=-1"}, **red)
    for name in ("sum", "prod", "mean", *CUMULATIVE):
        for dtype in (np.bool_, np.int32, np.float32, np.float64, np.complex64):
            for axis in (None, 1) if name in CUMULATIVE else (None, 1, (0, 2)):
                add(
                    name,
                    call(name, axis=axis, dtype=dtype),
                    ((3, 4, 2),),
                    label=_label(axis=axis, dtype=dtype),
                    **red,
                )
    for name in ("std", "var"):
        for ddof in (1, 2, 5):
            for axis in (None, 0, (1, 2), -1):
                add(
                    name,
                    call(name, axis=axis, ddof=ddof),
                    ((3, 4, 2),),
                    label=_label(axis=axis, ddof=ddof),
                    dtypes=(*DTYPES, np.complex64),
                    **red,
                )
        add(name, call(name), ((3, 4),), label="complex", dtypes=(np.complex64,), **red)
    for name in ("max", "min", "amax", "amin"):
        add(
            name,
            call(name, axis=1, initial=-1.0),
            ((2, 0, 3),),
            ((2, 4, 3),),
            label="axis=1,initial=-1.0",
            dtypes=NUMBERS,
            **red,
        )
    add("sum", call("sum"), ((3, 4),), label="uint8", dtypes=(np.uint8, np.float16), **red)
    add("mean", call("mean"), ((3, 4),), label="float16", dtypes=(np.float16,), **red)
    for name in ("sum", "mean", "max", "argmax", *CUMULATIVE, "std", "prod", "all"):
        add(
            name,
            lambda m, x, name=name: getattr(x, name)(axis=0),
            ((3, 4),),
            label="method,axis=0",
            **red,
        )
    add(
        "cumprod",
        call("cumprod", axis=0),
        ((3, 2),),
        label="axis=0,complex",
        dtypes=(np.complex64, np.complex128),
        **red,
    )
    add(
        "cumprod",
        lambda m, x: x.cumprod(axis=1, dtype=np.float32),
        ((2, 3),),
        label="method,axis=1,dtype=float32",
        **red,
    )
    for name in CUMULATIVE:
        add(name, call(name, axis=(0, 1)), ((2, 3),), **rejects(NUMBERS, label="axis=(0,1)"), **red)
