"""Named axes bound while a per-device function is traced (by shard_map and pmap)."""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterator, Mapping
from types import MappingProxyType

from spmd.errors import AxisNameError, SpmdTypeError

_bound: contextvars.ContextVar[Mapping[str, int]] = contextvars.ContextVar(
    "spmd_axis_env", default=MappingProxyType({})
)

# The axis names of the pmaps whose functions are being traced, outermost first.
pmap_levels: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar(
    "spmd_pmap_levels", default=()
)


@contextlib.contextmanager
def binding(sizes: Mapping[str, int]) -> Iterator[None]:
    """Bind axis names to their sizes for the block; inner bindings add to outer ones."""
    token = _bound.set({**_bound.get(), **sizes})
    try:
        yield
    finally:
        _bound.reset(token)


def bound_axes() -> dict[str, int]:
    return dict(_bound.get())


def axis_names(axis_name: object, who: str) -> tuple[str, ...]:
    """``axis_name`` (a name or a tuple of names) as a tuple of bound names."""
    names = (axis_name,) if isinstance(axis_name, str) else axis_name
    if not isinstance(names, (tuple, list)) or not all(isinstance(n, str) for n in names):
        raise SpmdTypeError(
            f"{who}: axis_name must be a mesh axis name or a tuple of them, got {axis_name!r}."
        )
    names = tuple(names)
    if len(set(names)) != len(names):
        raise AxisNameError(f"{who}: axis_name {names!r} names an axis twice.")
    bound = _bound.get()
    for name in names:
        if name not in bound:
            where = ", ".join(f"{n!r} (size {s})" for n, s in bound.items())
            raise AxisNameError(
                f"{who}: axis name {name!r} is not bound here. Collectives run inside "
                f"shard_map or pmap, over their axes"
                + (f"; bound here: {where}." if where else "; none is bound here.")
            )
    return names


def group_size(names: tuple[str, ...]) -> int:
    """How many devices a collective over ``names`` spans."""
    bound = _bound.get()
    return math.prod(bound[n] for n in names)
