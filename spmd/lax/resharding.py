"""with_sharding_constraint and reshard: pin (inside jit) or move (outside it) a value's
sharding."""

from __future__ import annotations

from typing import Any

from spmd.runtime.constrain import constrain
from spmd.runtime.put import _is_target
from spmd.tree_util import keystr, tree_broadcast_prefix, tree_map_with_path


def _constrain(who: str, path, x: Any, target: Any) -> Any:
    return constrain(x, target, f"{who}(x{keystr(path)})")


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


__all__ = ["reshard", "with_sharding_constraint"]
