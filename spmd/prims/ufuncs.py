"""NumPy's ufuncs on any array namespace: the elementwise implementations off NumPy.

Each operand is converted to the dtype NumPy's loop computes in (``ufunc.resolve_dtypes``, with
Python scalars weak as in NEP 50), then the standard's function runs; where the standard's
function differs from NumPy's (integer division by zero, negative integer powers, complex
extremes) a rule here gives NumPy's result.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from spmd.prims import namespace as ns

# NumPy's names that the array API standard spells otherwise.
STANDARD_NAMES = {"absolute": "abs", "arcsin": "asin", "arccos": "acos", "arctan": "atan",
                  "invert": "bitwise_invert", "conjugate": "conj", "true_divide": "divide",
                  "power": "pow", "arctan2": "atan2", "arcsinh": "asinh", "arccosh": "acosh",
                  "arctanh": "atanh", "left_shift": "bitwise_left_shift",
                  "right_shift": "bitwise_right_shift"}  # fmt: skip
_WEAK = (int, float, complex)


def _operand_key(xp, x):
    """What NumPy's dtype resolution takes for ``x``: a dtype, or a Python type (weak)."""
    if isinstance(x, bool):
        return np.dtype(bool)
    if isinstance(x, _WEAK):
        return type(x)
    return ns.numpy_dtype(xp, x)


def result_dtype(xp, *args) -> np.dtype:
    """The dtype NumPy 2 gives an operation on ``args`` (Python scalars weak, NEP 50)."""
    keys = [_operand_key(xp, a) for a in args]
    strong = [k for k in keys if isinstance(k, np.dtype)]
    weak = [{int: 0, float: 0.0, complex: 0j}[k] for k in keys if not isinstance(k, np.dtype)]
    return np.result_type(*strong, *weak)


@lru_cache(maxsize=4096)
def loop_dtypes(ufunc: np.ufunc, keys: tuple) -> tuple[np.dtype, ...]:
    """The dtypes NumPy's loop for ``ufunc`` takes and gives, for operands ``keys``."""
    return ufunc.resolve_dtypes(keys + (None,) * ufunc.nout)


def _integer_division(fn):
    """``fn`` (floor_divide or remainder) giving 0 where an integer divisor is 0, as NumPy
    does (other namespaces raise, or give garbage)."""

    def rule(xp, x, y, dtype):
        if dtype.kind not in "iu":
            return fn(xp, x, y)
        zero = y == 0
        if isinstance(zero, bool):
            return xp.zeros_like(x) if zero else fn(xp, x, y)
        safe = xp.where(zero, xp.ones_like(y), y)
        return xp.where(zero, xp.zeros_like(safe), fn(xp, x, safe))

    return rule


def _power(xp, x, y, dtype):
    if dtype.kind in "iu" and ns.any_true(xp, y < 0):
        raise ValueError("Integers to negative integer powers are not allowed.")
    return xp.pow(x, y)


def _shift(left: bool):
    """NumPy's shifts: by a negative amount or by the dtype's width or more, a left shift
    gives 0 and a right shift the sign (0, or -1 for a negative ``x``); the standard leaves
    those to the implementation."""

    def rule(xp, x, y, dtype):
        x, y = ns.asarrays(xp, dtype, x, y)
        outside = (y < 0) | (y >= 8 * dtype.itemsize)
        safe = xp.where(outside, xp.zeros_like(y), y)
        if left:
            return xp.where(outside, xp.zeros_like(x), xp.bitwise_left_shift(x, safe))
        shifted = xp.bitwise_right_shift(x, safe)
        fill = xp.zeros_like(x)
        if dtype.kind == "i":
            fill = xp.where(x < 0, -xp.ones_like(x), fill)
        return xp.where(outside, fill, shifted)

    return rule


def _complex_order(xp, x, y):
    """``x > y`` in NumPy's order of complex numbers (real part, then imaginary part)."""
    return (xp.real(x) > xp.real(y)) | ((xp.real(x) == xp.real(y)) & (xp.imag(x) > xp.imag(y)))


def _extreme(largest: bool):
    def rule(xp, x, y, dtype):
        if dtype.kind != "c":
            return (xp.maximum if largest else xp.minimum)(x, y)
        x, y = ns.asarrays(xp, dtype, x, y)
        x, y = xp.broadcast_arrays(x, y)
        first = _complex_order(xp, x, y) if largest else _complex_order(xp, y, x)
        out = xp.where(first, x, y)
        return xp.where(xp.isnan(x), x, xp.where(xp.isnan(y), y, out))  # NaN propagates

    return rule


def _comparison(name: str):
    standard = {"less": "less", "less_equal": "less_equal", "greater": "greater",
                "greater_equal": "greater_equal"}[name]  # fmt: skip

    def rule(xp, x, y, dtype):
        if dtype.kind != "c":
            return getattr(xp, standard)(x, y)
        x, y = ns.asarrays(xp, dtype, x, y)
        if name in ("greater", "less_equal"):
            above = _complex_order(xp, x, y)
            return above if name == "greater" else ~above & ~xp.isnan(x) & ~xp.isnan(y)
        above = _complex_order(xp, y, x)
        return above if name == "less" else ~above & ~xp.isnan(x) & ~xp.isnan(y)

    return rule


def _sign(xp, x, dtype):
    if dtype.kind != "c":
        return xp.sign(x)
    magnitude = xp.abs(x)
    safe = xp.where(magnitude == 0, xp.ones_like(magnitude), magnitude)
    return xp.where(magnitude == 0, xp.zeros_like(x), x / ns.astype(xp, safe, dtype))


def _conjugate(xp, x, dtype):
    return xp.conj(x) if dtype.kind == "c" else x


def _standard(name: str):
    return lambda xp, *args: getattr(xp, STANDARD_NAMES.get(name, name))(*args)


# NumPy's loops on booleans that the standard leaves to integers or logic.
_BOOLEAN = {"add": "logical_or", "maximum": "logical_or", "multiply": "logical_and",
            "minimum": "logical_and"}  # fmt: skip
_ORDERED = ("less", "less_equal", "greater", "greater_equal", "sign", "negative", "positive",
            "absolute", "floor", "ceil", "trunc", "isnan", "isfinite", "isinf")  # fmt: skip


def _boolean(xp, name: str, inputs):
    """``name`` on booleans as NumPy's loop computes it (None: as the standard's function)."""
    if name in _BOOLEAN:
        return getattr(xp, _BOOLEAN[name])(*(ns.asarray(xp, a) for a in inputs))
    if name in _ORDERED:
        small = [int(a) if ns.is_scalar(a) else xp.astype(a, xp.int8) for a in inputs]
        out = _standard(name)(xp, *small)
        return out if ns.numpy_dtype(xp, out) == np.bool_ else out != 0
    return None


# name -> rule(xp, *operands, loop_dtype): NumPy's result where the standard's differs
GENERIC = {
    "floor_divide": _integer_division(_standard("floor_divide")),
    "remainder": _integer_division(_standard("remainder")),
    "power": _power,
    "left_shift": _shift(left=True),
    "right_shift": _shift(left=False),
    "maximum": _extreme(True),
    "minimum": _extreme(False),
    "sign": _sign,
    "conjugate": _conjugate,
    **{name: _comparison(name) for name in ("less", "less_equal", "greater", "greater_equal")},
}


def _exact_signbit(xp, x, dtype: np.dtype):
    """``signbit`` of a bool or integer ``x`` of ``dtype`` without NumPy's float loop (float16
    for bools and small integers, which a namespace may lack): whether ``x`` is negative."""
    x = ns.asarray(xp, x, dtype)
    return x < 0 if dtype.kind == "i" else x != x  # never negative: all False, on x's device


def generic_ufunc(ufunc: np.ufunc, name: str, xp, *args):
    """``ufunc`` applied to ``args`` (arrays of ``xp`` or Python scalars) on ``xp``, with the
    result NumPy gives: operands in the loop's dtypes, the result in the loop's."""
    keys = tuple(_operand_key(xp, a) for a in args)
    if name == "signbit" and (keys[0] is int or keys[0].kind in "biu"):
        return _exact_signbit(xp, args[0], np.dtype(np.int64) if keys[0] is int else keys[0])
    dtypes = loop_dtypes(ufunc, keys)
    inputs = ns.operands(xp, args, dtypes[: ufunc.nin])
    if all(ns.is_scalar(a) for a in inputs):  # not from a program: eval_program gives arrays
        inputs[0] = ns.asarray(xp, inputs[0], dtypes[0])
    if ufunc.__name__.startswith("logical_"):
        inputs = [a if ns.numpy_dtype(xp, a) == np.bool_ else a != 0 for a in inputs]
        if all(ns.is_scalar(a) for a in inputs):
            inputs[0] = ns.asarray(xp, inputs[0], np.dtype(bool))
    out = _boolean(xp, ufunc.__name__, inputs) if dtypes[0] == np.bool_ else None
    if out is None:
        rule = GENERIC.get(name)
        standard = _standard(ufunc.__name__)
        out = standard(xp, *inputs) if rule is None else rule(xp, *inputs, dtypes[0])
    return ns.astype(xp, out, dtypes[-1])


def logistic(xp, x, dtype: np.dtype):
    """``1 / (1 + exp(-x))`` in ``dtype`` (float16 computed in float32), as NumPy's steps."""
    x = ns.asarray(xp, x)
    compute = np.dtype(np.float32) if dtype == np.float16 else dtype
    x = ns.astype(xp, x, compute)
    t = xp.exp(-x)
    out = 1 / (t + 1)
    return ns.astype(xp, out, dtype)


def where(xp, condition, x, y, dtype: np.dtype):
    """NumPy's ``where`` with the result in ``dtype``."""
    device = next((ns.device_of(a) for a in (condition, x, y) if not ns.is_scalar(a)), None)
    condition = ns.asarray(xp, condition, np.dtype(bool), device)
    return xp.where(condition, ns.asarray(xp, x, dtype, device), ns.asarray(xp, y, dtype, device))


def _round_float(xp, x, decimals: int):
    """NumPy's float rounding: ``rint(x * 10**d) / 10**d`` (``rint(x / 10**-d) * 10**-d``)."""
    if decimals == 0:
        return xp.round(x)
    factor = 10.0 ** abs(decimals)
    if decimals > 0:
        return xp.round(x * factor) / factor
    return xp.round(x / factor) * factor


def round_(xp, x, decimals: int, dtype: np.dtype):
    """NumPy's ``round`` (half to even) in ``dtype``."""
    x = ns.asarray(xp, x)
    source = ns.numpy_dtype(xp, x)
    if source.kind in "iu":
        if decimals >= 0:
            return x
        out = _round_float(xp, ns.astype(xp, x, np.float64), decimals)
        return ns.astype(xp, out, dtype)
    if source.kind == "b":
        return ns.astype(xp, x, dtype)
    if source.kind == "c":
        real = _round_float(xp, xp.real(x), decimals)
        imag = _round_float(xp, xp.imag(x), decimals)
        return ns.astype(xp, real, dtype) + ns.astype(xp, imag, dtype) * 1j
    return _round_float(xp, x, decimals)


def real(xp, x):
    x = ns.asarray(xp, x)
    return xp.real(x) if ns.numpy_dtype(xp, x).kind == "c" else x


def imag(xp, x):
    x = ns.asarray(xp, x)
    return xp.imag(x) if ns.numpy_dtype(xp, x).kind == "c" else xp.zeros_like(x)
