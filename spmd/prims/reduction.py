"""Reduction primitives: sum, prod, max, min, all, any, mean, var, argmax/argmin, cumsum/cumprod.

Each shape rule asks NumPy itself for the result dtype (and for whether the reduction is
defined at all) by running the NumPy function on a tiny stand-in array: the same dtype, and
the same rank with every non-zero dimension shrunk to 1. Dtypes and empty-reduction errors are
therefore NumPy 2's exactly, whatever the rules of a particular function are.
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np

from spmd.core.aval import ShapedArray
from spmd.core.primitive import Primitive, Rules
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdOverflowError, SpmdTypeError
from spmd.prims import namespace, reduction_impls
from spmd.prims.derivatives import bind, convert, linear_jvp, moveaxis
from spmd.prims.indexing import Slice
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


# --- derivatives and batching ----------------------------------------------------------------


def _mul(x, y):
    return bind("multiply", x, y)


def _div(x, y):
    return bind("true_divide", x, y)


def _zero_jvp(primals, out, tangents, **params):
    return None


def _float_jvp(jvp):
    """``jvp``, but a zero tangent where the result is not inexact (integer or bool)."""

    def rule(primals, out, tangents, **params):
        return jvp(primals, out, tangents, **params) if aval_of(out).dtype.kind in "fc" else None

    return rule


def _kept(y, shape, axes, keepdims):
    """``y``, a reduction over ``axes`` of an array of ``shape``, with those axes kept (size 1)."""
    kept = tuple(1 if i in axes else d for i, d in enumerate(shape))
    return y if keepdims else bind("reshape", y, new_sizes=kept)


def _as_operand(ct, aval):
    """A cotangent in the operand's dtype (a complex one of a real operand keeps its real part)."""
    if aval_of(ct).dtype.kind == "c" and aval.dtype.kind != "c":
        ct = bind("real", ct)
    return convert(ct, aval.dtype)


def _spread(ct, x, axes, keepdims, scale=None):
    """The transpose of summing ``x`` (an UndefinedPrimal) over ``axes`` (then times ``scale``):
    ``ct`` broadcast back over them."""
    ct = _kept(_as_operand(ct, x.aval), x.aval.shape, axes, keepdims)
    ct = ct if scale is None else _mul(ct, scale)
    return bind("broadcast_to", ct, shape=x.aval.shape)


def _weighted_sum(t, weights, out, *, axes, keepdims):
    """``sum(t * weights)`` over ``axes`` in ``out``'s dtype: the tangent of a reduction whose
    derivative in each element is ``weights``."""
    total = bind("reduce_sum", _mul(t, weights), axes=axes, keepdims=keepdims, dtype=None)
    return convert(total, aval_of(out).dtype)


def _sum_transpose(ct, x, *, axes, keepdims, dtype):
    return [_spread(ct, x, axes, keepdims)]


def _mean_transpose(ct, x, *, axes, keepdims, dtype):
    count = math.prod(x.aval.shape[a] for a in axes)
    return [_spread(ct, x, axes, keepdims, scale=1 / count if count else 0.0)]


def _prod_jvp(primals, out, tangents, *, axes, keepdims, dtype):
    """Each element's derivative is the product of the others, written without dividing by
    zero: prod / x where no element is zero, the product of the rest at the one zero where
    there is one, and 0 where there are more."""
    (x,), (t,) = primals, tangents
    zero = bind("equal", x, 0)
    safe = bind("where", zero, 1, x)
    nonzero = bind("reduce_prod", safe, axes=axes, keepdims=True, dtype=None)
    zeros = bind("reduce_sum", zero, axes=axes, keepdims=True, dtype=None)
    at_the_zero = bind("where", bind("logical_and", zero, bind("equal", zeros, 1)), nonzero, 0)
    weights = bind("where", bind("equal", zeros, 0), _div(nonzero, safe), at_the_zero)
    return _weighted_sum(t, weights, out, axes=axes, keepdims=keepdims)


def _chooser_jvp(primals, out, tangents, *, axes, keepdims, initial):
    """max and min: the tangent at the extreme element, split evenly among ties (as JAX);
    zero where ``initial`` is the result and no element equals it."""
    (x,), (t,) = primals, tangents
    aval = aval_of(x)
    chosen = bind("equal", x, _kept(out, aval.shape, axes, keepdims))
    count = bind("reduce_sum", chosen, axes=axes, keepdims=True, dtype=None)
    count = convert(bind("maximum", count, 1), aval.dtype)
    weights = _div(convert(chosen, aval.dtype), count)
    return _weighted_sum(t, weights, out, axes=axes, keepdims=keepdims)


def _var_jvp(primals, out, tangents, *, axes, keepdims, ddof, dtype=None):
    """``2 / (n - ddof) * sum(re(conj(x - mean(x)) * t))`` (the mean's own tangent sums to
    zero against ``x - mean(x)``); NaN where ``n <= ddof``, where NumPy divides by zero and
    the variance is inf (or NaN) whatever ``x`` is. Over one element the variance is 0
    whatever it is: a symbolic zero, so that ``std = sqrt(var)`` has 0 there, not 0 * inf."""
    (x,), (t,) = primals, tangents
    aval = aval_of(x)
    count = math.prod(aval.shape[a] for a in axes)
    if count == 1 and ddof < 1:
        return None
    centered = bind("subtract", x, bind("reduce_mean", x, axes=axes, keepdims=True, dtype=None))
    if aval.dtype.kind == "c":
        product = bind("real", _mul(t, bind("conjugate", centered)))
    else:
        product = _mul(t, centered)
    total = bind("reduce_sum", product, axes=axes, keepdims=keepdims, dtype=None)
    scale = 2 / (count - ddof) if count > ddof else math.nan
    return convert(_mul(total, scale), aval_of(out).dtype)


def _batch_first(x, d: int):
    """``x`` with its batch dimension ``d`` moved first, each member's elements copied together
    behind it (reshaping a transposed array copies it): a reduction then runs over each member
    in the member's own order, and float32 sums round as a loop over the members would."""
    shape = aval_of(x).shape
    member = shape[:d] + shape[d + 1 :]
    flat = bind("reshape", moveaxis(x, d, 0), new_sizes=(shape[d], math.prod(member)))
    return bind("reshape", flat, new_sizes=(shape[d], *member))


def _reduce_batch(name: str):
    """The reduced axes shift past the batch dimension, which is moved first."""

    def batch(args, dims, *, axes, keepdims, **params):
        (x,), (d,) = args, dims
        if d == 0 or not axes:
            axes = tuple(a + (a >= d) for a in axes)
            out = bind(name, x, axes=axes, keepdims=keepdims, **params)
            return out, d
        axes = tuple(a + 1 for a in axes)
        return bind(name, _batch_first(x, d), axes=axes, keepdims=keepdims, **params), 0

    return batch


def _flatten(x):
    return bind("reshape", x, new_sizes=(aval_of(x).size,))


def _flip(x, axis: int):
    shape = aval_of(x).shape
    index = tuple(
        Slice.resolve(slice(None, None, -1 if i == axis else 1), n) for i, n in enumerate(shape)
    )
    return bind("getitem", x, index=index)


def _cumsum_transpose(ct, x, *, axis, dtype):
    """Each element feeds the sums at and after it: the reversed cumulative sum of ``ct``."""
    along = 0 if axis is None or x.aval.ndim == 0 else axis
    ct = _as_operand(ct, x.aval)
    ct = _flip(bind("cumsum", _flip(ct, along), axis=along, dtype=None), along)
    return [
        ct if aval_of(ct).shape == x.aval.shape else bind("reshape", ct, new_sizes=x.aval.shape)
    ]


def _cumprod_jvp(primals, out, tangents, *, axis, dtype):
    """``dy_i = sum over j <= i of t_j * (the product of x_k, k <= i, k != j)``, without dividing
    by zero: ``y_i * sum t_j / x_j`` while no zero is among ``x_0..x_i``; once one is,
    ``t_zero`` times the product of the nonzero ones; 0 after a second zero."""
    (x,), (t,) = primals, tangents
    if axis is None or aval_of(x).ndim == 0:
        x, t, axis = _flatten(x), _flatten(t), 0

    def cumsum(v):
        return bind("cumsum", v, axis=axis, dtype=None)

    zero = bind("equal", x, 0)
    safe = bind("where", zero, 1, x)
    nonzero = bind("cumprod", safe, axis=axis, dtype=None)
    zeros = cumsum(zero)
    before = _mul(bind("where", bind("equal", zeros, 0), nonzero, 0), cumsum(_div(t, safe)))
    after = _mul(
        bind("where", bind("equal", zeros, 1), nonzero, 0), cumsum(bind("where", zero, t, 0))
    )
    return convert(bind("add", before, after), aval_of(out).dtype)


JVPS = {  # of reduce_<name>, cumsum and cumprod
    "sum": linear_jvp("reduce_sum"),
    "mean": linear_jvp("reduce_mean"),
    "prod": _prod_jvp,
    "max": _chooser_jvp,
    "min": _chooser_jvp,
    "var": _var_jvp,
    "all": _zero_jvp,
    "any": _zero_jvp,
    "cumsum": linear_jvp("cumsum"),
    "cumprod": _cumprod_jvp,
}
TRANSPOSES = {"sum": _sum_transpose, "mean": _mean_transpose, "cumsum": _cumsum_transpose}


def one_axis_batch(name: str):
    """Batching for argmax, argmin, cumsum, cumprod, sort and argsort: ``axis`` shifts past the
    batch dimension; members taken flattened (axis None, or 0-d) are flattened behind it."""

    def batch(args, dims, *, axis, **params):
        (x,), (d,) = args, dims
        shape = aval_of(x).shape
        ndim = len(shape) - 1  # a member's
        if axis is None or ndim == 0:
            size = math.prod(n for i, n in enumerate(shape) if i != d)
            flat = bind("reshape", moveaxis(x, d, 0), new_sizes=(shape[d], size))
            # argmax and argmin drop the axis; a kept one is put back by the reshape
            flat_params = {**params, "keepdims": False} if "keepdims" in params else params
            out = bind(name, flat, axis=1, **flat_params)
            if params.get("keepdims") and ndim:
                out = bind("reshape", out, new_sizes=(shape[d],) + (1,) * ndim)
            return out, 0
        out = bind(name, x, axis=axis + (axis >= d), **params)
        drops_axis = params.get("keepdims") is False
        return out, d - 1 if drops_axis and axis < d else d

    return batch


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
        jvp=_float_jvp(JVPS[name]),
        transpose=TRANSPOSES.get(name),
        batch=_reduce_batch(f"reduce_{name}"),
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
        jvp=_zero_jvp,  # piecewise constant integers
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
        jvp=_float_jvp(JVPS[name]),
        transpose=TRANSPOSES.get(name),
        batch=one_axis_batch(name),
    )
    return Primitive(name, rules)


cumsum_p = cumulative("cumsum")
cumprod_p = cumulative("cumprod")
