"""Axis and size arguments (ints, negatives, tuples) checked and normalized the one NumPy way."""

from __future__ import annotations

import operator
from typing import Any

from spmd.core.trace import Tracer
from spmd.errors import ShapeError, SpmdTypeError


def as_int(value: Any, fn: str, argument: str) -> int:
    """``value`` as a Python int; ``fn`` is the public name (``spmd.numpy.sum``) for messages."""
    if isinstance(value, bool):
        raise SpmdTypeError(f"{fn}: {argument}={value!r} is a bool; pass an int.")
    try:
        return operator.index(value)
    except TypeError:
        hint = (
            " It is a traced value: shapes and sizes must be known when the function is "
            "traced, so pass it as a static argument (jit(f, static_argnums=...) or "
            "static_argnames=...) or compute it from shapes (x.shape[0])."
            if isinstance(value, Tracer)
            else ""
        )
        raise SpmdTypeError(
            f"{fn}: {argument} must be an integer, got {value!r} ({type(value).__name__})." + hint
        ) from None


def as_ints(value: Any, fn: str, argument: str) -> tuple[int, ...]:
    """An int or a sequence of ints, as a tuple of Python ints."""
    try:
        items = tuple(value)
    except TypeError:
        items = (value,)
    return tuple(as_int(v, fn, argument) for v in items)


def normalize_axis(axis: Any, ndim: int, fn: str, of: str, argument: str = "axis") -> int:
    """``axis`` in ``[0, ndim)``; ``of`` names the array it indexes, e.g. ``f32[2,3]``."""
    axis = as_int(axis, fn, argument)
    if not -ndim <= axis < ndim:
        valid = f"use an axis in [{-ndim}, {ndim})" if ndim else "it has no axes"
        raise ShapeError(
            f"{fn}: {argument}={axis} is out of bounds for {of}, which has {ndim} "
            f"dimension(s); {valid}."
        )
    return axis % ndim


def normalize_axes(axes: Any, ndim: int, fn: str, of: str, argument: str = "axis") -> tuple:
    """An int or sequence of axes, each in ``[0, ndim)`` and given once, in the order given."""
    result = tuple(normalize_axis(a, ndim, fn, of, argument) for a in as_ints(axes, fn, argument))
    for a in result:
        if result.count(a) > 1:
            raise ShapeError(
                f"{fn}: {argument}={axes!r} names axis {a} twice (it has {ndim} "
                f"dimension(s)); give each axis once."
            )
    return result


def argument_positions(argnums: tuple[int, ...], count: int, who: str, option: str) -> tuple:
    """``argnums`` (``static_argnums`` and kin) as positions among ``count`` positional
    arguments, negatives counting from the end; ``who`` and ``option`` name them in errors."""
    for i in argnums:
        if not -count <= i < count:
            raise SpmdTypeError(
                f"{who}: {option} has {i}, but the call passed only {count} positional "
                f"arguments; each entry must index one of them ({-count} to {count - 1}), so "
                f"pass that argument positionally or drop it from {option}."
            )
    return tuple(dict.fromkeys(i % count for i in argnums))
