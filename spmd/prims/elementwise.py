"""Elementwise primitives: NumPy ufuncs with broadcasting and NumPy 2 (NEP 50) dtypes."""

from __future__ import annotations

from functools import partial

import numpy as np

from spmd.core.aval import ShapedArray, result_dtype
from spmd.core.primitive import Primitive, Rules
from spmd.errors import ShapeError, SpmdTypeError, SpmdValueError
from spmd.prims import ufuncs
from spmd.prims.elementwise_derivatives import derivative_rules
from spmd.sharding.rules import Factors, broadcast_factors

_WEAK_TYPES = {"i": int, "u": int, "f": float, "c": complex}


def broadcast_shape(name: str, avals: tuple[ShapedArray, ...]) -> tuple[int, ...]:
    try:
        return np.broadcast_shapes(*(a.shape for a in avals))
    except ValueError:
        operands = ", ".join(f"x{i + 1} {a}" for i, a in enumerate(avals))
        raise ShapeError(
            f"spmd.numpy.{name}: operands could not be broadcast together: {operands}. Each "
            f"dimension must match or be 1 (counting from the right); reshape or expand_dims "
            f"an operand to line them up."
        ) from None


def _dtype_operand(aval: ShapedArray):
    return _WEAK_TYPES[aval.dtype.kind] if aval.weak_type else aval.dtype


def _ufunc_dtype(name: str, ufunc: np.ufunc, avals: tuple[ShapedArray, ...]) -> np.dtype:
    try:
        return ufunc.resolve_dtypes(tuple(map(_dtype_operand, avals)) + (None,) * ufunc.nout)[-1]
    except TypeError as error:
        dtypes = " and ".join(str(a.dtype) for a in avals)
        raise SpmdTypeError(f"spmd.numpy.{name} does not support {dtypes}: {error}") from None


# Which operands a pending sum may pass through (see spmd/sharding/rules.py): a sum of
# partial values is the partial of the sum, and a product scales each partial.
LINEAR = {"add": "all", "subtract": "all", "multiply": "one", "true_divide": "first",
          "negative": "one", "positive": "one", "conjugate": "one"}  # fmt: skip


def broadcasting(linear: str | None = None):
    """The sharding rule of an elementwise primitive: operands line up from the right."""

    def sharding(ins, outs, **params) -> Factors:
        exact = outs[0].dtype.kind in "iufc"  # booleans add as `or`, which is not linear
        return broadcast_factors([a.shape for a in ins], outs[0].shape, linear if exact else None)

    return sharding


def elementwise(name: str, ufunc: np.ufunc) -> Primitive:
    """A primitive that applies ``ufunc`` with broadcasting; its dtype is NumPy's."""

    def shape(*avals: ShapedArray) -> ShapedArray:
        return ShapedArray(broadcast_shape(name, avals), _ufunc_dtype(name, ufunc, avals))

    generic = partial(ufuncs.generic_ufunc, ufunc, name)

    def impl(xp, *args, out=None):
        if xp is not np:
            return generic(xp, *args)
        fn = getattr(np, ufunc.__name__)
        return fn(*args) if out is None else fn(*args, out=out)

    checked = VALUE_CHECKED.get(name)
    if checked is not None:
        impl = checked(impl)
    sharding = broadcasting(LINEAR.get(name))
    direct = None if checked else ufunc  # compiled programs call the ufunc only if unchecked
    derivatives = derivative_rules(name, ufunc.nin == 1)
    rules = Rules(shape, impl, sharding, writes_into=True, ufunc=direct, **derivatives)
    return Primitive(name, rules)


def _integer_power_check(impl):
    """NumPy refuses integers to negative integer powers only once it sees the values."""

    def checked(xp, *args, out=None):
        try:
            return impl(xp, *args, out=out)
        except ValueError as error:
            raise SpmdValueError(
                f"spmd.numpy.power: {error} An integer base met a negative exponent; convert "
                f"the base to a float first, e.g. power(x.astype(np.float64), y)."
            ) from None

    return checked


VALUE_CHECKED = {"power": _integer_power_check}


def _where_shape(cond: ShapedArray, x: ShapedArray, y: ShapedArray) -> ShapedArray:
    dtype, _ = result_dtype(x, y)
    return ShapedArray(broadcast_shape("where", (cond, x, y)), dtype)


def _round_shape(x: ShapedArray, *, decimals: int) -> ShapedArray:
    """NumPy's ``round``: the input's dtype (strong, as NumPy returns a NumPy scalar for a
    Python one), except that bools round to float16, and only with ``decimals=0``."""
    if x.dtype != np.bool_:
        return ShapedArray(x.shape, x.dtype)
    if decimals != 0:
        raise SpmdTypeError(
            f"spmd.numpy.round: cannot round a {x} to decimals={decimals}: NumPy rounds bools "
            f"only with decimals=0 (to float16), as True and False have no decimal places. "
            f"Convert first, e.g. round(x.astype(np.float32), {decimals}), or drop decimals."
        )
    return ShapedArray(x.shape, np.dtype(np.float16))


UNARY = {
    name: elementwise(name, getattr(np, ufunc))
    for name, ufunc in {
        "negative": "negative",
        "positive": "positive",
        "abs": "absolute",
        "sign": "sign",
        "sqrt": "sqrt",
        "exp": "exp",
        "log": "log",
        "log1p": "log1p",
        "expm1": "expm1",
        "sin": "sin",
        "cos": "cos",
        "tan": "tan",
        "tanh": "tanh",
        "sinh": "sinh",
        "cosh": "cosh",
        "arcsin": "arcsin",
        "arccos": "arccos",
        "arctan": "arctan",
        "arcsinh": "arcsinh",
        "arccosh": "arccosh",
        "arctanh": "arctanh",
        "log2": "log2",
        "log10": "log10",
        "square": "square",
        "floor": "floor",
        "ceil": "ceil",
        "trunc": "trunc",
        "isnan": "isnan",
        "isfinite": "isfinite",
        "isinf": "isinf",
        "signbit": "signbit",
        "logical_not": "logical_not",
        "invert": "invert",
        "conjugate": "conjugate",
    }.items()
}

BINARY = {
    name: elementwise(name, getattr(np, name))
    for name in (
        "add",
        "subtract",
        "multiply",
        "true_divide",
        "floor_divide",
        "remainder",
        "power",
        "arctan2",
        "hypot",
        "copysign",
        "logaddexp",
        "maximum",
        "minimum",
        "logical_and",
        "logical_or",
        "logical_xor",
        "bitwise_and",
        "bitwise_or",
        "bitwise_xor",
        "left_shift",
        "right_shift",
        "equal",
        "not_equal",
        "less",
        "less_equal",
        "greater",
        "greater_equal",
    )
}


def _logistic_shape(x: ShapedArray) -> ShapedArray:
    if x.dtype == np.bool_:
        raise SpmdTypeError(
            f"spmd.nn.sigmoid does not support {x}: -x is undefined for booleans. Convert "
            f"first, e.g. sigmoid(x.astype(np.float32))."
        )
    return ShapedArray(x.shape, _ufunc_dtype("sigmoid", np.exp, (x,)))


def _logistic(xp, x, out=None):
    """``1 / (1 + exp(-x))``, JAX's formula, in four passes over one buffer; ``exp`` may
    overflow to inf, which gives the right limit, 0. float16 is computed in float32."""
    if xp is not np:
        dtype = ufuncs.loop_dtypes(np.exp, (ufuncs.result_dtype(xp, x),))[-1]
        return ufuncs.logistic(xp, x, dtype)
    x = np.asarray(x)
    if x.dtype.kind in "biu":
        x = x.astype(_ufunc_dtype("sigmoid", np.exp, (ShapedArray(x.shape, x.dtype),)))
    if x.dtype == np.float16:
        return _logistic(np, x.astype(np.float32)).astype(np.float16)
    t = np.empty_like(x) if out is None else out
    with np.errstate(over="ignore"):
        np.negative(x, out=t)
        np.exp(t, out=t)
        np.add(t, 1, out=t)
        return np.reciprocal(t, out=t)


def _where(xp, c, x, y):
    if xp is np:
        return np.where(c, x, y)
    return ufuncs.where(xp, c, x, y, ufuncs.result_dtype(xp, x, y))


def _round(xp, x, *, decimals):
    if xp is np:
        return np.round(x, decimals)
    source = ufuncs.result_dtype(xp, x)
    return ufuncs.round_(xp, x, decimals, np.dtype(np.float16) if source == np.bool_ else source)


logistic_p = Primitive(
    "logistic",
    Rules(
        shape=_logistic_shape,
        impl=_logistic,
        sharding=broadcasting(),
        writes_into=True,
        **derivative_rules("logistic", unary=True),
    ),
)
where_p = Primitive(
    "where",
    Rules(
        shape=_where_shape,
        impl=_where,
        sharding=broadcasting(),
        **derivative_rules("where", unary=False),
    ),
)
round_p = Primitive(
    "round",
    Rules(
        shape=_round_shape,
        impl=_round,
        sharding=broadcasting(),
        **derivative_rules("round", unary=True),
    ),
)


def _part_shape(x: ShapedArray) -> ShapedArray:
    """NumPy's ``real`` and ``imag``: complex gives its float parts, other dtypes their own
    (``imag`` of a real array is zeros)."""
    part = np.empty((), x.dtype).real.dtype
    return ShapedArray(x.shape, part, x.weak_type)


# Linear (the part of a sum is the sum of the parts); not writes_into: a complex operand's
# parts are views of it, and a real operand's real part is the operand itself.
real_p = Primitive(
    "real",
    Rules(
        shape=_part_shape,
        impl=lambda xp, x: np.real(x) if xp is np else ufuncs.real(xp, x),
        sharding=broadcasting("one"),
        **derivative_rules("real", unary=True),
    ),
)
imag_p = Primitive(
    "imag",
    Rules(
        shape=_part_shape,
        impl=lambda xp, x: np.imag(x) if xp is np else ufuncs.imag(xp, x),
        sharding=broadcasting("one"),
        **derivative_rules("imag", unary=True),
    ),
)
