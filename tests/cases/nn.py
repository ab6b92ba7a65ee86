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


def _glu(x, axis):
    a, b = np.split(x, 2, axis=axis)
    return a / (1 + np.exp(-b))


def _attention(q, k, v, bias=None, mask=None, is_causal=False, scale=None):
    """Per batch and head, in float64 loops: softmax(q k^T * scale + bias, masked) v, in the
    float dtype NumPy's ufuncs give q (float16 for bool, float64 for int32 and int64)."""
    dtype = np.asarray(q).dtype
    dtype = dtype if dtype.kind == "f" else np.promote_types(dtype, np.float16)
    logits_dtype = np.promote_types(dtype, np.float32)  # the masked logits' -0.7 * max
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    (b, t, n, h), s, kh = q.shape, k.shape[1], k.shape[2]
    scale = 1 / np.sqrt(h) if scale is None else scale
    out = np.zeros_like(q)
    for i in range(b):
        for j in range(n):
            logits = q[i, :, j] @ k[i, :, j // (n // kh)].T * scale
            if bias is not None:
                logits = logits + np.broadcast_to(bias, (b, n, t, s))[i, j]
            keep = np.ones((t, s), bool)
            if mask is not None:
                keep &= np.broadcast_to(mask, (b, n, t, s))[i, j]
            if is_causal:
                keep &= np.tri(t, s, dtype=bool)
            logits = np.where(keep, logits, -0.7 * np.finfo(logits_dtype).max)
            out[i, :, j] = _softmax(logits, -1) @ v[i, :, j // (n // kh)]
    return out.astype(dtype)


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
    silu=_float_formula(lambda x: x / (1 + np.exp(-x))),
    swish=_float_formula(lambda x: x / (1 + np.exp(-x))),
    softplus=_float_formula(lambda x: np.logaddexp(x, 0)),
    log_sigmoid=_float_formula(lambda x: -np.logaddexp(-x, 0)),
    elu=_float_formula(lambda x, alpha=1.0: np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))),
    leaky_relu=_float_formula(
        lambda x, negative_slope=0.01: np.where(x >= 0, x, negative_slope * x)
    ),
    glu=_float_formula(lambda x, axis=-1: _glu(x, axis)),
    standardize=_float_formula(
        lambda x, axis=-1: (
            (x - x.mean(axis=axis, keepdims=True)) / np.sqrt(x.var(axis=axis, keepdims=True) + 1e-5)
        )
    ),
    dot_product_attention=_attention,
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
    for name, kwargs in (("silu", {}), ("swish", {}), ("softplus", {}), ("log_sigmoid", {}),
                         ("elu", {}), ("elu", {"alpha": 0.5}), ("leaky_relu", {}),
                         ("leaky_relu", {"negative_slope": 0.2})):  # fmt: skip
        add("nn." + name, nn_call(name, **kwargs), *shapes, label=_label(**kwargs), **kw)
    for axis in (-1, 0):
        add("nn.glu", nn_call("glu", axis=axis), ((2, 4),), ((4, 0),), label=_label(axis=axis),
            **kw)  # fmt: skip
    add("nn.glu", nn_call("glu"), ((2, 3),), label="odd", error=ShapeError, numpy_too=False,
        **kw)  # fmt: skip
    add("nn.glu", nn_call("glu"), ((),), label="0-d", error=ShapeError, **kw)  # no axis -1
    for axis in (-1, 0):
        add("nn.standardize", nn_call("standardize", axis=axis), ((3, 5),), ((2, 3, 4),),
            ((2, 0),), ((0, 3),), label=_label(axis=axis), **kw)  # fmt: skip
    add("nn.standardize", nn_call("standardize"), ((),), label="0-d", error=ShapeError, **kw)
    attention = [((2, 3, 4, 5),) * 3, ((1, 3, 4, 2), (1, 5, 2, 2), (1, 5, 2, 2))]
    empty = [((2, 0, 4, 5), (2, 3, 4, 5), (2, 3, 4, 5)), ((1, 3, 2, 2), (1, 0, 2, 2), (1, 0, 2, 2))]
    add("nn.dot_product_attention", nn_call("dot_product_attention"), *attention, *empty,
        **kw)  # fmt: skip
    add("nn.dot_product_attention", nn_call("dot_product_attention", is_causal=True,
        scale=0.5), *attention, label="is_causal,scale=0.5", dtypes=FLOATS, **kw)  # fmt: skip
    add("nn.dot_product_attention", nn_call("dot_product_attention"), ((),) * 3, label="0-d",
        error=ShapeError, **kw)  # fmt: skip
    add("nn.dot_product_attention", lambda m, q, k, v, bias: nn(m).dot_product_attention(
        q, k, v, bias, (np.arange(3)[:, None] + np.arange(3)) % 3 > 0),
        ((2, 3, 4, 5),) * 3 + ((4, 3, 3),),
        label="bias,mask", dtypes=FLOATS, **kw)  # fmt: skip
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
