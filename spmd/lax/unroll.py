"""``scan(..., unroll=k)``: the body applied ``k`` times per iteration of a shorter scan, as
in JAX. The results are the same as with ``unroll=1``; a longer body takes fewer trips
through the loop, each of which costs the executor a fixed amount of work.

A scan of ``n`` steps becomes a scan of ``n // k`` blocks of ``k`` steps, then a scan of the
``n % k`` steps left over (in reverse, those come first in ``xs`` and run last).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from spmd.errors import SpmdTypeError
from spmd.numpy.shaping import concatenate, reshape, stack
from spmd.tree_util import tree_map


def unroll_factor(unroll: Any, length: int) -> int:
    """How many steps one iteration runs: ``unroll`` as JAX reads it (True: all of them)."""
    if isinstance(unroll, bool):
        return max(length, 1) if unroll else 1
    if not isinstance(unroll, int) or unroll < 1:
        raise SpmdTypeError(
            f"scan: unroll must be a bool or a positive int (steps per iteration), got {unroll!r}."
        )
    return min(unroll, max(length, 1))


def unrolled(f: Callable, k: int, reverse: bool) -> Callable:
    """``f`` (``carry, x -> carry, y``) applied to the ``k`` slices of a block of ``xs`` in
    scan order, the ``y``s stacked as the block's."""

    def block(carry, xs):
        ys: list = [None] * k
        for j in reversed(range(k)) if reverse else range(k):
            carry, ys[j] = f(carry, tree_map(lambda x, j=j: x[j], xs))
        return carry, tree_map(lambda *found: stack(found), *ys)

    return block


def split_blocks(xs: Any, length: int, k: int, reverse: bool) -> tuple[Any, Any]:
    """``xs`` as ``length // k`` blocks of ``k`` slices, and the slices left over."""
    whole, rest = length // k * k, length % k

    def blocks(x):
        body = x[rest:] if reverse else x[:whole]
        return reshape(body, (length // k, k, *x.shape[1:]))

    left = (lambda x: x[:rest]) if reverse else (lambda x: x[whole:])
    return tree_map(blocks, xs), tree_map(left, xs)


def join_blocks(ys_blocks: Any, ys_left: Any, reverse: bool) -> Any:
    """The ``y``s of the blocks and of the slices left over (None: none were), in ``xs``'s
    order."""

    def flat(blocked):
        return reshape(blocked, (blocked.shape[0] * blocked.shape[1], *blocked.shape[2:]))

    if ys_left is None:
        return tree_map(flat, ys_blocks)
    return tree_map(
        lambda b, left: concatenate([left, flat(b)] if reverse else [flat(b), left]),
        ys_blocks,
        ys_left,
    )
