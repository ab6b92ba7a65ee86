"""Named paddings ('VALID', 'SAME', 'SAME_LOWER') as (low, high) pairs, for every windowed
operation: convolutions and reduce_window."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from spmd.errors import SpmdTypeError, SpmdValueError


def padtype_to_pads(
    in_shape: Sequence[int], window_shape: Sequence[int], window_strides: Sequence[int],
    padding: str, who: str = "spmd.lax.padtype_to_pads",
) -> list[tuple[int, int]]:  # fmt: skip
    """'VALID' (no padding), 'SAME' (the output has ceil(size / stride) positions; an odd
    padding puts the extra element at the end) or 'SAME_LOWER' (at the start) as (low, high)
    pairs. Example: ``padtype_to_pads((32, 32), (3, 3), (1, 1), "SAME")`` is [(1, 1), (1, 1)].
    ``who`` names the operation in the error for any other padding."""
    kind = padding.upper() if isinstance(padding, str) else padding
    if kind == "VALID":
        return [(0, 0)] * len(in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        raise SpmdValueError(
            f"{who}: padding={padding!r}; pass 'SAME', 'SAME_LOWER', 'VALID' or (low, high) "
            f"pairs, one per windowed dimension."
        )
    pads = []
    for size, window, stride in zip(in_shape, window_shape, window_strides, strict=True):
        total = max(0, (-(-size // stride) - 1) * stride + window - size)
        small, large = total // 2, total - total // 2
        pads.append((small, large) if kind == "SAME" else (large, small))
    return pads


def padding_pairs(padding: Any, count: int, who: str) -> tuple[tuple[int, int], ...]:
    """Explicit padding as (low, high) pairs of ints; SpmdTypeError naming ``who`` otherwise."""
    try:
        return tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
    except (TypeError, ValueError):
        raise SpmdTypeError(
            f"{who}: padding={padding!r}; pass 'SAME', 'SAME_LOWER', 'VALID' or {count} "
            f"(low, high) integer pairs."
        ) from None
