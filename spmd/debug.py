"""Debugging aids: pictures of how arrays are laid out, their shardings inside jit, and counts
of the collectives that ran."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from spmd.core.aval import host_array
from spmd.core.trace import Tracer
from spmd.prims.sharding_constraint import inspect_sharding_p
from spmd.runtime.counting import CollectiveCounts, count_collectives
from spmd.sharding.visualize import visualize_array_sharding, visualize_sharding

__all__ = [
    "CollectiveCounts",
    "count_collectives",
    "inspect_array_sharding",
    "visualize_array_sharding",
    "visualize_sharding",
]


def inspect_array_sharding(x: Any, *, callback: Callable[[Any], None]) -> None:
    """Call ``callback`` with ``x``'s sharding: inside jit once, when the program is compiled
    (the sharding propagation chose), outside jit right away.

    Example: ``spmd.debug.inspect_array_sharding(y, callback=print)`` inside a jitted function.
    """
    if isinstance(x, Tracer):
        inspect_sharding_p.bind(x, callback=callback)
        return
    sharding = getattr(x, "sharding", None)
    if sharding is None:
        from spmd.runtime.eager import result_sharding

        sharding = result_sharding([], host_array(x, "x").shape)
    callback(sharding)
