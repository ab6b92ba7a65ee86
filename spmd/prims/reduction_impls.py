"""NumPy's reductions on any array namespace: sum, prod, max, min, all, any, mean, var,
argmax/argmin and cumsum/cumprod with NumPy's result dtypes and values.

Each takes the result dtype the shape rule found (NumPy's, by its probe) and computes in the
dtype NumPy computes in: integers and booleans sum in the result's dtype, means of integers in
float64 and of float16 in float32; max and min of complex numbers follow NumPy's order (real
part, then imaginary part), and ``initial`` joins the reduced elements as one more.
"""

from __future__ import annotations

import math

import numpy as np

from spmd.prims import namespace as ns


def _reduced_last(xp, x, axes: tuple[int, ...]):
    """``x`` with the ``axes`` moved last and flattened into one (size 1 for no axes)."""
    rest = [i for i in range(x.ndim) if i not in axes]
    moved = xp.permute_dims(x, (*rest, *axes)) if axes else x
    shape = tuple(x.shape[i] for i in rest)
    return xp.reshape(moved, (*shape, math.prod(x.shape[a] for a in axes)))


def _kept(xp, out, shape, axes, keepdims: bool):
    if not keepdims:
        return out
    return xp.reshape(out, tuple(1 if i in axes else n for i, n in enumerate(shape)))


def _sum(xp, fn, x, axes, keepdims, dtype: np.dtype):
    if dtype.kind == "u" and dtype not in ns.dtypes_held(xp):
        # a library that stores these but has no arithmetic on them (PyTorch): int64 holds
        # the same bits modulo 2**64, and the cast back wraps as NumPy's sum does
        total = _sum(xp, fn, x, axes, keepdims, np.dtype(np.int64))
        return ns.astype(xp, total, dtype)
    x = ns.astype(xp, x, dtype)
    if not axes:
        return x
    if dtype == np.bool_:  # NumPy adds booleans with ``or`` and multiplies them with ``and``
        return (xp.any if fn is xp.sum else xp.all)(x, axis=axes, keepdims=keepdims)
    return fn(x, axis=axes, keepdims=keepdims, dtype=ns.dtype_for(xp, dtype))


def _extreme(xp, name: str, x, axes, keepdims, initial, dtype: np.dtype):
    flat = _reduced_last(xp, x, axes)
    if initial is not None:
        value = ns.scalar_of(dtype, initial)
        fill = xp.full((*flat.shape[:-1], 1), value, dtype=flat.dtype, device=ns.device_of(x))
        flat = xp.concat([flat, fill], axis=-1)
    kind = dtype.kind
    if kind == "b":
        out = (xp.any if name == "max" else xp.all)(flat, axis=-1)
    elif kind == "c":
        out = ns.lexicographic_extreme(xp, flat, (flat.ndim - 1,), False, name == "max")
    else:
        out = (xp.max if name == "max" else xp.min)(flat, axis=-1)
    return _kept(xp, out, x.shape, axes, keepdims)


def _logical(xp, name: str, x, axes, keepdims):
    if ns.numpy_dtype(xp, x) != np.bool_:
        x = x != 0
    out = (xp.all if name == "all" else xp.any)(_reduced_last(xp, x, axes), axis=-1)
    return _kept(xp, out, x.shape, axes, keepdims)


def _compute_dtype(x: np.dtype, given) -> np.dtype:
    """The dtype NumPy's mean and var sum in: the one asked, float64 for integers and
    booleans, float32 for float16, else the operand's."""
    if given is not None:
        return np.dtype(given)
    if x.kind in "biu":
        return np.dtype(np.float64)
    return np.dtype(np.float32) if x == np.float16 else x


def _mean(xp, x, axes, keepdims, given, dtype: np.dtype):
    compute = _compute_dtype(ns.numpy_dtype(xp, x), given)
    total = _sum(xp, xp.sum, x, axes, keepdims, compute)
    return ns.astype(xp, total / math.prod(x.shape[a] for a in axes), dtype)


def _var(xp, x, axes, keepdims, ddof, given, dtype: np.dtype):
    """NumPy's two passes: the mean, then the sum of squared distances from it, divided by
    ``max(n - ddof, 0)``."""
    compute = _compute_dtype(ns.numpy_dtype(xp, x), given)
    count = math.prod(x.shape[a] for a in axes)
    x = ns.astype(xp, x, compute)
    mean = _sum(xp, xp.sum, x, axes, True, compute) / count
    centered = x - mean
    complex_ = compute.kind == "c"
    squares = xp.real(centered * xp.conj(centered)) if complex_ else centered * centered
    total = _sum(xp, xp.sum, squares, axes, keepdims, ns.numpy_dtype(xp, squares))
    return ns.astype(xp, total / max(count - ddof, 0), dtype)


def reduce(xp, name: str, x, axes, keepdims: bool, params: dict, dtype: np.dtype):
    """``reduce_<name>`` of ``x`` over ``axes``, its result in ``dtype``."""
    x = ns.asarray(xp, x)
    if name in ("sum", "prod"):
        return _sum(xp, getattr(xp, name), x, axes, keepdims, dtype)
    if name in ("max", "min"):
        return _extreme(xp, name, x, axes, keepdims, params.get("initial"), dtype)
    if name in ("all", "any"):
        return _logical(xp, name, x, axes, keepdims)
    if name == "mean":
        return _mean(xp, x, axes, keepdims, params.get("dtype"), dtype)
    if name == "var":
        return _var(xp, x, axes, keepdims, params.get("ddof", 0), params.get("dtype"), dtype)
    raise NotImplementedError(f"internal error: no reduction {name!r}")


def arg_extreme(xp, name: str, x, axis: int | None, keepdims: bool):
    """argmax or argmin, NumPy's: the first extreme (the first NaN, where there is one)."""
    x = ns.asarray(xp, x)
    shape = x.shape
    if axis is None or x.ndim == 0:
        x, along = xp.reshape(x, (-1,)), 0
    else:
        along = axis
    dtype = ns.numpy_dtype(xp, x)
    if dtype.kind == "c":
        best = ns.lexicographic_extreme(xp, x, (along,), True, name == "argmax")
        hit = xp.where(xp.isnan(best), xp.isnan(x), x == best)
        out = xp.argmax(xp.astype(hit, xp.uint8), axis=along)
    else:
        if dtype == np.bool_:
            x = xp.astype(x, xp.uint8)
        elif dtype.kind == "f":  # NaN first, as NumPy: the first NaN is the answer
            nan = xp.isnan(x)
            first = xp.argmax(xp.astype(nan, xp.uint8), axis=along)
            plain = getattr(xp, name)(xp.where(nan, xp.zeros_like(x), x), axis=along)
            out = xp.where(xp.any(nan, axis=along), first, plain)
            return _arg_shape(xp, out, shape, axis, keepdims)
        out = getattr(xp, name)(x, axis=along)
    return _arg_shape(xp, out, shape, axis, keepdims)


def _arg_shape(xp, out, shape, axis, keepdims):
    out = xp.astype(out, xp.int64)
    if not keepdims or not shape:
        return out
    if axis is None:
        return xp.reshape(out, (1,) * len(shape))
    return xp.expand_dims(out, axis=axis)


def cumulative(xp, name: str, x, axis: int | None, dtype: np.dtype):
    """cumsum or cumprod along ``axis`` (None, or a 0-d operand: the flattened array), in
    ``dtype``."""
    x = ns.astype(xp, ns.asarray(xp, x), dtype)
    if axis is None or x.ndim == 0:
        x, axis = xp.reshape(x, (-1,)), 0
    if dtype == np.bool_:  # ``or`` (``and``) along the axis, as NumPy's boolean loops
        return ns.cumulative(xp, name, xp.astype(x, xp.int64), axis) != 0
    return ns.cumulative(xp, name, x, axis)
