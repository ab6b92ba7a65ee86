"""``jax.experimental`` names that JAX code still imports: shard_map, shard (reshard,
auto_axes, explicit_axes), multihost_utils and mesh_utils."""

from spmd.experimental import mesh_utils, multihost_utils, shard, shard_map

__all__ = ["mesh_utils", "multihost_utils", "shard", "shard_map"]
