"""Reduction primitives: sum, prod, max, min, all, any, mean, var, argmax/argmin, cumsum/cumprod.

Each shape rule asks NumPy itself for the result dtype (and for whether the reduction is
defined at all) by running the NumPy function on a tiny stand-in array: the same dtype, and
the same rank with every non-zero dimension shrunk to 1. Dtypes and empty-reduction errors are
therefore NumPy 2's exactly, whatever the rules of a particular function are.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

from spmd.core.aval import ShapedArray
from spmd.core.primitive import Primitive, Rules
from spmd.errors import ShapeError, SpmdOverflowError, SpmdTypeError
from spmd.prims import namespace, reduction_impls
from spmd.prims.reduction_derivatives import (
    JVPS,
    TRANSPOSES,
    float_jvp,
    one_axis_batch,
    reduce_batch,
    zero_jvp,
)
from spmd.sharding.rules import Factors

# --- the NumPy oracle for dtypes and empty reductions ----------------------------------------


@functools.lru_cache(maxsize=4096)
def _probe(numpy_name: str, shape: tuple[int, ...], dtype: np.dtype, kwargs: tuple) -> object:
    """NumPy's result dtype on a stand-in array, or the exception NumPy raises."""
    stand_in = np.zeros(tuple(min(d, 1) for d in shape), dtype)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return np.asarray(getattr(np, numpy_name)(stand_in, **dict(kwargs))).dtype
    except (ValueError, TypeError, OverflowError) as error:
        return error


def _numpy_kwargs(params: dict) -> dict:
    return {k: v for k, v in params.items() if v is not None}


def _result_dtype(name: str, numpy_name: str, x: ShapedArray, axes_text: str, **kw) -> np.dtype:
    kwargs = tuple(sorted(_numpy_kwargs(kw).items(), key=lambda item: item[0]))
    outcome = _probe(numpy_name, x.shape, x.dtype, kwargs)
    if isinstance(outcome, np.dtype):
        return outcome
    if isinstance(outcome, OverflowError):  # an ``initial`` the dtype cannot hold
        options = ", ".join(f"{k}={v!r}" for k, v in kwargs if k != "axis")
        raise SpmdOverflowError(
            f"spmd.numpy.{name} of {x} with {options}: {outcome}. Pass a value that fits {x.dtype}."
        )
    if isinstance(outcome, TypeError):
        options = ", ".join(f"{k}={v!r}" for k, v in kwargs if k != "axis")
        raise SpmdTypeError(
            f"spmd.numpy.{name} does not support {x}{' with ' + options if options else ''}: "
            f"{outcome}"
        )
    fix = (
        "pass initial=<value> to give empty slices a result, or check that the axis is "
        "non-empty (x.shape) before reducing"
        if name in ("max", "min", "amax", "amin")
        else "check that the axis is non-empty (x.shape) before reducing"
    )
    raise ShapeError(
        f"spmd.numpy.{name}: cannot reduce {axes_text} of {x}: it has no "
        f"elements and {name} of nothing is undefined ({outcome}). Fix: {fix}."
    )


def _impl_dtype(xp, numpy_name: str, x, **kw) -> np.dtype:
    """The result dtype NumPy gives ``numpy_name`` on ``x`` (an array of ``xp`` or a Python
    scalar), as the shape rule found it."""
    shape = () if namespace.is_scalar(x) else tuple(x.shape)
    kwargs = tuple(sorted(_numpy_kwargs(kw).items(), key=lambda item: item[0]))
    return _probe(numpy_name, shape, namespace.numpy_dtype(xp, x), kwargs)


def _empty_axes_text(shape: tuple[int, ...], axes: tuple[int, ...]) -> str:
    if len(axes) == 1:
        return f"axis {axes[0]}"
    empty = [a for a in axes if shape[a] == 0]
    return f"axes {axes}" + (f" (axis {empty[0]} has size 0)" if empty else "")


# --- sharding ---------------------------------------------------------------------------------

# How partial results over a split axis combine; None: they cannot (a mean needs the counts).
COMBINE = {"sum": "sum", "prod": "prod", "max": "max", "min": "min", "all": "and", "any": "or",
           "mean": None, "var": None}  # fmt: skip


def reduction_sharding(name: str):
    """``"a b c -> a c"`` for axes (1,): factors missing on the right are reduced, leaving a
    pending ``COMBINE[name]`` where they are split; a pending sum passes through a sum."""

    def sharding(ins, outs, *, axes: tuple[int, ...], keepdims: bool, **_) -> Factors:
        (x,) = ins
        names = [f"d{i}" for i in range(x.ndim)]
        kept = [() if i in axes else (f,) for i, f in enumerate(names) if keepdims or i not in axes]
        return Factors(
            ((tuple((f,) for f in names)),),
            (tuple(kept),),
            dict(zip(names, x.shape, strict=True)),
            {names[i]: COMBINE[name] for i in axes},
            linear="one" if name == "sum" else None,
        )

    return sharding


def identity(name: str, dtype: np.dtype):
    """The value max (or min) starts from: it never wins against a real element."""
    if dtype.kind == "f":
        return -np.inf if name == "max" else np.inf
    if dtype.kind in "iu":
        return np.iinfo(dtype).min if name == "max" else np.iinfo(dtype).max
    if dtype.kind == "c":  # NumPy orders complex numbers by real part, then imaginary part
        return complex(-np.inf, -np.inf) if name == "max" else complex(np.inf, np.inf)
    return name != "max"  # booleans


def _identity_when_empty(name: str):
    """A device whose block of a max/min's axes is empty starts from the identity instead."""

    def local_params(params: dict, in_shapes, out_shapes, in_dtypes, out_bounds) -> dict:
        (shape,) = in_shapes
        if params.get("initial") is None and any(shape[a] == 0 for a in params["axes"]):
            return {**params, "initial": identity(name, in_dtypes[0])}
        return params

    return local_params


def one_axis_sharding(ins, outs, *, axis: int | None, **params) -> Factors:
    """argmax, argmin, cumsum, cumprod, sort and argsort along ``axis`` (None: the flattened
    array): the axis is blocked (its shards would need combining), every other dimension
    passes through. A 0-d operand (where NumPy accepts axis 0 or -1) is taken as flattened."""
    (x,) = ins
    names = [f"d{i}" for i in range(x.ndim)]
    sizes = dict(zip(names, x.shape, strict=True))
    if axis is None or x.ndim == 0:
        sizes["out"] = outs[0].size
        out = tuple(("out",) if d != 1 else () for d in outs[0].shape)
        return Factors((tuple((f,) for f in names),), (out,), sizes, blocked=frozenset(sizes))
    out = [(f,) for i, f in enumerate(names) if i != axis]
    if outs[0].ndim == x.ndim:
        out.insert(axis, (names[axis],) if outs[0].shape[axis] == x.shape[axis] else ())
    return Factors(
        (tuple((f,) for f in names),), (tuple(out),), sizes, blocked=frozenset({names[axis]})
    )


# --- the reduce family -----------------------------------------------------------------------


def reduction(name: str, numpy_name: str | None = None) -> Primitive:
    """``reduce_<name>``: ``numpy.<numpy_name>`` over sorted ``axes`` with ``keepdims``;
    extra keyword parameters (``dtype``, ``ddof``, ``initial``) go to NumPy unless None."""
    numpy_name = numpy_name or name

    def shape(x: ShapedArray, *, axes: tuple[int, ...], keepdims: bool, **params) -> ShapedArray:
        if any(not 0 <= a < x.ndim for a in axes) or list(axes) != sorted(set(axes)):
            raise ShapeError(f"spmd.numpy.{name}: axes {axes} are not sorted axes of {x}.")
        text = _empty_axes_text(x.shape, axes)
        dtype = _result_dtype(name, numpy_name, x, text, axis=axes, **params)
        if keepdims:
            out = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
        else:
            out = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        return ShapedArray(out, dtype)

    def impl(xp, x, *, axes, keepdims, **params):
        if xp is np:
            fn = getattr(np, numpy_name)
            return fn(x, axis=axes, keepdims=keepdims, **_numpy_kwargs(params))
        dtype = _impl_dtype(xp, numpy_name, x, axis=axes, **params)
        return reduction_impls.reduce(xp, name, x, axes, keepdims, params, dtype)

    local = _identity_when_empty(name) if name in ("max", "min") else None
    rules = Rules(
        shape,
        impl,
        sharding=reduction_sharding(name),
        local_params=local,
        jvp=float_jvp(JVPS[name]),
        transpose=TRANSPOSES.get(name),
        batch=reduce_batch(f"reduce_{name}"),
    )
    return Primitive(f"reduce_{name}", rules)


REDUCTIONS = {
    name: reduction(name) for name in ("sum", "prod", "max", "min", "all", "any", "mean", "var")
}
reduce_sum_p = REDUCTIONS["sum"]
reduce_prod_p = REDUCTIONS["prod"]
reduce_max_p = REDUCTIONS["max"]
reduce_min_p = REDUCTIONS["min"]
reduce_and_p = REDUCTIONS["all"]
reduce_or_p = REDUCTIONS["any"]
reduce_mean_p = REDUCTIONS["mean"]
reduce_var_p = REDUCTIONS["var"]


# --- argmax / argmin -------------------------------------------------------------------------


def arg_reduction(name: str) -> Primitive:
    """``numpy.<name>`` (argmax or argmin) along one ``axis`` (None: the flattened array)."""

    def shape(x: ShapedArray, *, axis: int | None, keepdims: bool) -> ShapedArray:
        if x.ndim == 0:
            text, out = "the 0-d array", ()
        elif axis is None:
            text, out = "all axes (axis=None)", (1,) * x.ndim if keepdims else ()
        else:
            text = f"axis {axis}"
            out = tuple(
                (1 if keepdims else None) if i == axis else d for i, d in enumerate(x.shape)
            )
            out = tuple(d for d in out if d is not None)
        dtype = _result_dtype(name, name, x, text, axis=axis)
        return ShapedArray(out, dtype)

    def impl(xp, x, *, axis, keepdims):
        if xp is np:
            return getattr(np, name)(x, axis=axis, keepdims=keepdims)
        return reduction_impls.arg_extreme(xp, name, x, axis, keepdims)

    rules = Rules(
        shape=shape,
        impl=impl,
        sharding=one_axis_sharding,
        jvp=zero_jvp,  # piecewise constant integers
        batch=one_axis_batch(name),
    )
    return Primitive(name, rules)


argmax_p = arg_reduction("argmax")
argmin_p = arg_reduction("argmin")


# --- cumsum and cumprod ----------------------------------------------------------------------


def cumulative(name: str) -> Primitive:
    """``numpy.<name>`` (cumsum or cumprod) along one ``axis`` (None: the flattened array)."""

    def shape(x: ShapedArray, *, axis: int | None, dtype: np.dtype | None) -> ShapedArray:
        out = (x.size,) if axis is None or x.ndim == 0 else x.shape
        return ShapedArray(
            out, _result_dtype(name, name, x, f"axis {axis}", axis=axis, dtype=dtype)
        )

    def impl(xp, x, *, axis, dtype):
        if xp is np:
            return getattr(np, name)(x, axis=axis, dtype=dtype)
        result = _impl_dtype(xp, name, x, axis=axis, dtype=dtype)
        return reduction_impls.cumulative(xp, name, x, axis, result)

    rules = Rules(
        shape=shape,
        impl=impl,
        sharding=one_axis_sharding,
        jvp=float_jvp(JVPS[name]),
        transpose=TRANSPOSES.get(name),
        batch=one_axis_batch(name),
    )
    return Primitive(name, rules)


cumsum_p = cumulative("cumsum")
cumprod_p = cumulative("cumprod")
