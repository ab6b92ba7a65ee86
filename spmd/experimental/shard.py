"""``jax.experimental.shard``: ``reshard``, and ``auto_axes`` / ``explicit_axes``, which change
the sharding mode of mesh axes for one function.

Inside ``auto_axes`` the named axes are Auto: values' types no longer show them (jit chooses
their shardings), and the results are laid out as ``out_sharding`` says. Inside
``explicit_axes`` they are Explicit: the arguments are laid out as ``in_sharding`` says, and
their types show it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from spmd.errors import ShardingError
from spmd.lax.resharding import reshard
from spmd.sharding.abstract_mesh import axis_types_in_scope, get_abstract_mesh
from spmd.sharding.mesh import AxisType


def _axes(axes: str | tuple[str, ...] | None, who: str) -> tuple[str, ...]:
    mesh = get_abstract_mesh()
    if mesh.empty:
        raise ShardingError(
            f"{who} needs a mesh in scope: call it under spmd.set_mesh(mesh) (or use_mesh)."
        )
    names = mesh.axis_names if axes is None else (axes,) if isinstance(axes, str) else axes
    for name in names:
        if name not in mesh.axis_names:
            raise ShardingError(
                f"{who}: axes names {name!r}, but the mesh in scope has axes {mesh.axis_names!r}."
            )
    return tuple(names)


def auto_axes(fun: Callable | None = None, *, axes=None, out_sharding: Any = None):
    """``fun`` with mesh ``axes`` (default: all) Auto inside it; its results are laid out as
    ``out_sharding`` (given here or as a keyword of the call).

    Example: ``auto_axes(lambda x, y: x + y)(a, b, out_sharding=P('X', None))``.
    """
    if fun is None:
        return functools.partial(auto_axes, axes=axes, out_sharding=out_sharding)

    @functools.wraps(fun)
    def in_auto_mode(*args, out_sharding: Any = out_sharding, **kwargs):
        if out_sharding is None:
            raise ShardingError(
                f"auto_axes({getattr(fun, '__name__', 'f')}) needs out_sharding: how its "
                f"results are laid out once the axes are Explicit again. Pass "
                f"out_sharding=P(...) to auto_axes or to the call."
            )
        with axis_types_in_scope(_axes(axes, "auto_axes"), AxisType.Auto):
            out = fun(*args, **kwargs)
        return reshard(out, out_sharding)

    return in_auto_mode


def explicit_axes(fun: Callable | None = None, *, axes=None, in_sharding: Any = None):
    """``fun`` with mesh ``axes`` (default: all) Explicit inside it; its arguments are laid out
    as ``in_sharding`` (given here or as a keyword of the call) first.

    Example: ``explicit_axes(f, axes=('X', 'Y'))(x, in_sharding=P('X', 'Y'))``.
    """
    if fun is None:
        return functools.partial(explicit_axes, axes=axes, in_sharding=in_sharding)

    @functools.wraps(fun)
    def in_explicit_mode(*args, in_sharding: Any = in_sharding, **kwargs):
        if in_sharding is None:
            raise ShardingError(
                f"explicit_axes({getattr(fun, '__name__', 'f')}) needs in_sharding: how its "
                f"arguments are laid out on the Explicit axes. Pass in_sharding=P(...)."
            )
        names = _axes(axes, "explicit_axes")
        args = reshard(args, in_sharding)
        with axis_types_in_scope(names, AxisType.Explicit):
            return fun(*args, **kwargs)

    return in_explicit_mode


__all__ = ["auto_axes", "explicit_axes", "reshard"]
