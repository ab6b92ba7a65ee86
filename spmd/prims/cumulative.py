"""Running reductions along one axis that spmd.numpy has no primitive for: ``cummax``,
``cummin`` and ``cumlogsumexp``, each with ``reverse`` (accumulating from the end).

NumPy computes them with ``ufunc.accumulate`` in one pass; other array namespaces with a
parallel prefix scan (log2(n) steps, each combining every element with the one 2**step
before it). The axis is gathered whole where it is split, once; every other dimension stays
where it lies. Derivatives: a running extreme's tangent is the tangent at the position that
holds the extreme (the latest one, at ties); cumlogsumexp's is the linear recurrence
``T_i = exp(out_{i-1} - out_i) T_{i-1} + exp(x_i - out_i) t_i``, scanned the same way.
"""

from __future__ import annotations

import numpy as np

from spmd.core.aval import ShapedArray
from spmd.core.primitive import Primitive, Rules
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError
from spmd.prims import namespace as ns
from spmd.prims import ufuncs
from spmd.prims.along_axis import take_along_p
from spmd.prims.derivatives import bind
from spmd.prims.reduction import identity, one_axis_sharding
from spmd.prims.reduction_derivatives import one_axis_batch

_UFUNCS = {"cummax": np.maximum, "cummin": np.minimum, "cumlogsumexp": np.logaddexp}
_KINDS = {"cummax": "iufc", "cummin": "iufc", "cumlogsumexp": "f"}


def _unit(name: str, dtype: np.dtype):
    """What the scan starts from: it never wins (max, min) or adds nothing (logsumexp)."""
    if name == "cumlogsumexp":
        return -np.inf
    return identity("max" if name == "cummax" else "min", dtype)


def _shape_rule(name: str):
    def shape(x: ShapedArray, *, axis: int, reverse: bool) -> ShapedArray:
        if x.dtype.kind not in _KINDS[name]:
            raise SpmdTypeError(f"spmd.lax.{name} does not take {x}.")
        if not 0 <= axis < x.ndim:
            raise ShapeError(f"spmd.lax.{name}: axis {axis} is out of range for {x}.")
        return ShapedArray(x.shape, x.dtype)

    return shape


def _scan_xp(xp, name: str, x, axis: int):
    """The inclusive scan on a namespace without ufunc.accumulate, by doubling strides."""
    dtype = ns.numpy_dtype(xp, x)
    combine = {"cummax": ufuncs.GENERIC["maximum"], "cummin": ufuncs.GENERIC["minimum"]}.get(
        name, lambda xp, a, b, dtype: xp.logaddexp(a, b)
    )
    n, stride = x.shape[axis], 1
    while stride < n:
        head = list(x.shape)
        head[axis] = stride
        fill = xp.full(tuple(head), _unit(name, dtype), dtype=x.dtype, device=ns.device_of(x))
        kept = [slice(None)] * x.ndim
        kept[axis] = slice(0, n - stride)
        x = combine(xp, xp.concat([fill, x[tuple(kept)]], axis=axis), x, dtype)
        stride *= 2
    return x


def _impl_rule(name: str):
    def impl(xp, x, *, axis, reverse):
        if xp is np:
            x = np.asarray(x)
            if reverse:
                x = np.flip(x, axis)
            out = _UFUNCS[name].accumulate(x, axis=axis, dtype=x.dtype)
            return np.flip(out, axis) if reverse else out
        x = ns.asarray(xp, x)
        if reverse:
            x = xp.flip(x, axis=axis)
        out = _scan_xp(xp, name, x, axis)
        return xp.flip(out, axis=axis) if reverse else out

    return impl


# --- derivatives -----------------------------------------------------------------------------


def _positions(x, axis: int, dtype=np.int64):
    """An array of ``x``'s shape holding each element's index along ``axis``."""
    shape = aval_of(x).shape
    count = bind("iota", size=shape[axis], start=0, step=1, dtype=np.dtype(dtype))
    lined = tuple(n if d == axis else 1 for d, n in enumerate(shape))
    return bind("broadcast_to", bind("reshape", count, new_sizes=lined), shape=shape)


def _extreme_jvp(primals, out, tangents, *, axis, reverse):
    """The tangent at the latest position up to each element (from the end: the first one
    after it) where the element equals the running extreme; NaN holds it from where it
    appears."""
    (x,), (t,) = primals, tangents
    record = bind("equal", x, out)
    if aval_of(x).dtype.kind in "fc":
        record = bind("logical_or", record, bind("isnan", x))
    n = aval_of(x).shape[axis]
    marked = bind("where", record, _positions(x, axis), n if reverse else -1)
    holder = cummin_p if reverse else cummax_p
    return take_along_p.bind(t, holder.bind(marked, axis=axis, reverse=reverse), axis=axis)


def _shifted(v, stride: int, axis: int, fill, reverse: bool):
    """``v`` moved ``stride`` places along ``axis`` (toward the end, or toward the start when
    ``reverse``), ``fill`` coming in."""
    shape = aval_of(v).shape
    n = shape[axis]
    bounds = ((stride, n),) if reverse else ((0, n - stride),)
    (kept,) = bind("split", v, bounds=bounds, axis=axis)
    head = tuple(stride if d == axis else size for d, size in enumerate(shape))
    filled = bind("broadcast_to", np.asarray(fill, aval_of(v).dtype), shape=head)
    parts = (kept, filled) if reverse else (filled, kept)
    return bind("concatenate", *parts, axis=axis)


def _logsumexp_jvp(primals, out, tangents, *, axis, reverse):
    """``T_i = a_i T_{i-1} + b_i t_i`` (``a_i = exp(out_{i-1} - out_i)``, ``b_i = exp(x_i -
    out_i)``, both 0 where ``out_i`` is -inf), scanned in pairs: (a, u) then (a', u')
    combine to (a a', a' u + u')."""
    (x,), (t,) = primals, tangents
    if aval_of(x).shape[axis] == 0:
        return t
    empty = bind("equal", out, -np.inf)
    previous = _shifted(out, 1, axis, -np.inf, reverse)
    a = bind("where", empty, 0.0, bind("exp", bind("subtract", previous, out)))
    b = bind("where", empty, 0.0, bind("exp", bind("subtract", x, out)))
    u = bind("multiply", b, t)
    n, stride = aval_of(x).shape[axis], 1
    while stride < n:
        u = bind("add", bind("multiply", a, _shifted(u, stride, axis, 0.0, reverse)), u)
        a = bind("multiply", a, _shifted(a, stride, axis, 1.0, reverse))
        stride *= 2
    return u


def _cumulative(name: str, jvp) -> Primitive:
    return Primitive(
        name,
        Rules(
            shape=_shape_rule(name),
            impl=_impl_rule(name),
            sharding=one_axis_sharding,
            jvp=jvp,
            batch=one_axis_batch(name),
        ),
    )


cummax_p = _cumulative("cummax", _extreme_jvp)
cummin_p = _cumulative("cummin", _extreme_jvp)
cumlogsumexp_p = _cumulative("cumlogsumexp", _logsumexp_jvp)
