"""Debugging aids: pictures of how arrays are laid out over devices."""

from spmd.sharding.visualize import visualize_array_sharding, visualize_sharding

__all__ = ["visualize_array_sharding", "visualize_sharding"]
