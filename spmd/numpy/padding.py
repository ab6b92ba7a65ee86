"""``numpy.pad`` in its constant and edge modes, as concatenations along each axis."""

from __future__ import annotations

from typing import Any

import numpy as np

from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdValueError
from spmd.numpy.creation import asarray, full
from spmd.numpy.shape import broadcast_to, concatenate

MODES = ("constant", "edge")


def pad(array: Any, pad_width: Any, mode: str = "constant", constant_values: Any = 0):
    """``numpy.pad``: ``pad_width`` is an int, ``(before, after)`` or one pair per axis.

    Example: ``pad(x, ((1, 0), (2, 2)), constant_values=-1)``."""
    x = asarray(array)
    aval = aval_of(x)
    if mode not in MODES:
        raise SpmdValueError(f"spmd.numpy.pad: mode={mode!r} is not supported; use one of {MODES}.")
    widths = _widths(pad_width, aval.ndim)
    if mode == "constant" and np.ndim(constant_values) != 0:
        raise SpmdValueError(
            "spmd.numpy.pad: constant_values must be one number; per-axis values are not supported."
        )
    for axis, (before, after) in enumerate(widths):
        if before == after == 0:
            continue
        shape = list(aval_of(x).shape)
        pieces = []
        for width, at in ((before, 0), (after, shape[axis] - 1)):
            if width == 0:
                continue
            piece_shape = (*shape[:axis], width, *shape[axis + 1 :])
            if mode == "constant":
                piece = full(piece_shape, constant_values, dtype=aval.dtype)
            else:
                if shape[axis] == 0:
                    raise ShapeError(
                        f"spmd.numpy.pad: mode='edge' cannot pad axis {axis} of {aval}: it "
                        f"has no edge values."
                    )
                edge = x[(slice(None),) * axis + (slice(at, at + 1),)]
                piece = broadcast_to(edge, piece_shape)
            pieces.append((at, piece))
        parts = [p for at, p in pieces if at == 0] + [x] + [p for at, p in pieces if at != 0]
        x = concatenate(parts, axis=axis)
    return x


def _widths(pad_width: Any, ndim: int) -> list[tuple[int, int]]:
    try:
        widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (ndim, 2))
    except ValueError:
        raise ShapeError(
            f"spmd.numpy.pad: pad_width={pad_width!r} does not fit an array of {ndim} "
            f"dimension(s); give an int, (before, after), or one pair per dimension."
        ) from None
    if (widths < 0).any():
        raise SpmdValueError(f"spmd.numpy.pad: pad_width={pad_width!r} has a negative width.")
    return [(int(a), int(b)) for a, b in widths]


__all__ = ["pad"]
