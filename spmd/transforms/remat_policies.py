"""``spmd.checkpoint_policies``: which intermediates a ``checkpoint``ed function keeps for its
backward pass instead of recomputing them, with JAX's names (``jax.checkpoint_policies``).

A policy is called per equation of the function's program as ``policy(primitive, *avals,
**params)`` and answers whether that equation's results may be saved. Contractions are the
``einsum`` primitive here (JAX's ``dot_general``).
"""

from __future__ import annotations

from typing import Any


def everything_saveable(primitive: Any, *avals: Any, **params: Any) -> bool:
    """Every intermediate is kept: the same memory as without ``checkpoint``."""
    return True


def nothing_saveable(primitive: Any, *avals: Any, **params: Any) -> bool:
    """Nothing is kept but the function's inputs (``checkpoint``'s default)."""
    return False


def dots_saveable(primitive: Any, *avals: Any, **params: Any) -> bool:
    """The results of contractions (matmul, dot, einsum of two operands) are kept; the
    elementwise work around them is recomputed."""
    return primitive.name == "einsum" and len(avals) == 2


checkpoint_dots = dots_saveable


def dots_with_no_batch_dims_saveable(primitive: Any, *avals: Any, **params: Any) -> bool:
    """As ``dots_saveable``, for contractions with no batch dimension (a label that both
    operands and the result carry)."""
    if not dots_saveable(primitive, *avals, **params):
        return False
    inputs, _, output = params["subscripts"].partition("->")
    x, y = inputs.split(",")
    return not (set(x) & set(y) & set(output))


checkpoint_dots_with_no_batch_dims = dots_with_no_batch_dims_saveable

__all__ = [
    "checkpoint_dots",
    "checkpoint_dots_with_no_batch_dims",
    "dots_saveable",
    "dots_with_no_batch_dims_saveable",
    "everything_saveable",
    "nothing_saveable",
]
