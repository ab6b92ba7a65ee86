"""NumPy's stacking shortcuts (vstack, hstack, dstack, column_stack): each lifts its
operands to enough dimensions, as NumPy does, and concatenates them (spmd/numpy/shaping.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spmd.core.aval import host_array
from spmd.core.trace import aval_of
from spmd.errors import SpmdTypeError, SpmdValueError
from spmd.numpy.shaping import concatenate, reshape

__all__: list[str] = []  # exported from spmd/numpy/__init__.py as attributes


def _operands(tup: Any, fn: str) -> list[Any]:
    if not isinstance(tup, (list, tuple)):
        raise SpmdTypeError(
            f"spmd.numpy.{fn}: arrays to stack must be passed as a sequence (a list or "
            f"tuple), got {type(tup).__name__}."
        )
    if not tup:
        raise SpmdValueError(f"spmd.numpy.{fn}: need at least one array to concatenate.")
    return [host_array(x, f"tup[{i}]") if isinstance(x, (bool, int, float, complex, list))
            else x for i, x in enumerate(tup)]  # fmt: skip


def _lifted(x: Any, shape_for: Any) -> Any:
    """``x`` reshaped to ``shape_for(its shape)`` when that differs."""
    shape = aval_of(x).shape
    wanted = shape_for(shape)
    return x if wanted == shape else reshape(x, wanted)


def _atleast_2d(shape: tuple) -> tuple:
    return {0: (1, 1), 1: (1, *shape)}.get(len(shape), shape)


def _atleast_3d(shape: tuple) -> tuple:
    return {0: (1, 1, 1), 1: (1, *shape, 1), 2: (*shape, 1)}.get(len(shape), shape)


def vstack(tup: Sequence[Any], *, dtype: Any = None, casting: str = "same_kind") -> Any:
    """``numpy.vstack``: rows stacked (1-d arrays of length N become rows of shape (1, N)).

    Example: ``vstack([ones(3), zeros(3)])`` has shape (2, 3)."""
    operands = [_lifted(x, _atleast_2d) for x in _operands(tup, "vstack")]
    return concatenate(operands, axis=0, dtype=dtype, casting=casting)


def hstack(tup: Sequence[Any], *, dtype: Any = None, casting: str = "same_kind") -> Any:
    """``numpy.hstack``: joined along the second axis (the first for 1-d arrays).

    Example: ``hstack([ones(2), zeros(3)])`` has shape (5,)."""
    operands = [_lifted(x, lambda s: s or (1,)) for x in _operands(tup, "hstack")]
    axis = 0 if aval_of(operands[0]).ndim == 1 else 1
    return concatenate(operands, axis=axis, dtype=dtype, casting=casting)


def dstack(tup: Sequence[Any]) -> Any:
    """``numpy.dstack``: joined along the third axis ((N,) becomes (1, N, 1), (M, N)
    becomes (M, N, 1)).

    Example: ``dstack([ones((2, 3)), zeros((2, 3))])`` has shape (2, 3, 2)."""
    operands = [_lifted(x, _atleast_3d) for x in _operands(tup, "dstack")]
    return concatenate(operands, axis=2)


def column_stack(tup: Sequence[Any]) -> Any:
    """``numpy.column_stack``: 1-d arrays as columns ((N,) becomes (N, 1)), 2-d ones as
    they are, joined along the second axis.

    Example: ``column_stack([ones(3), zeros(3)])`` has shape (3, 2)."""
    operands = [
        _lifted(x, lambda s: {0: (1, 1), 1: (*s, 1)}.get(len(s), s))
        for x in _operands(tup, "column_stack")
    ]
    return concatenate(operands, axis=1)
