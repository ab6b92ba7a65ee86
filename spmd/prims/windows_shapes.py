"""A windowed reduction's geometry: its parameters' checks, its result's shape, and the value
each reduction pads with (the primitives themselves are in windows.py).

The parameters are JAX's, one entry per dimension of the operand: ``window_dimensions`` (the
window's size), ``window_strides`` (between neighbouring windows), ``padding`` ((low, high)
elements added at each end; negative crops), ``base_dilation`` (``b - 1`` holes between
neighbouring operand elements, before padding) and ``window_dilation`` (``d - 1`` elements
skipped between a window's taps). Along one dimension of size ``n`` the result has
``max(0, (dilate(n, b) + low + high - dilate(w, d)) // stride + 1)`` elements.
"""

from __future__ import annotations

import numpy as np

from spmd.core.aval import ShapedArray
from spmd.errors import ShapeError, SpmdTypeError

PARAMS = ("window_dimensions", "window_strides", "padding", "base_dilation", "window_dilation")


def dilate(size: int, dilation: int) -> int:
    """The length of ``size`` elements with ``dilation - 1`` holes between neighbours."""
    return 0 if size == 0 else 1 + dilation * (size - 1)


def out_size(size, window, stride, pad, base, window_dilation) -> int:
    """The result's length along one dimension."""
    padded = dilate(size, base) + pad[0] + pad[1]
    return max(0, (padded - dilate(window, window_dilation)) // stride + 1)


def window_shape(shape, *, window_dimensions, window_strides, padding, base_dilation,
                 window_dilation) -> tuple[int, ...]:  # fmt: skip
    """The result's shape (parameters already checked)."""
    columns = (window_dimensions, window_strides, padding, base_dilation, window_dilation)
    return tuple(out_size(n, *column) for n, *column in zip(shape, *columns, strict=True))


def check_window(name: str, x: ShapedArray, params: dict) -> tuple[int, ...]:
    """The result's shape of window reduction ``name`` on ``x``; ShapeError naming the
    parameter when one does not fit."""
    where = f"spmd {name} of {x}"
    for key in PARAMS:
        value = params[key]
        if not isinstance(value, tuple) or len(value) != x.ndim:
            raise ShapeError(
                f"{where}: {key}={value!r} has {len(value) if isinstance(value, tuple) else '?'} "
                f"entries, but the operand has {x.ndim} dimensions; give one per dimension."
            )
    if any(not isinstance(p, tuple) or len(p) != 2 or not all(isinstance(v, int | np.integer)
           for v in p) for p in params["padding"]):  # fmt: skip
        raise ShapeError(f"{where}: padding={params['padding']!r} must hold (low, high) integers.")
    for key in ("window_dimensions", "window_strides", "base_dilation", "window_dilation"):
        if any(not isinstance(v, int | np.integer) or v < 1 for v in params[key]):
            raise ShapeError(f"{where}: {key}={params[key]} must hold integers of at least 1.")
    for size, pad, base in zip(x.shape, params["padding"], params["base_dilation"], strict=True):
        if dilate(size, base) + pad[0] + pad[1] < 0:
            raise ShapeError(
                f"{where}: padding={params['padding']} crops more than the "
                f"{dilate(size, base)} elements there are; make the negative padding smaller."
            )
    return window_shape(x.shape, **{key: params[key] for key in PARAMS})


def identity(op: str, dtype: np.dtype):
    """The value ``op`` ("sum", "max", "min") leaves unchanged: what windows are padded with."""
    dtype = np.dtype(dtype)
    if op == "sum":
        return dtype.type(0)
    if dtype == np.bool_:
        return op == "min"
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return dtype.type(info.min if op == "max" else info.max)
    return dtype.type(-np.inf if op == "max" else np.inf)


def check_dtype(name: str, op: str, x: ShapedArray) -> None:
    """Sums take numbers; max and min take bools, integers and reals (no complex order)."""
    if op == "sum" and x.dtype.kind not in "iufc":
        raise SpmdTypeError(
            f"spmd {name} of {x}: a windowed sum takes numbers, not {x.dtype}; convert first, "
            f"e.g. x.astype(np.int32), or reduce bools with max (any) or min (all)."
        )
    if op != "sum" and x.dtype.kind not in "biuf":
        raise SpmdTypeError(
            f"spmd {name} of {x}: a windowed {op} takes bools, integers or reals, not "
            f"{x.dtype} (complex numbers have no order); reduce the real part or abs(x)."
        )


def reduce_window_shape(op: str, name: str):
    """The shape rule of the windowed ``op`` (a primitive called ``name``)."""

    def shape(x: ShapedArray, **params) -> ShapedArray:
        check_dtype(name, op, x)
        return ShapedArray(check_window(name, x, params), x.dtype, x.weak_type)

    return shape
