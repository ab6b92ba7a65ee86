"""The table, part 1: elementwise functions, reductions, spmd.nn, creation and comparisons.

Each strategy draws a call NumPy mostly accepts; where it draws one NumPy rejects (a wrong axis,
a dtype the loop lacks, shapes that do not broadcast) spmd must reject it too.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from tests.differential.calls import Sig, make_call
from tests.differential.compare import magnitude
from tests.differential.generate import (
    ALL_DTYPES,
    COMPLEX,
    a_dtype_keyword,
    arrays,
    axes,
    axis,
    broadcast_shapes,
    dtypes,
    operand,
    python_scalars,
    shapes,
)

UNARY = [
    "abs", "absolute", "arccos", "arcsin", "arctan", "ceil", "conj", "conjugate", "copy",
    "cos", "exp", "expm1", "floor", "imag", "invert", "isfinite", "isnan", "log", "log1p",
    "logical_not", "negative", "positive", "real", "sign", "sin", "sqrt", "tan", "tanh",
    "sinh", "cosh", "arcsinh", "arccosh", "arctanh", "log2", "log10", "square", "trunc", "isinf",
    "signbit", "acos", "asin", "atan", "acosh", "asinh", "atanh", "bitwise_invert", "from_dlpack",
]  # fmt: skip
BINARY = [
    "add", "arctan2", "bitwise_and", "bitwise_or", "bitwise_xor", "divide", "equal",
    "floor_divide", "greater", "greater_equal", "less", "less_equal", "logical_and",
    "logical_or", "maximum", "minimum", "mod", "multiply", "not_equal", "power", "remainder",
    "subtract", "true_divide", "hypot", "copysign", "logaddexp", "logical_xor", "left_shift",
    "right_shift", "atan2", "pow", "bitwise_left_shift", "bitwise_right_shift",
]  # fmt: skip
REAL_DTYPES = tuple(d for d in ALL_DTYPES if d.kind != "c")


@st.composite
def unary(draw, name: str):
    x = draw(operand(draw(shapes())))
    if name in ("round", "around") and draw(st.booleans()):
        decimals = draw(st.integers(-2, 3))
        if draw(st.booleans()):
            return make_call(name, x, decimals)
        return make_call(name, x, decimals=decimals)
    return make_call(name, x)


@st.composite
def binary(draw, name: str):
    first, second = draw(broadcast_shapes(2))
    dtype = draw(dtypes)
    x = draw(operand(first, dtype))
    y = draw(operand(second, dtype if draw(st.booleans()) else None))
    if draw(st.integers(0, 4)) == 0:
        x, y = y, x
    return make_call(name, x, y)


@st.composite
def mask(draw, shape: tuple[int, ...]):
    """A ``where=`` mask: a bool array of ``shape`` or of a shape that broadcasts to it."""
    keep = draw(st.integers(0, len(shape)))
    small = tuple(1 if draw(st.booleans()) else n for n in shape[len(shape) - keep :])
    return draw(arrays(np.dtype(bool), small))


def _inexact(dtype) -> bool:
    return dtype is None or np.dtype(dtype).kind in "fc"


def _reduced_size(shape, ax) -> int:
    if ax is None:
        return int(np.prod(shape))
    picked = ax if isinstance(ax, tuple) else (ax,)
    ndim = len(shape)
    return int(np.prod([shape[a % ndim] for a in picked if -ndim <= a < ndim] or [1]))


EXTREMA = ("max", "amax", "min", "amin")


def _one_signed(x: np.ndarray, below: bool) -> np.ndarray:
    """``x`` with every (real part of a) value moved below -1 or above 1, so that a shard's
    identity (0 or 1) standing in for an empty shard would show in a max or min."""
    with np.errstate(all="ignore"):
        real = np.abs(x.real) + 1  # wraps at an integer minimum: still a valid input
        real = -real if below else real
        return (real + 1j * x.imag if x.dtype.kind == "c" else real).astype(x.dtype)


@st.composite
def reduction(draw, name: str, *, dtype_kw=False, initial=False, ddof=False, where=True):
    """sum, prod, mean, std, var, max/min/amax/amin, all, any: every keyword form."""
    # max/min order complex numbers lexicographically, a path of its own: drawn half the time
    dtype = draw(st.one_of(dtypes, st.sampled_from(COMPLEX)) if name in EXTREMA else dtypes)
    one_signed = name in EXTREMA and dtype.kind in "ifc" and draw(st.booleans())
    x = draw(arrays(dtype, draw(shapes(min_side=int(one_signed)))))
    if one_signed:  # non-empty, and of one sign: an empty shard's stand-in (0 or 1) would show
        x = _one_signed(x, below=name in ("max", "amax"))
    ax = draw(axes(x.ndim))
    kw = {}
    if draw(st.booleans()):
        kw["keepdims"] = draw(st.booleans())
    if dtype_kw and draw(st.integers(0, 3)) == 0:
        # NumPy's var/std with an integer or bool dtype= give that dtype (or raise): left out
        kw["dtype"] = draw(a_dtype_keyword().filter(lambda d: not ddof or _inexact(d)))
    if initial and not one_signed and draw(st.integers(0, 3)) == 0:
        kw["initial"] = draw(python_scalars("bif"))
    if where and draw(st.integers(0, 3)) == 0:
        kw["where"] = draw(mask(x.shape))
    if ddof and draw(st.integers(0, 3)) == 0:
        kw[draw(st.sampled_from(["ddof", "correction"]))] = draw(st.sampled_from([0, 1, 2, 0.5]))
    if draw(st.integers(0, 5)) == 0:
        kw["out"] = None
    terms = max(_reduced_size(x.shape, ax), 1)
    top = magnitude(x, kw.get("initial", 0))  # finite values only: a finite tolerance
    options = {"terms": terms}
    if name in ("var", "std"):
        options = {"terms": terms, "scale": terms * top**2, "root": name == "std"}
    if name == "prod":
        options = {"terms": terms, "scale": 0.0}  # relative error only
    if ax is not None and draw(st.booleans()):
        return make_call(name, x, ax, **options, **kw)
    return make_call(name, x, **options, axis=ax, **kw)


@st.composite
def cumulative(draw, name: str):
    x = draw(arrays(draw(dtypes), draw(shapes(max_dims=3))))
    ax = draw(st.one_of(st.none(), axis(x.ndim)))
    kw = {"dtype": draw(a_dtype_keyword())} if draw(st.integers(0, 3)) == 0 else {}
    terms = max(x.size if ax is None else _reduced_size(x.shape, ax), 1)
    scale = 0.0 if name == "cumprod" else None
    return make_call(name, x, axis=ax, terms=terms, scale=scale, **kw)


@st.composite
def arg_reduction(draw, name: str):
    x = draw(arrays(draw(dtypes), draw(shapes())))
    kw = {"axis": draw(st.one_of(st.none(), axis(x.ndim)))}
    if draw(st.booleans()):
        kw["keepdims"] = draw(st.booleans())
    return make_call(name, x, **kw)


@st.composite
def sorting(draw, name: str):
    """sort/argsort; NumPy leaves the order of ties open unless the sort is stable, so NumPy is
    asked for its stable order (JAX's, and spmd's, default)."""
    x = draw(arrays(draw(dtypes), draw(shapes(max_dims=3))))
    kw = {}
    if draw(st.booleans()):
        kw["axis"] = draw(st.one_of(st.none(), axis(x.ndim)))
    if draw(st.integers(0, 2)) == 0:
        kw["kind"] = draw(st.sampled_from([None, "stable", "quicksort", "mergesort", "heapsort"]))
    elif draw(st.integers(0, 2)) == 0:
        kw["stable"] = draw(st.sampled_from([None, True]))
    stable = {"kind": "stable"} if name == "argsort" and kw.get("stable") is not True else None
    return make_call(name, x, numpy_kwargs=stable, **kw)


# ------------------------------------------------------------------------------ nn


@st.composite
def nn_call(draw, name: str):
    """spmd.nn against float64 NumPy formulas (tests/cases/nn.py): real dtypes only, as those
    formulas are real (spmd.nn takes complex input too; the case table does not check it)."""
    x = draw(arrays(draw(st.sampled_from(REAL_DTYPES)), draw(shapes())))
    kw, terms = {}, 1
    if name in ("softmax", "log_softmax", "logsumexp") and x.dtype.kind == "f":
        # at +-inf the float64 formulas and spmd (JAX) differ on which entries are NaN
        x = np.where(np.isfinite(x), x, 0).astype(x.dtype)
    if name in ("softmax", "log_softmax", "logsumexp") and draw(st.booleans()):
        kw["axis"] = draw(axes(x.ndim))
    if name == "logsumexp" and draw(st.booleans()):
        kw["keepdims"] = draw(st.booleans())
    if name in ("softmax", "log_softmax", "logsumexp"):
        terms = max(_reduced_size(x.shape, kw.get("axis", -1 if name != "logsumexp" else None)), 1)
    if name == "gelu" and draw(st.booleans()):
        kw["approximate"] = draw(st.booleans())
    if name == "one_hot":
        x = draw(arrays(draw(dtypes.filter(lambda d: d.kind in "iub")), x.shape))
        kw["num_classes"] = draw(st.integers(0, 4))
        if draw(st.booleans()):
            kw["dtype"] = draw(st.sampled_from(REAL_DTYPES))
        if draw(st.booleans()):
            kw["axis"] = draw(axis(x.ndim + 1))
    return make_call(f"nn.{name}", x, terms=terms, **kw)


# ------------------------------------------------------------------------- creation


sizes = st.integers(0, 5)
shape_args = st.one_of(sizes, st.lists(sizes, max_size=3).map(tuple).filter(lambda s: len(s) < 4))


@st.composite
def filled(draw, name: str):
    """zeros, ones, empty(shape, dtype); full(shape, fill_value, dtype)."""
    kw = {}
    if draw(st.booleans()):
        kw["dtype"] = draw(a_dtype_keyword(none=name == "full"))
    args = [draw(shape_args)]
    if name == "full":  # fills that broadcast (leading 1s beyond the rank too), or do not
        args.append(draw(operand(draw(st.sampled_from([(), (1,), (2,), (1, 1), (1, 2)])))))
    return make_call(name, *args, values=name != "empty", **kw)


@st.composite
def like(draw, name: str):
    x = draw(operand(draw(shapes())))
    args = [x, draw(python_scalars())] if name == "full_like" else [x]
    kw = {"dtype": draw(a_dtype_keyword())} if draw(st.booleans()) else {}
    if draw(st.integers(0, 3)) == 0:
        kw["shape"] = draw(shape_args)
    return make_call(name, *args, values=name != "empty_like", **kw)


@st.composite
def arange(draw):
    numbers = st.one_of(st.integers(-6, 6), st.sampled_from([0.5, -2.5, 3.25]))
    args = [draw(numbers) for _ in range(draw(st.integers(1, 3)))]
    if len(args) == 3 and draw(st.integers(0, 9)) == 0:
        args[2] = 0
    kw = {"dtype": draw(a_dtype_keyword())} if draw(st.booleans()) else {}
    return make_call("arange", *args, **kw)


@st.composite
def linspace(draw):
    start, stop = draw(operand(())), draw(operand(()))
    kw = {"num": draw(st.integers(0, 6))}
    if draw(st.booleans()):
        kw["endpoint"] = draw(st.booleans())
    if draw(st.booleans()):
        kw["dtype"] = draw(a_dtype_keyword())
    scale = 8 * (2 * magnitude(start, stop) + 1)  # finite values only: a finite tolerance
    return make_call("linspace", start, stop, terms=8, scale=scale, **kw)


@st.composite
def eye(draw):
    args = [draw(st.integers(0, 5))]
    kw = {}
    if draw(st.booleans()):
        kw["M"] = draw(st.one_of(st.none(), st.integers(0, 5)))
    if draw(st.booleans()):
        kw["k"] = draw(st.integers(-6, 6))
    if draw(st.booleans()):
        kw["dtype"] = draw(a_dtype_keyword(none=False))
    return make_call("eye", *args, **kw)


@st.composite
def conversion(draw, name: str):
    """array, asarray, astype: every dtype to every dtype (and ``copy=``)."""
    x = draw(operand(draw(shapes()), scalar=name != "astype"))  # np.astype takes arrays only
    if name == "astype":
        return make_call(name, x, draw(a_dtype_keyword(none=False)))
    kw = {"dtype": draw(a_dtype_keyword())} if draw(st.booleans()) else {}
    if name == "array" and draw(st.booleans()):
        kw["copy"] = True
    return make_call(name, x, **kw)


@st.composite
def closeness(draw, name: str):
    """isclose, allclose (rtol, atol, equal_nan); array_equal (equal_nan), array_equiv."""
    first, second = draw(broadcast_shapes(2))
    if name == "array_equal" and draw(st.booleans()):
        second = first
    x, y = draw(operand(first)), draw(operand(second))
    if draw(st.integers(0, 3)) == 0:  # a Python (nested) list: it stays one, never placed
        x, y = (v.tolist() if isinstance(v, np.ndarray) and draw(st.booleans()) else v
                for v in (x, y))  # fmt: skip
    kw = {}
    if name in ("isclose", "allclose") and draw(st.booleans()):
        kw["rtol"] = draw(st.sampled_from([0.0, 1e-5, 0.5]))
        kw["atol"] = draw(st.sampled_from([0.0, 1e-8, 1.0]))
    if name in ("isclose", "allclose", "array_equal") and draw(st.booleans()):
        kw["equal_nan"] = draw(st.booleans())
    return make_call(name, x, y, **kw)


@st.composite
def introspection(draw, name: str):
    """shape, ndim, size: Python results (np.size's axis= too)."""
    x = draw(operand(draw(shapes())))
    if name == "size" and draw(st.booleans()):
        return make_call(name, x, draw(axis(np.ndim(x))), plain=True)
    return make_call(name, x, plain=True)


def _sig(name, strategy, *args, plain_errors=None, **kwargs) -> Sig:
    return Sig(name, lambda: strategy(*args, **kwargs), plain_errors=plain_errors or {})


SIGS = [
    *[_sig(name, unary, name) for name in (*UNARY, "round", "around")],
    *[_sig(name, binary, name) for name in BINARY],
    _sig("sum", reduction, "sum", dtype_kw=True, initial=True),
    _sig("prod", reduction, "prod", dtype_kw=True, initial=True),
    _sig("mean", reduction, "mean", dtype_kw=True),
    _sig("var", reduction, "var", dtype_kw=True, ddof=True),
    _sig("std", reduction, "std", dtype_kw=True, ddof=True),
    *[_sig(n, reduction, n, initial=True) for n in ("max", "min", "amax", "amin")],
    *[_sig(n, reduction, n) for n in ("all", "any")],
    *[_sig(n, cumulative, n) for n in ("cumsum", "cumprod")],
    *[_sig(n, arg_reduction, n) for n in ("argmax", "argmin")],
    *[_sig(n, sorting, n) for n in ("sort", "argsort")],
    *[_sig(f"nn.{n}", nn_call, n) for n in ("gelu", "log_softmax", "logsumexp", "one_hot")],
    *[_sig(f"nn.{n}", nn_call, n) for n in ("relu", "sigmoid", "softmax")],
    *[_sig(f"nn.{n}", nn_call, n) for n in ("silu", "swish", "softplus", "log_sigmoid")],
    *[_sig(f"nn.{n}", nn_call, n) for n in ("elu", "leaky_relu", "glu", "standardize")],
    *[_sig(n, filled, n) for n in ("zeros", "ones", "empty", "full")],
    *[_sig(n, like, n) for n in ("zeros_like", "ones_like", "empty_like")],
    _sig("full_like", like, "full_like", plain_errors={"OverflowError": "NumPy's own"}),
    *[_sig(n, introspection, n) for n in ("shape", "ndim", "size")],
    _sig("arange", arange, plain_errors={"OverflowError": "NumPy's own, from its dtype= cast"}),
    _sig("linspace", linspace, plain_errors={"TypeError": "NumPy's own: floor of complex"}),
    _sig("eye", eye),
    *[_sig(n, conversion, n) for n in ("array", "asarray", "astype")],
    *[_sig(n, closeness, n) for n in ("isclose", "allclose", "array_equal", "array_equiv")],
]
