"""The jvp, transpose and batch rules of the reductions (spmd/prims/reduction.py): sums,
extremes, statistics, argmax/argmin and cumsum/cumprod, and of sort/argsort's axis."""

from __future__ import annotations

import math

from spmd.core.trace import aval_of
from spmd.prims.derivatives import bind, convert, linear_jvp, moveaxis
from spmd.prims.index_plan import Slice


def _mul(x, y):
    return bind("multiply", x, y)


def _div(x, y):
    return bind("true_divide", x, y)


def zero_jvp(primals, out, tangents, **params):
    return None


def float_jvp(jvp):
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


def reduce_batch(name: str):
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
    "all": zero_jvp,
    "any": zero_jvp,
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
