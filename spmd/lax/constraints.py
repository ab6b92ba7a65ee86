"""with_sharding_constraint and reshard: pin (inside jit) or move (outside it) a value's
sharding."""

from __future__ import annotations

from typing import Any

from spmd.core.trace import Tracer
from spmd.errors import ShardingError
from spmd.prims.constraint import sharding_constraint_p
from spmd.runtime.put import _is_target, as_sharding, device_put, layout_for
from spmd.sharding.named import NamedSharding
from spmd.tree_util import keystr, tree_broadcast_prefix, tree_map_with_path


def _constrain(who: str, path, x: Any, target: Any) -> Any:
    where = f"{who}(x{keystr(path)})"
    sharding = as_sharding(target, where)
    if not isinstance(x, Tracer):
        return device_put(x, sharding)
    if not isinstance(sharding, NamedSharding):
        raise ShardingError(
            f"{where}: inside jit the constraint must be a NamedSharding (or a PartitionSpec "
            f"under `with mesh:`), not {sharding!r}."
        )
    layout_for(sharding, x.shape, where)  # checks that the spec fits the value's rank
    return sharding_constraint_p.bind(x, sharding=sharding)


def with_sharding_constraint(x: Any, shardings: Any) -> Any:
    """Pin ``x`` (a pytree) to ``shardings`` (a sharding, or a prefix pytree of them).

    Example: ``y = with_sharding_constraint(y, NamedSharding(mesh, P('x')))`` inside jit;
    outside jit it is ``device_put``.
    """
    return _each_leaf("with_sharding_constraint", x, shardings)


def reshard(x: Any, out_shardings: Any) -> Any:
    """``x`` (a pytree) laid out as ``out_shardings`` (a sharding or PartitionSpec under
    ``set_mesh``, or a prefix pytree of them), as ``jax.sharding.reshard``: moved at once
    outside jit, pinned inside it.

    Example: ``with spmd.set_mesh(mesh): y = spmd.reshard(x, P(None, 'x'))``.
    """
    return _each_leaf("reshard", x, out_shardings)


def _each_leaf(who: str, x: Any, shardings: Any) -> Any:
    targets = tree_broadcast_prefix(shardings, x, is_leaf=_is_target)
    return tree_map_with_path(lambda path, leaf, t: _constrain(who, path, leaf, t), x, targets)
