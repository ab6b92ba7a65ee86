"""spmd.lax: operations below spmd.numpy: sharding constraints (and, later, collectives)."""

from spmd.lax.constraints import with_sharding_constraint

__all__ = ["with_sharding_constraint"]
