"""jax.lax's elementwise names: arithmetic, comparisons, bitwise operations, rounding,
transcendental functions and complex parts.

Where jax.lax's function gives what spmd.numpy's does on every input lax accepts, the name
is the same function object (``lax.add is spmd.numpy.add``; spmd.numpy promotes mixed dtypes
where jax.lax raises). The others differ and are written here as compositions, exact on
every input: ``div`` truncates integers toward zero, ``rem`` takes the dividend's sign (C's
fmod), ``round`` rounds halves away from zero by default, ``conj`` of a real array is
complex, ``shift_right_logical`` shifts zeros in, ``population_count`` and ``clz`` count
bits, ``select_n`` picks among cases. ``cbrt``, ``nextafter`` and ``complex`` bind
primitives of their own (spmd/prims/lax_elementwise.py).
"""

from __future__ import annotations

import builtins
import enum
from typing import Any

import numpy as np

from spmd.core.aval import result_dtype
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError, SpmdValueError
from spmd.lax import operator_checks as check
from spmd.numpy import (
    abs,
    acos,
    acosh,
    add,
    asarray,
    asin,
    asinh,
    astype,
    atan,
    atan2,
    atanh,
    bitwise_and,
    bitwise_invert,
    bitwise_or,
    bitwise_xor,
    broadcast_to,
    ceil,
    copysign,
    cos,
    cosh,
    equal,
    exp,
    expm1,
    floor,
    floor_divide,
    greater,
    greater_equal,
    imag,
    isfinite,
    left_shift,
    less,
    less_equal,
    log,
    log1p,
    logical_and,
    maximum,
    minimum,
    multiply,
    negative,
    not_equal,
    power,
    real,
    remainder,
    right_shift,
    sign,
    sin,
    sinh,
    sqrt,
    square,
    subtract,
    tan,
    tanh,
    true_divide,
    trunc,
    where,
)
from spmd.numpy import (
    conj as numpy_conj,
)
from spmd.numpy import round as round_half_even
from spmd.prims.elementwise import logistic_p
from spmd.prims.lax_elementwise import cbrt_p, complex_p, nextafter_p

__all__ = [
    "RoundingMethod", "abs", "acos", "acosh", "add", "and_", "asin", "asinh", "atan", "atan2",
    "atanh", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "cbrt", "ceil", "clz",
    "complex", "conj", "cos", "cosh", "div", "eq", "exp", "exp2", "expm1", "floor", "ge", "gt",
    "imag", "is_finite", "le", "log", "log1p", "logistic", "lt", "max", "min", "mul", "ne",
    "neg", "nextafter", "not_", "or_", "population_count", "pow", "real", "reciprocal", "rem",
    "round", "select_n", "shift_left", "shift_right_arithmetic", "shift_right_logical", "sign",
    "sin", "sinh", "sqrt", "square", "sub", "tan", "tanh", "xor",
]  # fmt: skip

# --- the same functions as spmd.numpy's ------------------------------------------------------

sub, mul, neg, max, min, pow = subtract, multiply, negative, maximum, minimum, power
is_finite = isfinite
eq, ne, lt, le, gt, ge = equal, not_equal, less, less_equal, greater, greater_equal
bitwise_not = not_ = bitwise_invert
and_, or_, xor = bitwise_and, bitwise_or, bitwise_xor
shift_left, shift_right_arithmetic = left_shift, right_shift

# --- checks ----------------------------------------------------------------------------------

_PYTHON_NUMBERS = (int, float)


def _dtype(*xs: Any) -> np.dtype:
    dtype, _ = result_dtype(*(aval_of(x) for x in xs))
    return dtype


def _kinds(fn: str, kinds: str, described: str, *xs: Any) -> np.dtype:
    """The operands' common dtype, refused unless its kind is one of ``kinds``."""
    dtype = _dtype(*xs)
    if dtype.kind not in kinds:
        operands = " and ".join(str(aval_of(x)) for x in xs)
        raise SpmdTypeError(
            f"spmd.lax.{fn}: {operands}; lax.{fn} takes {described}. Convert first, e.g. "
            f"x.astype(np.float32)."
        )
    return dtype


def _negative(x: Any) -> Any:
    """``x < 0``; a Python bool for a Python number (no equation on two constants)."""
    return x < 0 if type(x) in _PYTHON_NUMBERS else less(x, 0)


def _magnitude(x: Any) -> Any:
    return builtins.abs(x) if type(x) in _PYTHON_NUMBERS else abs(x)


# --- arithmetic ------------------------------------------------------------------------------


def div(x: Any, y: Any) -> Any:
    """``x / y``; integers are divided truncating toward zero (C's rule: ``div(-7, 2)`` is
    -3, where ``floor_divide`` gives -4). Integer division by zero gives 0, as NumPy's
    (XLA leaves it to the implementation). Example: ``div(x, y)``."""
    dtype = _kinds("div", "iufc", "integer, floating or complex arrays", x, y)
    if dtype.kind in "fc":
        return true_divide(x, y)
    quotient = floor_divide(x, y)
    if dtype.kind == "u":
        return quotient
    inexact = not_equal(remainder(x, y), 0)
    return where(logical_and(inexact, not_equal(_negative(x), _negative(y))), add(quotient, 1),
                 quotient)  # fmt: skip


def rem(x: Any, y: Any) -> Any:
    """The remainder of ``div``: ``x - div(x, y) * y``, with the sign of ``x`` (C's fmod;
    ``numpy.remainder`` takes ``y``'s). Example: ``rem(-7, 2)`` is -1."""
    dtype = _kinds("rem", "iuf", "integer or floating arrays", x, y)
    if dtype.kind == "f":  # exact: the remainder of magnitudes is fmod's, then x's sign
        return copysign(remainder(_magnitude(x), _magnitude(y)), x)
    floored = remainder(x, y)  # y's sign; where the signs differ fmod is one y less
    if dtype.kind == "u":
        return floored
    differ = logical_and(not_equal(floored, 0), not_equal(_negative(x), _negative(y)))
    return where(differ, subtract(floored, y), floored)


def reciprocal(x: Any) -> Any:
    """``1 / x`` for floating or complex ``x``. Example: ``reciprocal(x)``."""
    _kinds("reciprocal", "fc", "floating or complex arrays", x)
    return true_divide(1, x)


def exp2(x: Any) -> Any:
    """``2 ** x`` for floating or complex ``x``. Example: ``exp2(x)``."""
    _kinds("exp2", "fc", "floating or complex arrays", x)
    return power(2, x)


def cbrt(x: Any) -> Any:
    """The real cube root, negative for negative ``x``. Example: ``cbrt(-8.0)`` is -2."""
    _kinds("cbrt", "f", "floating arrays", x)
    return cbrt_p.bind(x)


def nextafter(x1: Any, x2: Any) -> Any:
    """The float next to ``x1`` in the direction of ``x2``. Example:
    ``nextafter(1.0, 2.0)`` is ``1 + eps``."""
    _kinds("nextafter", "f", "floating arrays", x1, x2)
    return nextafter_p.bind(x1, x2)


def logistic(x: Any) -> Any:
    """``1 / (1 + exp(-x))``. Example: ``logistic(0.0)`` is 0.5."""
    return logistic_p.bind(x)


class RoundingMethod(enum.IntEnum):
    """How ``round`` breaks ties: away from zero (JAX's default) or to the even neighbour."""

    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


def round(x: Any, rounding_method: Any = RoundingMethod.AWAY_FROM_ZERO) -> Any:
    """``x`` rounded to the nearest integer (in ``x``'s floating dtype); halves go away from
    zero (``RoundingMethod.AWAY_FROM_ZERO``, the default: ``round(2.5)`` is 3) or to the
    even neighbour (``TO_NEAREST_EVEN``, NumPy's rule). Example: ``round(x, 1)``."""
    try:
        method = RoundingMethod(rounding_method)
    except ValueError:
        raise SpmdTypeError(
            f"spmd.lax.round: rounding_method={rounding_method!r} is not a RoundingMethod; "
            f"pass RoundingMethod.AWAY_FROM_ZERO (0) or RoundingMethod.TO_NEAREST_EVEN (1)."
        ) from None
    _kinds("round", "f", "floating arrays", x)
    if method is RoundingMethod.TO_NEAREST_EVEN:
        return round_half_even(x)
    whole = trunc(x)
    half_or_more = greater_equal(abs(subtract(x, whole)), 0.5)  # x - trunc(x) is exact
    return where(half_or_more, add(whole, sign(x)), whole)


# --- complex parts ---------------------------------------------------------------------------


def complex(x: Any, y: Any) -> Any:
    """The complex array ``x + i y`` of float parts (float32 gives complex64, float64
    complex128), exact for infinities and signed zeros. Example: ``complex(x, y)``."""
    return complex_p.bind(x, y)


def conj(x: Any) -> Any:
    """The complex conjugate; a real floating ``x`` becomes complex (``x + 0j``), as in
    JAX. Example: ``conj(z)``."""
    dtype = _kinds("conj", "fc", "floating or complex arrays", x)
    if dtype.kind == "c":
        return numpy_conj(x)
    return astype(x, np.result_type(dtype, np.complex64))


# --- bits ------------------------------------------------------------------------------------


def _width(fn: str, x: Any) -> int:
    dtype = _kinds(fn, "iu", "integer arrays", x)
    return 8 * dtype.itemsize


def shift_right_logical(x: Any, y: Any) -> Any:
    """``x >> y`` shifting in zeros, also for signed ``x`` (``shift_right_arithmetic``
    repeats the sign bit); a shift by the width or more, or by a negative amount, gives 0.
    Example: ``shift_right_logical(np.int8(-128), 7)`` is 1."""
    width = _width("shift_right_logical", x)
    if _dtype(x, y).kind == "u":
        return right_shift(x, y)
    # the low ``width - y`` bits: ~(-1 << (width - y)); none for shifts outside [0, width)
    if type(y) is int:
        low_bits = ~(-1 << (width - y)) if 0 <= y < width else 0
        return bitwise_and(right_shift(x, y), low_bits)
    inside = logical_and(greater_equal(y, 0), less(y, width))
    low_bits = where(inside, bitwise_invert(left_shift(-1, subtract(width, y))), 0)
    return bitwise_and(right_shift(x, y), astype(low_bits, _dtype(x, y)))


def population_count(x: Any) -> Any:
    """The number of set bits of each element (of a signed integer's two's complement), in
    ``x``'s dtype. Example: ``population_count(np.int8(-1))`` is 8."""
    width = _width("population_count", x)
    # pair, nibble and byte sums of the bits, then the bytes added by shifts; the first
    # shifts of a negative x fill with ones, which the masks clear (their top bits are 0)
    pairs = subtract(x, bitwise_and(right_shift(x, 1), int("01" * (width // 2), 2)))
    mask = int("0011" * (width // 4), 2)
    nibbles = add(bitwise_and(pairs, mask), bitwise_and(right_shift(pairs, 2), mask))
    count = bitwise_and(add(nibbles, right_shift(nibbles, 4)), int("00001111" * (width // 8), 2))
    shift = 8
    while shift < width:
        count = add(count, right_shift(count, shift))
        shift *= 2
    return bitwise_and(count, 0xFF) if width > 8 else count


def clz(x: Any) -> Any:
    """The number of leading zero bits of each element, in ``x``'s dtype (the width for 0,
    0 for a negative signed integer). Example: ``clz(np.int32(1))`` is 31."""
    width = _width("clz", x)
    smeared, shift = x, 1
    while shift < width:  # every bit below the highest set one set too
        smeared = bitwise_or(smeared, right_shift(smeared, shift))
        shift *= 2
    return subtract(width, population_count(smeared))


# --- selection -------------------------------------------------------------------------------


def select_n(which: Any, *cases: Any) -> Any:
    """``cases[which]`` elementwise: ``which`` is a bool (two cases at most: False picks
    ``cases[0]``) or an integer in ``[0, len(cases))``, a scalar or of the cases' shape;
    the cases share one shape and dtype. Example: ``select_n(x > 0, -x, x)`` is ``abs(x)``."""
    if not cases:
        raise SpmdValueError("spmd.lax.select_n: needs at least one case, got none.")
    which, cases = asarray(which), [asarray(c) for c in cases]
    index, first = aval_of(which), aval_of(cases[0])
    for i, c in enumerate(cases):
        check.same_dtype("select_n", cases[0], "cases[0]", c, f"cases[{i}]")
        if aval_of(c).shape != first.shape:
            raise ShapeError(
                f"spmd.lax.select_n: cases[{i}] is {aval_of(c)} but cases[0] is {first}; "
                f"all cases need one shape (broadcast them first)."
            )
    if index.shape not in ((), first.shape):
        raise ShapeError(
            f"spmd.lax.select_n: which is {index} but the cases are {first}; which must be a "
            f"scalar or have the cases' shape."
        )
    if index.dtype.kind not in "biu" or (index.dtype.kind == "b" and len(cases) > 2):
        raise SpmdTypeError(
            f"spmd.lax.select_n: which is {index} with {len(cases)} cases; which must be a "
            f"bool (with at most two cases) or an integer array."
        )
    out = cases[-1]
    for i in range(len(cases) - 2, -1, -1):
        chosen = equal(which, False) if index.dtype.kind == "b" else equal(which, i)
        out = where(chosen, cases[i], out)
    return out if aval_of(out).shape == first.shape else broadcast_to(out, first.shape)
