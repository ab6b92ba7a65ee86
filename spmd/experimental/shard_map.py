"""``from jax.experimental.shard_map import shard_map``, as JAX code of 2024 writes it."""

from spmd.transforms.shard_map import shard_map

__all__ = ["shard_map"]
