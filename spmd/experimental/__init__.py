"""``jax.experimental`` names that JAX code still imports: shard_map, shard (reshard,
auto_axes, explicit_axes), multihost_utils, mesh_utils, and enable_x64/disable_x64."""

from spmd.experimental import mesh_utils, multihost_utils, shard, shard_map
from spmd.experimental.x64 import disable_x64, enable_x64

__all__ = ["disable_x64", "enable_x64", "mesh_utils", "multihost_utils", "shard", "shard_map"]
