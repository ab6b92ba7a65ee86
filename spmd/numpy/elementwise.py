"""Elementwise functions of spmd.numpy: thin wrappers that bind the elementwise primitives."""

from __future__ import annotations

from typing import Any

import numpy as np

from spmd.core.aval import host_array, result_dtype
from spmd.core.trace import aval_of
from spmd.errors import SpmdOverflowError, SpmdTypeError, SpmdValueError
from spmd.numpy import special_values
from spmd.numpy.creation import asarray
from spmd.numpy.shaping import astype
from spmd.prims.elementwise import (
    BINARY,
    UNARY,
    _dtype_operand,
    imag_p,
    real_p,
    round_p,
    where_p,
)


def _unary(name: str):
    primitive = UNARY[name]
    complex_values = special_values.COMPLEX.get(name)

    def fn(x: Any):
        x = _operand(x, f"spmd.numpy.{name}: x")
        if complex_values is not None and aval_of(x).dtype.kind == "c":
            return complex_values(asarray(x))  # a Python complex: complex128, as in NumPy
        return primitive.bind(x)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``numpy.{name}``. Example: ``spmd.numpy.{name}(x)``."
    return fn


_COMPARISONS = frozenset(
    {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}
)  # NumPy 2 compares a Python int with any integer dtype exactly


def _operand(x: Any, argument: str) -> Any:
    """A list or tuple operand as NumPy converts it (``np.asarray``: a strong dtype, so a list
    of Python floats is float64 where a lone Python float would be weak)."""
    return host_array(x, argument) if isinstance(x, (list, tuple)) else x


def _loop_dtypes(ufunc: np.ufunc, x1: Any, x2: Any) -> tuple | None:
    """The dtypes NumPy's ufunc computes in for these operands (None if it has no loop)."""
    operands = tuple(int if type(x) is int else _dtype_operand(aval_of(x)) for x in (x1, x2))
    try:
        return ufunc.resolve_dtypes((*operands, None))
    except TypeError:
        return None  # the shape rule explains it


def _check_python_ints(name: str, x1: Any, x2: Any) -> None:
    """NumPy 2's rules for Python ints, checked when the function is called rather than
    when its program runs: an int must fit the integer dtype the ufunc computes in (a
    division computes in float64, so ``int8_array / 300`` is fine), and an integer base
    takes no negative int exponent."""
    if type(x1) is not int and type(x2) is not int:
        return
    loop = _loop_dtypes(getattr(np, name), x1, x2)
    if loop is None:
        return
    for k, value in ((1, x1), (2, x2)):
        j, dtype = 3 - k, loop[k - 1]
        if type(value) is not int or dtype.kind not in "iu":
            continue
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise SpmdOverflowError(
                f"spmd.numpy.{name}: x{k}, the Python integer {value}, does not fit the dtype "
                f"{dtype} that {name} computes in: x{j} is {aval_of((x1, x2)[j - 1])}, and "
                f"{dtype} holds {info.min} to {info.max}. Convert x{j} to a wider dtype "
                f"first, e.g. x{j}.astype(np.int64)."
            )
    if name == "power" and type(x2) is int and x2 < 0 and aval_of(x1).dtype.kind in "iu":
        raise SpmdValueError(
            f"spmd.numpy.power: an integer base ({aval_of(x1)}) to the negative power {x2}: "
            f"NumPy does not allow integers to negative integer powers. Convert the base to a "
            f"float first, e.g. power(x.astype(np.float64), {x2})."
        )


def _binary(name: str):
    primitive = BINARY[name]
    exact = name not in _COMPARISONS

    def fn(x1: Any, x2: Any):
        x1, x2 = _operand(x1, f"spmd.numpy.{name}: x1"), _operand(x2, f"spmd.numpy.{name}: x2")
        if exact:
            _check_python_ints(name, x1, x2)
        return primitive.bind(x1, x2)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``numpy.{name}`` with broadcasting. Example: ``{name}(x, y)``."
    return fn


globals().update({name: _unary(name) for name in UNARY})
globals().update({name: _binary(name) for name in BINARY})
divide = true_divide  # noqa: F821
absolute = abs
mod = remainder  # noqa: F821
conj = conjugate  # noqa: F821
# The Array API standard's spellings of NumPy's names.
STANDARD_ALIASES = {"acos": "arccos", "asin": "arcsin", "atan": "arctan", "acosh": "arccosh",
                    "asinh": "arcsinh", "atanh": "arctanh", "atan2": "arctan2", "pow": "power",
                    "bitwise_invert": "invert", "bitwise_left_shift": "left_shift",
                    "bitwise_right_shift": "right_shift"}  # fmt: skip
globals().update({alias: globals()[name] for alias, name in STANDARD_ALIASES.items()})


# NumPy 2.0 also takes ``x ** 2.0`` for ``square(x)``; later releases square only for an int 2.
_FLOAT_TWO_SQUARES = (np.array([True]) ** 2.0).dtype == np.int8


def _power_operator(x: Any, y: Any):
    """``x ** y`` as ``numpy.ndarray.__pow__`` computes it, for ``Array.__pow__``.

    NumPy takes ``x ** 2`` (an exact Python int 2; NumPy 2.0 a float 2.0 too) for
    ``square(x)``: the same dtype as ``power(x, 2)`` except for bools, where square gives
    int8 and power int64 (NEP 50). spmd follows the installed NumPy.
    """
    two = type(y) is int or (type(y) is float and _FLOAT_TWO_SQUARES)
    if two and y == 2 and aval_of(x).dtype == np.bool_:
        return power(astype(x, np.int8), 2)  # noqa: F821
    return power(x, y)  # noqa: F821


def where(
    condition: Any,
    x: Any = None,
    y: Any = None,
    /,
    *,
    size: int | None = None,
    fill_value: Any = None,
):
    """``numpy.where(condition, x, y)``: ``x`` where ``condition`` holds, else ``y``.

    ``where(condition)`` alone is ``nonzero(condition)``, with JAX's ``size=`` and
    ``fill_value=`` for a traced ``condition``."""
    if x is None and y is None:
        from spmd.numpy.indexing import nonzero

        return nonzero(asarray(condition), size=size, fill_value=fill_value)
    if x is None or y is None or size is not None or fill_value is not None:
        raise SpmdValueError(
            "spmd.numpy.where: give both x and y (the elementwise choice) or neither (the "
            "indices of condition's nonzero elements, where size= and fill_value= apply); got "
            f"x={'set' if x is not None else 'None'}, y={'set' if y is not None else 'None'}, "
            f"size={size!r}, fill_value={fill_value!r}."
        )
    condition = _operand(condition, "spmd.numpy.where: condition")
    return where_p.bind(
        condition, _operand(x, "spmd.numpy.where: x"), _operand(y, "spmd.numpy.where: y")
    )


_NO_VALUE = object()


def _bound(name: str, standard: Any, numpy_name: Any) -> Any:
    if numpy_name is _NO_VALUE:
        return standard
    if standard is not None:
        raise SpmdTypeError(
            f"spmd.numpy.clip: both {name}={standard!r:.40} and a_{name}={numpy_name!r:.40} "
            f"were given; pass one of them (a_{name} is NumPy's older spelling of {name})."
        )
    return numpy_name


def clip(
    a: Any,
    /,
    min: Any = None,
    max: Any = None,
    *,
    a_min: Any = _NO_VALUE,
    a_max: Any = _NO_VALUE,
):
    """``numpy.clip``: limit ``a`` to ``[min, max]`` (either bound may be None), in the Array
    API's and ``jax.numpy``'s signature; NumPy's ``a_min=``/``a_max=`` keywords are taken
    too. Example: ``clip(x, 0, 1)``.

    One promotion over ``a`` and both bounds, as NumPy's ``clip`` ufunc; a Python int
    bound beyond an integer ``a``'s range is no bound at all, as in NumPy 2."""
    low, high = _bound("min", min, a_min), _bound("max", max, a_max)
    a = asarray(_operand(a, "spmd.numpy.clip: a"))
    low, high = (_operand(b, f"spmd.numpy.clip: {n}") for b, n in ((low, "min"), (high, "max")))
    aval = aval_of(a)
    if aval.dtype.kind in "iu" and not aval.weak_type:
        info = np.iinfo(aval.dtype)
        low = None if type(low) is int and low <= info.min else low
        high = None if type(high) is int and high >= info.max else high
    bounds = [b for b in (low, high) if b is not None]
    if not bounds:
        return positive(a)  # noqa: F821 (NumPy's clip(a, None, None); bools raise there too)
    dtype, _ = result_dtype(aval, *map(aval_of, bounds))
    if dtype != aval.dtype:
        a = astype(a, dtype)
    if low is not None:
        a = maximum(a, low)  # noqa: F821
    if high is not None:
        a = minimum(a, high)  # noqa: F821
    return a


def round(a: Any, decimals: int = 0):
    """``numpy.round`` to ``decimals`` places (halves to even)."""
    return round_p.bind(a, decimals=int(decimals))


around = round


def _part_operand(name: str, val: Any) -> Any:
    """A Python bool's parts are Python ints (``True.real`` is 1), as ``numpy.real`` gives."""
    return int(val) if type(val) is bool else _operand(val, f"spmd.numpy.{name}: val")


def real(val: Any):
    """``numpy.real``: the real part of a complex array; any other array as it is.
    Example: ``spmd.numpy.real(z)`` is float32 for a complex64 ``z``."""
    return real_p.bind(_part_operand("real", val))


def imag(val: Any):
    """``numpy.imag``: the imaginary part of a complex array; zeros of the same dtype for
    any other. Example: ``spmd.numpy.imag(z)`` is float32 for a complex64 ``z``."""
    return imag_p.bind(_part_operand("imag", val))


__all__ = [
    *UNARY,
    *BINARY,
    *STANDARD_ALIASES,
    "absolute",
    "around",
    "clip",
    "conj",
    "divide",
    "imag",
    "mod",
    "real",
    "round",
    "where",
]
