"""``jax.experimental`` names that JAX code still imports: shard_map and multihost_utils."""

from spmd.experimental import multihost_utils, shard_map

__all__ = ["multihost_utils", "shard_map"]
