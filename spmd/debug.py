"""Debugging aids: pictures of how arrays are laid out, and counts of collectives run."""

from spmd.runtime.counting import CollectiveCounts, count_collectives
from spmd.sharding.visualize import visualize_array_sharding, visualize_sharding

__all__ = [
    "CollectiveCounts",
    "count_collectives",
    "visualize_array_sharding",
    "visualize_sharding",
]
