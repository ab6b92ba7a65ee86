"""The jvp, transpose and batch rules of the elementwise primitives (spmd/prims/elementwise.py).

Tangent formulas bind primitives by name, so that this file needs none of them built.
"""

from __future__ import annotations

import math
from functools import partial, reduce

from spmd.core.ad import UndefinedPrimal
from spmd.core.trace import aval_of
from spmd.prims.derivatives import (
    bind,
    convert,
    elementwise_batch,
    linear_jvp,
    sum_to_shape,
    unary_batch,
)

_add, _sub, _mul, _div, _neg = (
    partial(bind, name) for name in ("add", "subtract", "multiply", "true_divide", "negative")
)


def _fit(t, like):
    """A tangent with the dtype and shape of the result ``like`` (broadcast to it)."""
    aval = aval_of(like)
    t = convert(t, aval.dtype)
    return t if aval_of(t).shape == aval.shape else bind("broadcast_to", t, shape=aval.shape)


def _unary_jvp(derivative):
    """``t * f'(x)``, where ``derivative(x, out)`` is ``f'(x)``."""
    return lambda primals, out, tangents, **params: _fit(
        _mul(tangents[0], derivative(primals[0], out)), out
    )


def _partials_jvp(*partials):
    """The sum of ``partial(t, *operands, out)`` (the tangent ``t`` times the partial
    derivative) over the operands that have a tangent."""

    def jvp(primals, out, tangents, **params):
        parts = []
        for rule, t in zip(partials, tangents, strict=True):
            part = None if t is None or rule is None else rule(t, *primals, out)
            if part is not None:  # None: the output does not vary with this operand
                parts.append(_fit(part, out))
        return reduce(_add, parts) if parts else None

    return jvp


def _zero_jvp(primals, out, tangents, **params):
    return None


def _abs_jvp(primals, out, tangents):
    (x,), (t,) = primals, tangents
    if aval_of(x).dtype.kind != "c":
        return _mul(t, bind("sign", x))
    return bind("real", _mul(t, _div(bind("conjugate", x), out)))  # Re(conj(x) t) / |x|


def _imag_jvp(primals, out, tangents):
    """``imag(t)``; zero for a real operand (whose imaginary part is always zero)."""
    return bind("imag", tangents[0]) if aval_of(primals[0]).dtype.kind == "c" else None


def _linear_transpose(*rules):
    """The transpose of a primitive linear in each operand with a rule: ``rule(ct, *operands)``
    is that operand's cotangent, then summed over the dimensions broadcasting added to it,
    in its dtype (a complex cotangent of a real operand keeps its real part)."""

    def transpose(ct, *operands, **params):
        cts = []
        for rule, operand in zip(rules, operands, strict=True):
            if not isinstance(operand, UndefinedPrimal):
                cts.append(None)
                continue
            aval = operand.aval
            c = sum_to_shape(rule(ct, *operands), aval.shape)
            if aval_of(c).dtype.kind == "c" and aval.dtype.kind != "c":
                c = bind("real", c)
            cts.append(convert(c, aval.dtype))
        return cts

    return transpose


def _max_weight(x, y):
    """d max(x, y) / dx: 1 where ``x`` is the larger, 0 where ``y`` is, 1/2 at ties (as JAX)."""
    return _mul(0.5, _add(1, bind("sign", _sub(x, y))))


def _log_or_zero(x):
    """log(x), and 0 where x is 0: d(x ** y)/dy there, as JAX has it (0 ** y is flat)."""
    return bind("log", bind("where", bind("equal", x, 0), 1, x))


def _arcsin_derivative(x):
    return _div(1, bind("sqrt", _sub(1, _mul(x, x))))


def _reciprocal_sqrt(x):
    return _div(1, bind("sqrt", x))


def _finite_or_zero(x):
    """``x``, with 0 in place of infinities (as JAX's logaddexp derivative has it)."""
    return bind("where", bind("isinf", x), 0, x)


def _logaddexp_derivative(t, x, out):  # d logaddexp(x, y) / dx = exp(x - out)
    return _mul(t, bind("exp", _sub(_finite_or_zero(x), _finite_or_zero(out))))


def _hypot_derivative(t, x, out):  # x / hypot(x, y), and 0 at the origin
    return _mul(t, _div(x, bind("where", bind("equal", out, 0), 1, out)))


def _arctan2_derivative(t, x1, x2):  # d arctan2(x1, x2) = (x2 dx1 - x1 dx2) / (x1² + x2²)
    return _mul(t, _div(x2, _add(_mul(x1, x1), _mul(x2, x2))))


_UNARY_DERIVATIVES = {  # f'(x), from x and the result
    "sqrt": lambda x, out: _div(0.5, out),
    "exp": lambda x, out: out,
    "log": lambda x, out: _div(1, x),
    "log1p": lambda x, out: _div(1, _add(x, 1)),
    "expm1": lambda x, out: _add(out, 1),
    "sin": lambda x, out: bind("cos", x),
    "cos": lambda x, out: _neg(bind("sin", x)),
    "tan": lambda x, out: _add(1, _mul(out, out)),
    "tanh": lambda x, out: _sub(1, _mul(out, out)),
    "arcsin": lambda x, out: _arcsin_derivative(x),
    "arccos": lambda x, out: _neg(_arcsin_derivative(x)),
    "arctan": lambda x, out: _div(1, _add(1, _mul(x, x))),
    "sinh": lambda x, out: bind("cosh", x),
    "cosh": lambda x, out: bind("sinh", x),
    "arcsinh": lambda x, out: _reciprocal_sqrt(_add(_mul(x, x), 1)),
    "arccosh": lambda x, out: _reciprocal_sqrt(_mul(_sub(x, 1), _add(x, 1))),
    "arctanh": lambda x, out: _div(1, _mul(_sub(1, x), _add(1, x))),
    "log2": lambda x, out: _div(1 / math.log(2), x),
    "log10": lambda x, out: _div(1 / math.log(10), x),
    "square": lambda x, out: _mul(2, x),
    "logistic": lambda x, out: _mul(out, _sub(1, out)),
}
_PARTIALS = {  # per operand: its tangent t times the partial derivative in it
    "add": (lambda t, x, y, out: t, lambda t, x, y, out: t),
    "subtract": (lambda t, x, y, out: t, lambda t, x, y, out: _neg(t)),
    "multiply": (lambda t, x, y, out: _mul(t, y), lambda t, x, y, out: _mul(x, t)),
    "true_divide": (
        lambda t, x, y, out: _div(t, y),
        lambda t, x, y, out: _neg(_mul(t, _div(out, y))),
    ),
    "remainder": (  # x - y * floor(x / y)
        lambda t, x, y, out: t,
        lambda t, x, y, out: _neg(_mul(t, bind("floor_divide", x, y))),
    ),
    "power": (
        lambda t, x, y, out: _mul(t, _mul(y, _power_less_one(x, y))),
        lambda t, x, y, out: _mul(t, _mul(out, _log_or_zero(x))),
    ),
    "arctan2": (
        lambda t, x, y, out: _arctan2_derivative(t, x, y),
        lambda t, x, y, out: _neg(_arctan2_derivative(t, y, x)),
    ),
    "hypot": (
        lambda t, x, y, out: _hypot_derivative(t, x, out),
        lambda t, x, y, out: _hypot_derivative(t, y, out),
    ),
    "copysign": (  # |x| with y's sign: sign(x) times y's sign in x, flat in y
        lambda t, x, y, out: _mul(t, _mul(bind("sign", x), bind("copysign", 1, y))),
        None,
    ),
    "logaddexp": (
        lambda t, x, y, out: _logaddexp_derivative(t, x, out),
        lambda t, x, y, out: _logaddexp_derivative(t, y, out),
    ),
    "maximum": (
        lambda t, x, y, out: _mul(t, _max_weight(x, y)),
        lambda t, x, y, out: _mul(t, _max_weight(y, x)),
    ),
    "minimum": (
        lambda t, x, y, out: _mul(t, _max_weight(y, x)),
        lambda t, x, y, out: _mul(t, _max_weight(x, y)),
    ),
    "where": (
        None,  # the condition: a bool, without a tangent
        lambda t, c, x, y, out: bind("where", c, t, 0),
        lambda t, c, x, y, out: bind("where", c, 0, t),
    ),
}
# Piecewise constant, or not float-valued: their tangents are zero.
_PIECEWISE_CONSTANT = ("sign", "floor", "ceil", "trunc", "round", "floor_divide", "isnan",
                       "isfinite", "isinf", "signbit", "logical_not", "invert", "logical_and",
                       "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
                       "left_shift", "right_shift", "equal", "not_equal", "less", "less_equal",
                       "greater", "greater_equal")  # fmt: skip
JVPS = {
    **{name: _unary_jvp(derivative) for name, derivative in _UNARY_DERIVATIVES.items()},
    **{name: _partials_jvp(*partials) for name, partials in _PARTIALS.items()},
    **{name: linear_jvp(name) for name in ("negative", "positive", "conjugate", "real")},
    **dict.fromkeys(_PIECEWISE_CONSTANT, _zero_jvp),
    "abs": _abs_jvp,
    "imag": _imag_jvp,
}
TRANSPOSES = {  # per operand a program may be linear in: its cotangent, from ct
    name: _linear_transpose(*rules)
    for name, rules in {
        "negative": (lambda ct, x: _neg(ct),),
        "positive": (lambda ct, x: ct,),
        "conjugate": (lambda ct, x: bind("conjugate", ct),),
        "real": (lambda ct, x: ct,),  # a complex operand's is complex(ct, 0), as in JAX
        "imag": (lambda ct, x: _mul(ct, -1j),),  # complex(0, -ct), as in JAX
        "add": (lambda ct, x, y: ct, lambda ct, x, y: ct),
        "subtract": (lambda ct, x, y: ct, lambda ct, x, y: _neg(ct)),
        "multiply": (lambda ct, x, y: _mul(ct, y), lambda ct, x, y: _mul(x, ct)),
        "true_divide": (lambda ct, x, y: _div(ct, y), None),
        "where": (
            None,
            lambda ct, c, x, y: bind("where", c, ct, 0),
            lambda ct, c, x, y: bind("where", c, 0, ct),
        ),
    }.items()
}


def _power_less_one(x, y):
    """``x ** (y - 1)``; ``y - 1`` stays a Python number when ``y`` is one (weakly typed:
    ``x ** 2`` differentiates to ``2 * x`` in ``x``'s dtype), and ``x ** 1`` is ``x``."""
    if type(y) not in (int, float, complex):
        return bind("power", x, _sub(y, 1))
    return x if y - 1 == 1 else bind("power", x, y - 1)


def derivative_rules(name: str, unary: bool) -> dict:
    """The jvp, transpose and batch fields of elementwise primitive ``name``'s Rules."""
    batch = unary_batch(name) if unary else elementwise_batch(name)
    return {"jvp": JVPS[name], "transpose": TRANSPOSES.get(name), "batch": batch}
