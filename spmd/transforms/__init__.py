"""Transformations of traced programs: jit and its partitioner, shard_map, pmap, shard_tasks."""
