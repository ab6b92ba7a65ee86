"""``numpy.pad`` in every NumPy mode, axis by axis, as concatenations of slices.

NumPy pads one axis after another, each over the array padded so far (so corners take the
values of the last axis's padding). Here each axis is one concatenation of the pieces NumPy
writes, computed from slices of the array, so every step runs on sharded arrays too.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from spmd.core.trace import Tracer, aval_of
from spmd.errors import ShapeError, SpmdOverflowError, SpmdTypeError, SpmdValueError
from spmd.numpy import reductions
from spmd.numpy.creation import asarray, full
from spmd.numpy.elementwise import (  # type: ignore[attr-defined]
    floor,
    isnan,
    multiply,
    subtract,
    true_divide,
    where,
)
from spmd.numpy.elementwise import round as round_half_even
from spmd.numpy.shaping import astype, broadcast_to, concatenate
from spmd.numpy.sorting import sort

OPTIONS = {  # the keyword arguments each mode takes, as NumPy's pad
    "constant": ("constant_values",),
    "edge": (),
    "linear_ramp": ("end_values",),
    "maximum": ("stat_length",),
    "mean": ("stat_length",),
    "median": ("stat_length",),
    "minimum": ("stat_length",),
    "reflect": ("reflect_type",),
    "symmetric": ("reflect_type",),
    "wrap": (),
    "empty": (),
}
MODES = tuple(OPTIONS)


def pad(array: Any, pad_width: Any, mode: str = "constant", **kwargs: Any):
    """``numpy.pad``: ``pad_width`` is an int, ``(before, after)``, one pair per axis or a
    dict ``{axis: width}``; ``mode`` is any of NumPy's, with its options (per-side or
    per-axis ``constant_values``, ``end_values``, ``stat_length``; ``reflect_type``).

    Example: ``pad(x, ((1, 0), (2, 2)), constant_values=-1)``; ``pad(x, 2, mode="reflect")``.
    """
    x = asarray(array)
    aval = aval_of(x)
    _check_mode(mode, kwargs)
    widths = _widths(pad_width, aval.ndim)
    if mode in ("constant", "empty"):
        values = _constants(kwargs.get("constant_values", 0), aval.ndim, aval.dtype)
    elif aval.size == 0:  # the other modes need values to repeat
        for axis, pair in enumerate(widths):
            if aval.shape[axis] == 0 and (pair[0] or pair[1]):
                raise ShapeError(
                    f"spmd.numpy.pad: mode={mode!r} cannot extend axis {axis} of {aval}: it is "
                    f"empty. Use mode='constant' (or 'empty') to pad empty axes."
                )
        shape = tuple(n + a + b for n, (a, b) in zip(aval.shape, widths, strict=True))
        return full(shape, 0, dtype=aval.dtype)
    for axis, (before, after) in enumerate(widths):
        if before == after == 0:
            continue
        if mode in ("constant", "empty"):
            x = _pad_constant(x, axis, before, after, values[axis])
        elif mode == "edge" or (mode in ("reflect", "symmetric") and aval.shape[axis] == 1):
            x = _join(x, axis, _edge(x, axis, 0, before), _edge(x, axis, -1, after))
        elif mode in ("reflect", "symmetric"):
            odd = _reflect_type(kwargs.get("reflect_type", "even")) == "odd"
            x = _pad_reflect(x, axis, before, after, mode == "symmetric", odd)
        elif mode == "wrap":
            x = _pad_wrap(x, axis, before, after)
        elif mode == "linear_ramp":
            ends = _pairs("end_values", kwargs.get("end_values", 0), aval.ndim)[axis]
            x = _join(x, axis, *_ramps(x, axis, (before, after), ends))
        else:
            lengths = _pairs("stat_length", kwargs.get("stat_length"), aval.ndim)[axis]
            x = _join(x, axis, *_stats(x, axis, (before, after), lengths, mode))
    return x


# --- arguments ---------------------------------------------------------------------------------


def _check_mode(mode: Any, kwargs: dict) -> None:
    if callable(mode):
        raise SpmdValueError(
            "spmd.numpy.pad: a function as mode is not supported (it writes into NumPy arrays "
            f"in place); use one of the modes {MODES}."
        )
    if mode not in OPTIONS:
        raise SpmdValueError(f"spmd.numpy.pad: mode={mode!r} is not a mode; use one of {MODES}.")
    unknown = sorted(set(kwargs) - set(OPTIONS[mode]))
    if unknown:
        takes = ", ".join(OPTIONS[mode]) or "no options"
        raise SpmdValueError(
            f"spmd.numpy.pad: mode={mode!r} takes {takes}, not {', '.join(unknown)}."
        )


def _widths(pad_width: Any, ndim: int) -> list[tuple[int, int]]:
    if isinstance(pad_width, dict):  # NumPy 2.3's {axis: width or (before, after)}
        pairs = [(0, 0)] * ndim
        for axis, width in pad_width.items():
            if not -ndim <= axis < ndim:
                raise ShapeError(
                    f"spmd.numpy.pad: pad_width names axis {axis}, but the array has {ndim} "
                    f"dimension(s)."
                )
            pairs[axis] = tuple(np.broadcast_to(width, 2).tolist())
        pad_width = pairs
    try:
        widths = np.asarray(pad_width)
    except ValueError:
        widths = np.asarray(None)
    if widths.dtype.kind != "i":
        raise SpmdTypeError(
            f"spmd.numpy.pad: pad_width={pad_width!r} must hold integers (it is "
            f"{widths.dtype}); give an int, (before, after), or one pair per dimension."
        )
    try:
        pairs = _as_pairs(widths, ndim, as_index=True)
    except ValueError as error:
        problem = "has a negative width" if "negative" in str(error) else "does not fit"
        raise (SpmdValueError if problem[0] == "h" else ShapeError)(
            f"spmd.numpy.pad: pad_width={pad_width!r} {problem} an array of {ndim} "
            f"dimension(s); give non-negative ints: an int, (before, after), or one pair per "
            f"dimension."
        ) from None
    return [(int(a), int(b)) for a, b in pairs]


def _as_pairs(x: Any, ndim: int, as_index: bool = False) -> list:
    """NumPy's ``_as_pairs``: ``x`` broadcast to ``ndim`` (before, after) pairs. Its numbers
    stay NumPy scalars for one or two values, Python ones otherwise, as NumPy's do (which
    decides the dtype linear_ramp computes in)."""
    if x is None:
        return [(None, None)] * ndim
    x = np.array(x)
    if as_index:
        x = np.round(x).astype(np.intp, copy=False)
    if as_index and x.size and x.min() < 0:
        raise ValueError("index can't contain negative values")
    if x.ndim < 3 and x.size == 1:
        return [(x.ravel()[0], x.ravel()[0])] * ndim
    if x.ndim < 3 and x.size == 2 and x.shape != (2, 1):
        return [(x.ravel()[0], x.ravel()[1])] * ndim
    return np.broadcast_to(x, (ndim, 2)).tolist()


def _pairs(name: str, value: Any, ndim: int) -> list:
    """``end_values`` or ``stat_length`` (non-negative ints) as one pair per axis."""
    try:
        return _as_pairs(value, ndim, as_index=name == "stat_length")
    except (ValueError, TypeError) as error:
        raise ShapeError(
            f"spmd.numpy.pad: {name}={value!r} does not fit an array of {ndim} dimension(s) "
            f"({error}); give one value, (before, after) or one pair per axis"
            f"{', each >= 0' if name == 'stat_length' else ''}."
        ) from None


def _constants(values: Any, ndim: int, dtype: np.dtype) -> list:
    """``constant_values`` as one pair per axis in ``dtype``, converted as NumPy's item
    assignment converts them (so 300 does not fit int8, but 1.7 becomes 1)."""
    if isinstance(values, Tracer):
        if values.ndim:
            raise SpmdTypeError(
                f"spmd.numpy.pad: a traced constant_values must be one number, not {values.aval}."
            )
        value = astype(values, dtype)
        return [(value, value)] * ndim
    try:
        pairs = _as_pairs(np.asarray(values), ndim)
    except ValueError as error:
        raise ShapeError(
            f"spmd.numpy.pad: constant_values={values!r} does not fit an array of {ndim} "
            f"dimension(s) ({error}); give one value, (before, after) or one pair per axis."
        ) from None
    return [tuple(_cast(v, dtype) for v in pair) for pair in pairs]


def _cast(value: Any, dtype: np.dtype) -> np.ndarray:
    cell = np.empty((), dtype)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # NumPy's ComplexWarning: the imaginary part goes
            cell[()] = value
    except (OverflowError, ValueError, TypeError) as error:
        kind = {OverflowError: SpmdOverflowError, ValueError: SpmdValueError}.get(
            type(error), SpmdTypeError
        )
        raise kind(
            f"spmd.numpy.pad: constant_values {value!r} cannot be stored in the array's dtype "
            f"{dtype}: {error}. Pass a value that fits, or convert the array first."
        ) from None
    return cell


def _reflect_type(value: Any) -> str:
    if value not in ("even", "odd"):
        raise SpmdValueError(f"spmd.numpy.pad: reflect_type={value!r} must be 'even' or 'odd'.")
    return value


# --- pieces along one axis ---------------------------------------------------------------------


def _take(x: Any, axis: int, start: int, stop: int, reverse: bool = False) -> Any:
    """``x[start:stop]`` along ``axis`` (reversed if asked)."""
    lead = (slice(None),) * axis
    part = x[(*lead, slice(start, stop))]
    return part[(*lead, slice(None, None, -1))] if reverse else part


def _join(x: Any, axis: int, left: Any, right: Any) -> Any:
    parts = [p for p in (left, x, right) if p is not None]
    return concatenate(parts, axis=axis)


def _widened(x: Any, axis: int, width: int) -> tuple[int, ...]:
    shape = list(aval_of(x).shape)
    shape[axis] = width
    return tuple(shape)


def _fill(x: Any, axis: int, width: int, value: Any) -> Any:
    """``value`` (one number, or a slice of ``x`` of size 1 along ``axis``) ``width`` times."""
    if width == 0:
        return None
    dtype = aval_of(x).dtype
    if isinstance(value, np.ndarray):
        return full(_widened(x, axis, width), value, dtype=dtype)
    value = value if aval_of(value).dtype == dtype else astype(value, dtype)
    return broadcast_to(value, _widened(x, axis, width))


def _pad_constant(x: Any, axis: int, before: int, after: int, pair: tuple) -> Any:
    return _join(x, axis, _fill(x, axis, before, pair[0]), _fill(x, axis, after, pair[1]))


def _edge(x: Any, axis: int, side: int, width: int) -> Any:
    n = aval_of(x).shape[axis]
    return _fill(x, axis, width, _take(x, axis, 0, 1) if side == 0 else _take(x, axis, n - 1, n))


def _odd(chunk: Any, edge: Any) -> Any:
    """``2 * edge - chunk``: the odd reflection, in the array's dtype as NumPy stores it."""
    dtype = aval_of(chunk).dtype
    out = subtract(multiply(2, edge), chunk)
    return out if aval_of(out).dtype == dtype else astype(out, dtype)


def _pad_reflect(x: Any, axis: int, before: int, after: int, symmetric: bool, odd: bool) -> Any:
    """NumPy's ``_set_reflect_both`` until both sides are filled: each round reflects (a
    multiple of the period of) the values padded so far."""
    period = aval_of(x).shape[axis]
    while before or after:
        m = aval_of(x).shape[axis]
        if symmetric:
            usable, shift = m // period * period, 1
        else:
            usable, shift = (m - 1) // (period - 1) * (period - 1), 0
        left = right = None
        if before:
            c = min(usable, before)
            left = _take(x, axis, 1 - shift, c + 1 - shift, reverse=True)
            left = _odd(left, _take(x, axis, 0, 1)) if odd else left
            before -= c
        if after:
            c = min(usable, after)
            right = _take(x, axis, m - 1 - c + shift, m - 1 + shift, reverse=True)
            right = _odd(right, _take(x, axis, m - 1, m)) if odd else right
            after -= c
        x = _join(x, axis, left, right)
    return x


def _pad_wrap(x: Any, axis: int, before: int, after: int) -> Any:
    """NumPy's ``_set_wrap_both`` until both sides are filled: each round copies (a multiple
    of the original period of) the values padded so far."""
    period = aval_of(x).shape[axis]
    while before or after:
        m = aval_of(x).shape[axis]
        usable = m // period * period
        left = right = None
        if before:
            c = min(usable, before)
            left, before = _take(x, axis, usable - c, usable), before - c
        if after:
            c = min(usable, after)
            right, after = _take(x, axis, m - usable, m - usable + c), after - c
        x = _join(x, axis, left, right)
    return x


def _ramps(x: Any, axis: int, widths: tuple[int, int], ends: tuple) -> tuple:
    """NumPy's ``linspace(end, edge, width, endpoint=False)`` on each side, in the dtype
    linspace computes in, floored for integer arrays, the right one reversed."""
    dtype = aval_of(x).dtype
    n = aval_of(x).shape[axis]
    ramps = []
    for side, (width, end) in enumerate(zip(widths, ends, strict=True)):
        if width == 0:
            ramps.append(None)
            continue
        computed = np.result_type(end, dtype)
        computed = computed if computed.kind in "fc" else np.dtype(np.float64)
        edge = _take(x, axis, 0, 1) if side == 0 else _take(x, axis, n - 1, n)
        start = np.asarray(end).astype(computed)
        delta = subtract(astype(edge, computed), start)
        shape = [1] * aval_of(x).ndim
        shape[axis] = width
        steps = np.arange(width, dtype=computed).reshape(shape)
        step = true_divide(delta, width)
        # NumPy divides before multiplying when any step is 0 (for denormals, gh-5437)
        zero_step = reductions.any(step == 0)
        ramp = where(zero_step, multiply(steps / width, delta), multiply(steps, step))
        ramp = ramp + start
        if dtype.kind in "iu":
            ramp = floor(ramp)
        ramp = astype(ramp, dtype)
        ramps.append(ramp if side == 0 else _take(ramp, axis, 0, width, reverse=True))
    return tuple(ramps)


def _median(chunk: Any, axis: int) -> Any:
    """NumPy's median along ``axis`` (kept): the mean of the middle one or two sorted
    values, NaN where the slice holds one."""
    n = aval_of(chunk).shape[axis]
    if n == 0:
        return reductions.mean(chunk, axis=axis, keepdims=True)
    middle = _take(sort(chunk, axis=axis), axis, (n - 1) // 2, n // 2 + 1)
    result = reductions.mean(middle, axis=axis, keepdims=True)
    if aval_of(result).dtype.kind not in "fc":
        return result
    return where(reductions.any(isnan(chunk), axis=axis, keepdims=True), np.nan, result)


STATISTICS: dict[str, Callable] = {
    "maximum": lambda c, axis: reductions.max(c, axis=axis, keepdims=True),
    "minimum": lambda c, axis: reductions.min(c, axis=axis, keepdims=True),
    "mean": lambda c, axis: reductions.mean(c, axis=axis, keepdims=True),
    "median": _median,
}


def _stats(x: Any, axis: int, widths: tuple[int, int], lengths: tuple, mode: str) -> tuple:
    """NumPy's ``_get_stats``: the statistic of the first (last) ``stat_length`` values,
    rounded for integer arrays, repeated over each side."""
    aval = aval_of(x)
    n = aval.shape[axis]
    left_n, right_n = (n if k is None or k > n else int(k) for k in lengths)
    if mode in ("maximum", "minimum") and 0 in (left_n, right_n):
        raise SpmdValueError(
            f"spmd.numpy.pad: stat_length={lengths} leaves no values to take the {mode} of "
            f"along axis {axis}; give stat_length >= 1."
        )
    stat = STATISTICS[mode]
    pieces = []
    for side, (width, length) in enumerate(zip(widths, (left_n, right_n), strict=True)):
        chunk = _take(x, axis, 0, length) if side == 0 else _take(x, axis, n - length, n)
        value = stat(chunk, axis)
        if aval.dtype.kind in "iu":
            value = round_half_even(value)
        pieces.append(_fill(x, axis, width, value))
    return tuple(pieces)


__all__ = ["pad"]
