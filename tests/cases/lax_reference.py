"""NumPy references for spmd.lax's general operators (tests/cases/lax_operators.py's rows):
``NUMPY_LAX_OPERATORS`` has each name, computed from NumPy's functions by formulas other
than spmd's (index arithmetic for pad and broadcast_in_dim, unsigned views for bit counts,
NumPy's fmod for rem, lexsort for sorts, ufunc.accumulate for running extremes)."""

from __future__ import annotations

import enum
import types

import numpy as np

# lax's names that are spmd.numpy's functions: lax name -> NumPy's name
SAME_AS_NUMPY = {
    "abs": "abs", "acos": "acos", "acosh": "acosh", "add": "add", "and_": "bitwise_and",
    "asin": "asin", "asinh": "asinh", "atan": "atan", "atan2": "atan2", "atanh": "atanh",
    "bitwise_and": "bitwise_and", "bitwise_not": "bitwise_invert", "bitwise_or": "bitwise_or",
    "bitwise_xor": "bitwise_xor", "ceil": "ceil", "cos": "cos", "cosh": "cosh", "eq": "equal",
    "exp": "exp", "expm1": "expm1", "floor": "floor", "ge": "greater_equal", "gt": "greater",
    "imag": "imag", "is_finite": "isfinite", "le": "less_equal", "log": "log", "log1p": "log1p",
    "lt": "less", "max": "maximum", "min": "minimum", "mul": "multiply", "ne": "not_equal",
    "neg": "negative", "not_": "bitwise_invert", "or_": "bitwise_or", "pow": "power",
    "real": "real", "shift_left": "left_shift", "shift_right_arithmetic": "right_shift",
    "sign": "sign", "sin": "sin", "sinh": "sinh", "sqrt": "sqrt", "square": "square",
    "sub": "subtract", "tan": "tan", "tanh": "tanh", "xor": "bitwise_xor",
}  # fmt: skip


def _unsigned(x):
    x = np.asarray(x)
    return x.astype(np.dtype(f"u{x.dtype.itemsize}"))


def _div(x, y):
    if np.result_type(x, y).kind in "iu":  # |x| // |y| with the quotient's sign
        magnitude = np.abs(x) // np.abs(y)
        return np.where((x < 0) != (y < 0), -magnitude, magnitude).astype(np.result_type(x, y))
    return np.true_divide(x, y)


def _round(x, rounding_method=0):
    if int(rounding_method) == 1:
        return np.round(x)
    return (np.sign(x) * np.floor(np.abs(x) + 0.5)).astype(x.dtype)


def _shift_right_logical(x, y):
    width = 8 * x.dtype.itemsize
    inside = (y >= 0) & (y < width)
    shifted = _unsigned(x) >> _unsigned(np.where(inside, y, 0))
    return np.where(inside, shifted, 0).astype(x.dtype)


def _clz(x):
    width = 8 * x.dtype.itemsize
    lengths = np.vectorize(lambda v: int(v).bit_length(), otypes=[np.int64])(_unsigned(x))
    return (width - lengths).astype(x.dtype)


def _broadcast_in_dim(x, shape, dims):
    """``out[i] = x[i[dims[0]], i[dims[1]], ...]``, size-1 operand dimensions read at 0."""
    _fits(x, dims, "broadcast_in_dim")
    if any(np.shape(x)[i] not in (1, shape[d]) for i, d in enumerate(dims)):
        raise ValueError("broadcast_in_dim: sizes do not fit")
    x, grid = np.asarray(x), np.indices(shape, sparse=True)
    return np.broadcast_to(
        x[tuple(np.minimum(grid[d], x.shape[i] - 1) for i, d in enumerate(dims))], shape
    )


def _fits(x, entries, what):
    """lax's rule: one entry per dimension (NumPy would take fewer)."""
    if len(entries) != np.ndim(x):
        raise ValueError(f"{what}: {len(entries)} entries for {np.ndim(x)} dimensions")


def _slice(x, starts, limits, strides=None):
    strides = (1,) * len(starts) if strides is None else strides
    for entries in (starts, limits, strides):
        _fits(x, entries, "slice")
    if any(not 0 <= s <= e <= n for s, e, n in zip(starts, limits, np.shape(x), strict=True)):
        raise ValueError("slice: outside the operand")
    return np.asarray(x)[tuple(map(slice, starts, limits, strides))]


def _bitcast(x, new_dtype):
    """NumPy's view, with JAX's shapes: a narrower dtype adds a trailing dimension, a wider
    one takes the last dimension away."""
    x, new = np.array(x, order="C"), np.dtype(new_dtype)
    if x.dtype.itemsize > new.itemsize:
        return x[..., None].view(new)
    view = x.view(new)
    return view if x.dtype.itemsize == new.itemsize else view[..., 0]


def _pad(x, value, config):
    """Element k of each dimension lands at ``low + k * (interior + 1)``; kept where inside."""
    _fits(x, config, "pad")
    x = np.asarray(x)
    shape = tuple(
        lo + hi + n + max(n - 1, 0) * it for (lo, hi, it), n in zip(config, x.shape, strict=True)
    )
    out = np.full(shape, value, dtype=x.dtype)
    sources, targets = [], []
    for (lo, _, it), n, size in zip(config, x.shape, shape, strict=True):
        k = np.arange(n)
        position = lo + k * (it + 1)
        keep = (position >= 0) & (position < size)
        sources.append(k[keep])
        targets.append(position[keep])
    if x.ndim == 0:
        return x.copy()
    out[np.ix_(*targets)] = x[np.ix_(*sources)]
    return out


def _sort(operand, dimension=-1, is_stable=True, num_keys=1):
    if not isinstance(operand, tuple | list):
        return np.sort(operand, axis=dimension, kind="stable")
    keys = [np.moveaxis(k, dimension, -1) for k in operand[:num_keys]]
    order = np.lexsort(keys[::-1], axis=-1)  # lexsort's last key is the primary one
    order = np.moveaxis(order, -1, dimension)
    return tuple(np.take_along_axis(np.asarray(x), order, dimension) for x in operand)


def _top_k(operand, k, *, axis=-1, is_stable=True):
    """Sorted by: NaN first, then value descending, then index ascending (np.lexsort)."""
    x = np.moveaxis(np.asarray(operand, np.float64), axis, -1)
    nan = np.isnan(x)
    index = np.broadcast_to(np.arange(x.shape[-1]), x.shape)
    order = np.lexsort((index, -np.where(nan, 0, x), ~nan), axis=-1)[..., :k]
    indices = np.moveaxis(order, -1, axis).astype(np.int32)
    return np.take_along_axis(np.asarray(operand), indices, axis), indices


def _accumulate(ufunc):
    def cumulative(x, axis=0, reverse=False):
        x = np.asarray(x)
        if reverse:
            return np.flip(ufunc.accumulate(np.flip(x, axis), axis=axis, dtype=x.dtype), axis)
        return ufunc.accumulate(x, axis=axis, dtype=x.dtype)

    return cumulative


def _reduction(ufunc):
    return lambda x, axes: ufunc.reduce(np.asarray(x), axis=tuple(axes), dtype=np.asarray(x).dtype)


def _extreme(ufunc, initial):
    def reduce(x, axes):
        x = np.asarray(x)
        start = initial(x.dtype)
        return ufunc.reduce(x, axis=tuple(axes), initial=start) if axes else x

    return reduce


def _lowest(dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min if dtype.kind in "iu" else False


def _highest(dtype):
    return np.inf if dtype.kind == "f" else np.iinfo(dtype).max if dtype.kind in "iu" else True


def _reduce(operands, init_values, computation, dimensions):
    """``computation``'s ufunc.reduce from ``init_values``, in each operand's dtype."""
    if isinstance(operands, tuple | list):
        return tuple(map(_reduce, operands, init_values, [computation] * len(operands),
                         [dimensions] * len(operands)))  # fmt: skip
    x = np.asarray(operands)
    return computation.reduce(x, axis=tuple(dimensions), initial=init_values, dtype=x.dtype)


class RoundingMethod(enum.IntEnum):
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


NUMPY_LAX_OPERATORS = types.SimpleNamespace(
    **{name: getattr(np, numpy_name) for name, numpy_name in SAME_AS_NUMPY.items()},
    RoundingMethod=RoundingMethod,
    div=_div,
    rem=np.fmod,
    round=_round,
    logistic=lambda x: (1 / (1 + np.exp(-x.astype(np.float64)))).astype(np.exp(x).dtype),
    exp2=np.exp2,
    cbrt=np.cbrt,
    nextafter=np.nextafter,
    reciprocal=np.reciprocal,
    conj=lambda x: np.conj(x) + np.complex64(0),
    complex=lambda x, y: np.asarray(np.frompyfunc(complex, 2, 1)(x, y)).astype(  # exact parts
        np.result_type(x, y, np.complex64)
    ),
    shift_right_logical=_shift_right_logical,
    population_count=lambda x: np.bitwise_count(_unsigned(x)).astype(np.asarray(x).dtype),
    clz=_clz,
    dot_general=None,  # rows compute it with einsum, given their labels
    broadcast_in_dim=_broadcast_in_dim,
    broadcast=lambda x, sizes: np.broadcast_to(x, (*sizes, *np.shape(x))),
    reshape=lambda x, new_sizes, dimensions=None: np.reshape(
        x if dimensions is None else np.transpose(x, dimensions), new_sizes
    ),
    transpose=np.transpose,
    squeeze=lambda x, dimensions: np.squeeze(x, tuple(dimensions)),
    expand_dims=lambda x, dimensions: np.expand_dims(x, tuple(dimensions)),
    concatenate=lambda operands, dimension: np.concatenate(operands, axis=dimension),
    rev=lambda x, dimensions: np.flip(x, tuple(dimensions)),
    select_n=lambda which, *cases: np.choose(np.asarray(which, np.intp), cases),
    pad=_pad,
    slice=_slice,
    slice_in_dim=lambda x, start, limit, stride=1, axis=0: np.take(
        x, np.arange(x.shape[axis])[slice(start, limit, stride)], axis=axis
    ),
    index_in_dim=lambda x, index, axis=0, keepdims=True: (
        np.take(x, [index], axis=axis) if keepdims else np.take(x, index, axis=axis)
    ),
    iota=lambda dtype, size: np.arange(size, dtype=dtype),
    broadcasted_iota=lambda dtype, shape, dimension: np.indices(shape, dtype=dtype)[dimension],
    full=lambda shape, fill_value, dtype=None: np.full(shape, fill_value, dtype),
    full_like=lambda x, fill_value, dtype=None, shape=None: np.full_like(
        x, fill_value, dtype, shape=shape
    ),
    convert_element_type=lambda x, dtype: (
        np.real(x).astype(dtype)
        if np.iscomplexobj(x) and (np.dtype(dtype).kind != "c")
        else np.asarray(x).astype(dtype)
    ),
    bitcast_convert_type=_bitcast,
    reduce_sum=_reduction(np.add),
    reduce_prod=_reduction(np.multiply),
    reduce_max=_extreme(np.maximum, _lowest),
    reduce_min=_extreme(np.minimum, _highest),
    reduce_and=_reduction(np.bitwise_and),
    reduce_or=_reduction(np.bitwise_or),
    reduce_xor=_reduction(np.bitwise_xor),
    reduce=_reduce,
    argmax=lambda x, axis, index_dtype: np.argmax(x, axis).astype(index_dtype),
    argmin=lambda x, axis, index_dtype: np.argmin(x, axis).astype(index_dtype),
    sort=_sort,
    sort_key_val=lambda k, v, dimension=-1, is_stable=True: _sort((k, v), dimension),
    top_k=_top_k,
    cumsum=_accumulate(np.add),
    cumprod=_accumulate(np.multiply),
    cummax=_accumulate(np.maximum),
    cummin=_accumulate(np.minimum),
    cumlogsumexp=_accumulate(np.logaddexp),
)
