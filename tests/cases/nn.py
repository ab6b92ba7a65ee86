"""The case table's spmd.nn rows, with float64 NumPy reference formulas for spmd.nn."""

from __future__ import annotations

import math
import types
from collections.abc import Callable

import numpy as np

import spmd
from spmd import ShapeError, SpmdTypeError
from tests.cases.table import BOOL, DTYPES, FLOATS, NUMBERS, _keep, _label, add, unary

# --------------------------------------------------------------------------------- nn


def _float_formula(formula, rejects_bool=""):
    """A NumPy reference computed in float64, in the dtype NumPy's own formula would give."""

    def reference(x, *args, **kwargs):
        x = np.asarray(x)
        if rejects_bool and x.dtype == np.bool_:
            raise TypeError(f"numpy boolean {rejects_bool} is not supported")
        result = np.asarray(formula(x.astype(np.float64), *args, **kwargs))
        # bools and integers: the float NumPy's ufuncs give them (float16 for bool, int8)
        kind = x.dtype if x.dtype.kind == "f" else np.promote_types(x.dtype, np.float16)
        return result.astype(kind)

    return reference


def _axes(axis, ndim):
    return tuple(range(ndim)) if axis is None else axis if isinstance(axis, tuple) else (axis,)


def _lse(x, axis=None, keepdims=False):
    axes = _axes(axis, x.ndim)
    top = np.max(x, axis=axes, keepdims=True, initial=-np.inf)
    top = np.where(np.isfinite(top), top, 0)
    out = np.log(np.sum(np.exp(x - top), axis=axes, keepdims=True)) + top
    return out if keepdims else np.squeeze(out, axis=axes)


def _softmax(x, axis=-1):
    return np.exp(x - _lse(x, axis, keepdims=True))


_erfc = np.vectorize(math.erfc, otypes=[np.float64])
NUMPY_NN = types.SimpleNamespace(  # float64 reference formulas of spmd.nn
    sigmoid=_float_formula(lambda x: 1 / (1 + np.exp(-x)), "negative"),
    relu=lambda x: np.maximum(x, 0),
    gelu=_float_formula(
        lambda x, approximate=True: (
            # 0.5 * (1 + tanh(u)) written as 1 / (1 + exp(-2u)), which does not cancel for x << 0
            x / (1 + np.exp(-2 * np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
            if approximate
            else 0.5 * x * _erfc(-x / np.sqrt(2))
        )
    ),
    softmax=_float_formula(_softmax, "subtract"),
    log_softmax=_float_formula(lambda x, axis=-1: x - _lse(x, axis, keepdims=True), "subtract"),
    logsumexp=_float_formula(_lse),
    one_hot=lambda x, num_classes, dtype=np.float32, axis=-1: np.moveaxis(
        np.asarray(x)[..., None] == np.arange(num_classes), -1, axis
    ).astype(dtype),
)


def nn(m):
    """spmd.nn for m = spmd.numpy, its NumPy reference for m = numpy."""
    return NUMPY_NN if m is np else spmd.nn


def nn_call(name, *args, **kwargs) -> Callable:
    return lambda m, *xs: getattr(nn(m), name)(*xs, *args, **kwargs)


def _nn():
    kw = {"family": "nn"}
    shapes = unary(((), (0,), (7,), (3, 5), (2, 3, 4)))
    for name, rejects in (("sigmoid", BOOL), ("relu", ()), ("gelu", ())):
        add("nn." + name, nn_call(name), *shapes, dtypes=_keep(DTYPES, rejects), **kw)
        if rejects:
            add("nn." + name, nn_call(name), ((3,),), dtypes=rejects, error=SpmdTypeError, **kw)
    # Both forms take bools, as integers, in NumPy's ufunc float (float16 for bool).
    add(
        "nn.gelu",
        nn_call("gelu", approximate=False),
        *shapes,
        label="approximate=False",
        **kw,
    )
    add(
        "nn.sigmoid",
        nn_call("sigmoid"),
        ((3, 4),),
        label="special",
        dtypes=FLOATS,
        domain="special",
        **kw,
    )
    for name in ("softmax", "log_softmax"):
        add("nn." + name, nn_call(name), *shapes[2:], dtypes=NUMBERS, **kw)
        for axis in (0, -1, (0, 2), 1):
            add(
                "nn." + name,
                nn_call(name, axis=axis),
                ((2, 3, 4),),
                ((2, 0, 3),),
                label=_label(axis=axis),
                dtypes=NUMBERS,
                **kw,
            )
        add("nn." + name, nn_call(name), ((3,),), dtypes=BOOL, error=SpmdTypeError, **kw)
        add(
            "nn." + name,
            nn_call(name, axis=()),
            ((),),
            ((2, 3),),
            label="axis=()",
            dtypes=NUMBERS,
            **kw,
        )
        add("nn." + name, nn_call(name, axis=2), ((2, 3),), label="axis=2", error=ShapeError, **kw)
        add("nn." + name, nn_call(name), ((),), error=ShapeError, **kw)  # no axis -1
    for axis in (None, 0, -1, (0, 2)):
        for keepdims in (False, True):
            add(
                "nn.logsumexp",
                nn_call("logsumexp", axis=axis, keepdims=keepdims),
                ((2, 3, 4),),
                ((2, 0, 3),),
                label=_label(axis=axis, keepdims=keepdims),
                **kw,
            )
    add("nn.logsumexp", nn_call("logsumexp"), *shapes, **kw)
    add(
        "nn.logsumexp",
        nn_call("logsumexp", axis=-1),
        ((3, 4),),
        label="special,axis=-1",
        dtypes=FLOATS,
        domain="special",
        **kw,
    )
    for args, kwargs in [
        ((4,), {}),
        ((4,), {"dtype": np.int32, "axis": 0}),
        ((3,), {"dtype": np.bool_, "axis": 1}),
        ((1,), {"axis": -2}),
    ]:
        shapes = ((2, 3), (0,), ()) if kwargs.get("axis", -1) in (0, -1) else ((2, 3), (0,))
        add(
            "nn.one_hot",
            nn_call("one_hot", *args, **kwargs),
            *unary(shapes),
            label=_label(*args, **kwargs),
            **kw,
        )
