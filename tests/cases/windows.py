"""The case table's spmd.lax.reduce_window rows, with a plain-loop reference for them.

A row calls ``windows(m).reduce_window(x, init, m.maximum, ...)``: for ``m = spmd.numpy``
that is spmd.lax.reduce_window, for ``m = numpy`` it is ``reference_reduce_window``, which
visits every window and every tap with Python loops, as XLA defines the reduction: each
window starts from ``init_value`` and folds in the operand elements it covers, skipping
padding and base-dilation holes. Max and average pooling as stax and flax write them, sums,
minima and products (a fold in spmd), a non-identity init, dilations, 0-d and empty operands.
"""

from __future__ import annotations

import math
import types
import warnings

import numpy as np

import spmd
from spmd import ShapeError, SpmdTypeError, SpmdValueError
from tests.cases.table import BOOL, DTYPES, FLOATS, NUMBERS, add


def _dilated(size: int, dilation: int) -> int:
    return 0 if size == 0 else 1 + dilation * (size - 1)


def reference_pads(shape, window, strides, padding):
    """'VALID', 'SAME' and 'SAME_LOWER' by their definition: ceil(n / stride) windows, the
    padding they need split evenly, the odd element at the end (SAME) or start."""
    if not isinstance(padding, str):
        return [tuple(p) for p in padding]
    if padding == "VALID":
        return [(0, 0)] * len(shape)
    pads = []
    for n, w, s in zip(shape, window, strides, strict=True):
        total = max(0, (math.ceil(n / s) - 1) * s + w - n)
        low = total // 2 if padding == "SAME" else total - total // 2
        pads.append((low, total - low))
    return pads


def reference_reduce_window(operand, init_value, computation, window_dimensions,
                            window_strides=None, padding="VALID", base_dilation=None,
                            window_dilation=None):  # fmt: skip
    """XLA's ReduceWindow with a Python loop over windows and taps (one operand)."""
    x = np.asarray(operand)
    ndim = x.ndim
    if not callable(computation):
        raise TypeError("computation is not callable")
    strides = window_strides or (1,) * ndim
    base = base_dilation or (1,) * ndim
    wdil = window_dilation or (1,) * ndim
    for values in (window_dimensions, strides, base, wdil):
        if len(values) != ndim or any(v < 1 for v in values):
            raise ValueError("one positive entry per dimension")
    spans = [_dilated(w, d) for w, d in zip(window_dimensions, wdil, strict=True)]
    pads = reference_pads(x.shape, spans, strides, padding)
    out_shape = tuple(
        max(0, (_dilated(n, b) + lo + hi - span) // s + 1)
        for n, b, (lo, hi), span, s in zip(x.shape, base, pads, spans, strides, strict=True)
    )
    init = np.asarray(init_value).astype(x.dtype)[()]
    out = np.empty(out_shape, x.dtype)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for index in np.ndindex(*out_shape):
            acc = init
            for tap in np.ndindex(*window_dimensions):
                source = []
                for i in range(ndim):
                    at = index[i] * strides[i] + tap[i] * wdil[i] - pads[i][0]
                    if at % base[i] or not 0 <= at // base[i] < x.shape[i]:
                        break
                    source.append(at // base[i])
                else:
                    acc = computation(acc, x[tuple(source)])
            out[index] = acc
    return out


NUMPY_WINDOWS = types.SimpleNamespace(reduce_window=reference_reduce_window)


def windows(m):
    """spmd.lax for m = spmd.numpy, its loop reference for m = numpy."""
    return NUMPY_WINDOWS if m is np else spmd.lax


def lowest(dtype):
    """max's identity: -inf, the integer minimum, False."""
    dtype = np.dtype(dtype)
    return False if dtype == np.bool_ else np.iinfo(dtype).min if dtype.kind in "iu" else -np.inf


def highest(dtype):
    """min's identity: inf, the integer maximum, True."""
    dtype = np.dtype(dtype)
    return True if dtype == np.bool_ else np.iinfo(dtype).max if dtype.kind in "iu" else np.inf


def pooled(init, op: str, window, strides=None, padding="VALID", **dilations):
    """fn(m, x) = reduce_window(x, init(x.dtype), m.<op>, ...)."""

    def fn(m, x):
        return windows(m).reduce_window(x, init(x.dtype), getattr(m, op), window, strides,
                                        padding, **dilations)  # fmt: skip

    return fn


def _label(op, window, strides, padding, **dilations):
    parts = [op, f"w={window}", f"s={strides}", f"pad={padding}"]
    parts += [f"{k}={v}" for k, v in dilations.items()]
    return ",".join(parts).replace(" ", "")


# (window, strides, padding, dilations, shapes): ranks 0 to 4, empty and uneven sizes
GEOMETRIES = [
    ((2, 2), (2, 2), "VALID", {}, [(4, 6), (5, 3), (2, 0)]),
    ((1, 2, 2, 1), (1, 2, 2, 1), "VALID", {}, [(2, 4, 4, 3), (3, 5, 3, 2)]),
    ((3,), (1,), "SAME", {}, [(5,), (0,), (1,)]),
    ((2, 3), (1, 2), "SAME_LOWER", {}, [(3, 4)]),
    ((2, 1, 2), (1, 1, 2), ((1, 0), (0, 0), (0, 2)), {}, [(3, 4, 2), (2, 0, 3)]),
    ((2, 2), (1, 1), ((1, 1), (-1, 0)), {"base_dilation": (2, 1)}, [(3, 4)]),
    ((2, 2), (2, 1), "VALID", {"window_dilation": (1, 2)}, [(5, 6)]),
    ((), (), "VALID", {}, [()]),
    ((1, 5, 4, 1), (1, 5, 4, 1), "VALID", {}, [(2, 5, 4, 3)]),  # global pooling: many taps
    ((5, 4), (1, 1), "VALID", {}, [(6, 5)]),  # many overlapping taps
]


def _windows():
    kw = {"family": "reduction"}  # the windowed dimensions are blocked from splitting
    for window, strides, padding, dilations, shapes in GEOMETRIES:
        ones = [(s,) for s in shapes]
        for op, init, dtypes in (("maximum", lowest, DTYPES), ("minimum", highest, DTYPES),
                                 ("add", lambda d: 0, NUMBERS)):  # fmt: skip
            add("lax.reduce_window", pooled(init, op, window, strides, padding, **dilations),
                *ones, label=_label(op, window, strides, padding, **dilations), dtypes=dtypes,
                **kw)  # fmt: skip
    _pooling(kw)
    _folds(kw)
    _errors(kw)


def _pooling(kw):
    def avg_pool(m, x):  # stax's AvgPool: the window sum over the window's size
        summed = windows(m).reduce_window(x, 0.0, m.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        return summed / 4

    add("lax.reduce_window", avg_pool, [(2, 4, 6, 3)], [(1, 3, 5, 2)], label="avg_pool",
        dtypes=FLOATS, **kw)  # fmt: skip

    def max_with_zero(m, x):  # an init that is not max's identity: max(0, window)
        return windows(m).reduce_window(x, x.dtype.type(0), m.maximum, (2, 2), (1, 2), "SAME")

    add("lax.reduce_window", max_with_zero, [(4, 5)], [(3, 0)], label="init=0,max",
        dtypes=NUMBERS, **kw)  # fmt: skip

    def sum_from_one(m, x):  # add's init counted once per window, padding skipped
        return windows(m).reduce_window(x, 1, m.add, (3,), (2,), ((2, 1),))

    add("lax.reduce_window", sum_from_one, [(6,)], [(0,)], label="init=1,add", dtypes=NUMBERS,
        **kw)  # fmt: skip


def _folds(kw):
    def product(m, x):  # multiply: folded tap by tap
        return windows(m).reduce_window(x, 1, m.multiply, (2, 2), (1, 1), ((0, 1), (1, 0)))

    add("lax.reduce_window", product, [(3, 4)], [(2, 0)], label="multiply",
        dtypes=NUMBERS, **kw)  # fmt: skip

    def logaddexp(m, x):  # any elementwise computation: folded, padding skipped
        return windows(m).reduce_window(x, -np.inf, m.logaddexp, (3, 2), (2, 1), "SAME")

    add("lax.reduce_window", logaddexp, [(5, 4)], [(0, 2)], label="logaddexp", dtypes=FLOATS,
        **kw)  # fmt: skip


def _errors(kw):
    def rank_mismatch(m, x):
        return windows(m).reduce_window(x, 0, m.add, (2,), (1,), "VALID")

    add("lax.reduce_window", rank_mismatch, [(3, 4)], label="rank-mismatch", dtypes=NUMBERS,
        error=ShapeError, **kw)  # fmt: skip

    def zero_window(m, x):
        return windows(m).reduce_window(x, 0, m.add, (0, 2), (1, 1), "VALID")

    add("lax.reduce_window", zero_window, [(3, 4)], label="window=0", dtypes=NUMBERS,
        error=SpmdValueError, **kw)  # fmt: skip

    def not_callable(m, x):
        return windows(m).reduce_window(x, 0, "add", (2, 2), (1, 1), "VALID")

    add("lax.reduce_window", not_callable, [(3, 4)], label="computation='add'",
        dtypes=DTYPES, error=SpmdTypeError, **kw)  # fmt: skip

    def bool_sum(m, x):  # JAX's windowed sum refuses bools; the loop would take or
        return windows(m).reduce_window(x, False, m.add, (2, 2), (1, 1), "VALID")

    add("lax.reduce_window", bool_sum, [(3, 4)], label="add-bools", dtypes=BOOL,
        error=SpmdTypeError, numpy_too=False, **kw)  # fmt: skip


__all__ = ["NUMPY_WINDOWS", "highest", "lowest", "reference_reduce_window", "windows"]
