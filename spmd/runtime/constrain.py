"""One value laid out as a sharding asks: moved at once outside a trace, pinned inside one
(the sharding_constraint primitive). with_sharding_constraint, reshard and the
``out_sharding=`` of spmd.numpy functions all come here."""

from __future__ import annotations

from typing import Any

from spmd.core.trace import Tracer
from spmd.errors import ShardingError
from spmd.prims.sharding_constraint import sharding_constraint_p
from spmd.runtime.put import as_sharding, device_put, layout_for
from spmd.sharding.named import NamedSharding


def constrain(x: Any, target: Any, where: str) -> Any:
    """``x`` laid out as ``target`` (a sharding, or a PartitionSpec under set_mesh)."""
    sharding = as_sharding(target, where)
    if not isinstance(x, Tracer):
        return device_put(x, sharding)
    if not isinstance(sharding, NamedSharding):
        raise ShardingError(
            f"{where}: inside jit the sharding must be a NamedSharding (or a PartitionSpec "
            f"under `with mesh:` or set_mesh), not {sharding!r}."
        )
    layout_for(sharding, x.shape, where)  # checks that the spec fits the value's rank
    return sharding_constraint_p.bind(x, sharding=sharding)
