"""Transformations of traced programs: jit (and later shard_map, pmap, partitioning)."""
